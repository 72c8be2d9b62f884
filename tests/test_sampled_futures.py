"""Lookahead in sampled futures: the graft of the present into a sample, and fairness of the agent."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from test_simulator_properties import assert_active_window

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import Event, EventType, Instance, Job, Machine, data, load_instance, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.lookahead import LookaheadAgent
from dynasched_gym.agents.policy import SlotPolicy
from dynasched_gym.core.compiled import (
    C_ACTIVE_END,
    C_ACTIVE_FIRST,
    C_OPEN_JOBS,
    C_SEGMENTS,
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_HIDDEN,
    Static,
    allocate_state,
    compile_instance,
)
from dynasched_gym.core.kernels import DECISION
from dynasched_gym.core.lookahead import (
    graft_future,
    objective_value,
    pair_value,
    sampled_pair_values,
    with_sampled_future,
)
from dynasched_gym.core.rules import parse_rule, run_rule
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.envs.futures import FUTURE_SEEDS, MAX_FUTURES, SampledFutures, check_outside_futures
from dynasched_gym.envs.sb3 import make_sb3_vec_env
from dynasched_gym.envs.wrappers import FORECASTS_KEY, ForecastFeatures, ForecastFeaturesVector, SlotForecaster

MACHINE_EVENTS = {EventType.BREAKDOWN, EventType.MAINTENANCE, EventType.REPAIR}


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """The medium/small tier pool, cached in a temporary directory for this module."""
    from dynasched_gym.generation import tier_pool

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DYNASCHED_CACHE", str(tmp_path_factory.mktemp("pools")))
        yield tier_pool("medium", "small")


def _mid_episode(instance: Instance, steps: int) -> gym.Env:
    """An env after ``steps`` steps (slot 0 each), then on until at least two pairs are offered."""
    env = gym.make("DynaSched/DFJSP-v0", instance=instance, objective="weighted_tardiness", max_candidates=512)
    obs, _ = env.reset(seed=0)
    for _ in range(steps):
        obs = env.step(0)[0]
    while obs["action_mask"].sum() < 2:
        obs = env.step(0)[0]
    return env


@pytest.mark.parametrize("steps", [0, 9, 17])
def test_an_instance_as_its_own_future_replays_the_clairvoyant_rollouts(pool, steps):
    """With the instance itself as the sample (job events left out, so that every future event is a
    machine's), the grafted rollouts play the real future: they equal the clairvoyant ones."""
    instance = pool.instance(6)  # late jobs under every rule
    instance = instance.replace(events=[e for e in instance.events if e.type in MACHINE_EVENTS])
    env = _mid_episode(instance, steps)
    sim = env.unwrapped.simulator
    static = sim.static
    future = with_sampled_future(static, static)
    rules = np.array([parse_rule("EDD:EET"), parse_rule("SPT:LWL")], dtype=np.int64)
    jobs, machines = (a[a >= 0] for a in env.unwrapped.offered_pairs())
    values = np.empty((len(jobs), len(rules)))
    sampled_pair_values(static, sim.state, future, allocate_state(future), allocate_state(future), jobs, machines,
                        len(jobs), rules, 2, values)
    scratch = allocate_state(static)
    clairvoyant = [[pair_value(static, sim.state, scratch, j, m, rules[r:r + 1], 2, True, -1)[0]
                    for r in range(len(rules))] for j, m in zip(jobs, machines)]
    np.testing.assert_allclose(values, clairvoyant, rtol=1e-9, atol=1e-9)
    assert np.ptp(values) > 0  # the pairs' futures differ: the comparison means something
    assert not np.allclose(values, [[pair_value(static, sim.state, scratch, j, m, rules[r:r + 1], 2, False, -1)[0]
                                     for r in range(len(rules))] for j, m in zip(jobs, machines)])


def test_a_sampled_future_adds_its_later_arrivals_only(pool):
    instance = pool.instance(3)
    env = _mid_episode(instance, 12)
    sim = env.unwrapped.simulator
    static, sample = sim.static, compile_instance(pool.instance(4))
    future = with_sampled_future(static, sample)
    num_jobs = static.job_release.shape[0]
    assert future.job_release.shape[0] == num_jobs + sample.job_release.shape[0]
    np.testing.assert_array_equal(future.op_time[:static.op_time.shape[0]], static.op_time)
    grafted = allocate_state(future)
    graft_future(static, sim.state, future, grafted)
    later = sample.job_release > sim.now
    assert later.any() and not later.all()
    real_hidden = sim.state.job_status == JOB_HIDDEN
    np.testing.assert_array_equal(grafted.job_status[:num_jobs],
                                  np.where(real_hidden, JOB_CANCELLED, sim.state.job_status))
    np.testing.assert_array_equal(grafted.job_status[num_jobs:], np.where(later, JOB_HIDDEN, JOB_CANCELLED))
    open_now = sim.state.counters[C_OPEN_JOBS] - real_hidden.sum()
    assert grafted.counters[C_OPEN_JOBS] == open_now + later.sum()


def _shop_at_3(events: tuple[Event, ...] = ()) -> Simulator:
    """A real shop at now = 3: J0 (3 on M0) ran 0..3 and J1 (2 on M0) waits; ``events`` are its own."""
    sim = Simulator(Instance.build("real", [Machine("M0")], [Job("J0", [{0: 3.0}]), Job("J1", [{0: 2.0}])], events))
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 3.0
    return sim


def _sampled_makespan(sim: Simulator, future: Static) -> float:
    """The makespan of J1 started on M0 now, SPT playing on, in the sampled ``future`` of ``sim``."""
    makespan = np.empty((1, 1))
    sampled_pair_values(sim.static, sim.state, future, allocate_state(future), allocate_state(future), np.array([1]),
                        np.array([0]), 1, np.array([parse_rule("SPT")], dtype=np.int64), 0, makespan)
    return makespan[0, 0]


def test_a_graft_starts_the_samples_jobs_as_reset_does_and_plays_only_its_events_after_now():
    """At now = 3 (J0 ran 0..3), a sample whose jobs were released before, at, within EPS of and after now, and
    whose M0 breaks down at now: only the job released after now arrives, each of the sample's jobs holds what a
    reset leaves, and the breakdown, at now and so past, does not hit the rollouts."""
    sim = _shop_at_3()
    jobs = [Job(f"S{i}", [{0: 1.0 + i}, {0: 2.0}], release=release, due=20.0 + i, weight=1.0 + i)
            for i, release in enumerate([0.0, 3.0, 3.0 + 5e-10, 8.0])]
    breakdown = Event(3.0, EventType.BREAKDOWN, machine=0, duration=100.0)
    sample = Instance.build("sample", [Machine("M0")], jobs, [breakdown])
    future = with_sampled_future(sim.static, compile_instance(sample))
    grafted = allocate_state(future)
    graft_future(sim.static, sim.state, future, grafted)
    reset = Simulator(sample)
    reset.reset()
    np.testing.assert_array_equal(grafted.job_status[2:], [JOB_CANCELLED] * 3 + [JOB_HIDDEN])
    for name in ("job_pos", "job_num_slots", "job_machine", "job_ready", "job_due", "job_weight", "job_completion",
                 "job_cancelled_at", "slot_factor", "slot_nominal", "slot_work", "slot_touched"):
        head = sim.static.slot_op.shape[0] if name.startswith("slot_") else 2
        np.testing.assert_array_equal(getattr(grafted, name)[head:], getattr(reset.state, name), err_msg=name)
    assert _sampled_makespan(sim, future) == 14.0  # J1 3..5, S3 (released at 8) 8..12..14


def test_a_samples_job_events_and_route_changes_reach_its_own_jobs():
    """The sample's job events name its jobs and its route changes its route-change operations, numbered after the
    real instance's (which has route-change operations of its own here): at now = 3, S0 (released at 4) runs its
    first operation 5..6, and its ROUTE_CHANGE at 5.5 makes the second take 10, so the rollout of J1 ends at 16."""
    sim = _shop_at_3((Event(100.0, EventType.ROUTE_CHANGE, job=1, ops=({0: 50.0},)),))
    assert sim.static.route_ops.shape[0] == 1
    route = Event(5.5, EventType.ROUTE_CHANGE, job=0, op=1, ops=({0: 10.0},))
    sample = Instance.build("sample", [Machine("M0")], [Job("S0", [{0: 1.0}, {0: 1.0}], release=4.0)], [route])
    future = with_sampled_future(sim.static, compile_instance(sample))
    # J1 3..5, S0 5..6..16; the real route's 50 or an unchanged S0 (7) would differ
    assert _sampled_makespan(sim, future) == 16.0


def test_a_grafted_rollout_scans_every_active_job_the_samples_included(pool):
    """A grafted state takes the present's scan window ``[C_ACTIVE_FIRST, C_ACTIVE_END)`` (core/compiled.py), and the
    sample's jobs, numbered after the real ones, widen it as they arrive: at every decision of a rollout it runs from
    the first active job to the last, and the rollout plays as one that scans every job."""
    env = _mid_episode(pool.instance(3), 12)
    sim = env.unwrapped.simulator
    future = with_sampled_future(sim.static, compile_instance(pool.instance(4)))
    num_jobs = sim.static.job_release.shape[0]
    rollouts = []
    for scan_all in (False, True):
        grafted = allocate_state(future)
        graft_future(sim.static, sim.state, future, grafted)
        if scan_all:  # a wider window is allowed (a superset); this one holds every job
            grafted.counters[C_ACTIVE_FIRST], grafted.counters[C_ACTIVE_END] = 0, future.job_release.shape[0]
        code = DECISION
        while code == DECISION:
            if not scan_all:
                assert_active_window(grafted)
            code = run_rule(future, grafted, *parse_rule("ATC:LWL"), 1)
        rollouts.append(grafted)
    assert (rollouts[0].job_status[num_jobs:] == JOB_COMPLETED).any()  # the sample's arrivals were played
    n = int(rollouts[0].counters[C_SEGMENTS])
    assert n == rollouts[1].counters[C_SEGMENTS]
    for field in ("segment_job", "segment_machine", "segment_start", "segment_end"):
        np.testing.assert_array_equal(getattr(rollouts[0], field)[:n], getattr(rollouts[1], field)[:n])


def test_the_sampled_lookahead_decides_from_the_past_only(pool):
    """Two instances with one past and different futures (a long breakdown and an emergency from t on):
    every operation the agent starts before t is the same in both."""
    instance = pool.instance(5)
    t = float(np.median(instance.job_release))
    late_job = int(np.flatnonzero(instance.job_release > t + 5)[0])
    changed = instance.replace(events=sorted([*instance.events,
                                              Event(t + 1.0, EventType.BREAKDOWN, machine=0, duration=50.0),
                                              Event(t + 2.0, EventType.PRIORITY_CHANGE, job=late_job, weight=10.0)],
                                             key=lambda e: e.time))
    played = []
    for inst in (instance, changed):
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, tier="medium", objective="weighted_tardiness",
                       max_candidates=512)
        schedule = run_episode(LookaheadAgent(top_k=4, futures=2), env, seed=0)
        assert validate_schedule(schedule).ok
        early = schedule.segment_start < t
        played.append((schedule.segment_job[early], schedule.segment_machine[early], schedule.segment_start[early]))
    for a, b in zip(*played):
        np.testing.assert_array_equal(a, b)
    assert len(played[0][0]) > 5


