"""Observations: no information leak below ``oracle``, the feature tables and docs, the wrappers."""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances
from test_env import assert_same_observations, valid_action

from dynasched_gym import Event, EventType, Instance, Job, Machine
from dynasched_gym.agents.llm.prompts import MachineStats
from dynasched_gym.core.compiled import C_RELEASE, JOB_ACTIVE, JOB_COMPLETED
from dynasched_gym.envs.dfjsp import features
from dynasched_gym.envs.dfjsp.env import DFJSPEnv
from dynasched_gym.envs.dfjsp.features import (
    BIG,
    BLOCKS,
    C_DUE_LATENESS,
    C_HAS_DUE,
    C_JOB_AGE,
    C_JOB_CANCELLATION_SOON,
    C_JOB_PROGRESS,
    C_JOB_REMAINING_OPS,
    C_JOB_WEIGHT,
    C_PROC_TIME_RATIO,
    C_WAITING_TIME,
    G_ARRIVAL_SOON,
    G_EVENT_SOON,
    G_JOBS_COMPLETED,
    G_MACHINES_AVAILABLE,
    G_MACHINES_DOWN,
    G_OBJECTIVE_SO_FAR,
    G_OPEN_JOBS,
    G_OPEN_JOBS_TARDY,
    G_PENDING_ARRIVALS,
    G_WAITING_JOBS,
    M_AVAILABLE,
    M_BOTTLENECK,
    M_BREAKDOWN_SOON,
    M_BUSY,
    M_BUSY_REMAINING,
    M_DOWN_ELAPSED,
    M_DOWN_REMAINING,
    M_IN_BREAKDOWN,
    M_IN_MAINTENANCE,
    M_MAINTENANCE_QUEUED,
    M_MAINTENANCE_SOON,
    M_UTILIZATION,
    OBSERVABILITY,
    num_columns,
)
from dynasched_gym.envs.dfjsp.kernels import potential
from dynasched_gym.envs.dfjsp.types import S_PHI
from dynasched_gym.envs.wrappers import (
    FlattenDictObservation,
    ForecastFeatures,
    ForecastReward,
    ObservabilityWrapper,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "environments.md"
OBJECTIVES = ("makespan", "tardiness", "weighted_tardiness", "flow_time")


def future_variant(inst: Instance, t: float) -> Instance:
    """``inst`` with other events after ``t``, and for jobs released after ``t`` other releases, dues, weights
    and operations (times x 1.7, the last operation repeated)."""
    later = inst.job_release > t
    events = [e for e in inst.events if e.time <= t]
    events += [Event(t + 1.5, EventType.BREAKDOWN, machine=0, duration=4.0),
               Event(t + 2.0, EventType.CANCELLATION, job=0), Event(t + 2.5, EventType.MAINTENANCE, machine=0,
                                                                    duration=1.0)]
    pairs, factors, lengths = [], [], []
    for j in range(inst.num_jobs):
        ops = list(range(inst.job_op_ptr[j], inst.job_op_ptr[j + 1]))
        ops += ops[-1:] if later[j] else []
        lengths.append(len(ops))
        pairs += [np.arange(inst.op_elig_ptr[o], inst.op_elig_ptr[o + 1]) for o in ops]
        factors += [np.full(len(p), 1.7 if later[j] else 1.0) for p in pairs[len(pairs) - len(ops):]]
    flat = np.concatenate(pairs)
    return inst.replace(events=tuple(events), job_release=np.where(later, inst.job_release + 7.0, inst.job_release),
                        job_due=np.where(later, inst.job_due + 3.0, inst.job_due),
                        job_weight=np.where(later, inst.job_weight * 2.0, inst.job_weight),
                        job_op_ptr=np.cumsum([0, *lengths]),
                        op_elig_ptr=np.cumsum([0, *map(len, pairs)]),
                        elig_machine=inst.elig_machine[flat], elig_time=inst.elig_time[flat] * np.concatenate(factors))


def observations_until(env: DFJSPEnv, t: float, seed: int) -> list[dict[str, np.ndarray]]:
    """Observations of the decision points at times <= t, under seeded random valid actions. An episode that
    ends before any job is released (each cancelled while hidden) has no decision point: its one observation
    reads the time in units of the first jobs (`envs.dfjsp.episodes.known_scales`), and it is left out."""
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    seen = []
    terminated = False
    first_release = env.unwrapped.instance.job_release.min()
    while not terminated and env.unwrapped.now <= t:
        if env.unwrapped.now >= first_release:
            seen.append(observation)
        observation, _, terminated, _, _ = env.step(valid_action(observation, rng))
    return seen


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=5, max_machines=3, max_events=10), t=st.integers(0, 30).map(float),
       observability=st.sampled_from(["concise", "full"]), seed=st.integers(0, 1000), forecasts=st.booleans())
