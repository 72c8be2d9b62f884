"""Numba kernels of the DFJSP environments: one call resets or steps an env end to end.

A step decodes the action into a (job, machine) pair, starts it, advances the simulator to the
next decision (:mod:`dynasched_gym.core.kernels`), computes the reward from the objective's
potential and writes the observation into the workspace (:class:`.types.Workspace`), all inside
numba. Environments live in batches (:mod:`.types`, "Batches"): the entry kernels take a typed
list holding one batch (one object to unbox from Python, see :mod:`dynasched_gym.core.batch`),
and for each env to step, :func:`static_at` / :func:`state_at` / :func:`work_at` cut its rows
of the batch buffers into the simulator's records, as views without reference counting. The
same kernels thus serve a single env (a batch of one) and a vector env.

Rewards telescope. With the potential ``phi`` of the objective (:func:`potential`), ``phi = 0``
before the first step and each step's reward ``-reward_scale * (phi_now - phi_before)``, so an
episode's rewards sum to ``-reward_scale * phi_end``, and ``phi_end`` is the objective's metric
of the finished schedule (:data:`dynasched_gym.metrics.OBJECTIVE_METRICS`).

The inner kernels are compiled without the numba runtime, like the simulator's: they never
allocate, and 2-D arrays are indexed element by element.

Inlining. numba passes a record as all its arrays' fields, so a call with ``S``, ``T``, ``W`` moves
some 550 scalars and makes every field of freshly cut records real. The per-step kernels (record
cutting, :func:`env_step`, :func:`_settle`, :func:`observe`, :func:`potential`) are therefore inlined
by numba into the row loops (``inline="always"``): only the simulator's own calls remain
(docs/performance.md, "What changed for performance").
Each of them has one call site per entry kernel, which keeps the compile time in check.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange
from numba.typed import List

from dynasched_gym.core.compiled import (
    C_ACTIVE_END,
    C_ACTIVE_FIRST,
    C_DOWNTIMES,
    C_EVENT,
    C_RELEASE,
    C_SEGMENTS,
    DOWN_BREAKDOWN,
    DOWN_MAINTENANCE,
    DOWN_NONE,
    EPS,
    JOB_ACTIVE,
    JOB_COMPLETED,
    JOB_HIDDEN,
    State,
    Static,
)
from dynasched_gym.core.kernels import (
    DECISION,
    DONE,
    ERR_INVALID_ACTION,
    EV_BREAKDOWN,
    EV_CANCELLATION,
    EV_MAINTENANCE,
    advance,
    fill_candidates,
    machine_available,
    nth_candidate,
    reset,
    slot_time,
    start,
)
from dynasched_gym.core.rules import COMPOSITE_TABLE, JOB_RULES, RULE_RANDOM, job_priority, select
from dynasched_gym.envs.dfjsp.features import (
    BIG,
    C_DUE_LATENESS,
    C_HAS_DUE,
    C_JOB_AGE,
    C_JOB_CANCELLATION_SOON,
    C_JOB_PROGRESS,
    C_JOB_REMAINING_OPS,
    C_JOB_REMAINING_WORK,
    C_JOB_WEIGHT,
    C_MACHINE_BOTTLENECK,
    C_MACHINE_BREAKDOWN_SOON,
    C_MACHINE_MAINTENANCE_SOON,
    C_MACHINE_QUEUE,
    C_MACHINE_SPEED,
    C_MACHINE_UTILIZATION,
    C_PROC_TIME,
    C_PROC_TIME_RATIO,
    C_VALID,
    C_WAITING_TIME,
    FULL,
    G_ARRIVAL_SOON,
    G_BOTTLENECK_MAX,
    G_CANDIDATES,
    G_CANDIDATES_TRUNCATED,
    G_EVENT_SOON,
    G_JOBS_COMPLETED,
    G_MACHINES_AVAILABLE,
    G_MACHINES_DOWN,
    G_OBJECTIVE_SO_FAR,
    G_OPEN_JOBS,
    G_OPEN_JOBS_TARDY,
    G_PENDING_ARRIVALS,
    G_TIME,
    G_UTILIZATION_MEAN,
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
    M_QUEUE_WORK,
    M_SPEED,
    M_UTILIZATION,
    ORACLE,
)
from dynasched_gym.envs.dfjsp.types import (
    ACTION_PAIR,
    CFG_ACTION_KIND,
    CFG_LEVEL,
    CFG_OBJECTIVE,
    CFG_RAISE,
    D_DOWNTIMES,
    D_ELIG,
    D_EVENTS,
    D_JOBS,
    D_OPS,
    D_PAIRS,
    D_ROUTE,
    D_SEGMENTS,
    D_SLOTS,
    K_CANDIDATES,
    K_CODE,
    K_DOWNTIMES_FOLDED,
    K_FOLDED_COMPLETED,
    K_INVALID,
    K_JOBS_FOLDED,
    K_JOBS_SEEN,
    K_SEGMENTS_FOLDED,
    MS_BOTTLENECK,
    MS_BREAKDOWN_SOON,
    MS_BUSY_FOLDED,
    MS_DOWN,
    MS_DOWN_FOLDED,
    MS_MAINTENANCE_SOON,
    MS_QUEUE,
    MS_UTILIZATION,
    OBJ_FLOW_TIME,
    OBJ_MAKESPAN,
    OBJ_WEIGHTED_TARDINESS,
    S_FOLDED,
    S_OPS_SCALE,
    S_PHI,
    S_REWARD,
    S_REWARD_SCALE,
    S_TIME_SCALE,
    Workspace,
)

RULE_MWKR = JOB_RULES.index("MWKR")
NUM_RULES = COMPOSITE_TABLE.shape[0]


# ------------------------------------------------------------------------------------ helpers
@njit(cache=True, _nrt=False)
def _clip(x):
    return min(max(x, -BIG), BIG)


@njit(cache=True, _nrt=False)
def _clip_amount(x):
    # events within EPS after now happen now, so a difference of times can be -EPS: amounts stay >= 0
    return min(max(x, 0.0), BIG)


@njit(cache=True, _nrt=False)
def _zero_rows(a, rows):
    """Set rows ``0 .. rows - 1`` of the 2-D array ``a`` to 0."""
    for r in range(rows):
        for c in range(a.shape[1]):
            a[r, c] = 0.0


@njit(cache=True, _nrt=False)
def _soon(dt, tau):
    """1 / (1 + dt / tau): 1 for an event now, towards 0 for a far one."""
    return 1.0 / (1.0 + max(dt, 0.0) / tau)


@njit(cache=True, _nrt=False, inline="always")
def _fold_jobs(S, T, objective, lo, hi, total, count):
    """Fold jobs ``lo .. hi - 1``, in index order, into the potential's running ``total``; returns it and ``count``
    plus the jobs it counts (completed or active; cancelled and hidden jobs count nowhere)."""
    status = T.job_status
    completion = T.job_completion
    release = S.job_release
    due = T.job_due
    weight = T.job_weight
    now = T.now[0]
    weighted = objective == OBJ_WEIGHTED_TARDINESS
    for j in range(lo, hi):
        if status[j] == JOB_COMPLETED:
            end = completion[j]
        elif status[j] == JOB_ACTIVE:
            end = now
        else:
            continue
        count += 1
        if objective == OBJ_MAKESPAN:
            if status[j] == JOB_COMPLETED:
                total = max(total, end)
        elif objective == OBJ_FLOW_TIME:
            total += end - release[j]
        else:
            d = due[j]
            if d == d:
                late = max(0.0, end - d)
                total += late * weight[j] if weighted else late
    return total, count


@njit(cache=True, _nrt=False, inline="always")
def _finish_potential(T, objective, total, count):
    """The potential from the fold of every job (:func:`_fold_jobs`): makespan adds the running operations' planned
    ends, flow time divides by the jobs counted."""
    if objective == OBJ_MAKESPAN:
        machine_job = T.machine_job
        machine_end = T.machine_end
        for m in range(machine_job.shape[0]):
            if machine_job[m] >= 0:
                total = max(total, machine_end[m])
        return total
    if objective == OBJ_FLOW_TIME:
        return total / max(count, 1)
    return total


@njit(cache=True, _nrt=False, inline="always")
def potential(S, T, objective):
    """The objective's potential now; at the end of an episode it equals the objective's metric.

    - makespan: the latest completion of a completed job or planned end of a running operation;
    - (weighted) tardiness: sum over completed jobs of (w_j) max(0, C_j - d_j) plus, over visible
      open jobs, (w_j) max(0, now - d_j), with d_j and w_j in force (no due date: no tardiness);
    - flow time: (sum over completed jobs of C_j - r_j plus, over visible open jobs, now - r_j)
      / max(1, number of those jobs).

    Cancelled jobs never count, as in :func:`dynasched_gym.metrics.compute_metrics`.
    """
    total, count = _fold_jobs(S, T, objective, 0, T.job_status.shape[0], 0.0, 0)
    return _finish_potential(T, objective, total, count)


# ---------------------------------------------------------------------------- folded history
# An env walks every job (the potential, the global job counts) and every segment and downtime so far (the machines'
# utilisation) at every step. Most of them can no longer change: a job before the active window that is not active
# (completed, cancelled, or not arrived yet: the window widens to it when it arrives), a job past every window so far
# (not arrived yet, or cancelled: one that arrives cannot finish before the next step shows it in the window), and a
# segment or downtime that is over and ended by now. The workspace keeps the fold of such a
# prefix (Workspace.counters K_JOBS_FOLDED .. K_DOWNTIMES_FOLDED, scalars S_FOLDED, machine_stat MS_*_FOLDED), so a
# step folds only the rest, in the same order: the same float operations as the whole walk, so the same bits.
@njit(cache=True, _nrt=False, inline="always")
def _forget_folds(W):
    """Empty the folds (a new episode)."""
    counters = W.counters
    for k in (K_JOBS_FOLDED, K_FOLDED_COMPLETED, K_JOBS_SEEN, K_SEGMENTS_FOLDED, K_DOWNTIMES_FOLDED):
        counters[k] = 0
    W.scalars[S_FOLDED] = 0.0
    stat = W.machine_stat
    for m in range(stat.shape[1]):
        stat[MS_BUSY_FOLDED, m] = 0.0
        stat[MS_DOWN_FOLDED, m] = 0.0


@njit(cache=True, _nrt=False)
def _fold_finished_jobs(S, T, W, objective):
    """Fold the jobs before the active window into the workspace's job fold, and note the window's end."""
    counters = W.counters
    seen = max(counters[K_JOBS_SEEN], T.counters[C_ACTIVE_END])
    counters[K_JOBS_SEEN] = seen
    lo = counters[K_JOBS_FOLDED]
    hi = min(T.counters[C_ACTIVE_FIRST], seen)  # reset leaves an empty window past the jobs: [num_jobs, 0)
    if hi < lo:  # a folded job has arrived since (it is active, so it cannot have finished yet): fold again
        lo = 0
        W.scalars[S_FOLDED] = 0.0
        counters[K_FOLDED_COMPLETED] = 0
    # none of jobs lo .. hi - 1 is active: the jobs counted are the completed ones
    total, completed = _fold_jobs(S, T, objective, lo, hi, W.scalars[S_FOLDED], counters[K_FOLDED_COMPLETED])
    W.scalars[S_FOLDED] = total
    counters[K_FOLDED_COMPLETED] = completed
    counters[K_JOBS_FOLDED] = hi


@njit(cache=True, _nrt=False, inline="always")
def _env_potential(S, T, W):
    """:func:`potential` of the env's state: its job fold advanced (:func:`_fold_finished_jobs`), then the jobs from
    there to the last window's end folded on (the jobs past it count nowhere)."""
    objective = W.config[CFG_OBJECTIVE]
    _fold_finished_jobs(S, T, W, objective)
    counters = W.counters
    total, count = _fold_jobs(S, T, objective, counters[K_JOBS_FOLDED], counters[K_JOBS_SEEN], W.scalars[S_FOLDED],
                              counters[K_FOLDED_COMPLETED])
    return _finish_potential(T, objective, total, count)


