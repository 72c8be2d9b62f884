"""Tests of the independent schedule validator: hand-written schedules (no simulator involved), then
simulator schedules tampered with, and random mid-episode simulator schedules."""

from __future__ import annotations

import ast
import copy
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances

from dynasched_gym.core import Simulator, rollout
from dynasched_gym.instance import Event, EventType, Instance, Job, Machine
from dynasched_gym.metrics import compute_metrics
from dynasched_gym.schedule import DOWNTIME_KINDS, SCHEDULE_FORMAT, SEGMENT_STATUSES, Schedule, schedule_dict
from dynasched_gym.validate import ScheduleInvalidError, ValidationReport, Violation, validate_schedule

E = EventType
TWO = (Machine("M0"), Machine("M1"))
NAN = float("nan")


def inst(*jobs: Job, events: Sequence[Event] = (), policy: str = "resume",
         machines: Sequence[Machine] = TWO) -> Instance:
    """A small instance."""
    return Instance.build("t", machines, jobs, events, policy)


def make(instance: Instance, segs: Sequence[tuple[Any, ...]], down: Sequence[tuple[Any, ...]] = (),
         jobs: Mapping[int, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A schedule dict. ``segs``: (job, op, machine, start, end[, work=1, status="completed"]);
    ``down``: (machine, start, end, kind); ``jobs``: per-job overrides of the records (defaults:
    the instance's due and weight, no completion, no cancellation). Metrics come from these records."""
    records = []
    for j in range(instance.num_jobs):
        due = instance.job_due[j]
        rec = {"job": j, "release": float(instance.job_release[j]), "due": None if math.isnan(due) else float(due),
               "weight": float(instance.job_weight[j]), "completion": None, "cancelled_at": None}
        rec.update((jobs or {}).get(j, {}))
        records.append(rec)
    segments = [dict(zip(("job", "op", "machine", "start", "end", "work", "status"),
                         (*s, 1.0, "completed") if len(s) == 5 else s, strict=True)) for s in segs]
    downtime = [dict(zip(("machine", "start", "end", "kind"), d, strict=True)) for d in down]
    data = instance.to_dict()
    for e in data["events"]:  # route-change ops in the DESIGN section 5 form, {"eligible": {...}}
        if "ops" in e:
            e["ops"] = [op if "eligible" in op else {"eligible": op} for op in e["ops"]]

    def col(key: str) -> np.ndarray:
        return np.array([NAN if r[key] is None else r[key] for r in records], dtype=np.float64)

    metrics = compute_metrics(
        release=col("release"), due=col("due"), weight=col("weight"), completion=col("completion"),
        cancelled=~np.isnan(col("cancelled_at")),
        busy_start=np.array([s["start"] for s in segments], dtype=np.float64),
        busy_end=np.array([s["end"] for s in segments], dtype=np.float64),
        down_start=np.array([d["start"] for d in downtime], dtype=np.float64),
        down_end=np.array([d["end"] for d in downtime], dtype=np.float64),
        num_machines=instance.num_machines,
    )
    return {"format": SCHEDULE_FORMAT, "instance": data, "segments": segments,
            "downtime": downtime, "jobs": records, "metrics": metrics}


def kinds(schedule: Any, **kwargs: Any) -> set[str]:
    """The violation kinds of a schedule."""
    return set(validate_schedule(schedule, **kwargs).kinds())


# ---------------------------------------------------------------------------- valid schedules
def breakdown_resume() -> dict[str, Any]:
    """A breakdown preempts job 0 on M0; the rest (0.6) resumes on M1."""
    i = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(4, E.BREAKDOWN, machine=0, duration=6)])
    return make(i, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 4, 10, 0.6, "completed")],
                [(0, 4, 10, "breakdown")], {0: {"completion": 10}})


def breakdown_restart() -> dict[str, Any]:
    """Restart policy; an early REPAIR ends the breakdown; a REPAIR of an up machine is ignored."""
    i = inst(Job("J0", [{0: 10}]), policy="restart",
             events=[Event(1, E.REPAIR, machine=1), Event(4, E.BREAKDOWN, machine=0, duration=6),
                     Event(7, E.REPAIR, machine=0)])
    return make(i, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 0, 7, 17, 1.0, "completed")],
                [(0, 4, 7, "breakdown")], {0: {"completion": 17}})


def maintenance() -> dict[str, Any]:
    """Maintenance waits for the running op; job 1 waits for the maintenance."""
    i = inst(Job("J0", [{0: 5}]), Job("J1", [{0: 3}]), events=[Event(2, E.MAINTENANCE, machine=0, duration=4)])
    return make(i, [(0, 0, 0, 0, 5), (1, 0, 0, 9, 12)], [(0, 5, 9, "maintenance")],
                {0: {"completion": 5}, 1: {"completion": 12}})


def breakdown_during_maintenance() -> dict[str, Any]:
    """A breakdown cuts a maintenance short and lasts until the maintenance's planned end."""
    i = inst(Job("J0", [{0: 2}], release=1),
             events=[Event(0, E.MAINTENANCE, machine=0, duration=5), Event(2, E.BREAKDOWN, machine=0, duration=1)])
    return make(i, [(0, 0, 0, 5, 7)], [(0, 0, 2, "maintenance"), (0, 2, 5, "breakdown")], {0: {"completion": 7}})


def cancellation() -> dict[str, Any]:
    """Job 0 is cancelled while running (aborted); job 1's cancellation at its completion is ignored."""
    i = inst(Job("J0", [{0: 10}]), Job("J1", [{0: 2}]),
             events=[Event(4, E.CANCELLATION, job=0), Event(6, E.CANCELLATION, job=1)])
    return make(i, [(0, 0, 0, 0, 4, 0.4, "aborted"), (1, 0, 0, 4, 6)], [],
                {0: {"cancelled_at": 4}, 1: {"completion": 6}})


def rework() -> dict[str, Any]:
    """Op 0 (time doubled) is reworked with its times; a rework of a running op is ignored."""
    i = inst(Job("J0", [{0: 3}, {1: 4}]),
             events=[Event(0, E.PTIME_CHANGE, job=0, op=0, factor=2.0), Event(7, E.REWORK, job=0, op=1),
                     Event(8, E.REWORK, job=0, op=0)])
    return make(i, [(0, 0, 0, 0, 6), (0, 1, 1, 6, 10), (0, 2, 0, 10, 16)], [], {0: {"completion": 16}})


def route_change() -> dict[str, Any]:
    """Job 0's route is replaced from its first untouched op (op=0 is clamped); job 1's from op 2."""
    i = inst(Job("J0", [{0: 3}, {0: 4}, {1: 5}]), Job("J1", [{1: 1}, {1: 1}, {1: 1}]),
             events=[Event(0, E.ROUTE_CHANGE, job=1, op=2, ops=({0: 3},)),
                     Event(2, E.ROUTE_CHANGE, job=0, ops=({1: 2}, {0: 1}))])
    return make(i, [(0, 0, 0, 0, 3), (0, 1, 1, 3, 5), (0, 2, 0, 5, 6),
                    (1, 0, 1, 0, 1), (1, 1, 1, 1, 2), (1, 2, 0, 6, 9)], [],
                {0: {"completion": 6}, 1: {"completion": 9}})


def ptime_change() -> dict[str, Any]:
    """Factors compound, a value sets value/speed and resets factors, started slots are unaffected."""
    P = E.PTIME_CHANGE
    i = inst(Job("J0", [{0: 4, 1: 2}, {0: 6, 1: 3}]), Job("J1", [{0: 5, 1: 2.5}]), Job("J2", [{0: 3}]),
             machines=(Machine("M0"), Machine("M1", speed=2.0)),
             events=[Event(0, P, job=1, op=0, value=8.0), Event(0, P, job=1, op=0, factor=0.5),
                     Event(0, P, job=2, op=0, factor=3.0), Event(0, P, job=2, op=0, value=5.0),
                     Event(1, P, job=0, op=0, factor=10.0), Event(1, P, job=0, op=1, factor=2.0),
                     Event(2, P, job=0, op=1, factor=1.5)])
    return make(i, [(0, 0, 1, 0, 2), (0, 1, 1, 2, 11), (1, 0, 0, 0, 4), (2, 0, 0, 4, 9)], [],
                {0: {"completion": 11}, 1: {"completion": 4}, 2: {"completion": 9}})


def priority_due() -> dict[str, Any]:
    """Weight and due change before completion; changes at or after completion are ignored."""
    i = inst(Job("J0", [{0: 5}], due=4.0), Job("J1", [{0: 3}], due=20.0),
             events=[Event(1, E.PRIORITY_CHANGE, job=0, weight=5.0), Event(2, E.DUE_DATE_CHANGE, job=0, due=3.0),
                     Event(5, E.DUE_DATE_CHANGE, job=0, due=100.0), Event(9, E.PRIORITY_CHANGE, job=1, weight=9.0)])
    return make(i, [(0, 0, 0, 0, 5), (1, 0, 0, 5, 8)], [],
                {0: {"completion": 5, "due": 3.0, "weight": 5.0}, 1: {"completion": 8}})


def breakdown_extended() -> dict[str, Any]:
    """A later, longer breakdown extends the downtime; a shorter one inside it changes nothing."""
    i = inst(Job("J0", [{0: 10}]), events=[Event(2, E.BREAKDOWN, machine=0, duration=4),
                                           Event(4, E.BREAKDOWN, machine=0, duration=5),
                                           Event(5, E.BREAKDOWN, machine=0, duration=1)])
    return make(i, [(0, 0, 0, 0, 2, 0.2, "preempted"), (0, 0, 0, 9, 17, 0.8, "completed")],
                [(0, 2, 9, "breakdown")], {0: {"completion": 17}})


