"""Agents: one interface, rule agents equal the jitted rules, lookahead never reads the future."""

from __future__ import annotations

import importlib
import re
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import Event, EventType, Instance, Job, Machine, data, load_instance, rollout, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.lookahead import LookaheadAgent
from dynasched_gym.agents.rules import complementary_rules
from dynasched_gym.core.rules import parse_rule, select
from dynasched_gym.errors import MissingExtraError, TruncatedEpisodeWarning


@pytest.mark.parametrize("rule", ["SPT:EET", "MWKR:EET", "MOPNR:LWL", "FIFO:LIT", "EDD:SPT", "ATC:EET", "CR:LWL"])
@pytest.mark.parametrize("name", ["mk01", "dsbx-medium"])
def test_rule_agent_equals_the_jitted_rule(rule, name):
    inst = load_instance(data.path(name))
    env = gym.make("DynaSched/FJSP-v0", instance=inst, max_candidates=512)
    played = run_episode(make(f"rule:{rule}"), env, seed=0)
    kernel = rollout(inst, rule=rule)
    assert played.metrics == kernel.metrics
    np.testing.assert_array_equal(played.segment_start, kernel.segment_start)
    np.testing.assert_array_equal(played.segment_machine, kernel.segment_machine)


def test_reference_names_and_rule_selection_env():
    assert make("pdr:MWKR:EET").config() == make("rule:MWKR:EET").config()
    env = gym.make("DynaSched/DFJSP-Rules-v0", instance="mk02")
    schedule = run_episode(make("rule:MWKR:EET"), env, seed=0)
    assert schedule.metrics["makespan"] == rollout(load_instance(data.path("mk02")), rule="MWKR").metrics["makespan"]
    with pytest.raises(ValueError, match="composite rules"):
        run_episode(make("rule:LPT:LIT"), env, seed=0)
    with pytest.raises(ValueError, match="unknown agent"):
        make("genius")
    with pytest.raises(ValueError, match="top_k"):
        make("lookahead", top_k=0)


@pytest.mark.parametrize("name", ["random", "lookahead", "lookahead-oracle", "rule:ATC:EET"])
def test_every_agent_plays_valid_episodes_on_a_dynamic_instance(name):
    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness")
    agent = make(name, top_k=4) if name.startswith("lookahead") else make(name)
    schedule = run_episode(agent, env, seed=1)
    assert schedule.finished and validate_schedule(schedule).ok
    assert agent.clairvoyant == (name == "lookahead-oracle")


def _breakdown_instance(with_future_breakdown: bool) -> Instance:
    """J0 takes 2 on M0 or 3 on M1. A breakdown of M0 at t=1 (restart policy) would make M1 better."""
    events = [Event(1.0, EventType.BREAKDOWN, machine=0, duration=100.0)] if with_future_breakdown else []
    return Instance.build("future", [Machine("M0"), Machine("M1")], [Job("J0", [{0: 2.0, 1: 3.0}])], events,
                          breakdown_policy="restart")


def _first_choice(agent: LookaheadAgent, inst: Instance) -> tuple[int, int]:
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective="makespan")
    obs, info = env.reset(seed=0)
    agent.reset(env)
    jobs, machines = env.unwrapped.offered_pairs()
    slot = agent.act(obs, info)
    return int(jobs[slot]), int(machines[slot])


def test_lookahead_never_reads_future_events_but_the_oracle_does():
    fair, oracle = LookaheadAgent(rule="SPT", top_k=4), LookaheadAgent(rule="SPT", top_k=4, clairvoyant=True)
    assert _first_choice(fair, _breakdown_instance(True)) == _first_choice(fair, _breakdown_instance(False)) == (0, 0)
    assert _first_choice(oracle, _breakdown_instance(True)) == (0, 1)
    assert (fair.name, oracle.name) == ("lookahead", "lookahead-oracle")


def test_lookahead_ignores_jobs_that_have_not_arrived():
    """A future urgent arrival on M0 would make a clairvoyant rollout keep M0 free; the fair one cannot know."""
    jobs = [Job("J0", [{0: 2.0, 1: 2.5}]), Job("J1", [{0: 10.0}], release=0.5)]
    inst = Instance.build("arrival", [Machine("M0"), Machine("M1")], jobs)
    fair, oracle = LookaheadAgent(rule="SPT", top_k=4), LookaheadAgent(rule="SPT", top_k=4, clairvoyant=True)
    assert _first_choice(fair, inst) == (0, 0)
    assert _first_choice(oracle, inst) == (0, 1)


def test_lookahead_rollouts_take_job_machine_pairs():
    """Rollout rules may name their machine rule; a bad name fails at construction, not in the episode."""
    agent = LookaheadAgent(rule="EDD:EET", rollout_rules=["EDD:LWL", "ATC"], top_k=4)
    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness")
    schedule = run_episode(agent, env, seed=0)
    assert schedule.finished and validate_schedule(schedule).ok
    assert agent.rollout_rules.tolist() == [list(parse_rule("EDD:LWL")), list(parse_rule("ATC:EET"))]
    with pytest.raises(ValueError, match="unknown rule"):
        LookaheadAgent(rollout_rules=["EDD:FASTEST"])


@pytest.mark.parametrize("horizon", [0, 3])
def test_lookahead_with_a_horizon_never_reads_future_events_either(horizon):
    fair = LookaheadAgent(rule="SPT", top_k=4, horizon=horizon)
    assert _first_choice(fair, _breakdown_instance(True)) == _first_choice(fair, _breakdown_instance(False))
    jobs = [Job("J0", [{0: 2.0, 1: 2.5}]), Job("J1", [{0: 10.0}], release=0.5)]
    assert _first_choice(fair, Instance.build("arrival", [Machine("M0"), Machine("M1")], jobs)) == (0, 0)


def test_one_lookahead_over_episodes_and_instances_plays_as_fresh_ones():
    """Its scratch state, kept over resets and instance switches, holds nothing a later decision reads (each
    decision copies only the active window into it and values the other jobs from the env's state)."""
    medium, small = (gym.make("DynaSched/DFJSP-v0", instance=name, objective="weighted_tardiness")
                     for name in ("dsbx-medium", "mk01"))
    kept = LookaheadAgent(top_k=3, horizon=5)
    for env, seed in ((medium, 0), (small, 0), (medium, 1), (medium, 0)):
        played = run_episode(kept, env, seed=seed)
        fresh = run_episode(LookaheadAgent(top_k=3, horizon=5), env, seed=seed)
        for name in ("segment_job", "segment_machine", "segment_start", "job_completion"):
            assert getattr(played, name).tobytes() == getattr(fresh, name).tobytes(), name


