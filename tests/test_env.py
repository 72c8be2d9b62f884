"""The DFJSP environments: registration, Gymnasium conformance, rewards, episodes, invalid actions."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances

import dynasched_gym
from dynasched_gym import Event, EventType, Instance, Job, Machine, load_instance, validate_schedule
from dynasched_gym.core.compiled import JOB_ACTIVE, JOB_COMPLETED
from dynasched_gym.data import path as embedded_path
from dynasched_gym.envs import ENV_SPECS
from dynasched_gym.envs.dfjsp.env import DFJSPEnv, DFJSPRulesEnv, InvalidActionError
from dynasched_gym.envs.dfjsp.features import C_PROC_TIME, C_VALID, G_CANDIDATES, G_CANDIDATES_TRUNCATED
from dynasched_gym.metrics import OBJECTIVE_METRICS, OBJECTIVES

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEVELS = ("concise", "full", "oracle")


def valid_action(observation: dict[str, np.ndarray], rng: np.random.Generator) -> int:
    """A uniformly random valid action (0 when none is valid: the episode is over)."""
    valid = np.flatnonzero(observation["action_mask"])
    return int(rng.choice(valid)) if valid.size else 0


def play(env: gym.Env, rng: np.random.Generator, **reset_kwargs) -> tuple[list, list[float], dict]:
    """One episode of random valid actions: (observations, rewards, final info)."""
    observation, info = env.reset(**reset_kwargs)
    observations, rewards = [observation], []
    terminated = False
    while not terminated:
        observation, reward, terminated, truncated, info = env.step(valid_action(observation, rng))
        assert not truncated
        observations.append(observation)
        rewards.append(reward)
    return observations, rewards, info


def assert_same_observations(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            assert x[key].tobytes() == y[key].tobytes(), key


# ---------------------------------------------------------------------------------- registration
def test_ids_are_registered_on_import_and_make_with_the_module_prefix():
    for env_id in ENV_SPECS:
        assert env_id in gym.registry
    env = gym.make("dynasched_gym:DynaSched/FJSP-v0")
    assert isinstance(env.unwrapped, DFJSPEnv)
    assert env.unwrapped.instance.name == load_instance(embedded_path("mk01")).name


def test_each_id_pairs_its_env_class_with_that_class_s_vector_env():
    """gym.make and gym.make_vec of one id play the same environment class (DFJSP-Rules-v0 vectorised is the rules
    env, FJSP-v0 the fixed-instance one)."""
    from gymnasium.envs.registration import load_env_creator

    pairs = {env_id: (load_env_creator(gym.spec(env_id).entry_point),
                      load_env_creator(gym.spec(env_id).vector_entry_point).env_class) for env_id in ENV_SPECS}
    assert all(env is vector_env for env, vector_env in pairs.values()), pairs
    assert len({env for env, _ in pairs.values()}) == len(ENV_SPECS)


def test_import_stays_light():
    """No numba, no matplotlib, and the core imports nothing above it (DESIGN: core <- envs <- agents <- scripts):
    registering the ids needs only their entry-point strings."""
    code = ("import sys, dynasched_gym; print(sorted(m for m in ('numba', 'matplotlib', 'dynasched_gym.envs', "
            "'dynasched_gym.agents') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("env_id", sorted(ENV_SPECS))
@pytest.mark.parametrize("observability", LEVELS)
def test_gymnasium_check_env_passes_without_warnings(env_id, observability):
    env = gym.make(env_id, instance="dsbx-medium", observability=observability, max_candidates=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # check_env renders in every mode: headless, "human" rightly warns that it shows nothing
        warnings.filterwarnings("ignore", "render_mode='human' shows the Gantt chart in a window", UserWarning)
        check_env(env.unwrapped)
        env.reset(seed=1)  # the passive checker of gym.make runs on the first reset and step
        env.step(env.action_space.sample())


def test_sb3_check_env_passes_on_the_flattened_env():
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    from dynasched_gym.envs.wrappers import FlattenDictObservation

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_checker.check_env(FlattenDictObservation(gym.make("DynaSched/DFJSP-v0", instance="mk01")))


# ---------------------------------------------------------------------------------------- rewards
@SETTINGS
@given(inst=instances(max_jobs=6, max_machines=4, max_events=12), objective=st.sampled_from(OBJECTIVES),
       scale=st.sampled_from([1.0, 0.01]), seed=st.integers(0, 2**32 - 1))
def test_rewards_telescope_to_minus_the_objective(inst, objective, scale, seed):
    env = DFJSPEnv(instance=inst, objective=objective, reward_scale=scale, observability="oracle")
    observations, rewards, info = play(env, np.random.default_rng(seed), seed=seed)
    final = info["metrics"][OBJECTIVE_METRICS[objective]]
    assert math.fsum(rewards) == pytest.approx(-scale * final, rel=1e-9, abs=1e-9)
    assert info["metrics"] == env.schedule().metrics
    for observation in observations:
        assert env.observation_space.contains(observation)


@SETTINGS
@given(inst=instances(max_jobs=6, max_machines=4, max_events=14), seed=st.integers(0, 2**32 - 1),
       rules=st.booleans())
def test_random_valid_episodes_give_valid_schedules(inst, seed, rules):
    env = (DFJSPRulesEnv if rules else DFJSPEnv)(instance=inst, max_candidates=3)
    play(env, np.random.default_rng(seed), seed=seed)
    schedule = env.schedule()
    assert schedule.finished
    report = validate_schedule(schedule)
    assert report.ok, f"{inst.to_json()}\n{report}"


def documented_potential(sim, objective: str) -> float:
    """The potential of envs/dfjsp/kernels.py ``potential`` worked out from its docstring, from the simulator state."""
    st_, now = sim.state, sim.now
    completed, open_ = st_.job_status == JOB_COMPLETED, st_.job_status == JOB_ACTIVE
    if objective == "makespan":
        running = st_.machine_end[st_.machine_job >= 0]
        return float(max([0.0, *st_.job_completion[completed], *running]))
    if objective == "flow_time":
        release = sim.instance.job_release
        total = (st_.job_completion[completed] - release[completed]).sum() + (now - release[open_]).sum()
        return float(total / max(1, np.count_nonzero(completed | open_)))
    has_due = ~np.isnan(st_.job_due)
    late = np.where(completed, st_.job_completion - st_.job_due, now - st_.job_due)
    counted = has_due & (completed | open_)
    late = np.maximum(0.0, late[counted])
    return float((late * st_.job_weight[counted]).sum() if objective == "weighted_tardiness" else late.sum())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_jobs=5, max_machines=3, max_events=10), objective=st.sampled_from(OBJECTIVES),
       seed=st.integers(0, 2**32 - 1))
def test_each_reward_is_minus_the_change_of_the_documented_potential(inst, objective, seed):
    # the telescoping sum alone holds for any potential that ends at the metric (one that left running operations
    # or waiting jobs out gave other rewards on the way); two episodes on one env: each reset starts again from 0
    env = DFJSPEnv(instance=inst, objective=objective, reward_scale=0.5)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        observation, _ = env.reset(seed=seed)
        before = 0.0  # the potential counts from 0 before the first step (kernels.py), whatever the clock says
        rewards, terminated = [], False
        while not terminated:
            observation, reward, terminated, _, info = env.step(valid_action(observation, rng))
            after = documented_potential(env.simulator, objective)
            assert reward == pytest.approx(-0.5 * (after - before), rel=1e-9, abs=1e-9)
            assert math.copysign(1.0, reward) == 1.0 or reward != 0.0  # no -0.0 where the potential did not move
            before = after
            rewards.append(reward)
        assert math.fsum(rewards) == pytest.approx(-0.5 * info["metrics"][OBJECTIVE_METRICS[objective]], rel=1e-9,
                                                   abs=1e-9)


def test_embedded_episode_completes_with_a_valid_schedule():
    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium", objective="weighted_tardiness")
    _, rewards, info = play(env, np.random.default_rng(0), seed=0)
    assert validate_schedule(env.unwrapped.schedule()).ok
    assert math.fsum(rewards) == pytest.approx(-info["metrics"]["total_weighted_tardiness"], rel=1e-9)


# ------------------------------------------------------------------------------------ determinism
@pytest.mark.parametrize("cls", [DFJSPEnv, DFJSPRulesEnv])
def test_same_seed_gives_identical_episodes(cls):
    runs = []
    for _ in range(2):
        env = cls(instance="mk03", observability="full")
        observations, rewards, _ = play(env, np.random.default_rng(7), seed=11)
        runs.append((observations, rewards, env.schedule()))
    assert_same_observations(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    assert runs[0][2].to_json() == runs[1][2].to_json()


def test_random_rule_follows_the_reset_seed():
    env = DFJSPRulesEnv(instance="mk05")
    random_rule = env.rules.index("RANDOM:EET")

    def makespan(seed: int) -> float:
        env.reset(seed=seed)
        terminated = False
        while not terminated:
            _, _, terminated, _, info = env.step(random_rule)
        return info["metrics"]["makespan"]

    first = [makespan(s) for s in range(6)]
    assert first == [makespan(s) for s in range(6)]
    assert len(set(first)) > 1


# --------------------------------------------------------------------------- invalid actions
def test_invalid_actions_are_replaced_by_slot_zero_and_counted():
    env, twin = DFJSPEnv(instance="mk01"), DFJSPEnv(instance="mk01")
    observation, _ = env.reset(seed=0)
    twin.reset(seed=0)
    padding = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    for count, action in enumerate([padding, -3, 10**6, 10**20, np.uint64(2**63 + 5)], start=1):  # int64 overflowed
        observation, reward, _, _, info = env.step(action)
        expected, expected_reward, _, _, _ = twin.step(0)
        assert info["invalid_actions"] == count
        assert reward == expected_reward
        assert_same_observations([observation], [expected])


def test_the_invalid_action_count_starts_again_with_each_episode():
    inst = Instance.build("two-ops", [Machine("M0")], [Job("J0", [{0: 1.0}, {0: 1.0}])])
    env = DFJSPEnv(instance=inst, max_candidates=2)
    env.reset(seed=0)
    assert env.step(1)[4]["invalid_actions"] == 1  # slot 1 is padding: one pair at a time
    assert env.step(0)[2]
    env.reset(seed=0)
    assert env.step(0)[4]["invalid_actions"] == 0


def test_invalid_action_raise_leaves_the_state_unchanged():
    env = DFJSPEnv(instance="mk01", invalid_action="raise")
    observation, _ = env.reset(seed=0)
    padding = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    with pytest.raises(InvalidActionError, match="not valid now"):
        env.step(padding)
    again, _, _, _, info = env.step(0)
    twin = DFJSPEnv(instance="mk01")
    twin.reset(seed=0)
    assert_same_observations([again], [twin.step(0)[0]])
    assert info["invalid_actions"] == 0


def test_action_masks_match_the_observation_and_candidates():
    env = DFJSPEnv(instance="mk10", max_candidates=4)
    observation, _ = env.reset(seed=0)
    assert env.action_masks().dtype == bool
    assert np.array_equal(env.action_masks(), observation["action_mask"] == 1)
    valid = observation["candidates"][:, 0]
    assert np.array_equal(valid == 1, env.action_masks())
    assert DFJSPRulesEnv(instance="mk10").reset(seed=0)[0]["action_mask"].all()


@SETTINGS
@given(inst=instances(max_jobs=6, max_machines=4, max_events=12), k=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_slots_offer_the_longest_waiting_pairs_in_job_then_eligible_machine_order(inst, k, seed):
    """The documented ranking against a stable sort of the simulator's startable pairs (job order, then the
    operation's eligible-machine order) by ready time: the first K fill the slots, the rest are padding (-1, mask 0,
    row 0), and the global columns count them."""
    env = DFJSPEnv(instance=inst, max_candidates=k, time_scale=1.0)
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    terminated = False
    while not terminated:
        jobs, machines, times = env.simulator.candidates()
        order = sorted(range(len(jobs)), key=lambda c: env.simulator.state.job_ready[jobs[c]])[:k]
        offered = len(order)
        expected = (np.full(k, -1), np.full(k, -1))
        expected[0][:offered], expected[1][:offered] = jobs[order], machines[order]
        slot_jobs, slot_machines = env.offered_pairs()
        assert slot_jobs.tolist() == expected[0].tolist() and slot_machines.tolist() == expected[1].tolist()
        assert observation["action_mask"].tolist() == [1] * offered + [0] * (k - offered)
        assert observation["candidates"][:, C_VALID].tolist() == [1.0] * offered + [0.0] * (k - offered)
        np.testing.assert_array_equal(observation["candidates"][:offered, C_PROC_TIME], times[order].astype(np.float32))
        assert not observation["candidates"][offered:].any()
        assert observation["global"][G_CANDIDATES] == np.float32(offered / k)
        assert observation["global"][G_CANDIDATES_TRUNCATED] == (len(jobs) > k)
        observation, _, terminated, _, _ = env.step(valid_action(observation, rng))


# ------------------------------------------------------------------------------ resets, options
def test_reset_info_and_instance_override():
    env = DFJSPEnv(instance="mk01")
    _, info = env.reset(seed=0)
    assert info == {"tier": None, "invalid_actions": 0}  # no SSI before the end: it rates the future events too
    other = load_instance(embedded_path("mk02"))
    assert other.num_machines == env.unwrapped.instance.num_machines
    env.reset(options={"instance": other})
    assert env.unwrapped.instance is other
    env.reset()
    assert env.unwrapped.instance.name == load_instance(embedded_path("mk01")).name
    with pytest.raises(ValueError, match="machines but this env's observation space"):
        env.reset(options={"instance": "ta01"})
    for option in ("instanse", "reset_mask"):  # a single env has no sub-environments to mask
        with pytest.raises(ValueError, match="unknown reset option"):
            env.reset(options={option: other})


def test_a_failed_reset_changes_nothing():
    env, twin = DFJSPEnv(instance="mk01"), DFJSPEnv(instance="mk01")
    env.reset(seed=3)
    twin.reset(seed=3)
    state = env.np_random.bit_generator.state
    with pytest.raises(ValueError, match="machines but this env's observation space"):
        env.reset(seed=99, options={"instance": "ta01"})  # it used to reseed first, and fail on loading
    assert env.np_random.bit_generator.state == state
    assert_same_observations([env.step(0)[0]], [twin.step(0)[0]])  # the episode before it goes on


def test_an_instance_file_rewritten_between_resets_is_read_again(tmp_path):
    def one_op(time: float) -> Instance:
        return Instance.build("x", [Machine("M0")], [Job("J0", [{0: time}])])

    path = tmp_path / "x.json"
    env = DFJSPEnv(instance=one_op(1.0))
    makespans, instances = [], []
    for time in (3.0, 3.0, 7.0):  # the same bytes twice, then other bytes of the same length
        one_op(time).to_json(path)
        env.reset(options={"instance": str(path)})
        instances.append(env.instance)
        env.step(0)
        makespans.append(env.schedule().metrics["makespan"])
    assert makespans == [3.0, 3.0, 7.0]
    assert instances[1] is instances[0] and instances[2] is not instances[1]  # read again only when rewritten


def test_an_instance_spec_reads_only_what_a_loader_would_to_tell_a_rewrite(tmp_path, monkeypatch):
    """The memo's key read every file below a directory (``instance="/usr"`` ran on and on) and ``instance=""`` read
    the whole current directory before the loader refused it; now only a directory's top files are hashed, at most
    MAX_KEY_BYTES of them, and a blank name is refused first."""
    from dynasched_gym.envs.dfjsp import episodes

    source = episodes.InstanceSource("mk01", None, "small", None)
    dsbx = tmp_path / "dsbx"
    shutil.copytree(dynasched_gym.data.path("dsbx-medium"), dsbx)
    (dsbx / "deep").mkdir()
    (dsbx / "deep" / "big.bin").write_bytes(b"\0" * 1000)
    read = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or real(self))
    assert source.resolve(str(dsbx)).num_jobs == 243
    assert "big.bin" not in read and "events.jsonl" in read
    monkeypatch.chdir(tmp_path)
    read.clear()
    with pytest.raises(ValueError, match="instance must be a path or an embedded name"):
        source.resolve("")
    assert read == []
    monkeypatch.setattr(episodes, "MAX_KEY_BYTES", 10)
    assert episodes._path_key(dsbx) is None  # too much to hash: not memoised, the loader reads it as usual
    assert source.resolve(str(dsbx)) is not source.resolve(str(dsbx))


def test_an_embedded_name_is_memoised_and_a_folders_key_tells_bytes_moved_between_its_files(tmp_path):
    """An embedded name (no path) never changes: resolved once. A folder's key names each file, so a byte moved from
    one file to the next (the same bytes in the same order) is a rewrite."""
    from dynasched_gym.envs.dfjsp import episodes

    source = episodes.InstanceSource("mk01", None, "small", None)
    assert source.resolve("mk02") is source.resolve("mk02")
    keys = []
    for first, second in (("ab", "c"), ("a", "bc")):
        (tmp_path / "a.csv").write_text(first)
        (tmp_path / "b.csv").write_text(second)
        keys.append(episodes._path_key(tmp_path))
    assert keys[0] != keys[1]


def test_breakdown_policy_override():
    inst = Instance.build("b", [Machine("M0")], [Job("J0", [{0: 10.0}])],
                          [Event(4.0, EventType.BREAKDOWN, machine=0, duration=2.0)])
    ends = {}
    for policy in ("resume", "restart"):
        env = DFJSPEnv(instance=inst, breakdown_policy=policy)
        env.reset(seed=0)
        assert env.unwrapped.instance.breakdown_policy == policy
        while not env.step(0)[2]:
            pass
        ends[policy] = env.schedule().metrics["makespan"]
    assert ends == {"resume": 12.0, "restart": 16.0}


def test_bad_arguments_raise_helpful_errors():
    with pytest.raises(ValueError, match="objective must be one of"):
        DFJSPEnv(instance="mk01", objective="lateness")
    with pytest.raises(ValueError, match="observability must be one of"):
        DFJSPEnv(instance="mk01", observability="partial")
    with pytest.raises(ValueError, match="max_candidates"):
        DFJSPEnv(instance="mk01", max_candidates=0)
    with pytest.raises(ValueError, match=r"max_candidates must be at most 65536.*got 1000000000000"):
        DFJSPEnv(instance="mk01", max_candidates=10**12)  # was a MemoryError allocating the slot arrays
    with pytest.raises(ValueError, match="breakdown_policy"):
        DFJSPEnv(instance="mk01", breakdown_policy="redo")
    with pytest.raises(TypeError, match="instance must be"):
        DFJSPEnv(instance=3)
    with pytest.raises(ValueError, match="FJSP-v0 plays a fixed instance"):
        gym.make("DynaSched/FJSP-v0", instance=None)
    for name, value, error in [("reward_scale", None, TypeError), ("reward_scale", "1", TypeError),
                               ("reward_scale", True, TypeError), ("reward_scale", float("nan"), ValueError),
                               ("time_scale", "5", TypeError), ("time_scale", 0.0, ValueError)]:
        with pytest.raises(error, match=f"{name} must be a finite number > 0, got {value!r}"):
            DFJSPEnv(instance="mk01", **{name: value})
    for value, error in ((2.5, TypeError), (True, TypeError), ("10", TypeError), (None, TypeError), (0, ValueError)):
        with pytest.raises(error, match=f"pool_size must be an integer >= 1, got {value!r}"):
            DFJSPEnv(pool_size=value)
    with pytest.raises(ValueError, match=r"tier must be one of .* got 'bogus'"):  # checked even when unused
        DFJSPEnv(instance="mk01", tier="bogus")
    with pytest.raises(ValueError, match=r"size must be one of .* got 'nope'"):
        gym.make("DynaSched/FJSP-v0", instance="mk01", size="nope")
    env = DFJSPEnv(instance="mk01")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=0)
    for action in (1.7, "3", np.float32(2.0), True, np.bool_(True)):  # never read as a slot
        with pytest.raises(TypeError, match=re.escape(f"action must be an integer (an action slot), got {action!r}")):
            env.step(action)
    assert env.step(np.array(0))[4]["invalid_actions"] == 0


@pytest.mark.parametrize(("make", "message"), [
    (lambda: gym.make("DynaSched/DFJSP-v0", teir="hard"), "DFJSPEnv got an unknown argument 'teir' (did you mean "
     "'tier'?); its arguments are tier, size, instance, objective, observability, max_candidates,"),
    (lambda: gym.make("DynaSched/FJSP-v0", num_candidates=8), "FJSPEnv got an unknown argument 'num_candidates' "
     "(did you mean 'max_candidates'?)"),
    (lambda: gym.make("DynaSched/DFJSP-Rules-v0", foo=1), "DFJSPRulesEnv got an unknown argument 'foo'; its "),
    (lambda: gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point",
                          objectve="makespan"), "DFJSPVectorEnv got an unknown argument 'objectve' (did you mean "),
    # the vector env's own arguments are among them: it was said to be none of the single env's
    (lambda: gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="vector_entry_point",
                          autoreset_mod="same_step"), "DFJSPVectorEnv got an unknown argument 'autoreset_mod' (did "
     "you mean 'autoreset_mode'?); its arguments are num_envs, autoreset_mode, copy, parallel, max_episode_steps, "
     "tier, size,"),
    # a vector env's argument given to the single envs of the sync and async modes: "did you mean 'render_mode'?"
    (lambda: gym.make_vec("DynaSched/DFJSP-v0", num_envs=2, vectorization_mode="sync", instance="mk01",
                          autoreset_mode="same_step"), "DFJSPEnv got 'autoreset_mode', an argument of the vector env "
     "DFJSPVectorEnv, not of a single env: gym.make_vec(..., vectorization_mode='vector_entry_point') passes it on; "
     "the 'sync' and 'async' modes take Gymnasium's autoreset_mode and copy in vector_kwargs={...}"),
    (lambda: gym.make("DynaSched/DFJSP-Rules-v0", num_envs=4), "DFJSPRulesEnv got 'num_envs', an argument of the "
     "vector env DFJSPRulesVectorEnv, not of a single env: gym.make_vec"),
])
def test_an_unknown_argument_names_the_nearest_and_the_envs_arguments(make, message):
    """Python's "DFJSPEnv.__init__() got an unexpected keyword argument 'teir'" named none of the env's arguments."""
    with pytest.raises(TypeError, match=re.escape(message)):
        make()


def test_an_episode_without_decisions_terminates_on_its_first_step():
    inst = Instance.build("c", [Machine("M0")], [Job("J0", [{0: 3.0}], release=5.0)],
                          [Event(1.0, EventType.CANCELLATION, job=0)])
    env = DFJSPEnv(instance=inst)
    observation, _ = env.reset(seed=0)
    assert not observation["action_mask"].any()
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 0.0
    assert info["metrics"]["num_cancelled_jobs"] == 1


def test_an_instance_without_an_ssi_score_still_plays(monkeypatch):
    def overflow(instance):  # as processing times of 1e200 did, before instances were bounded (MAX_MAGNITUDE)
        raise OverflowError(34, "Numerical result out of range")

    monkeypatch.setattr("dynasched_gym.generation.ssi", overflow)
    huge = Instance.build("huge", [Machine("M0"), Machine("M1")],
                          [Job("J0", [{0: 1e20}]), Job("J1", [{1: 2.0}, {0: 1.0}])])
    env = DFJSPEnv(instance=huge)
    env.reset(seed=0)
    terminated = False
    with pytest.warns(RuntimeWarning, match="'huge': no SSI score"):
        while not terminated:
            _, _, terminated, _, info = env.step(0)
    assert info["metrics"]["makespan"] == 1e20 and info["ssi"] is None


def test_an_ssi_that_refuses_an_instance_as_a_value_error_is_none_too(monkeypatch):
    """A ValueError of the SSI (a degenerate instance) is reported as its ArithmeticErrors are, not raised at the
    episode's last step."""
    from dynasched_gym.envs.dfjsp.episodes import instance_ssi

    def refuse(instance):
        raise ValueError("degenerate")

    monkeypatch.setattr("dynasched_gym.generation.ssi", refuse)
    with pytest.warns(RuntimeWarning, match=r"'mk01': no SSI score \(ValueError: degenerate\)"):
        assert instance_ssi(load_instance(embedded_path("mk01"))) is None


