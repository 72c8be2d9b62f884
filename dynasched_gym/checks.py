"""Argument checks shared by every layer: each error names the argument and the offending value."""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def is_integer(value: object) -> bool:
    """``value`` is a Python or NumPy integer; bools are not (``True`` is no count or id)."""
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def is_real(value: object) -> bool:
    """``value`` is a Python or NumPy integer or float; bools are not (``True`` is no time or rate)."""
    return (type(value) is float or type(value) is int  # the common case first: loaders call it per field
            or (isinstance(value, numbers.Real) and not isinstance(value, bool)))


def is_finite_real(value: object) -> bool:
    """``value`` is a finite real number (:func:`is_real`; an integer beyond the float range is not)."""
    try:
        return is_real(value) and math.isfinite(value)  # type: ignore[arg-type]
    except OverflowError:
        return False


#: Why :func:`holds_exactly` refused a number (the loaders' message).
INEXACT_INTEGER = "an integer that float64 cannot hold exactly (above 2**53)"


def holds_exactly(value: float | int) -> bool:
    """A finite real ``value`` is a float64 value as given: False for an integer above 2**53 that ``float()``
    would round (JSON and text formats can write one)."""
    # int(): NumPy compares np.int64(2**53 + 1) with its rounded float as equal; Python compares exactly
    return type(value) is float or not is_integer(value) or float(value) == int(value)


def as_list(value: Any) -> list[Any]:
    """A setting that is one item or a list of them, as a list (``tiers=easy`` is ``[easy]``, not its letters)."""
    return [item for _, item in named_items("", value)]


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """Raise naming ``name`` and ``value`` unless ``value`` is one of ``choices``: a TypeError for a value that is no
    string (an array would not even compare), a ValueError for another string, with the nearest choice if one is
    close."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {tuple(choices)}, got {type(value).__name__}: {value!r:.80}")
    if value not in choices:
        close = difflib.get_close_matches(value, choices, n=1) or [c for c in choices if c.lower() == value.lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}{hint}")


def keyword_arguments(cls: type) -> list[str]:
    """The named arguments of ``cls``'s constructor (not ``self``, nor a ``**kwargs`` it passes on)."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in parameters if p.name != "self" and p.kind != inspect.Parameter.VAR_KEYWORD]


def check_arguments(owner: str, kwargs: Mapping[str, Any], arguments: Sequence[str], docs: str) -> None:
    """Raise a TypeError naming the first of ``kwargs`` that is none of ``arguments`` (those of ``owner``), the
    nearest one and all of them, and ``docs``, where they are described: Python's own error names none of them."""
    for name in kwargs:
        if name not in arguments:
            close = difflib.get_close_matches(name, arguments, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{owner} got an unknown argument {name!r}{hint}; its arguments are {', '.join(arguments)} "
                            f"({docs})")


def named_items(name: str, value: Any) -> list[tuple[str, Any]]:
    """The items of the setting ``name`` (one item or a list, as :func:`as_list`), each with the name its errors
    give: ``name`` for an item given alone, ``name[i]`` for the i-th of a list."""
    if (isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable)  # 1.5 or {a: 1}: one item
            or (isinstance(value, np.ndarray) and value.ndim == 0)):
        return [(name, value)]
    return [(f"{name}[{i}]", item) for i, item in enumerate(value)]


def check_choices(name: str, value: Any, choices: Sequence[str]) -> list[Any]:
    """The setting ``name`` (one name or a list) as a list, each item one of ``choices`` and none given twice (a
    ValueError names the item, as :func:`named_items`, and its value: ``tiers=[easy,easy]`` played every episode twice,
    ``only=[kernel,kernel]`` measured the section twice)."""
    items = named_items(name, value)
    first: dict[Any, str] = {}
    for item_name, item in items:
        check_choice(item_name, item, choices)
        if item in first:
            raise ValueError(f"{item_name} repeats {item!r} ({first[item]}): name each once")
        first[item] = item_name
    return [item for _, item in items]


def check_integer(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an ``int``; raise naming argument ``name`` and ``value`` unless it is an integer (NumPy
    integers included, bools not; :class:`TypeError`) >= ``minimum`` and, if given, <= ``maximum``
    (:class:`ValueError`)."""
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value!r}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a ``bool``; raise a TypeError naming ``name`` and ``value`` unless it is ``True`` or ``False``
    (NumPy's too; a string such as ``"maybe"`` or ``"false"`` would otherwise be read as true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be true or false, got {value!r}")
    return bool(value)


def check_path(name: str, value: Any, hint: str = "") -> Path:
    """``value`` as a :class:`~pathlib.Path`; a TypeError naming ``name`` and ``value`` (with ``hint``) unless it is
    a ``str`` or ``os.PathLike`` (pathlib's own error named neither)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike){hint}, got {type(value).__name__}: {value!r:.80}")
    if "\x00" in os.fspath(value):  # the OS's own error ("embedded null byte") names no argument
        raise ValueError(f"{name} must be a path without NUL characters, got {value!r:.80}")
    return Path(value)


def check_positive(name: str, value: object) -> None:
    """Raise naming ``name`` and ``value`` unless ``value`` is a finite real number > 0: a TypeError for no real
    number (bools are none), a ValueError for one out of range."""
    check_real(name, value, 0.0, open_low=True)


def in_interval(value: float, low: float, high: float, low_open: bool = False, high_open: bool = False) -> bool:
    """``value`` lies in the interval from ``low`` to ``high``, each end closed unless said open."""
    return (value > low if low_open else value >= low) and (value < high if high_open else value <= high)


def check_real(name: str, value: Any, low: float, high: float = math.inf, open_low: bool = False) -> float:
    """``value`` as a ``float`` (so that ``1`` and ``1.0`` configure, and hash, alike); raise naming ``name`` and
    ``value`` unless it is a finite number in [low, high] ((low, high] with ``open_low``): a TypeError for no real
    number (bools are none), a ValueError for a non-finite one or one out of range."""
    if not is_finite_real(value) or not in_interval(value, low, high, low_open=open_low):
        bound = f"in {'(' if open_low else '['}{low:g}, {high:g}]" if high < math.inf else \
            f"{'>' if open_low else '>='} {low:g}"
        raise (ValueError if is_real(value) else TypeError)(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)
