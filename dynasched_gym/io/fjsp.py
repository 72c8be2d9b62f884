"""FJSPLIB ``.fjs`` reader (Brandimarte / Hurink / Dauzère-Pérès / Behnke files).

Layout: line 1 is ``n_jobs n_machines avg_machines_per_op`` (the third field is ignored); then, per
job, ``n_ops`` followed by, per operation, ``k`` and ``k`` pairs ``machine time``. Tokens are read
as one stream separated by spaces and tabs (lines end at ``\n``, ``\r\n`` or ``\r``), so a job may
span lines; anything after the last job is an error. Machine ids are 1-based in the file and 0-based
in the :class:`Instance`; the header's ``n_machines`` is kept even when fewer machines are used
(``mk06`` declares 15 and uses 10).

Naming: machines ``M1..Mn`` (the file ids), group ``"default"``, speed 1; jobs ``J1..``; release 0,
no due date, weight 1, no events; the instance is named after the file stem. Error fields use the
native format's 0-based names (``jobs[2].ops[0].machine`` is job 3 of the file) and the line number.

:class:`TokenReader` is shared with the JSSP reader (:mod:`dynasched_gym.io.jssp`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from dynasched_gym.checks import INEXACT_INTEGER, holds_exactly
from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import MAX_MAGNITUDE, MIN_PROCESSING_TIME, Instance, Job, Machine, too_long, too_short
from dynasched_gym.io.text import MAX_DECLARED, read_text

_INT = re.compile(r"[+-]?[0-9]{1,18}\Z")  # ASCII digits; 18 fit an int64 (and int() of 5000 digits raises)
# A decimal number in ASCII: float() also takes "1_000", other scripts' digits ("\u0665", "\uff15"), "nan" and "inf"
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_DIGITS = re.compile(r"\+?[0-9]+\Z")
_EOF = "<end of file>"
# str.splitlines() also breaks at \v \f \x1c-\x1e \x85 \u2028 \u2029, which would shift every later line number
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# The benchmarks README: tokens are separated by spaces and tabs. Any other whitespace stays in its token, so a
# stray control character is reported as a bad token on its line instead of silently acting as a separator.
_SEPARATOR = re.compile(r"[ \t]+")


def is_int(token: str) -> bool:
    """True when ``token`` is an integer literal of at most 18 digits."""
    return _INT.match(token) is not None


def _is_number(token: str) -> bool:
    """True when ``token`` is a finite decimal number written in ASCII (see ``_NUMBER``)."""
    return _NUMBER.match(token) is not None and math.isfinite(float(token))


def first_line_tokens(head: str) -> list[str]:
    """Tokens of the first non-blank line of ``head``."""
    for line in _LINE_BREAK.split(head):
        if line.strip():
            return line.split()  # lenient: a stray character here is reported by TokenReader, with its line
    return []


def _tokens(line: str) -> list[str]:
    """The space- or tab-separated tokens of ``line``."""
    line = line.strip(" \t")
    return _SEPARATOR.split(line) if line else []


class TokenReader:
    """Space- and tab-separated tokens of a text file, each with its 1-based line number.

    The first non-blank line is the header (:attr:`header`); :meth:`integer` and :meth:`number`
    consume the rest in order and raise :class:`InstanceFormatError` naming the file, the line, the
    field and the offending token (``"<end of file>"`` when the file ends too early).
    """

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        text = read_text(path)
        self.header: list[str] = []
        self.header_line = 1
        self._tokens: list[tuple[str, int]] = []
        self._last_line = 1
        for no, line in enumerate(_LINE_BREAK.split(text), start=1):
            parts = _tokens(line)
            if not parts:
                continue
            self._last_line = no
            if not self.header and not self._tokens:
                self.header, self.header_line = parts, no
            else:
                self._tokens.extend((tok, no) for tok in parts)
        if not self.header:
            raise InstanceFormatError("empty file", source=self.source, line=1, value="")
        self._pos = 0

    def error(self, reason: str, field: str, value: object, line: int | None = None) -> InstanceFormatError:
        """An error at ``line`` (default: the line of the last token read)."""
        if line is None:
            line = self._tokens[self._pos - 1][1] if self._pos else self.header_line
        return InstanceFormatError(reason, source=self.source, line=line, field=field, value=value)

    def header_ints(self, names: tuple[str, ...], extra: tuple[str, ...] = ()) -> list[int]:
        """Check the header has exactly ``names`` + ``extra`` fields; the ``names`` ones must be integers in
        1..:data:`~dynasched_gym.io.text.MAX_DECLARED`."""
        fields = names + extra
        if len(self.header) != len(fields):
            raise self.error(f"the first line must hold {len(fields)} fields ({' '.join(fields)})", "header",
                             " ".join(self.header), self.header_line)
        for name, tok in zip(extra, self.header[len(names):], strict=False):
            if not _is_number(tok):
                raise self.error("expected a number", name, tok, self.header_line)
        out = []
        for name, tok in zip(names, self.header, strict=False):
            if not is_int(tok) or not 1 <= int(tok) <= MAX_DECLARED:
                raise self.error(f"expected an integer in 1..{MAX_DECLARED}", name, tok, self.header_line)
            out.append(int(tok))
        return out

    def _next(self, field: str) -> str:
        if self._pos >= len(self._tokens):
            raise self.error("unexpected end of file", field, _EOF, self._last_line)
        tok = self._tokens[self._pos][0]
        self._pos += 1
        return tok

    def integer(self, field: str, lo: int, hi: int | None = None, what: str = "an integer") -> int:
        """The next token as an integer in ``lo..hi``."""
        tok = self._next(field)
        if not is_int(tok):
            raise self.error(f"expected {what}", field, tok)
        val = int(tok)
        if val < lo or (hi is not None and val > hi):
            bound = f">= {lo}" if hi is None else f"in {lo}..{hi}"
            raise self.error(f"{what} must be {bound}", field, val)
        return val

    def time(self, field: str) -> float:
        """The next token as a processing time (a finite number > 0)."""
        tok = self._next(field)
        if not _is_number(tok):
            raise self.error("expected a processing time", field, tok)
        val = float(tok)
        if val <= 0:
            raise self.error("processing time must be > 0", field, int(val) if val.is_integer() else val)
        if val < MIN_PROCESSING_TIME:  # named here, not as the instance record's field
            raise self.error(too_short(), field, val)
        if val > MAX_MAGNITUDE:
            raise self.error(too_long(), field, val)
        # without its leading zeros a finite time has at most 309 digits: int() takes it
        if _DIGITS.match(tok) and not holds_exactly(int(tok.lstrip("+0"))):
            raise self.error(INEXACT_INTEGER, field, tok)
        return val

    def expect_end(self) -> None:
        """Raise if tokens are left."""
        if self._pos < len(self._tokens):
            tok, line = self._tokens[self._pos]
            raise self.error("unexpected data after the last job", "end", tok, line)


def build(path: Path, reader: TokenReader, names: list[str], jobs: list[Job]) -> Instance:
    """An instance of ``jobs`` on machines ``names`` named after the file (errors name the file)."""
    try:
        return Instance.build(path.stem, [Machine(name=n) for n in names], jobs)
    except InstanceFormatError as exc:
        raise exc.located(reader.source) from None


def sniff(path: Path, head: str) -> bool:
    """A ``.fjs`` file, or a file whose first line holds exactly 3 numbers."""
    if not path.is_file():
        return False
    if path.suffix.lower() == ".fjs":
        return True
    tokens = first_line_tokens(head)
    return len(tokens) == 3 and all(_is_number(t) for t in tokens)


def load(path: Path) -> Instance:
    """Read an FJSPLIB file."""
    reader = TokenReader(path)
    n_jobs, n_machines = reader.header_ints(("n_jobs", "n_machines"), ("avg_machines_per_op",))
    jobs = []
    for j in range(n_jobs):
        n_ops = reader.integer(f"jobs[{j}].n_ops", 1, what="an operation count")
        ops = []
        for k in range(n_ops):
            where = f"jobs[{j}].ops[{k}]"
            count = reader.integer(f"{where}.k", 1, n_machines, what="an eligible-machine count")
            op: dict[int, float] = {}
            for _ in range(count):
                m = reader.integer(f"{where}.machine", 1, n_machines, what="a machine id")
                if m - 1 in op:
                    raise reader.error("machine listed twice", f"{where}.machine", m)
                op[m - 1] = reader.time(f"{where}.time")
            ops.append(op)
        jobs.append(Job(name=f"J{j + 1}", ops=ops))
    reader.expect_end()
    return build(path, reader, [f"M{m + 1}" for m in range(n_machines)], jobs)
