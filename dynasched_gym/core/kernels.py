"""Numba kernels of the event-driven DFJSP simulator (semantics: docs/semantics.md).

Every kernel takes the read-only :class:`~dynasched_gym.core.compiled.Static` arrays ``S`` and the
mutable :class:`~dynasched_gym.core.compiled.State` ``T``. The public entry points are
:func:`reset`, :func:`step`, :func:`has_candidate` / :func:`nth_candidate` / :func:`fill_candidates`
and :func:`copy_into`; the environments' batch kernels (``dynasched_gym.envs.dfjsp.kernels``) build on
them. Nothing here touches Python objects.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dynasched_gym.core.compiled import (
    C_ACTIVE_END,
    C_ACTIVE_FIRST,
    C_DECISIONS,
    C_DOWNTIMES,
    C_EVENT,
    C_OPEN_JOBS,
    C_RELEASE,
    C_SEGMENTS,
    DOWN_BREAKDOWN,
    DOWN_MAINTENANCE,
    DOWN_NONE,
    EPS,
    JOB_ACTIVE,
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_HIDDEN,
    POLICY_RESTART,
    SEG_ABORTED,
    SEG_COMPLETED,
    SEG_PREEMPTED,
)

# Return codes of reset / step / advance.
DECISION = 1  # a decision is due at T.now
DONE = 0  # every job completed or cancelled
ERR_INVALID_ACTION = -1  # the (job, machine) pair cannot start now
ERR_STALLED = -2  # jobs remain but nothing can ever happen (cannot occur for valid instances)

# EventType values (kept literal so the kernels import nothing from the instance model).
EV_REPAIR = 0
EV_PTIME_CHANGE = 3
EV_ROUTE_CHANGE = 4
EV_PRIORITY_CHANGE = 5
EV_DUE_DATE_CHANGE = 6
EV_CANCELLATION = 7
EV_REWORK = 8
EV_MAINTENANCE = 9
EV_BREAKDOWN = 10


# ---------------------------------------------------------------------------------------- helpers
# Numba notes. The kernels are compiled without the numba runtime (``_nrt=False``): they never
# allocate, and with NRT every call would incref/decref each array it reads from the State and
# Static tuples (measured ~100x slower per decision on ta01). Fields used in loops are bound to
# locals first so the loads hoist.


@njit(cache=True, _nrt=False)
def slot_time(op_time, speed, slot_op, slot_factor, slot_nominal, slot, m):
    """Full processing time of ``slot`` on machine ``m`` (+inf when not eligible)."""
    base = op_time[slot_op[slot], m]
    nominal = slot_nominal[slot]
    if nominal == nominal and base < np.inf:  # a nominal value replaces the base times
        base = nominal / speed[m]
    return base * slot_factor[slot]


@njit(cache=True, _nrt=False)
def machine_available(machine_job, machine_down, machine_maintenance, m):
    """True when machine ``m`` is idle, up and has no queued maintenance."""
    return machine_job[m] < 0 and machine_down[m] == DOWN_NONE and machine_maintenance[m] == 0.0


@njit(cache=True, _nrt=False)
def first_untouched(S, T, j):
    """Index (in the job's list) of the first slot no segment has started."""
    pos = T.job_pos[j]
    touched = T.slot_touched
    if pos < T.job_num_slots[j] and touched[S.job_slot_ptr[j] + pos]:
        return pos + 1
    return pos


@njit(cache=True, _nrt=False)
def _open_downtime(T, m, start, end, kind):
    counters = T.counters
    d = counters[C_DOWNTIMES]
    counters[C_DOWNTIMES] = d + 1
    T.downtime_machine[d] = m
    T.downtime_start[d] = start
    T.downtime_end[d] = end
    T.downtime_kind[d] = kind
    T.machine_down[m] = DOWN_BREAKDOWN if kind == 0 else DOWN_MAINTENANCE
    T.machine_down_until[m] = end
    T.machine_downtime[m] = d


@njit(cache=True, _nrt=False)
def _start_queued_maintenance(T, m, t):
    queued = T.machine_maintenance
    if queued[m] > 0.0:
        duration = queued[m]
        queued[m] = 0.0
        _open_downtime(T, m, t, t + duration, 1)


@njit(cache=True, _nrt=False)
def _end_downtime(T, m, t):
    T.downtime_end[T.machine_downtime[m]] = t
    T.machine_down[m] = DOWN_NONE
    T.machine_free_since[m] = max(T.machine_free_since[m], t)
    _start_queued_maintenance(T, m, t)


@njit(cache=True, _nrt=False)
def _stop_running(T, m, t, status):
    """Cut the segment running on ``m`` at ``t`` (preempted or aborted); returns the work it did."""
    machine_job = T.machine_job
    j = machine_job[m]
    seg = T.machine_segment[m]
    performed = (t - T.machine_start[m]) / T.machine_ptime[m]
    T.machine_workload[m] -= T.machine_end[m] - t
    T.machine_free_since[m] = t
    T.segment_end[seg] = t
    T.segment_work[seg] = performed
    T.segment_status[seg] = status
    machine_job[m] = -1
    T.job_machine[j] = -1
    return performed


@njit(cache=True, _nrt=False)
def _widen_active(counters, j):
    """Job ``j`` has arrived: widen the window ``[C_ACTIVE_FIRST, C_ACTIVE_END)`` to it (an empty one starts at it)."""
    if counters[C_ACTIVE_FIRST] >= counters[C_ACTIVE_END]:
        counters[C_ACTIVE_FIRST], counters[C_ACTIVE_END] = j, j + 1
    else:
        counters[C_ACTIVE_FIRST] = min(counters[C_ACTIVE_FIRST], j)
        counters[C_ACTIVE_END] = max(counters[C_ACTIVE_END], j + 1)


@njit(cache=True, _nrt=False)
def _narrow_active(T, j):
    """Job ``j`` is no longer active: narrow the window ``[C_ACTIVE_FIRST, C_ACTIVE_END)`` past inactive jobs."""
    counters = T.counters
    status = T.job_status
    first, end = counters[C_ACTIVE_FIRST], counters[C_ACTIVE_END]
    if j == first:
        while first < end and status[first] != JOB_ACTIVE:
            first += 1
    if j == end - 1:
        while end > first and status[end - 1] != JOB_ACTIVE:
            end -= 1
    counters[C_ACTIVE_FIRST] = first
    counters[C_ACTIVE_END] = end


@njit(cache=True, _nrt=False)
def _complete(S, T, m):
    machine_job = T.machine_job
    job_pos = T.job_pos
    j = machine_job[m]
    end = T.machine_end[m]
    T.slot_work[S.job_slot_ptr[j] + job_pos[j]] = 0.0
    machine_job[m] = -1
    T.machine_free_since[m] = end
    T.job_machine[j] = -1
    job_pos[j] += 1
    T.job_ready[j] = end
    if job_pos[j] == T.job_num_slots[j]:
        T.job_status[j] = JOB_COMPLETED
        T.job_completion[j] = end
        T.counters[C_OPEN_JOBS] -= 1
        _narrow_active(T, j)
    _start_queued_maintenance(T, m, end)


# ----------------------------------------------------------------------------------- the events
@njit(cache=True, _nrt=False)
def _apply_machine_event(S, T, e, t):
    kind = S.event_type[e]
    m = S.event_machine[e]
    machine_down = T.machine_down
    down_until = T.machine_down_until
    downtime_end = T.downtime_end
    record = T.machine_downtime[m]
    if kind == EV_REPAIR:
        if machine_down[m] == DOWN_BREAKDOWN:
            _end_downtime(T, m, t)
    elif kind == EV_MAINTENANCE:
        duration = S.event_value[e]
        if machine_down[m] == DOWN_MAINTENANCE:  # back to back with the running maintenance
            down_until[m] += duration
            downtime_end[record] = down_until[m]
        elif machine_down[m] == DOWN_BREAKDOWN or T.machine_job[m] >= 0:
            T.machine_maintenance[m] += duration
        else:
            _open_downtime(T, m, t, t + duration, 1)
    else:  # BREAKDOWN
        end = t + S.event_value[e]
        j = T.machine_job[m]
        if j >= 0:
            slot = S.job_slot_ptr[j] + T.job_pos[j]
            performed = _stop_running(T, m, t, SEG_PREEMPTED)
            if S.policy == POLICY_RESTART:
                T.slot_work[slot] = 1.0
            else:
                T.slot_work[slot] -= performed
            T.job_ready[j] = t
        if machine_down[m] == DOWN_BREAKDOWN:
            if end > down_until[m]:
                down_until[m] = end
                downtime_end[record] = end
        elif machine_down[m] == DOWN_MAINTENANCE:
            end = max(end, down_until[m])
            # a maintenance that started at a completion's planned end, up to EPS after t, ends empty
            downtime_end[record] = max(t, T.downtime_start[record])
            _open_downtime(T, m, t, end, 0)
        else:
            _open_downtime(T, m, t, end, 0)


@njit(cache=True, _nrt=False)
def _apply_job_event(S, T, e, t):
    kind = S.event_type[e]
    j = S.event_job[e]
    job_status = T.job_status
    if job_status[j] == JOB_COMPLETED or job_status[j] == JOB_CANCELLED:
        return
    base = S.job_slot_ptr[j]
    slot_op = T.slot_op
    slot_factor = T.slot_factor
    slot_nominal = T.slot_nominal
    slot_work = T.slot_work
    slot_touched = T.slot_touched
    num_slots = T.job_num_slots
    if kind == EV_PTIME_CHANGE:
        k = S.event_op[e]
        if k < num_slots[j] and slot_touched[base + k] == 0:
            if S.event_is_value[e]:
                slot_nominal[base + k] = S.event_value[e]
                slot_factor[base + k] = 1.0
            else:
                slot_factor[base + k] *= S.event_value[e]
    elif kind == EV_ROUTE_CHANGE:
        first = min(max(S.event_op[e], first_untouched(S, T, j)), num_slots[j])
        lo, hi = S.event_route_lo[e], S.event_route_hi[e]
        route_ops = S.route_ops
        for r in range(hi - lo):
            slot = base + first + r
            slot_op[slot] = route_ops[lo + r]
            slot_factor[slot] = 1.0
            slot_nominal[slot] = np.nan
            slot_work[slot] = 1.0
            slot_touched[slot] = 0
        num_slots[j] = first + hi - lo
    elif kind == EV_PRIORITY_CHANGE:
        T.job_weight[j] = S.event_value[e]
    elif kind == EV_DUE_DATE_CHANGE:
        T.job_due[j] = S.event_value[e]
    elif kind == EV_CANCELLATION:
        m = T.job_machine[j]
        if m >= 0:
            _stop_running(T, m, t, SEG_ABORTED)
            _start_queued_maintenance(T, m, t)
        T.counters[C_OPEN_JOBS] -= 1
        job_status[j] = JOB_CANCELLED
        T.job_cancelled_at[j] = t
        _narrow_active(T, j)
    elif kind == EV_REWORK:
        k = S.event_op[e]
        if k < T.job_pos[j]:
            at = first_untouched(S, T, j)
            n = num_slots[j]
            for i in range(base + n, base + at, -1):  # shift the tail right by one slot
                slot_op[i] = slot_op[i - 1]
                slot_factor[i] = slot_factor[i - 1]
                slot_nominal[i] = slot_nominal[i - 1]
                slot_work[i] = slot_work[i - 1]
                slot_touched[i] = slot_touched[i - 1]
            slot_op[base + at] = slot_op[base + k]
            slot_factor[base + at] = slot_factor[base + k]
            slot_nominal[base + at] = slot_nominal[base + k]
            slot_work[base + at] = 1.0
            slot_touched[base + at] = 0
            num_slots[j] = n + 1


@njit(cache=True, _nrt=False)
def _apply_event(S, T, e, t):
    kind = S.event_type[e]
    if kind == EV_MAINTENANCE or kind == EV_BREAKDOWN or kind == EV_REPAIR:
        _apply_machine_event(S, T, e, t)
    else:
        _apply_job_event(S, T, e, t)


@njit(cache=True, _nrt=False, inline="always")  # inlined: each call would pass ~450 record values
def _process_time(S, T, t):
    """Apply everything that happens at time ``t``, in the documented order."""
    counters = T.counters
    event_time = S.event_time
    event_type = S.event_type
    num_events = event_time.shape[0]
    machine_down = T.machine_down
    down_until = T.machine_down_until
    machine_job = T.machine_job
    machine_end = T.machine_end
    # 1. repairs: explicit REPAIR events, then downtimes that end by t
    e = counters[C_EVENT]
    while e < num_events and event_time[e] <= t + EPS and event_type[e] == EV_REPAIR:
        _apply_event(S, T, e, t)
        e += 1
    counters[C_EVENT] = e
    for m in range(machine_down.shape[0]):
        if machine_down[m] != DOWN_NONE and down_until[m] <= t + EPS:
            _end_downtime(T, m, down_until[m])
    # 2. completions
    for m in range(machine_job.shape[0]):
        if machine_job[m] >= 0 and machine_end[m] <= t + EPS:
            _complete(S, T, m)
    # 3. arrivals
    release_order = S.release_order
    job_release = S.job_release
    job_status = T.job_status
    r = counters[C_RELEASE]
    while r < release_order.shape[0] and job_release[release_order[r]] <= t + EPS:
        j = release_order[r]
        if job_status[j] == JOB_HIDDEN:
            job_status[j] = JOB_ACTIVE
            _widen_active(counters, j)
        r += 1
    counters[C_RELEASE] = r
    # 4. the other stream events at t
    e = counters[C_EVENT]
    while e < num_events and event_time[e] <= t + EPS:
        _apply_event(S, T, e, t)
        e += 1
    counters[C_EVENT] = e


@njit(cache=True, _nrt=False)
def _next_time(S, T):
    counters = T.counters
    event_time = S.event_time
    release_order = S.release_order
    machine_job = T.machine_job
    machine_end = T.machine_end
    machine_down = T.machine_down
    down_until = T.machine_down_until
    t = np.inf
    e = counters[C_EVENT]
    if e < event_time.shape[0]:
        t = event_time[e]
    r = counters[C_RELEASE]
    if r < release_order.shape[0]:
        t = min(t, S.job_release[release_order[r]])
    for m in range(machine_job.shape[0]):
        if machine_job[m] >= 0:
            t = min(t, machine_end[m])
        if machine_down[m] != DOWN_NONE:
            t = min(t, down_until[m])
    return t


@njit(cache=True, _nrt=False)
def nth_candidate(S, T, k):
    """The ``k``-th startable (job, machine) pair in job order, and how many pairs were scanned.

    Returns ``(job, machine, k)`` when it exists, else ``(-1, -1, count)`` with the total count.
    """
    job_status = T.job_status
    job_machine = T.job_machine
    job_pos = T.job_pos
    slot_ptr = S.job_slot_ptr
    slot_op = T.slot_op
    elig_ptr = S.op_elig_ptr
    elig_machine = S.elig_machine
    machine_job = T.machine_job
    machine_down = T.machine_down
    maintenance = T.machine_maintenance
    n = 0
    for j in range(T.counters[C_ACTIVE_FIRST], T.counters[C_ACTIVE_END]):
        if job_status[j] == JOB_ACTIVE and job_machine[j] < 0:
            op = slot_op[slot_ptr[j] + job_pos[j]]
            for i in range(elig_ptr[op], elig_ptr[op + 1]):
                m = elig_machine[i]
                if machine_available(machine_job, machine_down, maintenance, m):
                    if n == k:
                        return j, m, n
                    n += 1
    return -1, -1, n


@njit(cache=True, _nrt=False)
def has_candidate(S, T):
    """True when some (job, machine) pair can start now."""
    return nth_candidate(S, T, 0)[0] >= 0


@njit(cache=True, _nrt=False, inline="always")  # inlined: each call would pass ~450 record values
def advance(S, T):
    """Move time forward until a decision is due or the episode ends; returns DECISION or DONE."""
    while True:
        if T.counters[C_OPEN_JOBS] == 0:
            return DONE
        if has_candidate(S, T):
            return DECISION
        t = _next_time(S, T)
        if t == np.inf:
            return ERR_STALLED
        T.now[0] = t
        _process_time(S, T, t)


@njit(cache=True, _nrt=False)
def _fill(dst, value):
    for i in range(dst.shape[0]):
        dst[i] = value


@njit(cache=True, _nrt=False)
def _copy(dst, src):
    """``dst[:len(src)] = src`` (``dst`` at least as long)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, _nrt=False)
def reset(S, T):
    """Initialise ``T`` for a new episode and advance to the first decision."""
    num_jobs = S.job_release.shape[0]
    T.now[0] = 0.0
    _fill(T.counters, 0)
    T.counters[C_OPEN_JOBS] = num_jobs
    T.counters[C_ACTIVE_FIRST] = T.job_status.shape[0]  # an empty window: no job has arrived
    _fill(T.job_status, JOB_HIDDEN)
    _fill(T.job_pos, 0)
    _copy(T.job_num_slots, S.job_num_ops)
    _fill(T.job_machine, -1)
    _copy(T.job_ready, S.job_release)
    _copy(T.job_due, S.job_due)
    _copy(T.job_weight, S.job_weight)
    _fill(T.job_completion, np.nan)
    _fill(T.job_cancelled_at, np.nan)
    _copy(T.slot_op, S.slot_op)
    _fill(T.slot_factor, 1.0)
    _fill(T.slot_nominal, np.nan)
    _fill(T.slot_work, 1.0)
    _fill(T.slot_touched, 0)
    _fill(T.machine_job, -1)
    _fill(T.machine_down, DOWN_NONE)
    _fill(T.machine_maintenance, 0.0)
    _fill(T.machine_free_since, 0.0)
    _fill(T.machine_workload, 0.0)
    _process_time(S, T, 0.0)
    return advance(S, T)


@njit(cache=True, _nrt=False)
def start(S, T, j, m):
    """Start job ``j``'s current slot on machine ``m`` now, without advancing time."""
    job_status = T.job_status
    job_machine = T.job_machine
    machine_job = T.machine_job
    if j < 0 or j >= job_status.shape[0] or m < 0 or m >= machine_job.shape[0]:
        return ERR_INVALID_ACTION
    if job_status[j] != JOB_ACTIVE or job_machine[j] >= 0:
        return ERR_INVALID_ACTION
    if not machine_available(machine_job, T.machine_down, T.machine_maintenance, m):
        return ERR_INVALID_ACTION
    slot = S.job_slot_ptr[j] + T.job_pos[j]
    ptime = slot_time(S.op_time, S.machine_speed, T.slot_op, T.slot_factor, T.slot_nominal, slot, m)
    if ptime == np.inf:
        return ERR_INVALID_ACTION
    counters = T.counters
    now = T.now[0]
    work = T.slot_work[slot]
    end = now + work * ptime
    seg = counters[C_SEGMENTS]
    counters[C_SEGMENTS] = seg + 1
    counters[C_DECISIONS] += 1
    T.segment_job[seg] = j
    T.segment_op[seg] = T.job_pos[j]
    T.segment_machine[seg] = m
    T.segment_start[seg] = now
    T.segment_end[seg] = end
    T.segment_work[seg] = work
    T.segment_status[seg] = SEG_COMPLETED
    T.slot_touched[slot] = 1
    machine_job[m] = j
    T.machine_start[m] = now
    T.machine_end[m] = end
    T.machine_ptime[m] = ptime
    T.machine_workload[m] += end - now
    T.machine_segment[m] = seg
    job_machine[j] = m
    return DECISION


@njit(cache=True, _nrt=False)
def step(S, T, j, m):
    """Start job ``j``'s current operation on machine ``m`` and advance to the next decision."""
    code = start(S, T, j, m)
    if code < 0:
        return code
    return advance(S, T)


@njit(cache=True, _nrt=False)
def fill_candidates(S, T, out_job, out_machine, out_time):
    """Write the startable (job, machine, remaining processing time) triples, in job order.

    Returns how many there are; only the first ``len(out_job)`` are written.
    """
    job_status = T.job_status
    job_machine = T.job_machine
    job_pos = T.job_pos
    slot_ptr = S.job_slot_ptr
    slot_op = T.slot_op
    slot_work = T.slot_work
    elig_ptr = S.op_elig_ptr
    elig_machine = S.elig_machine
    machine_job = T.machine_job
    machine_down = T.machine_down
    maintenance = T.machine_maintenance
    n = 0
    cap = out_job.shape[0]
    for j in range(T.counters[C_ACTIVE_FIRST], T.counters[C_ACTIVE_END]):
        if job_status[j] == JOB_ACTIVE and job_machine[j] < 0:
            slot = slot_ptr[j] + job_pos[j]
            op = slot_op[slot]
            for i in range(elig_ptr[op], elig_ptr[op + 1]):
                m = elig_machine[i]
                if machine_available(machine_job, machine_down, maintenance, m):
                    if n < cap:
                        out_job[n] = j
                        out_machine[n] = m
                        out_time[n] = slot_work[slot] * slot_time(S.op_time, S.machine_speed, slot_op,
                                                                  T.slot_factor, T.slot_nominal, slot, m)
                    n += 1
    return n


@njit(cache=True, _nrt=False)
def copy_into(src, dst):
    """Copy every array of state ``src`` into ``dst`` (restore a snapshot in place).

    ``dst`` may belong to an instance with more jobs, slots or log capacity appended
    (``core.lookahead.with_sampled_future``): ``src`` then fills the head of each of its arrays.
    """
    _copy(dst.now, src.now)
    _copy(dst.counters, src.counters)
    _copy(dst.job_status, src.job_status)
    _copy(dst.job_pos, src.job_pos)
    _copy(dst.job_num_slots, src.job_num_slots)
    _copy(dst.job_machine, src.job_machine)
    _copy(dst.job_ready, src.job_ready)
    _copy(dst.job_due, src.job_due)
    _copy(dst.job_weight, src.job_weight)
    _copy(dst.job_completion, src.job_completion)
    _copy(dst.job_cancelled_at, src.job_cancelled_at)
    _copy(dst.slot_op, src.slot_op)
    _copy(dst.slot_factor, src.slot_factor)
    _copy(dst.slot_nominal, src.slot_nominal)
    _copy(dst.slot_work, src.slot_work)
    _copy(dst.slot_touched, src.slot_touched)
    _copy(dst.machine_job, src.machine_job)
    _copy(dst.machine_start, src.machine_start)
    _copy(dst.machine_end, src.machine_end)
    _copy(dst.machine_ptime, src.machine_ptime)
    _copy(dst.machine_segment, src.machine_segment)
    _copy(dst.machine_down, src.machine_down)
    _copy(dst.machine_down_until, src.machine_down_until)
    _copy(dst.machine_downtime, src.machine_downtime)
    _copy(dst.machine_maintenance, src.machine_maintenance)
    _copy(dst.machine_free_since, src.machine_free_since)
    _copy(dst.machine_workload, src.machine_workload)
    _copy(dst.segment_job, src.segment_job)
    _copy(dst.segment_op, src.segment_op)
    _copy(dst.segment_machine, src.segment_machine)
    _copy(dst.segment_start, src.segment_start)
    _copy(dst.segment_end, src.segment_end)
    _copy(dst.segment_work, src.segment_work)
    _copy(dst.segment_status, src.segment_status)
    _copy(dst.downtime_machine, src.downtime_machine)
    _copy(dst.downtime_start, src.downtime_start)
    _copy(dst.downtime_end, src.downtime_end)
    _copy(dst.downtime_kind, src.downtime_kind)
