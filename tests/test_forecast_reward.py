"""Forecast rewards: returns telescope to the objective, the vector wrapper equals the single one, no future is read."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import instances

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym.agents.rules import RuleAgent
from dynasched_gym.envs.wrappers import ForecastReward, ForecastRewardVector
from dynasched_gym.generation import tier_pool
from dynasched_gym.instance import Event, EventType, Instance, Job, Machine

OBJECTIVES = ("makespan", "tardiness", "weighted_tardiness", "flow_time")
METRICS = {"makespan": "makespan", "tardiness": "total_tardiness",
           "weighted_tardiness": "total_weighted_tardiness", "flow_time": "mean_flow_time"}


def _random_action(rng: np.random.Generator, mask: np.ndarray) -> int:
    """A uniformly random offered slot; 0 when nothing is offered (the episode has ended)."""
    offered = np.flatnonzero(mask)
    return int(rng.choice(offered)) if offered.size else 0


def _play(env: gym.Env, seed: int) -> tuple[list[float], dict, float]:
    """Random valid actions to the end: the rewards, the final info and the first forecast."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    first = env.get_wrapper_attr("_phi")
    rewards, done, info = [], False, {}
    while not done:
        action = _random_action(rng, env.get_wrapper_attr("action_masks")())
        _, reward, done, _, info = env.step(action)
        rewards.append(reward)
    return rewards, info, first


@settings(max_examples=40, deadline=None)
@given(inst=instances(max_jobs=6, max_machines=3, max_events=10), objective=st.sampled_from(OBJECTIVES),
       rule=st.sampled_from(["EDD:EET", "SPT:LWL", "ATC:LIT", ("EDD:EET", "SPT:LWL", "ATC:LIT")]),
       hindsight=st.booleans(), seed=st.integers(0, 1000))
