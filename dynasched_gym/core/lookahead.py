"""Snapshot lookahead in numba: try the top-k pairs of a base rule, roll each out, keep the best.

At a decision point the base rule ranks the startable (job, machine) pairs (job priority first,
then processing time, then job and machine id); each of the ``top_k`` best is started in a copy
of the state (:func:`copy_into`), the copy is rolled out to the end under the base rule, and the
pair whose rollout gives the lowest objective is chosen (ties: the base rule's order).

**Horizon.** A rollout may stop after ``horizon`` decisions (``-1``: at the end). A stopped rollout
is valued by :func:`rollout_value`: completed jobs count as they are, and each job still open is
counted as if it went on without waiting (a running operation ends as planned, the rest take their
mean times over eligible machines), an optimistic estimate; at the end of a full rollout no job is
open and the value is the objective itself.

**What a rollout may know.** By default the copy first forgets the future: no stream event that
has not happened yet is applied and jobs not yet released do not exist (:func:`forget_future`),
so the choice uses only what the agent has seen. Downtime already under way lasts its announced
duration. With ``clairvoyant=True`` the rollout sees every future event and arrival: a reference
for ablations, never a fair agent.

**Sampled futures.** Instead of an empty future, a rollout may play a *sampled* one: the jobs and
events of another instance drawn from the same generative model (:func:`with_sampled_future` appends
them to the instance; :func:`graft_future` puts the present state into it, the real future forgotten
and the sample's jobs arriving, and its events happening, after now). :func:`sampled_pair_values`
rolls every candidate pair out in one such future; averaging over several samples estimates each
pair's expected objective over futures the agent cannot see.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dynasched_gym.core.compiled import (
    C_ACTIVE_END,
    C_ACTIVE_FIRST,
    C_EVENT,
    C_OPEN_JOBS,
    C_RELEASE,
    EPS,
    JOB_ACTIVE,
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_HIDDEN,
    Static,
    read_only,
)
from dynasched_gym.core.kernels import DONE, _copy, advance, copy_into, fill_candidates, start
from dynasched_gym.core.rules import JOB_RULES, job_priorities, job_priority, run_rule, run_rule_to_end

_MWKR, _SPT = JOB_RULES.index("MWKR"), JOB_RULES.index("SPT")


@njit(cache=True, _nrt=False)
def forget_future(S, T):
    """Make state ``T`` ignore every event and arrival that has not happened yet."""
    counters = T.counters
    counters[C_EVENT] = S.event_time.shape[0]
    counters[C_RELEASE] = S.release_order.shape[0]
    status = T.job_status
    for j in range(status.shape[0]):
        if status[j] == JOB_HIDDEN:
            status[j] = JOB_CANCELLED  # unknown jobs take no part in the rollout
            counters[C_OPEN_JOBS] -= 1


@njit(cache=True, _nrt=False)
def objective_value(S, T, objective):
    """The objective over completed jobs of state ``T`` (code: index in :data:`dynasched_gym.metrics.OBJECTIVES`)."""
    return _objective(S, T, objective, False)[0]


@njit(cache=True, _nrt=False)
def forecast(S, T, scratch, job_rule, machine_rule, objective, clairvoyant):
    """The objective if ``job_rule``:``machine_rule`` finished the schedule from state ``T``.

    The rollout knows only the present, or with ``clairvoyant`` every future event and arrival (the
    hindsight the training rewards of :class:`dynasched_gym.envs.wrappers.ForecastReward` may use).
    ``scratch`` (a state of the same instance) receives the rollout; ``T`` is left unchanged. At the
    end of an episode this is the objective of the finished schedule.
    """
    copy_into(T, scratch)
    if not clairvoyant:
        forget_future(S, scratch)
    if scratch.counters[C_OPEN_JOBS] > 0:
        run_rule_to_end(S, scratch, job_rule, machine_rule)
    return objective_value(S, scratch, objective)


@njit(cache=True, _nrt=False)
def ranked_candidates(S, T, job_rule, out_job, out_machine, out_key, out_time):
    """Fill the startable pairs sorted by ``job_rule``'s job key, then processing time, then listing order (job id,
    then the operation's eligible machines in instance order); returns how many (at most the buffer length)."""
    n = min(fill_candidates(S, T, out_job, out_machine, out_time), out_job.shape[0])
    job_priorities(S, T, out_job, n, job_rule, out_key)
    for i in range(1, n):  # insertion sort on (key, time, job, machine); n is small
        j, m, key, p = out_job[i], out_machine[i], out_key[i], out_time[i]
        k = i - 1
        while k >= 0 and (out_key[k] > key or (out_key[k] == key and out_time[k] > p)):
            out_job[k + 1], out_machine[k + 1], out_key[k + 1], out_time[k + 1] = (
                out_job[k], out_machine[k], out_key[k], out_time[k])
            k -= 1
        out_job[k + 1], out_machine[k + 1], out_key[k + 1], out_time[k + 1] = j, m, key, p
    return n


