"""The vector envs: one numba call per step, equal to independent single envs; the SB3 adapter."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances
from test_env import assert_same_observations, valid_action
from test_simulator_properties import assert_active_window

from dynasched_gym import Event, EventType, Instance, Job, Machine, Simulator, load_instance, ssi
from dynasched_gym.data import path as embedded_path
from dynasched_gym.envs.dfjsp.env import DFJSPEnv, DFJSPRulesEnv, InvalidActionError
from dynasched_gym.envs.dfjsp.vector import DFJSPRulesVectorEnv, DFJSPVectorEnv
from dynasched_gym.envs.wrappers import ForecastFeatures, ForecastReward


def row(observation: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
    return {key: value[i] for key, value in observation.items()}


def run_against_single_envs(venv: DFJSPVectorEnv, envs: list, steps: int, seed: int, rng_seed: int,
                            choose=valid_action) -> int:
    """Step ``venv`` and ``envs`` (NEXT_STEP autoreset) side by side; returns the episodes finished."""
    observation, _ = venv.reset(seed=seed)
    singles = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    assert_same_observations([row(observation, i) for i in range(len(envs))], singles)
    rng = np.random.default_rng(rng_seed)
    pending = [False] * len(envs)
    finished = 0
    for _ in range(steps):
        actions = np.array([choose(row(observation, i), rng) for i in range(len(envs))])
        observation, rewards, terminated, truncated, info = venv.step(actions)
        assert not truncated.any()
        for i, env in enumerate(envs):
            if pending[i]:
                single, reward, done = env.reset()[0], 0.0, False
            else:
                single, reward, done, _, single_info = env.step(actions[i])
                if done:
                    assert info["_metrics"][i]
                    assert {k: v[i] for k, v in info["metrics"].items() if not k.startswith("_")} \
                        == single_info["metrics"]
            pending[i] = done
            assert reward == rewards[i] and done == terminated[i]
            assert_same_observations([row(observation, i)], [single])
        finished += int(terminated.sum())
    return finished


def test_make_vec_gives_a_vector_env_with_next_step_autoreset():
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=3, vectorization_mode="vector_entry_point", instance="mk01")
    assert isinstance(venv, VectorEnv) and isinstance(venv, DFJSPVectorEnv)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    observation, info = venv.reset(seed=0)
    assert venv.observation_space.contains(observation)
    assert list(info["tier"]) == [None] * 3 and "ssi" not in info
    assert venv.action_masks().shape == (3, 32)


@pytest.mark.parametrize(("cls", "single"), [(DFJSPVectorEnv, DFJSPEnv), (DFJSPRulesVectorEnv, DFJSPRulesEnv)])
def test_vector_env_equals_independent_envs(cls, single):
    kwargs = {"instance": "mk02", "observability": "oracle", "objective": "flow_time"}
    venv = cls(5, **kwargs)
    finished = run_against_single_envs(venv, [single(**kwargs) for _ in range(5)], steps=160, seed=3, rng_seed=1)
    assert finished >= 5


def test_parallel_stepping_equals_independent_envs(tmp_path, monkeypatch):
    """``parallel=True`` steps the sub-envs on numba's threads; every transition equals the single envs'."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    kwargs = {"tier": "medium", "size": "small", "pool_size": 3, "objective": "weighted_tardiness"}
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=6, vectorization_mode="vector_entry_point", parallel=True,
                        **kwargs)
    finished = run_against_single_envs(venv.unwrapped, [DFJSPEnv(**kwargs) for _ in range(6)], steps=150, seed=7,
                                       rng_seed=2)
    assert finished >= 6


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=5, max_machines=3, max_events=10), seed=st.integers(0, 1000))
def test_vector_env_equals_independent_envs_on_random_instances(inst, seed):
    venv = DFJSPVectorEnv(3, instance=inst, max_candidates=4, observability="full")
    envs = [DFJSPEnv(instance=inst, max_candidates=4, observability="full") for _ in range(3)]
    run_against_single_envs(venv, envs, steps=40, seed=seed, rng_seed=seed)


def repeated(instance: Instance, times: int) -> Instance:
    """``instance`` with its jobs ``times`` over (the copies after the originals)."""
    k = np.arange(times)
    return instance.replace(job_names=instance.job_names * times, **{
        name: np.concatenate([getattr(instance, name)] * times) for name in ("job_release", "job_due", "job_weight")
    }, job_op_ptr=np.concatenate([instance.job_op_ptr[:1], (instance.job_op_ptr[1:] + instance.num_ops * k[:, None])
                                                             .ravel()]),
        op_elig_ptr=np.concatenate([instance.op_elig_ptr[:1], (instance.op_elig_ptr[1:]
                                                               + len(instance.elig_machine) * k[:, None]).ravel()]),
        elig_machine=np.concatenate([instance.elig_machine] * times),
        elig_time=np.concatenate([instance.elig_time] * times))


def test_instances_of_other_sizes_grow_the_batch_and_still_match():
    small, large = load_instance(embedded_path("mk01")), load_instance(embedded_path("mk02"))
    assert small.num_machines == large.num_machines and large.num_jobs == small.num_jobs
    bigger = repeated(large, 2)
    venv = DFJSPVectorEnv(2, instance=small)
    venv.reset(seed=0, options={"instance": bigger})
    env = DFJSPEnv(instance=small)
    env.reset(seed=0, options={"instance": bigger})
    assert venv.instance(0) is bigger
    rng = np.random.default_rng(0)
    for _ in range(30):
        observation = venv._observation()
        action = valid_action(row(observation, 0), rng)
        vector_observation, *_ = venv.step(np.array([action, action]))
        single, *_ = env.step(action)
        assert_same_observations([row(vector_observation, 0), row(vector_observation, 1)], [single, single])


def test_a_sub_environments_simulator_reads_the_new_buffers_after_another_ones_growth():
    """A larger instance loaded into sub-environment 1 reallocates the batch: sub-environment 0's simulator (its
    schedule, its clock) must read the new buffers, not the old ones the kernels no longer step."""
    small = load_instance(embedded_path("mk01"))
    venv = DFJSPVectorEnv(2, instance=small)
    venv.reset(seed=0)
    venv.step(np.zeros(2, dtype=np.int64))
    capacity = venv._batch.capacity.copy()
    venv.reset(options={"instance": [None, repeated(small, 2)], "reset_mask": np.array([False, True])})
    assert (venv._batch.capacity > capacity).any()
    state, buffers = venv.simulator(0).state, venv._batch.states
    assert all(np.shares_memory(getattr(state, name), getattr(buffers, name)) for name in state._fields
               if isinstance(getattr(state, name), np.ndarray))


