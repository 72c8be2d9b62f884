"""The one error type for bad instance, schedule and config input, the warnings for fields not read and events
that can never apply, and the error for an optional dependency that is not installed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class UnreadFieldWarning(UserWarning):
    """An input file holds a field the loader does not read (a misspelt optional field falls back to its default)."""


class IgnoredEventWarning(UserWarning):
    """An instance holds an event that can never apply (a PTIME_CHANGE or REWORK of an operation its job can
    never have): the simulator ignores it, as docs/semantics.md says, so the instance plays as if it were not there."""


class TruncatedEpisodeWarning(UserWarning):
    """An episode was cut short (``truncated``: a ``TimeLimit`` or another wrapper) before every job completed or
    was cancelled: its schedule is unfinished, and the metrics count only the jobs completed so far."""


class InstanceFormatError(ValueError):
    """Malformed or inconsistent input.

    The message always names where the problem is (``source``: a file path or ``"<instance>"``,
    and ``line`` and/or ``field`` when known; ``where`` as the message writes it) and the offending ``value``.
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str = "<instance>",
        line: int | None = None,
        field: str | None = None,
        value: Any = None,
    ) -> None:
        self.reason = reason
        self.source = str(source)
        self.line = line
        self.field = field
        self.value = value
        where = self.source
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field!r}"
        self.where = where
        super().__init__(f"{where}: {reason} (got {_shown(value)})")

    def located(self, source: str, line: int | None = None, field_prefix: str = "") -> InstanceFormatError:
        """Return a copy that names ``source`` (and ``line``), keeping this error's field and value."""
        field = self.field
        if field_prefix:
            field = field_prefix if field is None else f"{field_prefix}.{field}"
        return InstanceFormatError(
            self.reason,
            source=source,
            line=self.line if line is None else line,
            field=field,
            value=self.value,
        )


class MissingExtraError(ModuleNotFoundError):
    """A feature's optional dependency is not installed; the message names the extra that installs it."""


@contextmanager
def needs_extra(extra: str, feature: str) -> Iterator[None]:
    """Re-raise a third-party module missing inside the block as a :class:`MissingExtraError` that says
    ``pip install 'dynasched-gym[<extra>]'`` (a missing module of this package stays a plain error: a bug)."""
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] == "dynasched_gym":
            raise
        raise missing_extra(extra, feature, exc.name) from exc


def missing_extra(extra: str, feature: str, package: str) -> MissingExtraError:
    """The :class:`MissingExtraError` for ``feature`` lacking ``package``: its message names the ``extra`` that
    installs it (``pip install 'dynasched-gym[<extra>]'``)."""
    return MissingExtraError(f"{feature} needs the package {package!r}, which is not installed: pip install "
                             f"'dynasched-gym[{extra}]'", name=package)


def _shown(value: Any, limit: int = 200) -> str:
    """``repr(value)``, its middle cut out when longer than ``limit`` (the error keeps the whole value)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit - 40]}...<{len(text) - limit + 20} characters>...{text[-20:]}"


def user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel, for the function calling this, of the first frame outside this package:
    a warning then points at the user's line whichever public entry point led to it."""
    frame, level = sys._getframe(1), 1  # the function that calls warnings.warn
    while frame is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] == "dynasched_gym":
        frame, level = frame.f_back, level + 1
    return level
