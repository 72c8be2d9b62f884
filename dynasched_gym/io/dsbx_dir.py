"""The reference package's (``dsbx``) generated instance directory: reader and writer.

A directory holds ``events.jsonl`` (one event object a line, non-decreasing ``time``),
``static_jobs.json`` and either ``input_model.json`` (machines under ``plant.machines``) or
``static_machines.json`` (machines under ``machines``). Other files are ignored. The instance is
named after the directory. A machine or event field that is neither read nor one the reference writes
without our needing it (``job_family``, ``batch_id``, ``reason``, ...) is named in an
:class:`~dynasched_gym.errors.UnreadFieldWarning`, file and line: a misspelt optional field
(``from_step``, ``speed``) would otherwise fall back to its default silently.

Mapping (a contract: the writer inverts it):

- Machines: ``{"id", "group", "speed"}`` in file order; ``id`` becomes the machine name. A route step
  "group g, nominal p" is an operation eligible on every machine m of g, with time p / speed(m).
- Jobs: one per ``ARRIVAL`` line, in file order; name = ``job_id``, release = the ARRIVAL time,
  operations from its ``routing`` + ``process_times`` (else from ``static_jobs.json``), weight 1. A
  ``static_jobs.json`` job without an ARRIVAL line is not in the instance, with an UnreadFieldWarning.
- Due date: a ``DUE_DATE_SET`` at or before the job's arrival time sets the static due (the last such
  line wins); a later one becomes a ``DUE_DATE_CHANGE`` event; without any, ``static_jobs.json``'s
  ``due_date`` is used when present, else the job has no due date.
- Initial weight: a ``PRIORITY_CHANGE`` line placed *before* the job's ARRIVAL line sets the static
  weight (the writer puts one there, at the arrival time, for jobs of weight > 1); later ones are events,
  and so is one earlier than the arrival time that follows an ``ORDER_CANCELLATION`` line of the job (a
  cancelled job's priority no longer changes). dsbx applies same-time events by kind (ARRIVAL first), so
  both readings agree.
- Events (one per line, file order; same-time ordering is the simulator's job):
  ``REPAIR_COMPLETION`` -> REPAIR; ``BREAKDOWN(machine_id, duration)`` -> BREAKDOWN;
  ``PREVENTIVE_MAINTENANCE(machine_id, duration)`` -> MAINTENANCE; a ``machine_id`` that names a
  group (and no machine) expands to one event per machine of the group, for all three kinds;
  ``PTIME_CHANGE(step_index, new_process_time)`` -> PTIME_CHANGE(op, value) (value is nominal:
  time on m = value / speed(m)); ``ROUTE_CHANGE(new_routing, new_process_times, from_step)`` ->
  ROUTE_CHANGE(ops, op=from_step, default 0); ``PRIORITY_CHANGE(new_priority)`` -> PRIORITY_CHANGE
  with weight 10.0 when ``new_priority <= emergency_priority`` (``input_model.json``
  ``dynamic_scenarios.emergency_priority``, default -1) else 1.0, mirroring dsbx's ×10 tardiness weight
  for emergency jobs; ``DUE_DATE_CHANGE(new_due_date)`` -> DUE_DATE_CHANGE(due);
  ``ORDER_CANCELLATION`` -> CANCELLATION. ``arrival_type``, ``job_family``, ``batch_id``, ``reason``
  and ``maintenance_type`` are not kept. So an ``arrival_type="emergency"`` job weighs 1 until its
  emergency ``PRIORITY_CHANGE``, as in dsbx's simulator and metrics (only dsbx's CLI shows such jobs to its
  rules as emergencies from arrival); the shipped Grid data draw that change uniformly up to the horizon, so
  most such jobs complete before it and end with weight 1 there as here.
- Errors: any other ``event_type``, an unsorted line, unknown job or machine ids and bad values
  raise :class:`InstanceFormatError` naming the file, the 1-based line and the field.

Writer (:func:`save`): ``events.jsonl`` + ``static_jobs.json`` + ``static_machines.json``. Every operation
(static or in a route change) must be a whole machine group whose time × speed is the same nominal p on all
its machines. Jobs are written in release order (stable), so an instance whose releases decrease comes back
with its jobs renumbered. A weight > 1 is written as priority -1 (emergency, also
``arrival_type="emergency"``), else 0; weights other than 1 and 10 therefore do not survive a round trip (a
warning counts them); a PRIORITY_CHANGE before the job's release is folded into that initial priority unless
the job's cancellation comes before it. A ``PTIME_CHANGE`` factor is written as the factor times the nominal
time last known for that op index in the stream (static route, overwritten by the job's earlier route changes
from their ``op`` index on and by earlier time changes); this is exact unless a route change takes effect
later than its ``op`` index. REWORK events and the ``restart`` breakdown policy cannot be expressed, nor a
PTIME_CHANGE or ROUTE_CHANGE after a REWORK of its job (its op index counts the reworked operation): they
raise unless ``drop_unsupported=True`` (``dynasched-gym convert --drop-unsupported``), which drops them with a
warning.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynasched_gym.checks import INEXACT_INTEGER, check_path, holds_exactly, is_finite_real, is_integer
from dynasched_gym.errors import InstanceFormatError, UnreadFieldWarning
from dynasched_gym.instance import (
    EMERGENCY_WEIGHT,
    MAX_MAGNITUDE,
    MIN_PROCESSING_TIME,
    STREAM_EVENT_TYPES,
    Event,
    EventType,
    Instance,
    Job,
    Machine,
    current_umask,
    too_long,
    too_short,
)
from dynasched_gym.io.text import DuplicateKeyError, excerpt, parse_json, read_json, read_text

EVENTS = "events.jsonl"
STATIC_JOBS = "static_jobs.json"
STATIC_MACHINES = "static_machines.json"
INPUT_MODEL = "input_model.json"
EMERGENCY_PRIORITY = -1
_WRITTEN = (EVENTS, STATIC_JOBS, STATIC_MACHINES)
_MISSING: Any = object()

_MACHINE_EVENTS = {
    "REPAIR_COMPLETION": EventType.REPAIR,
    "BREAKDOWN": EventType.BREAKDOWN,
    "PREVENTIVE_MAINTENANCE": EventType.MAINTENANCE,
}
_JOB_EVENTS = ("DUE_DATE_SET", "PTIME_CHANGE", "ROUTE_CHANGE", "PRIORITY_CHANGE", "DUE_DATE_CHANGE",
               "ORDER_CANCELLATION")
_EVENT_TYPES = ("ARRIVAL", *_MACHINE_EVENTS, *_JOB_EVENTS)
#: The fields of each event kind: those read, and those the reference writes that we do not keep.
_EVENT_FIELDS = {
    "ARRIVAL": ("job_id", "routing", "process_times", "arrival_type", "job_family", "batch_id"),
    "REPAIR_COMPLETION": ("machine_id",), "BREAKDOWN": ("machine_id", "duration"),
    "PREVENTIVE_MAINTENANCE": ("machine_id", "duration", "maintenance_type"),
    "DUE_DATE_SET": ("job_id", "due_date"), "PTIME_CHANGE": ("job_id", "step_index", "new_process_time"),
    "ROUTE_CHANGE": ("job_id", "new_routing", "new_process_times", "from_step"),
    "PRIORITY_CHANGE": ("job_id", "new_priority"), "DUE_DATE_CHANGE": ("job_id", "new_due_date", "reason"),
    "ORDER_CANCELLATION": ("job_id", "reason"),
}
#: The file's name of each field of our events that an Instance error may name, by dsbx event kind.
_FILE_FIELDS = {
    "PTIME_CHANGE": {"value": "new_process_time", "op": "step_index"},
    "ROUTE_CHANGE": {"ops": "new_process_times", "op": "from_step"},
    "DUE_DATE_SET": {"due": "due_date"}, "DUE_DATE_CHANGE": {"due": "new_due_date"},
}  # (not weight or machine: ours are converted, the file's priority and machine name would be shown ours)
_COMMON_FIELDS = ("time", "event_type", "timestamp", "meta")
_MACHINE_FIELDS = ("id", "group", "speed")
# static_jobs.json entries: read, or written by the reference and not kept
_STATIC_JOB_FIELDS = ("routing", "process_times", "due_date", "arrival_type", "job_family", "batch_id")
#: Our event kinds that :func:`save` can write (REWORK has no dsbx counterpart).
SUPPORTED_EVENT_TYPES = tuple(t for t in STREAM_EVENT_TYPES if t != EventType.REWORK)


# ---------------------------------------------------------------------------------------------- helpers
@dataclass
class Where:
    """Where values come from (file and line); builds located errors and checks fields."""

    source: str
    line: int | None = None

    def fail(self, reason: str, field: str, value: Any) -> InstanceFormatError:
        """An error at this place about ``field``'s ``value`` (to raise)."""
        return InstanceFormatError(reason, source=self.source, line=self.line, field=field, value=value)

    def get(self, obj: Any, key: str, field: str, default: Any = _MISSING) -> Any:
        """``obj[key]``; ``obj`` must be a JSON object, and ``key`` present unless a ``default`` is given."""
        if not isinstance(obj, Mapping):
            raise self.fail("expected a JSON object", field.rpartition(".")[0] or field, obj)
        if key not in obj:
            if default is _MISSING:
                raise self.fail("missing field", field, None)
            return default
        return obj[key]

    def number(self, obj: Any, key: str, field: str, *, positive: bool = False, minimum: float | None = None,
               default: Any = _MISSING) -> Any:
        """``obj[key]`` checked by :meth:`check_number` (``default`` when absent, if given)."""
        val = self.get(obj, key, field, default)
        if default is not _MISSING and val is default:
            return val
        return self.check_number(val, field, positive=positive, minimum=minimum)

    def check_number(self, val: Any, field: str, *, positive: bool = False, minimum: float | None = None) -> float:
        """``val`` as a float: a finite number (bools not), > 0 with ``positive``, >= ``minimum`` if given."""
        if not is_finite_real(val):
            raise self.fail("expected a finite number", field, val)
        if not holds_exactly(val):
            raise self.fail(INEXACT_INTEGER, field, val)
        if positive and val <= 0:
            raise self.fail("must be > 0", field, val)
        if minimum is not None and val < minimum:
            raise self.fail(f"must be >= {minimum}", field, val)
        return float(val)

    def unread(self, obj: Mapping[str, Any], known: Sequence[str], field: str) -> None:
        """Warn about each key of ``obj`` not in ``known``: a misspelt optional field would otherwise fall back to
        its default without a word."""
        for key in obj:
            if key not in known:
                where = f"{self.source}" + ("" if self.line is None else f", line {self.line}")
                warnings.warn(f"{where}: field {field + '.' if field else ''}{key} is not read (known: "
                              f"{', '.join(known)}); if it is a misspelling, its default was used",
                              UnreadFieldWarning, stacklevel=3)

    def index(self, obj: Any, key: str, field: str, default: Any = _MISSING) -> int:
        """``obj[key]``, an integer >= 0."""
        val = self.get(obj, key, field, default)
        if not is_integer(val) or val < 0:
            raise self.fail("expected an integer >= 0", field, val)
        return val

    def string(self, obj: Any, key: str, field: str, default: Any = _MISSING) -> str:
        """``obj[key]``, a string."""
        val = self.get(obj, key, field, default)
        if not isinstance(val, str):
            raise self.fail("expected a string", field, val)
        return val