def test_each_rows_scanned_window_holds_its_active_jobs_through_growth_and_reloads():
    """The scans for startable jobs walk each row's window ``[C_ACTIVE_FIRST, C_ACTIVE_END)`` (core/compiled.py):
    rows reset to smaller instances, rows re-laid out mid-episode when another env loads a larger one, and jobs
    released in reverse index order (each arrival widens the window downwards) keep it at the first and last active
    job at every step."""
    mk01, mk02 = load_instance(embedded_path("mk01")), load_instance(embedded_path("mk02"))

    def late_first(instance: Instance, times: int) -> Instance:  # job 0 arrives last
        more = repeated(instance, times)
        return more.replace(name=f"{instance.name}-x{times}", job_release=np.arange(more.num_jobs)[::-1] * 4.0)

    venv = DFJSPVectorEnv(3, instance=mk01)
    rng = np.random.default_rng(0)
    observation, _ = venv.reset(seed=0)
    finished = 0
    for options in ({"instance": [late_first(mk02, 2), None, None], "reset_mask": [True, False, False]},
                    {"instance": [mk01, late_first(mk01, 4), late_first(mk02, 3)]}):
        for _ in range(40):
            observation, _, terminated, *_ = venv.step(np.array([valid_action(row(observation, i), rng)
                                                                 for i in range(3)]))
            finished += terminated.sum()
            for i in range(3):
                assert_active_window(venv._batch.state(i))
        sizes = venv._batch.capacity.copy()
        observation, _ = venv.reset(options=options)
        assert (venv._batch.capacity > sizes).any()  # grown: every row laid out anew
    for _ in range(400):
        observation, _, terminated, *_ = venv.step(np.array([valid_action(row(observation, i), rng) for i in range(3)]))
        finished += terminated.sum()
        for i in range(3):
            assert_active_window(venv._batch.state(i))
    assert finished >= 6


def test_a_list_of_instances_gives_each_sub_environment_its_own():
    mk01, mk02 = load_instance(embedded_path("mk01")), load_instance(embedded_path("mk02"))
    venv = DFJSPVectorEnv(3, instance="mk01")
    observation, _ = venv.reset(seed=[0, 0, 0], options={"instance": [mk02, None, mk02]})
    assert [venv.instance(i).name for i in range(3)] == [mk02.name, mk01.name, mk02.name]  # None: drawn as usual
    rows = venv._batch.static_rows
    assert rows[0] == rows[2] != rows[1]  # one instance's static arrays are held once, in the row of its envs
    assert_same_observations([row(observation, 0)], [DFJSPEnv(instance=mk02).reset(seed=0)[0]])
    venv.reset(options={"instance": [mk01, mk01, mk01], "reset_mask": np.array([False, False, True])})
    assert [venv.instance(i).name for i in range(3)] == [mk02.name, mk01.name, mk01.name]  # only the masked one
    with pytest.raises(ValueError, match="expected 3 instances"):
        venv.reset(options={"instance": [mk01, mk02]})


@pytest.mark.parametrize("copy", [True, False])
def test_same_step_autoreset_reports_final_observations(copy):
    """Also without copies, whose final observations must not be the buffers the reset overwrites."""
    venv = DFJSPVectorEnv(2, instance="mk01", autoreset_mode=AutoresetMode.SAME_STEP, copy=copy)
    env = DFJSPEnv(instance="mk01")
    venv.reset(seed=0)
    env.reset(seed=0)
    terminated = np.zeros(2, dtype=bool)
    while not terminated.any():
        observation, _, terminated, _, info = venv.step(np.zeros(2, dtype=np.int64))
        single, _, done, _, single_info = env.step(0)
    assert done and terminated.all()
    assert_same_observations([info["final_obs"][0]], [single])
    assert info["final_info"]["metrics"]["makespan"][0] == single_info["metrics"]["makespan"]
    assert info["final_info"]["ssi"][0] == single_info["ssi"] == ssi(env.instance).score
    assert_same_observations([row(observation, 0)], [env.reset()[0]])


def test_disabled_autoreset_needs_an_explicit_partial_reset():
    venv = DFJSPVectorEnv(2, instance="mk01", autoreset_mode=AutoresetMode.DISABLED)
    venv.reset(seed=0)
    first, _ = DFJSPEnv(instance="mk01").reset(seed=0)
    terminated = np.zeros(2, dtype=bool)
    while not terminated.any():
        _, _, terminated, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(RuntimeError, match="reset_mask"):
        venv.step(np.zeros(2, dtype=np.int64))
    observation, info = venv.reset(options={"reset_mask": np.array([True, False])})
    assert list(info["_tier"]) == list(info["_invalid_actions"]) == [True, False]
    assert_same_observations([row(observation, 0)], [first])
    with pytest.raises(RuntimeError, match=r"sub-environments \[1\] ended"):  # the reset one no longer counts
        venv.step(np.zeros(2, dtype=np.int64))
    venv.reset(options={"reset_mask": np.array([False, True])})
    observation, _, terminated, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    single = DFJSPEnv(instance="mk01")
    single.reset(seed=0)
    assert not terminated.any()
    assert_same_observations([row(observation, 0), row(observation, 1)], [single.step(0)[0]] * 2)


def test_next_step_autoreset_of_an_episode_without_decisions_is_not_a_termination():
    """Sub-environment 0's episodes end on their first step, which makes the next one its reset step: that step
    reports terminated=False and reward 0 even as sub-environment 1 terminates beside it, and every sub-environment's
    invalid_actions, as the single env's reset does."""
    inst = Instance.build("c", [Machine("M0")], [Job("J0", [{0: 3.0}], release=5.0)],
                          [Event(1.0, EventType.CANCELLATION, job=0)])
    two = Instance.build("two", [Machine("M0")], [Job("J0", [{0: 3.0}]), Job("J1", [{0: 2.0}])])
    venv = DFJSPVectorEnv(2, instance=inst)
    venv.reset(seed=0, options={"instance": [None, two]})
    assert venv.step(np.zeros(2, dtype=np.int64))[2].tolist() == [True, False]  # any action ends sub-env 0's
    _, rewards, terminated, _, info = venv.step(np.zeros(2, dtype=np.int64))
    assert terminated.tolist() == [False, True] and rewards[0] == 0.0
    assert info["_invalid_actions"].all() and info["invalid_actions"].tolist() == [0, 0]


