"""Evaluation results: the append-only JSONL store, row keys, bootstrap intervals and the leaderboard tables.

**Rows.** One JSON object per finished episode (``scripts/evaluate.py`` writes them; docs/leaderboard.md
lists every field). A row is identified by its key :data:`KEY_FIELDS` = (agent config hash, tier, size,
seed, objective): the store holds each key at most once.

**Store.** A JSONL file, one row per line, only ever appended to. Every append happens under an
exclusive ``fcntl.flock`` on the sidecar ``<store>.lock`` (so processes on one machine, or on a
shared file system with working POSIX locks, may append concurrently: joblib and Ray workers do; where
``fcntl`` is missing, on Windows, the store refuses to read or write, saying why),
re-reads the rows other processes appended since, skips a row whose key is already there, and
writes the line with ``flush`` + ``fsync`` before the lock is released. A writer killed mid-line
leaves a partial last line: readers ignore it with a :class:`StoreWarning`, and the next append
cuts it off (with a warning) before writing (a last line no killed writer leaves is refused, not cut off: the
file is no store). So a row is either entirely in the store or not at
all, and never twice; an interrupted evaluation resumes by skipping the keys already present.
Readers take a shared lock, so they never see a line being written (a store opened ``read_only``, e.g. a
published copy, makes no lock file: it takes the shared lock only where one exists). Lines that do not parse
(anywhere but the end), or whose row lacks what the leaderboard reads (:func:`checked_row_key`: a
status, the key, a finite objective value of an ``ok`` row, ...), are ignored with a warning and their
rows computed again; duplicate keys (e.g. two stores concatenated by hand) keep the first row.

**Aggregation.** :func:`aggregate` turns rows into leaderboard entries per (objective, size, tier,
agent): mean objective with a bootstrap 95 % interval (:func:`bootstrap_ci`), rank among fair agents,
the objective relative to the best rule and to the clairvoyant reference, regret against that
reference with a paired interval, and the mean normalised weighted tardiness (the cross-tier scale).
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.checks import check_integer, check_path, is_finite_real, is_integer
from dynasched_gym.instance import regular_file, writable_file
from dynasched_gym.paths import file_lock, locks_available, shared_lock_if_any

ROW_FORMAT = "dynasched-result/1"
#: Bumped whenever an agent may play an instance differently under the same configuration (rule semantics,
#: observations, simulator); part of every agent's configuration hash, so a store never reuses rows played
#: by an older behaviour. 2: ATC's look-ahead scale and the observation units read only the present. 3: the LLM
#: agents' L3 priors give the tier's SSI band, not the instance's score (which rates the future events too), and
#: an emergency-first rule agent's fallback (its pair not offered) keeps emergency jobs first. 4: events within EPS
#: of each other form one instant, a job is tardy beyond EPS only, a maintenance cut as it starts is empty, and
#: the RANDOM rule agent's fallback (its pair not offered) is a uniform offered pair, and the LLM agents read only
#: top-level JSON objects of an answer; rollout forecast features are clipped to [-BIG, BIG]. 5: a lookahead with
#: sampled futures draws them from the pool of the evaluated instance's tier (they came from the medium pool). 6: the
#: oracle observations' pending_arrivals and arrival_soon leave out jobs cancelled before their release.
BEHAVIOUR_VERSION = 6
#: The fields that identify a row; the store holds each key once.
KEY_FIELDS = ("agent_hash", "tier", "size", "seed", "objective")
#: Row statuses: ``ok`` (valid schedule, metrics filled), ``invalid`` (the validator rejected the
#: schedule; metrics are null), ``error`` (the episode raised; metrics are null).
STATUSES = ("ok", "invalid", "error")

Key = tuple[Any, ...]


class StoreWarning(UserWarning):
    """A results store line was truncated, unreadable or duplicated, and was ignored."""


def _json_value(value: Any) -> Any:
    """What ``value``, which JSON cannot hold, stands for in a config: a NumPy scalar's Python number
    (``np.int64(16)`` hashes as ``16``), a path's string, a set's members in a fixed order."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=canonical_json)
    # its str() may hold a memory address or a process's ordering: the hash would change from run to run
    raise TypeError(f"a config holds a {type(value).__name__} ({value!r}), which has no canonical JSON form: give "
                    "numbers, strings, lists, mappings, NumPy scalars, paths or sets")