def test_sampled_futures_are_reproducible_and_configured(pool):
    env = gym.make("DynaSched/DFJSP-v0", instance=pool.instance(0), tier="medium", objective="weighted_tardiness",
                   max_candidates=512)
    agent = make("lookahead", top_k=4, futures=2, future_seed=7)
    first, second = (run_episode(agent, env, seed=0) for _ in range(2))
    np.testing.assert_array_equal(first.segment_start, second.segment_start)
    assert agent.config()["futures"] == 2 and agent.config()["future_seed"] == 7
    assert agent.sampled_futures == 2 and make("lookahead").sampled_futures == 0  # the test seeds refused by evaluate
    assert "futures" not in make("lookahead").config()  # stored results of the plain lookahead keep matching


def test_bad_sampled_future_arguments_are_named(pool):
    with pytest.raises(ValueError, match="futures"):
        LookaheadAgent(futures=-1)
    with pytest.raises(ValueError, match=r"cannot be combined with horizon=3$"):
        LookaheadAgent(futures=2, horizon=3)
    with pytest.raises(ValueError, match=r"cannot be combined with clairvoyant=True \(the oracle\)$"):
        LookaheadAgent(futures=2, clairvoyant=True)
    with pytest.raises(ValueError, match=r"future_seed=3 choose the sampled futures, and futures=0 samples none"):
        LookaheadAgent(future_seed=3)
    with pytest.raises(ValueError, match="needs the instance's machines"):
        with_sampled_future(compile_instance(load_instance(data.path("mk01"))), compile_instance(pool.instance(0)))
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", objective="makespan", max_candidates=512)
    with pytest.raises(ValueError, match=r"seed \d+, cannot be a future of mk01"):
        run_episode(LookaheadAgent(futures=1, future_tier="medium", future_size="small"), env, seed=0)
    # a fixed instance of no stated tier: its futures were drawn from the medium pool whatever its tier
    fixed = gym.make("DynaSched/DFJSP-v0", instance=pool.instance(0), objective="weighted_tardiness")
    for use in (lambda: run_episode(LookaheadAgent(futures=1), fixed, seed=0),
                lambda: ForecastFeatures(fixed, RULES, futures=1)):
        with pytest.raises(ValueError, match="a fixed instance of no stated tier: make the env with tier="):
            use()