@njit(cache=True, _nrt=False)
def rollout_value(S, T, objective):
    """(objective, mean completion time) of state ``T``, each open job counted at its estimated completion.

    A job neither completed nor cancelled is taken to complete without waiting: a running one at the
    planned end of its operation plus its later operations, one not running at ``max(now, its release)``
    plus its remaining work (operations at their mean times over eligible machines, the current one
    for its work left): the value of a rollout stopped at a horizon. With no open job (the end of an
    episode) this is :func:`objective_value` and the mean completion time of the completed jobs.
    """
    return _objective(S, T, objective, True)


@njit(cache=True, _nrt=False, inline="always")
def _estimated_completion(S, T, j, now):
    """When open job ``j`` would complete without waiting (:func:`rollout_value`)."""
    remaining = -job_priority(S, T, j, _MWKR)  # current operation's work left + later ones, at mean times
    m = T.job_machine[j]
    if m >= 0:  # running: the operation ends as planned, then the later ones
        return T.machine_end[m] + remaining - job_priority(S, T, j, _SPT)  # SPT's priority: the current one
    return max(now, S.job_release[j]) + remaining


@njit(cache=True, _nrt=False, inline="always")
def _objective(S, T, objective, estimate_open):
    """(objective, mean completion time) over completed jobs, and open ones at their estimate if ``estimate_open``."""
    total, completion_sum, count = _accumulate(S, T, objective, estimate_open, 0, T.job_status.shape[0], 0.0, 0.0, 0)
    return _finish(objective, total, completion_sum, count)


@njit(cache=True, _nrt=False, inline="always")
def _accumulate(S, T, objective, estimate_open, lo, hi, total, completion_sum, count):
    """:func:`_objective`'s running (total, completion sum, count) carried on over jobs ``lo .. hi - 1`` of ``T``."""
    status = T.job_status
    now = T.now[0]
    for j in range(lo, hi):
        if status[j] == JOB_COMPLETED:
            c = T.job_completion[j]
        elif estimate_open and status[j] != JOB_CANCELLED:
            c = _estimated_completion(S, T, j, now)
        else:
            continue
        count += 1
        completion_sum += c
        due = T.job_due[j]
        if objective == 0:
            total = max(total, c)
        elif objective == 3:
            total += c - S.job_release[j]
        elif due == due and c > due:
            total += (c - due) * (T.job_weight[j] if objective == 2 else 1.0)
    return total, completion_sum, count


@njit(cache=True, _nrt=False, inline="always")
def _finish(objective, total, completion_sum, count):
    """:func:`_objective` from its running sums."""
    if count == 0:
        return 0.0, 0.0
    return (total / count if objective == 3 else total), completion_sum / count


@njit(cache=True, _nrt=False)
def pair_value(S, T, scratch, j, m, rollout_rules, objective, clairvoyant, horizon):
    """(best objective, its mean completion time) over rollouts that start pair (j, m) now.

    One rollout per row of ``rollout_rules`` (job rule, machine rule), each in ``scratch`` (a state
    of the same instance) after forgetting the future unless ``clairvoyant``, for at most ``horizon``
    further decisions (``-1``: to the end) and valued by :func:`rollout_value`; ``T`` is unchanged.
    """
    prepared = _prepare(S, T, scratch, clairvoyant, objective)
    return _prepared_pair_value(S, T, scratch, prepared, j, m, rollout_rules, objective, clairvoyant, horizon)


