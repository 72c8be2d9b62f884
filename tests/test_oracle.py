"""The clairvoyant CP-SAT oracle: valid schedules, proven optima, never worse than rules or lookahead."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances

from dynasched_gym import Event, EventType, Instance, Job, Machine, Simulator, load_instance, rollout, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.core.rules import COMPOSITE_RULES
from dynasched_gym.generation import tier_pool
from dynasched_gym.metrics import OBJECTIVE_METRICS
from dynasched_gym.schedule import DOWNTIME_KINDS, SEGMENT_STATUSES, Schedule

pytest.importorskip("ortools")
from dynasched_gym import oracle
from dynasched_gym.oracle import OracleResult, solve_clairvoyant


def check(result: OracleResult, objective: str) -> None:
    """The result's schedule is valid, its objective is the schedule's metric and bounds it from above."""
    report = validate_schedule(result.schedule)
    assert report.ok, report
    assert result.objective == result.schedule.metrics[OBJECTIVE_METRICS[objective]]
    assert 0.0 <= result.bound <= result.objective
    assert result.status in ("optimal", "feasible")


def not_worse_than_rules(result: OracleResult, objective: str) -> None:
    key = OBJECTIVE_METRICS[objective]
    for rule in COMPOSITE_RULES:
        assert result.objective <= rollout(result.schedule.instance, rule).metrics[key], rule


def one_machine(jobs: Sequence[Job], events: Sequence[Event] = (), policy: str = "resume") -> Instance:
    return Instance.build("hand", [Machine("M0")], jobs, events, policy)


def test_proves_mk01_makespan_40(shared: Path):
    inst = load_instance(shared / "benchmarks/fjsp/brandimarte/mk01.fjs")
    # time_limit also covers the rule rollouts: on a cold numba cache their compiling left the solver too little
    # time to prove 40 (it stopped at 46, feasible), so the kernels are compiled first
    rollout(inst, "FIFO:EET")
    result = solve_clairvoyant(inst, "makespan", time_limit=30.0)
    check(result, "makespan")
    assert (result.status, result.objective, result.bound) == ("optimal", 40.0, 40.0)


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    cache = tmp_path_factory.mktemp("pools")
    return {tier: tier_pool(tier, "small", cache_dir=cache) for tier in ("easy", "medium", "hard")}


@pytest.mark.parametrize("objective", list(OBJECTIVE_METRICS))
@pytest.mark.parametrize(("tier", "seed"), [("easy", 0), ("medium", 1), ("hard", 2)])
def test_tier_instances_beat_every_rule_and_the_lookahead(pools, tier, seed, objective):
    inst = pools[tier].instance(seed)
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective=objective, max_candidates=512)
    lookahead = run_episode(make("lookahead"), env)
    result = solve_clairvoyant(inst, objective, time_limit=2.0, hint=lookahead)
    check(result, objective)
    not_worse_than_rules(result, objective)
    assert result.objective <= lookahead.metrics[OBJECTIVE_METRICS[objective]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(inst=instances(), objective=st.sampled_from(list(OBJECTIVE_METRICS)))
def test_random_instances_with_every_event_kind(inst, objective):
    result = solve_clairvoyant(inst, objective, time_limit=2.0)
    check(result, objective)
    not_worse_than_rules(result, objective)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(inst=instances(jitter=True), objective=st.sampled_from(list(OBJECTIVE_METRICS)))
def test_random_instances_with_happenings_within_eps(inst, objective):
    """Events and releases up to 6e-10 apart: the model applies the events of one instant together."""
    result = solve_clairvoyant(inst, objective, time_limit=2.0)
    check(result, objective)
    not_worse_than_rules(result, objective)


@pytest.mark.parametrize("case", ["repair", "priority", "maintenance", "breakdown-ends-first"])
def test_events_within_eps_are_one_instant(case):
    """Each raised 'invalid schedule': a REPAIR 5e-10 after a BREAKDOWN applies first and is ignored; a
    PRIORITY_CHANGE 6e-10 after a CANCELLATION applies first; an operation released 3e-10 before a MAINTENANCE
    (float times: an inexact grid) cannot start before it. A breakdown 6e-10 after the release at 4 starts then and
    ends at 13, when another breakdown comes: the first ends first and the maintenance queued meanwhile starts and is
    absorbed; the model extended the first breakdown instead (a rule's 16 beat its 17, status 'feasible')."""
    if case == "repair":
        inst = one_machine([Job("J0", [{0: 2.0}], release=1.0)],
                           [Event(1.0, EventType.BREAKDOWN, machine=0, duration=10.0),
                            Event(1.0 + 5e-10, EventType.REPAIR, machine=0)])
        expected = 13.0
    elif case == "priority":
        inst = one_machine([Job("J0", [{0: 2.0}], due=5.0), Job("J1", [{0: 3.0}])],
                           [Event(0.0, EventType.CANCELLATION, job=0),
                            Event(6e-10, EventType.PRIORITY_CHANGE, job=0, weight=2.0)])
        expected = 3.0
    elif case == "maintenance":
        inst = Instance.build("m", [Machine("M0"), Machine("M1")],
                              [Job("J0", [{0: 5.0}], release=19.0), Job("J1", [{1: 1.0 / 3.0}])],
                              [Event(19.0 + 3e-10, EventType.MAINTENANCE, machine=0, duration=9.0)])
        expected = 33.0
    else:
        inst = one_machine([Job("J0", [{0: 2.0}], release=4.0)],
                           [Event(4.0 + 6e-10, EventType.BREAKDOWN, machine=0, duration=9.0),
                            Event(5.0, EventType.MAINTENANCE, machine=0, duration=1.0),
                            Event(13.0, EventType.BREAKDOWN, machine=0, duration=1.0)])
        expected = 16.0
        assert rollout(inst, "SPT").metrics["makespan"] == expected
    result = solve_clairvoyant(inst, "makespan", time_limit=5.0)
    check(result, "makespan")
    assert result.objective == pytest.approx(expected)
    assert result.status == "optimal"
    if case == "priority":
        assert result.schedule.job_weight[0] == 2.0


def test_completion_just_after_a_priority_change_takes_the_new_weight():
    """A completion 3e-6 after a PRIORITY_CHANGE at t = 25 (more than EPS, less than the validator's relative
    tolerance) comes after it: the oracle reported the old weight and raised 'invalid schedule'."""
    off = 3e-6
    inst = Instance.build("r", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{1: 1.0}]),
                           Job("J1", [{0: 1.0}, {0: 2.0}, {0: 2.0}, {0: 4.0}], release=7.0 + 2 * off, weight=0.5,
                               due=10.0)],
                          [Event(7.0 + off, EventType.MAINTENANCE, machine=0, duration=9.0),
                           Event(25.0, EventType.PRIORITY_CHANGE, job=1, weight=1.0)])
    result = solve_clairvoyant(inst, "weighted_tardiness", time_limit=5.0)
    check(result, "weighted_tardiness")
    assert result.schedule.job_completion[1] == pytest.approx(25.0 + off, abs=1e-12)
    assert result.schedule.job_weight[1] == 1.0
    assert result.objective == pytest.approx(15.0 + off, abs=1e-9)


