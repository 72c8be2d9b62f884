"""The independent schedule validator (DESIGN section 5, ``docs/semantics.md``).

This module deliberately shares no code with the simulator: it never imports
:mod:`dynasched_gym.core`. It works only from the schedule's JSON form (the instance with its
event stream, the segments, the downtime, the job records and the reported metrics) and
re-derives what must have happened following ``docs/semantics.md``:

- each job's operation list is rebuilt by replaying the job's events on its own, using the
  segments only to tell which slots were touched (a segment started strictly before the event) or
  completed (a completed segment ended at or before the event) at each event time;
- every segment is then checked against that list (slot, eligibility, processing time in force
  when the slot first started), against its machine (overlaps, downtime, breakdowns) and against
  its job (release, precedence, breakdown policy, cancellation, completion);
- completions, cancellations, dues and weights are recomputed and fed to the single metric
  implementation, :func:`dynasched_gym.metrics.compute_metrics`; the result must equal the
  reported metrics.

A bug in the simulator is thus caught by a second, independent reading of the contract. Times are
compared with the tolerance ``tol * max(1, |t|)``. Every problem becomes a :class:`Violation`;
only a record that cannot be read at all (no instance, no segment list, ...) ends the check early,
with a single ``format`` violation. :data:`VIOLATION_KINDS` lists the kinds.
"""

from __future__ import annotations

import math
import os
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import Event, EventType, Instance
from dynasched_gym.metrics import compute_metrics
from dynasched_gym.schedule import DOWNTIME_KINDS, SCHEDULE_FORMAT, SEGMENT_STATUSES, load_schedule_dict

if TYPE_CHECKING:
    from dynasched_gym.schedule import Schedule

__all__ = ["VIOLATION_KINDS", "ScheduleInvalidError", "ValidationReport", "Violation", "validate_schedule"]

#: Every violation kind, with what it means.
VIOLATION_KINDS: dict[str, str] = {
    "format": "a record is malformed: missing or mistyped field, unknown id, status or kind, end < start, "
              "work outside (0, 1], missing job record, unreadable schedule",
    "overlap": "two segments, or two downtime intervals, overlap on one machine",
    "downtime": "a segment runs while its machine is down; a BREAKDOWN before the episode's end has no "
                "breakdown downtime covering it; a downtime interval no event explains",
    "preemption": "a preempted segment does not end at a BREAKDOWN of its machine",
    "operation": "a segment names an operation slot its job does not have when it starts",
    "eligibility": "a segment runs on a machine that is not eligible for its operation",
    "duration": "a segment's length differs from work x processing time (the time in force when its slot "
                "first started)",
    "precedence": "a job runs two segments at once, or a slot starts before the previous one completed",
    "release": "a segment starts before its job's release, or a job record's release differs from the instance",
    "work": "a completed slot's work is not 1 under the breakdown policy (resume: sum of its segments; "
            "restart: its last segment), or a slot performs more than 1",
    "status": "a slot has more than one completed segment, or segments after its completed one",
    "cancellation": "a segment runs after its job's cancellation, an aborted segment does not end at it, or "
                    "cancelled_at differs from the first CANCELLATION that applies",
    "completion": "a job's reported completion differs from the end of its last slot's completed segment",
    "due": "a job record's due date differs from the one in force at completion (or cancellation)",
    "weight": "a job record's weight differs from the one in force at completion (or cancellation)",
    "unfinished": "a job is neither completed nor cancelled (only with require_finished=True)",
    "metrics": "a reported metric differs from the recomputed one",
}

_SEGMENT_KEYS = ("job", "op", "machine", "start", "end", "work", "status")
_DOWNTIME_KEYS = ("machine", "start", "end", "kind")
_JOB_KEYS = ("job", "release", "due", "weight", "completion", "cancelled_at")


@dataclass(frozen=True)
class Violation:
    """One broken rule: its ``kind`` (see :data:`VIOLATION_KINDS`), a readable ``message`` and, when
    it concerns one, the index of the segment in ``segments`` and the job id."""

    kind: str
    message: str
    segment: int | None = None
    job: int | None = None

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


