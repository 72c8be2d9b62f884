"""The schedule record of a finished (or running) episode, in the JSON form of DESIGN section 5."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.checks import check_path
from dynasched_gym.errors import InstanceFormatError, UnreadFieldWarning, user_stacklevel
from dynasched_gym.instance import Instance, dump_json
from dynasched_gym.io.native import as_int, as_number, get_field
from dynasched_gym.metrics import EPS, compute_metrics

SCHEDULE_FORMAT = "dynasched-schedule/1"
SEGMENT_STATUSES = ("completed", "preempted", "aborted")
DOWNTIME_KINDS = ("breakdown", "maintenance")


@dataclass(frozen=True, eq=False)
class Schedule:
    """What happened in an episode, as arrays (S segments, D downtime intervals, J jobs).

    ``segment_op`` indexes the job's operation list as it stood when the segment ran;
    ``segment_work`` is the fraction of that operation's work the segment performed.
    ``job_due`` / ``job_weight`` are the values in force at completion (NaN due = none);
    ``job_completion`` / ``job_cancelled_at`` are NaN when they did not happen.
    """

    instance: Instance
    segment_job: np.ndarray  # (S,) int64
    segment_op: np.ndarray  # (S,) int64
    segment_machine: np.ndarray  # (S,) int64
    segment_start: np.ndarray  # (S,) float64
    segment_end: np.ndarray  # (S,) float64
    segment_work: np.ndarray  # (S,) float64, fraction of the op's work in (0, 1]
    segment_status: np.ndarray  # (S,) int64, index into SEGMENT_STATUSES
    downtime_machine: np.ndarray  # (D,) int64
    downtime_start: np.ndarray  # (D,) float64
    downtime_end: np.ndarray  # (D,) float64
    downtime_kind: np.ndarray  # (D,) int64, index into DOWNTIME_KINDS
    job_due: np.ndarray  # (J,) float64, NaN = no due date
    job_weight: np.ndarray  # (J,) float64
    job_completion: np.ndarray  # (J,) float64, NaN = not completed
    job_cancelled_at: np.ndarray  # (J,) float64, NaN = not cancelled
    decisions: int = 0

    @property
    def finished(self) -> bool:
        """True when every job completed or was cancelled."""
        return bool(np.all(~np.isnan(self.job_completion) | ~np.isnan(self.job_cancelled_at)))

    @property
    def clock(self) -> float:
        """The latest time the records show (segment ends, downtime starts, completions, cancellations; 0 with none).

        A finished schedule's episode ended then (docs/semantics.md: events after that instant never apply). A
        schedule taken mid-episode does not record its clock, which stood at or after this time (it is what
        :func:`~dynasched_gym.validate.validate_schedule` uses without ``now``).
        """
        times = (self.segment_end, self.downtime_start, self.job_completion, self.job_cancelled_at, [0.0])
        return float(np.nanmax(np.concatenate([np.asarray(t, dtype=np.float64) for t in times])))

    @property
    def job_arrival(self) -> np.ndarray:  # (J,) float64, NaN = never arrived
        """Each job's arrival (its release), NaN for a job cancelled before it: such a job never becomes visible
        (docs/semantics.md; a job cancelled at its release, within EPS, arrives first as the simulator has it)."""
        release = self.instance.job_release
        return np.where(self.job_cancelled_at + EPS < release, np.nan, release)

    @property
    def metrics(self) -> dict[str, float]:
        """The DESIGN section 6 metrics of this schedule."""
        return compute_metrics(
            release=self.instance.job_release,
            due=self.job_due,
            weight=self.job_weight,
            completion=self.job_completion,
            cancelled=~np.isnan(self.job_cancelled_at),
            busy_start=self.segment_start,
            busy_end=self.segment_end,
            down_start=self.downtime_start,
            down_end=self.downtime_end,
            num_machines=self.instance.num_machines,
        )

    def to_dict(self, instance_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The DESIGN section 5 JSON object; ``instance_path`` stores a path instead of the instance (relative to
        the schedule file, where :func:`load_schedule` reads it)."""
        if instance_path is not None:  # 5 was stored as is (the file did not load), "" inlined the instance
            check_path("instance_path", instance_path)
            instance_path = os.fspath(instance_path)  # as given: pathlib would write "./inst.json" as "inst.json"
            if not instance_path:
                raise ValueError("instance_path must be a path relative to the schedule file, or None to store the "
                                 "instance inline, got ''")
        inst = self.instance
        return {
            "format": SCHEDULE_FORMAT,
            "instance": inst.to_dict() if instance_path is None else {"path": instance_path},
            "segments": [
                {"job": int(j), "op": int(k), "machine": int(m), "start": float(s), "end": float(e),
                 "work": float(w), "status": SEGMENT_STATUSES[st]}
                for j, k, m, s, e, w, st in zip(self.segment_job, self.segment_op, self.segment_machine,
                                                self.segment_start, self.segment_end, self.segment_work,
                                                self.segment_status)
            ],
            "downtime": [
                {"machine": int(m), "start": float(s), "end": float(e), "kind": DOWNTIME_KINDS[k]}
                for m, s, e, k in zip(self.downtime_machine, self.downtime_start, self.downtime_end,
                                      self.downtime_kind)
            ],
            "jobs": [
                {"job": j, "release": float(inst.job_release[j]), "due": _or_none(self.job_due[j]),
                 "weight": float(self.job_weight[j]), "completion": _or_none(self.job_completion[j]),
                 "cancelled_at": _or_none(self.job_cancelled_at[j])}
                for j in range(inst.num_jobs)
            ],
            "metrics": self.metrics,
        }

    def to_json(self, path: str | os.PathLike[str] | None = None, indent: int | None = None) -> str:
        """Serialise to JSON; with ``path``, also write the file atomically (:func:`.instance.atomic_path`)."""
        return dump_json(self.to_dict(), path, indent)