@pytest.mark.parametrize(("release", "factor", "makespan"), [(0.0, 2.0, 10.0), (5.0, 2.0, 25.0), (6.0, 2.0, 26.0),
                                                         (0.0, 0.2, 7.0)])
def test_starts_before_a_processing_time_increase(release, factor, makespan):
    """Released at the change's time, the slot starts in its instant, after the change applies (25, not 15); a slot
    released before a decrease waits for it (5 + 2, not 10)."""
    ptime = Event(5.0, EventType.PTIME_CHANGE, job=0, op=0, factor=factor)
    result = solve_clairvoyant(one_machine([Job("J0", [{0: 10.0}], release=release)], [ptime]), "makespan")
    check(result, "makespan")
    assert (result.objective, result.status) == (makespan, "optimal")


@pytest.mark.parametrize(("policy", "makespan", "statuses"), [("resume", 11.0, ["preempted", "completed"]),
                                                              ("restart", 16.0, ["completed"])])
def test_runs_across_a_breakdown_under_resume_only(policy, makespan, statuses):
    inst = one_machine([Job("J0", [{0: 10.0}])], [Event(5.0, EventType.BREAKDOWN, machine=0, duration=1.0)], policy)
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert result.objective == makespan
    assert [("completed", "preempted", "aborted")[s] for s in result.schedule.segment_status] == statuses
    assert result.schedule.downtime_start.tolist() == [5.0]


