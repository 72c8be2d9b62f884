"""Hand-computed schedules: one scenario per event type and per breakdown policy.

Every scenario is small enough to check by hand; the expected segments were worked out on paper
from docs/semantics.md before the simulator ran them.
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from dynasched_gym import Event, EventType, Instance, Job, Machine, validate_schedule
from dynasched_gym.core import Simulator
from dynasched_gym.core.rules import parse_rule, select
from dynasched_gym.metrics import EPS

E = EventType


def play(instance: Instance, actions: list[tuple[int, int]] | None = None):
    """Run ``actions`` in order (or the first candidate each time) and return the schedule."""
    sim = Simulator(instance)
    sim.reset()
    scripted = list(actions or [])
    while not sim.done:
        if scripted:
            sim.step(*scripted.pop(0))
        else:
            jobs, machines, _ = sim.candidates()
            sim.step(jobs[0], machines[0])
    assert not scripted, f"actions left over: {scripted}"
    schedule = sim.schedule()
    report = validate_schedule(schedule)
    assert report.ok, str(report)
    return schedule


def segments(schedule) -> list[tuple]:
    return [
        (int(j), int(k), int(m), float(s), float(e), round(float(w), 9), ("completed", "preempted", "aborted")[st])
        for j, k, m, s, e, w, st in zip(schedule.segment_job, schedule.segment_op, schedule.segment_machine,
                                        schedule.segment_start, schedule.segment_end, schedule.segment_work,
                                        schedule.segment_status)
    ]


def downtime(schedule) -> list[tuple]:
    return [(int(m), float(s), float(e), ("breakdown", "maintenance")[k]) for m, s, e, k in
            zip(schedule.downtime_machine, schedule.downtime_start, schedule.downtime_end, schedule.downtime_kind)]


def make(jobs: list[Job], events: list[Event] = (), policy: str = "resume", speeds=(1.0, 1.0)) -> Instance:
    machines = [Machine(f"M{i}", speed=s) for i, s in enumerate(speeds)]
    return Instance.build("hand", machines, jobs, events, policy)


def test_static_flexible_choice():
    inst = make([Job("a", [{0: 3.0}, {1: 2.0}]), Job("b", [{0: 2.0, 1: 4.0}])])
    s = play(inst, [(0, 0), (1, 1), (0, 1)])
    assert segments(s) == [(0, 0, 0, 0.0, 3.0, 1.0, "completed"), (1, 0, 1, 0.0, 4.0, 1.0, "completed"),
                           (0, 1, 1, 4.0, 6.0, 1.0, "completed")]
    assert s.metrics["makespan"] == 6.0
    assert s.metrics["utilization"] == pytest.approx(9.0 / 12.0)


@pytest.mark.parametrize(("policy", "second"), [("resume", (3.0, 6.0, 0.75)), ("restart", (3.0, 7.0, 1.0))])
def test_breakdown_preempts_under_both_policies(policy, second):
    inst = make([Job("a", [{0: 4.0}])], [Event(1.0, E.BREAKDOWN, machine=0, duration=2.0)], policy)
    s = play(inst)
    start, end, work = second
    assert segments(s) == [(0, 0, 0, 0.0, 1.0, 0.25, "preempted"), (0, 0, 0, start, end, work, "completed")]
    assert downtime(s) == [(0, 1.0, 3.0, "breakdown")]
    assert s.job_completion[0] == end


def test_resumed_work_moves_to_another_machine():
    inst = make([Job("a", [{0: 4.0, 1: 8.0}])], [Event(1.0, E.BREAKDOWN, machine=0, duration=2.0)])
    s = play(inst, [(0, 0), (0, 1)])
    assert segments(s) == [(0, 0, 0, 0.0, 1.0, 0.25, "preempted"), (0, 0, 1, 1.0, 7.0, 0.75, "completed")]


def test_early_repair_and_breakdown_extension():
    inst = make([Job("a", [{0: 4.0}])], [
        Event(1.0, E.BREAKDOWN, machine=0, duration=10.0),
        Event(1.5, E.BREAKDOWN, machine=0, duration=1.0),  # ends earlier: no extension
        Event(2.0, E.REPAIR, machine=0),
    ])
    s = play(inst)
    assert downtime(s) == [(0, 1.0, 2.0, "breakdown")]
    assert segments(s)[-1] == (0, 0, 0, 2.0, 5.0, 0.75, "completed")


def test_maintenance_waits_for_running_operation_and_blocks_dispatch():
    inst = make([Job("a", [{0: 4.0}]), Job("b", [{0: 1.0}])], [Event(1.0, E.MAINTENANCE, machine=0, duration=2.0)])
    s = play(inst, [(0, 0), (1, 0)])
    assert downtime(s) == [(0, 4.0, 6.0, "maintenance")]
    assert segments(s) == [(0, 0, 0, 0.0, 4.0, 1.0, "completed"), (1, 0, 0, 6.0, 7.0, 1.0, "completed")]


def test_breakdown_during_maintenance_takes_over():
    inst = make([Job("a", [{0: 1.0}], release=10.0)], [
        Event(1.0, E.MAINTENANCE, machine=0, duration=4.0),
        Event(2.0, E.BREAKDOWN, machine=0, duration=1.0),
    ])
    s = play(inst)
    assert downtime(s) == [(0, 1.0, 2.0, "maintenance"), (0, 2.0, 5.0, "breakdown")]


@pytest.mark.parametrize(("event", "op1"), [
    (Event(1.0, E.PTIME_CHANGE, job=0, op=1, factor=2.0), (2.0, 5.0)),
    (Event(1.0, E.PTIME_CHANGE, job=0, op=1, value=5.0), (2.0, 4.5)),  # nominal 5 / speed 2
    (Event(1.0, E.PTIME_CHANGE, job=0, op=0, factor=3.0), (2.0, 3.5)),  # op 0 already running: ignored
])
def test_processing_time_change(event, op1):
    inst = make([Job("a", [{0: 2.0}, {0: 1.5}])], [event], speeds=(2.0, 1.0))
    s = play(inst)
    assert segments(s)[1][3:5] == op1


def test_a_processing_time_value_resets_the_earlier_factors():
    """Factors compound, and a ``value`` replaces them: 5 / speed 2, not 3 x 5 / 2; a later factor scales the value."""
    inst = make([Job("a", [{0: 2.0}, {0: 1.5}, {0: 1.0}])], [
        Event(0.5, E.PTIME_CHANGE, job=0, op=1, factor=3.0), Event(1.0, E.PTIME_CHANGE, job=0, op=1, value=5.0),
        Event(1.0, E.PTIME_CHANGE, job=0, op=2, value=4.0), Event(1.5, E.PTIME_CHANGE, job=0, op=2, factor=0.5),
    ], speeds=(2.0, 1.0))
    s = play(inst)
    assert [seg[3:5] for seg in segments(s)] == [(0.0, 2.0), (2.0, 4.5), (4.5, 5.5)]


def test_a_processing_time_value_keeps_the_operations_machines():
    """A PTIME_CHANGE ``value`` divides by the speed of the machines the operation may use; a machine it may not
    use stays refused (the value gave every machine a time)."""
    inst = make([Job("a", [{0: 2.0}, {0: 1.5}])], [Event(1.0, E.PTIME_CHANGE, job=0, op=1, value=5.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 2.0
    with pytest.raises(ValueError, match=r"^\(job 0, machine 1\) cannot start at t=2.0"):
        sim.step(0, 1)
    assert [c.tolist() for c in sim.candidates()] == [[0], [0], [5.0]]


@pytest.mark.filterwarnings("ignore::dynasched_gym.errors.IgnoredEventWarning")
def test_a_processing_time_change_past_a_full_list_touches_no_other_job():
    """Op 1 of a one-op job with no REWORK or ROUTE_CHANGE is past its slots: the change is ignored, and the next
    job's first slot, stored right after them, keeps its time."""
    inst = make([Job("a", [{0: 2.0}]), Job("b", [{1: 3.0}])], [Event(0.0, E.PTIME_CHANGE, job=0, op=1, factor=4.0)])
    sim = Simulator(inst)
    sim.reset()
    assert [c.tolist() for c in sim.candidates()] == [[0, 1], [0, 1], [2.0, 3.0]]


