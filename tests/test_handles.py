"""Kernel handles (core.batch) follow the arrays they stand for: a simulation rebound to grown batch buffers, a
scratch state rebuilt for another instance."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import data
from dynasched_gym.agents import make
from dynasched_gym.envs.wrappers import FORECASTS_KEY, ForecastFeaturesVector, ForecastRewardVector
from dynasched_gym.instance import Instance
from dynasched_gym.io import load_instance


def _doubled(instance: Instance) -> Instance:
    """``instance`` with every job twice: the same machines, more of everything else (the batch buffers grow)."""
    ops, pairs = instance.num_ops, instance.elig_machine.shape[0]
    return instance.replace(
        name=f"{instance.name}-x2", job_names=instance.job_names + tuple(f"{n}-b" for n in instance.job_names),
        job_release=np.tile(instance.job_release, 2), job_due=np.tile(instance.job_due, 2),
        job_weight=np.tile(instance.job_weight, 2),
        job_op_ptr=np.concatenate([instance.job_op_ptr, instance.job_op_ptr[1:] + ops]),
        op_elig_ptr=np.concatenate([instance.op_elig_ptr, instance.op_elig_ptr[1:] + pairs]),
        elig_machine=np.tile(instance.elig_machine, 2), elig_time=np.tile(instance.elig_time, 2))


@pytest.mark.parametrize("features", [False, True])
def test_forecasts_read_a_simulation_rebound_to_grown_buffers(features):
    """Env 1 loading a larger instance mid-episode reallocates the batch and rebinds env 0's simulation: env 0's
    forecast rewards (and features) must come from its new arrays. A stale handle read the old ones, frozen: the
    rewards differ; the features' rollouts start the offered pairs in the old state and corrupt memory."""
    mk01 = load_instance(data.path("mk01"))

    def make_env() -> gym.vector.VectorEnv:
        venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, instance="mk01", vectorization_mode="vector_entry_point")
        return ForecastRewardVector(ForecastFeaturesVector(venv) if features else venv)

    grown, plain = make_env(), make_env()
    traces = []
    for venv, other in ((grown, _doubled(mk01)), (plain, mk01)):
        venv.reset(seed=0)
        for _ in range(3):
            venv.step(np.zeros(2, dtype=np.int64))
        capacity = venv.unwrapped._batch.capacity.copy()
        venv.reset(options={"instance": [mk01, other], "reset_mask": np.array([False, True])})
        grew = bool(np.any(venv.unwrapped._batch.capacity != capacity))
        trace = []
        for _ in range(20):
            observation, reward, *_ = venv.step(np.zeros(2, dtype=np.int64))
            trace.append((observation[FORECASTS_KEY][0].copy() if features else None, reward[0]))
        traces.append((grew, trace))
    (grew, after_growth), (stayed, reference) = traces
    assert grew and not stayed
    assert len({reward for _, reward in reference}) > 1  # the rewards can tell states apart
    for (forecasts, reward), (expected, expected_reward) in zip(after_growth, reference, strict=True):
        assert reward == expected_reward
        if features:
            np.testing.assert_array_equal(forecasts, expected)


def test_one_lookahead_agent_decides_on_each_instance_as_a_fresh_one():
    """The agent's scratch state (and its handle) is rebuilt for each instance, smaller or larger than the last."""
    mk01 = load_instance(data.path("mk01"))
    agent = make("lookahead", top_k=3)
    for instance in (mk01, _doubled(mk01), mk01):
        plays = []
        for player in (agent, make("lookahead", top_k=3)):
            env = gym.make("DynaSched/DFJSP-v0", instance=instance)
            observation, info = env.reset(seed=0)
            player.reset(env.unwrapped)
            actions, done = [], False
            while not done:
                actions.append(player.act(observation, info))
                observation, _, terminated, truncated, info = env.step(actions[-1])
                done = terminated or truncated
            plays.append(actions)
        assert plays[0] == plays[1]


def test_a_simulations_state_and_handle_are_set_only_together():
    """Simulator.state and .handle were plain attributes: ``sim.state = other`` left the kernels' handle on the old
    arrays, so step and the agents went on simulating those; bind() is the one way to rebind them."""
    from dynasched_gym import Simulator

    sim = Simulator(load_instance(data.path("mk01")))
    with pytest.raises(AttributeError):
        sim.state = sim.state
    with pytest.raises(AttributeError):
        sim.handle = None
    other = Simulator(sim.instance)
    other.reset()
    sim.bind(other.state)
    assert sim.state is other.state and sim.now == other.now
    jobs, machines, _ = sim.candidates()
    sim.step(jobs[0], machines[0])
    assert other.decisions == sim.decisions == 1  # the bound arrays are the ones stepped