@njit(cache=True, _nrt=False, inline="always")
def _prepared_pair_value(S, T, scratch, prepared, j, m, rollout_rules, objective, clairvoyant, horizon):
    """:func:`pair_value` with ``scratch`` prepared (:func:`_prepare`, which returned ``prepared``); it is again."""
    value, tie = np.inf, np.inf
    for r in range(rollout_rules.shape[0]):
        _rollout(S, scratch, j, m, rollout_rules[r, 0], rollout_rules[r, 1], horizon)
        v, t = _prepared_value(S, T, scratch, prepared, objective, clairvoyant, True)
        _reprepare(S, T, scratch, prepared, clairvoyant)
        if v < value or (v == value and t < tie):
            value, tie = v, t
    return value, tie


@njit(cache=True, _nrt=False)
def slot_forecasts(S, T, scratch, slot_job, slot_machine, rollout_rules, objective, clairvoyant, time_scale, out):
    """Rollout forecasts of every offered pair, as observation features (``out``: (K, 2R) float32).

    For slot ``k`` (pair ``slot_job[k]``, ``slot_machine[k]``; ``-1`` marks padding) and rollout
    rule ``r`` (row of ``rollout_rules``), ``v[k, r]`` is the objective when the pair starts now and
    the rule finishes the schedule, the future forgotten (:func:`forget_future`), or with
    ``clairvoyant`` the instance's real future played (a critic's training input, never a policy's).
    Column ``2r`` is
    ``(v[k, r] - min over slots of v[:, r]) / time_scale`` (0 for the pair the rule's rollouts like
    best), column ``2r + 1`` is ``(v[k, r] - objective of the jobs completed so far) / time_scale``.
    Padding rows are 0. ``T`` is unchanged.
    """
    out[:] = 0.0
    accrued = objective_value(S, T, objective)
    prepared = _prepare(S, T, scratch, clairvoyant, objective)
    for r in range(rollout_rules.shape[0]):
        lowest = np.inf
        for k in range(slot_job.shape[0]):
            if slot_job[k] < 0:
                continue
            _rollout(S, scratch, slot_job[k], slot_machine[k], rollout_rules[r, 0], rollout_rules[r, 1], -1)
            v = _prepared_value(S, T, scratch, prepared, objective, clairvoyant, False)[0]
            _reprepare(S, T, scratch, prepared, clairvoyant)
            out[k, 2 * r] = v
            out[k, 2 * r + 1] = (v - accrued) / time_scale
            lowest = min(lowest, out[k, 2 * r])  # as stored (float32), so that the best pair's gap is exactly 0
        for k in range(slot_job.shape[0]):
            if slot_job[k] >= 0:
                out[k, 2 * r] = (out[k, 2 * r] - lowest) / time_scale


@njit(cache=True, _nrt=False, inline="always")
def _window(T):
    """``T``'s active window ``[first, end)``; reset's empty one (first past every job, end 0) as ``[first, first)``."""
    first = T.counters[C_ACTIVE_FIRST]
    return first, max(T.counters[C_ACTIVE_END], first)


@njit(cache=True, _nrt=False, inline="always")
def _prepare(S, T, scratch, clairvoyant, objective):
    """Prepare ``scratch`` for rollouts from ``T``, the future forgotten unless ``clairvoyant``; returns what they need.

    Only what a rollout without events or arrivals reads is copied (:func:`_copy_window`): its scans walk the active
    window, every job a machine runs is active, and it reads no segment or downtime record (it only appends them
    and sets the end of the downtimes under way). Jobs outside the window cannot change in such a rollout: they are
    valued from ``T`` (:func:`_prepared_value`), the sums over the jobs before the window once, here. Returns the
    jobs forgotten, the objective's running sums over the jobs before the window, and the end of the jobs after it
    that count (the completed ones).
    """
    if clairvoyant:  # events and arrivals may change any job: the whole state, valued as it is
        copy_into(T, scratch)
        return 0, 0.0, 0.0, 0, 0
    first, end = _window(T)
    active = 0
    for j in range(first, end):
        if T.job_status[j] == JOB_ACTIVE:
            active += 1
    # open jobs are the active ones, all in the window, and the hidden ones: forget_future's count without its walk
    forgotten = T.counters[C_OPEN_JOBS] - active
    _copy_window(S, T, scratch, forgotten)
    total, completion_sum, count = _accumulate(S, T, objective, False, 0, first, 0.0, 0.0, 0)
    last = T.job_status.shape[0]
    while last > end and T.job_status[last - 1] != JOB_COMPLETED:
        last -= 1
    return forgotten, total, completion_sum, count, last


