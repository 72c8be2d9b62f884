"""Tier resets: environments draw calibrated instances from the SSI tier pools."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import Instance, Job, Machine, validate_schedule
from dynasched_gym.generation import TIER_BANDS, TIERS


@pytest.fixture(autouse=True)
def pool_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path_factory.getbasetemp() / "pools"))


def play_random(env, seed: int) -> tuple[dict, float]:
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, terminated, truncated, last = env.step(action)
        total += reward
        done = terminated or truncated
    return {**info, **last}, total


@pytest.mark.parametrize("size", ["small", "medium", "large"])
@pytest.mark.parametrize("tier", TIERS)
def test_random_valid_episode_on_every_tier_and_size(tier, size):
    env = gym.make("DynaSched/DFJSP-v0", tier=tier, size=size, objective="weighted_tardiness", pool_size=4)
    info, total = play_random(env, seed=3)
    lo, hi = TIER_BANDS[tier]
    assert info["tier"] == tier and lo <= info["ssi"] < hi
    schedule = env.unwrapped.schedule()
    assert schedule.finished and validate_schedule(schedule).ok
    assert total == pytest.approx(-schedule.metrics["total_weighted_tardiness"], rel=1e-9, abs=1e-6)


def test_tier_resets_are_deterministic_and_seeds_differ():
    env = gym.make("DynaSched/DFJSP-v0", tier="hard", size="small")
    first, _ = env.reset(seed=11)
    name = env.unwrapped.instance.name
    again, _ = env.reset(seed=11)
    assert env.unwrapped.instance.name == name
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    names = set()
    for seed in range(6):
        env.reset(seed=seed)
        names.add(env.unwrapped.instance.to_json())
    assert len(names) > 1


def test_harder_tiers_are_harder_for_a_fixed_rule():
    """The mean normalised weighted tardiness of EDD grows from easy to extreme (small pools)."""
    from dynasched_gym import rollout
    from dynasched_gym.generation import tier_pool
    from dynasched_gym.generation.difficulty import normalised_weighted_tardiness

    means = [np.mean([normalised_weighted_tardiness(rollout(tier_pool(t, "small").instance(s), rule="EDD"))
                      for s in range(6)]) for t in TIERS]
    assert means == sorted(means), means


def test_vector_env_with_tiers_equals_single_envs():
    vec = gym.make_vec("DynaSched/DFJSP-v0", num_envs=3, vectorization_mode="vector_entry_point", tier="easy",
                       size="small", pool_size=8)
    singles = [gym.make("DynaSched/DFJSP-v0", tier="easy", size="small", pool_size=8) for _ in range(3)]
    obs, _ = vec.reset(seed=[1, 2, 3])
    single_obs = [env.reset(seed=s)[0] for env, s in zip(singles, [1, 2, 3])]
    for i, o in enumerate(single_obs):
        for key in o:
            np.testing.assert_array_equal(obs[key][i], o[key])
    for _ in range(20):  # fewer steps than any small episode has decisions: no autoreset involved
        obs, rewards, term, _, _ = vec.step(np.zeros(3, dtype=np.int64))
        for i, env in enumerate(singles):
            o, r, t, _, _ = env.step(0)
            assert (r, t) == (rewards[i], term[i])
            np.testing.assert_array_equal(obs["candidates"][i], o["candidates"])


def test_pool_start_offsets_the_seeds_drawn():  # e.g. pool_start=10_000 for held-out instances
    env = gym.make("DynaSched/DFJSP-v0", tier="easy", pool_size=2, pool_start=2)  # seeds the tests above build
    names = set()
    for seed in range(8):
        env.reset(seed=seed)
        names.add(env.unwrapped.instance.name)
    assert names == {"easy-small-seed2", "easy-small-seed3"}
    with pytest.raises(TypeError, match=r"pool_start must be an integer >= 0, got 1\.5"):
        gym.make("DynaSched/DFJSP-v0", tier="easy", pool_start=1.5)


def test_the_probe_of_a_pool_is_its_instance_of_seed_pool_start(monkeypatch):
    """The instance that fixes the spaces is the first one drawn from, not seed 0, which a held-out range
    (pool_start=10_000) would generate for nothing."""
    from dynasched_gym.envs.dfjsp.episodes import InstanceSource
    from dynasched_gym.io import resolve_instance

    seeds = []

    class Pool:
        def instance(self, seed: int) -> Instance:
            seeds.append(seed)
            return resolve_instance("mk01")

    source = InstanceSource(None, "easy", "small", None, pool_start=7)
    monkeypatch.setattr(source, "_tier_pool", Pool)
    source.probe()
    assert seeds == [7]


def test_pool_draws_share_the_plants_feature_scales_and_other_instances_their_own():
    """A pool draw's feature units are the size preset plant's expectations, the same for every draw and fixed
    before any job arrives; an instance passed to reset is scaled by its jobs released at its first release time."""
    from dynasched_gym.envs.dfjsp.episodes import known_scales, pool_scales
    from dynasched_gym.generation import Scenario
    from dynasched_gym.generation.scenario import expected_feature_scales

    env = gym.make("DynaSched/DFJSP-v0", tier="easy", size="small", pool_size=4)
    plant_tau = expected_feature_scales(Scenario.preset("small").plant)[0]
    for seed in range(3):
        env.reset(seed=seed)
        assert env.unwrapped.time_scale == pytest.approx(plant_tau)
    drawn = env.unwrapped.instance
    own_tau = known_scales(drawn)[0]
    assert own_tau != pytest.approx(plant_tau)
    env.reset(seed=0, options={"instance": drawn})  # the same instance object: its simulation is kept
    assert env.unwrapped.time_scale == pytest.approx(own_tau)
    env.reset(seed=2)
    assert env.unwrapped.time_scale == pytest.approx(plant_tau)
    vec = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point", tier="easy",
                       size="small", pool_size=4)
    vec.reset(seed=[0, 1], options={"instance": [drawn, None]})  # sub-env 1 draws from the pool
    units = [(vec.unwrapped.time_scale(i), vec.unwrapped.ops_scale(i)) for i in range(2)]
    assert units == [pytest.approx(known_scales(drawn)), pytest.approx(pool_scales("small"))]


def test_units_given_to_the_env_replace_the_ones_it_would_take():
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", time_scale=2.0, ops_scale=3.0)
    for options in (None, {"instance": "mk02"}):  # kept as the episode's instance changes
        env.reset(seed=0, options=options)
        assert (env.unwrapped.time_scale, env.unwrapped.ops_scale) == (2.0, 3.0)


def test_known_scales_are_memoised_on_the_instance():
    """Every reset onto a fixed instance asks for its scales: computed once per instance, and a replaced instance
    (a new one, maybe with other jobs) computes its own."""
    from dynasched_gym.envs.dfjsp.episodes import known_scales
    from dynasched_gym.io import resolve_instance

    inst = resolve_instance("mk01")
    first = known_scales(inst)
    assert known_scales(inst) is first
    slower = inst.replace(elig_time=inst.elig_time * 2)
    assert known_scales(slower) == (2 * first[0], first[1])


def test_known_scales_count_only_the_jobs_of_the_first_release():
    """Units from the jobs released first (at time 1 here, not 0): their operations' mean time, each operation's
    the mean over its machines, and their operations per job; the later job is the future and does not count."""
    from dynasched_gym.envs.dfjsp.episodes import known_scales

    inst = Instance.build("x", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 2.0, 1: 4.0}, {1: 6.0}], release=1.0), Job("J1", [{0: 10.0}], release=5.0),
                           Job("J2", [{1: 1.0}], release=1.0)])
    assert known_scales(inst) == (pytest.approx((3.0 + 6.0 + 1.0) / 3), pytest.approx(3 / 2))
