"""Every dispatching rule's choice on a hand-made state (values worked out from the rules' docs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances

from dynasched_gym import Event, EventType, Instance, Job, Machine, rollout, validate_schedule
from dynasched_gym.agents.rules import rule_names
from dynasched_gym.core import Simulator
from dynasched_gym.core.rules import (
    EMERGENCY_FIRST,
    JOB_RULES,
    MACHINE_RULES,
    RANDOM_TIES,
    RULES,
    atc_scale,
    is_random_rule,
    job_priority,
    parse_rule,
    rule_name,
    run_episodes,
    seed_rng,
    select,
)
from dynasched_gym.metrics import EPS


@pytest.fixture
def sim() -> Simulator:
    """Three jobs at t = 0 on two machines (p: current-op mean time, W: work left, n: ops left).

    J0: p 6 (5 on M0, 7 on M1), W 6, n 1, due 8, weight 1, ready at 3
    J1: p 2 (M0),               W 11, n 2, due 10, weight 1, ready at 1
    J2: p 4 (M1),               W 6, n 3, no due, weight 3, ready at 2
    ATC's p_mean = the mean p of the waiting jobs = (6 + 2 + 4) / 3 = 4. M1 has been idle longer (since -2)
    and carries less workload (3 against 10).
    """
    inst = Instance.build("hand", [Machine("M0"), Machine("M1")], [
        Job("J0", [{0: 5.0, 1: 7.0}], due=8.0),
        Job("J1", [{0: 2.0}, {1: 9.0}], due=10.0),
        Job("J2", [{1: 4.0}, {0: 1.0}, {1: 1.0}], weight=3.0),
    ])
    s = Simulator(inst)
    s.reset()
    s.state.job_ready[:] = [3.0, 1.0, 2.0]
    s.state.machine_free_since[:] = [0.0, -2.0]
    s.state.machine_workload[:] = [10.0, 3.0]
    return s


EXPECTED_JOB = {
    "SPT": 1, "LPT": 0, "FIFO": 1, "LIFO": 0, "MWKR": 1, "LWKR": 0,  # LWKR: J0 and J2 tie at 6, lower id
    "MOPNR": 2, "LOPNR": 0, "EDD": 0, "CR": 1, "SLACK": 1, "WSPT": 2,
    "ATC": 1,  # J1: 0.5 exp(-8 / (2 p_mean)) = 0.184 beats J0: (1/6) exp(-2 / (2 p_mean)) = 0.130; J2 has no due
}


@pytest.mark.parametrize("rule", sorted(EXPECTED_JOB))
def test_each_job_rule_picks_the_documented_job(sim, rule):
    job, machine = select(sim.static, sim.state, *parse_rule(rule))
    assert job == EXPECTED_JOB[rule]
    assert machine == {0: 0, 1: 0, 2: 1}[job]  # EET: the fastest startable machine


def test_atc_reads_nothing_of_jobs_still_to_come():
    """ATC's p_mean is the waiting jobs' mean p (3 here): B's small slack wins. The instance's mean operation time,
    the old p_mean, grew to 3335 with a job released later and made A win: a rule that read the future."""
    now = [Job("A", [{0: 2.0}], due=20.0), Job("B", [{0: 4.0}], due=5.0)]
    later = Job("C", [{0: 10_000.0}], release=50.0, due=60_000.0)
    for jobs in (now, [*now, later]):
        sim = Simulator(Instance.build("atc", [Machine("M0")], jobs))
        sim.reset()
        assert atc_scale(sim.static, sim.state) == pytest.approx(3.0)
        assert select(sim.static, sim.state, *parse_rule("ATC")) == (1, 0)


@pytest.mark.parametrize(("machine_rule", "expected"), [("EET", 0), ("SPT", 0), ("LIT", 1), ("LWL", 1)])
def test_each_machine_rule_picks_the_documented_machine(sim, machine_rule, expected):
    assert select(sim.static, sim.state, *parse_rule(f"LPT:{machine_rule}")) == (0, expected)


def test_emergency_first_and_random_ties(sim):
    sim.state.job_weight[2] = 10.0
    assert select(sim.static, sim.state, *parse_rule("SPT", emergency_first=True)) == (2, 1)
    assert select(sim.static, sim.state, *parse_rule("SPT")) == (1, 0)
    picks = set()
    for seed in range(40):
        seed_rng(seed)
        picks.add(select(sim.static, sim.state, *parse_rule("LWKR", random_ties=True))[0])
    assert picks == {0, 2}  # the tied jobs, and only them
    with pytest.raises(ValueError, match="emergency_first does not apply to 'RANDOM:EET'"):
        parse_rule("RANDOM:EET", emergency_first=True)  # was accepted and ignored: RANDOM drew among all jobs
    with pytest.raises(ValueError, match="random_ties does not apply to 'RANDOM'"):
        parse_rule("RANDOM", random_ties=True)  # as ignored: rule:RANDOM with random_ties played as without


def test_rule_names_and_errors():
    assert len(RULES) == len(JOB_RULES) * len(MACHINE_RULES)
    assert parse_rule("mwkr:lwl") == (JOB_RULES.index("MWKR"), MACHINE_RULES.index("LWL"))
    with pytest.raises(ValueError, match="unknown rule"):
        parse_rule("FASTEST")
    with pytest.raises(ValueError, match="unknown rule 'MWKR:FASTEST'"):
        parse_rule("MWKR:FASTEST")
    with pytest.raises(ValueError, match="unknown rule 'SPT:'"):
        parse_rule("SPT:")  # a colon with nothing after it was read as SPT:EET
    assert rule_name("spt") == "SPT:EET" and rule_name("spt", alone=True) == "SPT"
    assert is_random_rule(parse_rule("RANDOM")[0] | RANDOM_TIES | EMERGENCY_FIRST)  # whatever its flags
    assert not any(is_random_rule(parse_rule(rule, True, True)[0]) for rule in JOB_RULES if rule != "RANDOM")
    assert rule_names() == [rule for rule in RULES if not rule.startswith("RANDOM:")]  # the deterministic ones


@pytest.mark.parametrize("rule", [r for r in RULES if not r.startswith("RANDOM")])
def test_every_rule_rolls_out_a_valid_schedule(rule, shared):
    from dynasched_gym import load_instance

    inst = load_instance(shared / "reference" / "dsbx" / "MK-Bench" / "Mk01")
    schedule = rollout(inst, rule=rule)
    assert validate_schedule(schedule).ok
    assert np.isfinite(schedule.metrics["makespan"])


@pytest.mark.parametrize("machine_rule", MACHINE_RULES)
def test_machine_ties_go_to_the_lower_machine_id(machine_rule):
    # three idle machines, same time, same idle time, no workload: every machine rule ties; the lower id wins
    inst = Instance.build("ties", [Machine("M0"), Machine("M1"), Machine("M2")], [Job("a", [{2: 3.0, 1: 3.0}])])
    sim = Simulator(inst)
    sim.reset()
    assert select(sim.static, sim.state, *parse_rule(f"SPT:{machine_rule}")) == (0, 1)


def test_lit_and_lwl_read_their_own_machine_statistics(sim):
    # the fixture's M1 is both the longest idle and the least loaded; here M0 carries less workload
    sim.state.machine_workload[:] = [3.0, 10.0]
    assert select(sim.static, sim.state, *parse_rule("LPT:LIT")) == (0, 1)
    assert select(sim.static, sim.state, *parse_rule("LPT:LWL")) == (0, 0)


def test_p_is_the_work_left_of_a_preempted_operation():
    """Resume policy: a's 4-unit operation ran 1 before the breakdown, so p = 3 < b's 3.5 and SPT takes a."""
    inst = Instance.build("left", [Machine("M0")], [Job("a", [{0: 4.0}]), Job("b", [{0: 3.5}], release=2.0)],
                          [Event(1.0, EventType.BREAKDOWN, machine=0, duration=2.0)], "resume")
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 3.0
    assert job_priority(sim.static, sim.state, 0, parse_rule("SPT")[0]) == pytest.approx(3.0)
    assert select(sim.static, sim.state, *parse_rule("SPT")) == (0, 0)


def test_atc_scale_leaves_running_jobs_out():
    inst = Instance.build("atc", [Machine("M0"), Machine("M1")],
                          [Job("a", [{0: 10.0}]), Job("b", [{1: 2.0}]), Job("c", [{1: 4.0}])])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)  # a runs on M0; b and c wait for M1
    assert atc_scale(sim.static, sim.state) == pytest.approx(3.0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=5, max_machines=3, max_events=12), seed=st.integers(0, 2**32 - 1))
def test_p_is_the_mean_remaining_time_over_the_eligible_machines(inst, seed):
    """Where every eligible machine of a waiting job is free, SPT's p is the mean of the job's candidate times
    (the simulator's own remaining processing times), through factor, value and route changes and preemptions."""
    sim = Simulator(inst)
    sim.reset()
    rng = np.random.default_rng(seed)
    spt = parse_rule("SPT")[0]
    while not sim.done:
        jobs, machines, times = sim.candidates()
        for j in set(jobs.tolist()):
            slot = sim.static.job_slot_ptr[j] + sim.state.job_pos[j]
            op = sim.state.slot_op[slot]
            eligible = sim.static.op_elig_ptr[op + 1] - sim.static.op_elig_ptr[op]
            if np.count_nonzero(jobs == j) == eligible:
                assert job_priority(sim.static, sim.state, j, spt) == pytest.approx(times[jobs == j].mean(), rel=1e-9)
        k = int(rng.integers(len(jobs)))
        sim.step(jobs[k], machines[k])


def test_p_of_a_value_change_then_a_factor():
    """A value replaces the base times (value / speed), a later factor scales them: p = mean(5/2, 5/1) x 2."""
    inst = Instance.build("ptime", [Machine("M0", speed=2.0), Machine("M1")],
                          [Job("a", [{0: 1.0, 1: 1.0}], release=3.0)],
                          [Event(1.0, EventType.PTIME_CHANGE, job=0, op=0, value=5.0),
                           Event(2.0, EventType.PTIME_CHANGE, job=0, op=0, factor=2.0)])
    sim = Simulator(inst)
    sim.reset()
    _, _, times = sim.candidates()
    assert times.tolist() == [5.0, 10.0]
    assert job_priority(sim.static, sim.state, 0, parse_rule("SPT")[0]) == pytest.approx(7.5)


def test_atc_values_follow_the_documented_formula(sim):
    """-(w / p) exp(-max(0, d - p - t) / (K p_mean)), K = 2, p_mean = 4 (the fixture); J2 has no due date."""
    atc = parse_rule("ATC")[0]
    values = [job_priority(sim.static, sim.state, j, atc) for j in range(3)]
    assert values[0] == pytest.approx(-(1 / 6) * np.exp(-2 / 8))
    assert values[1] == pytest.approx(-(1 / 2) * np.exp(-8 / 8))
    assert values[2] == pytest.approx(4 / 3)  # p / w: positive, after every job with a due date


def test_atc_ranks_jobs_without_a_due_date_by_wspt_at_any_ratio():
    """Both jobs lack a due date, so ATC ranks them by WSPT: b's w / p of 3e-17 before a's 1e-17, as WSPT does.
    The value 1 / (1 + w / p) rounded both to 1.0 and the tie went to a."""
    inst = Instance.build("wspt", [Machine("M0")], [Job("a", [{0: 1e17}]), Job("b", [{0: 1e17}], weight=3.0)])
    sim = Simulator(inst)
    sim.reset()
    assert select(sim.static, sim.state, *parse_rule("WSPT")) == (1, 0)
    assert select(sim.static, sim.state, *parse_rule("ATC")) == (1, 0)


@pytest.mark.parametrize("event", [Event(3.0, EventType.REWORK, job=0, op=0),
                                   Event(3.0, EventType.ROUTE_CHANGE, job=0, ops=({1: 1.0},), op=1)])
def test_fifo_keeps_r_when_another_operation_takes_the_waiting_ones_place(event):
    """a has waited since its first operation ended at 1, b since its release at 2; at 3 another operation takes
    the place of a's waiting one, which leaves a's r at 1 (docs/agents.md). When M1 frees at 5, FIFO takes a."""
    inst = Instance.build("r", [Machine("M0"), Machine("M1")], [
        Job("a", [{0: 1.0, 1: 1.0}, {1: 1.0}]), Job("c", [{1: 5.0}]), Job("d", [{0: 5.0}], release=1.0),
        Job("b", [{1: 1.0}], release=2.0)], [event])
    sim = Simulator(inst)
    sim.reset()
    for job, machine in ((0, 0), (1, 1), (2, 0)):  # a on M0 0 .. 1, c on M1 0 .. 5, d on M0 1 .. 6
        sim.step(job, machine)
    assert sim.now == 5.0 and sim.state.job_ready[[0, 3]].tolist() == [1.0, 2.0]
    assert select(sim.static, sim.state, *parse_rule("FIFO")) == (0, 1)
    assert select(sim.static, sim.state, *parse_rule("LIFO")) == (3, 1)


def test_atc_takes_no_credit_for_negative_slack():
    """max(0, d - p - t): a's slack is -1, so its factor is 1 and its value -w / p = -0.5; b's is -exp(-1.5 / 3).
    b wins; a factor exp(1 / 3) for the negative slack would make a win."""
    inst = Instance.build("atc", [Machine("M0")], [Job("a", [{0: 2.0}], due=1.0), Job("b", [{0: 1.0}], due=2.5)])
    sim = Simulator(inst)
    sim.reset()
    atc = parse_rule("ATC")[0]
    assert atc_scale(sim.static, sim.state) == pytest.approx(1.5)
    assert job_priority(sim.static, sim.state, 0, atc) == pytest.approx(-0.5)
    assert job_priority(sim.static, sim.state, 1, atc) == pytest.approx(-np.exp(-0.5))
    assert select(sim.static, sim.state, atc, 0) == (1, 0)


def test_atc_ranks_a_job_of_weight_0_without_a_due_date_last():
    """Jobs without a due date go by WSPT, where weight 0 comes last (w / p = 0): ATC's value for a is inf, not a
    division by zero that stops the episode."""
    inst = Instance.build("w0", [Machine("M0")], [Job("a", [{0: 1.0}], weight=0.0), Job("b", [{0: 9.0}])])
    sim = Simulator(inst)
    sim.reset()
    atc = parse_rule("ATC")[0]
    assert job_priority(sim.static, sim.state, 0, atc) == np.inf
    assert select(sim.static, sim.state, atc, 0) == (1, 0)


def test_cr_reads_now_and_keeps_negative_slack():
    """At t = 8, CR = (d - t) / W: a 2, b 2.2, c -0.5, d -2; d wins. (d alone / W would pick c, and a clamp of
    d - t at 0 would tie c and d at 0 and give c.)"""
    inst = Instance.build("cr", [Machine("M0")], [
        Job("a", [{0: 1.0}], due=10.0), Job("b", [{0: 10.0}], due=30.0),
        Job("c", [{0: 8.0}], due=4.0), Job("d", [{0: 2.0}], due=4.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.state.now[0] = 8.0
    cr = parse_rule("CR")[0]
    values = [job_priority(sim.static, sim.state, j, cr) for j in range(4)]
    assert values == pytest.approx([2.0, 2.2, -0.5, -2.0])
    assert select(sim.static, sim.state, cr, 0) == (3, 0)


def _random_tie_wins(inst: Instance, rule_name: str, seeds: int, pick: int) -> np.ndarray:
    """How often each job (``pick`` 0) or machine (``pick`` 1) is the first choice of ``rule_name`` with random ties
    at reset, over seeds ``0 .. seeds - 1``."""
    sim = Simulator(inst)
    sim.reset()
    rule = parse_rule(rule_name, random_ties=True)
    counts = np.zeros(inst.num_jobs if pick == 0 else inst.num_machines, dtype=np.int64)
    for seed in range(seeds):
        seed_rng(seed)
        counts[select(sim.static, sim.state, *rule)[pick]] += 1
    return counts


def test_random_ties_draw_uniformly_among_every_tied_job():
    """SPT with p 5, 5, 3, 3, 3: the three jobs at 3 tie, and each wins about a third of 600 seeds (docs: uniformly
    among the tied). A coin flip per tie would give the last one half; a tie count kept from the jobs at 5 the first."""
    times = [5.0, 5.0, 3.0, 3.0, 3.0]
    inst = Instance.build("ties", [Machine("M0")], [Job(f"J{i}", [{0: p}]) for i, p in enumerate(times)])
    counts = _random_tie_wins(inst, "SPT", 600, pick=0)
    assert counts[:2].sum() == 0
    assert all(150 <= count <= 250 for count in counts[2:]), counts  # 200 expected, sd 11.5


def test_lit_counts_a_machine_idle_from_the_cancellation_that_freed_it():
    """a runs on M0 from 0 and is cancelled at 5; b ran on M1 0 .. 3. At 5 c arrives: LIT puts it on M1, idle
    since 3, not on M0, idle only since 5 (M0's idle time left at its reset value 0 by the cut would pick M0)."""
    inst = Instance.build("cancel", [Machine("M0"), Machine("M1")], [
        Job("a", [{0: 10.0}]), Job("b", [{1: 3.0}]), Job("c", [{0: 1.0, 1: 1.0}], release=5.0)],
        [Event(5.0, EventType.CANCELLATION, job=0)])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    sim.step(1, 1)
    assert sim.now == 5.0 and sim.state.machine_free_since.tolist() == [5.0, 3.0]
    assert select(sim.static, sim.state, *parse_rule("SPT:LIT")) == (2, 1)


def test_a_segment_cut_by_a_breakdown_counts_what_it_performed_and_lit_reads_the_repair():
    """a runs on M0 from 0 and breaks down at 2 (repair at 6): M0's workload is the 2 it performed, and it became idle
    and up at 6. b runs on M1 0 .. 5. At 6 SPT takes c: LWL puts it on M0 (2 < 5), LIT on M1 (idle and up since 5).
    Counting a's planned 10 would make LWL pick M1, and taking M0 as idle from the cut (2) would make LIT pick M0."""
    inst = Instance.build("cut", [Machine("M0"), Machine("M1")], [
        Job("a", [{0: 10.0}]), Job("b", [{1: 5.0}]), Job("c", [{0: 1.0, 1: 1.0}], release=6.0)],
        [Event(2.0, EventType.BREAKDOWN, machine=0, duration=4.0)], "resume")
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    sim.step(1, 1)
    assert sim.now == 6.0
    assert sim.state.machine_workload.tolist() == [2.0, 5.0]
    assert select(sim.static, sim.state, *parse_rule("SPT:LWL")) == (2, 0)
    assert select(sim.static, sim.state, *parse_rule("SPT:LIT")) == (2, 1)


def test_a_preempted_operations_r_is_the_preemption():
    """a runs on M0 from 0 until the breakdown at 2 (repair at 3), so its r is 2; b has waited since its release at 1.
    At 3 FIFO takes b and LIFO a; an r left at a's start (0) would swap them."""
    inst = Instance.build("r", [Machine("M0")], [Job("a", [{0: 10.0}]), Job("b", [{0: 1.0}], release=1.0)],
                          [Event(2.0, EventType.BREAKDOWN, machine=0, duration=1.0)], "resume")
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 3.0 and sim.state.job_ready.tolist() == [2.0, 1.0]
    assert select(sim.static, sim.state, *parse_rule("FIFO")) == (1, 0)
    assert select(sim.static, sim.state, *parse_rule("LIFO")) == (0, 0)


def test_lwl_counts_a_resumed_operation_at_the_time_it_had_left():
    """a runs on M0 0 .. 2, breaks down (repair at 3) and resumes with 8 left, 3 .. 11: M0's workload is 2 + 8 = 10
    against M1's 11 (b), so at 11 LWL puts c on M0. Counting the resumed segment at a's full 10 would pick M1."""
    inst = Instance.build("resume", [Machine("M0"), Machine("M1")], [
        Job("a", [{0: 10.0}]), Job("b", [{1: 11.0}]), Job("c", [{0: 1.0, 1: 1.0}], release=11.0)],
        [Event(2.0, EventType.BREAKDOWN, machine=0, duration=1.0)], "resume")
    sim = Simulator(inst)
    sim.reset()
    for job, machine in ((0, 0), (1, 1), (0, 0)):
        sim.step(job, machine)
    assert sim.now == 11.0 and sim.state.machine_workload.tolist() == [10.0, 11.0]
    assert select(sim.static, sim.state, *parse_rule("SPT:LWL")) == (2, 0)


def test_lit_reads_a_machine_idle_from_a_completion_after_a_downtime_that_ended_before_it():
    """a's first operation ends at 2 + EPS/2, in the instant of the breakdown at 2, which lasts only EPS/4: M0 is
    idle and up from the later of the two, the completion (ending the downtime at its end would say 2 + EPS/4)."""
    end = 2.0 + EPS / 2
    inst = Instance.build("eps", [Machine("M0")], [Job("a", [{0: end}, {0: 1.0}])],
                          [Event(2.0, EventType.BREAKDOWN, machine=0, duration=EPS / 4)])
    sim = Simulator(inst)
    sim.reset()
    sim.step(0, 0)
    assert sim.now == 2.0 + EPS / 4 and sim.state.machine_free_since[0] == end


def test_n_and_w_count_the_operations_of_the_route_in_force():
    """At 0 a's one operation becomes a route of three (n 3, W 1 + 3 + 3 = 7) against b's two (n 2, W 4): MOPNR and
    MWKR take a, LOPNR and LWKR b. Counting a's operations of the instance (n 1, W 1) would swap each choice."""
    inst = Instance.build("route", [Machine("M0")], [Job("a", [{0: 1.0}]), Job("b", [{0: 2.0}, {0: 2.0}])],
                          [Event(0.0, EventType.ROUTE_CHANGE, job=0, ops=({0: 1.0}, {0: 3.0}, {0: 3.0}))])
    sim = Simulator(inst)
    sim.reset()
    assert [select(sim.static, sim.state, *parse_rule(rule))[0] for rule in ("MOPNR", "MWKR", "LOPNR", "LWKR")] == [
        0, 0, 1, 1]


@pytest.mark.parametrize("rule", ["EDD", "CR", "SLACK"])
def test_a_job_without_a_due_date_ranks_after_one_with_a_due_date_also_before_it(rule):
    """a (no due date) comes first in id order; b's due date puts b first. A NaN key would keep a: nothing beats it."""
    inst = Instance.build("due", [Machine("M0")], [Job("a", [{0: 1.0}]), Job("b", [{0: 1.0}], due=50.0)])
    sim = Simulator(inst)
    sim.reset()
    assert select(sim.static, sim.state, *parse_rule(rule)) == (1, 0)


def test_random_ties_draw_uniformly_among_every_tied_machine():
    """One job whose operation takes 3 on each of three idle machines: each wins about a third of 300 seeds. A tie
    count starting at 0 would always let the second machine replace the first, which then never wins."""
    inst = Instance.build("ties", [Machine("M0"), Machine("M1"), Machine("M2")], [Job("a", [{0: 3.0, 1: 3.0, 2: 3.0}])])
    counts = _random_tie_wins(inst, "SPT:EET", 300, pick=1)
    assert all(70 <= count <= 130 for count in counts), counts  # 100 expected, sd 8.2


def test_slack_values_read_now():
    """At t = 8, SLACK = d - t - W: a 10 - 8 - 1 = 1, b 30 - 8 - 10 = 12 (without t the ranking holds, the values
    do not)."""
    inst = Instance.build("slack", [Machine("M0")], [Job("a", [{0: 1.0}], due=10.0), Job("b", [{0: 10.0}], due=30.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.state.now[0] = 8.0
    assert [job_priority(sim.static, sim.state, j, parse_rule("SLACK")[0]) for j in range(2)] == [1.0, 12.0]


def test_job_priority_ignores_the_flags_of_a_rule_code(sim):
    """ATC's p_mean comes with the flags set too (job_priority's docs: flags ignored); without it the values are NaN."""
    plain = parse_rule("ATC")[0]
    flagged = parse_rule("ATC", emergency_first=True, random_ties=True)[0]
    assert [job_priority(sim.static, sim.state, j, flagged) for j in range(3)] == [
        job_priority(sim.static, sim.state, j, plain) for j in range(3)]


@pytest.mark.parametrize("machine_rule", MACHINE_RULES)
def test_machine_ties_go_to_the_lower_machine_id_in_any_listing_order(machine_rule):
    """Eligible machines listed M0, M2, M1, all tied: M0 wins, not the last one listed (M1)."""
    inst = Instance.build("ties", [Machine("M0"), Machine("M1"), Machine("M2")], [Job("a", [{0: 3.0, 2: 3.0, 1: 3.0}])])
    sim = Simulator(inst)
    sim.reset()
    assert select(sim.static, sim.state, *parse_rule(f"SPT:{machine_rule}")) == (0, 0)


def test_run_episodes_counts_the_decisions_of_every_episode():
    inst = Instance.build("two", [Machine("M0")], [Job("a", [{0: 1.0}, {0: 1.0}]), Job("b", [{0: 1.0}])])
    sim = Simulator(inst)
    assert run_episodes(sim.static, sim.state, *parse_rule("SPT"), 2) == 6  # 3 decisions per episode