class ScheduleInvalidError(ValueError):
    """Raised by :meth:`ValidationReport.raise_if_invalid`; ``report`` holds every violation."""

    def __init__(self, report: ValidationReport, limit: int = 10) -> None:
        self.report = report
        lines = [str(v) for v in report.violations[:limit]]
        if len(report.violations) > limit:
            lines.append(f"... and {len(report.violations) - limit} more")
        super().__init__(f"invalid schedule, {len(report.violations)} violation(s):\n  " + "\n  ".join(lines))


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of :func:`validate_schedule`: the violations and the recomputed metrics."""

    violations: tuple[Violation, ...]
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no rule is broken."""
        return not self.violations

    def kinds(self) -> dict[str, int]:
        """How many violations of each kind."""
        out: dict[str, int] = {}
        for v in self.violations:
            out[v.kind] = out.get(v.kind, 0) + 1
        return out

    def raise_if_invalid(self) -> None:
        """Raise :class:`ScheduleInvalidError` (listing the first 10 violations) unless :attr:`ok`."""
        if self.violations:
            raise ScheduleInvalidError(self)

    def __str__(self) -> str:
        if self.ok:
            return "valid schedule (" + ", ".join(f"{k}={_f(v)}" for k, v in self.metrics.items()) + ")"
        counts = ", ".join(f"{k} x{n}" for k, n in self.kinds().items())
        return f"invalid schedule: {len(self.violations)} violation(s) ({counts}); first: {self.violations[0]}"


def validate_schedule(
    schedule: Schedule | Mapping[str, Any] | str | os.PathLike[str],
    tol: float = 1e-6,
    require_finished: bool = True,
) -> ValidationReport:
    """Check a schedule against its instance and ``docs/semantics.md``.

    Args:
        schedule: a :class:`~dynasched_gym.schedule.Schedule` (converted with ``to_dict()``), its
            JSON object, or the path of a schedule JSON file (an ``instance.path`` in the file is
            resolved relative to it).
        tol: time tolerance, relative to ``max(1, |t|)``; also for work and metric comparisons.
        require_finished: report jobs that are neither completed nor cancelled (``unfinished``).

    Returns:
        The report; it never raises on a bad schedule (use :meth:`ValidationReport.raise_if_invalid`).
    """
    if isinstance(schedule, (str, os.PathLike)):
        try:
            data: Any = load_schedule_dict(schedule)
        except InstanceFormatError as exc:
            return ValidationReport((Violation("format", f"cannot read the schedule: {exc}"),))
    elif isinstance(schedule, Mapping):
        data = schedule
    elif hasattr(schedule, "to_dict"):
        data = schedule.to_dict()
    else:
        return ValidationReport((Violation("format", f"not a schedule: {type(schedule).__name__}"),))
    return _Checker(tol, require_finished).run(data)


# --------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class _Seg:
    index: int
    job: int
    op: int
    machine: int
    start: float
    end: float
    work: float
    status: str

    def __str__(self) -> str:
        return (f"segment {self.index} (job {self.job} op {self.op} on machine {self.machine}, "
                f"{_f(self.start)}-{_f(self.end)}, {self.status})")


@dataclass(frozen=True)
class _Down:
    index: int
    machine: int
    start: float
    end: float
    kind: str

    def __str__(self) -> str:
        return f"downtime {self.index} ({self.kind} of machine {self.machine}, {_f(self.start)}-{_f(self.end)})"


@dataclass(frozen=True)
class _JobRecord:
    release: float
    due: float | None
    weight: float
    completion: float | None
    cancelled_at: float | None


@dataclass(frozen=True)
class _Slot:
    """An operation slot: eligible machine -> processing time in force."""

    times: Mapping[int, float]


