"""Property tests of the simulator against the independent validator and snapshots."""

from __future__ import annotations

import copy
import csv
import dataclasses
import pickle

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances

from dynasched_gym import load_instance, rollout, validate_schedule
from dynasched_gym.core import Simulator
from dynasched_gym.core.compiled import (
    C_ACTIVE_END,
    C_ACTIVE_FIRST,
    C_DOWNTIMES,
    C_SEGMENTS,
    DOWN_NONE,
    JOB_ACTIVE,
    ScratchStates,
    State,
    allocate_state,
    compile_instance,
    copy_state,
)
from dynasched_gym.core.kernels import copy_into
from dynasched_gym.core.lookahead import (
    _objective,
    _prepare,
    _prepared_value,
    _reprepare,
    _rollout,
    forget_future,
    rollout_value,
    with_sampled_future,
)
from dynasched_gym.core.rules import JOB_RULES, RULES, parse_rule, select
from dynasched_gym.data import path as embedded_path

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def play_random(sim: Simulator, rng: np.random.Generator, max_decisions: int | None = None) -> list[tuple[int, int]]:
    """Play uniformly random valid pairs; returns the pairs played."""
    played = []
    while not sim.done and (max_decisions is None or len(played) < max_decisions):
        jobs, machines, _ = sim.candidates()
        assert len(jobs) > 0, "a decision point must offer at least one pair"
        k = int(rng.integers(len(jobs)))
        sim.step(jobs[k], machines[k])
        played.append((int(jobs[k]), int(machines[k])))
    return played


def assert_same_schedule(a, b) -> None:
    for name in a.__dataclass_fields__:
        if name == "instance":
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes(), name
        else:
            assert x == y, name


@SETTINGS
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1))
def test_random_decisions_give_valid_schedules(inst, seed):
    sim = Simulator(inst)
    sim.reset()
    play_random(sim, np.random.default_rng(seed))
    schedule = sim.schedule()
    report = validate_schedule(schedule)
    assert report.ok, f"{inst.to_json()}\n{report}"
    assert schedule.finished
    for key, value in schedule.metrics.items():
        assert report.metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
    assert 0.0 <= schedule.metrics["utilization"] <= 1.0 + 1e-12


@SETTINGS
@given(inst=instances(max_jobs=5, max_machines=3, max_events=14, jitter=True), seed=st.integers(0, 2**32 - 1))
def test_happenings_within_eps_of_each_other_give_valid_schedules(inst, seed):
    """Events and releases up to 2e-9 apart: the simulator and the validator group them into the same instants."""
    sim = Simulator(inst)
    sim.reset()
    play_random(sim, np.random.default_rng(seed))
    report = validate_schedule(sim.schedule())
    assert report.ok, f"{inst.to_json()}\n{report}"


def shifted(inst, offset: float):
    """``inst`` with every release, due date and event time moved ``offset`` later."""
    events = tuple(dataclasses.replace(e, time=e.time + offset, due=None if e.due is None else e.due + offset)
                   for e in inst.events)
    return inst.replace(job_release=inst.job_release + offset, job_due=inst.job_due + offset, events=events)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1),
       offset=st.sampled_from([1e4, 1e6, 1e9]))
def test_schedules_far_from_time_zero_are_valid(inst, seed, offset):
    # the validator once ordered an event and a start with its relative tolerance (1e-6 |t|: 1000 time units
    # at 1e9, the scale of Unix timestamps), so it replayed events that came after a start as if before
    far = shifted(inst, offset)
    sim = Simulator(far)
    sim.reset()
    play_random(sim, np.random.default_rng(seed))
    report = validate_schedule(sim.schedule())
    assert report.ok, f"{far.to_json()}\n{report}"


@settings(max_examples=100, deadline=None)
@given(inst=instances(max_jobs=6, max_machines=4), rule=st.sampled_from(RULES), seed=st.integers(0, 1000))
def test_rule_rollouts_are_valid(inst, rule, seed):
    schedule = rollout(inst, rule=rule, seed=seed)
    assert validate_schedule(schedule).ok


