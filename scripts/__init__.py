"""Entry points (run from the repository root): evaluate, leaderboard, train, calibrate and the benchmarks."""

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


def _quiet_interrupt(hook: ExceptHook) -> ExceptHook:
    """``hook`` printing one line instead of a traceback for a Ctrl-C before a script's own handling began (during
    its imports or Hydra's start-up, when nothing was done yet); the exit status stays the interrupt's (130)."""

    def excepthook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            print("\ninterrupted", file=sys.stderr)
        else:
            hook(kind, value, traceback)

    return excepthook


sys.excepthook = _quiet_interrupt(sys.excepthook)