def test_no_future_information_below_oracle(inst, t, observability, seed, forecasts):
    """Also the rollout forecasts, under EDD and under ATC, whose look-ahead scale is what waits now."""
    def env_of(instance: Instance) -> gym.Env:
        env = DFJSPEnv(instance=instance, observability=observability)
        return ForecastFeatures(env, ("EDD:EET", "ATC:LWL")) if forecasts else env

    assert_same_observations(observations_until(env_of(inst), t, seed),
                             observations_until(env_of(future_variant(inst, t)), t, seed))


def test_oracle_sees_the_future():
    inst = Instance.build("o", [Machine("M0"), Machine("M1")], [Job("J0", [{0: 5.0}]), Job("J1", [{1: 5.0}])])
    variant = future_variant(inst, 0.0)
    for observability, differs in (("concise", False), ("full", False), ("oracle", True)):
        a = DFJSPEnv(instance=inst, observability=observability).reset(seed=0)[0]
        b = DFJSPEnv(instance=variant, observability=observability).reset(seed=0)[0]
        assert any(not np.array_equal(a[k], b[k]) for k in a) == differs, observability


def test_feature_tables_are_ordered_by_level_and_documented():
    text = DOCS.read_text(encoding="utf-8")
    for block, table in BLOCKS.items():
        prefix = block[0].upper()  # the kernels write each column through its index constant: C_*, M_*, G_*
        assert [getattr(features, f"{prefix}_{f.name.upper()}") for f in table] == list(range(len(table))), block
        levels = [f.level for f in table]
        assert levels == sorted(levels), block
        assert len({f.name for f in table}) == len(table)
        assert num_columns(table, len(OBSERVABILITY) - 1) == len(table)
        for i, feature in enumerate(table):
            assert feature.low <= 0.0 <= feature.high
            bound = {-BIG: "-BIG", 0.0: "0", 1.0: "1", BIG: "BIG"}
            row = (f"| {i} | `{feature.name}` | {OBSERVABILITY[feature.level]} | "
                   f"[{bound[feature.low]}, {bound[feature.high]}] | {feature.meaning} |")
            assert row in text, f"{block}.{feature.name}: docs/environments.md lacks the row {row}"


def test_bottleneck_counts_a_running_operation_on_its_machine_and_splits_the_others():
    """The documented formula by hand: J0's first operation runs on M0 (4 left, all on M0); its second (2 on M0,
    6 on M1) and J1's waiting one (3 on M0, 5 on M1) each count their time on a machine / 2 eligible machines."""
    inst = Instance.build("bn", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 4.0}, {0: 2.0, 1: 6.0}]), Job("J1", [{0: 3.0, 1: 5.0}])])
    env = DFJSPEnv(instance=inst, observability="full")
    env.reset(seed=0)
    jobs, machines = env.offered_pairs()
    observation, *_ = env.step(int(np.flatnonzero((jobs == 0) & (machines == 0))[0]))
    assert env.now == 0.0
    load = np.array([4.0 + 2.0 / 2 + 3.0 / 2, 6.0 / 2 + 5.0 / 2])
    np.testing.assert_allclose(observation["machines"][:, M_BOTTLENECK], load * 2 / load.sum(), rtol=1e-6)