@njit(cache=True, _nrt=False)
def _elapsed(start, end, now):
    """The part of ``[start, end)`` before ``now``."""
    return max(0.0, min(end, now) - start)


@njit(cache=True, _nrt=False)
def _fold_history(T, W, now):
    """Fold the segments and downtimes that can no longer change into ``MS_BUSY_FOLDED`` and ``MS_DOWN_FOLDED``, in
    record order up to the first that still can: one running (a cut or a repair may end it otherwise) or ending after
    ``now`` (its part before ``now`` still grows)."""
    stat = W.machine_stat
    counters = W.counters
    machine_job = T.machine_job
    machine_segment = T.machine_segment
    seg_machine = T.segment_machine
    seg_end = T.segment_end
    s = counters[K_SEGMENTS_FOLDED]
    while s < T.counters[C_SEGMENTS]:
        m = seg_machine[s]
        if seg_end[s] > now or (machine_job[m] >= 0 and machine_segment[m] == s):
            break
        stat[MS_BUSY_FOLDED, m] += _elapsed(T.segment_start[s], seg_end[s], now)
        s += 1
    counters[K_SEGMENTS_FOLDED] = s
    machine_down = T.machine_down
    machine_downtime = T.machine_downtime
    down_machine = T.downtime_machine
    down_end = T.downtime_end
    d = counters[K_DOWNTIMES_FOLDED]
    while d < T.counters[C_DOWNTIMES]:
        m = down_machine[d]
        if down_end[d] > now or (machine_down[m] != DOWN_NONE and machine_downtime[m] == d):
            break
        stat[MS_DOWN_FOLDED, m] += _elapsed(T.downtime_start[d], down_end[d], now)
        d += 1
    counters[K_DOWNTIMES_FOLDED] = d


