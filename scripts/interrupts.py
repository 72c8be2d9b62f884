"""Stop a script cleanly on Ctrl-C or SIGTERM: finished work kept, no traceback, exit status 130.

A scheduler (Slurm at a time limit, ``kill``, a container stop) ends a job with SIGTERM, whose default action
kills Python at once: no ``finally`` runs, so an atomic write in progress leaves its ``.tmp`` file and the
script says nothing. Within :func:`interrupted_exit` SIGTERM raises :class:`KeyboardInterrupt` as Ctrl-C does
(:func:`dynasched_gym.interrupts.sigterm_as_interrupt`, which the ``dynasched-gym`` command uses too), so every
script keeps what it finished, removes its temporary files, says how to resume and exits with 130.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from dynasched_gym.interrupts import (
    WorkerPool,
    interrupt_handled,
    interrupts_held,
    signal_handlers,
    sigterm_as_interrupt,
    stop_workers,
)

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
    finally:  # every interrupt in the block was handled (here, or inside, e.g. a script's own sys.exit(130)):
        interrupt_handled()  # else Python run with -m may end by SIGINT, not with the status asked for


__all__ = ["INTERRUPTED", "WorkerPool", "interrupt_handled", "interrupted_exit", "interrupts_held",
           "signal_handlers", "sigterm_as_interrupt", "stop_workers"]