class _Plant:
    """Machines by id and group; turns dsbx routes into operations."""

    def __init__(self, machines: Any, where: Where, field: str) -> None:
        if not isinstance(machines, list) or not machines:
            raise where.fail("expected a non-empty list of machines", field, machines)
        self.machines: list[Machine] = []
        self.index: dict[str, int] = {}
        self.groups: dict[str, list[int]] = {}
        for i, obj in enumerate(machines):
            f = f"{field}[{i}]"
            name = where.string(obj, "id", f"{f}.id")
            where.unread(obj, _MACHINE_FIELDS, f)
            if name in self.index:
                raise where.fail("duplicate machine id", f"{f}.id", name)
            group = where.string(obj, "group", f"{f}.group", "default")
            speed = where.number(obj, "speed", f"{f}.speed", positive=True, default=1.0)
            self.index[name] = i
            self.groups.setdefault(group, []).append(i)
            self.machines.append(Machine(name=name, group=group, speed=float(speed)))

    def resolve(self, machine_id: Any, where: Where, field: str) -> list[int]:
        """The machine named ``machine_id``, or every machine of the group of that name."""
        if isinstance(machine_id, str):
            if machine_id in self.index:
                return [self.index[machine_id]]
            if machine_id in self.groups:
                return self.groups[machine_id]
        raise where.fail(f"unknown machine or group id (known: {', '.join(self.index)})", field, machine_id)

    def operations(
        self, routing: Any, times: Any, where: Where, field: str, times_field: str
    ) -> list[dict[int, float]]:
        """Operations of a route: step k on every machine m of ``routing[k]`` for ``times[k] / speed(m)``."""
        if not isinstance(routing, list) or not routing:
            raise where.fail("expected a non-empty list of machine groups", field, routing)
        if not isinstance(times, list) or len(times) != len(routing):
            raise where.fail(f"expected a list of {len(routing)} processing times", times_field, times)
        ops = []
        for k, group in enumerate(routing):
            if not isinstance(group, str) or group not in self.groups:
                raise where.fail(f"unknown machine group (known: {', '.join(self.groups)})", f"{field}[{k}]", group)
            p = where.check_number(times[k], f"{times_field}[{k}]", positive=True)
            fastest = max((self.machines[m] for m in self.groups[group]), key=lambda machine: machine.speed)
            if p / fastest.speed < MIN_PROCESSING_TIME:  # named here, not as our record's field
                on = "" if fastest.speed == 1 else (f"; {fastest.name}, of speed {fastest.speed:g}, would take "
                                                    f"less than {MIN_PROCESSING_TIME:g}")
                raise where.fail(too_short(MIN_PROCESSING_TIME * fastest.speed) + on, f"{times_field}[{k}]", times[k])
            slowest = min((self.machines[m] for m in self.groups[group]), key=lambda machine: machine.speed)
            if p / slowest.speed > MAX_MAGNITUDE:
                on = "" if slowest.speed == 1 else (f"; {slowest.name}, of speed {slowest.speed:g}, would take "
                                                    f"more than {MAX_MAGNITUDE:g}")
                raise where.fail(too_long(MAX_MAGNITUDE * slowest.speed) + on, f"{times_field}[{k}]", times[k])
            ops.append({m: p / self.machines[m].speed for m in self.groups[group]})
        return ops


