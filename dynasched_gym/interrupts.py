"""Interrupts for the commands of the package (``dynasched-gym``), the scripts (``scripts/interrupts.py``) and the
worker processes of both.

A scheduler (Slurm at a time limit, ``kill``, a container stop) ends a process with SIGTERM, whose default action
kills Python at once: no ``finally`` runs, so an atomic write in progress leaves its ``.tmp`` file and the command
says nothing. Within :func:`sigterm_as_interrupt` SIGTERM raises :class:`KeyboardInterrupt` as Ctrl-C does.

Ctrl-C at a terminal sends SIGINT to every process of the foreground process group, worker processes too.
:class:`WorkerPool`'s workers ignore it: the main process alone handles Ctrl-C, and ends them.

The library itself sets no handler of the main process (:func:`interrupts_held` defers an interrupt for a few
steps, to the handler it would have met): a program that uses it decides what its signals do.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
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


@contextlib.contextmanager
def interrupts_held(*signums: int) -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM (or the ``signums`` given) back within the block and deliver them as it ends, to the
    handlers they would have met (raising :class:`KeyboardInterrupt` where they would have): for a few steps that must
    be done together, so that an interrupt comes before them or after, where the caller's ``try`` knows what was done
    and undoes or keeps it."""
    held: list[int] = []
    try:
        with signal_handlers(lambda signum, frame: held.append(signum), *(signums or (signal.SIGINT, signal.SIGTERM))):
            yield
    finally:
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)


def interrupt_handled() -> None:
    """Call where a caught :class:`KeyboardInterrupt` has been dealt with: the exit status is then the one the
    program asks for (``sys.exit(130)``), not death by SIGINT.

    CPython marks a KeyboardInterrupt that leaves code run by ``exec`` or ``eval`` of a string as unhandled, even
    when a caller catches it; dataclasses and ``namedtuple`` make their methods so, and Hydra and omegaconf their
    config classes, so a Ctrl-C during an import or a config step often leaves there. A program run with ``python -m``
    (the scripts, ``python -m dynasched_gym``) then printed its message and yet ended by SIGINT at exit (status -2,
    130 in a shell) instead of with its status. Running any string clears the mark first (CPython 3.10 to 3.13)."""
    exec("")


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread within the block (pending ones arrive as it ends): a process started within
    inherits the block (across ``exec`` too), so that it starts deaf to Ctrl-C."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks (and no process groups to signal)
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _ignore_interrupts(initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    """Initializer of :class:`WorkerPool`'s workers: SIGINT ignored (then unblocked: one that came while the worker
    started is dropped), SIGTERM's default action (``terminate()`` ends the worker at once, whatever handler a forked
    one inherited), then the pool's own initializer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if initializer is not None:
        initializer(*initargs)


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


class WorkerPool(ProcessPoolExecutor):
    """A ``ProcessPoolExecutor`` (``spawn`` unless ``mp_context`` says otherwise) whose workers ignore Ctrl-C.

    Ctrl-C at a terminal sends SIGINT to the whole foreground process group. Each worker then printed its own
    ``KeyboardInterrupt`` traceback (from ``spawn_main`` while it imported the main module, from its wait for a task
    when idle) around the script's one-line message, or died and broke the pool. Here a worker starts with SIGINT
    blocked (:meth:`submit`, which starts the workers, blocks it while it runs) and ignores it from its initializer
    on: the main process handles Ctrl-C for all, and ends the workers.

    Leaving the ``with`` block by :class:`KeyboardInterrupt` cancels the queued tasks and ends the workers
    (:func:`stop_workers`): waiting for them, as ``ProcessPoolExecutor`` does, would wait for every task submitted,
    the workers no longer stopping by themselves. A caller that keeps the tasks already finished collects them in
    its ``except`` before the block ends. A Ctrl-C that arrives while :meth:`submit` runs is held back until the
    task is queued (and its worker, if it started one, known to the pool), then raised."""

    def __init__(self, max_workers: int | None = None, mp_context: Any = None,
                 initializer: Callable[..., Any] | None = None, initargs: tuple[Any, ...] = ()) -> None:
        super().__init__(max_workers, mp_context=mp_context or multiprocessing.get_context("spawn"),
                         initializer=_ignore_interrupts, initargs=(initializer, initargs))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with interrupts_held(signal.SIGINT), _sigint_blocked():  # SIGINT only: a forked worker inherits handlers
            return super().submit(fn, *args, **kwargs)

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            stop_workers(self)
            return False
        return bool(super().__exit__(exc_type, exc_val, exc_tb))


__all__ = ["WorkerPool", "interrupt_handled", "interrupts_held", "signal_handlers", "sigterm_as_interrupt",
           "stop_workers"]