def test_vector_invalid_actions_replace_or_raise():
    venv = DFJSPVectorEnv(2, instance="mk01")
    observation, _ = venv.reset(seed=0)
    padding = int(np.flatnonzero(observation["action_mask"][0] == 0)[0])
    _, _, _, _, info = venv.step(np.array([padding, 0]))
    assert list(info["invalid_actions"]) == [1, 0]
    strict = DFJSPVectorEnv(2, instance="mk01", invalid_action="raise")
    strict.reset(seed=0)
    valid = np.flatnonzero(observation["action_mask"][1]).tolist()  # the single env names them; this one did not
    with pytest.raises(InvalidActionError, match=re.escape(f"sub-environments [1]: [{padding}]; valid now in "
                                                           f"sub-environment 1: {valid} (see")):
        strict.step(np.array([0, padding]))
    many = DFJSPVectorEnv(5, instance="mk01", invalid_action="raise")
    many.reset(seed=0)
    with pytest.raises(InvalidActionError,
                       match=r"sub-environments \[0, 1, 2, 3, 4\]: .*; 2: \[[0-9, ]+\]; 2 more \(see"):
        many.step(np.full(5, padding))


def test_a_refused_vector_step_changes_nothing_even_when_an_autoreset_is_due():
    venv = DFJSPVectorEnv(2, instance="mk01", invalid_action="raise")
    venv.reset(seed=0, options={"instance": ["mk01", "mk02"]})
    terminated = np.zeros(2, dtype=bool)
    while not terminated.any():
        observation, _, terminated, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    assert list(terminated) == [True, False]  # mk01 ends first: its autoreset is due on the next step
    before = venv.simulator(0).decisions, venv.simulator(1).decisions
    padding = int(np.flatnonzero(observation["action_mask"][1] == 0)[0])
    with pytest.raises(InvalidActionError, match=r"sub-environments \[1\]"):
        venv.step(np.array([0, padding]))
    assert (venv.simulator(0).decisions, venv.simulator(1).decisions) == before
    _, reward, terminated, _, info = venv.step(np.zeros(2, dtype=np.int64))
    assert venv.simulator(0).decisions == 0 and reward[0] == 0.0 and not terminated[0]
    assert info["_tier"][0] and not info["_tier"][1]  # the reset info of sub-environment 0 only


def test_vector_actions_must_be_integers():
    venv = DFJSPVectorEnv(2, instance="mk01")
    venv.reset(seed=0)
    with pytest.raises(TypeError, match="actions must be integers"):
        venv.step(np.array([0.0, 1.7]))
    assert venv.simulator(1).decisions == 0
    venv.step([0, 1])
    assert venv.simulator(1).decisions == 1


def test_vector_actions_beyond_int64_are_invalid_as_in_the_single_env():
    """A Python integer beyond int64 is an out-of-range slot, replaced (or refused) as the single env does; NumPy
    made the batch an object array, refused as "actions must be integers"."""
    venv = DFJSPVectorEnv(2, instance="mk01")
    venv.reset(seed=0)
    _, _, _, _, info = venv.step([10**20, -(10**20)])
    assert list(info["invalid_actions"]) == [1, 1]
    strict = DFJSPVectorEnv(2, instance="mk01", invalid_action="raise")
    strict.reset(seed=0)
    with pytest.raises(InvalidActionError, match=r"sub-environments \[1\]"):
        strict.step([0, 10**20])
    with pytest.raises(TypeError, match="actions must be integers"):  # still no bools or fractions among them
        venv.step(np.array([10**20, True], dtype=object))


def test_vector_raise_mode_ends_an_episode_without_decisions_on_any_action():
    inst = Instance.build("c", [Machine("M0")], [Job("J0", [{0: 3.0}], release=5.0)],
                          [Event(1.0, EventType.CANCELLATION, job=0)])
    venv = DFJSPVectorEnv(2, instance=inst, invalid_action="raise")
    observation, _ = venv.reset(seed=0)
    assert not observation["action_mask"].any()
    _, reward, terminated, _, _ = venv.step(np.zeros(2, dtype=np.int64))
    assert terminated.all() and not reward.any()


def test_a_refused_instance_override_loads_nothing():
    venv = DFJSPVectorEnv(2, instance="mk01")
    venv.reset(seed=0)
    for _ in range(10):
        venv.step(np.zeros(2, dtype=np.int64))
    state = venv.instance(0).name, venv.simulator(0).now, venv.simulator(0).decisions
    with pytest.raises(ValueError, match="'mk06' has 15 machines"):
        venv.reset(options={"instance": ["mk02", "mk06"]})
    assert (venv.instance(0).name, venv.simulator(0).now, venv.simulator(0).decisions) == state
    observation, *_ = venv.step(np.zeros(2, dtype=np.int64))
    assert observation["action_mask"][0].any() and venv.simulator(0).decisions == 11


def test_vector_render_and_seed_lists():
    venv = DFJSPVectorEnv(2, instance="mk01", render_mode="ansi")
    venv.reset(seed=[4, 9])
    single = DFJSPEnv(instance="mk01")
    assert_same_observations([row(venv._observation(), 1)], [single.reset(seed=9)[0]])
    frames = venv.render()
    assert len(frames) == 2 and all("t=0" in frame for frame in frames)
    with pytest.raises(ValueError, match="seeds"):
        venv.reset(seed=[1])


def test_vector_render_without_a_render_mode_warns_like_the_single_env():
    """It returned None without a word, where the single env warns."""
    venv = DFJSPVectorEnv(2, instance="mk01")
    venv.reset(seed=0)
    with pytest.warns(UserWarning, match="render\\(\\) called without a render_mode"):
        assert venv.render() is None


def test_vector_seeds_may_be_any_sequence_or_a_numpy_integer():
    """A tuple of seeds or a NumPy integer (what ``np.arange`` and ``rng.integers`` give) was refused deep inside
    Gymnasium; Gymnasium's own vector envs take them."""
    venv = DFJSPVectorEnv(2, tier="easy")

    def drawn(seed):
        venv.reset(seed=seed)
        return [venv.instance(i).name for i in range(2)]

    assert drawn([4, 9]) == drawn((4, 9)) == drawn(np.array([4, 9])) != drawn([4, 5])
    assert drawn(np.int64(4)) == drawn(4) == drawn([4, 5])
    with pytest.raises(TypeError, match=r"seed must be an integer, a list of 2 integers or None, or None; got '4'"):
        venv.reset(seed="4")
    with pytest.raises(ValueError, match=r"expected 2 seeds \(one per sub-environment\), got 3"):
        venv.reset(seed=(1, 2, 3))


