"""Kernels over a typed list holding one simulation: the fast Python entry of
:class:`~dynasched_gym.core.simulator.Simulator` (the vector environments have their own, in
``dynasched_gym.envs.dfjsp.kernels``).

Passing ``Static``/``State`` namedtuples from Python costs a numba type check and unboxing of every
array (~5 us per call); a typed list of them unboxes as one object (~1.5 us).
"""

from __future__ import annotations

from numba import njit
from numba.typed import List

from dynasched_gym.core.kernels import fill_candidates, reset, step
from dynasched_gym.core.rules import run_rule


@njit(cache=True)
def make_handle(static, state):
    """The handle of one simulation: a typed list holding its (Static, State) pair. Built here, the list's
    methods compile once and stay in the cache; ``numba.typed.List`` called from Python compiles them for this
    item type in every process (~1 s, ~20 MB)."""
    handle = List()
    handle.append((static, state))
    return handle


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
