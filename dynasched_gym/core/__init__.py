"""The numba simulation core: compiled instance arrays, kernels, rules and the Python handle.

Layering: this package imports only the instance model and the schedule record, never anything
from the environments, agents or scripts.
"""

from dynasched_gym.core import _numba_cache

_numba_cache.configure()  # before any kernel module is decorated

from dynasched_gym.core.compiled import EPS, State, Static, compile_instance  # noqa: E402
from dynasched_gym.core.simulator import Simulator, rollout  # noqa: E402

compile_note = _numba_cache.compile_note

__all__ = ["EPS", "Simulator", "State", "Static", "compile_instance", "compile_note", "rollout"]