def canonical_json(obj: Any) -> str:
    """Compact JSON with sorted keys (the hashed form of configs; other values as :func:`_json_value` says, and
    a TypeError for one with no fixed form)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_json_value)


def config_hash(config: Mapping[str, Any]) -> str:
    """First 16 hex digits of the SHA-256 of the canonical JSON of ``config``."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:16]


def row_key(row: Mapping[str, Any]) -> Key:
    """The key of a row (:data:`KEY_FIELDS`)."""
    return tuple(row[name] for name in KEY_FIELDS)


def checked_row_key(row: Mapping[str, Any]) -> Key:
    """The key of a stored row after checking what the leaderboard reads from it: a ValueError names the first
    field that is missing or of the wrong kind (the store then skips the line, and its row is computed again)."""
    for name in ("agent", "agent_hash", "tier", "size", "objective"):
        if not isinstance(row.get(name), str):
            raise ValueError(f"field {name!r} must be a string, got {row.get(name, '<missing>')!r}")
    if not (is_integer(row.get("seed")) and row["seed"] >= 0):
        raise ValueError(f"field 'seed' must be an integer >= 0, got {row.get('seed', '<missing>')!r}")
    if row.get("status") not in STATUSES:
        raise ValueError(f"field 'status' must be one of {STATUSES}, got {row.get('status', '<missing>')!r}")
    if not isinstance(row.get("clairvoyant", False), bool):
        raise ValueError(f"field 'clairvoyant' must be true or false, got {row['clairvoyant']!r}")
    if row["status"] == "ok":
        for name in ("objective_value", "normalised_weighted_tardiness"):
            if not is_finite_real(row.get(name)):
                raise ValueError(f"field {name!r} of an ok row must be a finite number, got "
                                 f"{row.get(name, '<missing>')!r}")
        for name in ("ssi", "decisions", "wall_time"):  # the board's means, which skip a null (not measured)
            if row.get(name) is not None and not is_finite_real(row[name]):
                raise ValueError(f"field {name!r} of an ok row must be a finite number or null, got {row[name]!r}")
        tokens = row.get("tokens")
        if tokens is not None and not (isinstance(tokens, Mapping) and is_integer(tokens.get("total", 0))):
            raise ValueError(f"field 'tokens' of an ok row must be null or a mapping whose 'total' is an integer, got "
                             f"{tokens!r}")
    violations = row.get("violations")  # the failure reports join them
    if violations is not None and not (isinstance(violations, list) and all(isinstance(v, str) for v in violations)):
        raise ValueError(f"field 'violations' must be a list of strings or null, got {violations!r}")
    return row_key(row)