def test_an_ssi_of_none_stays_none_beside_a_score(monkeypatch):
    """Two sub-environments end in one step, the first with a score: the second's None was turned into NaN (the
    info array was a float one); the SB3 adapter passed the NaN on. Its count of invalid actions was the new
    episode's 0."""
    from dynasched_gym.envs.sb3 import SB3VecEnv

    def ssi_or_overflow(instance: Instance):  # as processing times of 1e200 did, before instances were bounded
        if instance.name == "huge":
            raise OverflowError(34, "Numerical result out of range")
        return ssi(instance)

    monkeypatch.setattr("dynasched_gym.generation.ssi", ssi_or_overflow)

    def two_jobs(name: str, time: float) -> Instance:
        return Instance.build(name, [Machine("M0"), Machine("M1")], [Job("J0", [{0: time}]), Job("J1", [{1: 2.0}])])

    normal, huge = two_jobs("normal", 1.0), two_jobs("huge", 1e20)  # huge: the SSI cannot be computed
    for mode in ("next_step", "same_step"):
        venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point",
                            instance=normal, autoreset_mode=mode)
        venv.reset(seed=0, options={"instance": [normal, huge]})
        terminated = np.zeros(2, dtype=bool)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SSI's, and overflows
            while not terminated.all():
                _, _, terminated, _, info = venv.step(np.zeros(2, dtype=np.int64))
        scores = info["ssi"] if mode == "next_step" else info["final_info"]["ssi"]
        assert scores[0] is not None and scores[1] is None
    sb3 = SB3VecEnv(gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point",
                                 instance=normal, autoreset_mode="same_step"))
    sb3.set_options([{"instance": normal}, {"instance": huge}])
    sb3.reset()
    dones, actions = np.zeros(2, dtype=bool), np.array([0, 31])  # 31: a padding slot, invalid (slot 0 plays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while not dones.all():
            _, _, dones, infos = sb3.step(actions)
    assert infos[1]["ssi"] is None and isinstance(infos[0]["ssi"], float)
    assert [i["invalid_actions"] for i in infos] == [0, 2]


def test_sb3_adapter():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecEnv

    from dynasched_gym.envs.sb3 import SB3VecEnv, make_sb3_vec_env

    venv = make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=3, flatten=True, instance="mk01")
    assert isinstance(venv, VecEnv)
    observation = venv.reset()
    assert observation.shape == (3, venv.observation_space.shape[0])
    env = DFJSPEnv(instance="mk01")
    env.reset(seed=0)
    venv.seed(0)
    venv.reset()
    dones = np.zeros(3, dtype=bool)
    steps = 0
    while not dones.any():
        masks = np.stack(venv.env_method("action_masks"))
        assert masks[:, 0].all()
        observation, rewards, dones, infos = venv.step(np.zeros(3, dtype=np.int64))
        _, reward, done, _, single_info = env.step(0)
        steps += 1
        assert rewards[0] == np.float32(reward) and rewards.dtype == np.float32  # as DummyVecEnv's buffer
    assert done and dones.all()
    assert infos[0]["metrics"] == single_info["metrics"] and infos[0]["ssi"] == single_info["ssi"]
    # the single env's keys and SB3's: the new episode's tier goes to reset_infos, not the step's info
    assert set(infos[0]) == {*single_info, "episode", "terminal_observation", "TimeLimit.truncated"}
    assert venv.unwrapped.reset_infos == [{"tier": None}] * 3  # the SSI comes at the end only: it rates the future too
    venv.set_options([{"instance": "mk02"}, {}, {"instance": "mk02"}])  # SB3's per-environment options
    venv.reset()
    assert [venv.unwrapped.venv.instance(i).name for i in range(3)] == ["mk02", "mk01", "mk02"]
    venv.set_options([{"instance": "mk02", "reset_mask": None}, {}, {}])
    with pytest.raises(ValueError, match=r"different options \['reset_mask'\]: only 'instance' may differ"):
        venv.reset()
    # Monitor's record, for SB3's rollout/ep_rew_mean: the return here is minus the makespan
    assert infos[0]["episode"]["l"] == steps
    assert infos[0]["episode"]["r"] == pytest.approx(-infos[0]["metrics"]["makespan"])
    assert infos[0]["terminal_observation"].shape == observation.shape[1:]
    assert infos[0]["TimeLimit.truncated"] is False
    assert venv.get_attr("render_mode") == [None] * 3
    assert venv.env_is_wrapped(gym.Wrapper) == [False] * 3
    with pytest.raises(ValueError, match="SAME_STEP"):
        SB3VecEnv(DFJSPVectorEnv(2, instance="mk01"))


@pytest.mark.parametrize("mode", ["same_step", "SameStep", "SAME_STEP", "same-step"])
def test_autoreset_mode_may_be_named_as_a_string(mode):
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point", instance="mk01",
                        autoreset_mode=mode)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    with pytest.raises(ValueError, match=r"autoreset_mode must be one of .* got 'sometimes'"):
        DFJSPVectorEnv(2, instance="mk01", autoreset_mode="sometimes")


@pytest.mark.parametrize("make", [
    lambda: DFJSPVectorEnv(2, instance="mk01", copy="no"),
    lambda: DFJSPVectorEnv(2, instance="mk01", parallel="false"),
    lambda: ForecastReward(gym.make("DynaSched/DFJSP-v0", instance="mk01"), hindsight="false"),
    lambda: ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01"), ["EDD:EET"], hindsight="false"),
])
def test_flags_must_be_true_or_false(make):
    """A string such as "false" is not read as true (for hindsight that would reveal the future)."""
    with pytest.raises(TypeError, match=r"(copy|parallel|hindsight) must be true or false, got '(no|false)'"):
        make()


def test_actions_of_another_length_than_the_sub_environments_are_named():
    """Two actions for three envs failed in NumPy's reshape, naming neither the actions nor num_envs."""
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=3, vectorization_mode="vector_entry_point", instance="mk01")
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must hold one action per sub-environment \(3\), got shape \(2,\)"):
        venv.step(np.zeros(2, dtype=np.int64))
    for shape in ((3, 1), (1, 3)):  # three actions, but no batch of three: they were read as one
        with pytest.raises(ValueError, match=rf"got shape \({shape[0]}, {shape[1]}\)"):
            venv.step(np.zeros(shape, dtype=np.int64))


@pytest.mark.parametrize("index", [-1, 3, True, None, 1.0, "a"])
def test_a_sub_environment_index_is_checked(index):
    """NumPy's indexing read -1 as the last env, True as env 1 and None as all of them; 3 was a bare IndexError."""
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=3, vectorization_mode="vector_entry_point", instance="mk01")
    venv.reset(seed=0)
    error = ValueError if isinstance(index, int) and not isinstance(index, bool) else TypeError
    for method in ("offered_pairs", "time_scale", "ops_scale", "schedule", "instance", "simulator"):
        with pytest.raises(error, match=r"index must be an integer >= 0|index must be at most 2"):
            getattr(venv.unwrapped, method)(index)
    assert venv.unwrapped.instance(np.int64(2)).name == "mk01"