# ------------------------------------------------------------------------- action slots
@njit(cache=True, _nrt=False)
def offer(S, T, W):
    """Rank the startable pairs into the action slots; returns how many pairs can start now.

    The slots hold the ``max_candidates`` pairs whose job has waited longest (earliest ready time),
    in that order; ties keep job order, then eligible-machine order. Unused slots get job -1.
    """
    pair_job = W.pair_job
    pair_machine = W.pair_machine
    pair_time = W.pair_time
    n = fill_candidates(S, T, pair_job, pair_machine, pair_time)
    slot_job = W.slot_job
    slot_machine = W.slot_machine
    slot_time_ = W.slot_time
    slot_key = W.slot_key
    ready = T.job_ready
    cap = slot_job.shape[0]
    kept = 0
    for c in range(n):
        key = ready[pair_job[c]]
        if kept < cap:
            pos = kept
            kept += 1
        elif key < slot_key[cap - 1]:
            pos = cap - 1
        else:
            continue
        while pos > 0 and key < slot_key[pos - 1]:
            slot_job[pos] = slot_job[pos - 1]
            slot_machine[pos] = slot_machine[pos - 1]
            slot_time_[pos] = slot_time_[pos - 1]
            slot_key[pos] = slot_key[pos - 1]
            pos -= 1
        slot_job[pos] = pair_job[c]
        slot_machine[pos] = pair_machine[c]
        slot_time_[pos] = pair_time[c]
        slot_key[pos] = key
    for s in range(kept, cap):
        slot_job[s] = -1
        slot_machine[s] = -1
        slot_time_[s] = 0.0
        slot_key[s] = 0.0
    return n


