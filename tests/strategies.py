"""Hypothesis strategies for random valid instances (shared by the loader and simulator tests)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from dynasched_gym.instance import STREAM_EVENT_TYPES, Event, EventType, Instance, Job, Machine

SPEEDS = (0.5, 0.8, 1.0, 1.25, 2.0)
FACTORS = (0.5, 0.8, 1.25, 1.5, 2.0)
WEIGHTS = (0.5, 1.0, 2.0, 10.0)
#: Offsets added to times with ``jitter``: events closer than EPS = 1e-9 form one instant, and chains of
#: such offsets straddle it (docs/semantics.md, "Instants").
JITTERS = (0.0, 0.0, 1e-13, 3e-10, 6e-10)


def _times(max_value: int) -> st.SearchStrategy[float]:
    """Integer-valued floats in 0..max_value, so that events and releases often coincide."""
    return st.integers(0, max_value).map(float)


def _pt() -> st.SearchStrategy[float]:
    return st.integers(1, 9).map(float)


@st.composite
def _operation(draw: st.DrawFn, machines: Sequence[Machine], grouped: bool) -> dict[int, float]:
    """Free FJSP op: any non-empty machine subset, integer times. Grouped: one whole group, time p / speed."""
    if grouped:
        group = draw(st.sampled_from(sorted({m.group for m in machines})))
        p = draw(_pt())
        return {i: p / m.speed for i, m in enumerate(machines) if m.group == group}
    chosen = draw(st.lists(st.integers(0, len(machines) - 1), min_size=1, max_size=len(machines), unique=True))
    return {m: draw(_pt()) for m in chosen}


@st.composite
def instances(
    draw: st.DrawFn,
    max_jobs: int = 5,
    max_machines: int = 4,
    with_events: bool = True,
    *,
    max_ops: int = 4,
    max_events: int = 12,
    max_time: int = 30,
    grouped: bool = False,
    event_types: Sequence[EventType] = STREAM_EVENT_TYPES,
    jitter: bool = False,
) -> Instance:
    """A random valid :class:`Instance`.

    Machines ``M0..`` with groups ``G0..`` and speeds from :data:`SPEEDS`; jobs ``J0..`` with 1..max_ops
    operations, integer processing times 1..9 (``grouped``: every operation is one whole group with
    time p / speed, as the dsbx format needs); integer-valued release, due (or None) and event times
    in 0..max_time so that times coincide; weights from :data:`WEIGHTS`. With ``with_events``, 0..max_events
    time-sorted events drawn from ``event_types`` (all stream kinds by default), referencing valid machine
    and job ids and op indices within the job's static operation count; PTIME_CHANGE carries a factor or
    a value. The breakdown policy is ``resume`` or ``restart``. With ``jitter``, event and release times
    get offsets from :data:`JITTERS`, so that happenings fall within or just beyond EPS of each other.
    """
    def _time(max_value: int) -> float:
        return draw(_times(max_value)) + (draw(st.sampled_from(JITTERS)) if jitter else 0.0)

    num_m = draw(st.integers(1, max_machines))
    num_groups = draw(st.integers(1, num_m))
    machines = [
        Machine(name=f"M{m}", group=f"G{m % num_groups if grouped else draw(st.integers(0, num_groups - 1))}",
                speed=draw(st.sampled_from(SPEEDS)))
        for m in range(num_m)
    ]
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        ops = draw(st.lists(_operation(machines, grouped), min_size=1, max_size=max_ops))
        jobs.append(Job(name=f"J{j}", ops=ops, release=_time(max_time),
                        due=draw(st.none() | _times(2 * max_time)), weight=draw(st.sampled_from(WEIGHTS))))
    events = []
    if with_events:
        for _ in range(draw(st.integers(0, max_events))):
            kind = draw(st.sampled_from(list(event_types)))
            time = _time(max_time)
            if kind in (EventType.BREAKDOWN, EventType.MAINTENANCE, EventType.REPAIR):
                machine = draw(st.integers(0, num_m - 1))
                duration = None if kind == EventType.REPAIR else draw(_pt())
                events.append(Event(time=time, type=kind, machine=machine, duration=duration))
                continue
            j = draw(st.integers(0, len(jobs) - 1))
            num_ops = len(jobs[j].ops)
            if kind == EventType.PTIME_CHANGE:
                op = draw(st.integers(0, num_ops - 1))
                if draw(st.booleans()):
                    events.append(Event(time=time, type=kind, job=j, op=op, factor=draw(st.sampled_from(FACTORS))))
                else:
                    events.append(Event(time=time, type=kind, job=j, op=op, value=draw(_pt())))
            elif kind == EventType.ROUTE_CHANGE:
                ops = tuple(draw(st.lists(_operation(machines, grouped), min_size=1, max_size=3)))
                events.append(Event(time=time, type=kind, job=j, ops=ops,
                                    op=draw(st.none() | st.integers(0, num_ops - 1))))
            elif kind == EventType.PRIORITY_CHANGE:
                events.append(Event(time=time, type=kind, job=j, weight=draw(st.sampled_from(WEIGHTS))))
            elif kind == EventType.DUE_DATE_CHANGE:
                events.append(Event(time=time, type=kind, job=j, due=draw(_times(2 * max_time))))
            elif kind == EventType.REWORK:
                events.append(Event(time=time, type=kind, job=j, op=draw(st.integers(0, num_ops - 1))))
            else:  # CANCELLATION
                events.append(Event(time=time, type=kind, job=j))
        events.sort(key=lambda e: e.time)
    policy = draw(st.sampled_from(["resume", "restart"]))
    return Instance.build(draw(st.sampled_from(["rand", "inst-1"])), machines, jobs, events, policy)