def test_vector_sizes_and_a_refused_reset_leave_nothing_changed():
    with pytest.raises(ValueError, match=r"num_envs must be at most 65536, got 10000000"):  # was a MemoryError
        gym.make_vec("DynaSched/DFJSP-v0", num_envs=10**7, vectorization_mode="vector_entry_point", instance="mk01")
    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point", instance="mk01")
    venv.reset(seed=0)
    state = venv.unwrapped.np_random.bit_generator.state
    with pytest.raises(ValueError, match="unknown reset option"):
        venv.reset(seed=5, options={"bogus": 1})
    assert venv.unwrapped.np_random.bit_generator.state == state  # was reseeded before the options were read


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"tier": np.array(["easy", "hard"])}, TypeError, r"tier must be one of .*got ndarray"),  # "truth value of"
    ({"breakdown_policy": np.array(["resume"])}, TypeError, r"breakdown_policy must be one of .*got ndarray"),
    ({"pool_size": 10**30}, ValueError, r"pool_size must be at most 1000000"),  # NumPy's error at the first reset
])
def test_env_arguments_of_the_wrong_kind_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        gym.make("DynaSched/DFJSP-v0", **kwargs)


def test_the_wrappers_and_the_sb3_adapter_name_an_env_of_another_kind():
    """Each failed deep inside (AttributeError about config, KeyError about autoreset_mode)."""
    from dynasched_gym.envs.sb3 import SB3VecEnv

    with pytest.raises(TypeError, match="ForecastFeatures needs a DynaSched env"):
        ForecastFeatures(gym.make("CartPole-v1"))
    with pytest.raises(TypeError, match="ForecastReward needs a DynaSched env"):
        ForecastReward(gym.make("CartPole-v1"))
    with pytest.raises(TypeError, match="SB3VecEnv needs a DynaSched vector env"):
        SB3VecEnv(gym.make("DynaSched/DFJSP-v0", instance="mk01"))
    with pytest.raises(ValueError, match="futures must be at most 1000"):
        ForecastFeatures(gym.make("DynaSched/DFJSP-v0", tier="medium"), futures=1001)


def test_sb3_adapter_finds_the_action_masks_under_gymnasiums_vector_wrappers():
    """Gymnasium's vector wrappers pass no attribute on: get_action_masks failed under NormalizeReward."""
    pytest.importorskip("sb3_contrib")
    from gymnasium.wrappers.vector import NormalizeReward, RecordEpisodeStatistics
    from sb3_contrib.common.maskable.utils import get_action_masks

    from dynasched_gym.envs.sb3 import SB3VecEnv

    base = DFJSPVectorEnv(num_envs=2, instance="mk01", autoreset_mode=AutoresetMode.SAME_STEP)
    venv = SB3VecEnv(NormalizeReward(RecordEpisodeStatistics(base)))
    venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (2, 32) and masks[:, 0].all()
    with pytest.raises(AttributeError, match=r"has no attribute 'no_such_method', nor the envs it wraps"):
        venv.env_method("no_such_method")


def test_sb3_adapter_passes_on_the_infos_of_gymnasiums_vector_wrappers():
    """The adapter built each sub-environment's info from the keys it knew: RecordEpisodeStatistics' ``episode``
    (and any key a wrapper added) was dropped without a word."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    from dynasched_gym.envs.sb3 import SB3VecEnv

    base = DFJSPVectorEnv(num_envs=2, instance="mk01", autoreset_mode=AutoresetMode.SAME_STEP)
    venv = SB3VecEnv(RecordEpisodeStatistics(base))
    venv.reset()
    dones, steps = np.zeros(2, dtype=bool), 0
    while not dones.any():
        _, _, dones, infos = venv.step(np.zeros(2, dtype=np.int64))
        steps += 1
        assert dones.all() or all("episode" not in info for info in infos)
    for info in infos:
        assert info["episode"]["l"] == steps and isinstance(info["episode"]["l"], int)
        assert info["episode"]["r"] == pytest.approx(-info["metrics"]["makespan"])
        assert isinstance(info["metrics"]["makespan"], float) and isinstance(info["ssi"], float)
    assert venv.reset_infos == [{"tier": None}] * 2


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"forecast_futures": 3}, ValueError, r"forecast_futures=3 samples futures for the forecast_features rollouts"),
    ({"forecast_futures": -1}, ValueError, r"forecast_futures must be an integer >= 0, got -1"),
    # was "futures must be at most 1000", naming the forecaster's argument instead of this one
    ({"forecast_features": "EDD:EET", "forecast_futures": 1001}, ValueError,
     r"^forecast_futures must be at most 1000, got 1001$"),
    ({"hindsight": True}, ValueError, r"hindsight=True lets the forecast_rule forecasts see the future"),
    ({"hindsight": "yes"}, TypeError, r"hindsight must be true or false, got 'yes'"),
    ({"autoreset_mode": "next_step"}, ValueError, r"the SB3 adapter resets each finished episode in its final step"),
    # an empty rule, or none, trained on the accrued objective as if forecast_rule were None
    ({"forecast_rule": ""}, ValueError, r"unknown rule ''"),
    ({"forecast_rule": []}, ValueError, r"a forecast reward needs at least one rule"),
    ({"forecast_rule": "", "hindsight": True}, ValueError, r"unknown rule ''"),
    ({"forecast_features": 0}, TypeError, r"forecast_features: rules are one rule name or a sequence"),  # none
    # SB3 stores an observation after the next step, which overwrote the buffer it was handed
    ({"copy": False}, ValueError, r"copy=False hands SB3 the env's observation buffers"),
    ({"keep_mask": False}, ValueError, r"keep_mask=False leaves the action mask out of flat observations, and "
                                       r"flatten=False keeps the Dict ones"),  # the Dict kept its action_mask
])
def test_sb3_adapter_refuses_options_that_would_not_apply(kwargs, error, message):
    """Each was accepted and ignored (or failed as a duplicate keyword) when the option it qualifies was absent."""
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    with pytest.raises(error, match=message):
        make_sb3_vec_env(num_envs=2, instance="mk01", **kwargs)


def test_vector_metadata_gives_render_fps_as_the_single_env():
    """Gymnasium's vector HumanRendering refuses an env without metadata["render_fps"] (RecordVideo falls back to
    30 fps); SyncVectorEnv takes the single env's metadata, so the vector entry point must carry it too."""
    from gymnasium.wrappers.vector import HumanRendering

    venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point", instance="mk01",
                        render_mode="rgb_array")
    assert venv.metadata["render_fps"] == DFJSPEnv.metadata["render_fps"]
    HumanRendering(venv)  # raised ValueError: "The base environment must specify 'render_fps'"


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_make_vec_max_episode_steps_truncates_as_sync_time_limit(mode):
    """gym.make_vec passes max_episode_steps to a vector entry point (and a spec's registered one); each sub-env
    must then truncate as the single env under TimeLimit does (it raised TypeError: unexpected keyword)."""
    kwargs = {"num_envs": 2, "instance": "mk01", "max_episode_steps": 7}
    venv = gym.make_vec("DynaSched/DFJSP-v0", vectorization_mode="vector_entry_point", autoreset_mode=mode, **kwargs)
    sync = gym.make_vec("DynaSched/DFJSP-v0", vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode},
                        **kwargs)
    observation, _ = venv.reset(seed=1)
    expected, _ = sync.reset(seed=1)
    rng = np.random.default_rng(0)
    truncations = 0
    for _ in range(20):
        assert_same_observations([row(observation, i) for i in range(2)], [row(expected, i) for i in range(2)])
        actions = np.array([valid_action(row(observation, i), rng) for i in range(2)])
        observation, rewards, terminated, truncated, info = venv.step(actions)
        expected, sync_rewards, sync_terminated, sync_truncated, sync_info = sync.step(actions)
        assert np.array_equal(rewards, sync_rewards) and np.array_equal(terminated, sync_terminated)
        assert np.array_equal(truncated, sync_truncated)
        if mode == AutoresetMode.SAME_STEP and truncated.any():
            assert_same_observations([info["final_obs"][i] for i in np.flatnonzero(truncated)],
                                     [sync_info["final_obs"][i] for i in np.flatnonzero(truncated)])
            assert "metrics" not in info["final_info"]  # an unfinished schedule has no final metrics
        if mode == AutoresetMode.NEXT_STEP:  # nor in the step's own info
            assert info.get("_metrics", np.zeros(2, dtype=bool)).tolist() == terminated.tolist()
        truncations += int(truncated.sum())
    assert truncations >= 4