@njit(cache=True, _nrt=False, inline="always")
def _prepared_value(S, T, scratch, prepared, objective, clairvoyant, estimate_open):
    """:func:`_objective` of ``scratch`` after a rollout from ``prepared = _prepare(S, T, scratch, ...)``.

    The same sums in the same job order, so the same value to the bit: the jobs before ``T``'s window from
    ``prepared``, the window's from ``scratch``, then the completed ones after it from ``T`` (they are as in
    ``scratch``; the hidden ones there are forgotten, not open, so none is estimated).
    """
    if clairvoyant:
        return _objective(S, scratch, objective, estimate_open)
    _, total, completion_sum, count, last = prepared
    first, end = _window(T)
    total, completion_sum, count = _accumulate(S, scratch, objective, estimate_open, first, end, total,
                                               completion_sum, count)
    total, completion_sum, count = _accumulate(S, T, objective, False, end, last, total, completion_sum, count)
    return _finish(objective, total, completion_sum, count)


@njit(cache=True, _nrt=False, inline="always")
def _reprepare(S, T, scratch, prepared, clairvoyant):
    """Make ``scratch``, after a rollout from ``prepared = _prepare(S, T, scratch, clairvoyant, ...)``, that prepared
    state again (what :func:`_prepare` copies is all such a rollout writes that a rollout reads)."""
    if clairvoyant:
        copy_into(T, scratch)
    else:
        _copy_window(S, T, scratch, prepared[0])


@njit(cache=True, _nrt=False, inline="always")
def _copy_window(S, T, scratch, forgotten):
    """Copy into ``scratch`` the clock, counters and machines of ``T`` and the jobs of its window with their slots,
    the ``forgotten`` jobs and every event forgotten (as :func:`forget_future` leaves them)."""
    _copy(scratch.now, T.now)
    counters = scratch.counters
    _copy(counters, T.counters)
    counters[C_EVENT] = S.event_time.shape[0]
    counters[C_RELEASE] = S.release_order.shape[0]
    counters[C_OPEN_JOBS] -= forgotten
    first, end = _window(T)
    for j in range(first, end):
        # a job not released yet may lie inside the window (jobs numbered out of release order): forgotten
        scratch.job_status[j] = JOB_CANCELLED if T.job_status[j] == JOB_HIDDEN else T.job_status[j]
        scratch.job_pos[j] = T.job_pos[j]
        scratch.job_num_slots[j] = T.job_num_slots[j]
        scratch.job_machine[j] = T.job_machine[j]
        scratch.job_ready[j] = T.job_ready[j]
        scratch.job_due[j] = T.job_due[j]
        scratch.job_weight[j] = T.job_weight[j]
        scratch.job_completion[j] = T.job_completion[j]
        scratch.job_cancelled_at[j] = T.job_cancelled_at[j]
    for s in range(S.job_slot_ptr[first], S.job_slot_ptr[end]):
        scratch.slot_op[s] = T.slot_op[s]
        scratch.slot_factor[s] = T.slot_factor[s]
        scratch.slot_nominal[s] = T.slot_nominal[s]
        scratch.slot_work[s] = T.slot_work[s]
        scratch.slot_touched[s] = T.slot_touched[s]
    _copy(scratch.machine_job, T.machine_job)
    _copy(scratch.machine_start, T.machine_start)
    _copy(scratch.machine_end, T.machine_end)
    _copy(scratch.machine_ptime, T.machine_ptime)
    _copy(scratch.machine_segment, T.machine_segment)
    _copy(scratch.machine_down, T.machine_down)
    _copy(scratch.machine_down_until, T.machine_down_until)
    _copy(scratch.machine_downtime, T.machine_downtime)
    _copy(scratch.machine_maintenance, T.machine_maintenance)
    _copy(scratch.machine_free_since, T.machine_free_since)
    _copy(scratch.machine_workload, T.machine_workload)