def test_oracle_arrivals_leave_out_jobs_cancelled_before_their_release():
    """J1 is cancelled before its release and never arrives: pending_arrivals and arrival_soon counted it, before
    its cancellation (at 0) and after it (at 7, still unreleased). J2, cancelled at its release, arrives first
    (docs/semantics.md), and J3, cancelled after it, arrives too."""
    inst = Instance.build(
        "cancelled-hidden", [Machine("M0"), Machine("M1")],
        [Job("J0", [{0: 50.0}]), Job("J1", [{1: 1.0}], release=10.0), Job("J2", [{1: 1.0}], release=20.0),
         Job("J3", [{1: 1.0}], release=30.0), Job("J4", [{1: 1.0}], release=7.0)],
        [Event(5.0, EventType.CANCELLATION, job=1), Event(20.0, EventType.CANCELLATION, job=2),
         Event(40.0, EventType.CANCELLATION, job=3)])
    env = DFJSPEnv(instance=inst, observability="oracle", time_scale=10.0)
    observation, _ = env.reset(seed=0)
    for now, arriving, next_release in ((0.0, 3, 7.0), (7.0, 2, 20.0), (30.0, 0, None)):
        assert env.now == now
        soon = 0.0 if next_release is None else 1.0 / (1.0 + (next_release - now) / 10.0)
        assert observation["global"][G_PENDING_ARRIVALS] == pytest.approx(arriving / 2), now
        assert observation["global"][G_ARRIVAL_SOON] == pytest.approx(soon), now
        observation, *_ = env.step(0)


def test_oracle_soon_columns_read_the_next_future_event_of_each_kind():
    """M1 breaks down at 7 and 12, M2 is maintained at 8 and 13, J0 (four operations of 5 on M0) is cancelled at
    17 and again at 19: at the decisions at 0, 5 and 10 each soon column reads the first of its events still to
    come, the past ones left out, and event_soon the next stream event."""
    inst = Instance.build("soon", [Machine("M0"), Machine("M1"), Machine("M2")], [Job("J0", [{0: 5.0}] * 4)],
                          [Event(7.0, EventType.BREAKDOWN, machine=1, duration=1.0),
                           Event(8.0, EventType.MAINTENANCE, machine=2, duration=1.0),
                           Event(12.0, EventType.BREAKDOWN, machine=1, duration=1.0),
                           Event(13.0, EventType.MAINTENANCE, machine=2, duration=1.0),
                           Event(17.0, EventType.CANCELLATION, job=0), Event(19.0, EventType.CANCELLATION, job=0)])
    env = DFJSPEnv(instance=inst, observability="oracle", time_scale=10.0)
    observation, _ = env.reset(seed=0)
    for now, breakdown, maintenance, event in ((0.0, 7.0, 8.0, 7.0), (5.0, 7.0, 8.0, 7.0), (10.0, 12.0, 13.0, 12.0)):
        assert env.now == now
        machines = observation["machines"]
        assert machines[:, M_BREAKDOWN_SOON].tolist() == [0.0, pytest.approx(1 / (1 + (breakdown - now) / 10)), 0.0]
        assert machines[:, M_MAINTENANCE_SOON].tolist() == [0.0, 0.0, pytest.approx(1 / (1 + (maintenance - now) / 10))]
        assert observation["candidates"][0, C_JOB_CANCELLATION_SOON] == pytest.approx(1 / (1 + (17.0 - now) / 10))
        assert observation["global"][G_EVENT_SOON] == pytest.approx(1 / (1 + (event - now) / 10))
        observation, *_ = env.step(0)