def test_route_change_replaces_unstarted_operations():
    inst = make([Job("a", [{0: 2.0}, {0: 3.0}])], [Event(1.0, E.ROUTE_CHANGE, job=0, ops=({1: 5.0},))])
    s = play(inst)
    assert segments(s) == [(0, 0, 0, 0.0, 2.0, 1.0, "completed"), (0, 1, 1, 2.0, 7.0, 1.0, "completed")]


def test_route_change_from_index_beyond_list_appends():
    inst = make([Job("a", [{0: 2.0}, {0: 3.0}])], [Event(1.0, E.ROUTE_CHANGE, job=0, op=5, ops=({1: 5.0},))])
    s = play(inst)
    assert [seg[1:5] for seg in segments(s)] == [(0, 0, 0.0, 2.0), (1, 0, 2.0, 5.0), (2, 1, 5.0, 10.0)]


def test_a_job_s_route_changes_each_get_slots_of_their_own():
    """Two route changes of job a each append an operation: its list grows to three slots, and b (the next job in the
    slot arrays) keeps its own operation of time 10."""
    inst = make([Job("a", [{0: 1.0}]), Job("b", [{1: 10.0}], release=5.0)], [
        Event(0.5, E.ROUTE_CHANGE, job=0, op=1, ops=({0: 1.0},)),
        Event(1.5, E.ROUTE_CHANGE, job=0, op=2, ops=({1: 4.0},)),
    ])
    assert [seg[:5] for seg in segments(play(inst))] == [(0, 0, 0, 0.0, 1.0), (0, 1, 0, 1.0, 2.0),
                                                         (0, 2, 1, 2.0, 6.0), (1, 0, 1, 6.0, 16.0)]


