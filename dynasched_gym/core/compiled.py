"""Compile an :class:`~dynasched_gym.instance.Instance` into the flat arrays the numba kernels read.

:class:`Static` is read-only and shared by every simulation of one instance; :class:`State` is the
mutable part, a struct of arrays whose copy is a snapshot. Both are namedtuples of numpy arrays
(and a few ints) so numba compiles them into plain structs and caches the kernels on disk.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from dynasched_gym.instance import EventType, Instance
from dynasched_gym.metrics import EPS

POLICY_RESUME = 0
POLICY_RESTART = 1

Static = namedtuple(
    "Static",
    [
        "machine_speed",  # (M,) float64
        "job_release",  # (J,) float64
        "job_due",  # (J,) float64, NaN = no due date
        "job_weight",  # (J,) float64
        "release_order",  # (J,) int64, jobs sorted by release (stable)
        "job_slot_ptr",  # (J + 1,) int64, each job's slot capacity range in the slot arrays
        "job_num_ops",  # (J,) int64, length of the static chain
        "slot_op",  # (slot capacity,) int64, initial operation id of each slot, -1 beyond the chain
        "op_elig_ptr",  # (O + 1,) int64, CSR over static + route-change operations
        "elig_machine",  # (E,) int64
        "op_time",  # (O, M) float64, processing time, +inf where not eligible
        "op_mean_time",  # (O,) float64, mean time over eligible machines
        "event_time",  # (N,) float64, each event's instant (_instants), sorted by (instant, type)
        "event_type",  # (N,) int64, EventType value
        "event_machine",  # (N,) int64, -1 when unused
        "event_job",  # (N,) int64, -1 when unused
        "event_op",  # (N,) int64, op index (PTIME_CHANGE, REWORK) or route-change start; -1 when unused
        "event_value",  # (N,) float64, duration | factor | value | weight | due
        "event_is_value",  # (N,) int64, PTIME_CHANGE: 1 = nominal value, 0 = factor
        "event_route_lo",  # (N,) int64, ROUTE_CHANGE: new operations are route_ops[lo:hi]
        "event_route_hi",  # (N,) int64
        "route_ops",  # (R,) int64, operation ids of route-change operations
        "policy",  # int, POLICY_RESUME | POLICY_RESTART
        "segment_capacity",  # int
        "downtime_capacity",  # int
    ],
)

State = namedtuple(
    "State",
    [
        "now",  # (1,) float64, simulation clock
        "counters",  # (NUM_COUNTERS,) int64, see the C_* indices
        "job_status",  # (J,) int64, JOB_* code
        "job_pos",  # (J,) int64, index of the current (first unfinished) slot
        "job_num_slots",  # (J,) int64, current length of the job's operation list
        "job_machine",  # (J,) int64, machine running the job, -1 if none
        "job_ready",  # (J,) float64, time the current slot became startable
        "job_due",  # (J,) float64, due date in force, NaN = none
        "job_weight",  # (J,) float64, weight in force
        "job_completion",  # (J,) float64, NaN until completed
        "job_cancelled_at",  # (J,) float64, NaN unless cancelled
        "slot_op",  # (slot capacity,) int64, operation id
        "slot_factor",  # (slot capacity,) float64, processing-time factor
        "slot_nominal",  # (slot capacity,) float64, nominal time (time = nominal / speed), NaN = unset
        "slot_work",  # (slot capacity,) float64, fraction of work left
        "slot_touched",  # (slot capacity,) int64, 1 once a segment started
        "machine_job",  # (M,) int64, running job, -1 = idle
        "machine_start",  # (M,) float64, start of the running segment
        "machine_end",  # (M,) float64, planned end of the running segment
        "machine_ptime",  # (M,) float64, full processing time of the running slot on this machine
        "machine_segment",  # (M,) int64, index of the running segment
        "machine_down",  # (M,) int64, DOWN_* code
        "machine_down_until",  # (M,) float64, planned end of the current downtime
        "machine_downtime",  # (M,) int64, index of the current downtime record
        "machine_maintenance",  # (M,) float64, queued maintenance duration
        "machine_free_since",  # (M,) float64, when the machine last became idle and up (LIT rule)
        "machine_workload",  # (M,) float64, processing time assigned to the machine so far (LWL rule)
        "segment_job",  # (segment capacity,) int64
        "segment_op",  # (segment capacity,) int64, slot index in the job's list
        "segment_machine",  # (segment capacity,) int64
        "segment_start",  # (segment capacity,) float64
        "segment_end",  # (segment capacity,) float64
        "segment_work",  # (segment capacity,) float64
        "segment_status",  # (segment capacity,) int64, SEG_* code
        "downtime_machine",  # (downtime capacity,) int64
        "downtime_start",  # (downtime capacity,) float64
        "downtime_end",  # (downtime capacity,) float64
        "downtime_kind",  # (downtime capacity,) int64, 0 breakdown, 1 maintenance
    ],
)

# counters
C_EVENT = 0  # next stream event
C_RELEASE = 1  # next job in release order
C_SEGMENTS = 2
C_DOWNTIMES = 3
C_OPEN_JOBS = 4  # jobs neither completed nor cancelled
C_DECISIONS = 5
# Every active job's index lies in [C_ACTIVE_FIRST, C_ACTIVE_END): the scans for startable jobs walk that window, not
# all jobs, so an episode's cost does not grow with the jobs finished (or not yet arrived) at either end. An arrival
# widens it to the job and the end of its first or last job narrows it to the next active one, so it runs from the
# first active job to the last in any arrival order; jobs numbered in release order leave few inactive ones inside.
C_ACTIVE_FIRST = 6
C_ACTIVE_END = 7
NUM_COUNTERS = 8

JOB_HIDDEN, JOB_ACTIVE, JOB_COMPLETED, JOB_CANCELLED = 0, 1, 2, 3
DOWN_NONE, DOWN_BREAKDOWN, DOWN_MAINTENANCE = 0, 1, 2
SEG_COMPLETED, SEG_PREEMPTED, SEG_ABORTED = 0, 1, 2  # order of schedule.SEGMENT_STATUSES


def _instants(times: list[float]) -> list[float]:
    """The instant of each event time (docs/semantics.md): taken in time order, a time at most ``EPS`` after the
    current instant's first time belongs to that instant; a later one opens the next instant."""
    instant = [0.0] * len(times)
    first = -np.inf
    for i in sorted(range(len(times)), key=times.__getitem__):
        if times[i] > first + EPS:
            first = times[i]
        instant[i] = first
    return instant