def test_job_columns_of_the_candidates_by_hand():
    """J0 (due 4, weight 2; its due date moves to 10 at 1) and J1 (no due date) start at 0; at 2 J0's second
    operation is offered on M0, twice as slow as on M1 (busy). Job columns of each offered row, the due date in
    force and has_due included."""
    inst = Instance.build("jobs", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 2.0}, {0: 6.0, 1: 3.0}], due=4.0, weight=2.0), Job("J1", [{1: 5.0}])],
                          [Event(1.0, EventType.DUE_DATE_CHANGE, job=0, due=10.0)])
    env = DFJSPEnv(instance=inst, time_scale=1.0, ops_scale=1.0)
    columns = [C_PROC_TIME_RATIO, C_JOB_REMAINING_OPS, C_JOB_PROGRESS, C_JOB_WEIGHT, C_DUE_LATENESS, C_HAS_DUE,
               C_WAITING_TIME, C_JOB_AGE]
    observation, _ = env.reset(seed=0)
    assert observation["candidates"][:2, columns].tolist() == [[1, 2, 0, 2, -4, 1, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0]]
    env.step(0)
    observation, *_ = env.step(0)
    assert env.now == 2.0 and env.offered_pairs()[0][0] == 0
    assert observation["candidates"][0, columns].tolist() == [2, 1, 0.5, 2, -8, 1, 0, 2]


def test_machine_state_columns_by_hand():
    """J0 runs on M0 from 0 to 10, where a maintenance announced at 3 waits for it; M1 breaks down from 1 to 6 and
    from 7 to 10, M2 is maintained from 2 to 6; J1's operations on M3 make the decisions at 4 and 8. Columns
    available .. down_elapsed and down_remaining of each machine, and the global fractions available and down."""
    inst = Instance.build("machines", [Machine(f"M{m}") for m in range(4)],
                          [Job("J0", [{0: 10.0}]), Job("J1", [{3: 4.0}] * 3)],
                          [Event(1.0, EventType.BREAKDOWN, machine=1, duration=5.0),
                           Event(2.0, EventType.MAINTENANCE, machine=2, duration=4.0),
                           Event(3.0, EventType.MAINTENANCE, machine=0, duration=1.0),
                           Event(7.0, EventType.BREAKDOWN, machine=1, duration=3.0)])
    env = DFJSPEnv(instance=inst, observability="oracle", time_scale=2.0)
    env.reset(seed=0)
    env.step(0)
    observation, *_ = env.step(0)
    columns = [M_AVAILABLE, M_BUSY, M_IN_BREAKDOWN, M_IN_MAINTENANCE, M_MAINTENANCE_QUEUED, M_BUSY_REMAINING,
               M_DOWN_ELAPSED, M_DOWN_REMAINING]
    for now, m1_elapsed, m1_left, m2, fractions in ((4.0, 1.5, 1.0, [0, 0, 0, 1, 0, 0, 1.0, 1.0], [0.25, 0.5]),
                                                    (8.0, 0.5, 1.0, [1, 0, 0, 0, 0, 0, 0, 0], [0.5, 0.25])):
        assert env.now == now
        assert observation["machines"][:, columns].tolist() == [[0, 1, 0, 0, 1, (10.0 - now) / 2, 0, 0],
                                                                 [0, 0, 1, 0, 0, 0, m1_elapsed, m1_left], m2,
                                                                 [1, 0, 0, 0, 0, 0, 0, 0]]
        assert observation["global"][[G_MACHINES_AVAILABLE, G_MACHINES_DOWN]].tolist() == fractions
        observation, *_ = env.step(0)


def test_observation_widths_follow_the_level():
    for level, name in enumerate(OBSERVABILITY):
        space = DFJSPEnv(instance="mk01", observability=name, max_candidates=5).observation_space
        assert space["candidates"].shape == (5, num_columns(BLOCKS["candidates"], level))
        assert space["machines"].shape == (6, num_columns(BLOCKS["machines"], level))
        assert space["global"].shape == (num_columns(BLOCKS["global"], level),)
        for block, table in BLOCKS.items():  # each column's bounds are its table row's
            shown = table[:num_columns(table, level)]
            assert space[block].low.reshape(-1, len(shown))[0].tolist() == [f.low for f in shown], block
            assert space[block].high.reshape(-1, len(shown))[0].tolist() == [f.high for f in shown], block