@settings(max_examples=100, deadline=None)
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1),
       cut=st.integers(0, 20))
def test_snapshot_restore_reproduces_trajectory_bit_for_bit(inst, seed, cut):
    sim = Simulator(inst)
    sim.reset()
    rng = np.random.default_rng(seed)
    play_random(sim, rng, max_decisions=cut)
    snap = sim.snapshot()
    assert not any(np.shares_memory(a, b) for a, b in zip(snap, sim.state))
    tail = play_random(sim, rng)
    first = sim.schedule()
    sim.restore(snap)
    for job, machine in tail:
        sim.step(job, machine)
    assert sim.done
    assert_same_schedule(first, sim.schedule())
    sim.restore(snap)  # a snapshot survives being restored from
    assert sim.snapshot().counters.tobytes() == snap.counters.tobytes()


@settings(max_examples=40, deadline=None)
@given(inst=instances(max_jobs=5, max_machines=3, max_events=10), rule=st.sampled_from(JOB_RULES[:-1]))
def test_a_rule_rollout_equals_stepping_with_the_rules_choices(inst, rule):
    job_rule, machine_rule = parse_rule(rule)
    sim = Simulator(inst)
    sim.reset()
    while not sim.done:
        sim.step(*select(sim.static, sim.state, job_rule, machine_rule))
    assert_same_schedule(sim.schedule(), rollout(inst, rule=rule))


def _bounds(shared):
    with (shared / "benchmarks" / "bounds.csv").open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_every_rule_on_every_benchmark_file_is_valid_and_above_the_lower_bound(shared):
    rows = _bounds(shared)
    assert len(rows) == 170
    for row in rows:
        suffix = ".fjs" if row["set"].startswith("fjsp") else ".txt"
        inst = load_instance(shared / "benchmarks" / row["set"] / f"{row['instance']}{suffix}")
        for rule in ("SPT", "FIFO", "MWKR", "EDD"):
            schedule = rollout(inst, rule=rule)
            makespan = schedule.metrics["makespan"]
            assert makespan >= float(row["lower_bound"]), (row["instance"], rule, makespan)
            report = validate_schedule(schedule)
            assert report.ok, (row["instance"], rule, str(report))


def test_reference_directory_rollout_is_valid(reference_dir):
    inst = load_instance(reference_dir)
    for rule in ("SPT", "FIFO", "MWKR", "EDD"):
        schedule = rollout(inst, rule=rule)
        report = validate_schedule(schedule)
        assert report.ok, str(report)
        assert schedule.metrics["num_cancelled_jobs"] <= 3  # a cancellation after completion is ignored
        assert schedule.finished


def assert_active_window(state: State) -> None:
    """The window ``[C_ACTIVE_FIRST, C_ACTIVE_END)`` that the scans for startable jobs walk runs from the first active
    job to the last (one left out is never offered; a window left wider made each decision cost more as jobs
    finished, python -m scripts.bench 'only=[scaling]')."""
    active = np.flatnonzero(state.job_status == JOB_ACTIVE)
    first, end = int(state.counters[C_ACTIVE_FIRST]), int(state.counters[C_ACTIVE_END])
    assert (first, end) == (active[0], active[-1] + 1) if len(active) else first >= end, (first, end, active)


