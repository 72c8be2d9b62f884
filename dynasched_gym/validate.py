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
- each machine's downtime is replayed from its BREAKDOWN, REPAIR and MAINTENANCE events instant by
  instant (:class:`_MachineReplay`), its segments telling when it runs an operation (a MAINTENANCE
  queues behind it, its end starts the queued maintenance, a BREAKDOWN preempts it); the downtime
  records must give exactly that timeline (start, end and kind of every interval);
- completions, cancellations, dues and weights are recomputed and fed to the single metric
  implementation, :func:`dynasched_gym.metrics.compute_metrics`; the result must equal the
  reported metrics.

A bug in the simulator is thus caught by a second, independent reading of the contract. Reported
times are compared with the tolerance ``tol * max(1, |t|)``; the order of an event and a start or an
end is decided with the simulator's absolute epsilon (docs/semantics.md). Every problem becomes a :class:`Violation`;
only a record that cannot be read at all (no instance, no segment list, ...) ends the check early,
with a single ``format`` violation. :data:`VIOLATION_KINDS` lists the kinds.

An unfinished schedule (taken mid-episode, checked with ``require_finished=False``) holds what
happened up to the clock ``now``: events after it have not applied, operations still running are
not in its records, and downtime in progress ends at its planned end. A schedule does not record
``now``; pass it as ``validate_schedule(..., now=t)``. Without it, the latest time the records show
(segment ends, downtime starts, completions, cancellations) stands in for it: the clock is at or
after that time, so job events up to it have applied and later ones are left out, and a machine's
downtime must be the replay stopped at some time at or after it. Either way a machine's replay may
also stop where the machine was idle and started an operation that still runs (unseen in the
records, it holds later MAINTENANCE back), provided no BREAKDOWN of the machine falls between that
point and the clock, the clock included (its events have applied).
"""

from __future__ import annotations

import math
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dynasched_gym.checks import check_bool, check_integer, check_real, is_finite_real, is_integer, is_real
from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import Event, EventType, Instance
from dynasched_gym.metrics import EPS, compute_metrics
from dynasched_gym.schedule import (
    DOWNTIME_KINDS,
    RECORD_TOL,
    SCHEDULE_FIELDS,
    SCHEDULE_FORMAT,
    SEGMENT_STATUSES,
    load_schedule_dict,
)

if TYPE_CHECKING:
    from dynasched_gym.schedule import Schedule

__all__ = ["VIOLATION_KINDS", "ScheduleInvalidError", "ValidationReport", "Violation", "validate_schedule"]

#: Every violation kind, with what it means.
VIOLATION_KINDS: dict[str, str] = {
    "format": "a record is malformed: missing or mistyped field, unknown id, status or kind, end < start, "
              "work outside (0, 1], missing job record, unreadable schedule",
    "overlap": "two segments, or two downtime intervals, overlap on one machine",
    "downtime": "a segment runs while its machine is down; a machine's downtime records differ from the "
                "downtime its BREAKDOWN, REPAIR and MAINTENANCE events imply (an interval missing, unexplained, "
                "or with another end)",
    "preemption": "a preempted segment does not end at a BREAKDOWN of its machine, or a segment runs through one "
                  "(which preempts it)",
    "operation": "a segment names an operation slot its job does not have when it starts",
    "eligibility": "a segment runs on a machine that is not eligible for its operation",
    "duration": "a segment's length differs from work x processing time (the time in force when its slot "
                "first started)",
    "precedence": "a job runs two segments at once, or a slot starts before the previous one completed",
    "release": "a segment starts before its job's release, or a job record's release differs from the instance",
    "work": "a completed slot's work is not 1 under the breakdown policy (resume: sum of its segments; "
            "restart: its last segment), or a slot performs more than 1",
    "status": "a slot has more than one completed segment, or segments after its completed one, or a "
              "preempted or aborted segment stops where its operation completes",
    "cancellation": "a segment runs after its job's cancellation, an aborted segment does not end at it, one "
                    "running at it is preempted by a BREAKDOWN of that instant instead of aborted, or cancelled_at "
                    "differs from the first CANCELLATION that applies",
    "completion": "a job's reported completion differs from the end of its last slot's completed segment",
    "due": "a job record's due date differs from the one in force at completion (or cancellation, or the clock "
           "passed as now)",
    "weight": "a job record's weight differs from the one in force at completion (or cancellation, or the clock "
              "passed as now)",
    "unfinished": "a job is neither completed nor cancelled (only with require_finished=True)",
    "now": "the records show a time after the clock passed as validate_schedule(now=...)",
    "metrics": "a reported metric differs from the recomputed one",
}

_SEGMENT_KEYS = SCHEDULE_FIELDS["segments"]
_DOWNTIME_KEYS = SCHEDULE_FIELDS["downtime"]
_JOB_KEYS = SCHEDULE_FIELDS["jobs"]


# The order of a machine's happenings within one instant (docs/semantics.md, "Happenings at one
# time"): REPAIR, downtime ends, completions, aborts (CANCELLATION applies before MAINTENANCE),
# MAINTENANCE, BREAKDOWN, then the decisions (segment starts). A preempted segment is stopped by its
# BREAKDOWN; one that no BREAKDOWN stopped (a ``preemption`` violation) ends after the events.
_REPAIR, _DOWN_END, _COMPLETE, _ABORT, _MAINTAIN, _BREAK, _PREEMPTED_END, _START = range(8)
_EVENT_PHASE = {EventType.REPAIR: _REPAIR, EventType.MAINTENANCE: _MAINTAIN, EventType.BREAKDOWN: _BREAK}
_END_PHASE = {"completed": _COMPLETE, "aborted": _ABORT, "preempted": _PREEMPTED_END}


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
        super().__init__(report.describe(limit))


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

    def describe(self, limit: int | None = 10) -> str:
        """The counts of each kind, then one indented line per violation, the first ``limit`` of them (None: all)."""
        if self.ok:
            return str(self)
        shown = self.violations if limit is None else self.violations[:check_integer("limit", limit, 0)]
        lines = [f"{self._counts()}:", *(f"  {v}" for v in shown)]
        if len(shown) < len(self.violations):
            lines.append(f"  ... and {len(self.violations) - len(shown)} more")
        return "\n".join(lines)

    def _counts(self) -> str:
        counts = ", ".join(f"{k} x{n}" for k, n in self.kinds().items())
        return f"invalid schedule: {len(self.violations)} violation(s) ({counts})"

    def __str__(self) -> str:
        if self.ok:
            return "valid schedule (" + ", ".join(f"{k}={_f(v)}" for k, v in self.metrics.items()) + ")"
        return f"{self._counts()}; first: {self.violations[0]}"


def validate_schedule(
    schedule: Schedule | Mapping[str, Any] | str | os.PathLike[str],
    tol: float = RECORD_TOL,
    require_finished: bool = True,
    now: float | None = None,
) -> ValidationReport:
    """Check a schedule against its instance and ``docs/semantics.md``.

    Args:
        schedule: a :class:`~dynasched_gym.schedule.Schedule` (converted with ``to_dict()``), its
            JSON object, or the path of a schedule JSON file (an ``instance.path`` in the file is
            resolved relative to it).
        tol: time tolerance, relative to ``max(1, |t|)``; also for work and metric comparisons.
        require_finished: report jobs that are neither completed nor cancelled (``unfinished``).
        now: for a schedule taken mid-episode, the simulation clock when it was taken: events after
            it are not applied, and downtime is replayed up to it (a machine may also be running an
            operation the records do not show yet). ``None``: with ``require_finished``, every event
            up to the episode's end applies; without, the latest time the records show is used as a
            lower bound of the clock (see the module docstring). A finished schedule is always
            checked up to its end.

    Returns:
        The report; it never raises on a bad schedule (use :meth:`ValidationReport.raise_if_invalid`).

    Raises:
        ValueError: ``now`` or ``tol`` is a number that is not finite, or ``tol`` one below 0.
        TypeError: ``now`` is neither None nor a number, ``tol`` no number, or ``require_finished`` not a bool.
    """
    if isinstance(schedule, (str, os.PathLike)):
        try:
            data: Any = load_schedule_dict(schedule)
        except InstanceFormatError as exc:
            return ValidationReport((Violation("format", f"cannot read the schedule: {exc}"),))
    elif isinstance(schedule, Mapping):
        data = schedule
    elif isinstance(schedule, Instance):  # its to_dict() was read as a schedule's: "unreadable instance"
        return ValidationReport((Violation("format", "an Instance, not a schedule: validate the schedule of an episode "
                                           "on it (dynasched_gym.rollout(instance), Simulator.schedule())"),))
    elif hasattr(schedule, "to_dict"):
        data = schedule.to_dict()
    else:
        return ValidationReport((Violation("format", f"not a schedule: {type(schedule).__name__}"),))
    if now is not None and _num(now) is None:  # a TypeError for no number, as tol's
        raise (ValueError if is_real(now) else TypeError)(f"now must be a finite number or None, got {now!r}")
    # a negative or NaN tol flagged every comparison, a string failed deep inside; "no" was read as true
    tol = check_real("tol", tol, 0.0)
    return _Checker(tol, check_bool("require_finished", require_finished), _num(now)).run(data)


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


@dataclass
class _Span:
    """A downtime interval of one machine: recorded (``what`` names the records) or implied by the
    machine's events (``what`` lists the events that opened, extended or cut it)."""

    kind: str
    start: float
    end: float
    what: list[str]

    def __str__(self) -> str:
        return f"{self.kind} {_f(self.start)}-{_f(self.end)}"