# ---------------------------------------------------------------------------------------------- reader
def sniff(path: Path, head: str) -> bool:
    """A directory holding ``events.jsonl``."""
    return path.is_dir() and (path / EVENTS).is_file()


def _read_plant(path: Path) -> tuple[_Plant, float]:
    if not (path / EVENTS).is_file():
        raise InstanceFormatError(f"not a dsbx instance directory (no {EVENTS})", source=str(path), value=str(path))
    model_path = path / INPUT_MODEL
    emergency_priority: float = EMERGENCY_PRIORITY
    if model_path.is_file():
        model = read_json(model_path)
        where = Where(str(model_path))
        scenarios = where.get(model, "dynamic_scenarios", "dynamic_scenarios", None)
        scenarios = {} if scenarios is None else scenarios  # null as absent; 0, [] or "" are refused below
        emergency_priority = where.number(scenarios, "emergency_priority", "dynamic_scenarios.emergency_priority",
                                          default=EMERGENCY_PRIORITY)
        plant = where.get(model, "plant", "plant", None)
        plant = {} if plant is None else plant
        if where.get(plant, "machines", "plant.machines", None) is not None:
            return _Plant(plant["machines"], where, "plant.machines"), emergency_priority
    machines_path = path / STATIC_MACHINES
    if not machines_path.is_file():
        raise InstanceFormatError(f"no machines: neither {INPUT_MODEL} (plant.machines) nor {STATIC_MACHINES}",
                                  source=str(path), field="machines", value=sorted(p.name for p in path.iterdir()))
    where = Where(str(machines_path))
    return _Plant(where.get(read_json(machines_path), "machines", "machines"), where, "machines"), emergency_priority