def test_a_shorter_breakdown_during_a_breakdown_does_not_end_it_early():
    """The machine is down from 0 to 10: a BREAKDOWN at 2 for 1 only extends a breakdown past its end, never cuts it."""
    events = [Event(0.0, EventType.BREAKDOWN, machine=0, duration=10.0),
              Event(2.0, EventType.BREAKDOWN, machine=0, duration=1.0)]
    result = solve_clairvoyant(one_machine([Job("J0", [{0: 1.0}])], events), "makespan")
    check(result, "makespan")
    assert (result.objective, result.status) == (11.0, "optimal")


def test_a_slot_after_a_flexible_one_can_run_across_a_breakdown():
    """Op 0 takes 4 on M1 (or 9 on M2), so op 1 can start on M0 at 4 and run across the breakdown [5, 8] (to 9). The
    breakdown ends before op 1 could start were op 0 on the slow M2: a model that skipped it then let op 1 run 4..6."""
    inst = Instance.build("flex", [Machine("M0"), Machine("M1"), Machine("M2")],
                          [Job("J0", [{1: 4.0, 2: 9.0}, {0: 2.0}])],
                          [Event(5.0, EventType.BREAKDOWN, machine=0, duration=3.0)])
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.objective, result.status) == (9.0, "optimal")


def test_no_resuming_at_a_repair_while_a_maintenance_arrives_then():
    """The maintenance arriving at the repair at 6 goes first (6..7) and the operation resumes after it (to 12; outside
    the model, so a rule's schedule, status 'feasible'): the model must not let it resume at 6 (to 11)."""
    events = [Event(5.0, EventType.BREAKDOWN, machine=0, duration=1.0),
              Event(6.0, EventType.MAINTENANCE, machine=0, duration=1.0)]
    result = solve_clairvoyant(one_machine([Job("J0", [{0: 10.0}])], events), "makespan")
    check(result, "makespan")
    assert (result.objective, result.status) == (12.0, "feasible")


def test_downtime_opened_at_the_last_instant_is_recorded():
    # the job ends at 4, the maintenance event at 4 still applies (docs/semantics.md), as in the simulator
    inst = one_machine([Job("J0", [{0: 4.0}])], [Event(4.0, EventType.MAINTENANCE, machine=0, duration=1.0)])
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.schedule.downtime_start.tolist(), result.schedule.downtime_end.tolist()) == ([4.0], [5.0])
    assert rollout(inst, "SPT").downtime_start.tolist() == [4.0]


def test_downtime_up_to_a_cancellation_after_the_last_completion_is_recorded():
    """The episode ends when J1 is cancelled at 10, after J0 completes at 2: the breakdown at 5 is downtime of it."""
    jobs = [Job("J0", [{0: 2.0}]), Job("J1", [{0: 50.0}], release=8.0)]
    events = [Event(5.0, EventType.BREAKDOWN, machine=0, duration=2.0), Event(10.0, EventType.CANCELLATION, job=1)]
    result = solve_clairvoyant(one_machine(jobs, events), "makespan")
    check(result, "makespan")
    assert (result.schedule.downtime_start.tolist(), result.schedule.downtime_end.tolist()) == ([5.0], [7.0])
    assert result.schedule.job_cancelled_at[1] == 10.0


def test_a_breakdown_absorbs_the_whole_block_of_queued_maintenance():
    # two maintenances queued behind J0 run back to back from 10 as one block, [10, 13]; the breakdown at 10.5
    # absorbs all of it (the simulator's downtime), and a maintenance arriving meanwhile waits for its end
    events = [Event(1.0, EventType.MAINTENANCE, machine=0, duration=1.0),
              Event(2.0, EventType.MAINTENANCE, machine=0, duration=2.0),
              Event(10.5, EventType.BREAKDOWN, machine=0, duration=0.1),
              Event(11.0, EventType.MAINTENANCE, machine=0, duration=0.5)]
    inst = one_machine([Job("J0", [{0: 10.0}]), Job("J1", [{0: 1.0}], release=10.0)], events)
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    simulated = rollout(inst, "SPT")
    for schedule in (result.schedule, simulated):
        downtime = list(zip(schedule.downtime_start.tolist(), schedule.downtime_end.tolist()))
        assert downtime == [(10.0, 10.5), (10.5, 13.0), (13.0, 13.5)]
    assert result.objective == simulated.metrics["makespan"] == 14.5


