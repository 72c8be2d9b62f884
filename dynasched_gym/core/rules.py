"""Jitted priority dispatching rules and whole-episode rollouts under a rule.

A rule is a pair ``JOB:MACHINE``. Among the jobs that have at least one startable pair now, the
**job rule** picks the job with the lowest priority value; the **machine rule** then picks one of
that job's startable machines. Ties go to the lower job id (machine id), or, with random
tie-breaking, uniformly among the tied (seeded by :func:`seed_rng`). With *emergency first*, jobs
whose weight in force is at least :data:`EMERGENCY_WEIGHT` come before all others.

Quantities (all as known now; "remaining" counts the unfinished work left in the current operation):
``p`` = remaining processing time of the job's current operation, its mean over the eligible
machines; ``W`` = work remaining = ``p`` + the mean times of the job's later operations;
``n`` = operations remaining including the current one; ``d`` = due date in force (jobs without one
rank last wherever ``d`` is used); ``w`` = weight in force; ``r`` = the time the current operation
became startable (release, previous completion or preemption; a REWORK or ROUTE_CHANGE that puts another
operation in place of the waiting one leaves it: the job has waited since then); ``t`` = now.

Job rules (priority value, lowest first):

| rule | value | | rule | value |
|---|---|---|---|---|
| ``SPT`` | p | | ``LPT`` | -p |
| ``FIFO`` | r | | ``LIFO`` | -r |
| ``MWKR`` | -W | | ``LWKR`` | W |
| ``MOPNR`` | -n | | ``LOPNR`` | n |
| ``EDD`` | d | | ``CR`` | (d - t) / W |
| ``SLACK`` | d - t - W | | ``WSPT`` | -w / p |
| ``ATC`` | -(w / p) exp(-max(0, d - p - t) / (K p_mean)), K = 2 | | ``RANDOM`` | a uniform startable pair |

``p_mean`` is the mean p of the jobs waiting now (released, open, not running: the queue of the classic ATC
index), so the rule reads nothing of jobs still to come; ``ATC`` ranks jobs without a due date by
``WSPT`` below every job with one. ``RANDOM`` ignores the machine rule.

Machine rules (among the chosen job's startable machines):
- ``EET``: earliest end time. Every startable pair starts now, so this is the machine with the
  shortest processing time for the operation (the same choice as ``SPT`` here; both names exist
  because rule libraries name it both ways).
- ``SPT``: shortest processing time of the operation on the machine.
- ``LIT``: longest idle: the machine that became idle (and up) earliest.
- ``LWL``: least workload: the machine with the least processing time started on it so far (a segment cut
  by a breakdown or abort counts what it performed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import _helperlib, njit

from dynasched_gym.checks import is_integer
from dynasched_gym.core.compiled import C_ACTIVE_END, C_ACTIVE_FIRST, C_DECISIONS, JOB_ACTIVE
from dynasched_gym.core.kernels import DECISION, advance, machine_available, nth_candidate, reset, slot_time, start
from dynasched_gym.instance import EMERGENCY_WEIGHT

JOB_RULES = ("SPT", "LPT", "FIFO", "LIFO", "MWKR", "LWKR", "MOPNR", "LOPNR", "EDD", "CR", "SLACK", "ATC", "WSPT",
             "RANDOM")
MACHINE_RULES = ("EET", "SPT", "LIT", "LWL")
RULE_RANDOM = JOB_RULES.index("RANDOM")
#: Every ``JOB:MACHINE`` rule name :func:`dynasched_gym.rollout` accepts ("SPT" alone means "SPT:EET").
RULES = tuple(f"{j}:{m}" for j in JOB_RULES for m in MACHINE_RULES)
#: The composite rules of the rule-selection MDP (``DynaSched/DFJSP-Rules-v0``): action i plays
#: ``COMPOSITE_RULES[i]``, i.e. job rule ``COMPOSITE_TABLE[i, 0]`` with machine rule ``COMPOSITE_TABLE[i, 1]``.
COMPOSITE_RULES = ("SPT:EET", "MWKR:EET", "MOPNR:EET", "FIFO:EET", "EDD:EET", "CR:EET", "ATC:EET", "WSPT:LWL",
                   "MWKR:LWL", "RANDOM:EET")
COMPOSITE_TABLE = np.array([[JOB_RULES.index(r.split(":")[0]), MACHINE_RULES.index(r.split(":")[1])]
                            for r in COMPOSITE_RULES], dtype=np.int64)
#: Flags or-ed into a job-rule code (see :func:`parse_rule`).
EMERGENCY_FIRST = 1 << 8
RANDOM_TIES = 1 << 9
_BASE = 0xFF
_ATC_K = 2.0
(_SPT, _LPT, _FIFO, _LIFO, _MWKR, _LWKR, _MOPNR, _LOPNR, _EDD, _CR, _SLACK, _ATC, _WSPT) = range(13)


def rule_name(rule: str, alone: bool = False) -> str:
    """The one spelling of a rule name, as agents' configs hold it (so that ``"mwkr"``, ``"MWKR"`` and
    ``"MWKR:EET"`` hash as one agent): upper case, ``JOB:MACHINE``, a job rule alone taking ``EET``. With
    ``alone``, a job rule alone stays alone: a rollout or pruning rule, whose machine rule is another rule's.
    A colon with no machine rule after it (``"SPT:"``) stays as given, for :func:`parse_rule` to refuse.
    The names are not checked here (:func:`parse_rule` does)."""
    job, colon, machine = rule.upper().partition(":")
    return job if alone and not colon else f"{job}:{machine if colon else 'EET'}"


def parse_rule(rule: str, emergency_first: bool = False, random_ties: bool = False) -> tuple[int, int]:
    """``"MWKR"`` or ``"MWKR:LWL"`` -> (job rule code, machine rule id), with the option flags set."""
    if not isinstance(rule, str):
        raise TypeError(f"a rule is a name such as 'MWKR' or 'MWKR:LWL', got {rule!r}")
    job, _, machine = rule_name(rule).partition(":")
    if job not in JOB_RULES or machine not in MACHINE_RULES:
        raise ValueError(f"unknown rule {rule!r}; job rules {JOB_RULES}, machine rules {MACHINE_RULES}")
    if job == "RANDOM" and (emergency_first or random_ties):  # it draws among all candidates: a flag is ignored
        flag = "emergency_first" if emergency_first else "random_ties"
        raise ValueError(f"{flag} does not apply to {rule!r}: RANDOM draws uniformly among all candidates")
    code = JOB_RULES.index(job) | (EMERGENCY_FIRST if emergency_first else 0) | (RANDOM_TIES if random_ties else 0)
    return code, MACHINE_RULES.index(machine)


def parse_deterministic_rule(rule: str, use: str) -> tuple[int, int]:
    """:func:`parse_rule` of a rule that ranks candidates or rolls episodes out where results must repeat (``use``
    says where, for the error): ``RANDOM`` is refused, having no ranking and drawing from a shared stream."""
    codes = parse_rule(rule)
    if is_random_rule(codes[0]):
        raise ValueError(f"{use} take deterministic rules only (RANDOM has no ranking, and its rollouts would "
                         f"draw from the kernels' shared random stream), got {rule!r}")
    return codes


def rule_list(rules: str | Sequence[str]) -> tuple[str, ...]:
    """A rules argument as a tuple: one rule name (a string is not split into letters) or several."""
    if isinstance(rules, str):
        return (rules,)
    if not isinstance(rules, Sequence) or not all(isinstance(rule, str) for rule in rules):
        raise TypeError(f"rules are one rule name or a sequence of them, such as ['MWKR:EET', 'EDD:LWL'], got "
                        f"{rules!r}")
    return tuple(rules)


@njit(cache=True, _nrt=False)
def _mean_time(S, T, slot):
    """Mean processing time of ``slot`` over its eligible machines."""
    op = T.slot_op[slot]
    lo, hi = S.op_elig_ptr[op], S.op_elig_ptr[op + 1]
    nominal = T.slot_nominal[slot]
    if nominal == nominal:
        total = 0.0
        for i in range(lo, hi):
            total += nominal / S.machine_speed[S.elig_machine[i]]
        return total / (hi - lo) * T.slot_factor[slot]
    return S.op_mean_time[op] * T.slot_factor[slot]


@njit(cache=True, _nrt=False)
def _current_time(S, T, j):
    """p of job ``j``: its current operation's work left x its mean time over the eligible machines."""
    slot = S.job_slot_ptr[j] + T.job_pos[j]
    return T.slot_work[slot] * _mean_time(S, T, slot)