def test_priority_and_due_date_changes_in_force_at_completion():
    inst = make([Job("a", [{0: 4.0}], due=3.0)], [
        Event(1.0, E.PRIORITY_CHANGE, job=0, weight=5.0),
        Event(2.0, E.DUE_DATE_CHANGE, job=0, due=2.0),
        Event(4.0, E.DUE_DATE_CHANGE, job=0, due=100.0),  # same time as the completion: ignored
    ])
    s = play(inst)
    assert (s.job_due[0], s.job_weight[0]) == (2.0, 5.0)
    assert s.metrics["total_tardiness"] == 2.0
    assert s.metrics["total_weighted_tardiness"] == 10.0
    assert s.metrics["num_tardy_jobs"] == 1


def test_cancellation_aborts_running_operation_and_is_ignored_after_completion():
    inst = make([Job("a", [{0: 4.0}]), Job("b", [{0: 1.0}])], [
        Event(2.0, E.CANCELLATION, job=0),
        Event(5.0, E.CANCELLATION, job=1),
    ])
    s = play(inst, [(0, 0), (1, 0)])
    assert segments(s) == [(0, 0, 0, 0.0, 2.0, 0.5, "aborted"), (1, 0, 0, 2.0, 3.0, 1.0, "completed")]
    assert s.job_cancelled_at[0] == 2.0 and math.isnan(s.job_completion[0])
    assert math.isnan(s.job_cancelled_at[1])
    m = s.metrics
    assert (m["num_cancelled_jobs"], m["makespan"], m["mean_flow_time"]) == (1, 3.0, 3.0)
    assert m["utilization"] <= 1.0


def test_cancellation_before_release_hides_job_for_good():
    inst = make([Job("a", [{0: 1.0}]), Job("b", [{0: 1.0}], release=2.0)], [Event(2.0, E.CANCELLATION, job=1)])
    s = play(inst)
    assert [seg[0] for seg in segments(s)] == [0]
    assert s.job_cancelled_at[1] == 2.0