def test_lookahead_horizon_beyond_the_episode_plays_as_the_full_rollouts():
    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness")
    full = run_episode(LookaheadAgent(top_k=4), env, seed=0)
    long = run_episode(LookaheadAgent(top_k=4, horizon=100_000), env, seed=0)
    short = run_episode(LookaheadAgent(top_k=4, horizon=5), env, seed=0)
    np.testing.assert_array_equal(full.segment_start, long.segment_start)
    np.testing.assert_array_equal(full.segment_machine, long.segment_machine)
    assert short.finished and validate_schedule(short).ok
    assert LookaheadAgent(horizon=5).config()["horizon"] == 5 and "horizon" not in LookaheadAgent().config()
    for bad, error in ((-1, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match=f"horizon must be an integer >= 0, got {bad!r}"):
            LookaheadAgent(horizon=bad)


def test_a_stopped_rollout_counts_open_jobs_at_their_remaining_work():
    """J0: 4 on M0, due 3, weight 2. Stopped before it runs, it is valued as done at 0 + 4: tardiness 1 x 2."""
    from dynasched_gym.core.lookahead import objective_value, rollout_value
    from dynasched_gym.core.simulator import Simulator

    inst = Instance.build("open", [Machine("M0")], [Job("J0", [{0: 4.0}], due=3.0, weight=2.0)])
    sim = Simulator(inst)
    sim.reset()
    assert rollout_value(sim.static, sim.state, 2) == (2.0, 4.0)
    assert rollout_value(sim.static, sim.state, 0) == (4.0, 4.0)
    assert objective_value(sim.static, sim.state, 2) == 0.0  # completed jobs only
    sim.run("SPT:EET")
    assert rollout_value(sim.static, sim.state, 2) == (objective_value(sim.static, sim.state, 2), 4.0) == (2.0, 4.0)


def test_a_stopped_rollout_lets_a_running_operation_end_as_planned():
    """J1 runs 0..10 on M1 (its next operation takes 3); at t=2 (J0 done, J2 waits for M0) it counts as done at 13."""
    from dynasched_gym.core.lookahead import rollout_value
    from dynasched_gym.core.simulator import Simulator

    for busy, other in ((1, 0), (0, 1)):  # also on machine 0, which a test for "running" must count
        jobs = [Job("J0", [{other: 2.0}]), Job("J1", [{busy: 10.0}, {other: 3.0}]), Job("J2", [{other: 4.0}])]
        sim = Simulator(Instance.build("busy", [Machine("M0"), Machine("M1")], jobs))
        sim.reset()
        sim.step(1, busy)
        sim.step(0, other)
        assert sim.now == 2.0 and sim.state.job_machine[1] == busy
        assert rollout_value(sim.static, sim.state, 0) == (13.0, 7.0)  # makespan; mean completion (2 + 13 + 6) / 3


def test_a_horizon_stops_the_rollouts_after_that_many_decisions():
    from dynasched_gym.core.compiled import allocate_state
    from dynasched_gym.core.lookahead import forget_future, pair_value, rollout_value
    from dynasched_gym.core.rules import run_rule

    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness")
    env.reset(seed=0)
    sim = env.unwrapped.simulator
    for _ in range(30):  # a state with work in progress and jobs waiting
        env.step(0)
    rules = np.array([parse_rule("EDD:EET")], dtype=np.int64)
    jobs, machines = env.unwrapped.offered_pairs()
    j, m = int(jobs[0]), int(machines[0])
    by_hand = sim.snapshot()
    forget_future(sim.static, by_hand)
    sim_hand = sim.__class__(sim.instance)
    sim_hand.bind(by_hand)
    sim_hand.step(j, m)
    run_rule(sim.static, by_hand, *rules[0], 2)
    scratch = allocate_state(sim.static)
    assert pair_value(sim.static, sim.state, scratch, j, m, rules, 2, False, 2) == rollout_value(sim.static, by_hand, 2)
    assert pair_value(sim.static, sim.state, scratch, j, m, rules, 2, False, 2) != pair_value(
        sim.static, sim.state, scratch, j, m, rules, 2, False, -1)


def test_a_stopped_rollout_counts_a_job_not_released_yet_from_its_release():
    """J1 arrives at 10: a state at 0 that holds it (a clairvoyant rollout's) counts it done at 10 + 3, not 0 + 3."""
    from dynasched_gym.core.lookahead import rollout_value
    from dynasched_gym.core.simulator import Simulator

    jobs = [Job("J0", [{0: 2.0}]), Job("J1", [{0: 3.0}], release=10.0)]
    sim = Simulator(Instance.build("later", [Machine("M0")], jobs))
    sim.reset()
    assert rollout_value(sim.static, sim.state, 0) == (13.0, 7.5)  # makespan; mean completion (2 + 13) / 2


def _one_machine(times: list[float]):
    """A simulator at t=0 of jobs J0.. of one operation each on M0, taking ``times``, without due dates."""
    from dynasched_gym.core.simulator import Simulator

    jobs = [Job(f"J{i}", [{0: p}]) for i, p in enumerate(times)]
    sim = Simulator(Instance.build("one machine", [Machine("M0")], jobs))
    sim.reset()
    return sim


def test_a_pair_values_ties_over_rollout_rules_go_to_the_lower_mean_completion():
    """Without due dates every rollout's weighted tardiness is 0. After J0 (1), MWKR plays J1 (5) before J2 (1),
    completions 1, 6, 7, and SPT plays J2 first, 1, 2, 7: the pair's value is SPT's in either order of the rules."""
    from dynasched_gym.core.compiled import allocate_state
    from dynasched_gym.core.lookahead import pair_value

    sim = _one_machine([1.0, 5.0, 1.0])
    scratch = allocate_state(sim.static)
    for names in (["MWKR", "SPT"], ["SPT", "MWKR"]):
        rules = np.array([parse_rule(name) for name in names], dtype=np.int64)
        assert pair_value(sim.static, sim.state, scratch, 0, 0, rules, 2, False, -1) == (0.0, 10.0 / 3.0)


@pytest.mark.parametrize(("times", "top_k", "chosen"), [([5.0, 1.0], 2, 1), ([5.0, 1.0], 1, 0), ([3.0, 3.0], 2, 0)])
def test_lookahead_ties_go_to_the_lower_mean_completion_then_to_the_ranking(times, top_k, chosen):
    """Weighted tardiness is 0 whatever is played, and MWKR ranks J0 first. With J0 5 and J1 1, J1 first completes
    sooner on average (3.5 against 5.5), unless only the top 1 is rolled out; with both 3 the pairs tie on both and
    the ranking's first, J0, is kept."""
    from dynasched_gym.core.compiled import allocate_state
    from dynasched_gym.core.lookahead import lookahead_select

    sim = _one_machine(times)
    buffers = (np.empty(4, np.int64), np.empty(4, np.int64), np.empty(4), np.empty(4))
    mwkr = parse_rule("MWKR")
    rules = np.array([mwkr], dtype=np.int64)
    assert lookahead_select(sim.static, sim.state, allocate_state(sim.static), mwkr[0], rules, top_k, 2, False,
                            *buffers, -1) == (chosen, 0)  # the horizon as the agent passes it: no other signature


def test_ranked_candidates_sort_by_the_job_key_then_the_processing_time_then_the_listing():
    """All released at 0, FIFO's keys tie: the pairs go by time, equal times in listing order (J0 on M0 is listed
    first but takes longest). Under MWKR J2 (most work) leads, though its pair takes longer than J0's on M1, and J0
    and J1 (mean work 2 each) tie again."""
    from dynasched_gym.core.lookahead import ranked_candidates
    from dynasched_gym.core.simulator import Simulator

    jobs = [Job("J0", [{0: 3.0, 1: 1.0}]), Job("J1", [{0: 2.0}]), Job("J2", [{1: 2.0}, {0: 5.0}])]
    sim = Simulator(Instance.build("ranked", [Machine("M0"), Machine("M1")], jobs))
    sim.reset()
    buffers = (np.empty(8, np.int64), np.empty(8, np.int64), np.empty(8), np.empty(8))
    for rule, pairs in (("FIFO", [(0, 1), (1, 0), (2, 1), (0, 0)]), ("MWKR", [(2, 1), (0, 1), (1, 0), (0, 0)])):
        n = ranked_candidates(sim.static, sim.state, parse_rule(rule)[0], *buffers)
        assert list(zip(buffers[0][:n].tolist(), buffers[1][:n].tolist())) == pairs, rule


def test_the_lookahead_picks_the_pair_its_horizons_rollouts_value_best():
    """On mk01 at t=0 rollouts of 2 decisions prefer another pair than full ones: the pick is the top-k pair of the
    lowest ``pair_value`` at the horizon given."""
    from dynasched_gym.core.compiled import allocate_state
    from dynasched_gym.core.lookahead import lookahead_select, pair_value, ranked_candidates

    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", objective="weighted_tardiness")
    env.reset(seed=0)
    sim = env.unwrapped.simulator
    S, T, scratch = sim.static, sim.state, allocate_state(sim.static)
    edd, rules, top_k = parse_rule("EDD")[0], np.array([parse_rule("EDD:EET")], dtype=np.int64), 4
    buffers = (np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64), np.empty(64))
    count = min(ranked_candidates(S, T, edd, *buffers), top_k)
    pairs = list(zip(buffers[0][:count].tolist(), buffers[1][:count].tolist()))
    picks = {}
    for horizon in (-1, 2):
        values = [pair_value(S, T, scratch, j, m, rules, 2, False, horizon) for j, m in pairs]
        picks[horizon] = lookahead_select(S, T, scratch, edd, rules, top_k, 2, False, *buffers, horizon)
        assert picks[horizon] == pairs[values.index(min(values))]  # (value, mean completion); ties: the first
    assert picks[-1] != picks[2]