def compile_instance(instance: Instance) -> Static:
    """The :class:`Static` arrays of ``instance`` (memoised on the instance)."""
    cached = instance._cache.get("static")
    if cached is not None:
        return cached
    num_m, num_j = instance.num_machines, instance.num_jobs
    instant = _instants([e.time for e in instance.events])
    order = sorted(range(len(instance.events)), key=lambda i: (instant[i], int(instance.events[i].type)))
    events = [instance.events[i] for i in order]  # stable: file order within a type

    # Route-change operations extend the operation table after the static ones.
    elig_ptr = list(instance.op_elig_ptr)
    elig_machine = list(instance.elig_machine)
    elig_time = list(instance.elig_time)
    num_ops = instance.num_ops
    route_ops: list[int] = []
    route_lo = np.zeros(len(events), dtype=np.int64)
    route_hi = np.zeros(len(events), dtype=np.int64)
    extra_slots = np.zeros(num_j, dtype=np.int64)
    for i, e in enumerate(events):
        route_lo[i] = len(route_ops)
        if e.type == EventType.ROUTE_CHANGE:
            for op in e.ops:
                for m, t in op.items():
                    elig_machine.append(int(m))
                    elig_time.append(float(t))
                elig_ptr.append(len(elig_machine))
                route_ops.append(num_ops)
                num_ops += 1
            extra_slots[e.job] += len(e.ops)
        elif e.type == EventType.REWORK:
            extra_slots[e.job] += 1
        route_hi[i] = len(route_ops)

    op_elig_ptr = np.asarray(elig_ptr, dtype=np.int64)
    elig_m = np.asarray(elig_machine, dtype=np.int64)
    elig_t = np.asarray(elig_time, dtype=np.float64)
    op_time = np.full((num_ops, num_m), np.inf)
    op_rows = np.repeat(np.arange(num_ops), np.diff(op_elig_ptr))
    op_time[op_rows, elig_m] = elig_t
    op_mean_time = np.add.reduceat(elig_t, op_elig_ptr[:-1]) / np.diff(op_elig_ptr)

    job_num_ops = np.diff(instance.job_op_ptr)
    capacity = job_num_ops + extra_slots
    job_slot_ptr = np.concatenate([[0], np.cumsum(capacity)]).astype(np.int64)
    slot_op = np.full(int(job_slot_ptr[-1]), -1, dtype=np.int64)
    for j in range(num_j):
        lo = job_slot_ptr[j]
        slot_op[lo:lo + job_num_ops[j]] = np.arange(instance.job_op_ptr[j], instance.job_op_ptr[j + 1])

    def column(name: str, default: float) -> np.ndarray:
        return np.array([default if getattr(e, name) is None else getattr(e, name) for e in events], dtype=np.float64)

    value = np.full(len(events), np.nan)
    for name in ("duration", "factor", "value", "weight", "due"):
        col = column(name, np.nan)
        value = np.where(np.isnan(value), col, value)
    num_breakdowns = sum(e.type == EventType.BREAKDOWN for e in events)
    num_maintenance = sum(e.type == EventType.MAINTENANCE for e in events)
    static = Static(
        machine_speed=instance.machine_speed,
        job_release=instance.job_release,
        job_due=instance.job_due,
        job_weight=instance.job_weight,
        release_order=np.argsort(instance.job_release, kind="stable").astype(np.int64),
        job_slot_ptr=job_slot_ptr,
        job_num_ops=job_num_ops.astype(np.int64),
        slot_op=slot_op,
        op_elig_ptr=op_elig_ptr,
        elig_machine=elig_m,
        op_time=op_time,
        op_mean_time=op_mean_time,
        event_time=np.array([instant[i] for i in order], dtype=np.float64),
        event_type=np.array([int(e.type) for e in events], dtype=np.int64),
        event_machine=column("machine", -1).astype(np.int64),
        event_job=column("job", -1).astype(np.int64),
        event_op=column("op", -1).astype(np.int64),
        event_value=value,
        event_is_value=np.array([e.value is not None for e in events], dtype=np.int64),
        event_route_lo=route_lo,
        event_route_hi=route_hi,
        route_ops=np.asarray(route_ops, dtype=np.int64),
        policy=POLICY_RESTART if instance.breakdown_policy == "restart" else POLICY_RESUME,
        segment_capacity=int(job_slot_ptr[-1]) + num_breakdowns + 1,
        downtime_capacity=num_breakdowns + num_maintenance + 1,
    )
    instance._cache["static"] = read_only(static)
    return static