def test_amount_features_stay_non_negative_for_events_within_eps_of_now():
    # job 1 is released 5e-10 after job 0 ends: both happen "now", so its waiting time is 0, not -5e-10
    inst = Instance.build("eps", [Machine("M0")], [Job("J0", [{0: 1.0}]), Job("J1", [{0: 1.0}], release=1.0 + 5e-10)])
    env = DFJSPEnv(instance=inst, observability="oracle")
    env.reset(seed=0)
    observation, *_ = env.step(0)
    assert observation["action_mask"][0] and env.observation_space.contains(observation)


# -------------------------------------------------------------------------------------- render
def test_render_modes():
    text = DFJSPEnv(instance="dsbx-medium", render_mode="ansi")
    text.reset(seed=0)
    text.step(0)
    assert "decisions=1" in text.render()
    gantt = DFJSPEnv(instance="dsbx-medium", render_mode="rgb_array")
    gantt.reset(seed=0)
    for _ in range(200):
        gantt.step(0)
    frame = gantt.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 10  # bars, downtime, markers: not a blank canvas
    with pytest.raises(ValueError, match="render_mode"):
        DFJSPEnv(instance="mk01", render_mode="video")


def test_render_tells_the_times_of_a_long_horizon_apart():
    """The text and the Gantt chart's title wrote times with :g, 6 significant digits: from 1e6 on, the clock at
    1000001.5 and a machine busy until 1000004 read "t=1e+06" and "until 1e+06" (the charts' tooltips and titles
    already wrote such times with the digits that tell them apart)."""
    from dynasched_gym import Simulator
    from dynasched_gym.envs.dfjsp import viewer

    inst = Instance.build("long", [Machine("M0"), Machine("M1")], [
        Job("a", [{0: 2.0}], release=1e6), Job("b", [{1: 4.0}], release=1e6), Job("c", [{0: 1.5}], release=1e6)])
    sim = Simulator(inst)
    sim.reset()
    sim.run("SPT", max_decisions=2)  # c on M0 until 1000001.5, b on M1 until 1000004; a waits for M0
    assert sim.now == 1000001.5
    text = viewer.render_text(sim, "makespan")
    assert text.startswith("t=1000001.5 ") and "M1: job 1 until 1000004\n" in text + "\n"
    assert viewer._figure(sim).get_suptitle().startswith("long  t=1000001.5  decisions=2")