def _read_lines(path: Path) -> list[tuple[int, dict[str, Any], float, str]]:
    """Non-blank lines of events.jsonl as (line, object, time, event_type), checked for order."""
    source = str(path)
    text = read_text(path)
    records = []
    prev: float | None = None
    # JSON Lines breaks only at "\n": splitlines() would also break inside a string holding a raw U+2028
    for no, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = Where(source, no)
        try:
            obj = parse_json(line)
        except json.JSONDecodeError as exc:
            raise where.fail(f"invalid JSON: {exc.msg}", "event", excerpt(line, exc.pos)) from None
        except DuplicateKeyError as exc:
            raise where.fail("a key appears twice in the event", exc.key, line) from None
        time = where.number(obj, "time", "time", minimum=0.0)
        kind = where.get(obj, "event_type", "event_type")
        if kind not in _EVENT_TYPES:
            raise where.fail(f"unknown event type (known: {', '.join(_EVENT_TYPES)})", "event_type", kind)
        if prev is not None and time < prev:
            raise where.fail(f"events are not sorted by time (previous event at {prev})", "time", time)
        where.unread(obj, (*_COMMON_FIELDS, *_EVENT_FIELDS[kind]), "")
        prev = time
        records.append((no, obj, time, kind))
    return records


def load(path: Path) -> Instance:
    """Read a dsbx instance directory (mapping in the module docstring)."""
    plant, emergency_priority = _read_plant(path)
    events_path = path / EVENTS
    source = str(events_path)
    jobs_path = path / STATIC_JOBS
    static: Any = {}
    if jobs_path.is_file():
        static = Where(str(jobs_path)).get(read_json(jobs_path), "jobs", "jobs")
        if not isinstance(static, Mapping):
            raise InstanceFormatError("expected an object {job_id: job}", source=str(jobs_path), field="jobs",
                                      value=static)
        static_where = Where(str(jobs_path))
        for name, entry in static.items():  # a misspelt due_date left the job without one, unseen
            if isinstance(entry, Mapping):
                static_where.unread(entry, _STATIC_JOB_FIELDS, f"jobs.{name}")
    records = _read_lines(events_path)

    jobs: list[dict[str, Any]] = []
    job_index: dict[str, int] = {}
    for pos, (no, obj, time, kind) in enumerate(records):
        if kind != "ARRIVAL":
            continue
        where = Where(source, no)
        name = where.string(obj, "job_id", "job_id")
        if name in job_index:
            raise where.fail("duplicate ARRIVAL for this job", "job_id", name)
        if "routing" in obj:
            ops = plant.operations(obj["routing"], obj.get("process_times"), where, "routing", "process_times")
        elif name in static:
            swhere = Where(str(jobs_path))
            f = f"jobs.{name}"
            ops = plant.operations(swhere.get(static[name], "routing", f"{f}.routing"), static[name].get(
                "process_times"), swhere, f"{f}.routing", f"{f}.process_times")
        else:
            raise where.fail(f"ARRIVAL without routing and no entry in {STATIC_JOBS}", "routing", None)
        job_index[name] = len(jobs)
        jobs.append({"name": name, "ops": ops, "release": time, "due": None, "weight": 1.0, "pos": pos, "line": no})

    events: list[Event] = []
    event_lines: list[int] = []
    event_kinds: list[str] = []  # the dsbx kind of each event, for the file's field names in an error
    cancelled: set[int] = set()  # jobs an earlier line cancels
    for pos, (no, obj, time, kind) in enumerate(records):
        if kind == "ARRIVAL":
            continue
        where = Where(source, no)
        if kind in _MACHINE_EVENTS:
            etype = _MACHINE_EVENTS[kind]
            duration = None if etype == EventType.REPAIR else where.number(obj, "duration", "duration", positive=True)
            for m in plant.resolve(where.get(obj, "machine_id", "machine_id"), where, "machine_id"):
                events.append(Event(time=time, type=etype, machine=m, duration=duration))
                event_lines.append(no)
                event_kinds.append(kind)
            continue
        job_id = where.get(obj, "job_id", "job_id")
        if not isinstance(job_id, str) or job_id not in job_index:
            raise where.fail("unknown job id (no ARRIVAL for it)", "job_id", job_id)
        j = job_index[job_id]
        job = jobs[j]
        event: Event
        if kind == "DUE_DATE_SET":
            due = where.number(obj, "due_date", "due_date")
            if time <= job["release"]:
                job["due"] = due
                continue
            event = Event(time=time, type=EventType.DUE_DATE_CHANGE, job=j, due=due)
        elif kind == "PRIORITY_CHANGE":
            prio = where.number(obj, "new_priority", "new_priority")
            weight = EMERGENCY_WEIGHT if prio <= emergency_priority else 1.0
            if pos < job["pos"] and not (j in cancelled and time < job["release"]):
                job["weight"] = weight
                continue
            event = Event(time=time, type=EventType.PRIORITY_CHANGE, job=j, weight=weight)
        elif kind == "DUE_DATE_CHANGE":
            event = Event(time=time, type=EventType.DUE_DATE_CHANGE, job=j,
                          due=where.number(obj, "new_due_date", "new_due_date"))
        elif kind == "PTIME_CHANGE":
            event = Event(time=time, type=EventType.PTIME_CHANGE, job=j,
                          op=where.index(obj, "step_index", "step_index"),
                          value=where.number(obj, "new_process_time", "new_process_time", positive=True))
        elif kind == "ROUTE_CHANGE":
            ops = plant.operations(where.get(obj, "new_routing", "new_routing"), obj.get("new_process_times"), where,
                                   "new_routing", "new_process_times")
            event = Event(time=time, type=EventType.ROUTE_CHANGE, job=j, ops=tuple(ops),
                          op=where.index(obj, "from_step", "from_step", 0))
        else:  # ORDER_CANCELLATION
            event = Event(time=time, type=EventType.CANCELLATION, job=j)
            cancelled.add(j)
        events.append(event)
        event_lines.append(no)
        event_kinds.append(kind)

    absent = [name for name in static if name not in job_index]
    if absent:  # the module's mapping: one job per ARRIVAL line, so these are not in the instance
        warnings.warn(f"{jobs_path}: {len(absent)} job(s) have no ARRIVAL line in {EVENTS} and are not in the "
                      f"instance (a truncated {EVENTS}?): {', '.join(map(str, absent[:5]))}"
                      f"{', ...' if len(absent) > 5 else ''}", UnreadFieldWarning, stacklevel=2)
    for job in jobs:
        entry = static.get(job["name"])
        if job["due"] is None and isinstance(entry, Mapping) and entry.get("due_date") is not None:
            job["due"] = Where(str(jobs_path)).number(entry, "due_date", f"jobs.{job['name']}.due_date")
    try:
        return Instance.build(
            path.name, plant.machines,
            [Job(name=b["name"], ops=b["ops"], release=b["release"], due=b["due"], weight=b["weight"]) for b in jobs],
            events,
        )
    except InstanceFormatError as exc:
        raise _locate(exc, str(path), source, [b["line"] for b in jobs], event_lines, event_kinds) from None