@njit(cache=True, _nrt=False)
def _random_pair(S, T, W):
    """A uniformly random startable pair, drawn from the workspace's own xorshift64 stream."""
    count = nth_candidate(S, T, -1)[2]
    x = W.rng[0]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    W.rng[0] = x
    j, m, _ = nth_candidate(S, T, np.int64(x % np.uint64(count)))
    return j, m


# ------------------------------------------------------------------------------ observation
@njit(cache=True, _nrt=False)
def _add_eligible_work(S, T, row, stat, slot, work):
    """Add ``work`` x time(slot, m) / (number of eligible machines) to ``stat[row, m]`` for every eligible m."""
    op = T.slot_op[slot]
    lo = S.op_elig_ptr[op]
    hi = S.op_elig_ptr[op + 1]
    share = work / (hi - lo)
    elig_machine = S.elig_machine
    for i in range(lo, hi):
        m = elig_machine[i]
        stat[row, m] += share * slot_time(S.op_time, S.machine_speed, T.slot_op, T.slot_factor, T.slot_nominal,
                                          slot, m)


@njit(cache=True, _nrt=False)
def machine_stats(S, T, W, level, now):
    """Fill ``W.machine_stat`` (and ``W.job_stat`` at oracle level) for any state (no folded history)."""
    _machine_stats(S, T, W, level, now, False)


@njit(cache=True, _nrt=False)
def _machine_stats(S, T, W, level, now, folded):
    """:func:`machine_stats`; ``folded``: an env's state, whose folded history (:func:`_fold_history`) is advanced
    and used."""
    stat = W.machine_stat
    num_m = stat.shape[1]
    _zero_rows(stat, MS_QUEUE + 1 if level < FULL else MS_DOWN + 1 if level < ORACLE else MS_MAINTENANCE_SOON + 1)
    status = T.job_status
    job_machine = T.job_machine
    job_pos = T.job_pos
    slot_ptr = S.job_slot_ptr
    slot_work = T.slot_work
    active = range(T.counters[C_ACTIVE_FIRST], T.counters[C_ACTIVE_END])
    for j in active:
        if status[j] == JOB_ACTIVE and job_machine[j] < 0:
            slot = slot_ptr[j] + job_pos[j]
            _add_eligible_work(S, T, MS_QUEUE, stat, slot, slot_work[slot])
    if level >= FULL:
        machine_end = T.machine_end
        num_slots = T.job_num_slots
        for j in active:
            if status[j] != JOB_ACTIVE:
                continue
            first = job_pos[j]
            m = job_machine[j]
            if m >= 0:
                stat[MS_BOTTLENECK, m] += max(0.0, machine_end[m] - now)
                first += 1
            for k in range(first, num_slots[j]):
                _add_eligible_work(S, T, MS_BOTTLENECK, stat, slot_ptr[j] + k, slot_work[slot_ptr[j] + k])
        total = 0.0
        for m in range(num_m):
            total += stat[MS_BOTTLENECK, m]
        if total > 0.0:
            for m in range(num_m):
                stat[MS_BOTTLENECK, m] *= num_m / total
        first_segment = 0
        first_downtime = 0
        if folded:
            _fold_history(T, W, now)
            first_segment = W.counters[K_SEGMENTS_FOLDED]
            first_downtime = W.counters[K_DOWNTIMES_FOLDED]
            for m in range(num_m):
                stat[MS_UTILIZATION, m] = stat[MS_BUSY_FOLDED, m]
                stat[MS_DOWN, m] = stat[MS_DOWN_FOLDED, m]
        seg_machine = T.segment_machine
        seg_start = T.segment_start
        seg_end = T.segment_end
        for s in range(first_segment, T.counters[C_SEGMENTS]):
            stat[MS_UTILIZATION, seg_machine[s]] += _elapsed(seg_start[s], seg_end[s], now)
        down_machine = T.downtime_machine
        down_start = T.downtime_start
        down_end = T.downtime_end
        for d in range(first_downtime, T.counters[C_DOWNTIMES]):
            stat[MS_DOWN, down_machine[d]] += _elapsed(down_start[d], down_end[d], now)
        for m in range(num_m):
            available = now - stat[MS_DOWN, m]
            stat[MS_UTILIZATION, m] = min(1.0, stat[MS_UTILIZATION, m] / available) if available > EPS else 0.0
    if level >= ORACLE:
        tau = W.scalars[S_TIME_SCALE]
        job_stat = W.job_stat
        for j in range(job_stat.shape[0]):
            job_stat[j] = np.inf
        event_time = S.event_time
        event_type = S.event_type
        for e in range(T.counters[C_EVENT], event_time.shape[0]):
            kind = event_type[e]
            soon = _soon(event_time[e] - now, tau)
            if kind == EV_BREAKDOWN and stat[MS_BREAKDOWN_SOON, S.event_machine[e]] == 0.0:
                stat[MS_BREAKDOWN_SOON, S.event_machine[e]] = soon
            elif kind == EV_MAINTENANCE and stat[MS_MAINTENANCE_SOON, S.event_machine[e]] == 0.0:
                stat[MS_MAINTENANCE_SOON, S.event_machine[e]] = soon
            elif kind == EV_CANCELLATION:
                job_stat[S.event_job[e]] = min(job_stat[S.event_job[e]], event_time[e])