def test_rework_inserts_completed_operation_before_next_unstarted():
    inst = make([Job("a", [{0: 2.0}, {1: 3.0}])], [
        Event(1.0, E.REWORK, job=0, op=1),  # op 1 not completed yet: ignored
        Event(3.0, E.REWORK, job=0, op=0),  # op 1 is running: the copy goes after it
    ])
    s = play(inst)
    assert segments(s) == [(0, 0, 0, 0.0, 2.0, 1.0, "completed"), (0, 1, 1, 2.0, 5.0, 1.0, "completed"),
                           (0, 2, 0, 5.0, 7.0, 1.0, "completed")]


def test_a_reworked_copy_keeps_the_changed_processing_times():
    """The copy has the same times as the completed slot: its PTIME_CHANGE factor (4, not 2) and value (5, not 2)."""
    inst = make([Job("a", [{0: 2.0}, {0: 3.0}]), Job("b", [{1: 2.0}, {1: 3.0}])], [
        Event(0.0, E.PTIME_CHANGE, job=0, op=0, factor=2.0), Event(0.0, E.PTIME_CHANGE, job=1, op=0, value=5.0),
        Event(5.0, E.REWORK, job=0, op=0), Event(6.0, E.REWORK, job=1, op=0),
    ])
    s = play(inst)
    assert sorted(seg[:5] for seg in segments(s)) == [
        (0, 0, 0, 0.0, 4.0), (0, 1, 0, 4.0, 7.0), (0, 2, 0, 7.0, 11.0),
        (1, 0, 1, 0.0, 5.0), (1, 1, 1, 5.0, 8.0), (1, 2, 1, 8.0, 13.0)]


def test_same_time_order_completion_before_breakdown_and_arrival_before_cancellation():
    inst = make([Job("a", [{0: 2.0}]), Job("b", [{1: 1.0}], release=2.0)], [
        Event(2.0, E.CANCELLATION, job=1),
        Event(2.0, E.BREAKDOWN, machine=0, duration=1.0),
    ])
    s = play(inst)
    assert segments(s) == [(0, 0, 0, 0.0, 2.0, 1.0, "completed")]
    assert downtime(s) == [(0, 2.0, 3.0, "breakdown")]
    assert s.job_cancelled_at[1] == 2.0


def test_a_job_cancelled_within_eps_before_its_release_arrives_first():
    """A release within EPS of an instant applies at that instant, before its stream events (as the oracle
    features and the LLM prompts count it), so a job cancelled up to EPS before its release arrives first: the
    schedule's arrivals (Gantt, timeline, curves) said it never arrived."""
    inst = make([Job("a", [{0: 1.0}]), Job("b", [{0: 1.0}], release=2.0), Job("c", [{0: 1.0}], release=5.0)],
                [Event(2.0 - EPS / 2, E.CANCELLATION, job=1), Event(5.0 - 4 * EPS, E.CANCELLATION, job=2)])
    s = play(inst)
    assert s.job_cancelled_at[1] == 2.0 - EPS / 2 and s.job_arrival[1] == 2.0
    assert s.job_cancelled_at[2] == 5.0 - 4 * EPS and np.isnan(s.job_arrival[2])  # 4 EPS before: never arrives


def test_invalid_action_raises_clear_error():
    sim = Simulator(make([Job("a", [{0: 1.0}])]))
    sim.reset()
    with pytest.raises(ValueError, match=
                       r"^\(job 0, machine 1\) cannot start at t=0.0; candidates\(\) offers \(0, 0\)$"):
        sim.step(0, 1)


def test_an_invalid_step_names_the_offered_pairs():
    """The error said only "pick one of candidates()": which pairs it offers, the first ten of many, is named."""
    sim = Simulator(make([Job(f"J{j}", [{0: 1.0, 1: 2.0}]) for j in range(6)]))
    sim.reset()
    with pytest.raises(ValueError) as exc:
        sim.step(0, 2)
    assert str(exc.value).endswith("offers (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0), "
                                   "(4, 1), ... (12 pairs)")
    assert sim.decisions == 0


