"""Where the package keeps its caches (compiled kernels, tier pools) when no environment variable says, and the
file lock that processes sharing a file take."""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: see locks_available
    fcntl = None  # type: ignore[assignment]


def locks_available() -> bool:
    """True where :func:`file_lock` works: the platform has POSIX ``fcntl`` (not Windows)."""
    return fcntl is not None


@contextmanager
def file_lock(path: Path, exclusive: bool = True) -> Iterator[None]:
    """Hold an ``fcntl.flock`` on ``path`` (made with its folder if missing, never removed) for the block, exclusive
    or shared; only where :func:`locks_available`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def shared_lock_if_any(path: Path) -> Iterator[None]:
    """Hold a shared ``fcntl.flock`` on ``path`` for the block if it exists and can be opened, else none (a reader
    that may not write: a read-only copy has no writers to wait for; where a writer might be appending, a line it
    has not finished reads as a partial last line, which readers skip)."""
    try:
        lock = open(path)  # flock works on a file opened for reading
    except OSError:
        yield
        return
    with lock:
        if fcntl is None:  # Windows: no writer can share the file safely anyway (locks_available)
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class OnDemandFileHandler(logging.FileHandler):
    """A :class:`logging.FileHandler` that makes its file, and the file's folder if missing, at the first record: the
    scripts' Hydra run folders held an empty ``<script>.log`` (they print rather than log), and a delayed handler
    whose folder was removed meanwhile (an empty run folder) failed at its first record."""

    def __init__(self, filename: str | os.PathLike[str], mode: str = "a", encoding: str | None = None) -> None:
        super().__init__(filename, mode, encoding, delay=True)

    def _open(self) -> Any:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


def user_cache_dir(kind: str, variable: str) -> Path:
    """``$variable`` when set; else ``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/dynasched_gym/<kind>``, or, where that
    cannot be written (a container user whose home is ``/`` or missing), ``<temp dir>/dynasched_gym-<user>/<kind>``
    with a warning naming ``variable``."""
    given = os.environ.get(variable)
    if given:
        return Path(given)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dynasched_gym" / kind
    try:
        base.mkdir(parents=True, exist_ok=True)
        if os.access(base, os.W_OK | os.X_OK):
            return base
        reason = "not writable"
    except OSError as exc:
        reason = str(exc)
    user = os.environ.get("USER") or str(getattr(os, "getuid", lambda: "user")())
    fallback = Path(tempfile.gettempdir()) / f"dynasched_gym-{user}" / kind
    warnings.warn(f"cannot keep the {kind} cache in {base} ({reason}): using {fallback}; set ${variable} to "
                  "choose a directory", RuntimeWarning, stacklevel=2)
    return fallback
