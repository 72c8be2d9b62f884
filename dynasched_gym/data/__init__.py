"""Embedded default instances (see README.md in this folder)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent

#: Short names of the embedded instances -> paths relative to this folder.
EMBEDDED = {
    **{f"mk{i:02d}": f"fjsp/mk{i:02d}.fjs" for i in range(1, 11)},
    "ta01": "jssp/ta01.txt",
    "dsbx-medium": "dsbx/grid-medium-rep01",
}


def path(name: str) -> Path:
    """Path of the embedded instance ``name`` (a key of :data:`EMBEDDED`)."""
    if not isinstance(name, str):
        raise TypeError(f"an embedded instance's name is a string, one of {', '.join(EMBEDDED)}; got {name!r}")
    if name not in EMBEDDED:
        raise KeyError(f"no embedded instance {name!r}; known: {', '.join(EMBEDDED)}")
    return DATA_DIR / EMBEDDED[name]