@njit(cache=True, _nrt=False)
def atc_scale(S, T):
    """ATC's ``p_mean``: the mean p of the jobs waiting now (released, open, not running); NaN when none waits.
    What waits now is the present only, so the rule reads nothing of jobs still to come."""
    total, count = 0.0, 0
    for j in range(T.counters[C_ACTIVE_FIRST], T.counters[C_ACTIVE_END]):
        if T.job_status[j] == JOB_ACTIVE and T.job_machine[j] < 0:
            total += _current_time(S, T, j)
            count += 1
    return total / count if count > 0 else np.nan


@njit(cache=True, _nrt=False)
def job_priority(S, T, j, rule):
    """Priority value of job ``j`` under job rule ``rule`` (lowest is dispatched first; flags ignored). ``RANDOM``
    ranks nothing: callers draw a pair instead (:func:`random_index`)."""
    return _priority(S, T, j, rule & _BASE, atc_scale(S, T) if rule & _BASE == _ATC else np.nan)


@njit(cache=True, _nrt=False)
def job_priorities(S, T, jobs, count, rule, out):
    """:func:`job_priority` of ``jobs[i]`` into ``out[i]`` for ``i < count``, ATC's ``p_mean`` computed once."""
    base = rule & _BASE
    p_mean = atc_scale(S, T) if base == _ATC else np.nan
    for i in range(count):
        out[i] = _priority(S, T, jobs[i], base, p_mean)