def check_schedule(name: str, value: Any) -> Schedule:
    """``value``; a TypeError naming argument ``name`` unless it is a :class:`Schedule`."""
    if not isinstance(value, Schedule):
        raise TypeError(f"{name} must be a Schedule (an instance's comes from dynasched_gym.rollout(instance) or "
                        f"Simulator.schedule(), a file's from dynasched_gym.schedule.load_schedule(path)), got "
                        f"{type(value).__name__}: {value!r:.80}")
    return value


def _or_none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def load_schedule_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a schedule JSON file into a dict, resolving ``instance.path`` relative to the file; a field the file
    or a record should not have is named in an :class:`~dynasched_gym.errors.UnreadFieldWarning`."""
    from dynasched_gym.io.text import read_json

    return schedule_dict(read_json(check_path("path", path)), path)


def schedule_dict(data: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON content ``data`` of the schedule file ``path``, checked to be a schedule, with ``instance.path``
    resolved relative to the file."""
    p = Path(path)
    if not isinstance(data, Mapping) or data.get("format") != SCHEDULE_FORMAT:
        raise InstanceFormatError(f"not a schedule file (format {SCHEDULE_FORMAT!r} expected)", source=str(p),
                                  field="format", value=data.get("format") if isinstance(data, Mapping) else data)
    _warn_unread(data, str(p))
    data = dict(data)  # a copy: the caller's mapping is left as it is (and may be read-only)
    inst = data.get("instance")
    if isinstance(inst, Mapping) and "path" in inst:
        from dynasched_gym.io import load_instance

        ref = inst["path"]
        if not isinstance(ref, str) or not ref or "\x00" in ref:  # what to_dict refuses to store ("" is the folder)
            raise InstanceFormatError("expected a path relative to the schedule file", source=str(p),
                                      field="instance.path", value=ref)
        try:
            data["instance"] = load_instance(p.parent / ref).to_dict()
        except InstanceFormatError as exc:  # named from the schedule file too: the field that leads to the instance
            raise InstanceFormatError(f"{exc.where}: {exc.reason}", source=str(p), field="instance.path",
                                      value=exc.value) from None
    return data


#: The fields of a schedule file and of its records (DESIGN section 5); the instance is checked by its loader.
SCHEDULE_FIELDS = {"": ("format", "instance", "segments", "downtime", "jobs", "metrics"),
                   "segments": ("job", "op", "machine", "start", "end", "work", "status"),
                   "downtime": ("machine", "start", "end", "kind"),
                   "jobs": ("job", "release", "due", "weight", "completion", "cancelled_at")}


def _warn_unread(data: Mapping[str, Any], source: str) -> None:
    """An :class:`~dynasched_gym.errors.UnreadFieldWarning` for each field of the file, or of its records, that
    :data:`SCHEDULE_FIELDS` lacks (once per field, naming the first record holding it and how many do)."""
    unread: dict[tuple[str, str], list[int]] = {}  # (table, field) -> the records holding it
    for table, known in SCHEDULE_FIELDS.items():
        records = data.get(table) if table else [data]
        for i, record in enumerate(records if isinstance(records, list) else []):
            for key in record if isinstance(record, Mapping) else ():
                if key not in known:
                    unread.setdefault((table, str(key)), []).append(i)
    for (table, key), holders in unread.items():
        if table:
            where = f"{table}[].{key} ({len(holders)} records, the first {table}[{holders[0]}])" \
                if len(holders) > 1 else f"{table}[{holders[0]}].{key}"
        else:
            where = key
        warnings.warn(f"{source}: field {where} is not read; a schedule{' record' if table else ''} holds "
                      f"{', '.join(SCHEDULE_FIELDS[table])}", UnreadFieldWarning, stacklevel=user_stacklevel())


def load_schedule(path: str | os.PathLike[str]) -> Schedule:
    """Read a schedule JSON file into a :class:`Schedule`; every error names the file and the field."""
    return schedule_from_dict(load_schedule_dict(path), source=str(path))