def test_the_futures_tier_and_size_where_given_replace_the_sources() -> None:
    """The lookahead's ``future_tier`` / ``future_size`` each replace only their own half of the source's pool."""
    from dynasched_gym.envs.dfjsp.episodes import InstanceSource

    drawn = InstanceSource(None, "easy", "small", None)  # nothing generated: the pool is made at the first draw
    assert drawn.future_pool() == ("easy", "small")
    assert drawn.future_pool("hard") == ("hard", "small")
    assert drawn.future_pool(size="large") == ("easy", "large")
    fixed = InstanceSource("mk01", None, "small", None)  # a fixed instance of no stated tier
    assert fixed.future_pool("hard", "large") == ("hard", "large")


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"seed": -1}, ValueError, r"^seed must be an integer >= 0, got -1$"),  # was numpy's, at the first decision
    ({"seed": 1.5}, TypeError, r"^seed must be an integer >= 0, got 1\.5$"),
    ({"slots": 0}, ValueError, r"^slots must be an integer >= 1, got 0$"),  # was an IndexError at the first decision
])
def test_bad_sampled_futures_settings_are_refused_at_construction(pool, arguments, error, message):
    with pytest.raises(error, match=message):
        SampledFutures(1, "medium", "small", **arguments)


def test_an_episodes_futures_are_distinct_reserved_seeds_drawn_from_its_name_and_the_seed(pool):
    """Drawn without replacement (all of them: every reserved seed once), and another instance or seed draws others."""
    assert sorted(SampledFutures(MAX_FUTURES, "medium", "small").seeds("a")) == list(FUTURE_SEEDS)
    futures = SampledFutures(4, "medium", "small")
    assert futures.seeds("a") == futures.seeds("a") != futures.seeds("b")
    assert SampledFutures(4, "medium", "small", seed=1).seeds("a") != futures.seeds("a")
    with pytest.raises(ValueError, match=f"^futures must be at most {MAX_FUTURES}, got {MAX_FUTURES + 1}$"):
        SampledFutures(MAX_FUTURES + 1, "medium", "small")


