"""Rollout forecasts as observation features: ForecastFeatures, its vector version and the PPO agent."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import instances

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym.core.compiled import JOB_CANCELLED, JOB_COMPLETED, allocate_state
from dynasched_gym.core.lookahead import pair_value
from dynasched_gym.core.rules import parse_rule
from dynasched_gym.envs.dfjsp.episodes import known_scales
from dynasched_gym.envs.dfjsp.features import BIG
from dynasched_gym.envs.futures import SampledFutures
from dynasched_gym.envs.sb3 import make_sb3_vec_env
from dynasched_gym.envs.wrappers import (
    FORECASTS_KEY,
    HINDSIGHT_KEY,
    FlattenDictObservation,
    ForecastFeatures,
    ForecastFeaturesVector,
    SlotForecaster,
)
from dynasched_gym.generation import tier_pool
from dynasched_gym.instance import Event, EventType, Instance, Job, Machine
from dynasched_gym.metrics import OBJECTIVE_METRICS, OBJECTIVES, compute_metrics

RULES = ("EDD:EET", "SPT:LWL")


def test_atc_forecasts_read_nothing_of_a_later_job():
    """After A, the rollout's ATC picks between B and D; a job released later with a huge operation, in the
    instance but forgotten by the rollouts, must not change that choice through ATC's look-ahead scale."""
    now = [Job("A", [{0: 1.0}], due=100.0), Job("B", [{0: 2.0}], due=20.0), Job("D", [{0: 4.0}], due=5.0)]
    later = Job("C", [{0: 10_000.0}], release=50.0, due=60_000.0)
    first = []
    for jobs in (now, [*now, later]):
        env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=Instance.build("atc", [Machine("M0")], jobs),
                                        objective="weighted_tardiness", time_scale=1.0), ("ATC:EET",))
        first.append(env.reset(seed=0)[0][FORECASTS_KEY])
    np.testing.assert_array_equal(first[0], first[1])


@settings(max_examples=30, deadline=None)
@given(inst=instances(max_jobs=6, max_machines=3, max_events=10), objective=st.sampled_from(OBJECTIVES),
       seed=st.integers(0, 1000), hindsight=st.booleans())
def test_each_column_is_a_pair_rollout(inst, objective, seed, hindsight):
    """Column 2r + 1 x tau + objective so far (of the jobs completed, by the metrics' definition) is the pair's
    rollout value under rule r (the future forgotten, or with ``hindsight`` played as the lookahead-oracle's are);
    2r its gap to the best."""
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=inst, objective=objective), RULES,
                           hindsight=hindsight)
    key = HINDSIGHT_KEY if hindsight else FORECASTS_KEY
    assert set(env.observation_space.spaces) - set(env.env.observation_space.spaces) == {key}
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    sim = env.unwrapped.simulator
    tau = known_scales(inst)[0]
    assert env.unwrapped.time_scale == pytest.approx(tau)
    scratch = allocate_state(sim.static)
    codes = np.array([parse_rule(r) for r in RULES], dtype=np.int64)
    done, checked = False, 0
    while not done:
        forecasts = observation[key]
        jobs, machines = env.unwrapped.offered_pairs()
        valid = jobs >= 0
        assert np.array_equal(valid, observation["action_mask"].astype(bool))
        assert not forecasts[~valid].any()
        if not valid.any():  # the instance ended at reset (e.g. every job cancelled at time 0)
            assert checked == 0 and env.unwrapped.simulator.done
            return
        state, empty = sim.state, np.empty(0)
        completion = np.where(state.job_status == JOB_COMPLETED, state.job_completion, np.nan)
        so_far = compute_metrics(sim.static.job_release, state.job_due, state.job_weight, completion,
                                 state.job_status == JOB_CANCELLED, empty, empty, empty, empty,
                                 len(sim.static.machine_speed))[OBJECTIVE_METRICS[objective]]
        for r in range(len(RULES)):
            values = np.array([pair_value(sim.static, sim.state, scratch, j, m, codes[r:r + 1],
                                          OBJECTIVES.index(objective), hindsight, -1)[0]
                               for j, m in zip(jobs[valid], machines[valid])])
            assert forecasts[valid, 2 * r] == pytest.approx((values - values.min()) / tau, rel=1e-5, abs=1e-5)
            assert forecasts[valid, 2 * r].min() == 0.0
            level = forecasts[valid, 2 * r + 1] * tau
            np.testing.assert_allclose(values - level, so_far, rtol=1e-6, atol=1e-3)
            checked += 1
        observation, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(valid))))
    assert checked >= len(RULES)  # at least one decision was checked under every rule


def test_forecasts_do_not_see_the_future_and_hindsight_ones_do():
    """A breakdown and an arrival announced for later leave the first forecasts unchanged, not the hindsight ones."""
    def first_forecasts(with_future: bool, hindsight: bool = False) -> np.ndarray:
        events = [Event(1.0, EventType.BREAKDOWN, machine=0, duration=50.0)] if with_future else []
        jobs = [Job("J0", [{0: 2.0, 1: 9.0}], due=3.0), Job("J1", [{0: 4.0, 1: 3.0}], due=4.0)]
        if with_future:
            jobs.append(Job("J2", [{0: 2.0}], release=2.0, due=3.0, weight=10.0))
        inst = Instance.build("future", [Machine("M0"), Machine("M1")], jobs, events)
        env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness",
                                        time_scale=1.0), RULES, hindsight=hindsight)
        observation, _ = env.reset(seed=0)
        return observation[HINDSIGHT_KEY if hindsight else FORECASTS_KEY]

    without, with_future = first_forecasts(False), first_forecasts(True)
    assert without.any()  # the pairs' rollouts differ
    np.testing.assert_array_equal(with_future, without)
    np.testing.assert_array_equal(first_forecasts(False, hindsight=True), without)  # nothing to see: the same
    assert not np.array_equal(first_forecasts(True, hindsight=True), without)  # the late urgent job counts