def test_returns_telescope_to_the_final_objective(inst, objective, rule, hindsight, seed):
    env = ForecastReward(gym.make("DynaSched/DFJSP-v0", instance=inst, objective=objective, reward_scale=0.5), rule,
                         hindsight)
    rewards, info, first = _play(env, seed)
    assert sum(rewards) == pytest.approx(-0.5 * (info["metrics"][METRICS[objective]] - first), abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(inst=instances(max_jobs=6, max_machines=3, max_events=10), rule=st.sampled_from(["EDD:EET", "SPT:LWL"]))
def test_with_hindsight_the_rule_playing_itself_earns_nothing(inst, rule):
    """The hindsight forecast replays the real future, so the rule's own play never changes it, events or not."""
    env = ForecastReward(gym.make("DynaSched/DFJSP-v0", instance=inst, objective="tardiness"), rule, hindsight=True)
    agent = RuleAgent(rule)
    obs, info = env.reset(seed=0)
    agent.reset(env)
    first, done = env.get_wrapper_attr("_phi"), False
    while not done:
        obs, reward, done, _, info = env.step(agent.act(obs, info) if env.unwrapped.action_masks().any() else 0)
        assert reward == pytest.approx(0.0, abs=1e-9)
        assert math.copysign(1.0, reward) == 1.0 or reward != 0.0  # no -0.0 for an unchanged forecast
    assert info["metrics"]["total_tardiness"] == pytest.approx(first)


def test_the_rule_forecasting_itself_is_rewarded_only_for_surprises():
    """Without events or arrivals the rule's own play never changes its forecast: every reward is 0."""
    jobs = [Job(f"J{i}", [{0: 2.0 + i, 1: 3.0}, {1: 1.0 + i}], due=4.0, weight=1.0 + i) for i in range(4)]
    inst = Instance.build("static", [Machine("M0"), Machine("M1")], jobs)
    env = ForecastReward(gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness"), "EDD:EET")
    agent = RuleAgent("EDD:EET")
    obs, info = env.reset(seed=0)
    agent.reset(env)
    rewards, done = [], False
    while not done:
        obs, reward, done, _, info = env.step(agent.act(obs, info))
        rewards.append(reward)
    assert info["metrics"]["total_weighted_tardiness"] > 0
    assert rewards == pytest.approx([0.0] * len(rewards))


def test_forecast_reads_future_events_only_with_hindsight():
    """A breakdown announced for later changes the first forecast only when the forecast may see the future."""
    def first_forecast(with_breakdown: bool, hindsight: bool = False) -> float:
        events = [Event(1.0, EventType.BREAKDOWN, machine=0, duration=50.0)] if with_breakdown else []
        inst = Instance.build("future", [Machine("M0"), Machine("M1")],
                              [Job("J0", [{0: 2.0, 1: 9.0}]), Job("J1", [{0: 2.0}], release=5.0)], events,
                              breakdown_policy="restart")
        env = ForecastReward(gym.make("DynaSched/DFJSP-v0", instance=inst, objective="makespan"), "SPT:EET",
                             hindsight)
        env.reset(seed=0)
        return env.get_wrapper_attr("_phi")

    assert first_forecast(True) == first_forecast(False) == 2.0
    assert first_forecast(False, hindsight=True) == 7.0  # J1 arrives at 5 and takes 2 on M0
    assert first_forecast(True, hindsight=True) > 7.0


@settings(max_examples=25, deadline=None)
@given(inst=instances(max_jobs=6, max_machines=3, max_events=10), hindsight=st.booleans(), seed=st.integers(0, 1000))
def test_several_rules_forecast_the_lowest_of_their_forecasts(inst, hindsight, seed):
    """With several rules the potential after every step is the minimum of each rule's own potential."""
    rules = ("EDD:EET", "SPT:LWL", "LWKR:LIT")

    def make(rule: str | tuple[str, ...]) -> ForecastReward:
        return ForecastReward(gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness"), rule,
                              hindsight)

    joint, singles = make(rules), [make(rule) for rule in rules]
    for env in (joint, *singles):
        env.reset(seed=seed)
    rng, done = np.random.default_rng(seed), False
    while True:
        phis = [env.get_wrapper_attr("_phi") for env in singles]
        assert joint.get_wrapper_attr("_phi") == min(phis)
        if done:
            break
        action = _random_action(rng, joint.get_wrapper_attr("action_masks")())
        done = joint.step(action)[2]
        for env in singles:
            env.step(action)
    assert joint.potential_rules == rules


def test_a_forecast_reward_needs_a_rule():
    with pytest.raises(ValueError, match="at least one rule"):
        ForecastReward(gym.make("DynaSched/DFJSP-v0", instance="mk01"), [])


@pytest.mark.parametrize(("mode", "hindsight", "rule", "objective", "scale"), [
    ("SameStep", False, "ATC:EET", "weighted_tardiness", 1.0),
    ("NextStep", False, "ATC:EET", "weighted_tardiness", 1.0),
    ("SameStep", True, "ATC:EET", "weighted_tardiness", 1.0),
    ("SameStep", True, ("ATC:EET", "EDD:LWL"), "weighted_tardiness", 1.0),
    # weighted tardiness rewards are mostly 0 (23 of 900 here): these change on most steps, the first ones of an
    # episode too, and their scale is no power of 2
    ("SameStep", False, "ATC:EET", "makespan", 0.3), ("NextStep", False, "EDD:LWL", "flow_time", 0.3)])
def test_vector_rewards_equal_the_single_env_rewards(mode, hindsight, rule, objective, scale, tmp_path, monkeypatch):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    inst = tier_pool("medium", "small").instance(3)  # arrivals, breakdowns and due-date changes
    num_envs, steps = 3, 300
    venv = ForecastRewardVector(gym.make_vec("DynaSched/DFJSP-v0", num_envs=num_envs, instance=inst,
                                             vectorization_mode="vector_entry_point", autoreset_mode=mode,
                                             objective=objective, reward_scale=scale), rule, hindsight)
    singles = [ForecastReward(gym.make("DynaSched/DFJSP-v0", instance=inst, objective=objective, reward_scale=scale),
                              rule, hindsight) for _ in range(num_envs)]
    venv.reset(seed=0)
    for env in singles:
        env.reset(seed=0)
    rng = np.random.default_rng(0)
    restart = np.zeros(num_envs, dtype=bool)  # NextStep: the vector env resets on the step after the end
    checked = ended = changed = 0
    for _ in range(steps):
        masks = venv.action_masks()
        actions = np.array([_random_action(rng, row) for row in masks])
        _, rewards, terminated, _, _ = venv.step(actions)
        changed += np.count_nonzero(rewards)
        for i, env in enumerate(singles):
            if restart[i]:
                env.reset(seed=0)
                assert rewards[i] == 0.0
                continue
            _, reward, done, _, _ = env.step(int(actions[i]))
            # float(): approx compares a NumPy float32 in float32, where float32 rewards passed as equal
            assert float(rewards[i]) == pytest.approx(reward, rel=1e-12, abs=1e-12)
            assert terminated[i] == done
            checked += 1
            if done and mode == "SameStep":
                env.reset(seed=0)
        ended += int(terminated.sum())
        restart = terminated if mode == "NextStep" else restart
    assert checked > steps and ended >= num_envs  # every env stepped, episodes ended and restarted on the way
    assert changed > (0 if objective == "weighted_tardiness" else steps)
    assert venv.potential_rules == ((rule,) if isinstance(rule, str) else rule)


def test_disabled_autoreset_is_refused():
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, instance="mk01", vectorization_mode="vector_entry_point",
                        autoreset_mode="Disabled")
    with pytest.raises(ValueError, match="DISABLED"):
        ForecastRewardVector(venv)


def test_a_partial_reset_keeps_the_pending_autoreset_of_the_other_envs():
    venv = ForecastRewardVector(gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, instance="mk01",
                                             vectorization_mode="vector_entry_point"), rule="SPT:EET")
    venv.reset(seed=0, options={"instance": ["mk01", "mk02"]})
    terminated = np.zeros(2, dtype=bool)
    while not terminated.any():
        _, _, terminated, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    assert list(terminated) == [True, False]
    venv.reset(options={"reset_mask": ~terminated})  # sub-env 0 is left to its NEXT_STEP autoreset
    _, rewards, _, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    assert rewards[0] == 0.0  # the autoreset step, not the jump between two episodes' forecasts