def test_sb3_adapter_reports_truncated_episodes():
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=2, instance="mk01", max_episode_steps=5)
    venv.reset()
    for _ in range(5):
        _, _, dones, infos = venv.step(np.zeros(2, dtype=np.int64))  # KeyError 'metrics' at the truncation
    assert dones.all()
    for info in infos:
        assert info["TimeLimit.truncated"] and "metrics" not in info and info["episode"]["l"] == 5
        assert venv.observation_space.contains(info["terminal_observation"])
    # an episode that terminates at the limit (mk01: 55 operations, 55 steps) is no truncated one, as under TimeLimit
    venv = make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=1, instance="mk01", max_episode_steps=55)
    venv.reset()
    for _ in range(55):
        _, _, dones, infos = venv.step(np.zeros(1, dtype=np.int64))
    assert dones[0] and infos[0]["TimeLimit.truncated"] is False and "metrics" in infos[0]
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=2, instance="mk01", max_episode_steps=5,
                         forecast_rule="EDD:EET")


def test_reset_masks_and_seed_lists_are_checked():
    """reset_mask ["no", "no"] or indices [2, 5] were read as all true, and a seed list's True as seed 1."""
    venv = DFJSPVectorEnv(2, instance="mk01")
    venv.reset(seed=0)
    for bad in (["no", "no"], [2, 5], [0.5, 0.0]):
        with pytest.raises(ValueError, match=r"reset_mask must hold one bool \(or 0 / 1\) per sub-environment"):
            venv.reset(options={"reset_mask": bad})
    with pytest.raises(ValueError, match=r"reset_mask must have shape \(2,\), got \(\)"):
        venv.reset(options={"reset_mask": True})
    venv.reset(options={"reset_mask": [1, 0]})  # 0 / 1 integers are a mask
    venv.reset(options={"reset_mask": np.array([False, True])})
    with pytest.raises(TypeError, match=r"seed\[0\] must be an integer >= 0, got True"):
        venv.reset(seed=[True, False])
    with pytest.raises(TypeError, match=r"seed\[0\] must be an integer >= 0, got 1.5"):
        venv.reset(seed=[1.5, 2])
    venv.reset(seed=[None, np.int64(4)])


def test_a_vector_reset_seed_is_checked_as_a_single_envs_is():
    """reset(seed=-1) failed inside Gymnasium (gymnasium.error.Error naming no argument), where a single env and a
    seed list say seed must be >= 0; a 0-d array failed with 'len() of unsized object'."""
    venv = DFJSPVectorEnv(2, instance="mk01")
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0, got -1$"):
        venv.reset(seed=-1)
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0, got np.int64\(-3\)$"):
        venv.reset(seed=np.int64(-3))
    with pytest.raises(TypeError, match=r"seed must be an integer, a list of 2 integers or None.*got array\(3\)"):
        venv.reset(seed=np.array(3))
    venv.reset(seed=np.array([3, 4]))


def test_the_sb3_adapter_refuses_fractional_actions():
    """SB3VecEnv cast its actions to int64: 1.7 played slot 1 and True slot 1, and a wrong count failed in reshape."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("DynaSched/FJSP-v0", num_envs=2)
    venv.reset()
    with pytest.raises(TypeError, match="actions must be integers"):
        venv.step(np.array([1.7, 0.2]))
    with pytest.raises(TypeError, match="actions must be integers"):
        venv.step(np.array([True, False]))
    with pytest.raises(ValueError, match=r"one action per sub-environment \(2\), got shape \(3,\)"):
        venv.step(np.array([0, 0, 0]))
    venv.step(np.array([0, 1]))


def test_copying_a_vector_env_says_how_to_branch_a_simulation_instead():
    """deepcopy and pickle of the vector env (and of the SB3 adapter over it) failed with numba's "cannot pickle
    '_nrt_python._MemInfo' object", naming neither the env nor what to do instead."""
    import copy
    import pickle

    venv = DFJSPVectorEnv(2, instance="mk01")
    venv.reset(seed=0)
    venv.step(np.zeros(2, dtype=np.int64))
    for attempt in (lambda: copy.deepcopy(venv), lambda: pickle.dumps(venv)):
        with pytest.raises(TypeError, match=r"DFJSPVectorEnv cannot be pickled or copied .*"
                                            r"branch\.restore\(venv\.unwrapped\.simulator\(i\)\.snapshot\(\)\)"):
            attempt()
    branch = Simulator(venv.instance(1))  # what the message says, in a sub-environment's mid-episode state
    branch.reset()
    branch.restore(venv.simulator(1).snapshot())
    assert branch.decisions == venv.simulator(1).decisions == 1 and branch.now == venv.simulator(1).now