def maintenance_after_repair() -> dict[str, Any]:
    """A maintenance queued behind job 0 still waits when a breakdown preempts it, and starts at the REPAIR."""
    i = inst(Job("J0", [{0: 4}]), events=[Event(1, E.MAINTENANCE, machine=0, duration=3),
                                          Event(2, E.BREAKDOWN, machine=0, duration=2), Event(3, E.REPAIR, machine=0)])
    return make(i, [(0, 0, 0, 0, 2, 0.5, "preempted"), (0, 0, 0, 6, 8, 0.5, "completed")],
                [(0, 2, 3, "breakdown"), (0, 3, 6, "maintenance")], {0: {"completion": 8}})


VALID = [breakdown_resume, breakdown_restart, maintenance, breakdown_during_maintenance, cancellation, rework,
         route_change, ptime_change, priority_due, breakdown_extended, maintenance_after_repair]


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.__name__)
def test_valid_schedules(case: Callable[[], dict[str, Any]]) -> None:
    data = case()
    report = validate_schedule(data)
    assert report.ok, str(report)
    assert report.metrics == pytest.approx(data["metrics"])
    assert str(report).startswith("valid schedule")


def test_recomputed_values() -> None:
    assert validate_schedule(priority_due()).metrics["total_weighted_tardiness"] == pytest.approx(10.0)
    m = validate_schedule(cancellation()).metrics
    assert (m["num_cancelled_jobs"], m["makespan"]) == (1, 6.0)
    assert validate_schedule(breakdown_resume()).metrics["utilization"] == pytest.approx(10 / 14)


# ------------------------------------------------------------------------- corrupted schedules
def one_op(**job: Any) -> Instance:
    return inst(Job("J0", [{0: 5}], **job))


def test_overlap() -> None:
    i = inst(Job("J0", [{0: 5}]), Job("J1", [{0: 3}]))
    data = make(i, [(0, 0, 0, 0, 5), (1, 0, 0, 3, 6)], [], {0: {"completion": 5}, 1: {"completion": 6}})
    report = validate_schedule(data)
    assert report.kinds() == {"overlap": 1}
    assert report.violations[0].segment == 1 and "machine 0" in report.violations[0].message


def test_overlapping_downtime() -> None:
    i = inst(Job("J0", [{1: 5}]), events=[Event(0, E.MAINTENANCE, machine=0, duration=4),
                                          Event(1, E.MAINTENANCE, machine=0, duration=4)])
    # back to back the two maintenances cover 0-8; the records cover it too, but overlap
    data = make(i, [(0, 0, 1, 0, 5)], [(0, 0, 4, "maintenance"), (0, 2, 8, "maintenance")], {0: {"completion": 5}})
    assert kinds(data) == {"overlap"}


def test_ineligible_machine() -> None:
    data = make(one_op(), [(0, 0, 1, 0, 5)], [], {0: {"completion": 5}})
    report = validate_schedule(data)
    assert report.kinds() == {"eligibility": 1}
    assert report.violations[0].job == 0


def test_precedence() -> None:
    i = inst(Job("J0", [{0: 3}, {1: 4}]))
    data = make(i, [(0, 0, 0, 0, 3), (0, 1, 1, 2, 6)], [], {0: {"completion": 6}})
    assert kinds(data) == {"precedence"}


def test_unknown_slot() -> None:
    data = make(one_op(), [(0, 0, 0, 0, 5), (0, 1, 0, 5, 10)], [], {0: {"completion": 5}})
    assert "operation" in kinds(data)


def test_release() -> None:
    data = make(one_op(release=2.0), [(0, 0, 0, 0, 5)], [], {0: {"completion": 5}})
    assert kinds(data) == {"release"}


def test_work_during_downtime() -> None:
    i = inst(Job("J0", [{0: 5}]), events=[Event(0, E.MAINTENANCE, machine=0, duration=3)])
    data = make(i, [(0, 0, 0, 1, 6)], [(0, 0, 3, "maintenance")], {0: {"completion": 6}})
    assert kinds(data) == {"downtime"}


def test_breakdown_without_downtime() -> None:
    data = breakdown_resume()
    data["downtime"] = []
    data["metrics"] = make(Instance.from_dict(data["instance"]), [], [], {0: {"completion": 10}})["metrics"]
    data["metrics"]["utilization"] = 10 / 20
    assert kinds(data) == {"downtime"}


def test_preempted_without_breakdown() -> None:
    i = inst(Job("J0", [{0: 10, 1: 10}]))
    data = make(i, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 4, 10, 0.6, "completed")], [],
                {0: {"completion": 10}})
    assert kinds(data) == {"preemption"}


def test_wrong_duration() -> None:
    data = make(one_op(), [(0, 0, 0, 0, 6)], [], {0: {"completion": 6}})
    report = validate_schedule(data)
    assert report.kinds() == {"duration": 1}
    assert "lasts 6" in report.violations[0].message


def test_duration_uses_time_in_force() -> None:
    """The op started at t=0 before the factor at t=1 applies: nominal time 4 on M1 stays 2 (speed 2)."""
    data = ptime_change()
    data["segments"][0]["end"] = 20.0  # op 0 on M1 would be 20 if the ignored factor 10 had applied
    assert "duration" in kinds(data)


def test_wrong_work_sum_resume() -> None:
    i = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(4, E.BREAKDOWN, machine=0, duration=6)])
    data = make(i, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 4, 9, 0.5, "completed")],
                [(0, 4, 10, "breakdown")], {0: {"completion": 9}})
    assert kinds(data) == {"work"}


def test_partial_final_work_restart() -> None:
    i = inst(Job("J0", [{0: 10}]), policy="restart",
             events=[Event(4, E.BREAKDOWN, machine=0, duration=6), Event(7, E.REPAIR, machine=0)])
    data = make(i, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 0, 7, 13, 0.6, "completed")],
                [(0, 4, 7, "breakdown")], {0: {"completion": 13}})
    assert kinds(data) == {"work"}


def test_two_completed_segments() -> None:
    data = make(one_op(), [(0, 0, 0, 0, 5), (0, 0, 0, 5, 10)], [], {0: {"completion": 10}})
    assert "status" in kinds(data)


def test_run_after_cancellation() -> None:
    i = inst(Job("J0", [{0: 3}, {0: 3}]), events=[Event(4, E.CANCELLATION, job=0)])
    data = make(i, [(0, 0, 0, 0, 3), (0, 1, 0, 3, 6)], [], {0: {"cancelled_at": 4}})
    report = validate_schedule(data)
    assert report.kinds() == {"cancellation": 1}
    assert report.violations[0].segment == 1


def test_aborted_off_cancellation_time() -> None:
    data = cancellation()
    data["segments"][0].update(end=3.0, work=0.3)
    data["segments"][1].update(start=3.0, end=5.0)
    data["jobs"][1]["completion"] = 5.0
    data["metrics"] = validate_schedule(data).metrics
    assert kinds(data) == {"cancellation"}


def test_wrong_cancelled_at() -> None:
    data = cancellation()
    data["jobs"][0]["cancelled_at"] = 5.0
    assert kinds(data) == {"cancellation"}


def test_wrong_completion() -> None:
    data = make(one_op(), [(0, 0, 0, 0, 5)], [], {0: {"completion": 5}})
    data["jobs"][0]["completion"] = 7.0
    report = validate_schedule(data)
    assert report.kinds() == {"completion": 1}
    assert "7" in report.violations[0].message and "5" in report.violations[0].message


def test_wrong_due_and_weight() -> None:
    data = priority_due()
    data["jobs"][0]["due"] = 100.0  # the change at the completion time does not apply
    assert kinds(data) == {"due"}
    data = priority_due()
    data["jobs"][1]["weight"] = 9.0  # the change after completion does not apply
    assert kinds(data) == {"weight"}


def test_wrong_metric() -> None:
    data = breakdown_resume()
    data["metrics"]["makespan"] = 99.0
    report = validate_schedule(data)
    assert report.kinds() == {"metrics": 1}
    assert "makespan" in report.violations[0].message
    del data["metrics"]["utilization"]
    assert validate_schedule(data).kinds() == {"metrics": 2}


def test_unfinished() -> None:
    i = inst(Job("J0", [{0: 3}, {0: 2}]))
    data = make(i, [(0, 0, 0, 0, 3)])
    assert kinds(data) == {"unfinished"}
    assert validate_schedule(data, require_finished=False).ok


def test_rework_copy_required() -> None:
    """Dropping the rework copy leaves the job unfinished; claiming completion is wrong."""
    data = rework()
    data["segments"].pop()
    assert kinds(data) == {"completion", "unfinished", "metrics"}


# ------------------------------------------------------------------------------ format, io, api
def test_bad_records() -> None:
    data = breakdown_resume()
    data["downtime"].append({"machine": 1, "start": 0.0, "end": 1.0, "kind": "holiday"})
    data["jobs"].append({"job": 5, "release": 0.0, "due": None, "weight": 1.0, "completion": None,
                         "cancelled_at": None})
    report = validate_schedule(data)
    assert report.kinds() == {"format": 2}
    assert "holiday" in report.violations[0].message
    data = breakdown_resume()
    data["segments"][1]["status"] = "done"
    assert "format" in kinds(data)
    data = breakdown_resume()
    data["segments"][0]["work"] = 1.5
    assert "format" in kinds(data)
    data = breakdown_resume()
    data["segments"][0]["end"] = 10**400  # Python's json reads it; float() of it overflowed (a crash, not a report)
    assert "format" in kinds(data)