def test_a_reset_by_hand_before_the_autoreset_step_is_a_new_episode_from_its_first_step():
    """NEXT_STEP: an env that ended and is then reset by hand takes a real step next, not the autoreset step; its
    reward is the forecast's change (it was taken for the autoreset step's 0, the forecast read after the step)."""
    venv = ForecastRewardVector(gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, instance="mk01", objective="makespan",
                                             vectorization_mode="vector_entry_point"), rule="SPT:EET")
    single = ForecastReward(gym.make("DynaSched/DFJSP-v0", instance="mk01", objective="makespan"), rule="SPT:EET")
    venv.reset(seed=0)
    terminated = np.zeros(2, dtype=bool)
    while not terminated.all():
        _, _, terminated, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    venv.reset(seed=0)
    single.reset(seed=0)
    rng, rewards = np.random.default_rng(0), []
    for _ in range(10):
        action = _random_action(rng, venv.action_masks()[0])
        _, vector_rewards, _, _, _ = venv.step(np.array([action, action]))
        rewards.append(single.step(action)[1])
        assert float(vector_rewards[0]) == float(vector_rewards[1]) == pytest.approx(rewards[-1], rel=1e-12, abs=1e-12)
    assert rewards[0] != 0.0


def test_an_autoreset_below_the_wrapper_starts_the_next_episode_at_no_reward():
    """Under ``ForecastReward(Autoreset(env))`` the step after an episode's end resets it: that step earned the
    final objective minus the next episode's first forecast (a large bogus reward), and the next episode's return
    no longer telescoped."""
    inst = tier_pool("hard", "small").instance(0)
    env = ForecastReward(gym.wrappers.Autoreset(gym.make("DynaSched/DFJSP-v0", instance=inst,
                                                         objective="tardiness")), "EDD:EET")
    env.reset(seed=0)
    returns, total, rewards_after_end, ended = [], 0.0, [], False
    while len(returns) < 2:
        _, reward, terminated, _, info = env.step(0)
        if ended:
            rewards_after_end.append(reward)
        total += reward
        ended = terminated
        if terminated:
            returns.append((total, info["metrics"]["total_tardiness"]))
            total = 0.0
    assert rewards_after_end == [0.0]
    (first, objective), (second, again) = returns  # the same instance and play: the same forecasts and return
    assert objective > 0 and again == objective and second == pytest.approx(first, abs=1e-9)
