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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dynasched_gym.core.compiled import (
    C_EVENT,
    C_OPEN_JOBS,
    C_RELEASE,
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_HIDDEN,
)
from dynasched_gym.core.kernels import DONE, advance, copy_into, fill_candidates, start
from dynasched_gym.core.rules import JOB_RULES, job_priority, run_rule

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
        run_rule(S, scratch, job_rule, machine_rule, -1)
    return objective_value(S, scratch, objective)


@njit(cache=True, _nrt=False)
def ranked_candidates(S, T, job_rule, out_job, out_machine, out_key, out_time):
    """Fill the startable pairs sorted by the base rule; returns how many (at most the buffer length)."""
    n = min(fill_candidates(S, T, out_job, out_machine, out_time), out_job.shape[0])
    for i in range(n):
        out_key[i] = job_priority(S, T, out_job[i], job_rule)
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
    status = T.job_status
    now = T.now[0]
    total = 0.0
    completion_sum = 0.0
    count = 0
    for j in range(status.shape[0]):
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
    if count == 0:
        return 0.0, 0.0
    return (total / count if objective == 3 else total), completion_sum / count


@njit(cache=True, _nrt=False)
def pair_value(S, T, scratch, j, m, rollout_rules, objective, clairvoyant, horizon=-1):
    """(best objective, its mean completion time) over rollouts that start pair (j, m) now.

    One rollout per row of ``rollout_rules`` (job rule, machine rule), each in ``scratch`` (a state
    of the same instance) after forgetting the future unless ``clairvoyant``, for at most ``horizon``
    further decisions (``-1``: to the end) and valued by :func:`rollout_value`; ``T`` is unchanged.
    """
    value, tie = np.inf, np.inf
    for r in range(rollout_rules.shape[0]):
        _pair_rollout(S, T, scratch, j, m, rollout_rules[r, 0], rollout_rules[r, 1], clairvoyant, horizon)
        v, t = rollout_value(S, scratch, objective)
        if v < value or (v == value and t < tie):
            value, tie = v, t
    return value, tie


@njit(cache=True, _nrt=False)
def slot_forecasts(S, T, scratch, slot_job, slot_machine, rollout_rules, objective, time_scale, out):
    """Fair rollout forecasts of every offered pair, as observation features (``out``: (K, 2R) float32).

    For slot ``k`` (pair ``slot_job[k]``, ``slot_machine[k]``; ``-1`` marks padding) and rollout
    rule ``r`` (row of ``rollout_rules``), ``v[k, r]`` is the objective when the pair starts now and
    the rule finishes the schedule, the future forgotten (:func:`forget_future`). Column ``2r`` is
    ``(v[k, r] - min over slots of v[:, r]) / time_scale`` (0 for the pair the rule's rollouts like
    best), column ``2r + 1`` is ``(v[k, r] - objective of the jobs completed so far) / time_scale``.
    Padding rows are 0. ``T`` is unchanged.
    """
    out[:] = 0.0
    accrued = objective_value(S, T, objective)
    for r in range(rollout_rules.shape[0]):
        lowest = np.inf
        for k in range(slot_job.shape[0]):
            if slot_job[k] < 0:
                continue
            _pair_rollout(S, T, scratch, slot_job[k], slot_machine[k], rollout_rules[r, 0], rollout_rules[r, 1],
                          False, -1)
            v = objective_value(S, scratch, objective)
            out[k, 2 * r] = v
            out[k, 2 * r + 1] = (v - accrued) / time_scale
            lowest = min(lowest, out[k, 2 * r])  # as stored (float32), so that the best pair's gap is exactly 0
        for k in range(slot_job.shape[0]):
            if slot_job[k] >= 0:
                out[k, 2 * r] = (out[k, 2 * r] - lowest) / time_scale


@njit(cache=True, _nrt=False, inline="always")
def _pair_rollout(S, T, scratch, j, m, job_rule, machine_rule, clairvoyant, horizon):
    """Copy ``T`` into ``scratch``, start pair (j, m) there and go on under the rule for ``horizon`` decisions
    (``-1``: to the end of the schedule)."""
    copy_into(T, scratch)
    if not clairvoyant:
        forget_future(S, scratch)
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
    for i in range(min(n, top_k)):
        value, tie = pair_value(S, T, scratch, buf_job[i], buf_machine[i], rollout_rules, objective, clairvoyant,
                                horizon)
        if value < best_value or (value == best_value and tie < best_tie):
            best_j, best_m, best_value, best_tie = buf_job[i], buf_machine[i], value, tie
    return best_j, best_m