def test_the_numba_cache_is_keyed_by_every_module_whose_constants_the_kernels_freeze() -> None:
    """metrics.EPS and the event type codes are compiled into the kernels: a changed EPS ran the cached kernels of
    the old one (another return on a warm cache than on a cold one) while the key covered core and envs only."""
    from dynasched_gym.core import _numba_cache

    package = _numba_cache._PACKAGE
    sources = set(_numba_cache._kernel_sources())
    assert {package / "metrics.py", package / "instance.py", package / "core" / "kernels.py"} <= sources
    assert package / "generation" / "sesc.py" not in sources  # no kernel imports it: editing it keeps the cache


def test_a_cold_kernel_cache_is_announced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts say why the first run after an install shows no progress for a minute or two; not afterwards."""
    import numba

    from dynasched_gym.core import compile_note
    from dynasched_gym.core._numba_cache import _kernel_subpaths

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "kernels"))
    assert "compiling the simulator's kernels" in compile_note() and str(tmp_path / "kernels") in compile_note()
    # another checkout's kernels (a clone: numba names the folder by a hash of the sources' path) were read as
    # this one's, and its first run compiled without the note
    subpaths = _kernel_subpaths()
    assert len(subpaths) == 2 and subpaths[0].startswith("core_") and subpaths[1].startswith("dfjsp_")
    for subpath in ("core_1", "dfjsp_1", *subpaths):
        (tmp_path / "kernels" / subpath).mkdir(parents=True)
        assert compile_note() is not None
        (tmp_path / "kernels" / subpath / "kernels.step-10.py311.nbi").write_bytes(b"")
    assert compile_note() is None
    import numba.core.caching

    monkeypatch.delattr(numba.core.caching, "_CacheLocator")  # a private API of numba: any kernel cached then counts
    assert _kernel_subpaths() == ["."] and compile_note() is None


def test_kernel_directories_unused_for_a_month_are_pruned(tmp_path: Path) -> None:
    """Each change of the kernels left its 5-35 MB directory for ever; only this package's, unused, go."""
    import os
    import time

    from dynasched_gym.core._numba_cache import MARKER, prune

    def kernels(name: str, days_unused: float, marked: bool = True) -> Path:
        directory = tmp_path / name
        (directory / "core_1").mkdir(parents=True)
        (directory / "core_1" / "kernels.step-10.py311.nbi").write_bytes(b"")
        if marked:
            (directory / MARKER).touch()
            stamp = time.time() - days_unused * 86400
            os.utime(directory / MARKER, (stamp, stamp))
        return directory

    old, current = kernels("old", 40), kernels("current", 40)
    kernels("recent", 3)
    kernels("foreign", 40, marked=False)
    assert prune(tmp_path, keep=current) == [old]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "foreign", "recent"]


def _two_jobs() -> Instance:
    return Instance.build("api", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 2.0}, {1: 1.0}]), Job("J1", [{1: 3.0}, {0: 1.0}])])


def test_simulator_arguments_are_checked():
    """step(0.7, 0) played job 0 and step("1", "1") job 1; run(max_decisions=3.5) or "3" ran to the end and True
    ran one decision; a rule was not checked once the episode was over; Simulator("mk01") failed with an
    AttributeError deep inside."""
    sim = Simulator(_two_jobs())
    sim.reset()
    for job, machine, name in ((0.7, 0, "job"), (0, 0.9, "machine"), ("1", "1", "job"), (True, 0, "job")):
        with pytest.raises(TypeError, match=f"{name} must be an integer"):
            sim.step(job, machine)
    for job in (2**63, np.uint64(2**63 + 1), -2**63 - 1):
        with pytest.raises(ValueError, match="cannot start"):  # no OverflowError
            sim.step(job, np.int64(0))
    assert sim.decisions == 0
    for bad, error in ((3.5, TypeError), ("3", TypeError), (True, TypeError), (None, TypeError), (-5, ValueError)):
        with pytest.raises(error, match=f"max_decisions must be an integer >= -1, got {bad!r}"):
            sim.run(max_decisions=bad)
    sim.run(max_decisions=1)
    assert sim.decisions == 1
    sim.run(max_decisions=2**70)  # never reached: to the end
    assert sim.done
    with pytest.raises(ValueError, match="unknown rule 'XYZ'"):
        sim.run("XYZ")
    with pytest.raises(TypeError, match=r"instance must be an Instance .*got str: 'mk01'"):
        Simulator("mk01")