def assert_rule_bookkeeping(sim: Simulator) -> None:
    """The state the rules and observations read agrees with the segment and downtime logs (compiled.py):
    ``machine_workload`` is the processing time assigned so far (stopped segments count what they ran),
    ``machine_free_since`` of an up, idle machine is when it last became idle and up, and ``job_ready`` of a
    waiting job is when its current slot became startable (release, or its last segment's end); and the scans'
    window is tight (:func:`assert_active_window`)."""
    st_ = sim.state
    assert_active_window(st_)
    n, d = int(st_.counters[C_SEGMENTS]), int(st_.counters[C_DOWNTIMES])
    seg_m, seg_j = st_.segment_machine[:n], st_.segment_job[:n]
    length = st_.segment_end[:n] - st_.segment_start[:n]
    for m in range(sim.instance.num_machines):
        assert st_.machine_workload[m] == pytest.approx(length[seg_m == m].sum(), abs=1e-9), m
        if st_.machine_job[m] < 0 and st_.machine_down[m] == DOWN_NONE:
            ends = [0.0, *st_.segment_end[:n][seg_m == m], *st_.downtime_end[:d][st_.downtime_machine[:d] == m]]
            assert st_.machine_free_since[m] == pytest.approx(max(ends), abs=1e-9), m
    for j in range(sim.instance.num_jobs):
        if st_.job_status[j] == JOB_ACTIVE and st_.job_machine[j] < 0:
            ends = [float(sim.instance.job_release[j]), *st_.segment_end[:n][seg_j == j]]
            assert st_.job_ready[j] == pytest.approx(max(ends), abs=1e-9), j


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1))
def test_rule_bookkeeping_follows_the_logs_at_every_decision(inst, seed):
    # machine_workload (LWL), machine_free_since (LIT) and job_ready (FIFO, LIFO, the action-slot order, the
    # waiting-time feature) are kept apart from the logs that the validator checks: a stop that forgot to update
    # one of them gave valid schedules but other rule choices
    sim = Simulator(inst)
    sim.reset()
    rng = np.random.default_rng(seed)
    while not sim.done:
        assert_rule_bookkeeping(sim)
        play_random(sim, rng, max_decisions=1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1))
def test_a_second_episode_on_the_same_simulator_repeats_the_first(inst, seed):
    # reset() must clear every field an episode changes: a slot left touched ignores the next episode's
    # PTIME_CHANGE, a workload or an idle time left over steers LWL and LIT differently
    sim = Simulator(inst)
    for rule in ("MWKR:LWL", "FIFO:LIT"):
        fresh = rollout(inst, rule=rule)
        sim.reset()
        sim.run(rule)
        assert_same_schedule(fresh, sim.schedule())
    runs = []
    for _ in range(2):
        sim.reset()
        play_random(sim, np.random.default_rng(seed))
        runs.append(sim.schedule())
    assert_same_schedule(*runs)
    fresh = Simulator(inst)
    fresh.reset()
    sim.reset()
    reset_fields = ("now", "counters", "job_status", "job_pos", "job_num_slots", "job_machine", "job_ready", "job_due",
                    "job_weight", "job_completion", "job_cancelled_at", "slot_factor", "slot_nominal", "slot_work",
                    "slot_touched", "machine_job", "machine_down", "machine_maintenance", "machine_free_since",
                    "machine_workload")
    for name in reset_fields:
        assert getattr(sim.state, name).tobytes() == getattr(fresh.state, name).tobytes(), name


def assert_same_rollout_input(a: State, b: State, T: State, slot_ptr: np.ndarray) -> None:
    """``a`` and ``b`` agree to the bit on all a rollout without events reads: the clock, counters, machines, and the
    jobs of ``T``'s active window with their slots."""
    first, end = T.counters[C_ACTIVE_FIRST], max(T.counters[C_ACTIVE_END], T.counters[C_ACTIVE_FIRST])
    for name in State._fields:
        x, y = getattr(a, name), getattr(b, name)
        if name.startswith("job_"):
            x, y = x[first:end], y[first:end]
        elif name.startswith("slot_"):
            x, y = x[slot_ptr[first]:slot_ptr[end]], y[slot_ptr[first]:slot_ptr[end]]
        elif name.startswith(("segment_", "downtime_")):
            continue
        assert x.tobytes() == y.tobytes(), name


def poison(state: State, rng: np.random.Generator) -> None:
    """Fill every array of ``state`` with made-up values: what a scratch state holds from another episode."""
    for array in state:
        array[:] = rng.integers(0, 3, array.shape) if array.dtype.kind == "i" else rng.uniform(0, 50, array.shape)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1),
       clairvoyant=st.booleans(), objective=st.integers(0, 3))