@pytest.mark.parametrize(("case", "makespan"), [("cut", 4.0), ("cut-then-extended", 4.0), ("arrives-after-cut", 5.0)])
def test_a_breakdown_absorbs_the_whole_block_of_maintenance_it_cuts(case, makespan):
    """Maintenances of 1 at 0 run back to back as one block, cut at 0 by a breakdown that absorbs all of it: the model
    made a maintenance of the block that would start inside a breakdown wait for its end (makespan 5, status
    'feasible'), in ``cut`` (a breakdown to 2) and ``cut-then-extended`` (three of them, a breakdown to 1, extended to
    3 at 1). In ``arrives-after-cut`` a maintenance arriving at 1 finds the machine in the extended breakdown, not in
    the block: it waits for its end at 3."""
    maintenance = Event(0.0, EventType.MAINTENANCE, machine=0, duration=1.0)
    events = {"cut": [maintenance, maintenance, Event(0.0, EventType.BREAKDOWN, machine=0, duration=2.0)],
              "cut-then-extended": [maintenance, maintenance, maintenance,
                                    Event(0.0, EventType.BREAKDOWN, machine=0, duration=1.0),
                                    Event(1.0, EventType.BREAKDOWN, machine=0, duration=2.0)],
              "arrives-after-cut": [maintenance, maintenance, Event(0.0, EventType.BREAKDOWN, machine=0, duration=1.0),
                                    Event(1.0, EventType.BREAKDOWN, machine=0, duration=2.0),
                                    Event(1.0, EventType.MAINTENANCE, machine=0, duration=1.0)]}[case]
    inst = one_machine([Job("J0", [{0: 2.0 if case == "cut" else 1.0}])], events)
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.objective, result.bound, result.status) == (makespan, makespan, "optimal")
    assert rollout(inst, "SPT").metrics["makespan"] == makespan


def test_maintenance_waits_for_the_running_operation():
    inst = one_machine([Job("J0", [{0: 4.0}])], [Event(2.0, EventType.MAINTENANCE, machine=0, duration=1.0)])
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert result.objective == 4.0
    assert (result.schedule.downtime_start.tolist(), result.schedule.downtime_end.tolist()) == ([4.0], [5.0])


def test_avoids_a_rework_by_completing_after_it():
    """Completing op 0 by 2.5 would add a copy of it; finishing it at 2.6 instead wins."""
    inst = one_machine([Job("J0", [{0: 2.0}, {0: 1.0}])], [Event(2.5, EventType.REWORK, job=0, op=0)])
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert result.objective == pytest.approx(3.6)
    assert len(result.schedule.segment_job) == 2
    assert rollout(inst, "SPT").metrics["makespan"] == 5.0  # the non-delay rule triggers the rework


@pytest.mark.parametrize("case", ["last-running", "next-untouched"])
@pytest.mark.parametrize("policy", ["resume", "restart"])
def test_a_rework_copy_goes_to_the_first_untouched_slot(case, policy):
    """REWORK of op 0 after it completed: in ``last-running`` op 1 runs across the event at 3, so the copy goes last
    (0..1, 1..6, 6..7; finishing op 0 after 3 costs more). In ``next-untouched`` op 1 ends at the event at 2 and op 2
    can start then only, untouched by it: the copy goes before op 2 and waits for M0's breakdown (5..6, then op 2
    6..7), though op 2 first on M1 (2..3) and the copy after it would end at 6."""
    if case == "last-running":
        machines, ops, events = [Machine("M0")], [{0: 1.0}, {0: 5.0}], [Event(3.0, EventType.REWORK, job=0, op=0)]
    else:
        machines, ops = [Machine("M0"), Machine("M1")], [{0: 1.0}, {1: 1.0}, {1: 1.0}]
        events = [Event(1.0, EventType.BREAKDOWN, machine=0, duration=4.0), Event(2.0, EventType.REWORK, job=0, op=0)]
    result = solve_clairvoyant(Instance.build("rework", machines, [Job("J0", ops)], events, policy), "makespan")
    check(result, "makespan")
    assert (result.objective, result.bound, result.status) == (7.0, 7.0, "optimal")
    assert result.schedule.segment_op.tolist() == ([0, 1, 2] if case == "last-running" else [0, 1, 2, 3])


