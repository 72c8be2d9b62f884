"""JSONL journals of the resumable benchmark scripts (``validate_ssi``, ``calibrate_compare``, ``compare_agents``).

A journal holds one finished row per line; it is read by :func:`dynasched_gym.results.read_jsonl`, the reader
of the results store: a partial last line (a writer killed mid-row) or an unreadable line is skipped with a
:class:`JournalWarning` and its row computed again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class JournalWarning(UserWarning):
    """A journal line was partial or unreadable and was skipped (its row is computed again)."""


def append_rows(path: Path, rows: Iterable[dict[str, Any]], sync: bool = False) -> None:
    """Append ``rows`` to the journal ``path``, one JSON line each, flushed (and with ``sync`` on the disk).
    The journal is opened for each append: a handle kept open wrote on into a journal whose folder was removed
    mid-run, lost without a word; here that is a FileNotFoundError naming it."""
    with path.open("a") as fh:
        fh.write("".join(json.dumps(row) + "\n" for row in rows))
        fh.flush()
        if sync:
            os.fsync(fh.fileno())
