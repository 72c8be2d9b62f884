"""JSONL journals of the resumable benchmark scripts (``validate_ssi``, ``calibrate_compare``, ``compare_agents``).

A journal holds one finished row per line; it is read by :func:`dynasched_gym.results.read_jsonl`, the reader
of the results store: a partial last line (a writer killed mid-row) or an unreadable line is skipped with a
:class:`JournalWarning` and its row computed again.
"""

from __future__ import annotations


class JournalWarning(UserWarning):
    """A journal line was partial or unreadable and was skipped (its row is computed again)."""