def read_only(static: Static) -> Static:
    """``static`` with its arrays made read-only, as every ``Static`` the kernels get must be: numba compiles a
    kernel once per argument type, and a ``Static`` with a writable array would compile them all again."""
    for arr in static:
        if isinstance(arr, np.ndarray):
            arr.setflags(write=False)
    return static


class ScratchStates:
    """Scratch states for in-kernel rollouts, one per index, each rebuilt when its instance (``Static``) changes."""

    def __init__(self, count: int = 1) -> None:
        self._held: list[tuple[Static, State] | None] = [None] * count

    def get(self, static: Static, i: int = 0) -> State:
        """Scratch state ``i``, sized for ``static``."""
        held = self._held[i]
        if held is None or held[0] is not static:
            held = self._held[i] = (static, allocate_state(static))
        return held[1]


def allocate_state(static: Static) -> State:
    """Fresh (uninitialised) state arrays sized for ``static``; call ``reset_state`` before use."""
    num_j = static.job_release.shape[0]
    num_m = static.machine_speed.shape[0]
    num_slots = static.slot_op.shape[0]
    seg, down = static.segment_capacity, static.downtime_capacity
    f, i = np.float64, np.int64
    return State(
        now=np.zeros(1, f), counters=np.zeros(NUM_COUNTERS, i),
        job_status=np.zeros(num_j, i), job_pos=np.zeros(num_j, i), job_num_slots=np.zeros(num_j, i),
        job_machine=np.zeros(num_j, i), job_ready=np.zeros(num_j, f), job_due=np.zeros(num_j, f),
        job_weight=np.zeros(num_j, f), job_completion=np.zeros(num_j, f), job_cancelled_at=np.zeros(num_j, f),
        slot_op=np.zeros(num_slots, i), slot_factor=np.zeros(num_slots, f), slot_nominal=np.zeros(num_slots, f),
        slot_work=np.zeros(num_slots, f), slot_touched=np.zeros(num_slots, i),
        machine_job=np.zeros(num_m, i), machine_start=np.zeros(num_m, f), machine_end=np.zeros(num_m, f),
        machine_ptime=np.zeros(num_m, f), machine_segment=np.zeros(num_m, i), machine_down=np.zeros(num_m, i),
        machine_down_until=np.zeros(num_m, f), machine_downtime=np.zeros(num_m, i),
        machine_maintenance=np.zeros(num_m, f), machine_free_since=np.zeros(num_m, f),
        machine_workload=np.zeros(num_m, f),
        segment_job=np.zeros(seg, i), segment_op=np.zeros(seg, i), segment_machine=np.zeros(seg, i),
        segment_start=np.zeros(seg, f), segment_end=np.zeros(seg, f), segment_work=np.zeros(seg, f),
        segment_status=np.zeros(seg, i),
        downtime_machine=np.zeros(down, i), downtime_start=np.zeros(down, f), downtime_end=np.zeros(down, f),
        downtime_kind=np.zeros(down, i),
    )


def copy_state(state: State) -> State:
    """A deep copy of ``state`` (a snapshot; shares no memory with it)."""
    return State(*(a.copy() for a in state))
