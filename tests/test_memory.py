"""Long loops keep nothing per episode: after many episodes only the current ones' instances and compiled arrays are
alive (docs/performance.md, "Memory in long runs"). Checked with weak references after a collection, not with RSS or
timings, which are noisy."""

from __future__ import annotations

import gc
import weakref

import gymnasium as gym
import numpy as np

import dynasched_gym
from dynasched_gym import load_instance
from dynasched_gym.agents import make
from dynasched_gym.data import path as embedded_path

MK01 = load_instance(embedded_path("mk01"))


def alive(refs: list[weakref.ref]) -> list[int]:
    """The indices of the referents still alive after a collection."""
    gc.collect()
    return [i for i, ref in enumerate(refs) if ref() is not None]


def test_a_single_env_keeps_only_the_current_episode_after_many():
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    agent = make("lookahead", top_k=2)  # its scratch state follows the episode's compiled instance
    instances, statics = [], []
    for i in range(8):
        instance = MK01.replace(name=f"mk01-{i}")  # a new object each episode, as a pool draw is
        observation, info = env.reset(seed=i, options={"instance": instance})
        agent.reset(env)
        instances.append(weakref.ref(instance))
        statics.append(weakref.ref(env.unwrapped.simulator.static.op_time))  # compiled on the instance
        del instance
        terminated = False
        while not terminated:  # to the end: the final step memoises the SSI on the instance
            observation, _, terminated, _, info = env.step(agent.act(observation, info))
    assert alive(instances) == [7]
    assert alive(statics) == [7]


def test_a_vector_env_keeps_at_most_its_rows_instances_after_many_episodes():
    num_envs = 3
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=num_envs, vectorization_mode="vector_entry_point",
                        instance="mk01")
    refs = []
    for k in range(6):
        instances = [MK01.replace(name=f"mk01-{k}-{i}") for i in range(num_envs)]
        refs += [weakref.ref(instance) for instance in instances]
        venv.reset(seed=k, options={"instance": instances})
        del instances
        for _ in range(60):  # past the end of mk01's episodes (55 decisions): autoresets onto the fixed mk01
            venv.step(np.zeros(num_envs, dtype=np.int64))
        # every sub-environment plays mk01 now; a Static row left free keeps its last instance until it is reused
        # (EnvBatch: at most num_envs rows), so a few overrides stay alive, never more than that
        assert len(alive(refs)) < num_envs


def test_a_dropped_simulator_releases_its_instance_and_compiled_arrays():
    instance = MK01.replace(name="dropped")
    sim = dynasched_gym.Simulator(instance)
    sim.reset()
    snapshot = sim.snapshot()
    sim.run("MWKR")
    sim.restore(snapshot)
    refs = [weakref.ref(instance), weakref.ref(sim.static.op_time), weakref.ref(sim.state.segment_start)]
    del instance, sim, snapshot
    assert alive(refs) == []  # the numba handle (a typed list of the arrays) holds nothing beyond the simulator