@pytest.mark.parametrize("bad", [42, {"format": SCHEDULE_FORMAT}, {**breakdown_resume(), "segments": None},
                                 {**breakdown_resume(), "instance": {"format": "x"}}])
def test_unreadable(bad: Any) -> None:
    report = validate_schedule(bad)
    assert len(report.violations) == 1 and report.violations[0].kind == "format"
    assert report.metrics == {}


def test_json_file_round_trip(tmp_path: Path) -> None:
    data = route_change()
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert validate_schedule(path).ok
    assert validate_schedule(str(path)).ok
    # the instance stored beside the schedule, by relative path
    data = rework()
    (tmp_path / "instance.json").write_text(json.dumps(data["instance"]), encoding="utf-8")
    by_path = {**copy.deepcopy(data), "instance": {"path": "instance.json"}}
    path.write_text(json.dumps(by_path), encoding="utf-8")
    assert validate_schedule(path).ok
    assert kinds(by_path) == {"format"}  # a bare dict cannot resolve the path


def test_schedule_dict_copies_the_mapping_it_resolves(tmp_path: Path) -> None:
    data = rework()
    (tmp_path / "instance.json").write_text(json.dumps(data["instance"]), encoding="utf-8")
    by_path = {**copy.deepcopy(data), "instance": {"path": "instance.json"}}
    resolved = schedule_dict(by_path, tmp_path / "schedule.json")
    assert isinstance(resolved, dict) and "jobs" in resolved["instance"]
    assert by_path["instance"] == {"path": "instance.json"}  # the caller's mapping is left as it is
    read_only = schedule_dict(MappingProxyType(by_path), tmp_path / "schedule.json")  # any Mapping passes the check
    assert isinstance(read_only, dict) and read_only["instance"] == resolved["instance"]


def test_schedule_object() -> None:
    i = inst(Job("J0", [{0: 10, 1: 10}], due=8.0), events=[Event(4, E.BREAKDOWN, machine=0, duration=6)])
    sched = Schedule(
        instance=i, segment_job=np.array([0, 0]), segment_op=np.array([0, 0]), segment_machine=np.array([0, 1]),
        segment_start=np.array([0.0, 4.0]), segment_end=np.array([4.0, 10.0]), segment_work=np.array([0.4, 0.6]),
        segment_status=np.array([SEGMENT_STATUSES.index("preempted"), SEGMENT_STATUSES.index("completed")]),
        downtime_machine=np.array([0]), downtime_start=np.array([4.0]), downtime_end=np.array([10.0]),
        downtime_kind=np.array([DOWNTIME_KINDS.index("breakdown")]), job_due=np.array([8.0]),
        job_weight=np.array([1.0]), job_completion=np.array([10.0]), job_cancelled_at=np.array([NAN]))
    report = validate_schedule(sched)
    assert report.ok, str(report)
    assert report.metrics["total_tardiness"] == pytest.approx(2.0)


def test_report_api() -> None:
    validate_schedule(maintenance()).raise_if_invalid()
    data = maintenance()
    data["segments"][1].update(start=4.0, end=7.0)
    report = validate_schedule(data)
    assert isinstance(report, ValidationReport) and not report.ok
    assert all(isinstance(v, Violation) for v in report.violations)
    assert "downtime" in str(report)
    with pytest.raises(ScheduleInvalidError, match="downtime") as info:
        report.raise_if_invalid()
    assert isinstance(info.value, ValueError) and info.value.report is report


def test_tolerance() -> None:
    data = breakdown_resume()
    data["segments"][1]["end"] = 10.0 + 1e-9
    assert validate_schedule(data).ok
    data["segments"][1]["end"] = 10.5
    assert not validate_schedule(data, tol=1e-6).ok
    assert validate_schedule(data, tol=0.1).ok


def test_independent_of_the_simulator() -> None:
    import dynasched_gym.validate as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "dynasched_gym.schedule" in imported
    assert not any(name.startswith("dynasched_gym.core") for name in imported)


def test_unexplained_maintenance() -> None:
    data = maintenance()
    data["downtime"][0]["end"] = 9.5  # longer than the 4 units of maintenance queued
    report = validate_schedule(data)
    assert report.kinds() == {"downtime": 2, "metrics": 1}  # job 1 runs from 9 in it, utilization changes
    assert sum("downtime 0 (maintenance 5-9.5) ends at 9.5, expected 9 (MAINTENANCE at 2 for 4"
               in v.message for v in report.violations) == 1


# ------------------------------------------------------------- downtime against the machine's events
ONE = (Machine("M0"),)


def messages(report: ValidationReport) -> list[str]:
    return [v.message for v in report.violations]


def test_breakdown_shortened() -> None:
    """Regression: a breakdown's downtime must last until its end (only its start used to be checked)."""
    i = inst(Job("J0", [{0: 5.0}]), Job("J1", [{0: 5.0}], release=4.0), machines=ONE,
             events=[Event(5.0, E.BREAKDOWN, machine=0, duration=10.0)])
    data = rollout(i, "FIFO").to_dict()
    assert validate_schedule(data).ok
    assert data["downtime"] == [{"machine": 0, "start": 5.0, "end": 15.0, "kind": "breakdown"}]
    data["downtime"][0]["end"] = 5.5
    data["segments"][1].update(start=5.5, end=10.5)
    data["jobs"][1]["completion"] = 10.5
    data["metrics"].update(makespan=10.5, mean_flow_time=5.75, utilization=1.0)
    report = validate_schedule(data)
    assert report.kinds() == {"downtime": 1}
    assert messages(report) == ["machine 0: downtime 0 (breakdown 5-5.5) ends at 5.5, expected 15 "
                                "(BREAKDOWN at 5 for 10)"]


@pytest.mark.parametrize(("case", "index", "end", "expected"), [
    (breakdown_extended, 0, 6.0, "expected 9 (BREAKDOWN at 2 for 4; extended by BREAKDOWN at 4 for 5)"),
    (breakdown_restart, 0, 10.0, "expected 7 (BREAKDOWN at 4 for 6; cut by REPAIR at 7)"),
    (breakdown_during_maintenance, 1, 3.0,
     "expected 5 (BREAKDOWN at 2 for 1; absorbing the maintenance planned until 5)"),
    (maintenance_after_repair, 1, 5.0,
     "expected 6 (MAINTENANCE at 1 for 3; queued until the machine is free at 3)"),
])
def test_downtime_end(case: Callable[[], dict[str, Any]], index: int, end: float, expected: str) -> None:
    """Each downtime ends where the machine's events put it: extended, cut by a REPAIR, absorbing a maintenance."""
    data = case()
    data["downtime"][index]["end"] = end
    data["metrics"] = validate_schedule(data).metrics
    report = validate_schedule(data)
    assert set(report.kinds()) == {"downtime"}
    assert any(f"downtime {index} (" in m and f"ends at {end:g}, {expected}" in m for m in messages(report)), \
        messages(report)


@pytest.mark.parametrize("record", [None, (11.0, 21.0)], ids=["skipped", "after-job-1"])
def test_maintenance_skipped_or_late(record: tuple[float, float] | None) -> None:
    """Regression: a MAINTENANCE queued behind the running op starts when it ends, and no op starts before it."""
    i = inst(Job("J0", [{0: 5.0}]), Job("J1", [{0: 5.0}], release=6.0), machines=ONE,
             events=[Event(2.0, E.MAINTENANCE, machine=0, duration=10.0)])
    data = rollout(i, "FIFO").to_dict()
    assert validate_schedule(data).ok and data["metrics"]["makespan"] == 20.0
    assert data["downtime"] == [{"machine": 0, "start": 5.0, "end": 15.0, "kind": "maintenance"}]
    data["segments"][1].update(start=6.0, end=11.0)
    data["jobs"][1]["completion"] = 11.0
    if record is None:
        data["downtime"] = []
    else:
        data["downtime"][0].update(start=record[0], end=record[1])
    data["metrics"] = validate_schedule(data).metrics
    report = validate_schedule(data)
    assert set(report.kinds()) == {"downtime"}
    assert ("machine 0: expected maintenance downtime 5-15 (MAINTENANCE at 2 for 10; queued until the machine is "
            "free at 5), found no maintenance downtime starting at 5") in messages(report)
    if record is not None:
        assert any(m.startswith("machine 0: downtime 0 (maintenance 11-21) is explained by no event")
                   for m in messages(report))


def test_unexplained_breakdown() -> None:
    data = breakdown_resume()
    data["downtime"].append({"machine": 1, "start": 12.0, "end": 13.0, "kind": "breakdown"})
    report = validate_schedule(data)
    assert report.kinds() == {"downtime": 1}
    assert messages(report)[0].startswith("machine 1: downtime 1 (breakdown 12-13) is explained by no event: "
                                          "expected no breakdown downtime starting at 12 (the events imply: none)")


# ------------------------------------------------------------------------------ mid-episode schedules
def test_mid_episode_schedule() -> None:
    """Regression: events after the clock have not applied to a schedule taken mid-episode."""
    i = inst(Job("J0", [{0: 5.0}, {0: 5.0}], due=20.0), machines=ONE, events=[Event(7.0, E.CANCELLATION, job=0)])
    sim = Simulator(i)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 5.0 and not sim.done
    schedule = sim.schedule()
    assert validate_schedule(schedule, require_finished=False).ok
    assert validate_schedule(schedule, require_finished=False, now=5.0).ok
    assert validate_schedule(schedule, now=5.0).kinds() == {"unfinished": 1}
    report = validate_schedule(schedule, require_finished=False, now=4.0)
    assert report.kinds() == {"now": 1} and "records reach time 5, after now=4" in messages(report)[0]
    assert validate_schedule(schedule, require_finished=False, now=7.0).kinds() == {"cancellation": 1, "metrics": 1}
    with pytest.raises(ValueError, match="now"):
        validate_schedule(schedule, now=float("nan"))


