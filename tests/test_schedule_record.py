"""The Schedule record: its derived properties (finished, clock, job_arrival) and id checks, on hand-made records."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dynasched_gym.errors import InstanceFormatError, UnreadFieldWarning
from dynasched_gym.instance import Instance, Job, Machine
from dynasched_gym.metrics import EPS
from dynasched_gym.schedule import RECORD_TOL, Schedule, schedule_dict, schedule_from_dict
from dynasched_gym.validate import validate_schedule

NAN = float("nan")


def record(completion: list[float], cancelled_at: list[float], segments: list[tuple[float, float]] = (),
           downtime: list[tuple[float, float]] = (), release: tuple[float, ...] = (0.0, 5.0, 5.0)) -> Schedule:
    """A schedule of three one-op jobs on one machine (releases ``release``), with the given records."""
    inst = Instance.build("r", [Machine("M0")], [Job(f"J{j}", [{0: 1.0}], release=r) for j, r in enumerate(release)])
    ints, floats = (lambda n: np.zeros(n, dtype=np.int64)), (lambda xs: np.array(xs, dtype=np.float64).reshape(-1))
    seg, down = np.array(segments, dtype=np.float64).reshape(-1, 2), np.array(downtime, dtype=np.float64).reshape(-1, 2)
    return Schedule(
        instance=inst, segment_job=ints(len(seg)), segment_op=ints(len(seg)), segment_machine=ints(len(seg)),
        segment_start=seg[:, 0], segment_end=seg[:, 1], segment_work=np.ones(len(seg)), segment_status=ints(len(seg)),
        downtime_machine=ints(len(down)), downtime_start=down[:, 0], downtime_end=down[:, 1],
        downtime_kind=ints(len(down)), job_due=floats([NAN] * 3), job_weight=np.ones(3),
        job_completion=floats(completion), job_cancelled_at=floats(cancelled_at))


def test_finished_means_every_job_completed_or_cancelled():
    """A cancelled job is finished too; one job neither completed nor cancelled leaves the schedule unfinished."""
    assert record([1.0, NAN, 7.0], [NAN, 3.0, NAN]).finished
    assert not record([1.0, NAN, 7.0], [NAN, NAN, NAN]).finished


def test_the_clock_is_the_latest_segment_end_downtime_start_completion_or_cancellation():
    """Downtime in progress is recorded up to its planned end, so its end is not a time the clock reached, but its
    start is: a maintenance starting at 9 after the last completion at 7 puts the clock at 9, not at its end 40."""
    assert record([NAN] * 3, [NAN] * 3).clock == 0.0
    assert record([1.0, NAN, 7.0], [NAN, 3.0, NAN], [(0.0, 1.0), (6.0, 7.0)], [(2.0, 4.0), (9.0, 40.0)]).clock == 9.0
    assert record([1.0, NAN, NAN], [NAN, 8.0, NAN], [(0.0, 1.0)], [(2.0, 30.0)]).clock == 8.0


def test_a_job_cancelled_before_its_release_never_arrives_unless_within_eps():
    """job_arrival is the release, NaN for a job cancelled before it; a cancellation within EPS (1e-9) before the
    release falls into the release's instant, where the job arrives first (docs/semantics.md)."""
    schedule = record([1.0, NAN, NAN], [NAN, 5.0 - 5e-10, 4.0])
    assert np.array_equal(schedule.job_arrival, [0.0, 5.0, NAN], equal_nan=True)
    assert np.array_equal(record([1.0, NAN, NAN], [NAN, 6.0, 5.0]).job_arrival, [0.0, 5.0, 5.0])
    # EPS exactly before is within it, as the simulator releases a job at an instant t when release <= t + EPS
    assert (5.0 - EPS) + EPS == 5.0
    at_eps = record([1.0, NAN, NAN], [NAN, 5.0 - EPS, 5.0 - 2 * EPS]).job_arrival
    assert np.array_equal(at_eps, [0.0, 5.0, NAN], equal_nan=True)