@njit(cache=True, _nrt=False, inline="always")
def _rollout(S, scratch, j, m, job_rule, machine_rule, horizon):
    """Start pair (j, m) in the prepared ``scratch`` and go on under the rule for ``horizon`` decisions
    (``-1``: to the end of the schedule)."""
    start(S, scratch, j, m)
    if advance(S, scratch) != DONE and horizon != 0:
        run_rule(S, scratch, job_rule, machine_rule, horizon)


@njit(cache=True, _nrt=False)
def lookahead_select(S, T, scratch, job_rule, rollout_rules, top_k, objective, clairvoyant, buf_job, buf_machine,
                     buf_key, buf_time, horizon=-1):
    """The pair the lookahead picks now; ``scratch`` is a state of the same instance used for rollouts.

    Each of the ``top_k`` pairs ranked by ``job_rule`` is scored by :func:`pair_value` (rollouts of at
    most ``horizon`` decisions, ``-1``: to the end); ties go to the lower mean completion time, then
    to the ranking order.
    """
    n = ranked_candidates(S, T, job_rule, buf_job, buf_machine, buf_key, buf_time)
    best_j, best_m, best_value, best_tie = -1, -1, np.inf, np.inf
    if n == 0:
        return best_j, best_m
    prepared = _prepare(S, T, scratch, clairvoyant, objective)
    for i in range(min(n, top_k)):
        value, tie = _prepared_pair_value(S, T, scratch, prepared, buf_job[i], buf_machine[i], rollout_rules,
                                          objective, clairvoyant, horizon)
        if value < best_value or (value == best_value and tie < best_tie):
            best_j, best_m, best_value, best_tie = buf_job[i], buf_machine[i], value, tie
    return best_j, best_m


def with_sampled_future(static: Static, sample: Static) -> Static:
    """``static`` with ``sample``'s jobs appended (ids ``J ..``) and only ``sample``'s events: a sampled future.

    Both must have the same machines. The first ``J`` jobs, their slots and operations (route-change
    ones included) keep their indices, so a state of ``static`` grafts onto the result with
    :func:`graft_future`; the sample's operations, route-change operations and job ids are offset past them.
    The real instance's events are left out: a rollout in the result never sees them.
    """
    if sample.machine_speed.shape != static.machine_speed.shape or not np.allclose(sample.machine_speed,
                                                                                  static.machine_speed):
        raise ValueError(f"a sampled future needs the instance's machines: speeds {sample.machine_speed.tolist()} "
                         f"vs {static.machine_speed.tolist()}")
    num_jobs, num_ops = static.job_release.shape[0], static.op_time.shape[0]
    cat = np.concatenate
    jobs = np.where(sample.event_job >= 0, sample.event_job + num_jobs, -1)
    return read_only(Static(
        machine_speed=static.machine_speed,
        job_release=cat([static.job_release, sample.job_release]),
        job_due=cat([static.job_due, sample.job_due]),
        job_weight=cat([static.job_weight, sample.job_weight]),
        release_order=cat([static.release_order, sample.release_order + num_jobs]),
        job_slot_ptr=cat([static.job_slot_ptr, sample.job_slot_ptr[1:] + static.job_slot_ptr[-1]]),
        job_num_ops=cat([static.job_num_ops, sample.job_num_ops]),
        slot_op=cat([static.slot_op, np.where(sample.slot_op >= 0, sample.slot_op + num_ops, -1)]),
        op_elig_ptr=cat([static.op_elig_ptr, sample.op_elig_ptr[1:] + static.op_elig_ptr[-1]]),
        elig_machine=cat([static.elig_machine, sample.elig_machine]),
        op_time=np.vstack([static.op_time, sample.op_time]),
        op_mean_time=cat([static.op_mean_time, sample.op_mean_time]),
        event_time=sample.event_time,
        event_type=sample.event_type,
        event_machine=sample.event_machine,
        event_job=jobs,
        event_op=sample.event_op,
        event_value=sample.event_value,
        event_is_value=sample.event_is_value,
        event_route_lo=sample.event_route_lo + static.route_ops.shape[0],
        event_route_hi=sample.event_route_hi + static.route_ops.shape[0],
        route_ops=cat([static.route_ops, sample.route_ops + num_ops]),
        policy=static.policy,
        segment_capacity=static.segment_capacity + sample.segment_capacity,
        downtime_capacity=static.downtime_capacity + sample.downtime_capacity,
    ))