def test_mid_episode_downtime() -> None:
    """Mid-episode, a breakdown in progress ends at its planned end: a later REPAIR has not applied yet."""
    i = inst(Job("J0", [{0: 5.0}]), Job("J1", [{1: 3.0}, {1: 3.0}]),
             events=[Event(1.0, E.BREAKDOWN, machine=0, duration=10.0), Event(8.0, E.REPAIR, machine=0)])
    sim = Simulator(i)
    sim.reset()
    sim.step(0, 0)
    sim.step(1, 1)
    data = sim.schedule().to_dict()
    assert sim.now == 3.0 and data["downtime"] == [{"machine": 0, "start": 1.0, "end": 11.0, "kind": "breakdown"}]
    for now in (None, 3.0):
        assert validate_schedule(data, require_finished=False, now=now).ok
    data["downtime"][0]["end"] = 8.0  # as if the REPAIR had applied
    data["metrics"] = validate_schedule(data, require_finished=False).metrics
    assert messages(validate_schedule(data, require_finished=False, now=3.0)) == [
        "machine 0: downtime 0 (breakdown 1-8) ends at 8, expected 11 (BREAKDOWN at 1 for 10)"]
    for now in (None, 8.0):  # right if the clock is 8 or later (without now, the clock is only known to be >= 3)
        assert validate_schedule(data, require_finished=False, now=now).ok


def test_mid_episode_unseen_operation() -> None:
    """An operation still running is not in a mid-episode schedule, yet it holds a MAINTENANCE back."""
    jobs = (Job("J0", [{0: 10.0}]), Job("J1", [{1: 3.0}, {1: 3.0}]))
    maintenance = Event(2.0, E.MAINTENANCE, machine=0, duration=4.0)
    sim = Simulator(inst(*jobs, events=[maintenance]))
    sim.reset()
    sim.step(0, 0)  # J0 runs 0-10 on M0: the maintenance at 2 waits for it
    sim.step(1, 1)
    schedule = sim.schedule()
    assert sim.now == 3.0 and len(schedule.downtime_start) == 0 and list(schedule.segment_machine) == [1]
    for now in (None, 3.0):
        assert validate_schedule(schedule, require_finished=False, now=now).ok
    # a BREAKDOWN of M0 before the clock would have preempted that operation (and recorded it)
    i = inst(*jobs, events=[maintenance, Event(2.5, E.BREAKDOWN, machine=0, duration=1.0)])
    data = {**schedule.to_dict(), "instance": i.to_dict()}
    assert messages(validate_schedule(data, require_finished=False, now=3.0)) == [
        "machine 0: expected maintenance downtime 2-2.5 (MAINTENANCE at 2 for 4; cut by BREAKDOWN at 2.5), "
        "found no maintenance downtime starting at 2",
        "machine 0: expected breakdown downtime 2.5-6 (BREAKDOWN at 2.5 for 1; absorbing the maintenance planned "
        "until 6), found no breakdown downtime starting at 2.5"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1),
       steps=st.integers(0, 25))
def test_random_mid_episode_schedules_are_valid(instance: Instance, seed: int, steps: int) -> None:
    """Random decisions for a random number of steps: the schedule so far validates, with the clock or without."""
    sim = Simulator(instance)
    sim.reset()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if sim.done:
            break
        jobs, machines, _ = sim.candidates()
        k = int(rng.integers(len(jobs)))
        sim.step(jobs[k], machines[k])
    schedule = sim.schedule()
    for now in (None, sim.now):
        report = validate_schedule(schedule, require_finished=False, now=now)
        assert report.ok, f"now={now} (clock {sim.now})\n{instance.to_json()}\n{report}"
        assert report.metrics == pytest.approx(schedule.metrics, rel=1e-9, abs=1e-9)


# ------------------------------------------------------------- EPS: one instant, one tolerance
def test_stop_where_the_operation_completes() -> None:
    """At an operation's planned end it completes before a cancellation or a breakdown of that instant applies:
    a segment aborted or preempted there is wrong, though its end matches the event."""
    cancelled = inst(Job("J0", [{0: 5}]), events=[Event(5, E.CANCELLATION, job=0)])
    data = make(cancelled, [(0, 0, 0, 0, 5, 1.0, "aborted")], [], {0: {"cancelled_at": 5}})
    assert kinds(data) == {"status"} and "completion applies first" in messages(validate_schedule(data))[0]
    assert validate_schedule(make(cancelled, [(0, 0, 0, 0, 5)], [], {0: {"completion": 5}})).ok
    broken = inst(Job("J0", [{0: 5, 1: 5}]), events=[Event(5, E.BREAKDOWN, machine=0, duration=2)])
    data = make(broken, [(0, 0, 0, 0, 5, 1.0, "preempted"), (0, 0, 1, 5, 5 + 1e-12, 0.0, "completed")],
                [(0, 5, 7, "breakdown")], {0: {"completion": 5 + 1e-12}})
    assert "status" in kinds(data)


def test_tardy_beyond_eps() -> None:
    """A job that ends on its due date up to float rounding is on time; 2e-9 late is tardy."""
    def tardy(completion: float, due: float) -> int:
        one = np.array([1.0])
        empty = np.zeros(0)
        return compute_metrics(release=np.zeros(1), due=np.array([due]), weight=one, completion=np.array([completion]),
                               cancelled=np.zeros(1, dtype=bool), busy_start=empty, busy_end=empty, down_start=empty,
                               down_end=empty, num_machines=1)["num_tardy_jobs"]
    assert 0.1 + 0.2 > 0.3 and tardy(0.1 + 0.2, 0.3) == 0
    assert tardy(0.3 + 2e-9, 0.3) == 1


def simulated(instance: Instance) -> Schedule:
    """The schedule of ``instance`` played with the first candidate at every decision."""
    sim = Simulator(instance)
    sim.reset()
    while not sim.done:
        jobs, machines, _ = sim.candidates()
        sim.step(jobs[0], machines[0])
    return sim.schedule()


def downtime(schedule: Schedule) -> list[tuple[int, float, float, str]]:
    return [(int(m), float(s), float(e), DOWNTIME_KINDS[k]) for m, s, e, k in zip(
        schedule.downtime_machine, schedule.downtime_start, schedule.downtime_end, schedule.downtime_kind,
        strict=True)]


@pytest.mark.parametrize("offset", [0.0, 5e-10, -5e-10])
def test_events_within_eps_are_one_instant(offset: float) -> None:
    """A BREAKDOWN 5e-10 before or after a MAINTENANCE of an idle machine applies after it, as if simultaneous:
    the maintenance opens and the breakdown cuts it as it starts (an empty record) and absorbs it."""
    events = [Event(2.0, E.MAINTENANCE, machine=0, duration=4.0),
              Event(2.0 + offset, E.BREAKDOWN, machine=0, duration=1.0)]
    i = inst(Job("J0", [{0: 3}], release=4.0), events=sorted(events, key=lambda e: e.time))
    schedule = simulated(i)
    start = min(2.0, 2.0 + offset)
    assert downtime(schedule) == [(0, start, start, "maintenance"), (0, start, start + 4.0, "breakdown")]
    assert validate_schedule(schedule).ok


def test_maintenance_cut_as_it_starts_is_empty() -> None:
    """A queued maintenance starts at the planned end of the operation before it, 5e-10 after the BREAKDOWN that
    cuts it: the record is empty, never negative, and the schedule is valid."""
    i = inst(Job("J0", [{0: 5 + 5e-10}]), Job("J1", [{0: 1}], release=9.0),
             events=[Event(1.0, E.MAINTENANCE, machine=0, duration=2.0), Event(5.0, E.BREAKDOWN, machine=0,
                                                                             duration=1.0)])
    schedule = simulated(i)
    records = downtime(schedule)
    assert [r[3] for r in records] == ["maintenance", "breakdown"]
    assert all(end >= start for _, start, end, _ in records) and records[0][1] == records[0][2] == 5 + 5e-10
    assert validate_schedule(schedule).ok


def test_known_clock_uses_eps_far_from_zero() -> None:
    """At t = 1e6 the relative tolerance spans 1 time unit; an event 0.5 after a known clock has not applied."""
    late = Event(1e6 + 5.5, E.MAINTENANCE, machine=0, duration=2.0)
    finished = simulated(inst(Job("J0", [{0: 5}], release=1e6), events=[late]))
    assert len(finished.downtime_start) == 0 and validate_schedule(finished).ok
    i = inst(Job("J0", [{0: 5}, {0: 5}], release=1e6), machines=ONE,
             events=[Event(1e6 + 5.5, E.CANCELLATION, job=0)])
    sim = Simulator(i)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 1e6 + 5 and validate_schedule(sim.schedule(), require_finished=False, now=sim.now).ok


def test_overlap_with_an_earlier_longer_segment() -> None:
    # J1 overlaps J0 and ends first; J2 overlaps J0 only: the comparison is with the latest end so far, not the
    # previous segment
    i = inst(Job("J0", [{0: 10}]), Job("J1", [{0: 1}]), Job("J2", [{0: 1}]))
    data = make(i, [(0, 0, 0, 0, 10), (1, 0, 0, 2, 3), (2, 0, 0, 5, 6)], [],
                {0: {"completion": 10}, 1: {"completion": 3}, 2: {"completion": 6}})
    report = validate_schedule(data)
    assert report.kinds() == {"overlap": 2}
    assert [v.segment for v in report.violations] == [1, 2]