def _locate(exc: InstanceFormatError, directory: str, source: str, job_lines: Sequence[int],
            event_lines: Sequence[int], event_kinds: Sequence[str]) -> InstanceFormatError:
    """Re-raise an Instance error with the file and line of the job or event it names (and, for an event, the
    file's name of the field, where it has another: ``events[3].value`` of a PTIME_CHANGE is ``new_process_time``)."""
    match = re.match(r"(jobs|events)\[(\d+)\](?:\.(\w+)(\[\d+\])?)?", exc.field or "")
    if match is None:
        return exc.located(directory)
    if match[1] == "jobs":
        return exc.located(source, job_lines[int(match[2])])
    i = int(match[2])
    name = _FILE_FIELDS.get(event_kinds[i], {}).get(match[3] or "")
    if name is None:
        return exc.located(source, event_lines[i])
    return InstanceFormatError(exc.reason, source=source, line=event_lines[i], field=name + (match[4] or ""),
                               value=exc.value)


# ---------------------------------------------------------------------------------------------- writer
def _nominal(inst: Instance, groups: Mapping[str, list[int]], op: Mapping[int, float],
             field: str) -> tuple[str, float, bool]:
    """The (group, nominal time, exact) of an operation that covers a whole group with equal time × speed;
    ``exact``: every machine's time is reproduced bit for bit by nominal / speed."""
    machines = sorted(int(m) for m in op)
    names = {inst.machine_groups[m] for m in machines}
    group = next(iter(names))
    if len(names) != 1 or machines != groups[group]:
        members = "; ".join(f"group {name!r} is machines {groups[name]}" for name in sorted(names))
        raise InstanceFormatError(f"dsbx needs every operation to be one whole machine group: it is eligible on "
                                  f"machines {machines}, and {members}", source=f"<{inst.name}>",
                                  field=field, value={int(m): float(t) for m, t in op.items()})
    speed = {m: float(inst.machine_speed[m]) for m in machines}
    raws = list(dict.fromkeys(float(op[m]) * speed[m] for m in machines))  # each machine's time × speed
    raw = raws[0]
    # The shortest decimal that reproduces every time exactly (so load -> save -> load is exact).
    for p in [*(round(r, d) for d in range(4, 16) for r in raws), *raws]:
        if p > 0 and all(p / speed[m] == float(op[m]) for m in machines):
            return group, p, True
    if all(abs(float(op[m]) * speed[m] - raw) <= 1e-9 * max(1.0, abs(raw)) for m in machines):
        return group, raw, False
    raise InstanceFormatError("dsbx needs time × speed to be equal on all machines of the group",
                              source=f"<{inst.name}>", field=field,
                              value={int(m): float(t) for m, t in op.items()})