def test_bad_agent_arguments_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'.*missing\.zip' is not a file"):
        make("ppo", checkpoint=tmp_path / "missing.zip")
    for bad, error in (("x", TypeError), (-1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="seed must be an integer"):
            make("random", seed=bad)
    with pytest.raises(TypeError, match="clairvoyant must be true or false, got 'false'"):
        LookaheadAgent(clairvoyant="false")


@pytest.mark.parametrize(("name", "kwargs", "error", "message"), [
    ("rule:MWKR:EET", {"emergency_first": "no"}, TypeError, "emergency_first must be true or false, got 'no'"),
    ("rule:MWKR:EET", {"random_ties": 1}, TypeError, "random_ties must be true or false, got 1"),
    ("rule:MWKR:EET", {"seed": -1}, ValueError, r"seed must be an integer in \[0, 2\*\*32\), got -1"),
    ("rule:RANDOM:EET", {"seed": 2**32}, ValueError, r"seed must be .*, got 4294967296"),  # played as seed 0
    ("rule:MWKR:EET", {"seed": 2**64}, ValueError, r"seed must be .*, got 18446744073709551616"),  # failed at reset
    ("rule:", {}, ValueError, "unknown rule ''"),
    ("lookahead", {"future_seed": -1}, ValueError, "future_seed must be an integer >= 0, got -1"),
    ("lookahead", {"rule": ""}, ValueError, "rule must be a JOB:MACHINE rule name or None"),
    ("lookahead", {"rollout_rules": []}, ValueError, r"rollout_rules must name at least one rule .*, got \[\]"),
    ("lookahead", {"rule": "RANDOM:EET"}, ValueError, "deterministic rules only .*got 'RANDOM:EET'"),  # ranked as SLACK
    ("lookahead", {"rollout_rules": ["EDD", "random"]}, ValueError, "deterministic rules only .*got 'random'"),
    ("lookahead", {"rule": 5}, TypeError, "rule must be a JOB:MACHINE rule name or None .*got int: 5"),
    ("lookahead", {"rule": 0}, TypeError, "rule must be a JOB:MACHINE rule name or None .*got int: 0"),  # ValueError
    ("lookahead", {"top_k": 10**30}, ValueError, "top_k must be at most 2147483647"),  # OverflowError when acting
    ("lookahead", {"horizon": 10**30}, ValueError, "horizon must be at most 2147483647"),
    ("lookahead", {"futures": 1001}, ValueError, "futures must be at most 1000"),  # NumPy's error at the first reset
    ("lookahead", {"objective": np.array(["makespan"])}, TypeError, "objective must be one of .*got ndarray"),
    ("lookahead", {"clairvoyant": np.array([1, 2])}, TypeError, "clairvoyant must be true or false"),  # ambiguous
    ("rule:MWKR:EET", {"seed": "abc"}, TypeError, r"seed must be an integer in \[0, 2\*\*32\), got 'abc'"),
    ("lookahead", {"rollout_rules": [5]}, TypeError, r"rules are one rule name or a sequence of them.*got \[5\]"),
    ("lookahead", {"clairvoyant": True}, ValueError, "agent 'lookahead' is not clairvoyant, got clairvoyant=True"),
    ("lookahead-oracle", {"clairvoyant": False}, ValueError, "'lookahead-oracle' is clairvoyant, got .*=False"),
    (5, {}, TypeError, "an agent name is a string such as 'rule:MWKR:EET' or 'lookahead', got 5"),
    ("lookahead", {"future_tier": "hard"}, ValueError, "futures=0 samples none"),  # ignored
    ("lookahead", {"future_size": "tiny"}, ValueError, "futures=0 samples none"),  # ignored, never checked
    ("lookahead", {"futures": 1, "future_tier": "hardd"}, ValueError, "future_tier must be one of .*got 'hardd'"),
])
def test_agent_settings_are_checked_where_they_are_given(name, kwargs, error, message):
    """Each of these was accepted: a truthy string turned an option on, an empty rule meant the default."""
    with pytest.raises(error, match=message):
        make(name, **kwargs)


def test_the_rule_agents_fallback_keeps_emergency_jobs_first():
    """When the rule's own pair is not offered (fewer slots than startable pairs), the offered pair it plays
    instead is still ranked emergency first."""
    inst = Instance.build("fallback", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 1.0, 1: 1.0}]), Job("J1", [{0: 5.0, 1: 1.0}], weight=10.0)])
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, max_candidates=3)
    observation, info = env.reset(seed=0)
    agent = make("rule:SPT:EET", emergency_first=True)
    agent.reset(env)
    jobs, machines = env.unwrapped.offered_pairs()
    assert (1, 1) not in set(zip(jobs.tolist(), machines.tolist()))  # the rule's pair: J1 on its faster M1
    slot = agent.act(observation, info)
    assert (jobs[slot], machines[slot]) == (1, 0)  # the emergency job, on the machine offered