def test_release_missed_by_a_fraction_of_a_unit() -> None:
    # the release is a time like any other: the tolerance is tol x max(1, |t|), not a whole time unit
    data = make(one_op(release=2.0), [(0, 0, 0, 1.5, 6.5)], [], {0: {"completion": 6.5}})
    assert kinds(data) == {"release"}
    assert validate_schedule(make(one_op(release=2.0), [(0, 0, 0, 2.0, 7.0)], [], {0: {"completion": 7.0}})).ok


def test_two_segments_of_one_slot_at_once() -> None:
    # the second segment starts on M1 while the first still runs on M0 (no slot precedence applies within a slot)
    i = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(4, E.BREAKDOWN, machine=0, duration=1)])
    data = make(i, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 2, 8, 0.6, "completed")],
                [(0, 4, 5, "breakdown")], {0: {"completion": 8}})
    assert kinds(data) == {"precedence"}


def test_a_job_segment_overlapping_a_long_earlier_one_is_reported_past_its_neighbour() -> None:
    # segment 2 clears segment 1 but not segment 0, which runs longer: comparing neighbours missed it
    three = (Machine("M0"), Machine("M1"), Machine("M2"))
    i = inst(Job("J0", [{0: 10, 1: 10, 2: 10}]), machines=three)
    data = make(i, [(0, 0, 0, 0, 10, 0.5, "preempted"), (0, 0, 1, 2, 3, 0.1, "preempted"),
                    (0, 0, 2, 5, 9, 0.4, "completed")], [], {0: {"completion": 9}})
    report = validate_schedule(data)
    assert [v.segment for v in report.violations if v.kind == "precedence"] == [1, 2]


def test_segment_shorter_than_its_work() -> None:
    data = make(one_op(), [(0, 0, 0, 0, 4)], [], {0: {"completion": 4}})
    assert kinds(data) == {"duration"}


def test_validator_settings_are_checked():
    """tol=-1 or NaN reported every comparison as a violation, tol="x" failed inside; require_finished="no" was
    read as true."""
    schedule = rollout(Instance.build("t", [Machine("M0")], [Job("J0", [{0: 1.0}])]))
    for bad, error in ((-1, ValueError), (float("nan"), ValueError), ("x", TypeError), (True, TypeError),
                       (float("inf"), ValueError)):
        with pytest.raises(error, match=f"tol must be a finite number >= 0, got {bad!r}"):
            validate_schedule(schedule, tol=bad)
    with pytest.raises(TypeError, match="require_finished must be true or false, got 'no'"):
        validate_schedule(schedule, require_finished="no")
    for bad, error in (("x", TypeError), (float("nan"), ValueError), (True, TypeError)):
        with pytest.raises(error, match=f"now must be a finite number or None, got {bad!r}"):
            validate_schedule(schedule, now=bad)
    assert validate_schedule(schedule, tol=0).ok
    assert validate_schedule(schedule, require_finished=np.True_).ok  # a NumPy bool, as before the check


def test_compute_metrics_needs_a_bool_cancelled_array_and_machines():
    """An int cancelled array counted a cancelled job as completed (~1 == -2); num_machines=0 gave utilization 0."""
    one, empty = np.array([1.0]), np.zeros(0)
    args = dict(release=np.zeros(2), due=np.full(2, np.nan), weight=np.ones(2), completion=np.array([1.0, 2.0]),
                busy_start=empty, busy_end=empty, down_start=empty, down_end=empty)
    with pytest.raises(TypeError, match=r"cancelled must be a bool array .*got dtype int64"):
        compute_metrics(**args, cancelled=np.array([0, 1]), num_machines=1)
    with pytest.raises(ValueError, match="num_machines must be an integer >= 1, got 0"):
        compute_metrics(**args, cancelled=np.array([False, True]), num_machines=0)
    assert compute_metrics(**args, cancelled=np.array([False, True]), num_machines=1)["makespan"] == one[0]


def test_a_processing_time_change_of_a_started_slot_is_ignored_by_its_rework_copy() -> None:
    """A PTIME_CHANGE of a slot already started is ignored (docs/semantics.md): a later REWORK copies the slot with the
    times it had, 3, not the 6 of the ignored factor 2."""
    i = inst(Job("J0", [{0: 3}, {1: 4}]),
             events=[Event(1, E.PTIME_CHANGE, job=0, op=0, factor=2.0), Event(4, E.REWORK, job=0, op=0)])
    good = make(i, [(0, 0, 0, 0, 3), (0, 1, 1, 3, 7), (0, 2, 0, 7, 10)], [], {0: {"completion": 10}})
    assert validate_schedule(good).ok
    bad = make(i, [(0, 0, 0, 0, 3), (0, 1, 1, 3, 7), (0, 2, 0, 7, 13)], [], {0: {"completion": 13}})
    assert kinds(bad) == {"duration"}


def test_a_slot_added_by_a_route_change_cannot_run_before_the_change() -> None:
    """A segment is checked against its slot as the list stood when the slot first started: slot 1, which the
    ROUTE_CHANGE at t=1 appends, does not exist at t=0 (the final list, which has it, would accept the segment's
    machine and length)."""
    i = inst(Job("J0", [{0: 5}]), events=[Event(1, E.ROUTE_CHANGE, job=0, op=1, ops=({1: 2},))])
    assert validate_schedule(make(i, [(0, 0, 0, 0, 5), (0, 1, 1, 5, 7)], [], {0: {"completion": 7}})).ok
    report = validate_schedule(make(i, [(0, 0, 0, 0, 5), (0, 1, 1, 0, 2)], [], {0: {"completion": 5}}))
    assert report.kinds().get("operation") == 1
    assert "job 0 has no operation slot 1 when the slot first starts" in messages(report)[0]


def test_an_unknown_clock_takes_events_within_the_relative_tolerance_of_the_records() -> None:
    """Without ``now``, a mid-episode schedule's latest recorded time stands for the clock up to the relative tolerance,
    as any reported time: records rounded to 9999.9995 (another solver's) still show the CANCELLATION at 10000."""
    i = inst(Job("J0", [{0: 20000}]), Job("J1", [{1: 5}], release=30000.0),
             events=[Event(10000, E.CANCELLATION, job=0)])
    data = make(i, [(0, 0, 0, 0, 9999.9995, 0.49999997, "aborted")], [], {0: {"cancelled_at": 9999.9995}})
    assert validate_schedule(data, require_finished=False).ok
    assert validate_schedule(data, require_finished=False, now=10000.0).ok


def test_a_segment_after_its_slots_completed_segment_is_a_status_violation_under_restart() -> None:
    """Under ``restart`` only the completed segment's work counts, so a run of the slot after it completed breaks no
    work rule: the status rule (the completed segment is the slot's last) is what reports it."""
    i = inst(Job("J0", [{0: 5}]), policy="restart", events=[Event(7, E.BREAKDOWN, machine=0, duration=1)])
    # the episode ends at 5, before the breakdown: no downtime
    data = make(i, [(0, 0, 0, 0, 5), (0, 0, 0, 5, 7, 0.4, "preempted")], [], {0: {"completion": 5}})
    report = validate_schedule(data)
    assert report.kinds() == {"status": 1}
    assert "must be the slot's only completed segment and its last" in messages(report)[0]


def _edited(case: Callable[[], dict[str, Any]], job: int, **fields: Any) -> dict[str, Any]:
    """A valid case with job record ``job``'s ``fields`` replaced (the reported metrics stay the valid ones)."""
    data = case()
    data["jobs"][job].update(fields)
    return data


@pytest.mark.parametrize(("data", "kind", "message"), [
    (_edited(priority_due, 1, release=1.0), "release", "job 1: record says release 1, the instance 0"),
    (_edited(priority_due, 0, cancelled_at=5.0), "cancellation", "job 0 completes at 5 but reports cancelled_at 5"),
    (_edited(cancellation, 0, completion=4.0), "completion", "job 0 is cancelled at 4 but reports completion 4"),
    (_edited(priority_due, 1, due=None), "due", "job 1: reported due null, but 20 is in force"),
    (_edited(cancellation, 1, due=6.0), "due", "job 1: reported due 6, but null is in force"),
], ids=["release", "completed-and-cancelled", "cancelled-and-completed", "due-dropped", "due-invented"])
def test_job_records_must_match_the_instance_and_what_happened(data: dict[str, Any], kind: str, message: str) -> None:
    """A job record's release is the instance's; a job is completed or cancelled, never both; a due date is null
    exactly when none is in force."""
    report = validate_schedule(data)
    assert report.kinds() == {kind: 1} and messages(report) == [message]


def test_an_operation_stopped_within_half_eps_of_its_end_completes_instead() -> None:
    """The simulator completes an operation with at most EPS/2 of its time left (its work reported rounded): an aborted
    segment whose work leaves 2.5e-10 of a 5-unit operation must have been a completion (docs/semantics.md)."""
    i = inst(Job("J0", [{0: 5}]), events=[Event(5, E.CANCELLATION, job=0)])
    data = make(i, [(0, 0, 0, 0, 5, 1 - 5e-11, "aborted")], [], {0: {"cancelled_at": 5}})
    assert kinds(data) == {"status"}
    far = make(i, [(0, 0, 0, 0, 5, 1 - 1e-7, "aborted")], [], {0: {"cancelled_at": 5}})  # 5e-7 left: aborted
    assert validate_schedule(far).ok


def test_a_repair_ends_a_breakdown_only_not_a_maintenance() -> None:
    """An explicit REPAIR ends the machine's breakdown; during a maintenance it is ignored (docs/semantics.md)."""
    i = inst(Job("J0", [{1: 5}]),
             events=[Event(0, E.MAINTENANCE, machine=0, duration=4), Event(2, E.REPAIR, machine=0)])
    assert validate_schedule(make(i, [(0, 0, 1, 0, 5)], [(0, 0, 4, "maintenance")], {0: {"completion": 5}})).ok
    cut = make(i, [(0, 0, 1, 0, 5)], [(0, 0, 2, "maintenance")], {0: {"completion": 5}})
    assert kinds(cut) == {"downtime"}