def test_hindsight_forecasts_refuse_sampled_futures_and_flat_observations():
    with pytest.raises(ValueError, match="hindsight forecasts play the real future"):
        SlotForecaster(RULES, "weighted_tardiness", sampled=SampledFutures(1, "medium", "small"), hindsight=True)
    for futures in (1, 2):  # said: the env has no tier
        with pytest.raises(ValueError, match=rf"they cannot also play futures={futures} sampled ones"):
            ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), RULES, futures=futures, hindsight=True)
    with pytest.raises(ValueError, match=r"critic_hindsight needs forecast_features .* flatten=True"):
        make_sb3_vec_env(num_envs=2, instance="mk01", forecast_features=RULES, flatten=True, critic_hindsight=True)
    with pytest.raises(ValueError, match=r"critic_hindsight needs forecast_features \(got \[\]\)"):
        make_sb3_vec_env(num_envs=2, instance="mk01", critic_hindsight=True)
    hindsight = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), RULES, hindsight=True)
    with pytest.raises(ValueError, match="a flat vector would drop them or show the actor the future"):
        FlattenDictObservation(hindsight)  # it dropped them, each step's rollouts paid for nothing


@pytest.mark.parametrize("mode", ["SameStep", "NextStep"])
def test_vector_forecasts_equal_the_single_env_ones(mode, tmp_path, monkeypatch):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    inst = tier_pool("medium", "small").instance(3)
    num_envs, steps = 2, 250
    venv = ForecastFeaturesVector(gym.make_vec("DynaSched/DFJSP-v0", num_envs=num_envs, instance=inst,
                                               vectorization_mode="vector_entry_point", autoreset_mode=mode,
                                               objective="weighted_tardiness"), RULES)
    singles = [ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness"), RULES)
               for _ in range(num_envs)]
    assert venv.single_observation_space == singles[0].observation_space
    observation, _ = venv.reset(seed=0)
    single_obs = [env.reset(seed=0)[0] for env in singles]
    rng = np.random.default_rng(0)
    restart = np.zeros(num_envs, dtype=bool)
    ended = 0
    for _ in range(steps):
        for i in range(num_envs):
            np.testing.assert_array_equal(observation[FORECASTS_KEY][i], single_obs[i][FORECASTS_KEY])
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in venv.action_masks()])
        observation, _, terminated, _, infos = venv.step(actions)
        for i, env in enumerate(singles):
            if restart[i]:
                single_obs[i] = env.reset(seed=0)[0]
                continue
            single_obs[i], _, done, _, _ = env.step(int(actions[i]))
            if done and mode == "SameStep":
                assert not infos["final_obs"][i][FORECASTS_KEY].any()  # nothing is offered at the end
                single_obs[i] = env.reset(seed=0)[0]
        ended += int(terminated.sum())
        restart = terminated if mode == "NextStep" else restart
    assert ended >= num_envs
    assert observation[FORECASTS_KEY].shape == (num_envs, 32, 2 * len(RULES))


def test_flat_observations_carry_the_forecasts():
    env = FlattenDictObservation(ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), RULES))
    observation, _ = env.reset(seed=0)
    dict_space = env.env.observation_space
    assert env.observation_space.shape == (sum(int(np.prod(s.shape)) for s in dict_space.spaces.values()),)
    assert observation.shape == env.observation_space.shape
    assert env.observation_space.contains(observation)
    dict_observation, _ = env.env.reset(seed=0)
    layout = ("candidates", "machines", "global", FORECASTS_KEY, "action_mask")  # the documented order: the mask last
    np.testing.assert_array_equal(observation, np.concatenate([dict_observation[key].ravel() for key in layout]))


def test_an_empty_rule_list_is_refused_and_one_rule_may_be_a_string():
    with pytest.raises(ValueError, match="at least one rollout rule"):
        ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), ())
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), "EDD:EET")
    assert env.rules == ("EDD:EET",) and env.observation_space[FORECASTS_KEY].shape[1] == 2


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_check_env_passes_with_forecasts():
    from gymnasium.utils.env_checker import check_env

    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), RULES)
    check_env(env, skip_render_check=True)  # raises on a space / observation mismatch or non-determinism


@pytest.mark.parametrize("futures", [0, 2])
def test_forecasts_are_clipped_to_their_space(futures):
    """A small time unit puts the forecasts far above BIG (6.7e6 on mk01 at tau = 1e-5): they left the block's
    Box. Both kinds: forgetting the future, and in sampled futures."""
    source = {"tier": "hard"} if futures else {"instance": "mk01"}
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", objective="makespan", time_scale=1e-5, **source), RULES,
                           futures=futures)
    observation, _ = env.reset(seed=0)
    assert np.abs(observation["forecasts"]).max() == BIG and env.observation_space.contains(observation)


def test_the_vector_wrapper_over_flat_observations_is_refused_by_name():
    """Over Gymnasium's vector ``FlattenObservation`` the vector wrapper failed with a bare "'Box' object is not
    subscriptable"; it now names itself and the fix, as the single env's wrapper does."""
    venv = gym.wrappers.vector.FlattenObservation(gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, instance="mk01",
                                                               vectorization_mode="vector_entry_point"))
    with pytest.raises(TypeError, match=r"ForecastFeaturesVector wraps an env with the Dict observations.*got Box"):
        ForecastFeaturesVector(venv, RULES)