class _MachineReplay:
    """One machine's downtime as its events imply it (``docs/semantics.md``), replayed instant by instant.

    The machine's segments tell when it runs an operation: a MAINTENANCE then queues, the
    operation's completion or abort starts the queued maintenance, a BREAKDOWN preempts it.
    :meth:`stops` walks the instants; while it is paused, :meth:`spans` is the downtime had the
    replay been stopped there (intervals still open end at their planned end, queued maintenance
    never starts) and :attr:`idle` tells whether the machine is up, idle and has nothing queued.
    """

    def __init__(self, events: Sequence[Event], segs: Sequence[_Seg]) -> None:
        items: list[tuple[float, int, int, Event | _Seg]] = [
            (e.time, _EVENT_PHASE[e.type], i, e) for i, e in enumerate(events)]
        for s in segs:
            items += [(s.start, _START, s.index, s), (s.end, _END_PHASE[s.status], s.index, s)]
        self.items = sorted(items, key=lambda h: h[:3])
        # the time of the first BREAKDOWN at or after each item (inf: none)
        self.next_breakdown = [math.inf] * (len(self.items) + 1)
        for i in range(len(self.items) - 1, -1, -1):
            t, phase = self.items[i][:2]
            self.next_breakdown[i] = t if phase == _BREAK else self.next_breakdown[i + 1]
        self.closed: list[_Span] = []
        self.open: _Span | None = None  # the downtime in progress, with its planned end
        self.queued = 0.0  # maintenance waiting for the machine to be up and idle
        self.queued_what: list[str] = []
        self.running: set[int] = set()  # segments in progress
        self.pending = math.inf  # the first BREAKDOWN not applied yet

    @property
    def idle(self) -> bool:
        """True when the machine is up, runs nothing and has no maintenance queued."""
        return self.open is None and not self.running and not self.queued

    def spans(self) -> list[_Span]:
        """The downtime so far, the interval in progress ending at its planned end."""
        return [*self.closed, *([self.open] if self.open else [])]

    def stops(self) -> Iterator[tuple[float, float]]:
        """Walk the instants; pause after each with ``(lo, hi)``: the state holds for a stop time in ``[lo, hi)``."""
        items, i, lo = self.items, 0, -math.inf
        while True:
            hi = min(items[i][0] if i < len(items) else math.inf, self.open.end if self.open else math.inf)
            self.pending = self.next_breakdown[i]
            yield lo, hi
            if hi == math.inf:
                return
            j = i
            while j < len(items) and items[j][0] <= hi + EPS:
                j += 1
            batch = sorted(items[i:j], key=lambda h: h[1:3])
            while batch and batch[0][1] == _REPAIR:
                self._apply(batch.pop(0), hi)
            if self.open is not None and self.open.end <= hi + EPS:
                self._end_downtime()
            for h in batch:
                self._apply(h, hi)
            i, lo = j, hi

    def _open(self, kind: str, start: float, end: float, what: list[str]) -> None:
        self.open = _Span(kind, start, end, what)

    def _end_downtime(self, at: float | None = None) -> None:
        """The downtime in progress ends (at its planned end, or cut at ``at``)."""
        assert self.open is not None
        if at is not None:
            self.open.end = at
        self.closed.append(self.open)
        self.open = None
        self._free(self.closed[-1].end)

    def _free(self, t: float) -> None:
        """The machine may have become up and idle at ``t``: the queued maintenance starts."""
        if self.queued and self.open is None and not self.running:
            self._open("maintenance", t, t + self.queued,
                       [*self.queued_what, f"queued until the machine is free at {_f(t)}"])
            self.queued, self.queued_what = 0.0, []

    def _apply(self, item: tuple[float, int, int, Event | _Seg], t: float) -> None:
        _, phase, _, x = item
        if isinstance(x, _Seg):
            if phase == _START:
                self.running.add(x.index)
            elif x.index in self.running:
                self.running.discard(x.index)
                self._free(t if phase == _ABORT else x.end)
            return
        d = x.duration or 0.0
        what = f"{x.type.name} at {_f(t)} for {_f(d)}"
        if phase == _REPAIR:
            if self.open is not None and self.open.kind == "breakdown":
                self.open.what.append(f"cut by REPAIR at {_f(t)}")
                self._end_downtime(t)
        elif phase == _MAINTAIN:
            if self.open is not None and self.open.kind == "maintenance":  # back to back
                self.open.end += d
                self.open.what.append(what)
            elif self.open is not None or self.running:
                self.queued += d
                self.queued_what.append(what)
            else:
                self._open("maintenance", t, t + d, [what])
        else:  # BREAKDOWN: preempts the running operation
            self.running.clear()
            if self.open is not None and self.open.kind == "breakdown":
                if t + d > self.open.end:
                    self.open.end = t + d
                    self.open.what.append(f"extended by {what}")
            elif self.open is not None:  # it absorbs the maintenance in progress
                end = max(t + d, self.open.end)
                self.open.what.append(f"cut by BREAKDOWN at {_f(t)}")
                self.open.end = max(t, self.open.start)  # started at a completion up to EPS after t: empty
                self.closed.append(self.open)
                self._open("breakdown", t, end, [what, f"absorbing the maintenance planned until {_f(end)}"]
                           if end > t + d else [what])
            else:
                self._open("breakdown", t, t + d, [what])