@njit(cache=True, _nrt=False)
def _write_machine_stats(out, r, m, speed, stat, tau, c_speed, c_queue, c_bottleneck, c_utilization, c_breakdown,
                         c_maintenance):
    """Write machine ``m``'s speed and statistics into row ``r`` of ``out`` at the given columns
    (those past the block's width, i.e. above its observability level, are skipped)."""
    width = out.shape[1]
    out[r, c_speed] = _clip(speed[m])
    out[r, c_queue] = _clip(stat[MS_QUEUE, m] / tau)
    if width > c_bottleneck:
        out[r, c_bottleneck] = _clip(stat[MS_BOTTLENECK, m])
        out[r, c_utilization] = stat[MS_UTILIZATION, m]
    if width > c_breakdown:
        out[r, c_breakdown] = stat[MS_BREAKDOWN_SOON, m]
        out[r, c_maintenance] = stat[MS_MAINTENANCE_SOON, m]


@njit(cache=True, _nrt=False)
def _write_candidates(S, T, W, offered, previous, now):
    """Fill the candidates block; ``previous`` rows were offered before (the rows to clear)."""
    out = W.candidates
    width = out.shape[1]
    tau = W.scalars[S_TIME_SCALE]
    ops_scale = W.scalars[S_OPS_SCALE]
    stat = W.machine_stat
    slot_job = W.slot_job
    slot_machine = W.slot_machine
    slot_time_ = W.slot_time
    elig_ptr = S.op_elig_ptr
    elig_machine = S.elig_machine
    _zero_rows(out, max(offered, previous))
    for s in range(offered):
        j = slot_job[s]
        m = slot_machine[s]
        slot = S.job_slot_ptr[j] + T.job_pos[j]
        op = T.slot_op[slot]
        fastest = np.inf
        for i in range(elig_ptr[op], elig_ptr[op + 1]):
            fastest = min(fastest, slot_time(S.op_time, S.machine_speed, T.slot_op, T.slot_factor, T.slot_nominal,
                                             slot, elig_machine[i]))
        here = slot_time(S.op_time, S.machine_speed, T.slot_op, T.slot_factor, T.slot_nominal, slot, m)
        num_slots = T.job_num_slots[j]
        due = T.job_due[j]
        out[s, C_VALID] = 1.0
        out[s, C_PROC_TIME] = _clip(slot_time_[s] / tau)
        out[s, C_PROC_TIME_RATIO] = _clip(here / fastest)
        out[s, C_JOB_REMAINING_WORK] = _clip(-job_priority(S, T, j, RULE_MWKR) / tau)
        out[s, C_JOB_REMAINING_OPS] = _clip((num_slots - T.job_pos[j]) / ops_scale)
        out[s, C_JOB_PROGRESS] = T.job_pos[j] / num_slots
        out[s, C_JOB_WEIGHT] = _clip(T.job_weight[j])
        if due == due:
            out[s, C_DUE_LATENESS] = _clip((now - due) / tau)
            out[s, C_HAS_DUE] = 1.0
        out[s, C_WAITING_TIME] = _clip_amount((now - T.job_ready[j]) / tau)
        out[s, C_JOB_AGE] = _clip_amount((now - S.job_release[j]) / tau)
        _write_machine_stats(out, s, m, S.machine_speed, stat, tau, C_MACHINE_SPEED, C_MACHINE_QUEUE,
                             C_MACHINE_BOTTLENECK, C_MACHINE_UTILIZATION, C_MACHINE_BREAKDOWN_SOON,
                             C_MACHINE_MAINTENANCE_SOON)
        if width > C_JOB_CANCELLATION_SOON:
            out[s, C_JOB_CANCELLATION_SOON] = _soon(W.job_stat[j] - now, tau)  # 0 when none (inf)


@njit(cache=True, _nrt=False)
def _write_machines(S, T, W, now):
    """Fill the machines block; returns (machines available, machines down)."""
    out = W.machines
    width = out.shape[1]
    tau = W.scalars[S_TIME_SCALE]
    stat = W.machine_stat
    machine_job = T.machine_job
    machine_down = T.machine_down
    maintenance = T.machine_maintenance
    available = 0
    down = 0
    _zero_rows(out, out.shape[0])
    for m in range(out.shape[0]):
        if machine_available(machine_job, machine_down, maintenance, m):
            out[m, M_AVAILABLE] = 1.0
            available += 1
        if machine_job[m] >= 0:
            out[m, M_BUSY] = 1.0
            out[m, M_BUSY_REMAINING] = _clip_amount((T.machine_end[m] - now) / tau)
        if machine_down[m] != DOWN_NONE:
            down += 1
            out[m, M_IN_BREAKDOWN] = machine_down[m] == DOWN_BREAKDOWN
            out[m, M_IN_MAINTENANCE] = machine_down[m] == DOWN_MAINTENANCE
            out[m, M_DOWN_ELAPSED] = _clip_amount((now - T.downtime_start[T.machine_downtime[m]]) / tau)
            if width > M_DOWN_REMAINING:
                out[m, M_DOWN_REMAINING] = _clip_amount((T.machine_down_until[m] - now) / tau)
        out[m, M_MAINTENANCE_QUEUED] = maintenance[m] > 0.0
        _write_machine_stats(out, m, m, S.machine_speed, stat, tau, M_SPEED, M_QUEUE_WORK, M_BOTTLENECK,
                             M_UTILIZATION, M_BREAKDOWN_SOON, M_MAINTENANCE_SOON)
    return available, down