def test_render_text_tells_each_machine_busy_down_or_idle_and_counts_the_jobs():
    from dynasched_gym import Simulator
    from dynasched_gym.envs.dfjsp import viewer

    inst = Instance.build("shop", [Machine(f"M{i}") for i in range(4)], [
        Job("a", [{0: 5.0}]), Job("b", [{1: 3.0}]), Job("c", [{0: 1.0}]), Job("d", [{0: 1.0}]),
        Job("e", [{1: 1.0, 3: 2.0}], release=4.0)],
        [Event(0.5, EventType.BREAKDOWN, machine=2, duration=10.0), Event(0.5, EventType.CANCELLATION, job=3),
         Event(1.0, EventType.MAINTENANCE, machine=1, duration=2.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.run("SPT", max_decisions=2)  # c on M0 until 1, b on M1 until 3; d cancelled; M1's maintenance waits for b
    assert viewer.render_text(sim, "makespan").split("\n") == [
        "t=1  decisions=2  objective=makespan  jobs: 2 open, 1 completed, 1 cancelled",
        "          M0: idle", "          M1: job 1 until 3  (maintenance queued)", "          M2: breakdown",
        "          M3: idle"]
    sim.run("SPT", max_decisions=1)  # a on M0; at 4, e arrives, M1 in maintenance from 3 to 5
    assert viewer.render_text(sim, "total_weighted_tardiness").split("\n") == [
        "t=4  decisions=3  objective=total_weighted_tardiness  jobs: 2 open, 2 completed, 1 cancelled",
        "          M0: job 0 until 6", "          M1: maintenance", "          M2: breakdown", "          M3: idle"]


def test_human_render_draws_a_window_figure(monkeypatch):
    import matplotlib

    monkeypatch.setattr(matplotlib, "get_backend", lambda: "agg")
    import matplotlib.pyplot as plt

    plt.switch_backend("agg")
    env = DFJSPEnv(instance="mk01", render_mode="human")
    with pytest.warns(UserWarning, match=r"backend 'agg' has none \(no display\?\): nothing is shown") as caught:
        env.reset(seed=0)  # headless, it said nothing: the user saw no window and no word
        env.step(0)
    assert len([w for w in caught if "nothing is shown" in str(w.message)]) == 1  # once per window
    assert plt.get_fignums()  # Agg still draws
    env.close()
    assert not plt.get_fignums()


def test_package_exposes_the_env_classes_lazily():
    import dynasched_gym.envs as envs

    assert envs.DFJSPEnv is DFJSPEnv
    with pytest.raises(AttributeError):
        envs.NoSuchEnv  # noqa: B018
    assert dynasched_gym.envs is envs


def test_the_env_simulator_follows_the_episode():
    """``env.simulator`` reads the env's own state: mid-episode it is not done and offers what the env offers."""
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=64)
    env.reset(seed=0)
    env.step(0)
    sim = env.unwrapped.simulator
    jobs, machines, _ = sim.candidates()
    assert not sim.done and len(jobs) == int(env.unwrapped.action_masks().sum()) > 1
    offered_jobs, offered_machines = env.unwrapped.offered_pairs()
    offered = {(j, m) for j, m in zip(offered_jobs.tolist(), offered_machines.tolist()) if j >= 0}
    assert set(zip(jobs.tolist(), machines.tolist())) == offered


def test_copying_an_env_says_how_to_branch_the_simulation_instead():
    import copy
    import pickle

    env = gym.make("DynaSched/DFJSP-v0", instance="dsbx-medium")
    env.reset(seed=0)
    for _ in range(20):
        env.step(0)
    for attempt in (lambda: copy.deepcopy(env.unwrapped), lambda: pickle.dumps(env.unwrapped)):
        with pytest.raises(TypeError, match=r"branch\.restore\(env\.unwrapped\.simulator\.snapshot\(\)\)"):
            attempt()
    sim = env.unwrapped.simulator
    branch = dynasched_gym.Simulator(env.unwrapped.instance)
    branch.reset()
    branch.restore(sim.snapshot())
    before = (sim.now, sim.decisions)
    while not branch.done:
        jobs, machines, _ = branch.candidates()
        branch.step(jobs[0], machines[0])
    assert branch.schedule().finished and (sim.now, sim.decisions) == before  # the env's episode is untouched


def test_numpy_integer_max_candidates_is_an_int():
    """``np.int64(8)`` was checked and then handed on as is: Gymnasium's MultiBinary refused it, naming no argument."""
    for env_id in ("DynaSched/DFJSP-v0", "DynaSched/DFJSP-Rules-v0"):
        env = gym.make(env_id, instance="mk01", max_candidates=np.int64(8))
        assert type(env.unwrapped.config.max_candidates) is int
    assert gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=np.int32(8)).action_space.n == 8


@pytest.mark.parametrize(("options", "message"), [
    ("mk01", r"reset options must be a dict \(or None\), got str: 'mk01'"),  # was: unknown options 'm', 'k', ...
    (["instance"], r"reset options must be a dict \(or None\), got list"),  # was: AttributeError
])
def test_reset_options_that_are_no_dict_are_named(options, message):
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    with pytest.raises(TypeError, match=message):
        env.reset(options=options)
    assert env.reset(options={})[0]["action_mask"].any()  # an empty dict is no option


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"instance": 3.5}, TypeError, r"instance must be an Instance, .*, got float: 3\.5$"),  # was: "got float"
    # was: "'<' not supported between instances of 'str' and 'int'"
    ({1: 0, "instanse": "mk01"}, ValueError, r"unknown reset option\(s\) \['instanse', 1\]"),
])
def test_reset_options_of_the_wrong_kind_are_named_with_their_value(options, error, message):
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    with pytest.raises(error, match=message):
        env.reset(options=options)