class ResultStore:
    """The append-only JSONL results file at ``path`` (module docstring)."""

    def __init__(self, path: str | os.PathLike[str], read_only: bool = False) -> None:
        """``read_only``: only :meth:`rows` and :meth:`keys` (a store this process may not write, e.g. a published
        copy): the file need not be writable, no lock file is made, and a shared lock is taken only where one
        exists."""
        path = check_path("path", path)
        self.read_only = read_only
        self.path = regular_file(path) if read_only else writable_file(path)  # /dev/null took every row, then
        self.lock_path = self.path.with_name(self.path.name + ".lock")  # failed to fsync
        if not read_only and self.path.is_file():  # refused now, not after the first episode, where it is cut off
            _check_cut_off(self.path, _last_line(self.path), checked_row_key)
        self._offset = 0  # bytes of the file already parsed into _keys (by this process)
        self._lines = 0  # lines in those bytes (so that a warning names the line of the file)
        self._keys: set[Key] = set()
        self._writing: set[Key] = set()  # keys whose line this object began to write (each absent from the file then)

    def __repr__(self) -> str:
        return f"ResultStore('{self.path}')"

    def _locked(self, exclusive: bool) -> AbstractContextManager[None]:
        if self.read_only:
            if exclusive:
                raise PermissionError(f"{self.path}: this ResultStore was opened read-only (read_only=True)")
            return shared_lock_if_any(self.lock_path)
        if not locks_available():
            raise OSError(f"{self.path}: the results store locks its file with POSIX fcntl.flock, which this "
                          "platform lacks (on Windows, run the evaluation under WSL)")
        return file_lock(self.lock_path, exclusive)

    def rows(self) -> list[dict[str, Any]]:
        """Every complete row, first occurrence of each key, in file order."""
        if not self.path.exists():
            return []
        with self._locked(exclusive=False):
            stored = _read_numbered_jsonl(self.path, checked_row_key, StoreWarning)
        rows, seen = [], set()
        for number, row in stored:
            key = row_key(row)
            if key in seen:
                warnings.warn(f"{self.path}: duplicate row for key {key} on line {number} ignored (first kept)",
                              StoreWarning, stacklevel=2)
                continue
            seen.add(key)
            rows.append(row)
        return rows

    def keys(self) -> set[Key]:
        """The keys of every row in the store."""
        return {row_key(row) for row in self.rows()}

    def append(self, row: Mapping[str, Any]) -> bool:
        """Append ``row`` durably unless its key is already stored; True when it was written.

        Its ``status`` must be one of :data:`STATUSES`, and its fields those :func:`checked_row_key` checks (a
        ValueError otherwise: nothing is written, where a row the store then skipped on reading was written)."""
        if not isinstance(row, Mapping):
            raise TypeError(f"a row is a mapping of fields, got {type(row).__name__}: {row!r:.80}")
        checked_row_key(row)
        text = json.dumps(row, allow_nan=False, default=_stored_value)
        try:  # the row as readers will parse it: a value JSON holds only as its text was read back as a string
            key = checked_row_key(json.loads(text))
        except ValueError as exc:
            raise ValueError(f"{exc} (as stored: JSON holds that value only as its text)") from None
        line = (text + "\n").encode("utf-8")
        with self._locked(exclusive=True):
            with open(self.path, "ab+") as fh:
                self._catch_up(fh)
                if key in self._keys:
                    return False
                fh.seek(0, os.SEEK_END)
                self._writing.add(key)  # before the write: an interrupt may land anywhere after it (written())
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
                self._offset += len(line)
                self._lines += 1
                self._keys.add(key)
        return True

    def written(self) -> set[Key]:
        """The keys of the rows this object appended (since it was made), read back from the file: exact also when an
        interrupt (Ctrl-C) cut an :meth:`append` short after its line was written, where ``append`` returned nothing.
        A key counts when this object began to write its line, the key then absent under the exclusive lock, and
        the line is in the file now; so rows other processes appended never count."""
        if not self._writing:
            return set()
        with self._locked(exclusive=True):
            with open(self.path, "ab+") as fh:
                self._catch_up(fh)
        return self._writing & self._keys

    def _catch_up(self, fh: Any) -> None:
        """Parse what other processes appended since our last look; cut off a dead writer's partial line."""
        size = fh.seek(0, os.SEEK_END)
        if size < self._offset:  # the file was replaced or truncated by hand: start over
            self._offset, self._lines, self._keys = 0, 0, set()
        fh.seek(self._offset)
        data = fh.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            if _is_row(data[end:], checked_row_key):  # a whole row written without its newline (e.g. by hand)
                fh.write(b"\n")
                data, end = data + b"\n", len(data) + 1
            else:
                _check_cut_off(self.path, data[end:], checked_row_key)
                warnings.warn(f"{self.path}: cutting off a truncated last line ({len(data) - end} bytes) left by a "
                              "killed writer", StoreWarning, stacklevel=3)
                fh.truncate(self._offset + end)
        self._keys.update(row_key(row) for _, row in _parse(data[:end], self.path, checked_row_key, StoreWarning,
                                                            self._lines + 1))
        self._offset += end
        self._lines += data[:end].count(b"\n")


