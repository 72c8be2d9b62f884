"""compute_metrics (DESIGN section 6) on hand-made inputs, every key against a value worked out by hand."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dynasched_gym.metrics import EPS, METRIC_KEYS, compute_metrics

NAN = float("nan")


def test_every_metric_on_a_hand_made_schedule():
    """Six jobs: two tardy-or-not jobs with due dates, one without (no tardiness, but a flow time), one cancelled (with
    a completion the caller left in: still excluded, still counted as cancelled), one on time up to float rounding,
    one unfinished. mean_tardiness averages over the completed jobs WITH a due date (3 of the 4 completed); busy time
    and downtime after the makespan do not count in the utilization."""
    metrics = compute_metrics(
        release=np.array([0.0, 2.0, 1.0, 0.0, 0.0, 3.0]),
        due=np.array([5.0, NAN, 20.0, 1.0, 0.3, 4.0]),
        weight=np.array([2.0, 1.0, 3.0, 5.0, 1.0, 1.0]),
        completion=np.array([8.0, 10.0, 6.0, 12.0, 0.1 + 0.2, NAN]),
        cancelled=np.array([False, False, False, True, False, False]),
        # M0: 0-4, 4-8, down 8-15 (2 before the makespan 10); M1: down 0-2, 2-10, then 10-12 (after the makespan)
        busy_start=np.array([0.0, 4.0, 2.0, 10.0]), busy_end=np.array([4.0, 8.0, 10.0, 12.0]),
        down_start=np.array([8.0, 0.0]), down_end=np.array([15.0, 2.0]),
        num_machines=2,
    )
    assert list(metrics) == list(METRIC_KEYS)
    assert metrics == {
        "makespan": 10.0,  # not the cancelled job's 12
        "total_tardiness": 3.0,
        "mean_tardiness": 1.0,  # 3 / 3 jobs with a due date, not 3 / 4 completed jobs
        "total_weighted_tardiness": 6.0,
        "num_tardy_jobs": 1,
        "mean_flow_time": pytest.approx((8 + 8 + 5 + 0.3) / 4, rel=1e-15),
        "num_cancelled_jobs": 1,
        "utilization": 1.0,  # (4 + 4 + 8) / (2 x 10 - 2 - 2)
    }


def test_tardiness_within_eps_enters_the_sums_but_is_not_tardy():
    """A job ending on its due date up to float rounding is not tardy, and its tardiness of 5.6e-17 still enters the
    sums (docs/semantics.md): the sums are max(0, C - d) as computed."""
    empty = np.zeros(0)
    metrics = compute_metrics(release=np.zeros(1), due=np.array([0.3]), weight=np.array([4.0]),
                              completion=np.array([0.1 + 0.2]), cancelled=np.zeros(1, dtype=bool), busy_start=empty,
                              busy_end=empty, down_start=empty, down_end=empty, num_machines=1)
    late = (0.1 + 0.2) - 0.3
    assert late > 0
    assert (metrics["num_tardy_jobs"], metrics["total_tardiness"], metrics["mean_tardiness"]) == (0, late, late)
    assert metrics["total_weighted_tardiness"] == 4 * late


def test_a_job_late_by_exactly_eps_is_not_tardy():
    """Tardy is C - d > EPS (docs/semantics.md): late by EPS exactly is on time; the next float above it is tardy."""
    empty = np.zeros(0)
    late = np.array([EPS, np.nextafter(EPS, 1.0)])
    metrics = compute_metrics(release=np.zeros(2), due=np.zeros(2), weight=np.ones(2), completion=late,
                              cancelled=np.zeros(2, dtype=bool), busy_start=empty, busy_end=empty, down_start=empty,
                              down_end=empty, num_machines=1)
    assert metrics["num_tardy_jobs"] == 1
    assert metrics["total_tardiness"] == late.sum()


def test_nothing_completed_gives_zeros():
    """No completed job: makespan, means and utilization are 0 (no division by zero), cancelled jobs still count."""
    empty = np.zeros(0)
    metrics = compute_metrics(release=np.zeros(2), due=np.array([1.0, NAN]), weight=np.ones(2),
                              completion=np.full(2, NAN), cancelled=np.array([True, False]),
                              busy_start=np.array([0.0]), busy_end=np.array([1.0]), down_start=empty, down_end=empty,
                              num_machines=3)
    assert metrics == dict.fromkeys(METRIC_KEYS, 0) | {"num_cancelled_jobs": 1}


@pytest.mark.parametrize(("field", "value", "shapes"), [
    ("busy_end", np.array([4.0]), "busy_start (2,), busy_end (1,)"),
    ("down_end", np.array([[2.0, 3.0]]), "down_start (1,), down_end (1, 2)"),
    ("due", np.array([1.0, 2.0]), "release (1,), due (2,), weight (1,), completion (1,), cancelled (1,)"),
])
def test_arrays_that_do_not_pair_up_are_refused(field, value, shapes):
    """Arrays that do not pair up were broadcast: a busy_end of one value against two starts counted busy time 4 + 2 on
    a 4-long segment list (utilization 0.75 instead of an error); a due per job too many passed unnoticed."""
    args = dict(release=np.zeros(1), due=np.array([NAN]), weight=np.ones(1), completion=np.array([4.0]),
                cancelled=np.zeros(1, dtype=bool), busy_start=np.array([0.0, 2.0]), busy_end=np.array([2.0, 4.0]),
                down_start=np.array([1.0]), down_end=np.array([1.0]), num_machines=2)
    assert compute_metrics(**args)["utilization"] == 0.5
    with pytest.raises(ValueError, match=re.escape(f"must be 1-D arrays of one length, got shapes {shapes}")):
        compute_metrics(**{**args, field: value})


def test_a_pair_of_tables_of_one_shape_is_refused_too():
    """Busy time is a list of intervals: a (machines, slots) table would pass its padding for segments, so 2-D arrays
    are refused even where start and end agree."""
    table = np.zeros((2, 1))
    with pytest.raises(ValueError, match=re.escape("got shapes busy_start (2, 1), busy_end (2, 1)")):
        compute_metrics(release=np.zeros(1), due=np.array([NAN]), weight=np.ones(1), completion=np.array([4.0]),
                        cancelled=np.zeros(1, dtype=bool), busy_start=table, busy_end=table + 1.0,
                        down_start=np.zeros(0), down_end=np.zeros(0), num_machines=2)


def test_a_segment_that_starts_after_the_makespan_is_no_busy_time():
    """A cancelled job's segment run after the last completion (or a mid-episode schedule's running one) lies outside
    [0, makespan]: it adds nothing to the busy time, rather than its negative overlap."""
    metrics = compute_metrics(release=np.zeros(2), due=np.full(2, NAN), weight=np.ones(2),
                              completion=np.array([4.0, NAN]), cancelled=np.array([False, True]),
                              busy_start=np.array([0.0, 6.0]), busy_end=np.array([4.0, 9.0]), down_start=np.zeros(0),
                              down_end=np.zeros(0), num_machines=1)
    assert (metrics["makespan"], metrics["utilization"]) == (4.0, 1.0)
