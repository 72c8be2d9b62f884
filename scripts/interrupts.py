"""Stop a script cleanly on Ctrl-C or SIGTERM: finished work kept, no traceback, exit status 130.

A scheduler (Slurm at a time limit, ``kill``, a container stop) ends a job with SIGTERM, whose default action
kills Python at once: no ``finally`` runs, so an atomic write in progress leaves its ``.tmp`` file and the
script says nothing. Within :func:`interrupted_exit` SIGTERM raises :class:`KeyboardInterrupt` as Ctrl-C does
(:func:`dynasched_gym.interrupts.sigterm_as_interrupt`, which the ``dynasched-gym`` command uses too), so every
script keeps what it finished, removes its temporary files, says how to resume and exits with 130.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from typing import Any

from dynasched_gym.interrupts import signal_handlers, sigterm_as_interrupt

#: The exit status of an interrupted script (128 + SIGINT, what a shell reports for Ctrl-C).
INTERRUPTED = 130


@contextlib.contextmanager
def interrupted_exit(note: str | None = None) -> Iterator[None]:
    """Run a script's work in this: Ctrl-C or SIGTERM ends it with status 130 and no traceback, printing the
    interrupt's own message (a :class:`KeyboardInterrupt` raised with one, e.g. a resume command), else ``note``
    (what was kept, how to resume; None where the script has said it already)."""
    try:
        with sigterm_as_interrupt():
            yield
    except KeyboardInterrupt as exc:
        message = str(exc) or note
        if message:
            print(f"\ninterrupted: {message}" if not exc.args else f"\n{message}", file=sys.stderr)
        sys.exit(INTERRUPTED)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back within the block and deliver them as it ends, to the handlers they would have met
    (raising :class:`KeyboardInterrupt` where they would have): for a few steps that must be done together, so that
    an interrupt comes before them or after, where the caller's ``try`` knows what was done and undoes or keeps it."""
    held: list[int] = []
    try:
        with signal_handlers(lambda signum, frame: held.append(signum), signal.SIGINT, signal.SIGTERM):
            yield
    finally:
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)


def stop_workers(pool: Any) -> None:
    """Cancel the queued tasks of a ``ProcessPoolExecutor`` and end its worker processes now: the work they are
    doing is not kept anyway, and waiting for them (``shutdown(wait=True)``, also at interpreter exit) kept an
    interrupted run alive until they finished (a Ctrl-C sent to the main process alone, ``kill -INT``), or for
    ever after a second Ctrl-C (the workers left waiting for tasks)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


__all__ = ["INTERRUPTED", "interrupted_exit", "interrupts_held", "signal_handlers", "sigterm_as_interrupt",
           "stop_workers"]