def test_a_rework_copy_in_the_regimes_of_its_origin_and_its_own_keeps_its_time():
    """Op 0 (2 units, doubled from 1), reworked at 3, and a PTIME_CHANGE at 5 of op 1 (the copy, in a variant where
    it goes before op 1): the copy's time depends on both slots' regimes. A regime case whose literal could be off
    with both regimes on gave the copy no time in the model (no case to read the schedule from)."""
    events = [Event(1.0, EventType.PTIME_CHANGE, job=0, op=0, factor=2.0), Event(3.0, EventType.REWORK, job=0, op=0),
              Event(5.0, EventType.PTIME_CHANGE, job=0, op=1, factor=3.0)]
    inst = one_machine([Job("J0", [{0: 2.0}, {0: 2.0}])], events)
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.objective, result.bound, result.status) == (6.0, 6.0, "optimal")
    assert result.schedule.segment_end.tolist() == rollout(inst, "SPT").segment_end.tolist() == [2.0, 4.0, 6.0]


def test_waits_for_a_route_change_that_drops_work():
    """Starting op 0 before 3 keeps it in the route (5 + 20); waiting leaves only the new op (3 + 20)."""
    route = Event(3.0, EventType.ROUTE_CHANGE, job=0, op=0, ops=({0: 20.0},))
    inst = one_machine([Job("J0", [{0: 5.0}, {0: 5.0}])], [route])
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.objective, result.status) == (23.0, "optimal")
    assert result.schedule.segment_start.tolist() == [3.0]


def test_a_processing_time_change_applies_before_a_route_change_of_its_instant_listed_first():
    """At 0 a ROUTE_CHANGE (listed first) replaces op 1, and a PTIME_CHANGE scales op 1 tenfold: events of one instant
    apply in type order, so the change scales the replaced op and the new one keeps its 3 (2 + 3, not 2 + 30)."""
    events = [Event(0.0, EventType.ROUTE_CHANGE, job=0, op=1, ops=({0: 3.0},)),
              Event(0.0, EventType.PTIME_CHANGE, job=0, op=1, factor=10.0)]
    inst = one_machine([Job("J0", [{0: 2.0}, {0: 2.0}])], events)
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.objective, result.bound, result.status) == (5.0, 5.0, "optimal")
    assert rollout(inst, "SPT").metrics["makespan"] == 5.0


def test_a_job_ending_at_a_route_change_by_float_sums_completes_before_it():
    """Released at 0.1, 0.2 of work ends at 0.1 + 0.2 = 0.30000000000000004, within EPS of the ROUTE_CHANGE at 0.3:
    the job is complete then and the change is ignored. The model's variants dropped that outcome (the float sum is
    above 0.3), so only a rule found 0.3, with status 'feasible'."""
    route = Event(0.3, EventType.ROUTE_CHANGE, job=0, op=1, ops=({0: 5.0},))
    result = solve_clairvoyant(one_machine([Job("J0", [{0: 0.2}], release=0.1)], [route]), "makespan")
    check(result, "makespan")
    assert (result.objective, result.bound, result.status) == (0.1 + 0.2, 0.3, "optimal")


@pytest.mark.parametrize(("objective", "value", "cancelled"), [("flow_time", 8.0, 0), ("makespan", 10.0, 1)])
def test_completes_a_job_before_its_cancellation_only_when_it_helps(objective, value, cancelled):
    """Job 1 (1 unit, released at 4, cancelled at 5) done first lowers the mean flow time (1 and 15 against 10);
    for the makespan it is dropped. The bound is checked too: a model that counted a cancelled job as completed at 0,
    or subtracted its release from the flow time, proved a bound below the optimum unseen."""
    jobs = [Job("J0", [{0: 10.0}]), Job("J1", [{0: 1.0}], release=4.0)]
    result = solve_clairvoyant(one_machine(jobs, [Event(5.0, EventType.CANCELLATION, job=1)]), objective)
    check(result, objective)
    assert (result.objective, result.bound, result.status) == (value, value, "optimal")
    assert int(np.sum(~np.isnan(result.schedule.job_cancelled_at))) == cancelled