@njit(cache=True, _nrt=False)
def _priority(S, T, j, rule, p_mean):
    """:func:`job_priority` of base rule ``rule``, with ATC's ``p_mean`` (:func:`atc_scale`) given."""
    if rule == _FIFO:
        return T.job_ready[j]
    if rule == _LIFO:
        return -T.job_ready[j]
    base = S.job_slot_ptr[j]
    remaining_ops = T.job_num_slots[j] - T.job_pos[j]
    if rule == _MOPNR:
        return -float(remaining_ops)
    if rule == _LOPNR:
        return float(remaining_ops)
    due = T.job_due[j]
    if rule == _EDD:
        return due if due == due else np.inf
    p = _current_time(S, T, j)
    if rule == _SPT:
        return p
    if rule == _LPT:
        return -p
    weight = T.job_weight[j]
    if rule == _WSPT:
        return -weight / p
    now = T.now[0]
    if rule == _ATC:
        if due != due:  # after every job with a due date (whose values are <= 0), in WSPT's order: p / w, as
            return p / weight if weight > 0.0 else np.inf  # 1 / (1 + w / p) tied every w / p below 1e-16 at 1.0
        return -(weight / p) * np.exp(-max(0.0, due - p - now) / (_ATC_K * p_mean))
    work = p
    for s in range(base + T.job_pos[j] + 1, base + T.job_num_slots[j]):
        work += _mean_time(S, T, s)
    if rule == _MWKR:
        return -work
    if rule == _LWKR:
        return work
    if due != due:
        return np.inf
    if rule == _CR:
        return (due - now) / work
    return due - now - work  # SLACK


@njit(cache=True, _nrt=False)
def random_index(count):
    """A uniform index in ``[0, count)`` from the kernels' random stream (seeded by :func:`seed_rng`)."""
    return np.random.randint(count)  # noqa: NPY002 (numba supports only the legacy global stream)


def is_random_rule(job_rule: int) -> bool:
    """Whether the job rule code (flags included) is ``RANDOM``."""
    return job_rule & _BASE == RULE_RANDOM


@njit(cache=True, _nrt=False)
def _select_random(S, T):
    count = nth_candidate(S, T, -1)[2]
    if count == 0:  # nothing can start: (-1, -1), as for the other rules (randint(0) raised)
        return -1, -1
    pick = random_index(count)
    j, m, _ = nth_candidate(S, T, pick)
    return j, m


@njit(cache=True, _nrt=False)
def _machine_key(T, slot_p, m, machine_rule):
    if machine_rule == 2:  # LIT
        return T.machine_free_since[m]
    if machine_rule == 3:  # LWL
        return T.machine_workload[m]
    return slot_p  # EET, SPT


@njit(cache=True, _nrt=False)
def _wins(key, best_key, ties, random_ties, lower_id):
    """Does ``key`` replace ``best_key``? Ties go to the lower id, or (random) each with 1/count chance."""
    if key < best_key:
        return True, 1
    if key == best_key:
        if random_ties:
            ties += 1
            return np.random.randint(ties) == 0, ties  # noqa: NPY002
        return lower_id, ties
    return False, ties