def test_features_are_scaled_and_o1_on_an_embedded_instance():
    env = DFJSPEnv(instance="dsbx-medium", observability="oracle")
    observation, _ = env.reset(seed=0)
    largest = 0.0
    for _ in range(300):
        observation, *_ = env.step(0)
        largest = max(largest, *(float(np.abs(observation[k]).max()) for k in ("candidates", "machines", "global")))
    assert 1.0 < largest < 1e3


@pytest.mark.parametrize("keep_mask", [True, False])
def test_flatten_keeps_or_drops_the_mask(keep_mask):
    base = DFJSPEnv(instance="mk01", max_candidates=6)
    env = FlattenDictObservation(gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=6), keep_mask)
    observation, _ = env.reset(seed=0)
    expected, _ = base.reset(seed=0)
    parts = [expected[k].ravel() for k in ("candidates", "machines", "global")]
    if keep_mask:
        parts.append(expected["action_mask"].astype(np.float32))
    assert env.observation_space.contains(observation)
    assert np.array_equal(observation, np.concatenate(parts))
    assert np.array_equal(env.action_masks(), base.action_masks())


def test_observability_wrapper_hides_the_higher_columns():
    oracle = ObservabilityWrapper(DFJSPEnv(instance="dsbx-medium", observability="oracle"), "concise")
    concise = DFJSPEnv(instance="dsbx-medium", observability="concise")
    hidden, _ = oracle.reset(seed=0)
    shown, _ = concise.reset(seed=0)
    for _ in range(50):
        for key in ("candidates", "machines", "global"):
            width = shown[key].shape[-1]
            assert np.array_equal(hidden[key][..., :width], shown[key])
            assert not hidden[key][..., width:].any()
        assert oracle.observation_space.contains(hidden)
        hidden, *_ = oracle.step(0)
        shown, *_ = concise.step(0)
    with pytest.raises(ValueError, match="observability"):
        ObservabilityWrapper(concise, "partial")


@pytest.mark.parametrize("wrap", [lambda env: FlattenDictObservation(env, keep_mask=False),
                                  lambda env: ObservabilityWrapper(env, "concise"),
                                  lambda env: ForecastReward(env, "EDD:EET", hindsight=True)])
def test_wrapped_specs_recreate_the_wrapped_env(wrap):
    env = wrap(gym.make("DynaSched/DFJSP-v0", instance="mk01", observability="full"))
    again = gym.make(env.spec)
    assert [w.name for w in again.spec.additional_wrappers] == [w.name for w in env.spec.additional_wrappers]
    first, _ = env.reset(seed=3)
    second, _ = again.reset(seed=3)
    assert np.array_equal(np.asarray(first["candidates"] if isinstance(first, dict) else first),
                          np.asarray(second["candidates"] if isinstance(second, dict) else second))
    assert env.step(0)[1] == again.step(0)[1]


def test_gymnasium_episode_statistics_record_minus_the_objective():
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("DynaSched/DFJSP-v0", instance="mk01",
                                                        objective="flow_time"))
    observation, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated = False
    while not terminated:
        observation, _, terminated, _, info = env.step(valid_action(observation, rng))
    assert math.isclose(info["episode"]["r"], -info["metrics"]["mean_flow_time"], rel_tol=1e-6)
    assert info["episode"]["l"] == env.unwrapped.schedule().decisions