def test_without_emergency_first_the_fallback_ranks_by_the_job_rule_alone():
    """SPT's pair, J1 on its faster M1, is not offered: the agent plays J1's offered pair, as SPT ranks J1 first; only
    with emergency_first does the emergency job J0 go first."""
    inst = Instance.build("fallback", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 5.0, 1: 5.0}], weight=10.0), Job("J1", [{0: 2.0, 1: 1.0}])])
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, max_candidates=3)
    observation, info = env.reset(seed=0)
    jobs, machines = env.unwrapped.offered_pairs()
    assert (1, 1) not in set(zip(jobs.tolist(), machines.tolist()))
    for emergency_first, expected in ((False, (1, 0)), (True, (0, 0))):
        agent = make("rule:SPT:EET", emergency_first=emergency_first)
        agent.reset(env)
        slot = agent.act(observation, info)
        assert (jobs[slot], machines[slot]) == expected


@pytest.mark.parametrize("rule", ["ATC:LWL", "SPT:EET"])
def test_the_rule_agents_fallback_ranks_the_offered_jobs_in_one_kernel_call(rule: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback called the job-priority kernel once per offered job, ~11 us of argument unboxing each (and for
    ATC a pass over all jobs each): 48 % of the decisions of a 4,826-job episode, half its time. It plays the offered
    pair of the lowest priority, the first of equals, as before."""
    from dynasched_gym.agents import rules as agent_rules
    from dynasched_gym.core.rules import job_priority

    jobs = [Job(f"J{k}", [{0: 1.0 + k % 5, 1: 2.0 + k % 3}, {0: 1.0 + k % 2}], due=8.0 + k % 7) for k in range(12)]
    env = gym.make("DynaSched/DFJSP-v0", instance=Instance.build("queue", [Machine("M0"), Machine("M1")], jobs),
                   max_candidates=3)
    calls = []

    def counted(kernel):
        return lambda *args: calls.append(kernel) or kernel(*args)

    for name in ("job_priority", "job_priorities"):  # whichever the agent calls
        if hasattr(agent_rules, name):
            monkeypatch.setattr(agent_rules, name, counted(getattr(agent_rules, name)))
    observation, info = env.reset(seed=0)
    agent = make(f"rule:{rule}")
    agent.reset(env)
    fallbacks, done = 0, False
    while not done:
        sim = env.unwrapped.simulator
        offered_jobs, offered_machines = env.unwrapped.offered_pairs()
        chosen = select(sim.static, sim.state, agent.job_rule, agent.machine_rule)
        offered = chosen in set(zip(offered_jobs.tolist(), offered_machines.tolist()))
        priorities = [job_priority(sim.static, sim.state, int(j), agent.job_rule) for j in offered_jobs if j >= 0]
        slot = agent.act(observation, info)
        if not offered:
            fallbacks += 1
            assert slot == priorities.index(min(priorities))
        observation, _, done, _, info = env.step(slot)
    assert fallbacks >= 8 and len(calls) == fallbacks


@pytest.mark.parametrize("name", ["rule:SPT", "random"])
def test_a_rule_agent_plays_slot_0_when_nothing_can_start(name):
    """Every job cancelled before its release: the rule has no pair, (-1, -1), and the agent plays slot 0 (as the
    random and LLM agents do)."""
    inst = Instance.build("empty", [Machine("M0")], [Job("J0", [{0: 2.0}], release=5.0)],
                          [Event(1.0, EventType.CANCELLATION, job=0)])
    env = gym.make("DynaSched/DFJSP-v0", instance=inst)
    observation, info = env.reset(seed=0)
    agent = make(name)
    agent.reset(env)
    assert agent.act(observation, info) == 0


def test_the_random_rules_fallback_is_uniform_over_the_offered_pairs():
    """RANDOM draws among every startable pair; when its draw is not offered, it plays a uniform offered pair (it
    used to play the first)."""
    inst = Instance.build("many", [Machine("M0")], [Job(f"J{j}", [{0: 1.0}]) for j in range(60)])
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, max_candidates=3)
    agent = make("rule:RANDOM:EET", seed=0)
    observation, info = env.reset(seed=0)
    agent.reset(env)
    slots, terminated = [], False
    while not terminated:
        slots.append(agent.act(observation, info))
        observation, _, terminated, _, info = env.step(slots[-1])
    # 60 decisions, most with more startable pairs than the 3 offered: each slot is played about 1/3 of the time
    assert len(slots) == 60 and min(np.bincount(slots, minlength=3)) >= 10


def test_a_ppo_policy_trained_on_oracle_observations_is_a_clairvoyant_reference(tmp_path):
    from sb3_contrib import MaskablePPO

    from dynasched_gym.agents.policy import SlotPolicy

    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", observability="oracle")
    MaskablePPO(SlotPolicy, env, n_steps=8, batch_size=8, policy_kwargs={"hidden": 8}, device="cpu").save(
        tmp_path / "oracle.zip")
    with pytest.warns(RuntimeWarning, match="records no feature units"):
        agent = make("ppo", checkpoint=tmp_path / "oracle.zip")
    assert agent.clairvoyant and agent.name == "ppo-oracle" and agent.config()["name"] == "ppo-oracle"


def test_a_ppo_policy_of_other_candidates_is_named_not_a_bare_stop_iteration_or_key_error():
    """A policy whose candidate rows have a width no observability level gives (another env or version): make("ppo")
    raised a StopIteration with no message."""
    from gymnasium import spaces
    from sb3_contrib import MaskablePPO

    from dynasched_gym.agents.policy import SlotPolicy

    class Narrow(gym.Env):
        observation_space = spaces.Dict({"candidates": spaces.Box(-1.0, 1.0, (4, 7)),
                                         "machines": spaces.Box(-1.0, 1.0, (2, 9)),
                                         "global": spaces.Box(-1.0, 1.0, (10,)),
                                         "action_mask": spaces.Box(0, 1, (4,), np.int8)})
        action_space = spaces.Discrete(4)

    model = MaskablePPO(SlotPolicy, Narrow(), n_steps=8, batch_size=8, policy_kwargs={"hidden": 8}, device="cpu")
    with pytest.raises(ValueError, match=r"the policy's candidate rows have 7 columns, those of DynaSched/DFJSP-v0 "
                                         r"\{'concise': 13, 'full': 15, 'oracle': 18\} by observability"):
        make("ppo", checkpoint=model)

    class Other(gym.Env):  # and one without candidates: a bare KeyError 'candidates'
        observation_space = spaces.Dict({"x": spaces.Box(-1.0, 1.0, (3,))})
        action_space = spaces.Discrete(4)

    model = MaskablePPO("MultiInputPolicy", Other(), n_steps=8, batch_size=8, device="cpu")
    with pytest.raises(ValueError, match=r"the policy's observations \['x'\] have no 'candidates' block"):
        make("ppo", checkpoint=model)


def test_ppo_warns_when_played_on_another_objective():
    from dynasched_gym.agents.ppo import shipped_checkpoint

    agent = make("ppo", checkpoint=shipped_checkpoint("hard"))
    assert agent.trained_objective == "weighted_tardiness"
    with pytest.warns(RuntimeWarning, match="trained for weighted_tardiness, the env's objective is makespan"):
        agent.reset(gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", **agent.env_settings()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.reset(gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness",
                             **agent.env_settings()))


def test_ppo_warns_when_played_in_other_feature_units():
    """An env made without the policy's env_settings scales an explicit instance by its own first jobs."""
    from dynasched_gym.agents.ppo import shipped_checkpoint

    agent = make("ppo", checkpoint=shipped_checkpoint("hard"))
    with pytest.warns(RuntimeWarning, match=r"trained with features in units \(time_scale, ops_scale\)"):
        agent.reset(gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness"))
    env = gym.make("DynaSched/DFJSP-v0", tier="hard", objective="weighted_tardiness")  # a hard draw: the same units
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.reset(env)
    settings = agent.env_settings()
    settings["time_scale"] *= 1.005  # half a percent off is other units too
    with pytest.warns(RuntimeWarning, match=r"trained with features in units \(time_scale, ops_scale\)"):
        agent.reset(gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness", **settings))


def test_make_ppo_without_a_checkpoint_says_what_to_pass():
    with pytest.raises(TypeError, match=r"needs checkpoint=.*shipped_checkpoint"):
        make("ppo")
    # pathlib's "expected str, bytes or os.PathLike object, not int" named neither the argument nor the value
    with pytest.raises(TypeError, match=r"^checkpoint must be a path \(str or os.PathLike\) or a MaskablePPO, got "
                                        r"int: 5$"):
        make("ppo", checkpoint=5)


@pytest.mark.parametrize(("name", "kwargs", "message"), [
    ("lookahead", {"topk": 8}, "LookaheadAgent got an unknown argument 'topk' (did you mean 'top_k'?); its arguments "
     "are rule, rollout_rules, top_k,"),
    ("rule:EDD", {"emergency": True}, "RuleAgent got an unknown argument 'emergency' (did you mean "
     "'emergency_first'?); its arguments are rule, emergency_first, random_ties, seed (docs/agents.md)"),
    ("random", {"foo": 1}, "RandomAgent got an unknown argument 'foo'; its arguments are seed (docs/agents.md)"),
])
def test_make_names_an_unknown_argument_and_the_agents(name, kwargs, message):
    """Python's "LookaheadAgent.__init__() got an unexpected keyword argument 'topk'" named none of its arguments."""
    with pytest.raises(TypeError, match=re.escape(message)):
        make(name, **kwargs)


@pytest.mark.parametrize("name", ["lookahead2", "randomly", "ppo-old", "llm:model", "rule", "pdr", "rules:MWKR"])
def test_make_takes_only_the_registered_names_and_prefixes(name):
    """A name is one of the registry's, or starts with one of its prefixes (``rule:``, ``pdr:``)."""
    with pytest.raises(ValueError, match=f"^unknown agent '{name}'; known: rule:, pdr:, lookahead,"):
        make(name)


def test_a_rule_agents_rule_is_its_name_not_an_argument():
    """make("rule:MWKR:EET", rule="SPT") failed with Python's "got multiple values for argument 'rule'"."""
    with pytest.raises(TypeError, match=r"agent 'pdr:MWKR' names its rule: give it as pdr:SPT, not rule='SPT'"):
        make("pdr:MWKR", rule="SPT")


@pytest.mark.parametrize(("name", "hint"), [
    ("lookahed", "(did you mean 'lookahead'?)"), ("Lookahead-Oracle", "(did you mean 'lookahead-oracle'?)"),
    ("RULE:MWKR:EET", "(did you mean 'rule:MWKR:EET'?)"), ("rules:EDD", "(did you mean 'rule:EDD'?)"),
    ("pdr", "(did you mean 'pdr:<JOB>:<MACHINE>'?)"),
    # the reference package's (dsbx) agent names
    ("spt", "(did you mean 'rule:SPT:EET'?)"), ("MWKR:LWL", "(did you mean 'rule:MWKR:LWL'?)"),
    ("llm-scheduler", "(did you mean 'llm'?)"),
    ("cpsat-oracle", "(the clairvoyant CP-SAT reference plays no env and is no agent: "
                     "dynasched_gym.oracle.solve_clairvoyant(instance, objective)"),
])
def test_make_names_the_agent_an_unknown_name_is_nearest(name, hint):
    """A typo, a case variant or the leaderboard's ``cpsat-oracle`` got only the list of names."""
    with pytest.raises(ValueError, match=re.escape(f"unknown agent {name!r}; known: rule:, pdr:, lookahead, "
                                                   "lookahead-oracle, random, ppo, llm " + hint)):
        make(name)


def test_rule_agents_spell_their_rule_one_way_and_tell_their_options_apart():
    """``rule:mwkr`` is the agent ``rule:MWKR:EET`` (one config, one hash); each option gives another configuration,
    and emergency_first another name (the label of its rows)."""
    from dynasched_gym.results import config_hash

    base = make("rule:MWKR:EET")
    assert make("rule:mwkr").config() == make("pdr:Mwkr:eet").config() == base.config()
    assert make("rule:mwkr").name == base.name == "rule:MWKR:EET"
    variants = [base, make("rule:MWKR:EET", emergency_first=True), make("rule:MWKR:EET", random_ties=True),
                make("rule:MWKR:EET", seed=1), make("rule:MWKR:LWL")]
    assert len({config_hash(agent.config()) for agent in variants}) == len(variants)
    assert make("rule:EDD", emergency_first=True).name == "rule:EDD:EET:emergency"


def test_the_random_rule_is_reproducible_from_its_seed():
    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium")
    first, second = (run_episode(make("rule:RANDOM:EET", seed=3), env, seed=0).metrics for _ in range(2))
    assert first == second
    assert run_episode(make("rule:RANDOM:EET", seed=4), env, seed=0).metrics != first


def test_pair_agents_refuse_the_rule_selection_env():
    env = gym.make("DynaSched/DFJSP-Rules-v0", instance="mk02")
    with pytest.raises(ValueError, match=r"lookahead picks .* not on the rule-selection env"):
        run_episode(make("lookahead"), env, seed=0)


def test_one_rollout_rule_may_be_given_as_a_string():
    assert make("lookahead", rollout_rules="EDD").config()["rollout_rules"] == ["EDD"]


def test_lookahead_configs_spell_each_rule_one_way():
    """``rule="mwkr:eet"`` is the agent of ``rule="MWKR:EET"``: the same config, so one set of result rows and one
    leaderboard entry (the configs held the spellings given, and hashed apart). A job rule alone is ``JOB:EET`` as the
    base rule and stays alone as a rollout rule (there it takes the base rule's machine rule). Canonical spellings
    keep the config, and so the hash, that stored rows were keyed by."""
    from dynasched_gym.results import config_hash

    canonical = make("lookahead", rule="MWKR:EET", rollout_rules=["MWKR", "FIFO:LIT"]).config()
    assert config_hash(canonical) == "cee06abe37607a11"  # as before the spellings were normalised
    assert config_hash(make("lookahead").config()) == "c7b4d7579e89869b"
    for rule, rollouts in (("mwkr:eet", ["mwkr", "fifo:lit"]), ("MWKR", ["Mwkr", "FIFO:lit"]),
                           ("Mwkr:Eet", ("MWKR", "fifo:LIT"))):
        assert make("lookahead", rule=rule, rollout_rules=rollouts).config() == canonical
    assert make("lookahead-oracle", rollout_rules="edd:eet").config()["rollout_rules"] == ["EDD:EET"]
    with pytest.raises(ValueError, match="unknown rule 'edd:'"):  # a colon and no machine rule: not read as EET
        make("lookahead-oracle", rollout_rules="edd:")


def test_complementary_rules_cover_the_instances_greedily():
    values = {"A": np.array([5.0, 5.0, 5.0]), "B": np.array([1.0, 9.0, 9.0]), "C": np.array([9.0, 1.0, 9.0]),
              "D": np.array([9.0, 9.0, 0.0]), "E": np.array([5.0, 5.0, 5.0])}
    # A has the lowest mean (5, tied with E: the earlier wins); D lowers the mean lowest most (to 10/3),
    # then B (to 2, tied with C: the earlier wins) and C (2/3), although each alone is worse than A
    assert complementary_rules(values, 1) == ["A"]
    assert complementary_rules(values, 4) == ["A", "D", "B", "C"]
    with pytest.raises(ValueError, match=r"count must be in 1\.\.5"):
        complementary_rules(values, 0)


def test_complementary_rules_and_rule_objectives_refuse_what_they_cannot_rank():
    """A NaN (a rule without a value) won the first argmin and was chosen as the best rule; count=True was 1, and
    rule_objectives(..., "Makespan") a bare KeyError."""
    from dynasched_gym.agents.rules import rule_objectives

    with pytest.raises(ValueError, match=r"a finite objective of every rule on every instance; A: array\(\[nan"):
        complementary_rules({"A": np.array([np.nan, 1.0]), "B": np.array([0.5, 0.5])}, 1)
    with pytest.raises(ValueError, match=r"count must be in 1\.\.2 \(the number of rules\), got True"):
        complementary_rules({"A": np.array([1.0]), "B": np.array([0.5])}, True)
    with pytest.raises(ValueError, match=r"objective must be one of .* got 'Makespan' \(did you mean 'makespan'\?\)"):
        rule_objectives([load_instance(data.path("mk01"))], "Makespan")


def test_agent_misuse_gets_a_clear_error():
    from dynasched_gym.agents.ppo import shipped_checkpoint

    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    observation, info = env.reset(seed=0)
    with pytest.raises(AttributeError, match=r"call agent\.reset\(env\)"):
        make("lookahead").act(observation, info)
    flat = gym.wrappers.FlattenObservation(env)
    flat.reset(seed=0)
    with pytest.raises(ValueError, match=r"reads the Dict observations .* got Box"):
        make("ppo", checkpoint=shipped_checkpoint("hard")).reset(flat)


def test_lookahead_takes_a_clairvoyant_argument_that_matches_its_name():
    """``make`` passed ``clairvoyant`` twice: a documented argument raised TypeError."""
    assert not make("lookahead", clairvoyant=False).clairvoyant
    assert make("lookahead-oracle", clairvoyant=True).clairvoyant


def test_numpy_integer_settings_hash_as_the_python_integers():
    """An agent given ``np.int64(16)`` is the agent given 16: same config, same result rows (the hash read the
    NumPy value as the string "16")."""
    from dynasched_gym.results import config_hash

    for name, key, value in (("lookahead", "top_k", 8), ("rule:RANDOM:EET", "seed", 3), ("random", "seed", 3)):
        given = make(name, **{key: np.int64(value)}).config()
        assert config_hash(given) == config_hash(make(name, **{key: value}).config())
        assert type(given[key]) is int
    assert config_hash({"k": np.float64(0.5)}) == config_hash({"k": 0.5})


@pytest.mark.parametrize(("name", "key"), [("rule:EDD", "emergency_first"), ("rule:EDD", "random_ties"),
                                           ("lookahead-oracle", "clairvoyant")])
def test_numpy_bool_settings_are_kept_as_python_bools(name, key):
    """``np.True_`` (a setting read from an array) was kept as given: ``json.dumps(agent.config())`` raised "Object
    of type bool is not JSON serializable"."""
    import json

    agent = make(name, **{key: np.True_})
    assert type(agent.config()[key]) is bool and type(getattr(agent, key)) is bool
    assert json.loads(json.dumps(agent.config()))[key] is True


def test_a_config_value_without_a_fixed_json_form_is_refused_not_hashed_by_its_str():
    """An object's str() may hold its memory address (or a set its process's order): the agent's hash, and so its
    rows, would differ from run to run. Paths and sets have a fixed form; anything else is a TypeError."""
    from pathlib import Path

    from dynasched_gym.results import config_hash

    assert config_hash({"k": Path("a/b.zip")}) == config_hash({"k": "a/b.zip"})
    assert config_hash({"k": {"b", "a", "c"}}) == config_hash({"k": ["a", "b", "c"]})
    assert config_hash({"k": frozenset({2, "x"})}) == config_hash({"k": ["x", 2]})  # by their JSON: '"x"' < '2'
    with pytest.raises(TypeError, match=r"a config holds a object \(<object object at"):
        config_hash({"k": object()})


def test_random_rule_agents_keep_their_own_streams_when_played_side_by_side():
    """The kernels' random stream is one per process: two RANDOM agents stepped in turn drew from each other's
    (agent 0 scored 54 on mk01 beside another, 63 alone). Each now plays as alone, as ``rollout(seed)`` does."""
    inst = load_instance(data.path("mk01"))
    envs = [gym.make("DynaSched/FJSP-v0", instance=inst, max_candidates=512) for _ in range(2)]
    agents = [make("rule:RANDOM:EET", seed=0), make("rule:SPT:EET", random_ties=True, seed=1)]
    steps = [list(env.reset(seed=0)) for env in envs]
    for agent, env in zip(agents, envs):
        agent.reset(env)
    done = [False, False]
    while not all(done):
        for i, (agent, env) in enumerate(zip(agents, envs)):
            if not done[i]:
                observation, _, done[i], _, info = env.step(agent.act(*steps[i]))
                steps[i] = [observation, info]
    side_by_side = [env.unwrapped.schedule().metrics for env in envs]  # before run_episode resets the envs
    alone = [run_episode(make("rule:RANDOM:EET", seed=0), envs[0], seed=0),
             run_episode(make("rule:SPT:EET", random_ties=True, seed=1), envs[1], seed=0)]
    assert side_by_side == [schedule.metrics for schedule in alone]
    assert alone[0].metrics == rollout(inst, rule="RANDOM:EET", seed=0).metrics


def test_the_rule_selection_env_refuses_rule_agent_options_it_cannot_apply():
    """It plays its composite rules as they are: emergency_first and random_ties were silently ignored."""
    env = gym.make("DynaSched/DFJSP-Rules-v0", instance="dsbx-medium", objective="weighted_tardiness")
    for option in ("emergency_first", "random_ties"):
        with pytest.raises(ValueError, match="emergency_first and random_ties cannot apply there"):
            run_episode(make("rule:MWKR:EET", **{option: True}), env, seed=1)


def test_the_rule_selection_env_refuses_a_random_rule_agents_seed_it_cannot_apply():
    """Its RANDOM rule draws from the env's stream: rule:RANDOM with seeds 1, 2 and 3 played one episode (under three
    configs, so three agents on a board)."""
    env = gym.make("DynaSched/DFJSP-Rules-v0", instance="dsbx-medium", objective="weighted_tardiness")
    with pytest.raises(ValueError, match=r"the agent's seed=3 cannot apply there; leave it 0"):
        run_episode(make("rule:RANDOM:EET", seed=3), env, seed=1)
    assert run_episode(make("rule:RANDOM:EET"), env, seed=1).finished
    assert run_episode(make("rule:EDD:EET", seed=3), env, seed=1).finished  # a deterministic rule draws nothing


@pytest.mark.parametrize(("name", "kwargs"), [("random", {}), ("rule:RANDOM", {}), ("rule:SPT", {}), ("lookahead", {}),
                                            ("lookahead", {"futures": 1, "future_tier": "easy"})],
                         ids=["random", "rule:RANDOM", "rule:SPT", "lookahead", "lookahead-futures"])
def test_random_agents_play_an_episode_with_no_decision(name, kwargs):
    """Every job cancelled before its release: the reset mask is all zeros and the first step ends the episode (the
    random agent raised on the empty choice, and so did the RANDOM rule: 'empty range for randrange()'; the
    lookahead with sampled futures took the stale first pair of its buffers and failed on 'min() arg is an empty
    sequence')."""
    inst = Instance.build("empty", [Machine("M0")], [Job("J0", [{0: 2.0}], release=5.0)],
                          [Event(1.0, EventType.CANCELLATION, job=0)])
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, invalid_action="raise")
    schedule = run_episode(make(name, **kwargs), env, seed=0)
    assert schedule.finished and schedule.metrics["num_cancelled_jobs"] == 1


def test_random_agent_plays_flattened_observations_as_the_dict_ones():
    """It indexed the flat vector with "action_mask" (an IndexError); the rule agents already played it."""
    from dynasched_gym.envs.wrappers import FlattenDictObservation

    flat = run_episode(make("random"), FlattenDictObservation(gym.make("DynaSched/DFJSP-v0", instance="mk01")), seed=3)
    plain = run_episode(make("random"), gym.make("DynaSched/DFJSP-v0", instance="mk01"), seed=3)
    assert validate_schedule(flat).ok and flat.metrics == plain.metrics


def test_ppo_play_uses_and_checks_the_trained_objective(monkeypatch):
    """``play`` defaulted to weighted tardiness whatever the policy was trained for, without the warning ``reset``
    gives."""
    from dynasched_gym.agents.ppo import shipped_checkpoint
    from dynasched_gym.generation import tier_pool

    agent = make("ppo", checkpoint=shipped_checkpoint("hard"))
    instances = [tier_pool("hard", "small").instance(0)]
    agent.trained_objective = "makespan"  # as a policy trained for makespan records it
    made, make_vec = [], gym.make_vec
    monkeypatch.setattr(gym, "make_vec", lambda *args, **kwargs: (made.append(kwargs["objective"]),
                                                                   make_vec(*args, **kwargs))[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert agent.play(instances)[0].finished
    assert made == ["makespan"]
    with pytest.warns(RuntimeWarning, match="trained for makespan, the env's objective is weighted_tardiness"):
        agent.play(instances, "weighted_tardiness")


def test_rollout_rules_of_forecasts_and_llm_tables_must_be_deterministic():
    """RANDOM rollouts drew from the shared, unseeded kernel stream: forecasts and training did not repeat."""
    from dynasched_gym.agents.llm import LLMAgent
    from dynasched_gym.envs.wrappers import ForecastFeatures, ForecastReward

    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    with pytest.raises(ValueError, match="forecast rules take deterministic rules only"):
        ForecastFeatures(env, ("EDD:EET", "RANDOM:EET"))
    with pytest.raises(ValueError, match="forecast reward rules take deterministic rules only"):
        ForecastReward(env, "RANDOM")
    with pytest.raises(ValueError, match="prune_rules: ranking and rollout rules take deterministic rules only"):
        LLMAgent("model", prune_rules=["RANDOM"])


@pytest.mark.parametrize(("name", "module", "extra"), [("ppo", "torch", "rl"), ("llm", "openai", "llm")])
def test_an_agent_without_its_extra_names_the_install(monkeypatch, name, module, extra):
    for loaded in [m for m in sys.modules if m.startswith(("dynasched_gym.agents.ppo", "dynasched_gym.agents.policy",
                                                           "dynasched_gym.agents.llm"))]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(MissingExtraError, match=rf"pip install 'dynasched-gym\[{extra}\]'") as caught:
        make(name)
    assert caught.value.name == module


def test_a_missing_module_of_the_package_is_no_missing_extra():
    """needs_extra names the extra for a third-party module only: a missing submodule of the package is a bug."""
    from dynasched_gym.errors import needs_extra

    with pytest.raises(ModuleNotFoundError) as caught, needs_extra("viz", "drawing"):
        importlib.import_module("dynasched_gym.gone")
    assert type(caught.value) is ModuleNotFoundError


def test_run_episode_names_a_wrong_agent_or_env():
    """A name for the agent, or an instance name or a vector env for the env, failed with an AttributeError or a
    message about action shapes."""
    env = gym.make("DynaSched/FJSP-v0")
    with pytest.raises(TypeError, match=r"agent must be an Agent .*got str: 'random'"):
        run_episode("random", env)
    with pytest.raises(TypeError, match=r"env must be a single DynaSched gymnasium env .*got str: 'mk01'"):
        run_episode(make("random"), "mk01")
    venv = gym.make_vec("DynaSched/FJSP-v0", num_envs=2, vectorization_mode="vector_entry_point")
    with pytest.raises(TypeError, match=r"env must be a single .*not gym.make_vec"):
        run_episode(make("random"), venv)
    for name in ("random", "rule:MWKR:EET"):  # NumPy's IndexError, an AttributeError about 'simulator'
        with pytest.raises(TypeError, match=r"Agent needs a DynaSched env .*got .*CartPole"):
            run_episode(make(name), gym.make("CartPole-v1"))


def test_run_episode_warns_when_a_wrapper_truncates_the_episode():
    """Under a TimeLimit the episode stops early: the schedule is unfinished and its metrics were all 0 (no job had
    completed), returned without a word, so they read as a perfect result. It now warns, naming the step count and
    the jobs left; an episode that ends on the limit's last step is finished and plays on silently."""
    with pytest.warns(TruncatedEpisodeWarning, match=r"ended after 5 steps with 10 of 10 jobs unfinished \(truncated: "
                                                       r"a TimeLimit.*schedule.finished is False"):
        schedule = run_episode(make("rule:SPT"), gym.make("DynaSched/DFJSP-v0", instance="mk01",
                                                          max_episode_steps=5), seed=0)
    assert not schedule.finished and schedule.metrics["makespan"] == 0.0 and schedule.decisions == 5
    with pytest.warns(TruncatedEpisodeWarning, match=r"ended after 3 steps"):
        run_episode(make("random"), gym.wrappers.TimeLimit(gym.make("DynaSched/DFJSP-v0", instance="mk01"), 3))
    full = gym.make("DynaSched/DFJSP-v0", instance="mk01", max_episode_steps=55)  # mk01: 55 operations, 55 steps
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncatedEpisodeWarning)
        assert run_episode(make("rule:SPT"), full, seed=0).finished


def test_the_random_agent_plays_only_offered_slots_and_restarts_its_stream_at_each_reset():
    """Under ``invalid_action="raise"`` a padding slot would raise (the default env replaces it silently); one agent
    played twice is the agent played once, and a fresh agent of its seed."""
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", invalid_action="raise")
    agent = make("random", seed=5)
    first, second = (run_episode(agent, env, seed=0).metrics for _ in range(2))
    assert first == second == run_episode(make("random", seed=5), env, seed=0).metrics
    assert run_episode(make("random", seed=6), env, seed=0).metrics != first


def test_the_truncation_warning_counts_only_the_jobs_still_open():
    """A job completed by the limit is no unfinished job: mk01 under SPT has completed 7 of its 10 jobs by step 50."""
    with pytest.warns(TruncatedEpisodeWarning, match=r"ended after 50 steps with 3 of 10 jobs unfinished"):
        schedule = run_episode(make("rule:SPT"), gym.make("DynaSched/DFJSP-v0", instance="mk01",
                                                          max_episode_steps=50), seed=0)
    assert np.count_nonzero(np.isnan(schedule.job_completion)) == 3


def test_the_fallback_may_play_job_0():
    """SPT's pair, J1 on M1 (its only machine), is not among the 2 slots, which offer J0 alone: the agent plays J0's
    first offered pair (job 0 is a job like any other, not the padding slots' -1)."""
    inst = Instance.build("fallback", [Machine("M0"), Machine("M1")], [Job("J0", [{0: 5.0, 1: 5.0}]),
                                                                       Job("J1", [{1: 1.0}])])
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, max_candidates=2)
    observation, info = env.reset(seed=0)
    jobs, machines = env.unwrapped.offered_pairs()
    assert (jobs.tolist(), machines.tolist()) == ([0, 0], [0, 1])
    agent = make("rule:SPT:EET")
    agent.reset(env)
    assert agent.act(observation, info) == 0


def test_rule_objectives_roll_out_every_rule_on_the_objective_asked():
    from dynasched_gym.agents.rules import rule_names, rule_objectives

    inst = load_instance(data.path("mk01"))
    for objective, key in (("makespan", "makespan"), ("flow_time", "mean_flow_time")):
        values = rule_objectives([inst, inst], objective)
        assert list(values) == rule_names()
        np.testing.assert_array_equal(values["SPT:EET"], [rollout(inst, rule="SPT:EET").metrics[key]] * 2)


def test_rule_objectives_validate_each_schedule_when_asked(monkeypatch):
    from dynasched_gym.agents import rules as agent_rules

    class Invalid:
        ok = False

    monkeypatch.setattr(agent_rules, "validate_schedule", lambda schedule: Invalid())
    instances = [load_instance(data.path("mk01"))]
    assert agent_rules.rule_objectives(instances)  # unchecked: no schedule goes to the validator
    first = re.escape(agent_rules.rule_names()[0])
    with pytest.raises(RuntimeError, match=rf"rule {first} produced an invalid schedule on mk01"):
        agent_rules.rule_objectives(instances, validate=True)


def test_complementary_rules_choose_each_rule_once():
    """Once the rules chosen hold the lowest objective on every instance, no other rule lowers the mean: every rule
    tied, and the first, already chosen, was chosen again (``["A", "A", "A"]``). The rest now come in their order."""
    values = {"A": np.array([1.0, 2.0]), "B": np.array([3.0, 3.0]), "C": np.array([2.0, 3.0])}
    assert complementary_rules(values, 3) == ["A", "B", "C"]


def test_a_lookahead_plays_its_own_objective_on_an_env_of_another():
    """``objective="makespan"`` picks makespan's defaults (base rule and rollouts) and values the rollouts by the
    makespan, whatever the env's objective: it plays as on a makespan env."""
    agent = LookaheadAgent(objective="makespan", top_k=2)
    played = run_episode(agent, gym.make("DynaSched/DFJSP-v0", instance="mk01", objective="weighted_tardiness"), seed=0)
    assert (agent.job_rule, agent.machine_rule) == parse_rule("MWKR:EET")
    alike = run_episode(LookaheadAgent(top_k=2), gym.make("DynaSched/DFJSP-v0", instance="mk01", objective="makespan"),
                        seed=0)
    np.testing.assert_array_equal(played.segment_start, alike.segment_start)


def test_a_rollout_job_rule_alone_takes_the_base_rules_machine_rule():
    agent = LookaheadAgent(rule="EDD:LWL", rollout_rules=["ATC"])
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    env.reset(seed=0)
    agent.reset(env)
    assert agent.rollout_rules.tolist() == [list(parse_rule("ATC:LWL"))]


def test_a_lookahead_samples_its_futures_from_each_envs_tier():
    """Its sampled futures are kept over resets while the env's tier stays, and follow it when it changes."""
    agent = LookaheadAgent(futures=1)
    for tier in ("easy", "medium", "easy"):
        env = gym.make("DynaSched/DFJSP-v0", instance="mk01", tier=tier)
        env.reset(seed=0)
        agent.reset(env)
        assert agent._futures.tier == tier


def test_a_sampled_lookahead_of_one_candidate_plays_the_base_rules_first_pair():
    """With ``top_k=1`` there is nothing to compare: it plays the ranking's first pair, as the plain lookahead does,
    whatever the futures."""
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", tier="easy", objective="makespan")
    sampled = run_episode(LookaheadAgent(top_k=1, futures=1), env, seed=0)
    plain = run_episode(LookaheadAgent(top_k=1), env, seed=0)
    np.testing.assert_array_equal(sampled.segment_start, plain.segment_start)
    np.testing.assert_array_equal(sampled.segment_machine, plain.segment_machine)