@njit(cache=True, _nrt=False)
def _arrives(release, status, cancellation):
    """Whether a job not released yet will arrive (oracle level): it is still hidden (not cancelled already) and
    its next CANCELLATION event, at time ``cancellation`` (inf: none), comes after its release. A cancellation
    at the release, within EPS, comes after it (arrivals apply first at one time, docs/semantics.md)."""
    return status == JOB_HIDDEN and release <= cancellation + EPS


@njit(cache=True, _nrt=False)
def _write_global(S, T, W, num_pairs, offered, available, down, phi, now):
    out = W.global_
    width = out.shape[0]
    tau = W.scalars[S_TIME_SCALE]
    num_m = W.machines.shape[0]
    status = T.job_status
    job_machine = T.job_machine
    due = T.job_due
    open_jobs = 0
    waiting = 0
    completed = W.counters[K_FOLDED_COMPLETED]
    tardy = 0
    for j in range(W.counters[K_JOBS_FOLDED], W.counters[K_JOBS_SEEN]):  # the jobs not folded by _env_potential
        if status[j] == JOB_ACTIVE:
            open_jobs += 1
            if job_machine[j] < 0:
                waiting += 1
            if due[j] == due[j] and now > due[j]:
                tardy += 1
        elif status[j] == JOB_COMPLETED:
            completed += 1
    for c in range(width):
        out[c] = 0.0
    released = T.counters[C_RELEASE]
    out[G_TIME] = _clip(math.log1p(now / tau))
    out[G_OPEN_JOBS] = open_jobs / num_m
    out[G_WAITING_JOBS] = waiting / num_m
    out[G_CANDIDATES] = offered / W.slot_job.shape[0]
    out[G_CANDIDATES_TRUNCATED] = num_pairs > offered
    out[G_MACHINES_AVAILABLE] = available / num_m
    out[G_MACHINES_DOWN] = down / num_m
    out[G_JOBS_COMPLETED] = completed / max(released, 1)
    out[G_OPEN_JOBS_TARDY] = tardy / max(open_jobs, 1)
    out[G_OBJECTIVE_SO_FAR] = _clip(math.log1p(max(phi, 0.0) / tau))
    if width > G_BOTTLENECK_MAX:
        stat = W.machine_stat
        top = 0.0
        mean = 0.0
        for m in range(num_m):
            top = max(top, stat[MS_BOTTLENECK, m])
            mean += stat[MS_UTILIZATION, m] / num_m
        out[G_BOTTLENECK_MAX] = _clip(top)
        out[G_UTILIZATION_MEAN] = mean
    if width > G_ARRIVAL_SOON:
        pending = 0
        for r in range(released, status.shape[0]):
            j = S.release_order[r]
            if _arrives(S.job_release[j], status[j], W.job_stat[j]):
                if pending == 0:
                    out[G_ARRIVAL_SOON] = _soon(S.job_release[j] - now, tau)
                pending += 1
        out[G_PENDING_ARRIVALS] = pending / num_m
        e = T.counters[C_EVENT]
        if e < S.event_time.shape[0]:
            out[G_EVENT_SOON] = _soon(S.event_time[e] - now, tau)


@njit(cache=True, _nrt=False, inline="always")
def observe(S, T, W, phi):
    """Rank the action slots and write every observation block and the action mask."""
    now = T.now[0]
    cap = W.slot_job.shape[0]
    previous = min(W.counters[K_CANDIDATES], cap)
    num_pairs = offer(S, T, W)
    W.counters[K_CANDIDATES] = num_pairs
    offered = min(num_pairs, cap)
    _machine_stats(S, T, W, W.config[CFG_LEVEL], now, True)
    _write_candidates(S, T, W, offered, previous, now)
    available, down = _write_machines(S, T, W, now)
    _write_global(S, T, W, num_pairs, offered, available, down, phi, now)
    if W.config[CFG_ACTION_KIND] == ACTION_PAIR:
        mask = W.action_mask
        for s in range(mask.shape[0]):
            mask[s] = s < offered


# --------------------------------------------------------------------------- reset and step
@njit(cache=True, _nrt=False, inline="always")
def _settle(S, T, W, code):
    """Record ``code``, the reward against the previous potential, and the new observation."""
    W.counters[K_CODE] = code
    scalars = W.scalars
    phi = _env_potential(S, T, W)
    scalars[S_REWARD] = scalars[S_REWARD_SCALE] * (scalars[S_PHI] - phi)  # not -scale * (phi - prev): no -0.0
    scalars[S_PHI] = phi
    observe(S, T, W, phi)
    return code


