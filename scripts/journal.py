"""JSONL journals of the resumable benchmark scripts (``validate_ssi``, ``calibrate_compare``): reading them safely.

A journal holds one finished row per line. A writer killed mid-line leaves a partial last line, and a
file edited by hand may hold a line that does not parse: :func:`read_rows` skips both with a
:class:`JournalWarning` (the row is computed again) instead of crashing the resume, and with
``repair=True`` cuts the partial last line off so that the next append starts on a line of its own.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any


class JournalWarning(UserWarning):
    """A journal line was partial or unreadable and was skipped (its row is computed again)."""


def read_rows(path: str | os.PathLike[str], repair: bool = False) -> list[dict[str, Any]]:
    """The rows (JSON objects) of the complete, readable lines of ``path`` (none when it does not exist).

    Args:
        path: the JSONL file.
        repair: cut a partial last line (no final newline) off the file, for a caller that appends next.
    """
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        warnings.warn(f"{path}: skipping a partial last line ({len(data) - end} bytes; a writer was killed "
                      "mid-row, the row will be computed again)", JournalWarning, stacklevel=2)
        if repair:
            with open(path, "r+b") as fh:
                fh.truncate(end)
    rows = []
    for number, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            warnings.warn(f"{path}: skipping unreadable line {number} ({exc})", JournalWarning, stacklevel=2)
            continue
        if not isinstance(row, dict):
            warnings.warn(f"{path}: skipping line {number}, not a JSON object", JournalWarning, stacklevel=2)
            continue
        rows.append(row)
    return rows