# Every index select takes is >= 0, but LLVM cannot prove it of one read from an array (the window's first job, a
# slot, a machine): numba then adds a negative-index wraparound fixup (sign, mask, add) to each access through it, and
# the masks live across the machine loop cost registers (spills, moves) there. ``x & _NONNEG`` changes no such index
# and proves it, so the fixups go. range(shape[0]) proved it for j by starting at 0; the window's start does not.
_NONNEG = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True, _nrt=False)
def select(S, T, job_rule, machine_rule):
    """The (job, machine) pair the rule dispatches now; (-1, -1) when nothing can start."""
    if job_rule & _BASE == RULE_RANDOM:
        return _select_random(S, T)
    emergency_first = (job_rule & EMERGENCY_FIRST) != 0
    random_ties = (job_rule & RANDOM_TIES) != 0
    job_status = T.job_status
    job_machine = T.job_machine
    job_pos = T.job_pos
    weight = T.job_weight
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
    best_key, best_rank, job_ties = np.inf, 1, 0
    base_rule = job_rule & _BASE
    p_mean = atc_scale(S, T) if base_rule == _ATC else np.nan  # once per decision, not per job
    for j in range(T.counters[C_ACTIVE_FIRST], T.counters[C_ACTIVE_END]):
        j &= _NONNEG  # no wraparound fixups (see _NONNEG)
        if job_status[j] != JOB_ACTIVE or job_machine[j] >= 0:
            continue
        slot = (slot_ptr[j] + job_pos[j]) & _NONNEG
        op = slot_op[slot]
        machine, machine_key, machine_ties = -1, np.inf, 0
        for i in range(elig_ptr[op], elig_ptr[op + 1]):
            m = elig_machine[i] & _NONNEG
            if machine_available(machine_job, machine_down, maintenance, m):
                key = _machine_key(T, slot_time(op_time, speed, slot_op, slot_factor, slot_nominal, slot, m), m,
                                   machine_rule)
                if machine < 0:
                    machine, machine_key, machine_ties = m, key, 1
                else:
                    won, machine_ties = _wins(key, machine_key, machine_ties, random_ties, m < machine)
                    if won:
                        machine, machine_key = m, key
        if machine < 0:
            continue
        rank = 0 if emergency_first and weight[j] >= EMERGENCY_WEIGHT else 1
        key = _priority(S, T, j, base_rule, p_mean)
        if best_j < 0 or rank < best_rank:
            best_j, best_m, best_key, best_rank, job_ties = j, machine, key, rank, 1
        elif rank == best_rank:
            won, job_ties = _wins(key, best_key, job_ties, random_ties, False)  # jobs come in id order
            if won:
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


@njit(cache=True, _nrt=False, inline="always")
def run_rule_to_end(S, T, job_rule, machine_rule):
    """Dispatch with the rule until the episode ends."""
    # A constant -1 would be typed Literal[int](-1), and numba would compile run_rule once more for it.
    return run_rule(S, T, job_rule, machine_rule, np.int64(-1))


@njit(cache=True, _nrt=False)
def _seed_stream(seed):
    np.random.seed(seed)  # noqa: NPY002 (numba supports only the legacy global stream)


def check_seed(seed: Any) -> int:
    """``seed`` as an ``int`` if it is a seed of the kernels' random stream, an integer in ``[0, 2**32)``; else a
    TypeError (no integer) or ValueError (out of range: numba would reduce a larger seed modulo 2**32)."""
    if not is_integer(seed):
        raise TypeError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    return int(seed)


def seed_rng(seed: int) -> None:
    """Seed the kernels' random stream (the RANDOM rule and random ties); ``seed`` as in :func:`check_seed`."""
    _seed_stream(check_seed(seed))


def rng_state() -> tuple[int, list[int]]:
    """The kernels' random stream as it stands (numba's Mersenne Twister of this thread), for :func:`set_rng_state`.

    The stream is one per thread, shared by every caller: an agent that draws from it between another's draws
    keeps its own stream by saving it after its draws and setting it back before them.
    """
    return _helperlib.rnd_get_state(_helperlib.rnd_get_np_state_ptr())


def set_rng_state(state: tuple[int, list[int]]) -> None:
    """Set the kernels' random stream to ``state`` (from :func:`rng_state`)."""
    _helperlib.rnd_set_state(_helperlib.rnd_get_np_state_ptr(), state)


@njit(cache=True, _nrt=False)
def run_episodes(S, T, job_rule, machine_rule, episodes):
    """Play ``episodes`` full episodes from reset under one rule; returns the total decisions."""
    total = 0
    for _ in range(episodes):
        reset(S, T)
        run_rule_to_end(S, T, job_rule, machine_rule)
        total += T.counters[C_DECISIONS]
    return total