def test_pair_values_are_the_mean_over_the_futures(pool):
    """Each future rolled out on its own (core.lookahead), then averaged: the futures differ, so a sum or one future
    alone would not match."""
    env = _mid_episode(pool.instance(3), 12)
    sim = env.unwrapped.simulator
    jobs, machines = (a[a >= 0] for a in env.unwrapped.offered_pairs())
    rules = np.array([parse_rule("EDD:EET"), parse_rule("SPT:LWL")], dtype=np.int64)
    futures = SampledFutures(2, "medium", "small")
    each = []
    for seed in futures.seeds(sim.instance.name):
        future = with_sampled_future(sim.static, compile_instance(pool.instance(seed)))
        values = np.empty((len(jobs), len(rules)))
        sampled_pair_values(sim.static, sim.state, future, allocate_state(future), allocate_state(future), jobs,
                            machines, len(jobs), rules, 2, values)
        each.append(values)
    assert not np.allclose(*each)
    np.testing.assert_allclose(futures.pair_values(sim, jobs, machines, len(jobs), rules, 2), np.mean(each, axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize(("seeds", "refused"), [(range(899_000, 900_000), False), (range(899_000, 900_001), True),
                                                (range(900_999, 901_005), True), (range(901_000, 902_000), False),
                                                (range(0), False)])
def test_pool_seeds_that_reach_into_the_futures_seeds_are_refused(seeds, refused):
    if refused:
        with pytest.raises(ValueError, match=r"overlap the seeds of the sampled futures 900000\.\.900999"):
            check_outside_futures("seeds", seeds, "x")
    else:
        check_outside_futures("seeds", seeds, "x")


def test_an_instance_that_is_one_of_its_own_sampled_futures_is_refused(pool):
    """Pool seed 900 000 with future_seed=524 draws itself as its one future: run_episode played the lookahead's
    rollouts in the episode's real future (15 of the seeds 900 000 .. 900 999 do with futures=16), where only the
    scripts refused those seeds."""
    member = pool.instance(900_000)
    env = gym.make("DynaSched/DFJSP-v0", instance=member, tier="medium", objective="weighted_tardiness")
    with pytest.raises(ValueError, match=r"medium-small-seed900000 is itself one of its sampled futures \(.*seed "
                                         r"900000\): its rollouts would play its real future"):
        run_episode(LookaheadAgent(futures=1, future_seed=524), env, seed=0)


RULES = ("EDD:EET", "ATC:LWL")


def test_sampled_forecast_features_are_the_mean_rollouts_over_the_futures(pool):
    instance = pool.instance(6)
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instance, tier="medium",
                                    objective="weighted_tardiness"), RULES, futures=2)
    plain = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instance, objective="weighted_tardiness"), RULES)
    venv = ForecastFeaturesVector(gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, instance=instance, tier="medium",
                                               vectorization_mode="vector_entry_point",
                                               objective="weighted_tardiness"), RULES, futures=2)
    observation, _ = env.reset(seed=0)
    plain.reset(seed=0)
    vector_obs, _ = venv.reset(seed=0)
    codes = np.array([parse_rule(r) for r in RULES], dtype=np.int64)
    futures = SampledFutures(2, "medium", "small")
    checked = 0
    for _ in range(12):
        sim, inner = env.unwrapped.simulator, env.unwrapped
        jobs, machines = inner.offered_pairs()
        offered = np.flatnonzero(jobs >= 0)
        values = futures.pair_values(sim, jobs[offered], machines[offered], offered.size, codes, 2)
        accrued = objective_value(sim.static, sim.state, 2)
        forecasts = observation[FORECASTS_KEY]
        np.testing.assert_allclose(forecasts[offered, 0::2], (values - values.min(axis=0)) / inner.time_scale,
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(forecasts[offered, 1::2], (values - accrued) / inner.time_scale, rtol=1e-5,
                                   atol=1e-5)
        assert not forecasts[jobs < 0].any()
        for i in range(2):
            np.testing.assert_array_equal(vector_obs[FORECASTS_KEY][i], forecasts)
        checked += offered.size > 1
        observation = env.step(0)[0]
        plain_obs = plain.step(0)[0]
        vector_obs = venv.step(np.zeros(2, dtype=np.int64))[0]
    assert checked and not np.allclose(plain_obs[FORECASTS_KEY], observation[FORECASTS_KEY])
    with pytest.raises(ValueError, match="futures must be an integer >= 0, got -1"):
        ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instance), RULES, futures=-1)
    with pytest.raises(TypeError, match=r"futures must be an integer >= 0, got 2\.5"):
        ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instance), RULES, futures=2.5)
    with pytest.raises(ValueError, match="bogus"):  # at construction, not at the first reset
        ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instance), RULES, futures=1,
                         future_pool=("bogus", "small"))