@pytest.mark.parametrize("offset", [0.0, 5e-10])
def test_job_events_of_one_instant_apply_in_type_order(offset: float) -> None:
    """A DUE_DATE_CHANGE listed after a CANCELLATION of the same instant (same time, or 5e-10 later: one instant,
    docs/semantics.md) still applies before it (type order): the due date in force at the cancellation is 3."""
    i = inst(Job("J0", [{0: 5}], due=10.0), events=[Event(2, E.CANCELLATION, job=0),
                                                    Event(2 + offset, E.DUE_DATE_CHANGE, job=0, due=3.0)])
    segments = [(0, 0, 0, 0, 2, 0.4, "aborted")]
    assert validate_schedule(make(i, segments, [], {0: {"cancelled_at": 2, "due": 3.0}})).ok
    assert kinds(make(i, segments, [], {0: {"cancelled_at": 2}})) == {"due"}


def test_reported_metrics_are_compared_with_the_relative_tolerance() -> None:
    """A metric is compared with ``tol`` relative to max(1, |value|): mean flow time 10 reported as 10 + 2e-5 is off
    (2e-6 > 1e-6), 10 + 5e-6 is rounding; a metric below 1 gets the absolute tolerance."""
    data = breakdown_resume()
    data["metrics"]["mean_flow_time"] = 10.0 + 2e-5
    assert kinds(data) == {"metrics"}
    data["metrics"]["mean_flow_time"] = 10.0 + 5e-6
    assert validate_schedule(data).ok
    data["metrics"]["utilization"] += 2e-6  # 10/14 + 2e-6
    assert kinds(data) == {"metrics"}
    assert validate_schedule(data, tol=1e-5).ok


def test_a_slot_that_never_completes_cannot_perform_more_than_its_work() -> None:
    """Under ``resume`` a slot's segments perform at most 1 in all, completed or not: two preempted runs of 0.6 each."""
    i = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(6, E.BREAKDOWN, machine=0, duration=20),
                                                   Event(12, E.BREAKDOWN, machine=1, duration=20)])
    data = make(i, [(0, 0, 0, 0, 6, 0.6, "preempted"), (0, 0, 1, 6, 12, 0.6, "preempted")],
                [(0, 6, 26, "breakdown"), (1, 12, 32, "breakdown")])
    report = validate_schedule(data, require_finished=False, now=12.0)
    assert report.kinds().get("work") == 1
    assert any("perform work 1.2 > 1 (resume policy)" in m for m in messages(report))


@pytest.mark.parametrize("offset", [0.0, 5e-10])
def test_a_segment_running_at_its_jobs_cancellation_is_aborted_not_preempted_by_a_breakdown_of_that_instant(
        offset: float) -> None:
    """A CANCELLATION applies before a BREAKDOWN of its instant (same time, or 5e-10 apart): the running slot is
    aborted, so a segment recorded as preempted there is wrong; one preempted at an earlier instant stays valid."""
    i = inst(Job("J0", [{0: 10}]), events=[Event(4, E.CANCELLATION, job=0),
                                           Event(4 + offset, E.BREAKDOWN, machine=0, duration=3)])
    down = [(0, 4, 7, "breakdown")]  # the breakdown takes effect at the instant's time, 4
    assert validate_schedule(make(i, [(0, 0, 0, 0, 4, 0.4, "aborted")], down, {0: {"cancelled_at": 4}})).ok
    report = validate_schedule(make(i, [(0, 0, 0, 0, 4, 0.4, "preempted")], down, {0: {"cancelled_at": 4}}))
    assert report.kinds() == {"cancellation": 1}
    assert messages(report) == ["segment 0 (job 0 op 0 on machine 0, 0-4, preempted) runs when job 0 is cancelled "
                                "at 4: the CANCELLATION applies before the BREAKDOWN of that instant and aborts it"]
    earlier = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(4, E.BREAKDOWN, machine=0, duration=3),
                                                        Event(6, E.CANCELLATION, job=0)])
    assert validate_schedule(make(earlier, [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 4, 6, 0.2, "aborted")],
                                  [(0, 4, 7, "breakdown")], {0: {"cancelled_at": 6}})).ok


def test_a_mid_episode_job_record_holds_the_due_date_and_weight_in_force_at_the_clock() -> None:
    """A job still running at a known clock reports the due date and weight in force then (docs/semantics.md, "at the
    end"): the values the changes at 2 replaced, or a due date dropped, are wrong. Without ``now`` the clock is only
    known to be at or after the records, where a later change may have applied: nothing is compared."""
    i = inst(Job("J0", [{0: 5.0}, {0: 5.0}], due=20.0), Job("J1", [{0: 5.0}], due=3.0), machines=ONE,
             events=[Event(2.0, E.DUE_DATE_CHANGE, job=0, due=9.0), Event(2.0, E.PRIORITY_CHANGE, job=0, weight=4.0)])
    sim = Simulator(i)
    sim.reset()
    sim.step(0, 0)
    data = sim.schedule().to_dict()
    assert sim.now == 5.0 and validate_schedule(data, require_finished=False, now=5.0).ok
    data["jobs"][0].update(due=20.0, weight=1.0)
    data["jobs"][1]["due"] = None
    assert messages(validate_schedule(data, require_finished=False, now=5.0)) == [
        "job 0: reported due 20, but 9 is in force", "job 0: reported weight 1, but 4 is in force",
        "job 1: reported due null, but 3 is in force"]
    assert validate_schedule(data, require_finished=False).ok


def _route_machines(instance: Instance, job: int) -> set[int]:
    """Every machine some operation of ``job`` may ever run on (its static ops and its route changes')."""
    ops = [*instance.job_ops(job), *(op for e in instance.events if e.job == job and e.ops for op in e.ops)]
    return {m for op in ops for m in op}


def _mutations(data: dict[str, Any], instance: Instance) -> dict[str, Callable[[st.DataObject], tuple[str, Any]]]:
    """Edits of a valid schedule ``data`` that each break one rule, by name; each edits ``data`` and returns the
    violation kind it must raise and the segment index or job id that violation names (None: not checked)."""
    segs, jobs, downs = data["segments"], data["jobs"], data["downtime"]
    out: dict[str, Callable[[st.DataObject], tuple[str, Any]]] = {}

    def pick(draw: st.DataObject, items: list[int]) -> int:
        return draw.draw(st.sampled_from(items))

    def ineligible(draw: st.DataObject) -> tuple[str, Any]:
        i = pick(draw, foreign)
        segs[i]["machine"] = min(every - _route_machines(instance, segs[i]["job"]))
        return "eligibility", i

    def longer(draw: st.DataObject) -> tuple[str, Any]:
        i = pick(draw, list(range(len(segs))))
        segs[i]["end"] += 0.5
        return "duration", i

    def twice(draw: st.DataObject) -> tuple[str, Any]:
        segs.append(dict(segs[pick(draw, completed)]))
        return "status", None

    def overlap(draw: st.DataObject) -> tuple[str, Any]:
        a, b = pick(draw, pairs)
        length = segs[b]["end"] - segs[b]["start"]
        segs[b]["start"] = (segs[a]["start"] + segs[a]["end"]) / 2
        segs[b]["end"] = segs[b]["start"] + length
        return "overlap", b

    def early(draw: st.DataObject) -> tuple[str, Any]:
        i = pick(draw, list(follow))
        shift = segs[i]["start"] - follow[i] + 0.5
        segs[i]["start"] -= shift
        segs[i]["end"] -= shift
        return "precedence", i

    def record(name: str, kind: str, change: Callable[[Any], Any], which: list[int]) -> None:
        def edit(draw: st.DataObject) -> tuple[str, Any]:
            j = pick(draw, which)
            jobs[j][name] = change(jobs[j][name])
            return kind, j
        if which:
            out[f"record-{name}"] = edit

    def drop_downtime(draw: st.DataObject) -> tuple[str, Any]:
        del downs[pick(draw, long_downs)]
        return "downtime", None

    def metric(draw: st.DataObject) -> tuple[str, Any]:
        data["metrics"][draw.draw(st.sampled_from(sorted(data["metrics"])))] += 0.5
        return "metrics", None

    every = set(range(instance.num_machines))
    foreign = [i for i, s in enumerate(segs) if _route_machines(instance, s["job"]) != every]
    completed = [i for i, s in enumerate(segs) if s["status"] == "completed"]
    by_machine: dict[int, list[int]] = {}
    for i in sorted(range(len(segs)), key=lambda i: segs[i]["start"]):
        by_machine.setdefault(segs[i]["machine"], []).append(i)
    # lengths well beyond the tolerance: a preempted segment can be as short as EPS
    pairs = [(a, b) for ids in by_machine.values() for a, b in itertools.pairwise(ids)
             if segs[a]["end"] - segs[a]["start"] > 0.01]
    long_downs = [k for k, d in enumerate(downs) if d["end"] - d["start"] > 0.01]
    done = {(s["job"], s["op"]): s["end"] for s in segs if s["status"] == "completed"}
    first: dict[tuple[int, int], int] = {}
    for i in sorted(range(len(segs)), key=lambda i: segs[i]["start"]):
        first.setdefault((segs[i]["job"], segs[i]["op"]), i)
    follow = {i: done[j, k - 1] for (j, k), i in first.items() if k > 0 and (j, k - 1) in done}  # -> previous end
    ended = [j for j, r in enumerate(jobs) if r["completion"] is not None or r["cancelled_at"] is not None]
    for name, edit, ok in (("ineligible", ineligible, foreign), ("longer", longer, segs), ("twice", twice, completed),
                           ("overlap", overlap, pairs), ("early", early, follow), ("metric", metric, True),
                           ("drop-downtime", drop_downtime, long_downs)):
        if ok:
            out[name] = edit
    completions = [j for j, r in enumerate(jobs) if r["completion"] is not None]
    record("completion", "completion", lambda c: c + 0.5, completions)
    record("cancelled_at", "cancellation", lambda c: 0.5 if c is None else c + 0.5, list(range(len(jobs))))
    record("release", "release", lambda r: r + 0.5, list(range(len(jobs))))
    record("due", "due", lambda d: 0.5 if d is None else d + 0.5, ended)
    record("weight", "weight", lambda w: w + 0.5, ended)
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=instances(max_jobs=5, max_machines=3, max_events=10, jitter=True), seed=st.integers(0, 2**32 - 1),
       draw=st.data())
