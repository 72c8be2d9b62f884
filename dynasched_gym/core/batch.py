"""Kernels over typed lists of simulations: batches (vector environments) and the fast Python entry.

Passing ``Static``/``State`` namedtuples from Python costs a numba type check and unboxing of every
array (~5 us per call); a typed list of them unboxes as one object (~1.5 us). So batches, and the
single-simulation :class:`~dynasched_gym.core.simulator.Simulator`, go through these kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

from numba import njit, typed
from numba.typed import List

from dynasched_gym.core.compiled import State, Static
from dynasched_gym.core.kernels import fill_candidates, reset, step
from dynasched_gym.core.rules import run_rule


def make_batch(statics: Sequence[Static], states: Sequence[State]) -> tuple[typed.List, typed.List]:
    """Pack per-simulation arrays into the typed lists the batch kernels take (no copies)."""
    return typed.List(statics), typed.List(states)


@njit(cache=True)
def make_handle(static, state):
    """The handle of one simulation: a typed list holding its (Static, State) pair. Built here, the list's
    methods compile once and stay in the cache; ``numba.typed.List`` called from Python compiles them for this
    item type in every process (~1 s, ~20 MB)."""
    handle = List()
    handle.append((static, state))
    return handle


@njit(cache=True)
def reset_batch(statics, states, out_code):
    """Reset every simulation; ``out_code[i]`` gets its return code."""
    for i in range(len(states)):
        out_code[i] = reset(statics[i], states[i])


@njit(cache=True)
def step_batch(statics, states, jobs, machines, out_code):
    """Step simulation ``i`` with the pair (jobs[i], machines[i]); negative jobs[i] skips it (out_code[i] unchanged)."""
    for i in range(len(states)):
        if jobs[i] >= 0:
            out_code[i] = step(statics[i], states[i], jobs[i], machines[i])


@njit(cache=True)
def run_rule_batch(statics, states, job_rule, machine_rule, out_code):
    """Roll every simulation out to the end under one rule."""
    for i in range(len(states)):
        out_code[i] = run_rule(statics[i], states[i], job_rule, machine_rule, -1)


@njit(cache=True)
def reset_one(handle):
    """Reset the single simulation in ``handle`` (a typed list holding one (Static, State) pair)."""
    static, state = handle[0]
    return reset(static, state)


@njit(cache=True)
def step_one(handle, job, machine):
    """Step the single simulation in ``handle``."""
    static, state = handle[0]
    return step(static, state, job, machine)


@njit(cache=True)
def candidates_one(handle, out_job, out_machine, out_time):
    """Candidates of the single simulation in ``handle`` (see ``kernels.fill_candidates``)."""
    static, state = handle[0]
    return fill_candidates(static, state, out_job, out_machine, out_time)


@njit(cache=True)
def run_rule_one(handle, job_rule, machine_rule, max_decisions):
    """Roll the single simulation in ``handle`` out under a rule."""
    static, state = handle[0]
    return run_rule(static, state, job_rule, machine_rule, max_decisions)
