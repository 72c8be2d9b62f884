"""Every dispatching rule's choice on a hand-made state (values worked out from the rules' docs)."""

from __future__ import annotations

import numpy as np
import pytest

from dynasched_gym import Instance, Job, Machine, rollout, validate_schedule
from dynasched_gym.core import Simulator
from dynasched_gym.core.rules import JOB_RULES, MACHINE_RULES, RULES, atc_scale, parse_rule, seed_rng, select


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


def test_rule_names_and_errors():
    assert len(RULES) == len(JOB_RULES) * len(MACHINE_RULES)
    assert parse_rule("mwkr:lwl") == (JOB_RULES.index("MWKR"), MACHINE_RULES.index("LWL"))
    with pytest.raises(ValueError, match="unknown rule"):
        parse_rule("FASTEST")


@pytest.mark.parametrize("rule", [r for r in RULES if not r.startswith("RANDOM")])
def test_every_rule_rolls_out_a_valid_schedule(rule, shared):
    from dynasched_gym import load_instance

    inst = load_instance(shared / "reference" / "dsbx" / "MK-Bench" / "Mk01")
    schedule = rollout(inst, rule=rule)
    assert validate_schedule(schedule).ok
    assert np.isfinite(schedule.metrics["makespan"])