def test_every_single_rule_broken_in_a_simulated_schedule_is_reported(instance: Instance, seed: int,
                                                                      draw: st.DataObject) -> None:
    """A schedule played with random decisions validates; one edit that breaks one rule (a segment on a machine no
    operation of its job may use, longer than its work, a completed segment twice, overlapping its machine's previous
    one, starting before its slot's previous one completes, a metric, completion, cancellation, release, due date or
    weight off, a downtime record dropped) is reported with that kind, naming the segment or job."""
    sim = Simulator(instance)
    sim.reset()
    rng = np.random.default_rng(seed)
    while not sim.done:
        jobs, machines, _ = sim.candidates()
        k = int(rng.integers(len(jobs)))
        sim.step(jobs[k], machines[k])
    data = sim.schedule().to_dict()
    assert validate_schedule(data).ok
    mutations = _mutations(data, instance)
    kind, named = mutations[draw.draw(st.sampled_from(sorted(mutations)))](draw)
    report = validate_schedule(data)
    assert kind in report.kinds(), f"{kind} expected\n{report}"
    if named is not None:
        assert any(named in (v.segment, v.job) for v in report.violations if v.kind == kind), str(report)


@pytest.mark.parametrize(("base", "duration"), [(0.0, 2e-6), (1e6, 0.5)])
@pytest.mark.parametrize("policy", ["resume", "restart"])
def test_a_breakdown_shorter_than_the_tolerance_still_preempts_the_operation_it_hits(base: float, duration: float,
                                                                                     policy: str) -> None:
    """A BREAKDOWN 4 units into a 10-unit operation preempts it, however short its downtime. Downtime within the record
    tolerance (2e-6 at t = 4, 0.5 at t = 1e6) was dropped from the timeline the records are compared with, so a segment
    completing straight through the breakdown, with no downtime record, validated (under restart hiding a rerun of the
    4 units done)."""
    i = inst(Job("J0", [{0: 10.0}], release=base), machines=ONE, policy=policy,
             events=[Event(base + 4, E.BREAKDOWN, machine=0, duration=duration)])
    assert validate_schedule(rollout(i, "FIFO")).ok
    report = validate_schedule(make(i, [(0, 0, 0, base, base + 10)], [], {0: {"completion": base + 10}}))
    assert report.kinds() == {"preemption": 1}
    assert report.violations[0].segment == 0
    assert messages(report) == [f"segment 0 (job 0 op 0 on machine 0, {base:.10g}-{base + 10:.10g}, completed) runs "
                                f"through machine 0's BREAKDOWN at {base + 4:.10g}, which preempts the operation "
                                f"running then"]


def test_a_breakdown_at_the_clock_has_applied_to_a_mid_episode_schedule() -> None:
    """Events at the clock have applied (only later ones have not), so a BREAKDOWN of M1 at now = 5 is in the downtime.
    Dropping its record validated: the replay may stop where M1 was idle and started an operation still running, as
    long as no BREAKDOWN falls before the clock, and one at the clock counted as after it. Such an operation would
    have been preempted at 5 and recorded."""
    i = inst(Job("J0", [{0: 5.0}]), Job("J1", [{0: 3.0}]), events=[Event(5.0, E.BREAKDOWN, machine=1, duration=2.0)])
    sim = Simulator(i)
    sim.reset()
    sim.step(0, 0)
    data = sim.schedule().to_dict()
    assert sim.now == 5.0 and data["downtime"] == [{"machine": 1, "start": 5.0, "end": 7.0, "kind": "breakdown"}]
    for now in (None, 5.0):
        assert validate_schedule(data, require_finished=False, now=now).ok
    data["downtime"] = []
    data["metrics"] = validate_schedule(data, require_finished=False).metrics
    for now in (None, 5.0):
        assert messages(validate_schedule(data, require_finished=False, now=now)) == [
            "machine 1: expected breakdown downtime 5-7 (BREAKDOWN at 5 for 2), found no breakdown downtime starting "
            "at 5"], now


# ------------------------------------------- one rule broken slightly, or in a form the tests above do not take
# Each test kills a hand-made mutant of the validator that every test above let through: a check dropped,
# widened to an absolute slack of 0.5 or 1, or a replay step changed.
def test_an_overlap_of_a_fraction_of_a_unit_is_reported() -> None:
    i = inst(Job("J0", [{0: 5}]), Job("J1", [{0: 3}]))
    data = make(i, [(0, 0, 0, 0, 5), (1, 0, 0, 4.8, 7.8)], [], {0: {"completion": 5}, 1: {"completion": 7.8}})
    assert messages(validate_schedule(data)) == ["segment 1 (job 1 op 0 on machine 0, 4.8-7.8, completed) overlaps "
                                                 "segment 0 (job 0 op 0 on machine 0, 0-5, completed) on machine 0"]


def test_small_deviations_of_a_duration_or_a_weight_are_reported() -> None:
    data = make(one_op(), [(0, 0, 0, 0, 5.2)], [], {0: {"completion": 5.2}})
    assert messages(validate_schedule(data)) == [
        "segment 0 (job 0 op 0 on machine 0, 0-5.2, completed) lasts 5.2 but work 1 x time 5 = 5"]
    data = priority_due()
    data["jobs"][0]["weight"] = 5.25
    assert messages(validate_schedule(data)) == ["job 0: reported weight 5.25, but 5 is in force"]


def test_a_downtime_record_of_the_wrong_kind_is_reported() -> None:
    data = breakdown_resume()
    data["downtime"][0]["kind"] = "maintenance"
    assert messages(validate_schedule(data)) == [
        "machine 0: expected breakdown downtime 4-10 (BREAKDOWN at 4 for 6), found no breakdown downtime starting at 4",
        "machine 0: downtime 0 (maintenance 4-10) is explained by no event: expected no maintenance downtime starting "
        "at 4 (the events imply: breakdown 4-10)"]


def test_work_during_an_earlier_downtime_of_the_machine_is_reported() -> None:
    """Not only the machine's last downtime is compared with a segment."""
    i = inst(Job("J0", [{0: 5}]), Job("J1", [{0: 1}], release=25.0), machines=ONE,
             events=[Event(0, E.MAINTENANCE, machine=0, duration=3), Event(20, E.MAINTENANCE, machine=0, duration=2)])
    data = make(i, [(0, 0, 0, 1, 6), (1, 0, 0, 25, 26)], [(0, 0, 3, "maintenance"), (0, 20, 22, "maintenance")],
                {0: {"completion": 6}, 1: {"completion": 26}})
    assert messages(validate_schedule(data)) == [
        "segment 0 (job 0 op 0 on machine 0, 1-6, completed) runs while machine 0 is down: downtime 0 (maintenance "
        "of machine 0, 0-3)"]


@pytest.mark.parametrize("records", [[(2, 8)], [(2, 5), (5, 8)]], ids=["one", "split"])
def test_a_renewed_breakdown_may_be_recorded_as_one_interval_or_two(records: list[tuple[float, float]]) -> None:
    """The BREAKDOWN at 5 renews the downtime ending at 5: the replay splits it, the records need not."""
    i = inst(Job("J0", [{0: 10.0}], release=10.0), machines=ONE,
             events=[Event(2, E.BREAKDOWN, machine=0, duration=3), Event(5, E.BREAKDOWN, machine=0, duration=3)])
    data = make(i, [(0, 0, 0, 10, 20)], [(0, *r, "breakdown") for r in records], {0: {"completion": 20}})
    assert validate_schedule(data).ok


def test_a_breakdown_absorbs_the_whole_maintenance_block() -> None:
    """The MAINTENANCE at 1 extends the block 0-4 to 0-8 (not queued behind it); the BREAKDOWN at 2 lasts to 8."""
    i = inst(Job("J0", [{0: 1.0}], release=10.0), machines=ONE,
             events=[Event(0, E.MAINTENANCE, machine=0, duration=4), Event(1, E.MAINTENANCE, machine=0, duration=4),
                     Event(2, E.BREAKDOWN, machine=0, duration=1)])
    data = make(i, [(0, 0, 0, 10, 11)], [(0, 0, 2, "maintenance"), (0, 2, 8, "breakdown")], {0: {"completion": 11}})
    assert validate_schedule(data).ok


def test_a_preempted_segment_must_end_at_the_breakdown_not_shortly_before() -> None:
    i = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(4, E.BREAKDOWN, machine=0, duration=6)])
    data = make(i, [(0, 0, 0, 0, 3.5, 0.35, "preempted"), (0, 0, 1, 3.5, 10, 0.65, "completed")],
                [(0, 4, 10, "breakdown")], {0: {"completion": 10}})
    assert messages(validate_schedule(data)) == [
        "segment 0 (job 0 op 0 on machine 0, 0-3.5, preempted) is preempted but machine 0 has no BREAKDOWN at 3.5"]