def test_sampled_forecasts_add_to_the_objective_so_far_and_clear_a_reused_buffer(pool):
    """Column 2r + 1 is what the pair adds to the objective accrued so far (the test above checks it while nothing has
    accrued yet, where the rollouts' whole objective passes too), and padding rows of a buffer that is handed in
    (``out=``) come out 0 as the forgetful forecasts' do."""
    env = _mid_episode(pool.instance(6), 20)  # some tardiness has accrued by then (asserted below)
    sim, time_scale = env.unwrapped.simulator, env.unwrapped.time_scale
    jobs, machines = env.unwrapped.offered_pairs()
    offered = np.flatnonzero(jobs >= 0)
    accrued = objective_value(sim.static, sim.state, 2)
    assert accrued > 0 and offered.size < jobs.size
    codes = np.array([parse_rule(r) for r in RULES], dtype=np.int64)
    values = SampledFutures(1, "medium", "small").pair_values(sim, jobs[offered], machines[offered], offered.size,
                                                              codes, 2)
    for sampled in (None, SampledFutures(1, "medium", "small")):
        out = np.full((jobs.size, 2 * len(RULES)), 7.0, dtype=np.float32)
        SlotForecaster(RULES, "weighted_tardiness", sampled=sampled)(0, sim, jobs, machines, time_scale, out=out)
        assert not out[jobs < 0].any()
    np.testing.assert_allclose(out[offered, 1::2], (values - accrued) / time_scale, rtol=1e-5, atol=1e-5)  # sampled