@njit(cache=True, _nrt=False, inline="always")
def env_reset(S, T, W):
    """Start an episode: the simulator advances to the first decision; potential and reward are 0."""
    code = reset(S, T)
    W.counters[K_CODE] = code
    W.counters[K_INVALID] = 0
    W.scalars[S_PHI] = 0.0
    W.scalars[S_REWARD] = 0.0
    _forget_folds(W)
    observe(S, T, W, _env_potential(S, T, W))
    return code


@njit(cache=True, _nrt=False, inline="always")
def env_step(S, T, W, action):
    """Play ``action`` and advance to the next decision; returns the simulator's code.

    An invalid action (a padding slot or an out-of-range index) is replaced by slot / rule 0 and
    counted, or, when the config says raise, refused: the state is left as it was and
    ``ERR_INVALID_ACTION`` returned. Once the episode is over (``DONE``) the action is ignored.
    """
    counters = W.counters
    code = DONE
    if counters[K_CODE] != DONE:
        pair_kind = W.config[CFG_ACTION_KIND] == ACTION_PAIR
        num_valid = min(counters[K_CANDIDATES], W.slot_job.shape[0]) if pair_kind else NUM_RULES
        invalid = action < 0 or action >= num_valid
        if invalid:
            if W.config[CFG_RAISE]:
                return ERR_INVALID_ACTION
            action = 0
            counters[K_INVALID] += 1
        if pair_kind:
            j = W.slot_job[action]
            m = W.slot_machine[action]
        elif COMPOSITE_TABLE[action, 0] == RULE_RANDOM:
            j, m = _random_pair(S, T, W)
        else:
            j, m = select(S, T, COMPOSITE_TABLE[action, 0], COMPOSITE_TABLE[action, 1])
        start(S, T, j, m)
        code = advance(S, T)
    return _settle(S, T, W, code)  # one call site: the inlined observation is compiled once per caller


# ------------------------------------------------------------------------------ batch rows
@njit(cache=True, _nrt=False, inline="always")
def static_at(B, dims, rows, i):
    """Env ``i``'s ``Static``: views of row ``rows[i]`` of the batch buffers ``B``, cut to env ``i``'s sizes."""
    nj = dims[i, D_JOBS]
    no = dims[i, D_OPS]
    nv = dims[i, D_EVENTS]
    r = rows[i]
    return Static(
        machine_speed=B.machine_speed[r], job_release=B.job_release[r, :nj], job_due=B.job_due[r, :nj],
        job_weight=B.job_weight[r, :nj], release_order=B.release_order[r, :nj],
        job_slot_ptr=B.job_slot_ptr[r, :nj + 1], job_num_ops=B.job_num_ops[r, :nj],
        slot_op=B.slot_op[r, :dims[i, D_SLOTS]], op_elig_ptr=B.op_elig_ptr[r, :no + 1],
        elig_machine=B.elig_machine[r, :dims[i, D_ELIG]], op_time=B.op_time[r, :no],
        op_mean_time=B.op_mean_time[r, :no], event_time=B.event_time[r, :nv],
        event_type=B.event_type[r, :nv],
        event_machine=B.event_machine[r, :nv], event_job=B.event_job[r, :nv], event_op=B.event_op[r, :nv],
        event_value=B.event_value[r, :nv], event_is_value=B.event_is_value[r, :nv],
        event_route_lo=B.event_route_lo[r, :nv], event_route_hi=B.event_route_hi[r, :nv],
        route_ops=B.route_ops[r, :dims[i, D_ROUTE]], policy=B.policy[r], segment_capacity=B.segment_capacity[r],
        downtime_capacity=B.downtime_capacity[r],
    )


@njit(cache=True, _nrt=False, inline="always")
def state_at(B, dims, i):
    """Env ``i``'s ``State``: views of row ``i`` of the batch buffers ``B``, cut to its sizes."""
    nj = dims[i, D_JOBS]
    ns = dims[i, D_SLOTS]
    ng = dims[i, D_SEGMENTS]
    nd = dims[i, D_DOWNTIMES]
    return State(
        now=B.now[i], counters=B.counters[i], job_status=B.job_status[i, :nj], job_pos=B.job_pos[i, :nj],
        job_num_slots=B.job_num_slots[i, :nj], job_machine=B.job_machine[i, :nj], job_ready=B.job_ready[i, :nj],
        job_due=B.job_due[i, :nj], job_weight=B.job_weight[i, :nj], job_completion=B.job_completion[i, :nj],
        job_cancelled_at=B.job_cancelled_at[i, :nj], slot_op=B.slot_op[i, :ns], slot_factor=B.slot_factor[i, :ns],
        slot_nominal=B.slot_nominal[i, :ns], slot_work=B.slot_work[i, :ns], slot_touched=B.slot_touched[i, :ns],
        machine_job=B.machine_job[i], machine_start=B.machine_start[i], machine_end=B.machine_end[i],
        machine_ptime=B.machine_ptime[i], machine_segment=B.machine_segment[i], machine_down=B.machine_down[i],
        machine_down_until=B.machine_down_until[i], machine_downtime=B.machine_downtime[i],
        machine_maintenance=B.machine_maintenance[i], machine_free_since=B.machine_free_since[i],
        machine_workload=B.machine_workload[i], segment_job=B.segment_job[i, :ng],
        segment_op=B.segment_op[i, :ng], segment_machine=B.segment_machine[i, :ng],
        segment_start=B.segment_start[i, :ng], segment_end=B.segment_end[i, :ng],
        segment_work=B.segment_work[i, :ng], segment_status=B.segment_status[i, :ng],
        downtime_machine=B.downtime_machine[i, :nd], downtime_start=B.downtime_start[i, :nd],
        downtime_end=B.downtime_end[i, :nd], downtime_kind=B.downtime_kind[i, :nd],
    )