def _stored_value(value: Any) -> Any:
    """What a row's ``value``, which JSON cannot hold, is stored as: a NumPy scalar's Python number (its text
    ``"3"`` was a string on reading), else its text (an exception, a path)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def read_jsonl(path: str | os.PathLike[str], key: Callable[[dict[str, Any]], Any] | None,
               category: type[Warning], repair: bool = False) -> list[dict[str, Any]]:
    """The rows (JSON objects) of the complete lines of a JSONL journal (none when it does not exist).

    A partial last line (a writer killed mid-row) and lines that do not parse, are not objects or lack what
    ``key`` reads are skipped with a ``category`` warning: the rows they held are computed again. A last line
    that holds a whole row but no newline (written by hand) is read. With ``repair`` the partial last line is
    cut off, or the whole one ended, so that the next append starts on a line of its own.
    """
    return [row for _, row in _read_numbered_jsonl(path, key, category, repair)]


def _read_numbered_jsonl(path: str | os.PathLike[str], key: Callable[[dict[str, Any]], Any] | None,
                         category: type[Warning], repair: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """:func:`read_jsonl`'s rows, each with its line number (from 1)."""
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        whole = _is_row(data[end:], key)
        if repair:
            _check_cut_off(path, data[end:], key)
        if not whole:
            warnings.warn(f"{path}: skipping a partial last line ({len(data) - end} bytes: a truncated last line "
                          "left by a killed writer; its row will be computed again)", category, stacklevel=2)
        if repair:
            with open(path, "r+b") as fh:
                if whole:
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"\n")
                else:
                    fh.truncate(end)
        if whole:
            end = len(data)
    return list(_parse(data[:end], path, key, category))


def _last_line(path: Path, block: int = 1 << 16) -> bytes:
    """The bytes of ``path`` after its last newline, read from the end (a large store is not read whole for it)."""
    with path.open("rb") as fh:
        position, tail = fh.seek(0, os.SEEK_END), b""
        while position:
            step = min(block, position)
            position -= step
            fh.seek(position)
            tail = fh.read(step) + tail
            if (newline := tail.rfind(b"\n", 0, step)) >= 0:
                return tail[newline + 1:]
        return tail


def _check_cut_off(path: Path, tail: bytes, key: Callable[[dict[str, Any]], Any] | None) -> None:
    """Raise a ValueError naming ``path`` unless its last line ``tail`` (without a newline) is empty, a whole row, or
    what a writer killed mid-row leaves, which an append cuts off: the start of a row's JSON object, no JSON
    document itself. Any other line is of a file that is no JSONL store (a schedule or instance JSON given as the
    store, an indented JSON file's closing brace, a text file), which cutting it off would destroy."""
    if not tail or _is_row(tail, key):
        return
    if tail.startswith(b"{"):
        try:
            json.loads(tail)
        except ValueError:
            return
    begins = tail[:40].decode(errors="replace")
    raise ValueError(f"{path}: not a JSONL file of rows: its last line is no row, nor the start of one that a killed "
                     f"writer left (it begins {begins!r}); give the path of a store, or of a new file")


def _is_row(line: bytes, key: Callable[[dict[str, Any]], Any] | None) -> bool:
    """Whether ``line`` (without its newline) holds a whole readable row."""
    try:
        row = json.loads(line)
        if key is not None and isinstance(row, dict):
            key(row)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return isinstance(row, dict)


