"""dynasched-gym: Gymnasium environments for the Dynamic Flexible Job Shop Scheduling Problem.

The instance model, loaders, schedule record, metrics and validator import without numba; the
simulator (:mod:`dynasched_gym.core`) is imported on first use.
"""

from __future__ import annotations

from typing import Any

from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import Event, EventType, Instance, Job, Machine
from dynasched_gym.io import load_instance
from dynasched_gym.metrics import METRIC_KEYS, compute_metrics
from dynasched_gym.registration import register_envs
from dynasched_gym.schedule import Schedule

__version__ = "0.1.0"

register_envs()  # the Gymnasium ids DynaSched/*; the envs themselves load on first use

_LAZY = {
    "Simulator": "dynasched_gym.core.simulator",
    "rollout": "dynasched_gym.core.simulator",
    "RULES": "dynasched_gym.core.rules",
    "validate_schedule": "dynasched_gym.validate",
    "ValidationReport": "dynasched_gym.validate",
    "Scenario": "dynasched_gym.generation",
    "calibrate": "dynasched_gym.generation",
    "ssi": "dynasched_gym.generation",
    "tier_pool": "dynasched_gym.generation",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "data":  # the embedded instances: dg.data.path("mk01")
        return importlib.import_module("dynasched_gym.data")
    raise AttributeError(f"module 'dynasched_gym' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the lazy names too: IPython and Jupyter complete dg.<Tab> from dir(), which missed Simulator and rollout
    return sorted({*globals(), *_LAZY, "data"})


__all__ = [
    "METRIC_KEYS",
    "RULES",
    "Event",
    "EventType",
    "Instance",
    "InstanceFormatError",
    "Job",
    "Machine",
    "Scenario",
    "Schedule",
    "Simulator",
    "ValidationReport",
    "calibrate",
    "compute_metrics",
    "load_instance",
    "rollout",
    "ssi",
    "tier_pool",
    "validate_schedule",
]