def test_a_negative_id_in_a_schedule_record_is_refused_naming_the_field():
    """Ids are 0-based: a job, machine or op of -1 would index from the end of the arrays (the last job's record)."""
    data = record([1.0, 2.0, 7.0], [NAN] * 3, [(0.0, 1.0)], [(2.0, 4.0)]).to_dict()
    for table, key in (("segments", "job"), ("segments", "op"), ("segments", "machine"), ("downtime", "machine"),
                       ("jobs", "job")):
        bad = copy.deepcopy(data)
        bad[table][0][key] = -1
        with pytest.raises(InstanceFormatError, match=r"id out of range") as err:
            schedule_from_dict(bad, source="s.json")
        assert (err.value.field, err.value.value) == (f"{table}[0].{key}", -1)
        assert validate_schedule(bad).kinds().get("format")


def test_an_id_one_past_the_last_is_refused_naming_the_field():
    """Ids run to the count less one: job 3 of three jobs, machine 1 of one machine."""
    data = record([1.0, 2.0, 7.0], [NAN] * 3, [(0.0, 1.0)], [(2.0, 4.0)]).to_dict()
    for table, key, count in (("segments", "job", 3), ("segments", "machine", 1), ("downtime", "machine", 1),
                              ("jobs", "job", 3)):
        bad = copy.deepcopy(data)
        bad[table][0][key] = count
        with pytest.raises(InstanceFormatError, match=rf"id out of range \(0..{count - 1}\)") as err:
            schedule_from_dict(bad, source="s.json")
        assert (err.value.field, err.value.value) == (f"{table}[0].{key}", count)


def test_times_within_the_record_tolerance_load_as_written():
    """A segment may end up to RECORD_TOL before its start, and perform up to RECORD_TOL more than its operation's
    work (another solver's rounding): it loads with the values the file gives, for the validator to judge, not
    mended. The slack is inclusive: exactly RECORD_TOL is within it."""
    # below time 1 the slack is RECORD_TOL itself (relative to max(1, |t|)): 8e-7 before 0.5 is within it
    at_5 = 5.0 - RECORD_TOL * 5.0
    data = record([1.0, 2.0, 7.0], [NAN] * 3, [(0.0, 1.0), (2.0, 2.0 - 1e-7)],
                  [(3.0, 3.0 - 1e-7), (0.5, 0.5 - 8e-7), (0.5, 0.5 - RECORD_TOL), (5.0, at_5)]).to_dict()
    data["segments"][0]["work"] = 1.0 + 1e-7
    data["segments"][1]["work"] = 1.0 + RECORD_TOL
    loaded = schedule_from_dict(data, source="s.json")
    assert loaded.segment_end.tolist() == [1.0, 2.0 - 1e-7]
    assert loaded.downtime_end.tolist() == [3.0 - 1e-7, 0.5 - 8e-7, 0.5 - RECORD_TOL, at_5]
    assert loaded.segment_work.tolist() == [1.0 + 1e-7, 1.0 + RECORD_TOL]


def test_a_field_of_two_records_is_named_once_with_its_count():
    """A field the loader does not read, in two records: one warning naming how many hold it and the first."""
    data = record([1.0, 2.0, 7.0], [NAN] * 3, [(0.0, 1.0), (1.0, 2.0)]).to_dict()
    for segment in data["segments"]:
        segment["wrk"] = 1.0
    with pytest.warns(UnreadFieldWarning) as caught:
        schedule_dict(data, "s.json")
    assert [str(w.message) for w in caught] == [
        "s.json: field segments[].wrk (2 records, the first segments[0]) is not read; a schedule record holds job, op, "
        "machine, start, end, work, status"]


def test_a_schedule_without_an_instance_names_that_field():
    """The missing field is the schedule's own ``instance``, not a field inside the instance object."""
    data = record([1.0, 2.0, 7.0], [NAN] * 3).to_dict()
    del data["instance"]
    with pytest.raises(InstanceFormatError) as err:
        schedule_from_dict(data, source="s.json")
    assert (err.value.source, err.value.field) == ("s.json", "instance")