def test_sb3_env_method_reaches_each_sub_environment_and_set_attr_all_of_them():
    """env_method("schedule", indices=[1]) failed with "missing 1 required positional argument: 'index'" and
    env_method("close") with "'NoneType' object is not subscriptable"; set_attr(..., indices=[0]) set the shared
    attribute for every sub-environment without a word."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=3, instance="mk01")
    venv.set_options([{}, {"instance": "mk02"}, {}])
    venv.reset()
    venv.step(np.zeros(3, dtype=np.int64))
    vector = venv.unwrapped.venv
    assert [s.instance.name for s in venv.env_method("schedule", indices=[1, 2])] == ["mk02", "mk01"]
    assert venv.env_method("time_scale", indices=1) == [vector.time_scale(1)]
    jobs, machines = venv.env_method("offered_pairs")[2]
    assert (jobs.tolist(), machines.tolist()) == tuple(a.tolist() for a in vector.offered_pairs(2))
    assert [m.tolist() for m in venv.env_method("action_masks", indices=[0])] == [vector.action_masks()[0].tolist()]
    with pytest.raises(ValueError, match=r"shared by its 3 sub-environments: it cannot be set for indices=\[0\] only"):
        venv.set_attr("render_mode", "ansi", indices=[0])
    venv.set_attr("render_mode", "ansi", indices=[2, 0, 1])
    assert venv.get_attr("render_mode") == ["ansi"] * 3
    assert venv.env_method("close") == [None] * 3  # as DummyVecEnv's, whose envs' close() return None


def test_sb3_seeds_and_options_apply_to_the_next_reset_only(monkeypatch):
    """As DummyVecEnv's: seed() and set_options() are handed to the next reset() only, a later one is unseeded and
    without options; reset_infos give the tier of each sub-environment's episode, the autoreset's ones too."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import SB3VecEnv

    base = DFJSPVectorEnv(2, tier="easy", autoreset_mode=AutoresetMode.SAME_STEP)
    calls, reset = [], base.reset

    def recording_reset(**kwargs):
        calls.append(kwargs)
        return reset(**kwargs)

    monkeypatch.setattr(base, "reset", recording_reset)
    venv = SB3VecEnv(base)
    venv.seed(3)
    venv.set_options([{}, {"instance": "mk01"}])
    venv.reset()
    assert venv.reset_infos == [{"tier": "easy"}, {"tier": None}]  # mk01 is of no tier
    venv.reset()
    assert calls == [{"seed": [3, 4], "options": {"instance": [None, "mk01"]}}, {"seed": None, "options": None}]
    venv.set_options([{"instance": "mk01"}] * 2)
    venv.reset()
    dones = np.zeros(2, dtype=bool)
    while not dones.all():  # both play mk01, 55 steps; the autoreset draws from the tier's pool
        _, _, dones, _ = venv.step(np.zeros(2, dtype=np.int64))
    assert venv.reset_infos == [{"tier": "easy"}] * 2