@njit(cache=True, _nrt=False)
def graft_future(S, T, F, TF):
    """Make ``TF`` (a state of ``F = with_sampled_future(S, sample)``) the present of state ``T`` in that future.

    The real jobs, machines and logs are copied; jobs not yet released are forgotten (as in
    :func:`forget_future`); of the sample's jobs, those released by now are left out and the others
    arrive at their release times, and of its events only those after now will happen.
    """
    now = T.now[0]
    num_jobs, num_slots = S.job_release.shape[0], S.slot_op.shape[0]
    copy_into(T, TF)  # the present fills the head of every array
    open_jobs = T.counters[C_OPEN_JOBS]
    for j in range(num_jobs):
        if T.job_status[j] == JOB_HIDDEN:
            TF.job_status[j] = JOB_CANCELLED
            open_jobs -= 1
    for j in range(num_jobs, F.job_release.shape[0]):  # the sample's jobs, as reset would leave them
        arrives = F.job_release[j] > now + EPS
        TF.job_status[j] = JOB_HIDDEN if arrives else JOB_CANCELLED
        open_jobs += arrives
        TF.job_pos[j] = 0
        TF.job_num_slots[j] = F.job_num_ops[j]
        TF.job_machine[j] = -1
        TF.job_ready[j] = F.job_release[j]
        TF.job_due[j] = F.job_due[j]
        TF.job_weight[j] = F.job_weight[j]
        TF.job_completion[j] = np.nan
        TF.job_cancelled_at[j] = np.nan
    for s in range(num_slots, F.slot_op.shape[0]):
        TF.slot_op[s] = F.slot_op[s]
        TF.slot_factor[s] = 1.0
        TF.slot_nominal[s] = np.nan
        TF.slot_work[s] = 1.0
        TF.slot_touched[s] = 0
    r = num_jobs  # the real jobs head the release order; the sample's follow, by release
    while r < F.release_order.shape[0] and F.job_release[F.release_order[r]] <= now + EPS:
        r += 1
    TF.counters[C_RELEASE] = r
    e = 0
    while e < F.event_time.shape[0] and F.event_time[e] <= now + EPS:
        e += 1
    TF.counters[C_EVENT] = e
    TF.counters[C_OPEN_JOBS] = open_jobs


@njit(cache=True, _nrt=False)
def sampled_pair_values(S, T, F, TF, scratch, pair_job, pair_machine, count, rollout_rules, objective, out):
    """Objective of each of the first ``count`` pairs (rows) under each rollout rule (columns) in one sampled future.

    ``F`` is ``with_sampled_future(S, sample)``, ``TF`` and ``scratch`` states of ``F``; the present
    is grafted into ``TF`` (:func:`graft_future`), then each pair starts now and the rule finishes the
    schedule, the sample's jobs included. ``T`` is unchanged.
    """
    graft_future(S, T, F, TF)
    for k in range(count):
        for r in range(rollout_rules.shape[0]):
            copy_into(TF, scratch)
            start(F, scratch, pair_job[k], pair_machine[k])
            if advance(F, scratch) != DONE:
                run_rule_to_end(F, scratch, rollout_rules[r, 0], rollout_rules[r, 1])
            out[k, r] = objective_value(F, scratch, objective)
