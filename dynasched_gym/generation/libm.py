"""Elementwise ``exp``, ``log``, ``log1p``, ``cos`` and ``power`` through the C library, for generation and the SSI.

NumPy's ufuncs for these pick SIMD code by CPU when NumPy starts, and the AVX-512 code rounds the last bit of
some results otherwise than the AVX2 code: the same (tier, size, seed) gave other instance bytes on a CPU without
AVX-512 (22 of 24 pool members differed). The C library's functions (Python's :mod:`math`) give one result on
every x86-64 CPU with AVX2 and FMA (glibc chooses one variant for all of them), as NumPy's random streams do,
which call the same functions. Basic arithmetic, ``sqrt`` and squaring are exactly rounded everywhere and stay
NumPy's. The arrays here are small (per job, operation or time bin), so a Python-level loop costs little.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import repeat

import numpy as np


def _elementwise(function: Callable[..., float], *arrays: np.ndarray | float) -> np.ndarray:
    """``function`` applied to every element of the broadcast ``arrays``, as a float64 array of their shape."""
    given = [np.asarray(a, dtype=np.float64) for a in arrays]
    shape = np.broadcast_shapes(*(a.shape for a in given))
    # a scalar argument (an exponent) is repeated, not broadcast to a list of copies
    flat = [repeat(float(a)) if a.ndim == 0 else np.broadcast_to(a, shape).ravel().tolist() for a in given]
    return np.fromiter(map(function, *flat), dtype=np.float64, count=math.prod(shape)).reshape(shape)


def exp(x: np.ndarray | float) -> np.ndarray:
    """e**x elementwise."""
    return _elementwise(math.exp, x)


def log(x: np.ndarray | float) -> np.ndarray:
    """Natural logarithm elementwise (x > 0)."""
    return _elementwise(math.log, x)


def log1p(x: np.ndarray | float) -> np.ndarray:
    """log(1 + x) elementwise (x > -1)."""
    return _elementwise(math.log1p, x)


def cos(x: np.ndarray | float) -> np.ndarray:
    """Cosine elementwise (radians)."""
    return _elementwise(math.cos, x)


def power(base: np.ndarray | float, exponent: np.ndarray | float) -> np.ndarray:
    """base**exponent elementwise (base > 0, or an integral exponent)."""
    return _elementwise(math.pow, base, exponent)


__all__ = ["cos", "exp", "log", "log1p", "power"]