def events_by_instant(events: Sequence[Event]) -> list[Event]:
    """``events`` in the order they apply, each at its instant's time (docs/semantics.md, "Time and tolerance").

    Taken in time order, an event at most ``EPS`` after the first event of the current instant belongs to that
    instant; a later one opens the next. The result is sorted by (instant, type), file order within a type.
    """
    timed = sorted(range(len(events)), key=lambda i: events[i].time)
    instant = [0.0] * len(events)
    first = -math.inf
    for i in timed:
        if events[i].time > first + EPS:
            first = events[i].time
        instant[i] = first
    order = sorted(range(len(events)), key=lambda i: (instant[i], events[i].type))
    return [events[i] if events[i].time == instant[i] else replace(events[i], time=instant[i]) for i in order]


def machine_downtime(events: Sequence[Event], segments: Sequence[tuple[float, float, str]], end: float
                     ) -> list[tuple[str, float, float]]:
    """The downtime records one machine's events imply (``docs/semantics.md``) in an episode that ends at ``end``.

    Args:
        events: the machine's BREAKDOWN, REPAIR and MAINTENANCE events, at their instants' times (taken from
            :func:`events_by_instant` of all the instance's events: other events decide the instants too).
        segments: when the machine runs operations: ``(start, end, status)`` with status ``completed``,
            ``preempted`` or ``aborted``.
        end: the episode's end; the events of that instant apply, later ones do not, and downtime still open
            then runs to its planned end.

    Returns:
        ``(kind, start, end)`` per record, kind ``breakdown`` or ``maintenance``: what a schedule builder that
        places operations itself (the CP-SAT oracle) records, and what :func:`validate_schedule` expects.
    """
    runs = [_Seg(i, -1, -1, -1, start, stop, 0.0, status) for i, (start, stop, status) in enumerate(segments)]
    replay = _MachineReplay(events, runs)
    for lo, hi in replay.stops():
        if hi > end + EPS and lo <= end + EPS:
            break
    return [(x.kind, x.start, x.end) for x in replay.spans() if x.end > x.start]