def test_a_lookahead_rollout_from_the_window_copy_plays_and_values_as_from_a_whole_copy(inst, seed, clairvoyant,
                                                                                       objective):
    """A scratch state holding another episode's values, prepared (only the window, the machines, the clock and the
    counters are copied without clairvoyance), plays each rollout as a whole copy with the future forgotten does,
    values it to the bit as that copy's ``_objective`` (jobs outside the window counted from the state: completed
    ones before and after it, and jobs not released yet lie inside it here), and is the prepared state again after
    ``_reprepare``."""
    sim = Simulator(inst)
    sim.reset()
    S = sim.static
    rng = np.random.default_rng(seed)
    whole, played, scratch = allocate_state(S), allocate_state(S), allocate_state(S)
    rule = JOB_RULES.index("FIFO")
    while not sim.done:
        T = sim.state
        jobs, machines, _ = sim.candidates()
        copy_into(T, whole)
        if not clairvoyant:
            forget_future(S, whole)
        poison(scratch, rng)
        prepared = _prepare(S, T, scratch, clairvoyant, objective)
        assert_same_rollout_input(scratch, whole, T, S.job_slot_ptr)
        for j, m in zip(jobs.tolist(), machines.tolist()):
            horizon = int(rng.integers(-1, 4))
            copy_into(whole, played)
            _rollout(S, played, j, m, rule, 0, horizon)
            _rollout(S, scratch, j, m, rule, 0, horizon)
            assert_same_rollout_input(scratch, played, T, S.job_slot_ptr)
            segments = slice(T.counters[C_SEGMENTS], played.counters[C_SEGMENTS])
            assert scratch.segment_end[segments].tobytes() == played.segment_end[segments].tobytes()
            # rollout_value: the documented value of a rollout (docs/agents.md), estimating the open jobs
            assert (repr(_prepared_value(S, T, scratch, prepared, objective, clairvoyant, True))
                    == repr(rollout_value(S, played, objective)))
            assert (repr(_prepared_value(S, T, scratch, prepared, objective, clairvoyant, False))
                    == repr(_objective(S, played, objective, False)))
            _reprepare(S, T, scratch, prepared, clairvoyant)
            assert_same_rollout_input(scratch, whole, T, S.job_slot_ptr)
        k = int(rng.integers(len(jobs)))
        sim.step(jobs[k], machines[k])


def test_compiled_arrays_are_memoised_and_read_only_and_scratch_states_kept_per_index_and_instance():
    """The Static of an instance is built once and read-only; a snapshot shares no array with its state; a scratch
    state is one per index, kept while the instance is the same and rebuilt to the size of a new one (a scratch
    sized for another instance would let the kernels write past its arrays)."""
    small, large = load_instance(embedded_path("mk01")), load_instance(embedded_path("mk03"))
    static = compile_instance(small)
    assert compile_instance(small) is static
    assert not any(a.flags.writeable for a in static if isinstance(a, np.ndarray))
    state = allocate_state(static)
    assert not any(np.shares_memory(a, b) for a, b in zip(copy_state(state), state))
    scratch = ScratchStates(2)
    first, second = scratch.get(static), scratch.get(static, 1)
    assert first is not second and scratch.get(static) is first and scratch.get(static, 1) is second
    other = compile_instance(large)
    resized = scratch.get(other)
    assert resized is not first and resized.job_status.shape == (large.num_jobs,)
    assert resized.slot_op.shape == other.slot_op.shape and resized.segment_job.shape == (other.segment_capacity,)
    assert scratch.get(static, 1) is second


@pytest.mark.parametrize("copy_of", [lambda inst: pickle.loads(pickle.dumps(inst)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_every_static_has_the_numba_type_of_compile_instance(copy_of):
    """A compiled instance came back from pickle (a worker process) or deepcopy with its memoised Static writable,
    and a sampled future's concatenated arrays were writable: numba compiled every kernel again for each of these
    two Static types (48 s and more with an empty cache)."""
    mk01 = load_instance(embedded_path("mk01"))
    static = compile_instance(mk01)
    copied = copy_of(mk01)
    assert copied._cache["static"] is not static
    assert numba.typeof(compile_instance(copied)) == numba.typeof(static)
    assert numba.typeof(with_sampled_future(static, compile_instance(copied))) == numba.typeof(static)