def test_a_cancelled_job_is_never_tardy_even_against_a_due_date_before_0():
    """J0, due at -1, is cancelled at 0: only J1 is tardy (by 1); a due-date term for J0 would have raised the model's
    objective by 1 and its status to 'feasible'."""
    jobs = [Job("J0", [{0: 1.0}], due=-1.0), Job("J1", [{0: 2.0}], due=1.0)]
    result = solve_clairvoyant(one_machine(jobs, [Event(0.0, EventType.CANCELLATION, job=0)]), "tardiness")
    check(result, "tardiness")
    assert (result.objective, result.bound, result.status) == (1.0, 1.0, "optimal")


def test_due_date_and_weight_in_force_at_completion():
    events = [Event(1.0, EventType.PRIORITY_CHANGE, job=0, weight=3.0), Event(8.0, EventType.DUE_DATE_CHANGE, job=0,
                                                                                 due=1.0)]
    result = solve_clairvoyant(one_machine([Job("J0", [{0: 4.0}], due=2.0)], events), "weighted_tardiness")
    check(result, "weighted_tardiness")
    assert (result.objective, result.schedule.job_weight[0], result.schedule.job_due[0]) == (6.0, 3.0, 2.0)


@pytest.mark.parametrize(("change_at", "tardiness", "due"), [(1.0, 2.0, 2.0), (4.0, 0.0, 100.0)])
def test_a_due_date_change_applies_to_a_completion_after_it_only(change_at, tardiness, due):
    """J0 (4 units, due at 100) is due at 2 from ``change_at`` on. Changed at 1, it completes 2 late, which the model
    proves: a model that kept the first due date proved 0, a bound below the optimum. Changed at 4, the completion at
    4 keeps the old due date (completions apply before the events of their instant)."""
    inst = one_machine([Job("J0", [{0: 4.0}], due=100.0)], [Event(change_at, EventType.DUE_DATE_CHANGE, job=0,
                                                                  due=2.0)])
    result = solve_clairvoyant(inst, "tardiness")
    check(result, "tardiness")
    assert (result.objective, result.bound, result.status) == (tardiness, tardiness, "optimal")
    assert (result.schedule.job_completion[0], result.schedule.job_due[0]) == (4.0, due)


def test_a_completion_at_a_priority_change_takes_the_old_weight():
    """Completing at 4, when the weight drops from 1 to 0.5, weighs 1 (4); completing after it is better (< 4): the
    model must not give the completion at 4 the new weight (its bound was 2, an objective it never reaches)."""
    inst = one_machine([Job("J0", [{0: 4.0}], due=0.0)], [Event(4.0, EventType.PRIORITY_CHANGE, job=0, weight=0.5)])
    result = solve_clairvoyant(inst, "weighted_tardiness")
    check(result, "weighted_tardiness")
    assert result.objective < 4.0 and result.schedule.job_weight[0] == 0.5
    assert (result.bound, result.status) == (result.objective, "optimal")


def test_rounded_weights_neither_prove_optimality_nor_raise_the_bound():
    """Weights 5.6e-6 and 1.4e-6 are no whole number of 1e-6, so the model weighs 6 and 1: it finds starting J0 at
    once best (10 * 5.6e-6 + 10 * 1.4e-6 = 7e-5), but letting J1 go first is better (12 * 5.6e-6 + 1.4e-6). The
    oracle called 7e-5 optimal and proved it a bound."""
    a, b = 5.6e-6, 1.4e-6
    inst = one_machine([Job("J0", [{0: 10.0}], due=0.0, weight=a),
                        Job("J1", [{0: 1.0}], release=1.0, due=1.0, weight=b)])
    result = solve_clairvoyant(inst, "weighted_tardiness")
    check(result, "weighted_tardiness")
    assert result.status == "feasible"
    assert result.bound <= 12 * a + b < result.objective