def test_a_segment_running_through_a_breakdown_shortly_before_its_end_is_reported() -> None:
    i = inst(Job("J0", [{0: 10.0}]), machines=ONE, events=[Event(9.5, E.BREAKDOWN, machine=0, duration=2e-6)])
    report = validate_schedule(make(i, [(0, 0, 0, 0, 10)], [], {0: {"completion": 10}}))
    assert report.kinds() == {"preemption": 1} and "BREAKDOWN at 9.5" in messages(report)[0]


def test_a_slot_whose_previous_slot_never_ran_is_a_precedence_violation() -> None:
    i = inst(Job("J0", [{0: 3}, {1: 4}]), events=[Event(10, E.CANCELLATION, job=0)])
    data = make(i, [(0, 1, 1, 0, 4)], [], {0: {"cancelled_at": 10}})
    assert messages(validate_schedule(data)) == [
        "segment 0 (job 0 op 1 on machine 1, 0-4, completed) starts but job 0 op 0 never completes"]


def test_a_slot_run_before_its_previous_slot_is_a_precedence_violation() -> None:
    """Op 1 runs 0-4, op 0 after it: the job never runs two segments at once, yet the order is wrong."""
    i = inst(Job("J0", [{0: 3}, {1: 4}]))
    data = make(i, [(0, 1, 1, 0, 4), (0, 0, 0, 4, 7)], [], {0: {"completion": 4}})
    assert messages(validate_schedule(data)) == [
        "segment 0 (job 0 op 1 on machine 1, 0-4, completed) starts before job 0 op 0 completes at 7"]


@pytest.mark.parametrize("policy", ["resume", "restart"])
def test_a_completed_slot_short_of_its_work_by_a_thousandth_is_reported(policy: str) -> None:
    i = inst(Job("J0", [{0: 10, 1: 10}]), policy=policy, events=[Event(4, E.BREAKDOWN, machine=0, duration=6)])
    first = 0.4 if policy == "resume" else 0.0  # restart: the last segment alone must perform the whole work
    segs = [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 4, 4 + 10 * (0.999 - first), 0.999 - first, "completed")]
    report = validate_schedule(make(i, segs, [(0, 4, 10, "breakdown")], {0: {"completion": segs[1][4]}}))
    assert report.kinds() == {"work": 1} and f"({policy} policy)" in messages(report)[0]


@pytest.mark.parametrize(("excess", "ok"), [(1.5, True), (2.5, False)])
def test_a_resumed_slots_work_may_miss_1_by_the_tolerance_per_segment(excess: float, ok: bool) -> None:
    """Each segment's work is rounded on its own, so under resume two segments may sum to 1 +- 2 tol
    (docs/semantics.md, "Time and tolerance")."""
    tol = 1e-3
    i = inst(Job("J0", [{0: 10, 1: 10}]), events=[Event(4, E.BREAKDOWN, machine=0, duration=6)])
    second = 0.6 + excess * tol
    segs = [(0, 0, 0, 0, 4, 0.4, "preempted"), (0, 0, 1, 4, 4 + 10 * second, second, "completed")]
    report = validate_schedule(make(i, segs, [(0, 4, 10, "breakdown")], {0: {"completion": segs[1][4]}}), tol=tol)
    assert report.ok if ok else report.kinds() == {"work": 1}


def test_a_rework_copy_runs_before_the_jobs_next_operation() -> None:
    """The copy of op 0 is inserted at the first untouched slot (1), not appended after op 1."""
    i = inst(Job("J0", [{0: 3}, {1: 4}]), events=[Event(3, E.REWORK, job=0, op=0)])
    data = make(i, [(0, 0, 0, 0, 3), (0, 1, 0, 3, 6), (0, 2, 1, 6, 10)], [], {0: {"completion": 10}})
    assert validate_schedule(data).ok


def test_a_processing_time_value_is_divided_by_the_machine_speed() -> None:
    i = inst(Job("J0", [{0: 4, 1: 2}]), machines=(Machine("M0"), Machine("M1", speed=2.0)),
             events=[Event(0, E.PTIME_CHANGE, job=0, op=0, value=6.0)])
    assert validate_schedule(make(i, [(0, 0, 1, 0, 3)], [], {0: {"completion": 3}})).ok
    assert kinds(make(i, [(0, 0, 1, 0, 6)], [], {0: {"completion": 6}})) == {"duration"}


def test_job_events_after_its_cancellation_are_ignored() -> None:
    """The record holds the weight, due date and cancellation time in force at the first CANCELLATION."""
    i = inst(Job("J0", [{0: 10}], due=3.0),
             events=[Event(4, E.CANCELLATION, job=0), Event(6, E.PRIORITY_CHANGE, job=0, weight=5.0),
                     Event(7, E.DUE_DATE_CHANGE, job=0, due=9.0), Event(8, E.CANCELLATION, job=0)])
    assert validate_schedule(make(i, [(0, 0, 0, 0, 4, 0.4, "aborted")], [], {0: {"cancelled_at": 4}})).ok


def test_a_segment_running_a_fraction_past_its_jobs_cancellation_is_reported() -> None:
    i = inst(Job("J0", [{0: 5}]), events=[Event(4.5, E.CANCELLATION, job=0)])
    data = make(i, [(0, 0, 0, 0, 5)], [], {0: {"cancelled_at": 4.5}})
    assert messages(validate_schedule(data)) == [
        "segment 0 (job 0 op 0 on machine 0, 0-5, completed) runs after job 0 is cancelled at 4.5"]


def test_a_cancelled_at_without_a_cancellation_is_reported() -> None:
    """Even when the reported metrics count the job as not cancelled."""
    data = make(one_op(), [], [], {0: {"cancelled_at": 3.0}})
    data["metrics"] = validate_schedule(data).metrics
    assert messages(validate_schedule(data, require_finished=False)) == [
        "job 0 reports cancelled_at 3 but no CANCELLATION applies to it"]


def test_a_segment_ending_before_it_starts_is_a_format_violation() -> None:
    data = breakdown_resume()
    data["segments"][1].update(start=10.0, end=4.0)
    report = validate_schedule(data)
    assert [(v.segment, v.message) for v in report.violations if v.kind == "format"] == [(1, "segment 1: end 4 < "
                                                                                              "start 10")]


def test_each_job_has_exactly_one_record() -> None:
    data = cancellation()
    del data["jobs"][1]
    assert messages(validate_schedule(data)) == ["no job record for job 1"]
    data = cancellation()
    data["jobs"].append(dict(data["jobs"][0]))
    assert messages(validate_schedule(data)) == ["jobs[2]: second record for job 0"]


def test_a_downtime_record_starting_after_now_is_reported() -> None:
    i = inst(Job("J0", [{0: 5.0}]), Job("J1", [{0: 1.0}], release=20.0), machines=ONE,
             events=[Event(7.0, E.BREAKDOWN, machine=0, duration=2.0)])
    data = make(i, [(0, 0, 0, 0, 5)], [(0, 7, 9, "breakdown")], {0: {"completion": 5}})
    for now in (None, 8.0):
        assert validate_schedule(data, require_finished=False, now=now).ok
    report = validate_schedule(data, require_finished=False, now=6.0)
    assert report.kinds() == {"now": 1, "downtime": 1}
    assert messages(report)[0].startswith("the records reach time 7, after now=6")


def test_an_operation_preempted_with_more_than_half_eps_left_is_valid() -> None:
    """1.5e-9 of its time left at the BREAKDOWN: the simulator preempts the operation (the bound is EPS/2, not 2EPS)."""
    i = inst(Job("J0", [{0: 4 + 1.5e-9, 1: 4 + 1.5e-9}]), events=[Event(4.0, E.BREAKDOWN, machine=0, duration=1.0)])
    data = rollout(i, "FIFO").to_dict()
    assert [s["status"] for s in data["segments"]] == ["preempted", "completed"]
    assert validate_schedule(data).ok


def test_a_preempted_segment_may_end_just_after_its_breakdown() -> None:
    """Within the tolerance of the BREAKDOWN on either side."""
    data = breakdown_resume()
    data["segments"][0]["end"] = 4 + 1e-7
    assert validate_schedule(data).ok


def test_a_slot_started_just_before_a_route_change_is_kept_far_from_zero() -> None:
    """At t = 1e4 the relative tolerance spans 0.01: a ROUTE_CHANGE 0.005 after op 0 starts keeps op 0 (touched)."""
    i = inst(Job("J0", [{0: 10}, {0: 1}], release=1e4),
             events=[Event(1e4 + 0.005, E.ROUTE_CHANGE, job=0, ops=({1: 3},))])
    data = make(i, [(0, 0, 0, 1e4, 1e4 + 10), (0, 1, 1, 1e4 + 10, 1e4 + 13)], [], {0: {"completion": 1e4 + 13}})
    assert validate_schedule(data).ok


def test_a_recorded_cancellation_time_shows_the_clock_passed_it() -> None:
    """Mid-episode, job 1 cancelled at 7 while it waited and job 0 still runs: no segment reaches 7, but the record
    does, so the CANCELLATION has applied when no clock is passed (and a clock before it is wrong)."""
    i = inst(Job("J0", [{0: 10}]), Job("J1", [{0: 5}]), machines=ONE, events=[Event(7, E.CANCELLATION, job=1)])
    data = make(i, [], [], {1: {"cancelled_at": 7.0}})
    assert validate_schedule(data, require_finished=False).ok
    assert validate_schedule(data, require_finished=False, now=6.0).kinds()["now"] == 1