def test_before_the_first_reset_there_is_no_episode_to_step_run_or_record():
    """Before reset the state arrays are zeros: schedule() read them as every job cancelled at 0 (a finished
    schedule, num_cancelled_jobs = all), run() silently did nothing, and step() said the episode was over."""
    sim = Simulator(_two_jobs())
    assert sim.done and sim.candidates()[0].size == 0
    for call in (sim.schedule, lambda: sim.step(0, 0), sim.run):
        with pytest.raises(RuntimeError, match=r"^no episode yet: call reset\(\) first$"):
            call()
    restored = Simulator(_two_jobs())
    sim.reset()
    restored.restore(sim.snapshot())  # a branch started from another simulation's state
    assert restored.schedule().metrics["num_cancelled_jobs"] == 0
    sim.run()
    assert sim.schedule().finished
    with pytest.raises(RuntimeError, match="the episode is over"):
        sim.step(0, 0)


def test_restore_takes_only_a_snapshot_of_the_same_instance():
    """restore((1, 2)) wrote 1 and 2 into the first two state arrays without a word; another instance's snapshot
    failed with a NumPy broadcast error."""
    sim = Simulator(_two_jobs())
    sim.reset()
    before = sim.snapshot()
    with pytest.raises(TypeError, match=r"snapshot must be a State from Simulator.snapshot"):
        sim.restore((1, 2))
    other = Simulator(Instance.build("one", [Machine("M0"), Machine("M1")], [Job("J0", [{0: 1.0}])]))
    other.reset()
    with pytest.raises(ValueError, match="snapshot is not of this simulation of 'api'"):
        sim.restore(other.snapshot())
    assert all((a == b).all() or (a != a).all() for a, b in zip(sim.state, before))


def test_restore_refuses_a_snapshot_of_another_instance_of_the_same_size():
    """Only shapes were compared: a snapshot of another instance of the same size (ta01's into ta02's simulation)
    was restored without a word, and the simulation went on with the other instance's state."""
    from dynasched_gym.core import simulator

    sim = Simulator(_two_jobs())
    sim.reset()
    other = Simulator(_two_jobs().replace(name="other", job_release=[0.0, 5.0]))
    other.reset()
    for call in (sim.restore, sim.bind):
        with pytest.raises(ValueError, match=r"is a snapshot of instance 'other', not of this simulation's 'api'$"):
            call(other.snapshot())
    assert sim.decisions == 0
    equal = Simulator(pickle.loads(pickle.dumps(sim.instance)))  # an equal instance's snapshot is the same state
    equal.reset()
    equal.step(0, 0)
    sim.restore(equal.snapshot())
    assert sim.decisions == 1
    held = len(simulator._TAKEN_OF)
    for _ in range(50):
        sim.snapshot()
    assert len(simulator._TAKEN_OF) == held  # an entry goes with its snapshot