@pytest.mark.parametrize("objective", ["makespan", "weighted_tardiness", "flow_time"])
def test_an_optimum_in_decimal_times_is_optimal_despite_float_sums(objective):
    """Three jobs of 0.7 end at 0.7, 1.4 and 0.7 + 0.7 + 0.7 = 2.0999999999999996 in floats, one ulp below the
    model's optimum of 21 ticks of 0.1: the oracle proved it and said "feasible" (142 of 600 solves of small
    instances in tenths)."""
    inst = one_machine([Job(f"J{j}", [{0: 0.7}], due=0.5, weight=0.3) for j in range(3)])
    result = solve_clairvoyant(inst, objective, time_limit=5.0)
    check(result, objective)
    assert result.status == "optimal"
    assert result.objective == pytest.approx(result.bound, rel=1e-12)


def test_rejects_bad_arguments():
    inst = one_machine([Job("J0", [{0: 1.0}])])
    with pytest.raises(ValueError, match="objective"):
        solve_clairvoyant(inst, "lateness")
    with pytest.raises(TypeError, match=r"objective must be one of .*got list: \['makespan'\]"):  # was "unhashable"
        solve_clairvoyant(inst, ["makespan"])
    with pytest.raises(ValueError, match="hint"):
        solve_clairvoyant(inst, hint=rollout(one_machine([Job("J0", [{0: 2.0}])])))


def test_times_beyond_cp_sat_integers_are_named_and_far_due_dates_never_tardy():
    """Times or a tardiness of more than 2**62 ticks failed inside ortools with a TypeError naming nothing; a due
    date beyond the horizon (1e30, as for "none") did too, and needs no term: the job is never tardy."""
    far = Instance.build("far", [Machine("M0")], [Job("J0", [{0: 1.5}], due=1e30), Job("J1", [{0: 2.0}], due=3.0)])
    result = solve_clairvoyant(far, "weighted_tardiness", time_limit=2.0)
    check(result, "weighted_tardiness")
    assert (result.objective, result.status) == (0.0, "optimal")
    with pytest.raises(ValueError, match=r"job 0: its tardiness against due date -1e\+30 is more ticks than CP-SAT"):
        solve_clairvoyant(one_machine([Job("J0", [{0: 1.5}], due=-1e30)]), "tardiness")
    with pytest.raises(ValueError, match=r"instance 'hand': its horizon, 1e\+19 time units, times its 1 jobs is more"):
        solve_clairvoyant(one_machine([Job("J0", [{0: 1.0}], release=1e19)]), "makespan")
    with pytest.raises(ValueError, match=r"its horizon, 3e\+18 time units, times its 5 jobs is more ticks"):
        solve_clairvoyant(one_machine([Job(f"J{j}", [{0: 1.0}], release=3e18) for j in range(5)]), "flow_time")


def test_solver_settings_are_checked():
    """time_limit=-1 or NaN ran 0.05 s without a word, workers=0 let CP-SAT choose, seed=1.5 or a string hint
    failed inside ortools or with an AttributeError, and an instance name with one deep inside."""
    inst = Instance.build("s", [Machine("M0")], [Job("J0", [{0: 1.0}])])
    for kwargs, error, message in (
        ({"time_limit": -1}, ValueError, r"time_limit must be a finite number > 0, got -1"),
        ({"time_limit": float("nan")}, ValueError, r"time_limit must be a finite number > 0, got nan"),
        ({"workers": 0}, ValueError, "workers must be an integer >= 1, got 0"),
        ({"workers": 2.5}, TypeError, "workers must be an integer >= 1, got 2.5"),
        ({"seed": 1.5}, TypeError, "seed must be an integer >= 0, got 1.5"),
        ({"seed": 2**31}, ValueError, r"seed must be an integer in \[0, 2\*\*31\)"),
        ({"hint": "x"}, TypeError, "hint must be a Schedule of the instance or None, got str"),
    ):
        with pytest.raises(error, match=message):
            solve_clairvoyant(inst, "makespan", **kwargs)
    with pytest.raises(TypeError, match=r"instance must be an Instance .*got str: 'mk01'"):
        solve_clairvoyant("mk01")