def _f(x: float | None) -> str:
    return "null" if x is None else f"{x:.10g}"


def _num(x: Any) -> float | None:
    """A finite real number as float, else None."""
    return float(x) if is_finite_real(x) else None


def _index(x: Any, n: int | None) -> int | None:
    """An integer id in ``0..n-1`` (``n`` None: any id >= 0), else None."""
    if not is_integer(x):
        return None
    return int(x) if 0 <= x and (n is None or x < n) else None


# --------------------------------------------------------------------------------------- checker
class _Checker:
    """One validation run; each ``_check_*`` method appends violations."""

    def __init__(self, tol: float, require_finished: bool, now: float | None) -> None:
        self.tol = tol
        self.require_finished = require_finished
        self.now = now
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
        self._check_now()
        self.replays = [self._replay(j) for j in range(self.inst.num_jobs)]
        self._check_machines()
        self._check_downtime()
        self._check_slots()
        self._check_precedence()
        self._check_policy()
        self._check_jobs()
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
        self.job_events: list[list[Event]] = [[] for _ in range(inst.num_jobs)]
        self.machine_events: list[list[Event]] = [[] for _ in range(inst.num_machines)]
        for e in events_by_instant(inst.events):
            if e.job is not None:
                self.job_events[e.job].append(e)
            else:
                self.machine_events[e.machine].append(e)  # type: ignore[index]
        self.breakdown_times = [[e.time for e in es if e.type == EventType.BREAKDOWN] for es in self.machine_events]
        # the latest time the records show: the clock stood at or after it (segments still running are
        # left out of a mid-episode schedule, open downtime ends at its planned end, so ends are not used)
        recorded = [x for r in self.records.values() for x in (r.completion, r.cancelled_at) if x is not None]
        self.latest = max([0.0, *(s.end for s in self.segs), *(d.start for d in self.downs), *recorded])
        # job events after this time are not applied (inf: the episode is over, every event up to its end applies)
        self.cut = self.now if self.now is not None else math.inf if self.require_finished else self.latest

    def _breakdown_near(self, s: _Seg) -> float:
        """The time of the BREAKDOWN of ``s``'s machine nearest to its end (inf: none), the one that preempts it."""
        times = self.breakdown_times[s.machine]
        i = bisect_left(times, s.end)
        return min(times[max(0, i - 1):i + 1], key=lambda t: abs(t - s.end), default=math.inf)

    def _check_now(self) -> None:
        """A clock passed as ``now`` must not precede what the records show."""
        if self.now is not None and self.latest > self.now + self.eps(self.now):
            self.add("now", f"the records reach time {_f(self.latest)}, after now={_f(self.now)} (segment ends, "
                     f"downtime starts, completions and cancellations must be at or before the clock)")

    # -------------------------------------------------------------------- 3. the replay
    def _replay(self, j: int) -> _Replay:
        """Apply job ``j``'s events to its operation list (semantics.md, happenings at one time)."""
        inst = self.inst
        first, done = self.first_start[j], self.done_end[j]
        due = None if math.isnan(inst.job_due[j]) else float(inst.job_due[j])
        r = _Replay([_Slot(op) for op in inst.job_ops(j)], {}, due, float(inst.job_weight[j]))

        # whether an event came before or after a start or an end is decided as the simulator decides it, with
        # its absolute epsilon: the relative tolerance spans 0.01 time units at t = 1e4, where events do differ
        # each comparison in the simulator's form (event time <= happening + EPS), so that float rounding at a
        # distance of exactly EPS decides as it does there
        def untouched(k: int, t: float) -> bool:  # no segment of slot k started strictly before t
            return k not in first or t <= first[k] + EPS

        def completed(k: int, t: float) -> bool:  # a completed segment of slot k ended by t
            return k in done and done[k] <= t + EPS

        def freeze(t: float | None) -> None:  # remember each slot as it stood when first started
            for k, s in first.items():
                if k not in r.frozen and (t is None or not t <= s + EPS):
                    r.frozen[k] = r.slots[k] if k < len(r.slots) else None

        # a known clock (now, or the episode's end) is a simulator time: its events are those within EPS
        cut = self.cut + (EPS if self.now is not None else self.eps(self.cut))
        for e in self.job_events[j]:
            t = e.time
            if t > cut:
                break
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
            if isinstance(x, _Down) and x.end <= x.start:  # an empty record (a maintenance cut as it starts)
                continue
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
        self.machine_segs, self.machine_downs = m_segs, m_downs  # per machine, by start: also for _check_downtime
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
                if s.status == "preempted" and not abs(self._breakdown_near(s) - s.end) <= self.eps(s.end):
                    self.add("preemption", f"{s} is preempted but machine {m} has no BREAKDOWN at {_f(s.end)}",
                             s.index, s.job)
                # checked on the events, not only on the downtime: a downtime within the tolerance is no interval
                # to compare, yet its BREAKDOWN preempts the operation all the same
                b = self.breakdown_times[m]
                k = bisect_right(b, s.start + self.eps(s.start))
                if k < len(b) and b[k] < s.end - self.eps(s.end):
                    self.add("preemption", f"{s} runs through machine {m}'s BREAKDOWN at {_f(b[k])}, which preempts "
                             f"the operation running then", s.index, s.job)

    # ------------------------------------------------ 6. downtime: the timeline the events imply
    def _merged(self, spans: Sequence[_Span]) -> list[_Span]:
        """``spans`` sorted, empty ones dropped, touching or overlapping ones of one kind joined: the timeline
        does not depend on how records split it (back-to-back maintenances, a breakdown renewed as it ends),
        and overlapping records are reported as ``overlap`` already."""
        out: list[_Span] = []
        for x in sorted(spans, key=lambda x: (x.start, x.end)):
            if x.end - x.start <= self.eps(x.end):
                continue
            if out and out[-1].kind == x.kind and x.start <= out[-1].end + self.eps(out[-1].end):
                out[-1] = _Span(x.kind, out[-1].start, max(out[-1].end, x.end), out[-1].what + x.what)
            else:
                out.append(_Span(x.kind, x.start, x.end, list(x.what)))
        return out

    def _expected_downtime(self, m: int, segs: Sequence[_Seg], clock: float, finished: bool) -> Iterator[list[_Span]]:
        """The downtime timelines machine ``m``'s events allow, given its segments ``segs``.

        Finished (``clock`` is the episode's end): one, the replay stopped at the end. Unfinished (``clock`` is
        ``now``, or the latest recorded time when ``now`` is unknown): the replay stopped at the clock (any time
        at or after it when unknown), and each stop where the machine may have started an operation that still
        runs: idle, after its last recorded segment, with no BREAKDOWN from there to the clock, included (it would
        have preempted the operation, which would then be recorded).
        """
        known = finished or self.now is not None
        e = EPS if known else self.eps(clock)  # a known clock is a simulator time; else a lower bound of it
        last_seg = max((s.end for s in segs), default=-math.inf)
        replay = _MachineReplay(self.machine_events[m], segs)
        for lo, hi in replay.stops():
            at_clock = hi > clock + EPS and (lo <= clock + e or not known)
            start = max(lo, 0.0, last_seg)  # the earliest an unseen operation could start in [lo, hi)
            unseen_op = (not finished and replay.idle and start + EPS < hi and start <= clock + e
                         and replay.pending > max(start, clock) + EPS)
            if at_clock or unseen_op:
                spans = self._merged(replay.spans())
                yield spans
                if not known and any(x.start > clock + e for x in spans):
                    return  # every recorded interval starts by the latest recorded time: later stops cannot match
            if known and lo > clock + e:
                return

    def _downtime_diff(self, m: int, expected: Sequence[_Span], found: Sequence[_Span]) -> list[str]:
        """What differs between the downtime machine ``m``'s events imply and its records, one message each."""
        out: list[str] = []
        i = j = 0
        while i < len(expected) or j < len(found):
            x = expected[i] if i < len(expected) else None
            y = found[j] if j < len(found) else None
            if x is not None and y is not None and x.kind == y.kind and self.close(x.start, y.start):
                if not self.close(x.end, y.end):
                    out.append(f"machine {m}: {', '.join(y.what)} ({y}) ends at {_f(y.end)}, expected "
                               f"{_f(x.end)} ({'; '.join(x.what)})")
                i, j = i + 1, j + 1
            elif x is not None and (y is None or x.start <= y.start):
                out.append(f"machine {m}: expected {x.kind} downtime {_f(x.start)}-{_f(x.end)} ({'; '.join(x.what)}), "
                           f"found no {x.kind} downtime starting at {_f(x.start)}")
                i += 1
            else:
                assert y is not None
                implied = ", ".join(map(str, expected[:6])) + (", ..." if len(expected) > 6 else "") or "none"
                out.append(f"machine {m}: {', '.join(y.what)} ({y}) is explained by no event: expected no "
                           f"{y.kind} downtime starting at {_f(y.start)} (the events imply: {implied})")
                j += 1
        return out

    def _check_downtime(self) -> None:
        """Each machine's downtime records must give the timeline its events imply (see :class:`_MachineReplay`)."""
        ends = [r.completion if r.completion is not None else r.cancelled_at for r in self.replays]
        done = [x for x in ends if x is not None]
        finished = len(done) == len(ends)
        clock = max(done) if finished else self.now if self.now is not None else self.latest
        for m in range(self.inst.num_machines):
            found = self._merged([_Span(d.kind, d.start, d.end, [f"downtime {d.index}"])
                                  for d in self.machine_downs[m]])
            best: list[str] | None = None
            for expected in self._expected_downtime(m, self.machine_segs[m], clock, finished):
                problems = self._downtime_diff(m, expected, found)
                if not problems:
                    break
                if best is None or len(problems) < len(best):
                    best = problems
            else:
                for message in best or ():
                    self.add("downtime", message)

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
            last: _Seg | None = None  # the segment with the latest end so far, as in _check_overlaps
            for b in segs:
                if last is not None and b.start < last.end - self.eps(last.end):
                    self.add("precedence", f"job {j} runs two segments at once: {last} and {b}", b.index, j)
                if last is None or b.end > last.end:
                    last = b
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
                self._check_stops(j, k, ks, resume)
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

    def _check_stops(self, j: int, k: int, ks: Sequence[_Seg], resume: bool) -> None:
        """A preempted or aborted segment must stop before its operation's planned end: at that end the operation
        completes, and completions apply before cancellations and breakdowns (semantics.md)."""
        slot = self.replays[j].frozen.get(k)
        done = 0.0
        for s in ks:
            done = done + s.work if resume else s.work
            p = slot.times.get(s.machine) if slot is not None else None
            # half EPS: the simulator stops an operation that has more than EPS left, reported as work rounded
            if s.status != "completed" and p is not None and (1.0 - done) * p <= 0.5 * EPS:
                self.add("status", f"{s} is {s.status} where job {j} op {k} completes (its work reaches 1 at "
                         f"{_f(s.end)}): the completion applies first", s.index, j)

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
                elif c is not None and s.status == "preempted" and abs(self._breakdown_near(s) - c) <= EPS:
                    self.add("cancellation", f"{s} runs when job {j} is cancelled at {_f(c)}: the CANCELLATION applies "
                             f"before the BREAKDOWN of that instant and aborts it", s.index, j)
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
                if self.now is None:  # the clock is only known to be at or after the records: a later change may apply
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
