"""Reading files for the loaders: every failure becomes an :class:`InstanceFormatError`."""

from __future__ import annotations

import json
import re
from json.decoder import JSONObject
from json.scanner import py_make_scanner
from pathlib import Path
from typing import Any

from dynasched_gym.errors import InstanceFormatError

#: Most jobs or machines a file may declare in a header: a loader builds one record per declared machine before
#: it can notice that the file holds no more data, so a 10-byte file declaring 10**9 would take all memory.
MAX_DECLARED = 1_000_000


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark dropped); a missing or unreadable file is an
    :class:`InstanceFormatError`."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise byte_error("not a UTF-8 text file", path, exc.object, exc.start) from None
    except OSError as exc:
        raise InstanceFormatError(f"cannot read: {exc.strerror}", source=str(path), value=str(path)) from None


_BYTE_BREAK = re.compile(rb"\r\n|\r|\n")  # the line breaks of the text formats (fjsp._LINE_BREAK)


def byte_error(reason: str, path: Path, data: bytes, pos: int) -> InstanceFormatError:
    """An :class:`InstanceFormatError` for the byte at ``pos`` of the file's ``data``, naming its line and showing
    the bytes from up to 20 before it (not before its line's start) to 20 after it."""
    breaks = list(_BYTE_BREAK.finditer(data, 0, pos))
    start = max(breaks[-1].end() if breaks else 0, pos - 20)
    return InstanceFormatError(reason, source=str(path), line=len(breaks) + 1, value=data[start:pos + 20])


class DuplicateKeyError(ValueError):
    """A key given twice in one JSON object (``json`` would silently keep the last value)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} appears twice in one JSON object")
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        raise DuplicateKeyError(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def parse_json(text: str) -> Any:
    """``json.loads`` that refuses a key repeated in one object (:class:`DuplicateKeyError`); any other
    failure is a :class:`json.JSONDecodeError`, including nesting too deep for the parser and an integer
    beyond Python's digit limit (which ``json`` reports as a RecursionError and a plain ValueError)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except (json.JSONDecodeError, DuplicateKeyError):
        raise
    except RecursionError:
        raise json.JSONDecodeError("nesting too deep", text, 0) from None
    except ValueError as exc:  # the digit limit of int(); json does not say where
        raise json.JSONDecodeError(str(exc).split(";")[0], text, 0) from None


def read_json(path: Path) -> Any:
    """Parse a JSON file; errors name the file, the line and the text there (a repeated key: the key)."""
    text = read_text(path)
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise InstanceFormatError(f"invalid JSON: {exc.msg}", source=str(path), line=exc.lineno,
                                  value=excerpt(text, exc.pos)) from None
    except DuplicateKeyError as exc:
        raise InstanceFormatError("a key appears twice in one JSON object (which value is meant?)",
                                  source=str(path), line=duplicate_key_line(text), field=exc.key,
                                  value=exc.key) from None


class _RepeatedKey(Exception):
    def __init__(self, start: int, end: int, key: str) -> None:
        self.start, self.end, self.key = start, end, key


def duplicate_key_line(text: str) -> int | None:
    """The line of the second occurrence of the first key repeated in one object of ``text``, or None
    when it cannot be told (the text is parsed again in pure Python: only on this error path)."""
    decoder = json.JSONDecoder()
    closed: list[tuple[int, int]] = []  # spans of the objects parsed so far, which nest inside later ones

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, object_hook: Any,
                     object_pairs_hook: Any, memo: dict | None = None) -> tuple[dict, int]:
        start = s_and_end[1] - 1
        pairs, end = JSONObject(s_and_end, strict, scan_once, None, list, memo)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(start, end, key)
            seen.add(key)
        closed.append((start, end))
        return dict(pairs), end

    decoder.parse_object = parse_object
    decoder.scan_once = py_make_scanner(decoder)
    try:
        decoder.decode(text)
    except _RepeatedKey as found:
        inner = [(a, b) for a, b in closed if found.start < a and b <= found.end]
        pattern = re.compile(re.escape(json.dumps(found.key, ensure_ascii=False)) + r"\s*:")
        hits = [m.start() for m in pattern.finditer(text, found.start, found.end)
                if not any(a <= m.start() < b for a, b in inner)]
        pos = hits[1] if len(hits) > 1 else found.start
        return text.count("\n", 0, pos) + 1
    except (ValueError, RecursionError):
        return None
    return None


def excerpt(text: str, pos: int) -> str:
    """Up to 20 characters either side of ``pos`` (where a parse error was found)."""
    return text[max(0, pos - 20):pos + 20]
