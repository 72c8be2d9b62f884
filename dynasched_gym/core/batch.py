"""Kernels over handles: the fast Python entry of the kernels called once per decision or step (the
:class:`~dynasched_gym.core.simulator.Simulator`'s, the rule and lookahead agents', the forecast wrappers'; the
vector environments have their own, in ``dynasched_gym.envs.dfjsp.kernels``).

Passing ``Static``/``State`` namedtuples from Python costs a numba type check and unboxing of every
array (~13 us per call on mk01 for a (Static, State) pair, more for each further state); a handle, a typed list
holding their tuple, unboxes as one object. A simulation's handle is ``Simulator.handle``, rebuilt whenever its
state is rebound (``Simulator.bind``); a scratch state's is held with it (:class:`ScratchStates`), so no handle can
outlive the arrays it holds.
"""

from __future__ import annotations

from numba import njit
from numba.typed import List

from dynasched_gym.core.compiled import Static, allocate_state
from dynasched_gym.core.kernels import fill_candidates, reset, step
from dynasched_gym.core.lookahead import (
    forecast,
    lookahead_select,
    objective_value,
    pair_value,
    ranked_candidates,
    sampled_pair_values,
    slot_forecasts,
)
from dynasched_gym.core.rules import job_priorities, run_rule, select


@njit(cache=True)
def make_handle(*items):
    """The handle of ``items`` (``Static``/``State`` namedtuples): a typed list holding their tuple. Built here,
    the list's methods compile once per item types and stay in the cache; ``numba.typed.List`` called from Python
    compiles them for the item type in every process (~1 s, ~20 MB)."""
    handle = List()
    handle.append(items)
    return handle


class ScratchStates:
    """Scratch states for in-kernel rollouts, one per index, each rebuilt (with its handle) when its instance
    (``Static``) changes."""

    def __init__(self, count: int = 1) -> None:
        self._held: list[tuple[Static, List] | None] = [None] * count

    def handle(self, static: Static, i: int = 0) -> List:
        """The handle of scratch state ``i``, sized for ``static``."""
        held = self._held[i]
        if held is None or held[0] is not static:
            held = self._held[i] = (static, make_handle(allocate_state(static)))
        return held[1]


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


@njit(cache=True)
def objective_value_one(handle, objective):
    """``lookahead.objective_value`` of the simulation in ``handle``."""
    static, state = handle[0]
    return objective_value(static, state, objective)


@njit(cache=True)
def select_one(handle, job_rule, machine_rule):
    """``rules.select`` in the simulation in ``handle``."""
    static, state = handle[0]
    return select(static, state, job_rule, machine_rule)


@njit(cache=True)
def job_priorities_one(handle, jobs, count, rule, out):
    """``rules.job_priorities`` in the simulation in ``handle``."""
    static, state = handle[0]
    job_priorities(static, state, jobs, count, rule, out)


@njit(cache=True)
def ranked_candidates_one(handle, job_rule, out_job, out_machine, out_key, out_time):
    """``lookahead.ranked_candidates`` of the simulation in ``handle``."""
    static, state = handle[0]
    return ranked_candidates(static, state, job_rule, out_job, out_machine, out_key, out_time)


@njit(cache=True)
def lookahead_select_one(handle, scratch_handle, job_rule, rollout_rules, top_k, objective, clairvoyant, buf_job,
                         buf_machine, buf_key, buf_time, horizon):
    """``lookahead.lookahead_select`` in the simulation in ``handle``, rolling out in the scratch state of
    ``scratch_handle`` (:meth:`ScratchStates.handle`)."""
    static, state = handle[0]
    (scratch,) = scratch_handle[0]
    return lookahead_select(static, state, scratch, job_rule, rollout_rules, top_k, objective, clairvoyant, buf_job,
                            buf_machine, buf_key, buf_time, horizon)


@njit(cache=True)
def pair_value_one(handle, scratch_handle, j, m, rollout_rules, objective, clairvoyant):
    """``lookahead.pair_value`` (rollouts to the end) in the simulation in ``handle``."""
    static, state = handle[0]
    (scratch,) = scratch_handle[0]
    return pair_value(static, state, scratch, j, m, rollout_rules, objective, clairvoyant)


@njit(cache=True)
def forecast_one(handle, scratch_handle, job_rule, machine_rule, objective, clairvoyant):
    """``lookahead.forecast`` from the simulation in ``handle``."""
    static, state = handle[0]
    (scratch,) = scratch_handle[0]
    return forecast(static, state, scratch, job_rule, machine_rule, objective, clairvoyant)


@njit(cache=True)
def slot_forecasts_one(handle, scratch_handle, slot_job, slot_machine, rollout_rules, objective, clairvoyant,
                       time_scale, out):
    """``lookahead.slot_forecasts`` of the simulation in ``handle``."""
    static, state = handle[0]
    (scratch,) = scratch_handle[0]
    slot_forecasts(static, state, scratch, slot_job, slot_machine, rollout_rules, objective, clairvoyant, time_scale,
                   out)


@njit(cache=True)
def sampled_pair_values_one(handle, future_handle, pair_job, pair_machine, count, rollout_rules, objective, out):
    """``lookahead.sampled_pair_values`` of the simulation in ``handle`` in the sampled future of ``future_handle``
    (its (future ``Static``, graft ``State``, scratch ``State``))."""
    static, state = handle[0]
    future, grafted, scratch = future_handle[0]
    sampled_pair_values(static, state, future, grafted, scratch, pair_job, pair_machine, count, rollout_rules,
                        objective, out)