def schedule_from_dict(data: Mapping[str, Any], source: str = "<schedule>") -> Schedule:
    """Parse a ``dynasched-schedule/1`` object (with the instance inline, as :func:`load_schedule_dict` gives)."""
    try:
        inst = Instance.from_dict(get_field(data, "instance", "", source), source=source)
    except InstanceFormatError as exc:  # its fields are the instance object's: name them from the file's top
        if exc.field == "instance":  # a missing "instance" key
            raise
        raise exc.located(source, field_prefix="instance") from None
    seg = _table(data, "segments", SCHEDULE_FIELDS["segments"], inst, source)
    down = _table(data, "downtime", SCHEDULE_FIELDS["downtime"], inst, source)
    jobs = _table(data, "jobs", SCHEDULE_FIELDS["jobs"], inst, source)
    _check_intervals(seg, "segments", source)
    _check_intervals(down, "downtime", source)
    bad = np.flatnonzero(~((seg["work"] > 0) & (seg["work"] <= 1 + RECORD_TOL)))
    if bad.size:
        raise InstanceFormatError("work is the fraction of the operation a segment performs, in (0, 1]",
                                  source=source, field=f"segments[{bad[0]}].work", value=float(seg["work"][bad[0]]))
    n = inst.num_jobs
    counts = np.bincount(jobs["job"], minlength=n)
    if (counts != 1).any():
        j = int(np.flatnonzero(counts != 1)[0])
        raise InstanceFormatError(f"expected one record per job of the instance's {n}, found {counts[j]} for job {j}",
                                  source=source, field="jobs", value=j)

    def per_job(key: str, default: float) -> np.ndarray:
        out = np.full(n, default)
        out[jobs["job"]] = jobs[key]
        return out

    return Schedule(
        instance=inst,
        segment_job=seg["job"], segment_op=seg["op"], segment_machine=seg["machine"],
        segment_start=seg["start"], segment_end=seg["end"], segment_work=seg["work"], segment_status=seg["status"],
        downtime_machine=down["machine"], downtime_start=down["start"], downtime_end=down["end"],
        downtime_kind=down["kind"],
        job_due=per_job("due", np.nan), job_weight=per_job("weight", 1.0),
        job_completion=per_job("completion", np.nan), job_cancelled_at=per_job("cancelled_at", np.nan),
    )


#: Slack the record checks of :func:`schedule_from_dict` allow, relative to ``max(1, |t|)`` (the validator's
#: default tolerance), so that a schedule another solver wrote with rounded times still loads.
RECORD_TOL = 1e-6


def _check_intervals(table: dict[str, np.ndarray], name: str, source: str) -> None:
    """Refuse a record of ``table`` that ends before it starts."""
    start, end = table["start"], table["end"]
    bad = np.flatnonzero(end < start - RECORD_TOL * np.maximum(1.0, np.abs(start)))
    if bad.size:
        i = int(bad[0])
        raise InstanceFormatError(f"ends before its start {float(start[i])}", source=source,
                                  field=f"{name}[{i}].end", value=float(end[i]))


_INTS = {"job", "op", "machine"}
_CHOICES = {"status": SEGMENT_STATUSES, "kind": DOWNTIME_KINDS}
_NULLABLE = {"due", "completion", "cancelled_at"}


def _table(
    data: Mapping[str, Any], name: str, keys: Sequence[str], inst: Instance, source: str
) -> dict[str, np.ndarray]:
    """The records of list ``name`` as one array per key (ids range-checked, null numbers as NaN)."""
    records = get_field(data, name, "", source)
    if not isinstance(records, list):
        raise InstanceFormatError("expected a list", source=source, field=name, value=type(records).__name__)
    # op has no bound of its own (route changes and rework add slots); 2**31 as for an instance's events, so that the
    # int64 column below cannot overflow
    limits = {"job": inst.num_jobs, "machine": inst.num_machines, "op": 2**31}
    columns: dict[str, list[Any]] = {key: [] for key in keys}
    for i, rec in enumerate(records):
        for key in keys:
            where = f"{name}[{i}].{key}"
            val = get_field(rec, key, f"{name}[{i}]", source)
            if key in _CHOICES:
                if val not in _CHOICES[key]:
                    raise InstanceFormatError(f"expected one of {_CHOICES[key]}", source=source, field=where, value=val)
                val = _CHOICES[key].index(val)
            elif key in _INTS:
                val = as_int(val, where, source)
                if not 0 <= val < limits[key]:
                    raise InstanceFormatError(f"id out of range (0..{limits[key] - 1})", source=source, field=where,
                                              value=val)
            else:
                val = as_number(val, where, source, allow_none=key in _NULLABLE)
            columns[key].append(np.nan if val is None else val)
    return {key: np.asarray(col, dtype=np.int64 if key in _INTS or key in _CHOICES else np.float64)
            for key, col in columns.items()}
