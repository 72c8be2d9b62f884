"""The one error type for bad instance, schedule and config input, and the warning for fields not read."""

from __future__ import annotations

from typing import Any


class UnreadFieldWarning(UserWarning):
    """An input file holds a field the loader does not read (a misspelt optional field falls back to its default)."""


class InstanceFormatError(ValueError):
    """Malformed or inconsistent input.

    The message always names where the problem is (``source``: a file path or ``"<instance>"``,
    and ``line`` and/or ``field`` when known) and the offending ``value``.
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


def _shown(value: Any, limit: int = 200) -> str:
    """``repr(value)``, its middle cut out when longer than ``limit`` (the error keeps the whole value)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit - 40]}...<{len(text) - limit + 20} characters>...{text[-20:]}"