def test_sb3_adapter_builds_the_wrappers_it_is_asked_for():
    """Flat observations without the mask fit the adapter's observation space, copy=False is allowed with them (as
    the refusal without flatten=True says), and hindsight reaches the forecast reward."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(num_envs=2, instance="mk01", flatten=True, keep_mask=False, copy=False)
    first = venv.reset()
    kept = first.copy()
    observation = venv.step(np.zeros(2, dtype=np.int64))[0]
    assert venv.observation_space.shape == first.shape[1:] and venv.observation_space.contains(observation[0])
    np.testing.assert_array_equal(first, kept)  # a new array each step, not the env's buffer
    assert make_sb3_vec_env(num_envs=2, instance="mk01", flatten=True).observation_space.shape[0] == \
        venv.observation_space.shape[0] + venv.action_space.n
    rewarded = make_sb3_vec_env(num_envs=1, instance="mk01", forecast_rule="EDD:EET", hindsight=True)
    assert rewarded.get_attr("hindsight") == [True]


def test_sb3_get_images_gives_each_sub_environments_frame():
    """SB3's render() takes get_images(): the vector env's frames, one per sub-environment, or None each (with the
    single env's warning) without a render mode."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import SB3VecEnv

    framed = SB3VecEnv(DFJSPVectorEnv(2, instance="mk01", render_mode="ansi", autoreset_mode=AutoresetMode.SAME_STEP))
    framed.reset()
    frames = framed.get_images()
    assert len(frames) == 2 and all("t=0" in frame for frame in frames)
    bare = SB3VecEnv(DFJSPVectorEnv(2, instance="mk01", autoreset_mode=AutoresetMode.SAME_STEP))
    bare.reset()
    with pytest.warns(UserWarning, match="render\\(\\) called without a render_mode"):
        assert bare.get_images() == [None, None]


@pytest.mark.parametrize(("name", "nearest"), [("flaten", "flatten"), ("forecast_rules", "forecast_rule"),
                                              ("instanse", "instance")])
def test_a_misspelt_sb3_adapter_argument_names_the_nearest_of_the_adapters_and_the_envs(name, nearest):
    """make_sb3_vec_env(flaten=True) was refused by the vector env, which named no nearest argument and listed only
    its own and the env's (not flatten, keep_mask, forecast_rule, ...)."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    with pytest.raises(TypeError, match=rf"make_sb3_vec_env got an unknown argument '{name}' \(did you mean "
                                        rf"'{nearest}'\?\); its arguments are num_envs, flatten, keep_mask, .*"
                                        r"max_episode_steps, tier, .*pool_start"):
        make_sb3_vec_env(num_envs=2, **{name: "mk01"})


def test_the_sb3_adapter_of_another_env_id_says_it_adapts_the_dynasched_ones():
    """make_sb3_vec_env("CartPole-v1") failed in CartPole's vector env: "got an unexpected keyword argument
    'autoreset_mode'", an argument the caller never gave."""
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    with pytest.raises(TypeError, match=re.escape("make_sb3_vec_env adapts the vector envs of DynaSched/DFJSP-v0, "
                                                  "DynaSched/DFJSP-Rules-v0, DynaSched/FJSP-v0; got 'CartPole-v1'")):
        make_sb3_vec_env("CartPole-v1", num_envs=2)
    assert make_sb3_vec_env("dynasched_gym:DynaSched/FJSP-v0", num_envs=1).num_envs == 1
    assert make_sb3_vec_env(gym.spec("DynaSched/FJSP-v0"), num_envs=1).num_envs == 1  # as gym.make_vec takes it


def test_the_sb3_adapter_takes_an_env_id_of_a_dfjsp_vector_env_subclass(monkeypatch):
    """A registered id whose vector entry point is a DFJSPVectorEnv subclass (not one of ENV_SPECS) is adapted."""
    from gymnasium.envs.registration import EnvSpec

    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    class Subclass(DFJSPVectorEnv):
        pass

    spec = EnvSpec("DynaSched/Subclass-v0", entry_point=DFJSPEnv, vector_entry_point=Subclass)
    monkeypatch.setitem(gym.registry, spec.id, spec)
    venv = make_sb3_vec_env(spec.id, num_envs=2, instance="mk01")
    assert isinstance(venv.unwrapped.venv, Subclass) and venv.reset()["action_mask"].shape == (2, 32)


def test_actions_reach_the_kernel_as_one_contiguous_writeable_array():
    """A column of a table (actions[:, t]) or a read-only array was handed on as is: numba compiled another version
    of the step kernel for it, a ~25 s stall on the first step."""
    from dynasched_gym.envs.dfjsp.vector import check_actions

    table = np.array([[0, 5], [1, 6], [2, 7]])
    readonly = np.arange(3)
    readonly.setflags(write=False)
    for passed, expected in ((table[:, 1], [5, 6, 7]), (readonly, [0, 1, 2]), (np.arange(3, dtype=">i8"), [0, 1, 2])):
        actions = check_actions(passed, 3)
        assert actions.dtype == np.int64 and actions.flags.c_contiguous and actions.flags.writeable
        assert actions.tolist() == expected


@pytest.mark.parametrize("mode", ["sync", "vector_entry_point"])
def test_call_get_attr_and_set_attr_answer_as_sync_vector_envs_do(mode):
    """venv.call("action_masks"), get_attr and set_attr, which SyncVectorEnv users call, were AttributeErrors on the
    vector entry point: 'DFJSPVectorEnv' object has no attribute 'call'."""
    venv = gym.make_vec("DynaSched/FJSP-v0", num_envs=3, vectorization_mode=mode)
    venv.reset(seed=0, options={"instance": [None, embedded_path("mk02"), None]} if mode != "sync" else None)
    observation, *_ = venv.step(np.zeros(3, dtype=np.int64))
    masks = venv.call("action_masks")
    assert isinstance(masks, tuple) and [m.tolist() for m in masks] == [(m != 0).tolist() for m in
                                                                         observation["action_mask"]]
    scales = venv.get_attr("time_scale")
    assert len(scales) == 3 and all(isinstance(s, float) and s > 0 for s in scales)
    assert venv.get_attr("observation_space") == (venv.single_observation_space,) * 3
    assert venv.get_attr("action_space") == (venv.single_action_space,) * 3
    assert venv.get_attr("render_mode") == (None,) * 3
    clocks = venv.call("now")  # was an AttributeError on the vector entry point, whose sub-environments' is now(i)
    assert len(clocks) == 3 and all(isinstance(t, float) and t >= 0 for t in clocks)
    venv.set_attr("label", "a")
    assert venv.get_attr("label") == ("a",) * 3
    venv.set_attr("label", ["b"] * 3)
    assert venv.get_attr("label") == ("b",) * 3
    if mode == "vector_entry_point":  # the sub-environments are rows of one env: they share its attributes
        assert [s.instance.name for s in venv.call("schedule")] == ["mk01", "mk02", "mk01"]
        assert clocks == tuple(venv.unwrapped.simulator(i).now for i in range(3))
        with pytest.raises(ValueError, match=r"set_attr\('label'\): the 3 sub-environments share the vector env's "
                                             r"attributes; got different values \['c', None, 'c'\]"):
            venv.set_attr("label", ["c", None, "c"])
        with pytest.raises(ValueError, match=r"set_attr\('label'\) takes one value or 3 \(one per "
                                             r"sub-environment\), got 2"):
            venv.set_attr("label", ["c", "c"])
        assert venv.get_attr("label") == ("b",) * 3
        with pytest.raises(ValueError, match=r"set_attr\('schedule'\) would replace the vector env's own schedule"):
            venv.set_attr("schedule", None)
        with pytest.raises(ValueError, match=r"call\('reset'\) would reset the vector env as a whole"):
            venv.call("reset")
        with pytest.raises(AttributeError, match=r"np_random.*reset\(seed=s\) seeds sub-environment i with s \+ i"):
            venv.get_attr("np_random")
        venv.unwrapped.total = lambda: 7  # a callable of the whole vector env, with no row per sub-environment
        with pytest.raises(TypeError, match=r"call\('total'\) called the vector env's total\(\) once and got int, "
                                            r"not one result per sub-environment \(3\)"):
            venv.call("total")
    venv.close()


@pytest.mark.parametrize("mode", ["sync", "vector_entry_point"])
def test_call_of_a_method_returning_nothing_gives_one_none_per_sub_environment(mode):
    """call("render") without a render mode, which SyncVectorEnv answers with one None per sub-environment, was a
    TypeError on the vector entry point (render() returns one None for the whole vector env); so was call("close")."""
    venv = gym.make_vec("DynaSched/FJSP-v0", num_envs=3, vectorization_mode=mode)
    venv.reset(seed=0)
    with pytest.warns(UserWarning, match="render\\(\\) called without a render_mode"):
        assert venv.call("render") == (None,) * 3
    assert venv.call("close") == (None,) * 3


def test_sb3_get_attr_gives_each_sub_environments_value_as_dummy_vec_env_does():
    """get_attr("time_scale") gave the vector env's bound method time_scale(index) for every index, and
    get_attr("observation_space") the batched Dict of the vector env, where DummyVecEnv over gym.make envs gives each
    env's float and the adapter's own (here flat) observation space."""
    pytest.importorskip("stable_baselines3")
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("DynaSched/FJSP-v0", num_envs=2, flatten=True)
    venv.set_options([{}, {"instance": embedded_path("mk02")}])
    venv.reset()
    vector = venv.unwrapped.venv
    assert venv.get_attr("time_scale") == [vector.time_scale(0), vector.time_scale(1)]
    assert [i.name for i in venv.get_attr("instance", indices=[1])] == ["mk02"]
    assert venv.get_attr("observation_space") == [venv.observation_space] * 2
    assert venv.get_attr("action_space") == [venv.action_space] * 2
    assert venv.get_attr("render_mode") == [None] * 2
    vector.kind = dict  # a callable that is no method: inspect.signature has none for a builtin type
    assert venv.get_attr("kind") == [dict, dict]
