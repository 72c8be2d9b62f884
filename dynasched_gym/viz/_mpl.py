"""Plumbing shared by the pictures: lazy matplotlib figures, the palette, atomic saving, RGB capture.

Figures are plain :class:`matplotlib.figure.Figure` objects (no pyplot, no global state), so
drawing and saving work headless with the Agg renderer whatever backend is configured (one matplotlib knows:
importing matplotlib fails on an unknown ``$MPLBACKEND``, which is reported as an error naming the variable).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dynasched_gym.checks import check_path, check_positive
from dynasched_gym.errors import InstanceFormatError, needs_extra
from dynasched_gym.instance import atomic_path

#: File types a figure can be saved as (by suffix).
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def blank_figure(fig: Any, width: float, height: float, dpi: float) -> Any:
    """``fig`` cleared (a new ``width`` x ``height`` inch figure when ``None``), with constrained layout.

    Constrained layout keeps the titles and the legends placed above the axes from overlapping.
    """
    check_positive("dpi", dpi)  # 0, NaN or a string failed only when drawn, inside matplotlib
    if fig is None:
        fig = import_matplotlib("matplotlib.figure").Figure(figsize=(width, height), dpi=dpi)
    elif not callable(getattr(fig, "clf", None)):  # it failed as "'int' object has no attribute 'clf'"
        raise TypeError(f"fig must be a matplotlib Figure or None, got {fig!r}")
    fig.clf()
    fig.set_layout_engine("constrained")
    return fig


def import_matplotlib(module: str) -> ModuleType:
    """The matplotlib ``module`` (``matplotlib.pyplot``): a :class:`MissingExtraError` naming the ``viz`` extra
    when matplotlib is not installed, an :class:`InstanceFormatError` naming ``$MPLBACKEND`` when importing
    matplotlib fails on it (it refuses a backend it does not know, whatever the figure is drawn with)."""
    try:
        with needs_extra("viz", "drawing"):
            return importlib.import_module(module)
    except ValueError as exc:
        backend = os.environ.get("MPLBACKEND")
        if not backend:  # matplotlib reads the variable only when it is not empty
            raise
        raise InstanceFormatError("not a backend matplotlib knows: unset it or name one, such as agg",
                                  source="environment variable MPLBACKEND", value=backend) from exc


def plain_text(fig: Any) -> Any:
    """``fig`` with every text drawn as written: names are data, and a ``$`` in one would start TeX math (an
    unmatched one fails the drawing)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
    return fig


#: Colours of jobs, machines and event types: matplotlib's ``tab20`` without its reds and greys,
#: which mark breakdowns, maintenance, cancellations and late jobs.
PALETTE = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#9467bd", "#c5b0d5",
    "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
)


def palette(n: int) -> np.ndarray:
    """``n`` hex colours from :data:`PALETTE`, cycling (no matplotlib needed)."""
    return np.take(PALETTE, np.arange(n) % len(PALETTE))


def check_suffix(path: Path, allowed: tuple[str, ...]) -> str:
    """The lower-case suffix of ``path``; an :class:`InstanceFormatError` naming the file if not ``allowed``."""
    suffix = path.suffix.lower()
    if suffix not in allowed:
        raise InstanceFormatError(f"unsupported output type (use {', '.join(allowed)})", source=str(path),
                                  value=path.suffix)
    return suffix


def figure_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a figure file to write, checked before any drawing: a TypeError unless a path, an
    :class:`InstanceFormatError` naming the file unless its suffix is one of :data:`FIGURE_SUFFIXES`."""
    path = check_path("path", path)
    check_suffix(path, FIGURE_SUFFIXES)
    return path


def save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` atomically as PNG, PDF or SVG (chosen by the suffix of ``path``)."""
    path = figure_path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lower()[1:])
    return path


def figure_rgb(fig: Any) -> np.ndarray:
    """Render ``fig`` with Agg and return its pixels as an ``(height, width, 3)`` uint8 array."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()
