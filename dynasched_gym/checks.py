"""Argument checks shared by every layer: each error names the argument and the offending value."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """Raise a ValueError naming ``name`` and ``value`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def check_integer(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int``; raise naming argument ``name`` and ``value`` unless it is an integer (NumPy
    integers included, bools not; :class:`TypeError`) >= ``minimum`` (:class:`ValueError`)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_positive(name: str, value: object) -> None:
    """Raise a ValueError naming ``name`` and ``value`` unless ``value`` is a finite real number > 0 (bools not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
