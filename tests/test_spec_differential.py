"""Differential test: the simulator against the clean-room reference of tests/spec_simulator.py.

At every decision the clock and the offered (job, op, machine) pairs with their remaining times must agree;
at the end the segments, downtime, job records and metrics.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_simulator import ReferenceSimulator
from strategies import instances

from dynasched_gym.core import Simulator
from dynasched_gym.instance import STREAM_EVENT_TYPES, Event, EventType, Instance, Job, Machine

#: Float rounding only: far below the 3e-10 offsets of the jittered instances, which must not blur.
TOL = 1e-11


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL * max(1.0, abs(a))


def assert_same_rows(got: list[dict], want: list[dict], keys: tuple[str, ...]) -> None:
    """The same records in any order, times within TOL."""
    def order(rows: list[dict]) -> list[tuple]:
        return sorted((*(round(r[k], 6) if isinstance(r[k], float) else r[k] for k in keys), i)
                      for i, r in enumerate(rows))
    assert len(got) == len(want), (got, want)
    for a, b in zip(order(got), order(want)):
        x, y = got[a[-1]], want[b[-1]]
        assert all(_close(x[k], y[k]) if isinstance(y[k], float) else x[k] == y[k] for k in keys), (x, y)


def play_both(inst: Instance, seed: int) -> tuple[Simulator, ReferenceSimulator]:
    """Play random pairs on both; compare every decision point."""
    rng = np.random.default_rng(seed)
    sim, ref = Simulator(inst), ReferenceSimulator(inst)
    sim.reset()
    while True:
        assert sim.done == ref.done, (sim.now, ref.now)
        if sim.done:
            return sim, ref
        assert _close(sim.now, ref.now), (sim.now, ref.now)
        jobs, machines, remaining = sim.candidates()
        pos = sim.state.job_pos  # the op: the job's current slot, after its reworks and route changes
        offered = {(int(j), int(pos[j]), int(m)): float(r) for j, m, r in zip(jobs, machines, remaining)}
        expected = ref.candidates()
        assert offered.keys() == expected.keys(), (sim.now, offered, expected)
        for triple, r in offered.items():
            assert _close(r, expected[triple]), (sim.now, triple, r, expected[triple])
        j, k, m = sorted(offered)[int(rng.integers(len(offered)))]
        ref.step(j, k, m)
        sim.step(j, m)


def assert_same_records(inst: Instance, seed: int) -> None:
    sim, ref = play_both(inst, seed)
    out = sim.schedule().to_dict()
    assert_same_rows(out["segments"], ref.segments, ("job", "op", "machine", "start", "end", "work", "status"))
    assert_same_rows(out["downtime"], ref.downtime, ("machine", "start", "end", "kind"))
    for j, (row, js) in enumerate(zip(out["jobs"], ref.jobs)):
        for key, want in (("due", js.due), ("weight", js.weight), ("completion", js.completion),
                          ("cancelled_at", js.cancelled_at)):
            got = math.nan if row[key] is None else row[key]
            assert _close(got, want), (j, key, got, want)
    for key, want in ref.metrics().items():
        assert out["metrics"][key] == pytest.approx(want, rel=TOL, abs=TOL), key


@st.composite
def _instances(draw: st.DrawFn, jitter: bool) -> Instance:
    """The shared strategy, with times crowded or not, and event op indices also past the static chain (slots that
    only a ROUTE_CHANGE or a REWORK can add)."""
    inst = draw(instances(max_jobs=5, max_machines=3, max_events=16, max_time=draw(st.sampled_from([5, 30])),
                          jitter=jitter))
    shift = draw(st.integers(0, 3))
    return inst.replace(events=tuple(e if e.op is None else dataclasses.replace(e, op=e.op + shift)
                                     for e in inst.events))


@pytest.mark.filterwarnings("ignore::dynasched_gym.errors.IgnoredEventWarning")
@pytest.mark.parametrize("jitter", [False, True])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_random_play_matches_the_reference(jitter, data, seed):
    assert_same_records(data.draw(_instances(jitter)), seed)


def _event(kind: EventType, t: float, target: int) -> Event:
    """An event of ``kind`` at ``t`` on machine ``target`` or job ``target``."""
    payload = {
        EventType.BREAKDOWN: {"machine": target, "duration": 2.0},
        EventType.REPAIR: {"machine": target},
        EventType.MAINTENANCE: {"machine": target, "duration": 3.0},
        EventType.PTIME_CHANGE: {"job": target, "op": 1, "factor": 2.0},
        EventType.ROUTE_CHANGE: {"job": target, "ops": ({1: 2.0},)},
        EventType.PRIORITY_CHANGE: {"job": target, "weight": 10.0},
        EventType.DUE_DATE_CHANGE: {"job": target, "due": 4.0},
        EventType.CANCELLATION: {"job": target},
        EventType.REWORK: {"job": target, "op": 0},
    }[kind]
    return Event(time=t, type=kind, **payload)


@pytest.mark.parametrize("first", STREAM_EVENT_TYPES, ids=lambda k: k.name)
@pytest.mark.parametrize("second", STREAM_EVENT_TYPES, ids=lambda k: k.name)
def test_simultaneous_events_match_the_reference(first, second):
    # job 1 arrives with the events; the ops of job 0 end at 2, 3 or 4 depending on the machines chosen, so the
    # events also meet completions, and a BREAKDOWN at 2 (the first event) downs M0 when the second comes
    machines = [Machine("M0"), Machine("M1", speed=2.0)]
    for t, target, policy in itertools.product((2.0, 3.0, 4.0), (0, 1), ("resume", "restart")):
        jobs = [Job("J0", [{0: 3.0, 1: 4.0}, {0: 2.0}, {0: 1.0, 1: 1.0}], due=6.0),
                Job("J1", [{0: 1.0}, {1: 3.0}], release=t)]
        events = [_event(first, 2.0, target), _event(second, t, target)]
        inst = Instance.build("pair", machines, jobs, events, policy)
        for seed in range(4):
            assert_same_records(inst, seed)


M1 = [Machine("M0")]
B, C, RW, RC, PT, PR, MT = (EventType.BREAKDOWN, EventType.CANCELLATION, EventType.REWORK, EventType.ROUTE_CHANGE,
                            EventType.PTIME_CHANGE, EventType.PRIORITY_CHANGE, EventType.MAINTENANCE)
EDGE_CASES = {
    # a breakdown at an op's end: the COMPLETION comes first, nothing is preempted
    "breakdown at op end": ([Job("J0", [{0: 2.0}, {0: 1.0}])], [Event(2.0, B, machine=0, duration=3.0)],
                            [(0, 0, 0.0, 2.0, "completed"), (0, 1, 5.0, 6.0, "completed")]),
    # a cancelled running op frees its machine at once for the waiting job
    "cancel running op": ([Job("J0", [{0: 4.0}]), Job("J1", [{0: 1.0}], release=0.5)], [Event(1.0, C, job=0)],
                          [(0, 0, 0.0, 1.0, "aborted"), (1, 0, 1.0, 2.0, "completed")]),
    # REWORK of the last op at its completion: the job completed first, so it is ignored
    "rework of last op": ([Job("J0", [{0: 2.0}])], [Event(2.0, RW, job=0, op=0)], [(0, 0, 0.0, 2.0, "completed")]),
    # REWORK while the job runs op 1: the copy of op 0 comes after the running op, before op 2
    "rework while running": ([Job("J0", [{0: 2.0}, {0: 3.0}, {0: 1.0}])], [Event(3.0, RW, job=0, op=0)],
                             [(0, 0, 0.0, 2.0, "completed"), (0, 1, 2.0, 5.0, "completed"),
                              (0, 2, 5.0, 7.0, "completed"), (0, 3, 7.0, 8.0, "completed")]),
    # ROUTE_CHANGE mid-op replaces the ops after the running one; a PTIME_CHANGE of the running op is ignored
    "route change mid-op": ([Job("J0", [{0: 2.0}, {0: 3.0}])],
                            [Event(1.0, PT, job=0, op=0, factor=2.0), Event(1.0, RC, job=0, ops=({0: 5.0},))],
                            [(0, 0, 0.0, 2.0, "completed"), (0, 1, 2.0, 7.0, "completed")]),
    # a queued maintenance waits for the breakdown that preempts the running op
    "maintenance after breakdown": ([Job("J0", [{0: 5.0}])],
                                    [Event(1.0, MT, machine=0, duration=2.0), Event(3.0, B, machine=0, duration=1.0)],
                                    [(0, 0, 0.0, 3.0, "preempted"), (0, 0, 6.0, 8.0, "completed")]),
    # a REPAIR 6e-10 after a BREAKDOWN joins its instant and happens at the instant's time, 3: it ends the old
    # downtime there, not 6e-10 later, and the BREAKDOWN (type order: after the REPAIR) opens a new one
    "repair just after a breakdown": ([Job("J0", [{0: 1.0}])],
                                      [Event(0.0, B, machine=0, duration=3.0), Event(3.0, B, machine=0, duration=1.0),
                                       Event(3.0 + 6e-10, EventType.REPAIR, machine=0)],
                                      [(0, 0, 4.0, 5.0, "completed")]),
    # at most EPS after, not less: a REPAIR exactly 1e-9 after the BREAKDOWN still joins its instant
    "repair exactly EPS after a breakdown": ([Job("J0", [{0: 1.0}])],
                                             [Event(0.0, B, machine=0, duration=3.0),
                                              Event(3.0, B, machine=0, duration=1.0),
                                              Event(3.0 + 1e-9, EventType.REPAIR, machine=0)],
                                             [(0, 0, 4.0, 5.0, "completed")]),
    # the clock's first instant is the first event's (5e-10), which takes in a BREAKDOWN 1.2e-9 after 0: the job
    # waits out the breakdown (0 .. 2) instead of starting at 0
    "events just after 0": ([Job("J0", [{0: 1.0}])],
                            [Event(5e-10, PR, job=0, weight=2.0), Event(1.2e-9, B, machine=0, duration=2.0)],
                            [(0, 0, 2.0, 3.0, "completed")]),
    # a breakdown due to end 5e-10 after a REPAIR: the REPAIR comes first and ends it at the instant's time, 2
    "repair just before a breakdown's end": ([Job("J0", [{0: 1.0}])],
                                             [Event(0.0, B, machine=0, duration=2.0 + 5e-10),
                                              Event(2.0, EventType.REPAIR, machine=0)],
                                             [(0, 0, 2.0, 3.0, "completed")]),
    # a breakdown ending 5e-10 after a release joins the release's instant but ends at its own planned end
    "breakdown end just after a release": ([Job("J0", [{0: 1.0}], release=2.0)],
                                           [Event(0.0, B, machine=0, duration=2.0 + 5e-10)],
                                           [(0, 0, 2.0, 3.0, "completed")]),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_cases_match_the_reference_and_the_docs(case):
    jobs, events, segments = EDGE_CASES[case]
    inst = Instance.build(case, M1, jobs, events)
    assert_same_records(inst, 0)
    sim, _ = play_both(inst, 0)
    got = sorted((s["job"], s["op"], s["machine"], s["start"], s["end"], s["status"])
                 for s in sim.schedule().to_dict()["segments"])
    assert got == sorted((j, k, 0, s, e, status) for j, k, s, e, status in segments)


def test_a_release_an_earlier_instant_took_in_opens_none_also_of_a_cancelled_job():
    """J1, cancelled before its release, is released 3e-10 after J0's completion: the release joins that instant
    (docs/semantics.md, "Instants"), so the BREAKDOWN 1.2e-9 after the completion opens its own and happens at its
    time. The reference opened an instant at the release, took the BREAKDOWN into it and started it 9e-10 early."""
    jobs = [Job("J0", [{0: 5.0}]), Job("J1", [{0: 1.0}], release=5.0 + 3e-10), Job("J2", [{0: 1.0}], release=10.0)]
    events = [Event(1.0, C, job=1), Event(5.0 + 1.2e-9, B, machine=0, duration=2.0)]
    inst = Instance.build("taken-in release", M1, jobs, events)
    assert_same_records(inst, 0)
    assert [d["start"] for d in play_both(inst, 0)[0].schedule().to_dict()["downtime"]] == [5.0 + 1.2e-9]


def test_an_event_after_completion_is_ignored_and_metrics_skip_cancelled_work():
    # the weight in force at completion counts; the cancelled job's work after the makespan is not busy time
    jobs = [Job("J0", [{0: 5.0}], due=1.0, weight=2.0), Job("J1", [{1: 10.0}])]
    events = [Event(6.0, PR, job=0, weight=10.0), Event(8.0, C, job=1)]
    inst = Instance.build("after", [Machine("M0"), Machine("M1"), Machine("M2")], jobs, events)
    assert_same_records(inst, 0)
    metrics = play_both(inst, 0)[0].schedule().metrics
    assert metrics["total_weighted_tardiness"] == 8.0
    assert metrics["utilization"] == pytest.approx(10.0 / 15.0)
