"""Empirical difficulty (generation/difficulty.py, docs/ssi.md) on a hand-made instance: the normalised weighted
tardiness sum_j w_j T_j / sum_j w_j P_j over the jobs not cancelled, and its mean over the rule portfolio."""

from __future__ import annotations

import pytest

from dynasched_gym import Event, EventType, Instance, Job, Machine, rollout
from dynasched_gym.generation.difficulty import PORTFOLIO, empirical_difficulty, normalised_weighted_tardiness


@pytest.fixture(scope="module")
def instance() -> Instance:
    """J0 takes 2 on M0 or 4 on M1 (P = 3, weight 2); J1 takes 1 on M0 (P = 1), its weight raised from 1 to 3 at 0.5;
    J2 (5 on M1, weight 4) is cancelled at 0. Both remaining jobs are due at 1, so w P sums to 2 x 3 + 3 x 1 = 9."""
    return Instance.build("difficulty", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 2.0, 1: 4.0}], due=1.0, weight=2.0), Job("J1", [{0: 1.0}], due=1.0),
                           Job("J2", [{1: 5.0}], due=0.0, weight=4.0)],
                          [Event(0.0, EventType.CANCELLATION, job=2),
                           Event(0.5, EventType.PRIORITY_CHANGE, job=1, weight=3.0)])


@pytest.mark.parametrize(("rule", "expected"), [("SPT", 6.0 / 9.0), ("FIFO", 8.0 / 9.0)])
def test_normalised_weighted_tardiness_divides_by_the_weighted_mean_work_of_the_kept_jobs(instance, rule, expected):
    """SPT runs J1 on M0 and J0 on M1 to 4 (2 x 3 late); FIFO runs J0 on M0 to 2, then J1 to 3 (2 x 1 + 3 x 2). The
    divisor takes each operation's mean time over its machines, the weight in force and leaves out the cancelled J2."""
    schedule = rollout(instance, rule=rule)
    assert schedule.metrics["total_weighted_tardiness"] != schedule.metrics["total_tardiness"]  # weights count
    assert normalised_weighted_tardiness(schedule) == pytest.approx(expected, rel=1e-12)


def test_empirical_difficulty_is_the_mean_over_the_portfolio(instance):
    """SPT's 6/9 and 8/9 for each of FIFO, MWKR and EDD."""
    assert PORTFOLIO == ("SPT", "FIFO", "MWKR", "EDD")
    assert empirical_difficulty(instance) == pytest.approx((6.0 + 3 * 8.0) / 9.0 / 4, rel=1e-12)
    assert empirical_difficulty(instance, ("SPT",)) == pytest.approx(6.0 / 9.0, rel=1e-12)


def test_no_work_left_is_no_difficulty():
    """Every job cancelled: nothing completes and the divisor is 0."""
    inst = Instance.build("cancelled", [Machine("M0")], [Job("J0", [{0: 1.0}], due=0.0)],
                          [Event(0.0, EventType.CANCELLATION, job=0)])
    assert normalised_weighted_tardiness(rollout(inst)) == 0.0