def _parse(data: bytes, path: Path, key: Callable[[dict[str, Any]], Any] | None,
           category: type[Warning], first_line: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of ``data``'s lines with their numbers (from ``first_line``); unreadable ones are skipped."""
    for number, line in enumerate(data.splitlines(), first_line):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise TypeError("not a JSON object")
            if key is not None:
                key(row)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            warnings.warn(f"{path}: ignoring unreadable line {number} ({exc})", category, stacklevel=3)
            continue
        yield number, row


# --------------------------------------------------------------------------------------------- statistics
def format_number(x: float | None, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits for report tables; ``—`` for None or NaN."""
    return "—" if x is None or (isinstance(x, numbers.Real) and math.isnan(x)) else f"{x:.{digits}g}"


def bootstrap_ci(values: Sequence[float] | np.ndarray, resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean of ``values`` (NaNs for an empty sample; the sample's mean,
    :func:`_mean`'s, twice for one without spread)."""
    resamples, seed = check_integer("resamples", resamples, 1), check_integer("seed", seed, 0)
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return math.nan, math.nan
    if np.all(values == values[0]):  # NumPy's sums of the resamples may miss the exact mean by an ulp: outside the CI
        mean = _mean(values)
        return mean, mean
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (resamples, len(values)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def paired_margin(agent: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """``agent`` minus ``reference`` per instance: mean ``margin``, paired bootstrap ``ci95``, ``relative`` (to the
    reference's mean, None when it is 0), and on how many instances the agent is better (``wins``) or ``ties``."""
    agent, reference = np.asarray(agent, dtype=float), np.asarray(reference, dtype=float)
    if agent.shape != reference.shape or agent.ndim != 1:  # [1, 2] - [1] broadcast into a margin over no pairs
        raise ValueError(f"agent and reference must hold one value per instance each, paired: got shapes "
                         f"{agent.shape} and {reference.shape}")
    if agent.size == 0:  # a margin over no instance: NaNs and NumPy's "mean of empty slice" warnings
        raise ValueError("agent and reference hold no instance: a margin needs at least one pair")
    diff = agent - reference
    low, high = bootstrap_ci(diff)
    margin, mean = _mean(diff), float(np.mean(reference))  # the margin as bootstrap_ci's: inside its interval
    return {"margin": margin, "ci95": [low, high], "relative": margin / mean if mean else None,
            "wins": int((diff < 0).sum()), "ties": int((diff == 0).sum())}


def _ratio(num: float, den: float) -> float:
    """``num / den`` of two objective means (>= 0): 1 for 0 / 0 (as good), inf for x / 0 (worse than a reference
    that reached 0, as on easy tiers' weighted tardiness, where NaN showed "—" and hid it); NaN where one is NaN."""
    if math.isnan(num) or math.isnan(den):
        return math.nan
    if den == 0:
        return 1.0 if num == 0 else math.inf
    return num / den


def aggregate(rows: Iterable[Mapping[str, Any]], resamples: int = 10_000, seed: int = 0) -> list[dict[str, Any]]:
    """Leaderboard entries, one per (objective, size, tier, agent), sorted by those then rank.

    Per group of rows with status ``ok`` (``episodes``; other statuses count as ``failed``):

    - ``mean``, ``ci_low``, ``ci_high``: mean objective value and its bootstrap 95 % interval;
    - ``rank``: 1 = lowest mean among the fair agents with a valid schedule on every instance a fair agent of the
      group played (one only clairvoyant agents played does not count; ties share a rank); ``None`` for
      clairvoyant agents and for agents with failed or missing episodes (their means cover fewer instances);
      means are exact sums in seed order, so rows' order in the store changes nothing;
    - ``vs_best_rule``: mean / mean of the best rule (the ``rule:`` agent with the lowest mean among those with
      a valid schedule on those same instances; none: NaN), both over the seeds the two share;
    - ``vs_clairvoyant``, ``regret``, ``regret_ci_low``, ``regret_ci_high``: against the clairvoyant
      reference, i.e. per seed the best value any clairvoyant agent reached: mean / reference mean,
      and the mean difference with a paired bootstrap interval (seeds both have);
    - ``nwt``, ``nwt_ci_low``, ``nwt_ci_high``: mean normalised weighted tardiness (comparable across tiers);
    - ``instances``: the group's instances (seeds of any of its rows);
    - ``instances_ssi``: mean SSI score of those instances (an instance's score is any ``ok`` row's of its seed;
      instances with none are left out; NaN when none has one), the same in every entry of the group;
    - ``ssi``: mean SSI score of the agent's ``ok`` episodes' instances; ``decisions``, ``wall_time``: means
      per episode; ``tokens``: total token usage (agents that report it).

    Each row must hold what :func:`checked_row_key` checks, and each key once (a ValueError names the row).
    """
    check_integer("resamples", resamples, 1)  # also when no group needs them
    check_integer("seed", seed, 0)
    rows = list(rows)
    first: dict[Key, int] = {}  # key -> its row
    for i, row in enumerate(rows):  # a missing field was a bare KeyError naming no row
        if not isinstance(row, Mapping):
            raise TypeError(f"rows[{i}] must be a result row (a mapping), got {type(row).__name__}: {row!r:.80}")
        try:
            key = checked_row_key(row)
        except ValueError as exc:
            raise ValueError(f"rows[{i}]: {exc}") from None
        if key in first:  # its episode was counted twice in the mean, once in the ratios
            raise ValueError(f"rows[{i}]: the key {dict(zip(KEY_FIELDS, key))} of rows[{first[key]}] again: one row "
                             "per episode (ResultStore.rows() keeps the first of each key)")
        first[key] = i
    groups: dict[tuple[Any, ...], dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row, label in zip(rows, board_labels(rows)):
        groups[(row["objective"], row["size"], row["tier"])][label].append(row)
    board = []
    for (objective, size, tier), by_agent in sorted(groups.items(), key=lambda item: _group_order(item[0])):
        values = {agent: {r["seed"]: r["objective_value"] for r in rs if r["status"] == "ok"}
                  for agent, rs in by_agent.items()}
        clairvoyant = {agent for agent, rs in by_agent.items() if rs[0].get("clairvoyant")}
        reference: dict[int, float] = {}
        for agent in clairvoyant:
            for s, v in values[agent].items():
                reference[s] = min(v, reference.get(s, math.inf))
        seeds = {r["seed"] for agent, rs in by_agent.items() if agent not in clairvoyant for r in rs}
        instances = len({r["seed"] for rs in by_agent.values() for r in rs})
        # per instance, not per agent: agents that failed on different instances would weight them differently
        instances_ssi = _mean({r["seed"]: r["ssi"] for rs in by_agent.values() for r in rs
                               if r["status"] == "ok" and r.get("ssi") is not None}.values())
        # a rule valid on only some seeds is not compared on them: its mean would cover an easier sample
        rules = [a for a in values if a.startswith("rule:") and a not in clairvoyant and values[a].keys() == seeds]
        best_rule = min(sorted(rules), key=lambda a: _mean(values[a].values()), default=None)
        entries = []
        for agent, rs in by_agent.items():
            ok = sorted((r for r in rs if r["status"] == "ok"), key=lambda r: r["seed"])
            v = np.array([r["objective_value"] for r in ok], dtype=np.float64)
            nwt = np.array([r["normalised_weighted_tardiness"] for r in ok], dtype=np.float64)
            entry: dict[str, Any] = {
                "objective": objective, "size": size, "tier": tier, "rank": None, "agent": agent,
                "clairvoyant": agent in clairvoyant, "instances": instances,
                "instances_ssi": instances_ssi, "episodes": len(ok),
                "failed": len(rs) - len(ok),
                "mean": _mean(v), **_ci("ci", v, resamples, seed),
                "vs_best_rule": math.nan, "vs_clairvoyant": math.nan, "regret": math.nan,
                "regret_ci_low": math.nan, "regret_ci_high": math.nan,
                "nwt": _mean(nwt), **_ci("nwt_ci", nwt, resamples, seed),
                "ssi": _mean(r.get("ssi") for r in ok), "decisions": _mean(r.get("decisions") for r in ok),
                "wall_time": _mean(r.get("wall_time") for r in ok),
                "tokens": sum(int(r["tokens"].get("total", 0)) for r in ok if r.get("tokens")) or None,
            }
            if best_rule is not None:
                shared = sorted(values[agent].keys() & values[best_rule].keys())
                entry["vs_best_rule"] = _ratio(np.mean([values[agent][s] for s in shared]) if shared else math.nan,
                                               np.mean([values[best_rule][s] for s in shared]) if shared else 0.0)
            shared = sorted(values[agent].keys() & reference.keys())
            if shared:
                mine = np.array([values[agent][s] for s in shared])
                ref = np.array([reference[s] for s in shared])
                entry["vs_clairvoyant"] = _ratio(float(mine.mean()), float(ref.mean()))
                entry["regret"] = _mean(mine - ref)  # the mean bootstrap_ci's interval holds
                entry["regret_ci_low"], entry["regret_ci_high"] = bootstrap_ci(mine - ref, resamples, seed)
            entries.append(entry)
        fair = sorted((e for e in entries if not e["clairvoyant"] and values[e["agent"]].keys() == seeds),
                      key=lambda e: e["mean"])
        for i, e in enumerate(fair):
            e["rank"] = fair[i - 1]["rank"] if i and e["mean"] == fair[i - 1]["mean"] else i + 1
        entries.sort(key=lambda e: (e["rank"] is None, e["rank"] or 0, e["mean"] if e["episodes"] else math.inf,
                                    e["agent"]))
        for e in entries:
            e["best_rule"] = e["agent"] == best_rule
        board.extend(entries)
    return board


def board_labels(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The agent of each row as :func:`aggregate` names its entry: per (objective, size, tier), a configuration (agent
    hash) under the name of its first row, and ``name@hash`` for a name that comes with several configurations."""
    names: dict[tuple[Any, ...], str] = {}
    hashes: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for row in rows:
        group = (row["objective"], row["size"], row["tier"])
        name = names.setdefault((*group, row["agent_hash"]), row["agent"])
        hashes[(*group, name)].add(row["agent_hash"])
    labels = []
    for row in rows:
        group = (row["objective"], row["size"], row["tier"])
        name = names[(*group, row["agent_hash"])]
        labels.append(name if len(hashes[(*group, name)]) == 1 else f"{name}@{row['agent_hash'][:6]}")
    return labels


def _group_order(group: tuple[Any, ...]) -> tuple[Any, ...]:
    from dynasched_gym.generation.stress_index import TIERS

    objective, size, tier = group
    return objective, size, TIERS.index(tier) if tier in TIERS else len(TIERS), tier


def _ci(prefix: str, values: np.ndarray, resamples: int, seed: int) -> dict[str, float]:
    low, high = bootstrap_ci(values, resamples, seed)
    return {f"{prefix}_low": low, f"{prefix}_high": high}


def _mean(values: Iterable[Any]) -> float:
    """The mean of the values that are not None, correctly rounded (``math.fsum``: independent of their order);
    NaN for none."""
    numbers = [float(v) for v in values if v is not None]
    return math.fsum(numbers) / len(numbers) if numbers else math.nan


def difficulty_trend(board: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per (objective, size): the best rule's mean normalised weighted tardiness in tier order, and
    whether it strictly increases (``None`` with fewer than two tiers, or when ``missing`` lists tiers without a best
    rule: the check cannot pass over them); ``agents`` lists every agent whose own ``nwt`` does not, over the tiers
    where it has one (NaN: no valid episode there, which says nothing of its trend)."""
    trend: dict[tuple[Any, ...], dict[str, Any]] = {}
    per_agent: dict[tuple[Any, ...], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    tiers: dict[tuple[Any, ...], dict[str, None]] = defaultdict(dict)  # every tier of the group, in order
    for e in board:  # board order is tier order within (objective, size)
        group = trend.setdefault((e["objective"], e["size"]), {"tiers": [], "best_rule_nwt": []})
        tiers[(e["objective"], e["size"])][e["tier"]] = None
        if e["best_rule"]:
            group["tiers"].append(e["tier"])
            group["best_rule_nwt"].append(e["nwt"])
        per_agent[(e["objective"], e["size"])][e["agent"]].append(e["nwt"])
    for group, info in trend.items():
        info["missing"] = [t for t in tiers[group] if t not in info["tiers"]]
        info["increasing"] = (bool(np.all(np.diff(info["best_rule_nwt"]) > 0))
                              if len(info["tiers"]) > 1 and not info["missing"] else None)
        info["agents"] = sorted(a for a, v in per_agent[group].items()
                                if not np.all(np.diff([x for x in v if not math.isnan(x)]) > 0))
    return trend