def _route(inst: Instance, groups: Mapping[str, list[int]], ops: Sequence[Mapping[int, float]],
           field: str) -> tuple[list[str], list[float], int]:
    """The groups and nominal times of ``ops``, and how many of them do not reproduce every time exactly."""
    triples = [_nominal(inst, groups, op, f"{field}[{k}].eligible") for k, op in enumerate(ops)]
    return [g for g, _, _ in triples], [p for _, p, _ in triples], sum(not exact for _, _, exact in triples)


@dataclass
class _Losses:
    """What writing an instance as dsbx files loses: items it cannot express, weights it rounds to a priority,
    and operations whose nominal time does not give every machine's time exactly."""

    unsupported: list[str] = field(default_factory=list)
    rounded_weights: int = 0
    inexact_times: int = 0

    def round_weight(self, weight: float) -> None:
        self.rounded_weights += weight not in (1.0, EMERGENCY_WEIGHT)

    def report(self, where: str, drop_unsupported: bool) -> None:
        """Raise for an unsupported item unless ``drop_unsupported``; warn about every loss."""
        if self.unsupported:
            if not drop_unsupported:
                raise InstanceFormatError("not expressible in the dsbx format (pass drop_unsupported=True, or "
                                          "--drop-unsupported to dynasched-gym convert, to drop it)", source=where,
                                          field=self.unsupported[0].split(" ")[0],
                                          value=self.unsupported[0])
            warnings.warn(f"dsbx format: dropped {len(self.unsupported)} unsupported item(s): "
                          f"{', '.join(self.unsupported[:5])}", stacklevel=4)
        if self.rounded_weights:
            warnings.warn(f"dsbx format: {self.rounded_weights} weight(s) other than 1 and {EMERGENCY_WEIGHT} become "
                          f"priority 0 or {EMERGENCY_PRIORITY}", stacklevel=4)
        if self.inexact_times:
            warnings.warn(f"dsbx format: {self.inexact_times} operation(s) have no nominal time that gives every "
                          "machine's time exactly (time × speed differs in the last bits): reloading changes those "
                          "times by at most 1e-9 relative", stacklevel=4)