def test_ppo_trained_on_sampled_forecasts_rebuilds_them(pool, tmp_path):
    """The policy saves its futures; PPOAgent then adds the same forecasts itself (single env and batched
    play agree) and refuses an env whose forecasts forget the future."""
    venv = make_sb3_vec_env(num_envs=2, tier="medium", size="small", pool_size=2, objective="weighted_tardiness",
                            forecast_features=RULES, forecast_futures=1)
    assert venv.get_attr("future_pool") == [("medium", "small")] * 2  # the env's forecasts sample futures too
    model = MaskablePPO(SlotPolicy, venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"hidden": 8, "forecast_rules": RULES, "forecast_futures": 1,
                                       "future_pool": ("medium", "small")})
    model.learn(64)
    model.save(tmp_path / "model.zip")
    with pytest.warns(RuntimeWarning, match="records no feature units"):  # saved bare, without a training config
        agent = make("ppo", checkpoint=tmp_path / "model.zip")
    assert agent.model.policy.forecast_futures == 1 and agent.model.policy.future_pool == ("medium", "small")
    assert agent.sampled_futures == 1  # what evaluate and compare_agents check their test seeds against
    instances = [pool.instance(seed) for seed in (0, 6)]
    played = agent.play(instances, "weighted_tardiness", num_envs=2)
    for inst, schedule in zip(instances, played):
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness")
        single = run_episode(agent, env, seed=0)
        np.testing.assert_array_equal(schedule.segment_start, single.segment_start)
        np.testing.assert_array_equal(schedule.segment_machine, single.segment_machine)
    forgetting = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instances[0],
                                           objective="weighted_tardiness"), RULES)
    with pytest.raises(ValueError, match=r"in 0 sampled futures \(pool None\), the policy was trained on .* in 1 "
                                         r"\(pool \('medium', 'small'\)\)"):
        run_episode(agent, forgetting, seed=0)
    elsewhere = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=instances[0], objective="weighted_tardiness"),
                                 RULES, futures=1, future_pool=("extreme", "small"))
    with pytest.raises(ValueError, match=r"in 1 sampled futures \(pool \('extreme', 'small'\)\)"):
        run_episode(agent, elsewhere, seed=0)  # same shape, futures from another tier's pool


@pytest.mark.parametrize(("values", "best"), [([[5.0, 1.0], [2.0, 2.0]], 0), ([[5.0, 5.0], [1.0, 1.0]], 1),
                                              ([[3.0, 4.0], [3.0, 4.0]], 0)])
def test_the_sampled_lookahead_plays_the_pair_of_the_best_rollout_rule_mean(pool, monkeypatch, values, best):
    """A pair's value is its best rollout rule's (mean over the futures); the lowest plays, the first of equals (the
    base rule's order); with ``top_k=2`` the second pair is tried too."""
    env = _mid_episode(pool.instance(3), 12)
    agent = LookaheadAgent(top_k=2, futures=1, future_tier="medium", rollout_rules=["EDD", "SPT"])
    agent.reset(env)
    monkeypatch.setattr(agent._futures, "pair_values", lambda *args: np.array(values))
    slot = agent.act(None, {})
    jobs, machines = env.unwrapped.offered_pairs()
    assert (jobs[slot], machines[slot]) == (agent._buffers[0][best], agent._buffers[1][best])
