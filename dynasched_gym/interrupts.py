"""SIGTERM as Ctrl-C, for the commands of the package (``dynasched-gym``) and the scripts (``scripts/interrupts.py``).

A scheduler (Slurm at a time limit, ``kill``, a container stop) ends a process with SIGTERM, whose default action
kills Python at once: no ``finally`` runs, so an atomic write in progress leaves its ``.tmp`` file and the command
says nothing. Within :func:`sigterm_as_interrupt` SIGTERM raises :class:`KeyboardInterrupt` as Ctrl-C does. The
library itself sets no handler: a program that uses it decides what its signals do.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def signal_handlers(handler: Callable[[int, Any], None], *signums: int) -> Iterator[None]:
    """``handler`` for ``signums`` within the block, the previous handlers after it (main thread only: elsewhere
    Python cannot set handlers, and the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in signums}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def sigterm_as_interrupt() -> contextlib.AbstractContextManager[None]:
    """Within the block SIGTERM (a scheduler's, ``kill``'s) raises :class:`KeyboardInterrupt`, as Ctrl-C does."""
    return signal_handlers(_interrupt, signal.SIGTERM)


__all__ = ["signal_handlers", "sigterm_as_interrupt"]