def best_reachable(inst: Instance) -> dict[str, float]:
    """The best value of each objective metric over every sequence of simulator decisions whose schedule the model
    can represent (:func:`in_model`); ``inf`` when there is none.

    Exhaustive: every offered (job, machine) pair at every decision, the simulation branched by snapshot. Starts at
    one instant commute (a start changes nothing else then), so those at one clock are taken in increasing
    (job, machine) order only: every set of starts is reached once.
    """
    sim = Simulator(inst)
    sim.reset()
    best = dict.fromkeys(OBJECTIVE_METRICS.values(), math.inf)

    def search(last: tuple[float, int, int]) -> None:
        if sim.done:
            schedule = sim.schedule()
            if in_model(schedule):
                best.update({k: min(v, schedule.metrics[k]) for k, v in best.items()})
            return
        now, snapshot = sim.now, sim.snapshot()
        for j, m in zip(*(a.tolist() for a in sim.candidates()[:2])):
            if (now, j, m) > last:
                sim.restore(snapshot)
                sim.step(j, m)
                search((now, j, m))

    search((-math.inf, 0, 0))
    return best


def in_model(s: Schedule) -> bool:
    """Whether the model can represent ``s`` (docs/oracle.md, "Limits"): every preempted slot (``resume`` only) goes
    on on its machine right at the breakdown's end, and no REPAIR ends a breakdown that cut a maintenance."""
    breakdown, maintenance = DOWNTIME_KINDS.index("breakdown"), DOWNTIME_KINDS.index("maintenance")
    repairs = {(e.machine, e.time) for e in s.instance.events if e.type == EventType.REPAIR}
    for m, start, end, kind in zip(s.downtime_machine, s.downtime_start, s.downtime_end, s.downtime_kind):
        cut = (s.downtime_machine == m) & (s.downtime_kind == maintenance) & (s.downtime_end == start)
        if kind == breakdown and cut.any() and (m, end) in repairs:
            return False
    for i in np.flatnonzero(s.segment_status == SEGMENT_STATUSES.index("preempted")):
        if s.instance.breakdown_policy != "resume":
            return False
        rest = [x for x in range(len(s.segment_job)) if x != i and s.segment_job[x] == s.segment_job[i]
                and s.segment_op[x] == s.segment_op[i] and s.segment_start[x] >= s.segment_end[i]]
        down = {float(start): float(end) for m, start, end, kind in zip(s.downtime_machine, s.downtime_start,
                                                                          s.downtime_end, s.downtime_kind)
                if m == s.segment_machine[i] and kind == breakdown}
        repaired = float(s.segment_end[i])
        while down.get(repaired, repaired) > repaired:  # breakdowns back to back: one window to run across
            repaired = down[repaired]
        nxt = min(rest, key=lambda x: s.segment_start[x], default=None)
        if nxt is None or s.segment_machine[nxt] != s.segment_machine[i] or s.segment_start[nxt] != repaired:
            return False
    return True


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(inst=instances(max_jobs=3, max_machines=2, max_ops=3, max_events=8, max_time=12))
def test_never_worse_than_any_decision_sequence_it_can_represent(inst):
    """Differential check against exhaustive search over the simulator: the schedules it reaches that the model can
    represent are the model's, so neither the bound nor a proven optimum is above the best of them. One rule only
    competes with the model: on instances this small the best of all 56 usually reaches that best, and is returned
    in place of a model that wrongly cannot (an over-constrained model then went unseen)."""
    best = best_reachable(inst)
    with mock.patch.object(oracle, "RULES", ("FIFO:EET",)):
        for objective, key in OBJECTIVE_METRICS.items():
            result = solve_clairvoyant(inst, objective, time_limit=2.0, workers=1)
            check(result, objective)
            assert result.bound <= best[key] + 1e-9 * max(1.0, best[key]), objective
            if result.status == "optimal":
                assert result.objective <= best[key] + 1e-9 * max(1.0, best[key]), objective


def test_idle_time_beats_every_decision_sequence():
    """The simulator never keeps a machine idle that could start something, so the exhaustive search need not reach
    the optimum even without events: J0's second operation must start on the slow M0 at 1, while the oracle waits
    for M1 (free at 2)."""
    inst = Instance.build("idle", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 1.0}, {0: 10.0, 1: 1.0}]), Job("J1", [{1: 2.0}])])
    result = solve_clairvoyant(inst, "makespan")
    check(result, "makespan")
    assert (result.objective, result.status) == (3.0, "optimal")
    assert best_reachable(inst)["makespan"] == 11.0