def test_the_episode_views_before_the_first_reset_say_to_reset():
    """render() and schedule() showed a made-up state (every machine busy with job 0, every job cancelled)."""
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01", render_mode="ansi").unwrapped
    for view in (env.render, env.schedule, lambda: env.simulator):
        with pytest.raises(RuntimeError, match=r"no episode has begun: call reset\(\) first"):
            view()
    env.reset(seed=0)
    assert "t=0" in env.render() and env.schedule().metrics["num_cancelled_jobs"] == 0


@pytest.mark.parametrize(("spec", "error", "message"), [
    ("", ValueError, r"instance must be a path or an embedded name \(.*\), got ''"),  # was: "., line 1"
    (__file__.rpartition("/")[0], ValueError, r"a directory that is no instance"),  # was: "unrecognised format"
])
def test_an_instance_argument_that_names_no_instance_says_what_it_is(spec, error, message):
    with pytest.raises(error, match=message):
        gym.make("DynaSched/DFJSP-v0", instance=spec)


def test_a_reset_seed_is_an_integer_numpy_ones_too_bools_not():
    """reset(seed=True) played seed 1; a NumPy integer, which the vector env takes, was refused by Gymnasium."""
    env = DFJSPEnv(tier="easy")
    with pytest.raises(TypeError, match="seed must be an integer >= 0, got True"):
        env.reset(seed=True)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
        env.reset(seed=-1)
    assert env.reset(seed=np.int64(3))[0]["machines"].tolist() == env.reset(seed=3)[0]["machines"].tolist()