#: A line of ``events.jsonl`` before sorting: (time, rank, object); arrivals (rank 0) come first at equal times.
_Line = tuple[float, int, dict[str, Any]]


def render(instance: Instance, drop_unsupported: bool = False) -> dict[str, str]:
    """The dsbx files of ``instance`` as {file name: text} (see the module docstring)."""
    inst = instance
    where = f"<{inst.name}>"
    _check_unique_names(inst, where)
    groups: dict[str, list[int]] = {}
    for m, g in enumerate(inst.machine_groups):
        groups.setdefault(g, []).append(m)
    losses = _Losses()
    if inst.breakdown_policy != "resume":
        losses.unsupported.append(f"breakdown_policy {inst.breakdown_policy!r} (dsbx always resumes)")
    routes = [_route(inst, groups, inst.job_ops(j), f"jobs[{j}].ops") for j in range(inst.num_jobs)]
    losses.inexact_times += sum(r[2] for r in routes)
    # Priority changes before a job's release give its weight at arrival: folded into the static weight,
    # unless the job is already cancelled (the simulator ignores them then; the reader keeps them as events).
    weights = [float(w) for w in inst.job_weight]
    folded = set()
    cancelled = set()
    for i, e in enumerate(inst.events):
        if e.type == EventType.CANCELLATION:
            cancelled.add(e.job)
        elif e.type == EventType.PRIORITY_CHANGE and e.time < inst.job_release[e.job] and e.job not in cancelled:
            weights[int(e.job)] = float(e.weight)  # type: ignore[arg-type]
            folded.add(i)
    static_jobs, lines = _arrivals(inst, routes, weights, losses)
    lines += _event_lines(inst, groups, routes, folded, losses, where)
    losses.report(where, drop_unsupported)
    lines.sort(key=lambda x: (x[0], x[1]))  # stable: file order kept within (time, rank)
    compact = {"separators": (",", ":"), "allow_nan": False}
    machines = [{"id": inst.machine_names[m], "group": inst.machine_groups[m], "speed": float(inst.machine_speed[m])}
                for m in range(inst.num_machines)]
    return {
        EVENTS: "".join(json.dumps(obj, **compact) + "\n" for _, _, obj in lines),  # type: ignore[arg-type]
        STATIC_JOBS: json.dumps({"jobs": static_jobs}, indent=2, allow_nan=False) + "\n",
        STATIC_MACHINES: json.dumps({"machines": machines}, indent=2, allow_nan=False) + "\n",
    }


def _check_unique_names(inst: Instance, where: str) -> None:
    """dsbx refers to machines and jobs by name."""
    for names, kind in ((inst.machine_names, "machines"), (inst.job_names, "jobs")):
        seen: set[str] = set()
        for i, name in enumerate(names):
            if name in seen:
                raise InstanceFormatError("dsbx needs unique names", source=where, field=f"{kind}[{i}].name",
                                          value=name)
            seen.add(name)


def _arrivals(inst: Instance, routes: Sequence[tuple[list[str], list[float], int]], weights: Sequence[float],
              losses: _Losses) -> tuple[dict[str, Any], list[_Line]]:
    """``static_jobs.json``'s jobs, and each job's arrival lines (its emergency priority, ARRIVAL, due date),
    jobs in release order."""
    static_jobs: dict[str, Any] = {}
    lines: list[_Line] = []
    for j in sorted(range(inst.num_jobs), key=lambda j: float(inst.job_release[j])):
        name, release, weight = inst.job_names[j], float(inst.job_release[j]), weights[j]
        due = None if inst.job_due[j] != inst.job_due[j] else float(inst.job_due[j])
        losses.round_weight(weight)
        routing, times, _ = routes[j]
        entry: dict[str, Any] = {"job_family": "Custom", "routing": routing, "process_times": times,
                                 "arrival_type": "emergency" if weight > 1 else "planned"}
        if due is not None:
            entry["due_date"] = due
        static_jobs[name] = entry
        if weight > 1:
            lines.append((release, 0, {"time": release, "event_type": "PRIORITY_CHANGE", "job_id": name,
                                       "new_priority": EMERGENCY_PRIORITY}))
        lines.append((release, 0, {"time": release, "event_type": "ARRIVAL", "job_id": name, "job_family": "Custom",
                                   "routing": routing, "process_times": times, "batch_id": None,
                                   "arrival_type": entry["arrival_type"]}))
        if due is not None:
            lines.append((release, 0, {"time": release, "event_type": "DUE_DATE_SET", "job_id": name,
                                       "due_date": due}))
    return static_jobs, lines


