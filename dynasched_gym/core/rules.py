"""Jitted priority dispatching rules and whole-episode rollouts under a rule.

A rule is a pair: a **job rule** ranks the jobs that have at least one startable pair (lowest
priority value first, ties to the lower job id), then a **machine rule** picks one of that job's
startable machines (ties to the lower machine id). Processing times below are the current
operation's remaining time (work left x time, after processing-time changes).

Job rules:
- ``SPT``: shortest mean remaining processing time of the current operation over its eligible machines.
- ``FIFO``: earliest time the current operation became startable (release, previous completion,
  or preemption).
- ``MWKR``: most work remaining: current operation's mean remaining time plus the mean times of
  every later operation in the job's list.
- ``EDD``: earliest due date in force (jobs without one last).
- ``RANDOM``: a uniformly random startable pair (seeded; ignores the machine rule).

Machine rules:
- ``EET``: earliest end time. Every startable pair starts now, so this is the machine with the
  shortest processing time for the operation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dynasched_gym.core.compiled import C_DECISIONS, JOB_ACTIVE
from dynasched_gym.core.kernels import DECISION, advance, machine_available, nth_candidate, reset, slot_time, start

JOB_RULES = ("SPT", "FIFO", "MWKR", "EDD", "RANDOM")
MACHINE_RULES = ("EET",)
RULE_RANDOM = JOB_RULES.index("RANDOM")
#: Rule names accepted by :func:`dynasched_gym.rollout` ("SPT" means "SPT:EET").
RULES = tuple(f"{j}:{m}" for j in JOB_RULES for m in MACHINE_RULES)


def parse_rule(rule: str) -> tuple[int, int]:
    """``"MWKR"`` or ``"MWKR:EET"`` -> (job rule id, machine rule id)."""
    job, _, machine = rule.upper().partition(":")
    machine = machine or "EET"
    if job not in JOB_RULES or machine not in MACHINE_RULES:
        raise ValueError(f"unknown rule {rule!r}; job rules {JOB_RULES}, machine rules {MACHINE_RULES}")
    return JOB_RULES.index(job), MACHINE_RULES.index(machine)


@njit(cache=True, _nrt=False)
def _mean_time(op_elig_ptr, elig_machine, speed, op_mean_time, slot_op, slot_factor, slot_nominal, slot):
    """Mean processing time of ``slot`` over its eligible machines."""
    op = slot_op[slot]
    nominal = slot_nominal[slot]
    if nominal == nominal:
        total = 0.0
        for i in range(op_elig_ptr[op], op_elig_ptr[op + 1]):
            total += nominal / speed[elig_machine[i]]
        return total / (op_elig_ptr[op + 1] - op_elig_ptr[op]) * slot_factor[slot]
    return op_mean_time[op] * slot_factor[slot]


@njit(cache=True, _nrt=False)
def job_priority(S, T, j, rule):
    """Priority value of job ``j`` under job rule ``rule`` (lower is dispatched first)."""
    if rule == 1:  # FIFO
        return T.job_ready[j]
    if rule == 3:  # EDD
        due = T.job_due[j]
        return due if due == due else np.inf
    elig_ptr = S.op_elig_ptr
    elig_machine = S.elig_machine
    speed = S.machine_speed
    mean_time = S.op_mean_time
    slot_op = T.slot_op
    factor = T.slot_factor
    nominal = T.slot_nominal
    slot = S.job_slot_ptr[j] + T.job_pos[j]
    work = T.slot_work[slot] * _mean_time(elig_ptr, elig_machine, speed, mean_time, slot_op, factor, nominal, slot)
    if rule == 0:  # SPT
        return work
    for s in range(slot + 1, S.job_slot_ptr[j] + T.job_num_slots[j]):  # MWKR
        work += _mean_time(elig_ptr, elig_machine, speed, mean_time, slot_op, factor, nominal, s)
    return -work


@njit(cache=True, _nrt=False)
def _select_random(S, T):
    count = nth_candidate(S, T, -1)[2]
    pick = np.random.randint(count)  # noqa: NPY002 (numba supports only the legacy global stream)
    j, m, _ = nth_candidate(S, T, pick)
    return j, m


@njit(cache=True, _nrt=False)
def select(S, T, job_rule, machine_rule):
    """The (job, machine) pair the rule dispatches now; (-1, -1) when nothing can start.

    ``machine_rule`` is 0 (EET), the only machine rule so far.
    """
    if job_rule == RULE_RANDOM:
        return _select_random(S, T)
    job_status = T.job_status
    job_machine = T.job_machine
    job_pos = T.job_pos
    slot_ptr = S.job_slot_ptr
    slot_op = T.slot_op
    slot_factor = T.slot_factor
    slot_nominal = T.slot_nominal
    elig_ptr = S.op_elig_ptr
    elig_machine = S.elig_machine
    op_time = S.op_time
    speed = S.machine_speed
    machine_job = T.machine_job
    machine_down = T.machine_down
    maintenance = T.machine_maintenance
    best_j, best_m = -1, -1
    best_key = np.inf
    for j in range(job_status.shape[0]):
        if job_status[j] != JOB_ACTIVE or job_machine[j] >= 0:
            continue
        slot = slot_ptr[j] + job_pos[j]
        op = slot_op[slot]
        machine, ptime = -1, np.inf
        for i in range(elig_ptr[op], elig_ptr[op + 1]):
            m = elig_machine[i]
            if machine_available(machine_job, machine_down, maintenance, m):
                p = slot_time(op_time, speed, slot_op, slot_factor, slot_nominal, slot, m)
                if p < ptime or (p == ptime and m < machine):
                    machine, ptime = m, p
        if machine < 0:
            continue
        key = job_priority(S, T, j, job_rule)
        if best_j < 0 or key < best_key:
            best_j, best_m, best_key = j, machine, key
    return best_j, best_m


@njit(cache=True, _nrt=False)
def run_rule(S, T, job_rule, machine_rule, max_decisions):
    """Dispatch with the rule until the episode ends (or ``max_decisions`` >= 0 decisions)."""
    code = DECISION
    n = 0
    while code == DECISION and n != max_decisions:
        j, m = select(S, T, job_rule, machine_rule)
        start(S, T, j, m)
        code = advance(S, T)
        n += 1
    return code


@njit(cache=True, _nrt=False)
def seed_rng(seed):
    """Seed the kernels' random stream (used by the RANDOM rule)."""
    np.random.seed(seed)  # noqa: NPY002 (numba supports only the legacy global stream)


@njit(cache=True, _nrt=False)
def run_episodes(S, T, job_rule, machine_rule, episodes):
    """Play ``episodes`` full episodes from reset under one rule; returns the total decisions."""
    total = 0
    for _ in range(episodes):
        reset(S, T)
        run_rule(S, T, job_rule, machine_rule, -1)
        total += T.counters[C_DECISIONS]
    return total