@njit(cache=True, _nrt=False, inline="always")
def work_at(B, dims, i):
    """Env ``i``'s :class:`~.types.Workspace`: views of row ``i`` of the batch buffers ``B``, cut to its sizes."""
    npair = dims[i, D_PAIRS]
    return Workspace(
        candidates=B.candidates[i], machines=B.machines[i], global_=B.global_[i], action_mask=B.action_mask[i],
        slot_job=B.slot_job[i], slot_machine=B.slot_machine[i], slot_time=B.slot_time[i], slot_key=B.slot_key[i],
        pair_job=B.pair_job[i, :npair], pair_machine=B.pair_machine[i, :npair], pair_time=B.pair_time[i, :npair],
        job_stat=B.job_stat[i, :dims[i, D_JOBS]], machine_stat=B.machine_stat[i], scalars=B.scalars[i],
        counters=B.counters[i], config=B.config[i], rng=B.rng[i],
    )


@njit(cache=True, _nrt=False)
def reset_rows(statics, states, works, dims, rows, flags):
    """Reset env ``i`` of the batch where ``flags[i]`` is set; returns how many are not at a decision."""
    ended = 0
    for i in range(flags.shape[0]):
        if flags[i]:
            ended += env_reset(static_at(statics, dims, rows, i), state_at(states, dims, i),
                               work_at(works, dims, i)) != DECISION
    return ended


@njit(cache=True, _nrt=False)
def step_rows(statics, states, works, dims, rows, actions, flags):
    """Step env ``i`` of the batch with ``actions[i]`` where ``flags[i]`` is set; returns how many are not
    at a decision afterwards (done, or an error code)."""
    ended = 0
    for i in range(flags.shape[0]):
        if flags[i]:
            ended += env_step(static_at(statics, dims, rows, i), state_at(states, dims, i), work_at(works, dims, i),
                              actions[i]) != DECISION
    return ended


@njit(cache=True, _nrt=False)
def step_row(statics, states, works, dims, rows, i, action):
    """Step env ``i`` of the batch with ``action``; returns its code."""
    return env_step(static_at(statics, dims, rows, i), state_at(states, dims, i), work_at(works, dims, i), action)


# ----------------------------------------------------------------------- entry points (NRT)
# The handle is a typed list holding one (StaticBatch, StateBatch, WorkspaceBatch, dims, static rows) tuple.
@njit(cache=True)
def make_handle(statics, states, works, dims, rows):
    """The handle of a batch. Built here, its list methods compile once and stay in the cache;
    ``numba.typed.List`` called from Python compiles them for this item type in every process (~2 s)."""
    handle = List()
    handle.append((statics, states, works, dims, rows))
    return handle


@njit(cache=True)
def reset_batch(handle, flags):
    """Reset env ``i`` of the batch in ``handle`` where ``flags[i]`` is set; returns how many are not at a
    decision (see :func:`reset_rows`)."""
    statics, states, works, dims, rows = handle[0]
    return reset_rows(statics, states, works, dims, rows, flags)


@njit(cache=True)
def step_batch(handle, actions, flags):
    """Step env ``i`` of the batch in ``handle`` with ``actions[i]`` where ``flags[i]`` is set; returns how many
    are not at a decision afterwards (see :func:`step_rows`)."""
    statics, states, works, dims, rows = handle[0]
    return step_rows(statics, states, works, dims, rows, actions, flags)


@njit(cache=True, parallel=True)
def _step_rows_parallel(statics, states, works, dims, rows, actions, flags):
    """:func:`step_rows` on numba's threads: each env touches only its own rows (statics are read-only)."""
    left = np.zeros(flags.shape[0], dtype=np.int64)
    # np.int64: numba types a prange index int64 in one pass and uint64 in another, and compiled step_row (~1 MB of
    # machine code) for both.
    for i in prange(flags.shape[0]):
        if flags[i]:
            left[i] = step_row(statics, states, works, dims, rows, np.int64(i), actions[i]) != DECISION
    return left.sum()


@njit(cache=True)
def step_batch_parallel(handle, actions, flags):
    """:func:`step_batch` with the envs stepped in parallel (``DFJSPVectorEnv(parallel=True)``)."""
    statics, states, works, dims, rows = handle[0]
    return _step_rows_parallel(statics, states, works, dims, rows, actions, flags)


@njit(cache=True)
def step_first(handle, action):
    """Step env 0 of the batch in ``handle`` (a single env) with ``action``; returns its code."""
    statics, states, works, dims, rows = handle[0]
    return step_row(statics, states, works, dims, rows, 0, action)
