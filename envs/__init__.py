"""Gymnasium environments of the DFJSP (installed as ``dynasched_gym.envs``).

Registered ids (on ``import dynasched_gym``): ``DynaSched/DFJSP-v0``, ``DynaSched/DFJSP-Rules-v0``
and ``DynaSched/FJSP-v0``, each with a vector entry point. The classes load on first use, so
importing this package stays cheap (no numba, no matplotlib).
"""

from __future__ import annotations

import importlib
from typing import Any

from dynasched_gym.registration import ENV_SPECS, register_envs

_LAZY = {
    "DFJSPEnv": "dynasched_gym.envs.dfjsp.env",
    "DFJSPRulesEnv": "dynasched_gym.envs.dfjsp.env",
    "FJSPEnv": "dynasched_gym.envs.dfjsp.env",
    "InvalidActionError": "dynasched_gym.envs.dfjsp.env",
    "DFJSPVectorEnv": "dynasched_gym.envs.dfjsp.vector",
    "DFJSPRulesVectorEnv": "dynasched_gym.envs.dfjsp.vector",
    "FJSPVectorEnv": "dynasched_gym.envs.dfjsp.vector",
    "FlattenDictObservation": "dynasched_gym.envs.wrappers",
    "ObservabilityWrapper": "dynasched_gym.envs.wrappers",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dynasched_gym.envs' has no attribute {name!r}")


__all__ = ["ENV_SPECS", *_LAZY, "register_envs"]