def test_columns_by_hand_before_the_first_decision_and_at_the_end():
    """Both machines are down from 0 to 5, so the first decision comes at 5 with J0 (due 2) already 3 late; J1 is
    cancelled at 1, before its release at 3. At reset ``objective_so_far`` shows the tardiness accrued so far
    (the reward's phi starts at 0, so the first reward pays it), ``jobs_completed`` counts J1 among the jobs whose
    release has passed, and utilization is 0 for machines not up yet. At the end no work remains: bottleneck 0."""
    inst = Instance.build("by-hand", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 2.0}], due=2.0), Job("J1", [{1: 1.0}], release=3.0)],
                          [Event(0.0, EventType.BREAKDOWN, machine=0, duration=5.0),
                           Event(0.0, EventType.BREAKDOWN, machine=1, duration=5.0),
                           Event(1.0, EventType.CANCELLATION, job=1)])
    env = DFJSPEnv(instance=inst, observability="full", objective="tardiness", time_scale=1.0)
    observation, _ = env.reset(seed=0)
    assert env.now == 5.0
    assert observation["global"][G_OBJECTIVE_SO_FAR] == pytest.approx(math.log1p(3.0))
    assert observation["global"][G_JOBS_COMPLETED] == 0.0
    assert observation["global"][G_OPEN_JOBS] == pytest.approx(1 / 2)  # J1 never became visible
    assert observation["machines"][:, M_UTILIZATION].tolist() == [0.0, 0.0]
    assert observation["machines"][:, M_DOWN_ELAPSED].tolist() == [0.0, 0.0]  # repaired at 5
    assert observation["candidates"][0, C_WAITING_TIME] == pytest.approx(5.0)  # ready since its release at 0
    observation, reward, terminated, _, info = env.step(0)
    assert terminated and env.now == 7.0
    assert reward == pytest.approx(-5.0) == -info["metrics"]["total_tardiness"]
    assert observation["global"][G_JOBS_COMPLETED] == pytest.approx(1 / 2)  # J1 in the denominator
    assert observation["machines"][:, M_UTILIZATION].tolist() == [1.0, 0.0]  # busy 2 of M0's 2 up time units
    assert observation["machines"][:, M_BOTTLENECK].tolist() == [0.0, 0.0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=8, max_machines=3, max_events=14), objective=st.sampled_from(OBJECTIVES),
       seed=st.integers(0, 2**32 - 1))
def test_folded_history_gives_what_walking_every_job_segment_and_downtime_gives(inst, objective, seed):
    """A step walks only the jobs, segments and downtimes that can still change (kernels.py, "Folded history"): the
    potential, the global job counts and the utilisation equal, to the bit, those of a walk over all of them (the
    stateless potential and machine statistics, NumPy counts), at every decision of two episodes on one env. The
    instances release jobs out of index order, cancel, rework and break machines down: a fold that missed a job
    arriving among the folded ones, a completed job past the active window, or a running segment gave other values."""
    env = DFJSPEnv(instance=inst, objective=objective, observability="full", time_scale=7.0)
    stats = MachineStats(inst.num_jobs, inst.num_machines)
    rng = np.random.default_rng(seed)
    num_m = np.float64(inst.num_machines)
    for _ in range(2):
        observation, _ = env.reset(seed=seed)
        stepped = terminated = False
        while True:
            sim = env.simulator
            state, now = sim.state, sim.now
            phi = potential(sim.static, state, OBJECTIVES.index(objective))
            assert observation["global"][G_OBJECTIVE_SO_FAR] == np.float32(min(math.log1p(max(phi, 0.0) / 7.0), BIG))
            assert not stepped or env._scalars[S_PHI] == phi  # the reward's potential (0 at reset)
            active = state.job_status == JOB_ACTIVE
            open_jobs, completed = active.sum(), np.count_nonzero(state.job_status == JOB_COMPLETED)
            counts = {G_OPEN_JOBS: open_jobs / num_m, G_WAITING_JOBS: (active & (state.job_machine < 0)).sum() / num_m,
                      G_JOBS_COMPLETED: completed / max(int(state.counters[C_RELEASE]), 1),
                      G_OPEN_JOBS_TARDY: (active & (now > state.job_due)).sum() / max(open_jobs, 1)}
            for column, value in counts.items():
                assert observation["global"][column] == np.float32(value), column
            np.testing.assert_array_equal(observation["machines"][:, M_UTILIZATION], stats(sim)[2].astype(np.float32))
            if terminated:
                break
            observation, _, terminated, _, _ = env.step(valid_action(observation, rng))
            stepped = True