def test_wrapper_settings_and_order_are_checked():
    """keep_mask="no" appended the mask; a wrapper over flat observations failed with an IndexError or a
    TypeError of its own; future_pool="hard" failed with 'multiple values for argument slots'."""
    from dynasched_gym.envs.wrappers import FlattenDictObservation, ForecastFeatures, ObservabilityWrapper

    with pytest.raises(TypeError, match="keep_mask must be true or false, got 'no'"):
        FlattenDictObservation(gym.make("DynaSched/FJSP-v0"), keep_mask="no")
    flat = FlattenDictObservation(gym.make("DynaSched/FJSP-v0"))
    for wrapper in (ObservabilityWrapper, ForecastFeatures, FlattenDictObservation):
        args = ("concise",) if wrapper is ObservabilityWrapper else ()
        with pytest.raises(TypeError, match=f"{wrapper.__name__} wraps an env with the Dict observations .*got Box"):
            wrapper(flat, *args)
    with pytest.raises(TypeError, match=r"future_pool must be a \(tier, size\) pair .*got 'hard'"):
        ForecastFeatures(gym.make("DynaSched/FJSP-v0"), futures=2, future_pool="hard")


def test_each_episode_draws_its_own_kernel_random_stream() -> None:
    """The random rule's xorshift stream is seeded per episode from the env's generator (over all of uint64 but 0)."""
    env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
    streams = set()
    for seed in range(8):
        env.reset(seed=seed)
        streams.add(int(env.unwrapped._batch.works.rng[0, 0]))
    assert len(streams) == 8 and 0 not in streams