def _event_lines(inst: Instance, groups: Mapping[str, list[int]],
                 routes: Sequence[tuple[list[str], list[float], int]], folded: set[int], losses: _Losses,
                 where: str) -> list[_Line]:
    """The lines of the instance's events, in event order, except those ``folded`` into a job's arrival."""
    # Per job, op index -> the nominal time last known for it along the stream (for PTIME_CHANGE factors).
    nominal = [dict(enumerate(times)) for _, times, _ in routes]
    current_due = [None if d != d else float(d) for d in inst.job_due]
    reworked: set[int] = set()  # jobs with a REWORK so far: it shifts the op indexes of their later events
    lines: list[_Line] = []
    for i, e in enumerate(inst.events):
        field_name = f"events[{i}]"
        obj: dict[str, Any] = {"time": float(e.time)}
        if e.type == EventType.REWORK:
            losses.unsupported.append(f"{field_name} REWORK")
            reworked.add(int(e.job))  # type: ignore[arg-type]
            continue
        if e.type in (EventType.PTIME_CHANGE, EventType.ROUTE_CHANGE) and e.job in reworked:
            losses.unsupported.append(f"{field_name} {e.type.name} after a REWORK of its job (its op index counts "
                                      "the reworked operation)")
            continue
        if i in folded:
            continue
        if e.machine is not None:
            obj["event_type"] = {EventType.REPAIR: "REPAIR_COMPLETION", EventType.BREAKDOWN: "BREAKDOWN",
                                 EventType.MAINTENANCE: "PREVENTIVE_MAINTENANCE"}[e.type]
            obj["machine_id"] = inst.machine_names[e.machine]
            if e.duration is not None:
                obj["duration"] = float(e.duration)
            if e.type == EventType.MAINTENANCE:
                obj["maintenance_type"] = "time_based"
            lines.append((obj["time"], 1, obj))
            continue
        j = int(e.job)  # type: ignore[arg-type]
        obj["job_id"] = inst.job_names[j]
        if e.type == EventType.PTIME_CHANGE:
            op = int(e.op)  # type: ignore[arg-type]
            if e.value is not None:
                value = float(e.value)
            elif op in nominal[j]:
                value = nominal[j][op] * float(e.factor)  # type: ignore[arg-type]
            else:
                raise InstanceFormatError("PTIME_CHANGE factor on an operation the job never has in the stream",
                                          source=where, field=f"{field_name}.op", value=op)
            nominal[j][op] = value
            obj.update(event_type="PTIME_CHANGE", step_index=op, new_process_time=value)
        elif e.type == EventType.ROUTE_CHANGE:
            routing, times, off = _route(inst, groups, e.ops or (), f"{field_name}.ops")
            losses.inexact_times += off
            start = int(e.op or 0)
            nominal[j].update((start + k, p) for k, p in enumerate(times))
            obj.update(event_type="ROUTE_CHANGE", new_routing=routing, new_process_times=times, from_step=start)
        elif e.type == EventType.PRIORITY_CHANGE:
            weight = float(e.weight)  # type: ignore[arg-type]
            losses.round_weight(weight)
            obj.update(event_type="PRIORITY_CHANGE", new_priority=EMERGENCY_PRIORITY if weight > 1 else 0)
        elif e.type == EventType.DUE_DATE_CHANGE:
            due = float(e.due)  # type: ignore[arg-type]
            old, current_due[j] = current_due[j], due
            obj.update(event_type="DUE_DATE_CHANGE", new_due_date=due,
                       reason="urgent" if old is not None and due < old else "relaxed")
        else:  # CANCELLATION
            obj["event_type"] = "ORDER_CANCELLATION"
        lines.append((obj["time"], 1, obj))
    return lines


def save(instance: Instance, directory: str | os.PathLike[str], *, drop_unsupported: bool = False) -> Path:
    """Write ``instance`` as a dsbx instance directory, atomically; returns the directory.

    ``directory`` must not exist, be empty, or hold only a previous :func:`save` output (which is
    replaced). Everything is written to a temporary sibling directory first and then renamed.
    """
    target = check_path("directory", directory)
    files = render(instance, drop_unsupported)
    if target.exists() and (not target.is_dir() or set(os.listdir(target)) - set(_WRITTEN)):
        raise FileExistsError(f"{target} exists and is not a dsbx directory written by save()")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700 directories; give the usual mode
    old = None
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        if target.exists():
            old = tmp.with_suffix(".old")
            os.replace(target, old)
        os.replace(tmp, target)
    except BaseException as exc:
        if old is not None and old.exists() and not target.exists():
            os.replace(old, target)
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.filename is not None and str(exc.filename).startswith(str(tmp)):
            # the temporary directory is gone: name the directory the caller asked for (as atomic_path does)
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target