def test_bind_takes_only_a_state_of_the_same_instance():
    """bind(None) was accepted and the next reset failed inside numba; another instance's arrays were simulated on
    (numba checks no bounds)."""
    sim = Simulator(_two_jobs())
    sim.reset()
    for bad in (None, (1, 2)):
        with pytest.raises(TypeError, match=rf"^state must be a State of this instance, got {type(bad).__name__}$"):
            sim.bind(bad)
    other = Simulator(Instance.build("one", [Machine("M0"), Machine("M1")], [Job("J0", [{0: 1.0}])]))
    with pytest.raises(ValueError, match="state is not of this simulation of 'api': its job_status is int64 of shape "
                                         r"\(1,\), expected int64 of shape \(2,\)"):
        sim.bind(other.state)
    with pytest.raises(ValueError, match="its now is float32 of shape"):
        sim.bind(sim.state._replace(now=sim.state.now.astype("float32")))
    snapshot = sim.snapshot()
    sim.bind(snapshot)  # the env batch's way: simulate on arrays held elsewhere
    assert sim.state is snapshot
    sim.step(0, 0)
    assert sim.decisions == 1


def test_a_completion_within_eps_after_the_instant_readies_the_job_and_starts_maintenance_at_its_end():
    """a's first operation ends at 2 + EPS/2, in the instant of b's release at 2: a's r and the queued maintenance's
    start are that planned end, not the instant's time (FIFO then takes b, ready at 2, before a)."""
    end = 2.0 + EPS / 2
    inst = make([Job("a", [{0: end}, {1: 1.0}]), Job("b", [{1: 1.0}], release=2.0)],
                [Event(1.0, E.MAINTENANCE, machine=0, duration=1.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 2.0 and sim.state.job_ready.tolist() == [end, 2.0]
    assert sim.state.downtime_start[0] == end
    assert select(sim.static, sim.state, *parse_rule("FIFO")) == (1, 1)


def test_a_maintenance_extending_a_running_block_extends_its_record_also_past_the_episode_end():
    """M0's maintenance 0 .. 2 is extended at 1 by 3 more: one record 0 .. 5, though the episode ends at 1.5 (the
    block's end is only ever applied at 5)."""
    inst = make([Job("a", [{1: 1.5}])], [Event(0.0, E.MAINTENANCE, machine=0, duration=2.0),
                                         Event(1.0, E.MAINTENANCE, machine=0, duration=3.0)])
    assert downtime(play(inst)) == [(0, 0.0, 5.0, "maintenance")]


def test_a_maintenance_during_a_breakdown_waits_for_its_end():
    inst = make([Job("a", [{0: 1.0}], release=5.0)], [Event(0.0, E.BREAKDOWN, machine=0, duration=2.0),
                                                      Event(1.0, E.MAINTENANCE, machine=0, duration=1.0)])
    assert downtime(play(inst)) == [(0, 0.0, 2.0, "breakdown"), (0, 2.0, 3.0, "maintenance")]


def test_maintenances_queued_behind_an_operation_run_as_one_block_of_their_summed_durations():
    inst = make([Job("a", [{0: 4.0}])], [Event(1.0, E.MAINTENANCE, machine=0, duration=2.0),
                                         Event(2.0, E.MAINTENANCE, machine=0, duration=1.0)])
    assert downtime(play(inst)) == [(0, 4.0, 7.0, "maintenance")]


def test_a_shorter_breakdown_during_a_breakdown_leaves_its_end():
    inst = make([Job("a", [{0: 4.0}])], [Event(1.0, E.BREAKDOWN, machine=0, duration=10.0),
                                         Event(1.5, E.BREAKDOWN, machine=0, duration=1.0)])
    s = play(inst)
    assert downtime(s) == [(0, 1.0, 11.0, "breakdown")]
    assert s.job_completion[0] == 14.0


def test_a_second_cancellation_of_a_job_is_ignored():
    """b's second cancellation counts no second job closed: the episode goes on until a completes."""
    inst = make([Job("a", [{0: 4.0}]), Job("b", [{0: 1.0}], release=9.0)],
                [Event(1.0, E.CANCELLATION, job=1), Event(2.0, E.CANCELLATION, job=1)])
    s = play(inst)
    assert segments(s) == [(0, 0, 0, 0.0, 4.0, 1.0, "completed")]
    assert s.job_cancelled_at[1] == 1.0


def test_a_cancellation_frees_its_machine_for_the_maintenance_queued_behind_it():
    inst = make([Job("a", [{0: 4.0}]), Job("b", [{1: 5.0}])], [Event(1.0, E.MAINTENANCE, machine=0, duration=2.0),
                                                               Event(2.0, E.CANCELLATION, job=0)])
    assert downtime(play(inst)) == [(0, 2.0, 4.0, "maintenance")]


def test_a_rework_of_the_running_slot_is_ignored():
    inst = make([Job("a", [{0: 2.0}, {1: 3.0}])], [Event(3.0, E.REWORK, job=0, op=1)])
    assert [seg[:5] for seg in segments(play(inst))] == [(0, 0, 0, 0.0, 2.0), (0, 1, 1, 2.0, 5.0)]


def test_a_second_breakdown_under_resume_leaves_the_work_left_after_the_first():
    """a (8 on M0) does 2 before each breakdown: 1/4 of its work, then 1/4 more, leaving 1/2 (4) for 7 .. 11."""
    inst = make([Job("a", [{0: 8.0}])], [Event(2.0, E.BREAKDOWN, machine=0, duration=1.0),
                                         Event(5.0, E.BREAKDOWN, machine=0, duration=2.0)])
    assert segments(play(inst))[-1] == (0, 0, 0, 7.0, 11.0, 0.5, "completed")


def test_candidates_offer_the_time_left_of_a_preempted_operation():
    inst = make([Job("a", [{0: 4.0, 1: 8.0}])], [Event(1.0, E.BREAKDOWN, machine=0, duration=2.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    jobs, machines, times = sim.candidates()
    assert (jobs.tolist(), machines.tolist(), times.tolist()) == ([0], [1], [6.0])


def test_a_second_episode_starts_the_machine_statistics_afresh():
    inst = make([Job("a", [{0: 4.0}]), Job("b", [{1: 2.0}])])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    sim.step(1, 1)
    sim.reset()
    assert sim.state.machine_free_since.tolist() == [0.0, 0.0] and sim.state.machine_workload.tolist() == [0.0, 0.0]


def test_a_breakdown_up_to_eps_before_a_maintenance_starts_leaves_it_an_empty_record():
    """a ends at 2 + EPS/2, in the instant of the breakdown at 2: the maintenance queued behind it starts at that end
    and the breakdown cuts it at once, an empty record (ending it at 2 would end it before it starts)."""
    end = 2.0 + EPS / 2
    inst = make([Job("a", [{0: end}])], [Event(1.0, E.MAINTENANCE, machine=0, duration=1.0),
                                         Event(2.0, E.BREAKDOWN, machine=0, duration=3.0)])
    assert downtime(play(inst)) == [(0, end, end, "maintenance"), (0, 2.0, 5.0, "breakdown")]


def test_a_processing_time_change_of_a_preempted_slot_is_ignored():
    """a's slot was started (and preempted at 1): the factor at 1.5 leaves its time, so 3/4 of 4 is left, 2 .. 5."""
    inst = make([Job("a", [{0: 4.0}])], [Event(1.0, E.BREAKDOWN, machine=0, duration=1.0),
                                         Event(1.5, E.PTIME_CHANGE, job=0, op=0, factor=2.0)])
    assert segments(play(inst))[-1] == (0, 0, 0, 2.0, 5.0, 0.75, "completed")


def test_a_rework_shifts_every_unstarted_slot_after_the_copy():
    """At 1 a's first operation completes and is reworked: the copy goes before the waiting second operation, which
    keeps its place ahead of the third (slots 0 .. 3 on M0, M0, M1, M0)."""
    inst = make([Job("a", [{0: 1.0}, {1: 2.0}, {0: 3.0}])], [Event(1.0, E.REWORK, job=0, op=0)])
    assert [seg[1:5] for seg in segments(play(inst))] == [(0, 0, 0.0, 1.0), (1, 0, 1.0, 2.0), (2, 1, 2.0, 4.0),
                                                          (3, 0, 4.0, 7.0)]