@dataclass
class _Replay:
    """What a job's events make of its operation list."""

    slots: list[_Slot]  # the final list
    frozen: dict[int, _Slot | None]  # slot index -> the slot when first started (None: no such slot then)
    due: float | None
    weight: float
    completion: float | None = None
    cancelled_at: float | None = None


def _f(x: float | None) -> str:
    return "null" if x is None else f"{x:.10g}"


def _num(x: Any) -> float | None:
    """A finite real number as float, else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        return None
    return float(x) if math.isfinite(float(x)) else None


def _index(x: Any, n: int | None) -> int | None:
    """An integer id in ``0..n-1`` (``n`` None: any id >= 0), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        return None
    return int(x) if 0 <= x and (n is None or x < n) else None


# --------------------------------------------------------------------------------------- checker
class _Checker:
    """One validation run; each ``_check_*`` method appends violations."""

    def __init__(self, tol: float, require_finished: bool) -> None:
        self.tol = tol
        self.require_finished = require_finished
        self.out: list[Violation] = []

    def add(self, kind: str, message: str, segment: int | None = None, job: int | None = None) -> None:
        self.out.append(Violation(kind, message, segment, job))

    def eps(self, *times: float) -> float:
        return self.tol * max(1.0, *(abs(t) for t in times))

    def close(self, a: float, b: float) -> bool:
        return abs(a - b) <= self.eps(a, b)

    # ------------------------------------------------------------------------------- driver
    def run(self, data: Any) -> ValidationReport:
        problem = self._parse(data)
        if problem is not None:
            return ValidationReport((Violation("format", problem),))
        self._index()
        self.replays = [self._replay(j) for j in range(self.inst.num_jobs)]
        self._check_machines()
        self._check_slots()
        self._check_precedence()
        self._check_policy()
        self._check_jobs()
        self._check_breakdowns()
        metrics = self._recompute_metrics()
        self._check_metrics(metrics)
        return ValidationReport(tuple(self.out), metrics)

    # -------------------------------------------------------------------------- 1. format
    def _parse(self, data: Any) -> str | None:
        """Read the records; returns why the schedule is unreadable, or None."""
        if not isinstance(data, Mapping):
            return f"a schedule must be a JSON object, got {type(data).__name__}"
        if data.get("format") != SCHEDULE_FORMAT:
            self.add("format", f"format is {data.get('format')!r}, expected {SCHEDULE_FORMAT!r}")
        inst = data.get("instance")
        if isinstance(inst, Mapping) and "path" in inst and "format" not in inst:
            return f"the instance is given by path ({inst['path']!r}); validate the schedule file's path instead"
        try:
            self.inst = Instance.from_dict(inst, source="instance")  # type: ignore[arg-type]
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            return f"unreadable instance: {exc}"
        for key in ("segments", "downtime", "jobs"):
            if not isinstance(data.get(key), (list, tuple)):
                return f"{key!r} must be a list, got {type(data.get(key)).__name__}"
        segs = [self._parse_segment(i, rec) for i, rec in enumerate(data["segments"])]
        self.segs = [s for s in segs if s is not None]
        downs = [self._parse_downtime(i, rec) for i, rec in enumerate(data["downtime"])]
        self.downs = [d for d in downs if d is not None]
        self.records: dict[int, _JobRecord] = {}
        for i, rec in enumerate(data["jobs"]):
            self._parse_job(i, rec)
        for j in range(self.inst.num_jobs):
            if j not in self.records:
                self.add("format", f"no job record for job {j}", job=j)
        reported = data.get("metrics")
        self.reported: Mapping[str, Any] | None = reported if isinstance(reported, Mapping) else None
        if self.reported is None:
            self.add("format", f"'metrics' must be an object, got {type(reported).__name__}")
        return None

    def _missing(self, rec: Any, keys: Sequence[str]) -> list[str]:
        if not isinstance(rec, Mapping):
            return [f"not an object ({rec!r})"]
        return [f"missing {k!r}" for k in keys if k not in rec]

    def _parse_segment(self, i: int, rec: Any) -> _Seg | None:
        problems = self._missing(rec, _SEGMENT_KEYS)
        if problems:
            self.add("format", f"segment {i}: " + "; ".join(problems), segment=i)
            return None
        j, k = _index(rec["job"], self.inst.num_jobs), _index(rec["op"], None)
        m = _index(rec["machine"], self.inst.num_machines)
        s, e, w = _num(rec["start"]), _num(rec["end"]), _num(rec["work"])
        if j is None:
            problems.append(f"job {rec['job']!r} is not a job id 0..{self.inst.num_jobs - 1}")
        if k is None:
            problems.append(f"op {rec['op']!r} is not an index >= 0")
        if m is None:
            problems.append(f"machine {rec['machine']!r} is not a machine id 0..{self.inst.num_machines - 1}")
        for name, val in (("start", s), ("end", e), ("work", w)):
            if val is None:
                problems.append(f"{name} {rec[name]!r} is not a finite number")
        if s is not None and e is not None and e < s - self.eps(s):
            problems.append(f"end {_f(e)} < start {_f(s)}")
        if w is not None and not 0 < w <= 1 + self.tol:
            problems.append(f"work {_f(w)} is outside (0, 1]")
        if rec["status"] not in SEGMENT_STATUSES:
            problems.append(f"status {rec['status']!r} is not one of {SEGMENT_STATUSES}")
        if problems:
            self.add("format", f"segment {i}: " + "; ".join(problems), segment=i, job=j)
            return None
        return _Seg(i, j, k, m, s, e, w, rec["status"])  # type: ignore[arg-type]

    def _parse_downtime(self, i: int, rec: Any) -> _Down | None:
        problems = self._missing(rec, _DOWNTIME_KEYS)
        if not problems:
            m, s, e = _index(rec["machine"], self.inst.num_machines), _num(rec["start"]), _num(rec["end"])
            if m is None:
                problems.append(f"machine {rec['machine']!r} is not a machine id 0..{self.inst.num_machines - 1}")
            if s is None or e is None:
                problems.append(f"start/end ({rec['start']!r}, {rec['end']!r}) are not finite numbers")
            elif e < s - self.eps(s):
                problems.append(f"end {_f(e)} < start {_f(s)}")
            if rec["kind"] not in DOWNTIME_KINDS:
                problems.append(f"kind {rec['kind']!r} is not one of {DOWNTIME_KINDS}")
        if problems:
            self.add("format", f"downtime {i}: " + "; ".join(problems))
            return None
        return _Down(i, m, s, e, rec["kind"])  # type: ignore[arg-type]

    def _parse_job(self, i: int, rec: Any) -> None:
        problems = self._missing(rec, _JOB_KEYS)
        j = _index(rec.get("job"), self.inst.num_jobs) if isinstance(rec, Mapping) else None
        if not problems:
            if j is None:
                problems.append(f"job {rec['job']!r} is not a job id 0..{self.inst.num_jobs - 1}")
            elif j in self.records:
                problems.append(f"second record for job {j}")
            for name in ("release", "weight"):
                if _num(rec[name]) is None:
                    problems.append(f"{name} {rec[name]!r} is not a finite number")
            for name in ("due", "completion", "cancelled_at"):
                if rec[name] is not None and _num(rec[name]) is None:
                    problems.append(f"{name} {rec[name]!r} is neither null nor a finite number")
        if problems:
            self.add("format", f"jobs[{i}]: " + "; ".join(problems), job=j)
            return
        self.records[j] = _JobRecord(*(_num(rec[k]) for k in _JOB_KEYS[1:]))  # type: ignore[index, arg-type]

    # ------------------------------------------------------------------------ indexes
    def _index(self) -> None:
        inst = self.inst
        self.by_job: list[list[_Seg]] = [[] for _ in range(inst.num_jobs)]
        self.by_slot: list[dict[int, list[_Seg]]] = [{} for _ in range(inst.num_jobs)]
        for s in sorted(self.segs, key=lambda s: (s.start, s.end, s.index)):
            self.by_job[s.job].append(s)
            self.by_slot[s.job].setdefault(s.op, []).append(s)
        self.first_start = [{k: ss[0].start for k, ss in slots.items()} for slots in self.by_slot]
        self.done_end: list[dict[int, float]] = [
            {k: [s for s in ss if s.status == "completed"][-1].end
             for k, ss in slots.items() if any(s.status == "completed" for s in ss)}
            for slots in self.by_slot
        ]
        order = sorted(range(len(inst.events)), key=lambda i: (inst.events[i].time, inst.events[i].type, i))
        self.job_events: list[list[Event]] = [[] for _ in range(inst.num_jobs)]
        self.breakdown_times: list[list[float]] = [[] for _ in range(inst.num_machines)]
        self.maintenances: list[list[Event]] = [[] for _ in range(inst.num_machines)]
        for i in order:
            e = inst.events[i]
            if e.job is not None:
                self.job_events[e.job].append(e)
            elif e.type == EventType.BREAKDOWN:
                self.breakdown_times[e.machine].append(e.time)  # type: ignore[index]
            elif e.type == EventType.MAINTENANCE:
                self.maintenances[e.machine].append(e)  # type: ignore[index]

    def _has_time(self, times: list[float], t: float) -> bool:
        """Whether sorted ``times`` holds one equal to ``t`` (within tolerance)."""
        i = bisect_left(times, t - self.eps(t))
        return i < len(times) and times[i] <= t + self.eps(t)

    # -------------------------------------------------------------------- 3. the replay
    def _replay(self, j: int) -> _Replay:
        """Apply job ``j``'s events to its operation list (semantics.md, happenings at one time)."""
        inst = self.inst
        first, done = self.first_start[j], self.done_end[j]
        due = None if math.isnan(inst.job_due[j]) else float(inst.job_due[j])
        r = _Replay([_Slot(op) for op in inst.job_ops(j)], {}, due, float(inst.job_weight[j]))

        def untouched(k: int, t: float) -> bool:  # no segment of slot k started strictly before t
            return k not in first or first[k] >= t - self.eps(t)

        def completed(k: int, t: float) -> bool:  # a completed segment of slot k ended by t
            return k in done and done[k] <= t + self.eps(t)

        def freeze(t: float | None) -> None:  # remember each slot as it stood when first started
            for k, s in first.items():
                if k not in r.frozen and (t is None or s < t - self.eps(t)):
                    r.frozen[k] = r.slots[k] if k < len(r.slots) else None

        for e in self.job_events[j]:
            t = e.time
            freeze(t)
            if all(completed(k, t) for k in range(len(r.slots))):  # completions apply first
                r.completion = done[len(r.slots) - 1]
                break
            u = next((k for k in range(len(r.slots)) if untouched(k, t)), len(r.slots))
            if e.type == EventType.PTIME_CHANGE:
                if e.op < len(r.slots) and untouched(e.op, t):  # type: ignore[operator]
                    old = r.slots[e.op].times  # type: ignore[index]
                    new = ({m: p * e.factor for m, p in old.items()} if e.factor is not None
                           else {m: e.value / float(inst.machine_speed[m]) for m in old})  # type: ignore[operator]
                    r.slots[e.op] = _Slot(new)  # type: ignore[index]
            elif e.type == EventType.ROUTE_CHANGE:
                r.slots = r.slots[:max(e.op or 0, u)] + [_Slot(dict(op)) for op in e.ops or ()]
            elif e.type == EventType.PRIORITY_CHANGE:
                r.weight = float(e.weight)  # type: ignore[arg-type]
            elif e.type == EventType.DUE_DATE_CHANGE:
                r.due = e.due
            elif e.type == EventType.CANCELLATION:
                r.cancelled_at = t
                break
            elif e.type == EventType.REWORK and e.op < len(r.slots) and completed(e.op, t):  # type: ignore[operator]
                r.slots.insert(u, _Slot(r.slots[e.op].times))  # type: ignore[index]
        freeze(None)
        if r.completion is None and r.cancelled_at is None and all(k in done for k in range(len(r.slots))):
            r.completion = done[len(r.slots) - 1]
        return r

    # ---------------------------------------------------------------- 2, 6. machines
    def _check_overlaps(self, items: Sequence[_Seg] | Sequence[_Down]) -> None:
        last: _Seg | _Down | None = None  # the item with the latest end so far
        for x in items:
            if last is not None and x.start < last.end - self.eps(last.end):
                self.add("overlap", f"{x} overlaps {last} on machine {x.machine}",
                         segment=x.index if isinstance(x, _Seg) else None,
                         job=x.job if isinstance(x, _Seg) else None)
            if last is None or x.end > last.end:
                last = x

    def _check_machines(self) -> None:
        m_segs: list[list[_Seg]] = [[] for _ in range(self.inst.num_machines)]
        m_downs: list[list[_Down]] = [[] for _ in range(self.inst.num_machines)]
        for s in sorted(self.segs, key=lambda s: (s.start, s.end)):
            m_segs[s.machine].append(s)
        for d in sorted(self.downs, key=lambda d: (d.start, d.end)):
            m_downs[d.machine].append(d)
        for m in range(self.inst.num_machines):
            self._check_overlaps(m_segs[m])
            self._check_overlaps(m_downs[m])
            starts = [d.start for d in m_downs[m]]
            max_end = list(np.maximum.accumulate([d.end for d in m_downs[m]])) if m_downs[m] else []
            for s in m_segs[m]:
                i = bisect_left(starts, s.end - self.eps(s.end)) - 1
                while i >= 0 and max_end[i] > s.start + self.eps(s.start):
                    d = m_downs[m][i]
                    if d.end > s.start + self.eps(s.start):
                        self.add("downtime", f"{s} runs while machine {m} is down: {d}", s.index, s.job)
                    i -= 1
                if s.status == "preempted" and not self._has_time(self.breakdown_times[m], s.end):
                    self.add("preemption", f"{s} is preempted but machine {m} has no BREAKDOWN at {_f(s.end)}",
                             s.index, s.job)
        for d in self.downs:
            if d.kind == "breakdown" and not self._has_time(self.breakdown_times[d.machine], d.start):
                self.add("downtime", f"{d} starts at no BREAKDOWN event of machine {d.machine}")
            # maintenance: after the machine's first MAINTENANCE, no longer than the ones queued by its end
            # (lenient on purpose, so that back-to-back maintenances may be one interval or several)
            queued = [e for e in self.maintenances[d.machine] if e.time <= d.end + self.eps(d.end)]
            if d.kind == "maintenance" and (
                not queued or d.start < queued[0].time - self.eps(queued[0].time)
                or d.end - d.start > sum(e.duration for e in queued) + self.eps(d.end)  # type: ignore[misc]
            ):
                self.add("downtime", f"{d} is explained by no MAINTENANCE event of machine {d.machine} "
                         f"(it must start after one and last no longer than those queued by its end)")

    def _episode_end(self) -> float:
        ends = [r.completion if r.completion is not None else r.cancelled_at for r in self.replays]
        if all(x is not None for x in ends):
            return max(ends)  # type: ignore[type-var]
        return max([x for x in ends if x is not None] + [s.end for s in self.segs], default=0.0)

    def _check_breakdowns(self) -> None:
        end = self._episode_end()
        for e in self.inst.events:
            if e.type != EventType.BREAKDOWN or e.time >= end - self.eps(end):
                continue
            if not any(d.machine == e.machine and d.kind == "breakdown" and d.start <= e.time + self.eps(e.time)
                       and d.end > e.time for d in self.downs):
                self.add("downtime", f"BREAKDOWN of machine {e.machine} at {_f(e.time)} (before the episode's end "
                         f"{_f(end)}) has no breakdown downtime covering it")

    # ------------------------------------------------- 3. slots, eligibility, duration; 5. release
    def _check_slots(self) -> None:
        for s in self.segs:
            r = self.replays[s.job]
            release = float(self.inst.job_release[s.job])
            if s.start < release - self.eps(release):
                self.add("release", f"{s} starts before job {s.job}'s release {_f(release)}", s.index, s.job)
            slot = r.frozen.get(s.op)
            if slot is None:
                self.add("operation", f"{s}: job {s.job} has no operation slot {s.op} when the slot first starts",
                         s.index, s.job)
            elif s.machine not in slot.times:
                self.add("eligibility", f"{s}: machine {s.machine} is not eligible for job {s.job} op {s.op} "
                         f"(eligible: {sorted(slot.times)})", s.index, s.job)
            else:
                p = slot.times[s.machine]
                if abs((s.end - s.start) - s.work * p) > self.eps(s.end):
                    self.add("duration", f"{s} lasts {_f(s.end - s.start)} but work {_f(s.work)} x time {_f(p)} "
                             f"= {_f(s.work * p)}", s.index, s.job)

    # ------------------------------------------------------------------ 4. precedence
    def _check_precedence(self) -> None:
        for j, segs in enumerate(self.by_job):
            for a, b in pairwise(segs):
                if b.start < a.end - self.eps(a.end):
                    self.add("precedence", f"job {j} runs two segments at once: {a} and {b}", b.index, j)
            done = self.done_end[j]
            for k, ks in sorted(self.by_slot[j].items()):
                if k == 0:
                    continue
                start, prev = ks[0].start, self.by_slot[j].get(k - 1, [])
                if k - 1 not in done:
                    self.add("precedence", f"{ks[0]} starts but job {j} op {k - 1} never completes", ks[0].index, j)
                elif start < done[k - 1] - self.eps(done[k - 1]):
                    self.add("precedence", f"{ks[0]} starts before job {j} op {k - 1} completes at "
                             f"{_f(done[k - 1])}", ks[0].index, j)
                late = [s for s in prev if s.end > start + self.eps(start)]
                if late and k - 1 in done and start >= done[k - 1] - self.eps(done[k - 1]):
                    self.add("precedence", f"{late[0]} ends after job {j} op {k} starts at {_f(start)}",
                             late[0].index, j)

    # ------------------------------------------------------------- 7. breakdown policy
    def _check_policy(self) -> None:
        resume = self.inst.breakdown_policy == "resume"
        for j, slots in enumerate(self.by_slot):
            for k, ks in sorted(slots.items()):
                completed = [s for s in ks if s.status == "completed"]
                if len(completed) > 1 or (completed and ks[-1] is not completed[0]):
                    self.add("status", f"job {j} op {k}: {completed[0]} must be the slot's only completed segment "
                             f"and its last", completed[0].index, j)
                total = sum(s.work for s in ks)
                if resume and completed and abs(total - 1.0) > self.tol * len(ks):
                    self.add("work", f"job {j} op {k} completes but its segments "
                             f"{[s.index for s in ks]} perform work {_f(total)}, not 1 (resume policy)",
                             completed[-1].index, j)
                elif resume and total > 1.0 + self.tol * len(ks):
                    self.add("work", f"job {j} op {k}: its segments perform work {_f(total)} > 1 (resume policy)",
                             ks[-1].index, j)
                elif not resume and completed and abs(completed[-1].work - 1.0) > self.tol:
                    self.add("work", f"job {j} op {k} completes with {completed[-1]} performing work "
                             f"{_f(completed[-1].work)}, not 1 (restart policy)", completed[-1].index, j)

    # ---------------------------------------------------------------------- 8. jobs
    def _check_jobs(self) -> None:
        for j, r in enumerate(self.replays):
            c = r.cancelled_at
            for s in self.by_job[j]:
                if s.status == "aborted" and (c is None or not self.close(s.end, c)):
                    what = "is not cancelled" if c is None else f"is cancelled at {_f(c)}"
                    self.add("cancellation", f"{s} is aborted but job {j} {what}", s.index, j)
                elif c is not None and s.end > c + self.eps(c):
                    self.add("cancellation", f"{s} runs after job {j} is cancelled at {_f(c)}", s.index, j)
            rec = self.records.get(j)
            if rec is None:
                continue
            release = float(self.inst.job_release[j])
            if not self.close(rec.release, release):
                self.add("release", f"job {j}: record says release {_f(rec.release)}, the instance {_f(release)}",
                         job=j)
            missing = [k for k in range(len(r.slots)) if k not in self.done_end[j]]
            if r.completion is not None:
                if rec.completion is None or not self.close(rec.completion, r.completion):
                    self.add("completion", f"job {j}: reported completion {_f(rec.completion)}, but its last "
                             f"operation (op {len(r.slots) - 1}) completes at {_f(r.completion)}", job=j)
                if rec.cancelled_at is not None:
                    self.add("cancellation", f"job {j} completes at {_f(r.completion)} but reports cancelled_at "
                             f"{_f(rec.cancelled_at)}", job=j)
            elif c is not None:
                if rec.cancelled_at is None or not self.close(rec.cancelled_at, c):
                    self.add("cancellation", f"job {j}: reported cancelled_at {_f(rec.cancelled_at)}, but its first "
                             f"applicable CANCELLATION is at {_f(c)}", job=j)
                if rec.completion is not None:
                    self.add("completion", f"job {j} is cancelled at {_f(c)} but reports completion "
                             f"{_f(rec.completion)}", job=j)
            else:
                if rec.completion is not None:
                    self.add("completion", f"job {j} reports completion {_f(rec.completion)} but op(s) {missing} "
                             f"of its operation list never complete", job=j)
                if rec.cancelled_at is not None:
                    self.add("cancellation", f"job {j} reports cancelled_at {_f(rec.cancelled_at)} but no "
                             f"CANCELLATION applies to it", job=j)
                if self.require_finished:
                    self.add("unfinished", f"job {j} is neither completed nor cancelled: op(s) {missing} of its "
                             f"{len(r.slots)} operations never complete", job=j)
                continue
            if (rec.due is None) != (r.due is None) or (r.due is not None and not self.close(rec.due, r.due)):
                self.add("due", f"job {j}: reported due {_f(rec.due)}, but {_f(r.due)} is in force", job=j)
            if not self.close(rec.weight, r.weight):
                self.add("weight", f"job {j}: reported weight {_f(rec.weight)}, but {_f(r.weight)} is in force",
                         job=j)

    # ------------------------------------------------------------------- 9. metrics
    def _recompute_metrics(self) -> dict[str, float]:
        nan = float("nan")
        rs = self.replays
        return compute_metrics(
            release=np.asarray(self.inst.job_release, dtype=np.float64),
            due=np.array([nan if r.due is None else r.due for r in rs], dtype=np.float64),
            weight=np.array([r.weight for r in rs], dtype=np.float64),
            completion=np.array([nan if r.completion is None else r.completion for r in rs], dtype=np.float64),
            cancelled=np.array([r.cancelled_at is not None for r in rs], dtype=bool),
            busy_start=np.array([s.start for s in self.segs], dtype=np.float64),
            busy_end=np.array([s.end for s in self.segs], dtype=np.float64),
            down_start=np.array([d.start for d in self.downs], dtype=np.float64),
            down_end=np.array([d.end for d in self.downs], dtype=np.float64),
            num_machines=self.inst.num_machines,
        )

    def _check_metrics(self, metrics: Mapping[str, float]) -> None:
        if self.reported is None:
            return
        for key, val in metrics.items():
            got = _num(self.reported.get(key))
            if got is None:
                self.add("metrics", f"metric {key!r} is missing or not a number ({self.reported.get(key)!r}); "
                         f"recomputed {_f(val)}")
            elif abs(got - val) > self.tol * max(1.0, abs(val)):
                self.add("metrics", f"metric {key!r}: reported {_f(got)}, recomputed {_f(val)}")
