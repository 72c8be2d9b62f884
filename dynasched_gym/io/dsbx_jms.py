"""The reference package's single-file JMS format (GEN-Bench, JMS-Bench, MK-Bench ``.jsonl``).

The file holds one JSON object::

    {"static_info": {"num_jobs", "num_machines", "ops_per_job": [...],
                     "candidates": {"(j,k)": [m, ...]}, "proc_time": {"(j,k)": {"m": pt}}},
     "emergency_static": {"<job>": {"candidates", "proc_time", ["ops_per_job"]}},
     "dynamic_events": {"job_arrival": [[job, t]], "machine_break": [[m, t]], "machine_repair": [[m, t]],
                        "job_cancel": [[job, t]], "job_emergency": [[job, t]]},
     "timestamp": ..., "meta": {...}}

Another top-level or ``static_info`` field is named in an :class:`~dynasched_gym.errors.UnreadFieldWarning`
(a misspelt ``dynamic_events`` would otherwise drop every event silently).

Mapping (a contract):

- Jobs ``1..num_jobs`` (1-based in the file) become jobs ``0..num_jobs-1`` named ``J<file id>``;
  operation k of job j is key ``"(j,k)"`` (1-based k), eligible on ``candidates`` with times from
  ``proc_time`` (both must agree; an entry for a job or operation that does not exist, or two keys
  naming the same operation, raise). Machines keep their 0-based file ids, named ``M<id>``, group
  ``"default"``, speed 1. The instance is named after the file stem.
- Release from ``job_arrival`` (default 0). No due dates; weight 1.
- ``emergency_static`` jobs are appended (in increasing file id) with weight 10.0 and release = their
  ``job_emergency`` time (one is required). The reference's emergency *preemption* (the emergency job
  evicts a running operation) is not modelled: here an emergency job is just a heavy job.
- ``machine_break`` and ``machine_repair`` entries are paired per machine in time order (k-th break
  with k-th repair) into ``BREAKDOWN(m, duration = repair - break)``; a break without a later repair
  (or a repair without a break) raises :class:`InstanceFormatError`. The instance keeps the ``resume`` policy:
  the preempted operation's remaining work may finish on any eligible machine. The reference resumes it only on
  the same machine; elsewhere it costs its full time (a policy between ``resume`` and ``restart``, which we do
  not model), so an episode that moves a preempted operation can be shorter here than there.
- ``job_cancel`` -> ``CANCELLATION``. Any other ``dynamic_events`` key raises.
- Events are stably sorted by time. The file groups events by kind, so we list breakdowns (by
  machine, then time) before cancellations (file order); equal-time events therefore come out
  breakdowns first. The simulator reorders same-time events by kind anyway.

A directory holding exactly one such ``.jsonl`` file (the shipped layout) is read as that file.
Errors name the file and the field, e.g. ``dynamic_events.machine_break[2]`` (not a line: the shipped files
are one line, and a pretty-printed file's line of a field is not known after parsing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dynasched_gym.checks import is_integer
from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import (
    EMERGENCY_WEIGHT,
    MAX_MAGNITUDE,
    MIN_PROCESSING_TIME,
    Event,
    EventType,
    Instance,
    Job,
    Machine,
    too_long,
    too_short,
)
from dynasched_gym.io.dsbx_dir import Where
from dynasched_gym.io.text import MAX_DECLARED, read_json

KEY = "static_info"
MARKER = f'"{KEY}"'
_KEY = re.compile(r"\(\s*([0-9]{1,9})\s*,\s*([0-9]{1,9})\s*\)\Z")  # ASCII ids int() converts quickly
_ID = re.compile(r"[0-9]{1,9}\Z")
_EVENT_KEYS = ("job_arrival", "machine_break", "machine_repair", "job_cancel", "job_emergency")


def _jms_file(path: Path) -> Path | None:
    """``path`` itself, or the single JMS ``.jsonl`` file inside a directory."""
    if path.is_file():
        return path
    if not path.is_dir():
        return None
    found = []
    for child in path.glob("*.jsonl"):
        if child.is_file():
            with child.open("r", encoding="utf-8", errors="replace") as fh:
                if MARKER in fh.read(4096):
                    found.append(child)
    return found[0] if len(found) == 1 else None


def sniff(path: Path, head: str) -> bool:
    """A file whose head contains ``"static_info"``, or a directory with exactly one such ``.jsonl`` file."""
    if path.is_file():
        return MARKER in head
    return _jms_file(path) is not None


def _pairs(where: Where, events: Mapping[str, Any], key: str) -> list[tuple[int, float, str]]:
    """Entries ``[[id, t], ...]`` of ``dynamic_events[key]`` as (id, t, field)."""
    items = where.get(events, key, f"dynamic_events.{key}", [])
    if not isinstance(items, list):
        raise where.fail("expected a list of [id, time] pairs", f"dynamic_events.{key}", items)
    out = []
    for i, item in enumerate(items):
        field = f"dynamic_events.{key}[{i}]"
        if not (isinstance(item, list) and len(item) == 2):
            raise where.fail("expected an [id, time] pair", field, item)
        ident, time = item
        if not is_integer(ident):
            raise where.fail("expected an integer id", field, ident)
        out.append((ident, where.check_number(time, field, minimum=0.0), field))
    return out


def _keyed(where: Where, spec: Any, name: str, field: str) -> tuple[Mapping[str, Any], dict[tuple[int, int], str]]:
    """``spec[name]`` (an object keyed ``"(j,k)"``) and its keys by (job, op), both 1-based."""
    table = where.get(spec, name, f"{field}.{name}")
    if not isinstance(table, Mapping):
        raise where.fail('expected an object {"(j,k)": ...}', f"{field}.{name}", table)
    keys: dict[tuple[int, int], str] = {}
    for key in table:
        match = _KEY.match(str(key))
        if match is None:
            raise where.fail('operation keys look like "(j,k)" (ids of up to 9 digits)', f"{field}.{name}", key)
        op = int(match[1]), int(match[2])
        if op in keys:
            raise where.fail(f'operation listed twice (also as "{keys[op]}")', f'{field}.{name}["{key}"]', key)
        keys[op] = key
    return table, keys


def _ops(where: Where, spec: Any, jobs: Sequence[tuple[int, int | None]], field: str,
         num_m: int) -> list[list[dict[int, float]]]:
    """Operations of each (file job id, op count or None) from ``spec["candidates"]`` / ``spec["proc_time"]``."""
    cands, cand_keys = _keyed(where, spec, "candidates", field)
    times, time_keys = _keyed(where, spec, "proc_time", field)
    counts = {job: sum(j == job for j, _ in cand_keys) if count is None else count for job, count in jobs}
    for name, keys in (("candidates", cand_keys), ("proc_time", time_keys)):
        for (j, k), key in keys.items():
            if not 1 <= k <= counts.get(j, 0):
                exists = f"job {j} has {counts[j]} operations" if j in counts else f"there is no job {j} here"
                raise where.fail(f"entry for an operation that does not exist ({exists})",
                                 f'{field}.{name}["{key}"]', key)
    out = []
    for job, n in counts.items():
        mine = sorted(k for j, k in cand_keys if j == job)
        if len(mine) != n or mine != list(range(1, n + 1)):  # the length first: n may be huge
            raise where.fail(f"job {job} needs operations ({job},1)..({job},{n}) in candidates",
                             f"{field}.candidates", mine)
        ops = []
        for k in range(1, n + 1):
            key = cand_keys[job, k]
            ms = cands[key]
            f = f'{field}.proc_time["{key}"]'
            pt = times.get(time_keys.get((job, k), ""))
            if not isinstance(ms, list) or not ms:
                raise where.fail("expected a non-empty list of machine ids", f'{field}.candidates["{key}"]', ms)
            if not isinstance(pt, Mapping):
                raise where.fail("expected an object {machine: time}", f, pt)
            op: dict[int, float] = {}
            for m in ms:
                if not is_integer(m) or not 0 <= m < num_m or m in op:
                    raise where.fail(f"bad or repeated machine id (machines are 0..{num_m - 1})",
                                     f'{field}.candidates["{key}"]', m)
                if str(m) not in pt:
                    raise where.fail("no processing time for this candidate machine", f, m)
                op[m] = where.check_number(pt[str(m)], f"{f}.{m}", positive=True)
                if op[m] < MIN_PROCESSING_TIME:
                    raise where.fail(too_short(), f"{f}.{m}", pt[str(m)])
                if op[m] > MAX_MAGNITUDE:
                    raise where.fail(too_long(), f"{f}.{m}", pt[str(m)])
            extra = set(pt) - {str(m) for m in ms}
            if extra:
                raise where.fail("processing time for a machine that is not a candidate", f, sorted(extra)[0])
            ops.append(op)
        out.append(ops)
    return out


def load(path: Path) -> Instance:
    """Read a JMS ``.jsonl`` file (or a directory holding exactly one)."""
    file = _jms_file(path)
    if file is None:
        raise InstanceFormatError("expected a JMS .jsonl file or a directory holding exactly one", source=str(path),
                                  value=sorted(p.name for p in path.iterdir()) if path.is_dir() else str(path))
    return from_json(read_json(file), file)


def from_json(data: Any, file: Path) -> Instance:
    """The instance of the parsed content ``data`` of the JMS file ``file``."""
    where = Where(str(file))
    info = where.get(data, "static_info", "static_info")
    if isinstance(data, Mapping):
        where.unread(data, ("static_info", "emergency_static", "dynamic_events", "timestamp", "meta"), "")
    jobs, num_m = _static_jobs(where, info)
    num_j = len(jobs)
    index = {j + 1: j for j in range(num_j)}  # job id -> job index
    events_obj = where.get(data, "dynamic_events", "dynamic_events", {})
    if not isinstance(events_obj, Mapping):
        raise where.fail("expected an object", "dynamic_events", events_obj)
    unknown = sorted(set(events_obj) - set(_EVENT_KEYS))
    if unknown:
        raise where.fail(f"unknown dynamic event kind (known: {', '.join(_EVENT_KEYS)})", "dynamic_events",
                         unknown[0])
    _add_emergency_jobs(where, data, events_obj, num_m, jobs, index)
    arrived: set[int] = set()
    for ident, time, field in _pairs(where, events_obj, "job_arrival"):
        if not 1 <= ident <= num_j or ident in arrived:
            raise where.fail(f"job_arrival for an unknown job (jobs are 1..{num_j}) or listed twice", field, ident)
        arrived.add(ident)
        jobs[index[ident]]["release"] = time
    events = _breakdowns(where, events_obj, num_m)
    for ident, time, field in _pairs(where, events_obj, "job_cancel"):
        if ident not in index:
            raise where.fail("job_cancel for an unknown job", field, ident)
        events.append(Event(time=time, type=EventType.CANCELLATION, job=index[ident]))
    events.sort(key=lambda e: e.time)
    try:
        return Instance.build(file.stem, [Machine(name=f"M{m}") for m in range(num_m)],
                              [Job(name=b["name"], ops=b["ops"], release=b["release"], weight=b["weight"])
                               for b in jobs], events)
    except InstanceFormatError as exc:
        raise exc.located(str(file)) from None


def _static_jobs(where: Where, info: Any) -> tuple[list[dict[str, Any]], int]:
    """The static jobs of ``static_info`` (released at 0 unless a job_arrival says otherwise), and the number of
    machines."""
    if isinstance(info, Mapping):
        where.unread(info, ("num_jobs", "num_machines", "ops_per_job", "candidates", "proc_time"), "static_info")
    num_j = where.index(info, "num_jobs", "static_info.num_jobs")
    num_m = where.index(info, "num_machines", "static_info.num_machines")
    if num_m > MAX_DECLARED:
        raise where.fail(f"at most {MAX_DECLARED} machines", "static_info.num_machines", num_m)
    per_job = where.get(info, "ops_per_job", "static_info.ops_per_job")
    if not isinstance(per_job, list) or len(per_job) != num_j:
        raise where.fail(f"expected a list of {num_j} operation counts", "static_info.ops_per_job", per_job)
    for j, count in enumerate(per_job):
        if not is_integer(count) or count < 1:
            raise where.fail("expected an operation count >= 1", f"static_info.ops_per_job[{j}]", count)
    static_ops = _ops(where, info, [(j + 1, c) for j, c in enumerate(per_job)], "static_info", num_m)
    return [{"name": f"J{j + 1}", "ops": ops, "release": 0.0, "weight": 1.0} for j, ops in enumerate(static_ops)], num_m


def _add_emergency_jobs(where: Where, data: Any, events_obj: Mapping[str, Any], num_m: int,
                        jobs: list[dict[str, Any]], index: dict[int, int]) -> None:
    """Append ``emergency_static``'s jobs to ``jobs`` (released at their job_emergency time, weighted as
    emergencies) and their ids to ``index``."""
    emergency = where.get(data, "emergency_static", "emergency_static", {})
    if not isinstance(emergency, Mapping):
        raise where.fail("expected an object {job: spec}", "emergency_static", emergency)
    emergency_release = {}
    for ident, time, field in _pairs(where, events_obj, "job_emergency"):
        if str(ident) not in emergency or ident in emergency_release:
            raise where.fail("job_emergency for a job not in emergency_static (or listed twice)", field, ident)
        emergency_release[ident] = time
    for key in sorted(emergency, key=lambda k: int(k) if _ID.match(str(k)) else -1):
        field = f"emergency_static.{key}"
        if not _ID.match(str(key)) or int(key) in index:
            raise where.fail("emergency job ids are integers after the static jobs", field, key)
        ident = int(key)
        if ident not in emergency_release:
            raise where.fail("emergency job without a job_emergency time", field, ident)
        if isinstance(emergency[key], Mapping):  # a misspelt ops_per_job would take the operations' count unseen
            where.unread(emergency[key], ("candidates", "proc_time", "ops_per_job"), field)
        count = emergency[key].get("ops_per_job") if isinstance(emergency[key], Mapping) else None
        if count is not None and (not is_integer(count) or count < 1):
            raise where.fail("expected an operation count >= 1", f"{field}.ops_per_job", count)
        index[ident] = len(jobs)
        jobs.append({"name": f"J{ident}", "ops": _ops(where, emergency[key], [(ident, count)], field, num_m)[0],
                     "release": emergency_release[ident], "weight": EMERGENCY_WEIGHT})


def _breakdowns(where: Where, events_obj: Mapping[str, Any], num_m: int) -> list[Event]:
    """One BREAKDOWN per machine_break, lasting until the machine's next machine_repair."""
    events: list[Event] = []
    breaks: dict[int, list[tuple[float, str]]] = {}
    repairs: dict[int, list[tuple[float, str]]] = {}
    for key, table in (("machine_break", breaks), ("machine_repair", repairs)):
        for m, time, field in _pairs(where, events_obj, key):
            if not 0 <= m < num_m:
                raise where.fail(f"unknown machine id (machines are 0..{num_m - 1})", field, m)
            table.setdefault(m, []).append((time, field))
    for m in sorted(set(breaks) | set(repairs)):
        down, up = sorted(breaks.get(m, [])), sorted(repairs.get(m, []))
        for k in range(max(len(down), len(up))):
            if k >= len(up) or k >= len(down):
                time, field = down[k] if k < len(down) else up[k]
                kind = "break without a repair" if k < len(down) else "repair without a break"
                raise where.fail(f"machine {m}: {kind}", field, time)
            (t0, field), (t1, _) = down[k], up[k]
            if t1 <= t0 or (k + 1 < len(down) and down[k + 1][0] < t1):
                raise where.fail(f"machine {m}: repair at {t1} does not end this break", field, t0)
            events.append(Event(time=t0, type=EventType.BREAKDOWN, machine=m, duration=t1 - t0))
    return events
