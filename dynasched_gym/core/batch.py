"""Batch kernels: one numba call steps many independent simulations (vector environments)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, typed

from dynasched_gym.core.compiled import State, Static
from dynasched_gym.core.kernels import reset, step
from dynasched_gym.core.rules import run_rule


def make_batch(statics: Sequence[Static], states: Sequence[State]) -> tuple[typed.List, typed.List]:
    """Pack per-simulation arrays into the typed lists the batch kernels take (no copies)."""
    return typed.List(statics), typed.List(states)


@njit(cache=True)
def reset_batch(statics, states, out_code):
    """Reset every simulation; ``out_code[i]`` gets its return code."""
    for i in range(len(states)):
        out_code[i] = reset(statics[i], states[i])


@njit(cache=True)
def step_batch(statics, states, jobs, machines, out_code):
    """Step simulation ``i`` with the pair (jobs[i], machines[i]); negative jobs[i] skips it."""
    for i in range(len(states)):
        if jobs[i] >= 0:
            out_code[i] = step(statics[i], states[i], jobs[i], machines[i])


@njit(cache=True)
def run_rule_batch(statics, states, job_rule, machine_rule, out_code):
    """Roll every simulation out to the end under one rule."""
    for i in range(len(states)):
        out_code[i] = run_rule(statics[i], states[i], job_rule, machine_rule, -1)


def new_codes(n: int) -> np.ndarray:
    """A return-code buffer for ``n`` simulations."""
    return np.zeros(n, dtype=np.int64)
