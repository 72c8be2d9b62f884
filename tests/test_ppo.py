"""PPO: the slot policy is permutation-invariant; a short training run saves, reloads, evaluates and resumes;
the shipped checkpoints load and play."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import re
import shlex
import shutil
import sys
import threading
import time
import warnings
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
import yaml
from hydra import compose, initialize_config_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sb3_contrib import MaskablePPO
from stable_baselines3.common.save_util import data_to_json
from stable_baselines3.common.utils import FloatSchedule, LinearSchedule

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import rollout, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.policy import INTERACTIONS, SlotPolicy, masked_pool
from dynasched_gym.agents.ppo import PPOAgent, shipped_checkpoint
from dynasched_gym.agents.rules import rule_objectives
from dynasched_gym.envs.dfjsp.episodes import pool_scales
from dynasched_gym.envs.wrappers import (
    FORECASTS_KEY,
    HINDSIGHT_KEY,
    ForecastFeatures,
    ForecastReward,
    with_forecast_space,
)
from dynasched_gym.generation import tier_pool
from dynasched_gym.io import resolve_instance
from dynasched_gym.metrics import OBJECTIVE_METRICS
from scripts.overrides import SettingError

REPO = Path(__file__).resolve().parents[1]
TIERS = ("easy", "medium", "hard", "extreme")
TRAIN_SEEDS, VALIDATION_SEEDS, EVAL_SEEDS = range(2), range(500, 502), range(1000, 1002)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh pool cache holding the medium/small instances the short runs use (made in-process)."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    pool = tier_pool("medium", "small")
    for seed in [*TRAIN_SEEDS, *VALIDATION_SEEDS, *EVAL_SEEDS]:
        pool.instance(seed)
    return tmp_path / "cache"


@pytest.fixture
def train_script(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    return importlib.import_module("scripts.train")


def _ctrl_c_at(timesteps: int, train_script, monkeypatch: pytest.MonkeyPatch) -> type:
    """Make training raise KeyboardInterrupt (as Ctrl-C would) at the first step at or past ``timesteps``, from the
    checkpoint callback; returns the callback class it replaces."""
    checkpoints = train_script.Checkpoints

    class CtrlC(checkpoints):
        def _on_step(self) -> bool:
            if self.num_timesteps >= timesteps:
                raise KeyboardInterrupt
            return super()._on_step()

    monkeypatch.setattr(train_script, "Checkpoints", CtrlC)
    return checkpoints


def _config(out: Path, *overrides: str):
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        return compose("train/ppo", overrides=[
            f"out={out}", "env.num_envs=2", f"env.pool_size={len(TRAIN_SEEDS)}", "train.total_timesteps=2048",
            "train.n_steps=128", "train.batch_size=128", "train.n_epochs=1", "train.hidden=8",
            "train.checkpoint_every=1024", "train.eval_every=1024", f"train.eval_seeds.start={EVAL_SEEDS.start}",
            f"train.validation_seeds.start={VALIDATION_SEEDS.start}",
            f"train.validation_seeds.count={len(VALIDATION_SEEDS)}",
            f"train.eval_seeds.count={len(EVAL_SEEDS)}", "train.progress_bar=false", *overrides])


@pytest.mark.parametrize("interaction", ["deepsets", "attention"])
def test_policy_logits_follow_a_permutation_of_the_candidates(interaction: str):
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=8), ("EDD:EET",))
    policy = SlotPolicy(env.observation_space, env.action_space, lambda _: 3e-4, hidden=16, forecast_rules=("EDD:EET",),
                        interaction=interaction)
    rng = np.random.default_rng(0)
    obs = {key: rng.normal(size=(3, *space.shape)).astype(np.float32)
           for key, space in env.observation_space.spaces.items()}
    obs["action_mask"] = (rng.random((3, 8)) < 0.6).astype(np.float32)
    obs["action_mask"][:, 0] = 1
    perm = rng.permutation(8)
    permuted = {**obs, "candidates": obs["candidates"][:, perm], "action_mask": obs["action_mask"][:, perm],
                FORECASTS_KEY: obs[FORECASTS_KEY][:, perm]}

    def logits_and_value(o: dict[str, np.ndarray]) -> tuple[th.Tensor, th.Tensor]:
        tensors = {k: th.as_tensor(v) for k, v in o.items()}
        with th.no_grad():
            logits = policy.get_distribution(tensors, o["action_mask"].astype(bool)).distribution.logits
            return logits, policy.predict_values(tensors)

    logits, value = logits_and_value(obs)
    logits_p, value_p = logits_and_value(permuted)
    th.testing.assert_close(logits_p, logits[:, perm], rtol=1e-5, atol=1e-5)
    th.testing.assert_close(value_p, value, rtol=1e-5, atol=1e-5)
    other = {**obs, FORECASTS_KEY: obs[FORECASTS_KEY] + 1.0}
    assert not th.allclose(logits_and_value(other)[0], logits)  # the forecasts reach the logits
    one_slot = {**obs, "candidates": obs["candidates"].copy()}
    one_slot["candidates"][:, 1:] += 1.0  # every slot but 0 changes: slot 0's logit moves only through the interaction
    assert not th.allclose(logits_and_value(one_slot)[0][:, 0], logits[:, 0])
    final = {k: th.as_tensor(v) for k, v in obs.items()}
    final["action_mask"] = th.zeros_like(final["action_mask"])  # a final observation offers nothing
    with th.no_grad():
        assert th.isfinite(policy.extract_features(final, policy.features_extractor)).all()


@pytest.mark.parametrize(("interaction", "hindsight"), [("deepsets", False), ("attention", False), ("deepsets", True)])
def test_actor_logits_are_the_logits_of_the_whole_forward_bit_for_bit(interaction: str, hindsight: bool):
    """``SlotPolicy.actor_logits`` (what PPOAgent plays) skips the critic's inputs and nothing else."""
    rules = ("EDD:EET",)
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=8), rules)
    env = ForecastFeatures(env, rules, hindsight=True) if hindsight else env
    policy = SlotPolicy(env.observation_space, env.action_space, lambda _: 3e-4, hidden=16, forecast_rules=rules,
                        interaction=interaction, critic_hindsight=hindsight)
    rng = np.random.default_rng(2)
    for batch in (1, 5):
        obs = {key: th.as_tensor(rng.normal(size=(batch, *space.shape)).astype(np.float32) * 100)
               for key, space in env.observation_space.spaces.items()}
        obs["action_mask"] = th.as_tensor((rng.random((batch, 8)) < 0.6).astype(np.float32))
        with th.no_grad():
            whole = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))
            assert th.equal(policy.actor_logits(obs), whole)


def test_asymmetric_critic_reads_the_hindsight_forecasts_and_the_actor_does_not():
    rules = ("EDD:EET",)
    env = ForecastFeatures(ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=8), rules),
                           rules, hindsight=True)
    policy = SlotPolicy(env.observation_space, env.action_space, lambda _: 3e-4, hidden=16, forecast_rules=rules,
                        critic_hindsight=True)
    rng = np.random.default_rng(1)
    obs = {key: th.as_tensor(rng.normal(size=(4, *space.shape)).astype(np.float32))
           for key, space in env.observation_space.spaces.items()}
    obs["action_mask"] = th.ones(4, 8)
    other = {**obs, HINDSIGHT_KEY: obs[HINDSIGHT_KEY] * 3.0 + 1.0}
    with th.no_grad():
        logits = [policy.get_distribution(o, np.ones((4, 8), bool)).distribution.logits for o in (obs, other)]
        values = [policy.predict_values(o) for o in (obs, other)]
    th.testing.assert_close(logits[1], logits[0], rtol=0, atol=0)  # the actor never reads them
    assert not th.allclose(values[1], values[0])  # the critic does
    with pytest.raises(ValueError, match="critic_hindsight=False but the observations carry 'hindsight_forecasts'"):
        SlotPolicy(env.observation_space, env.action_space, lambda _: 3e-4, forecast_rules=rules)
    with pytest.raises(ValueError, match="critic_hindsight=True but the observations lack"):
        SlotPolicy(env.env.observation_space, env.action_space, lambda _: 3e-4, forecast_rules=rules,
                   critic_hindsight=True)


def test_run_with_an_asymmetric_critic_trains_on_hindsight_and_plays_without_it(cache, train_script, tmp_path):
    """``env.critic_hindsight=true`` (with a warm start, whose demonstrations carry the block too) trains; the
    agent plays a plain env (zeros for the critic's block) and batched play gives the same schedules."""
    model = train_script.train(_config(tmp_path / "run", "env.critic_hindsight=true", "train.imitation.rule=EDD:EET",
                                       "train.imitation.episodes=1", "train.imitation.epochs=1"))
    agent = make("ppo", checkpoint=model)
    assert agent.model.policy.critic_hindsight and HINDSIGHT_KEY in agent.model.observation_space.spaces
    instances = [tier_pool("medium", "small").instance(seed) for seed in EVAL_SEEDS]
    for inst, played in zip(instances, agent.play(instances, "weighted_tardiness", num_envs=2)):
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness", **agent.env_settings())
        single = run_episode(agent, env, seed=0)
        assert validate_schedule(single).ok and single.metrics == played.metrics
        np.testing.assert_array_equal(single.segment_start, played.segment_start)


def test_policy_refuses_forecast_rules_that_do_not_fit_the_observations():
    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=8), ("EDD:EET", "SPT:EET"))
    with pytest.raises(ValueError, match="4 forecast columns"):
        SlotPolicy(env.observation_space, env.action_space, lambda _: 3e-4, forecast_rules=("EDD:EET",))


def test_masked_pool_takes_the_mean_and_max_of_the_valid_rows_only():
    """Padding rows (huge here) reach neither pool; a row of negative values keeps its max; no valid row pools to 0."""
    x = th.tensor([[[1.0, -2.0], [3.0, 5.0], [100.0, 100.0]],
                   [[-7.0, -8.0], [50.0, 50.0], [60.0, 60.0]],
                   [[4.0, 4.0], [5.0, 5.0], [6.0, 6.0]]])
    mask = th.tensor([[True, True, False], [True, False, False], [False, False, False]])
    expected = th.tensor([[2.0, 1.5, 3.0, 5.0], [-7.0, -8.0, -7.0, -8.0], [0.0, 0.0, 0.0, 0.0]])
    assert th.equal(masked_pool(x, mask), expected)


@pytest.fixture(scope="module")
def slot_policies() -> dict[str, SlotPolicy]:
    """A tiny SlotPolicy per interaction, its critic reading hindsight rows too (an env gives the spaces only)."""
    space = gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=8).observation_space
    space = with_forecast_space(space, ("EDD:EET",), HINDSIGHT_KEY)
    with th.random.fork_rng(devices=[]):  # the same weights in every run, torch's global stream left alone
        th.manual_seed(0)
        # no orthogonal init: its 0.01 gain on the score head makes every logit nearly equal, below any tolerance
        return {interaction: SlotPolicy(space, gym.spaces.Discrete(8), lambda _: 3e-4, hidden=8,
                                        interaction=interaction, critic_hindsight=True, ortho_init=False)
                for interaction in INTERACTIONS}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(interaction=st.sampled_from(INTERACTIONS), mask=st.lists(st.booleans(), min_size=8, max_size=8).filter(any),
       perm=st.permutations(range(8)), seed=st.integers(0, 2**16))
def test_slot_policy_permutes_with_the_slots_and_ignores_padding_rows_and_other_batch_rows(
        slot_policies, interaction: str, mask: list[bool], perm: list[int], seed: int):
    """Permuting the slots permutes the logits and keeps the value; what a padding slot's rows hold changes no valid
    slot's logit nor the value (they are out of every pool and of the attention); a batch row's outputs are its own."""
    policy = slot_policies[interaction]
    rng = np.random.default_rng(seed)
    obs = {key: rng.normal(scale=10.0, size=(2, *space.shape)).astype(np.float32)
           for key, space in policy.observation_space.spaces.items()}
    valid = np.array(mask)
    obs["action_mask"] = np.stack([valid, np.ones(8, bool)]).astype(np.float32)  # row 1: another batch row
    slot_keys = ("candidates", "action_mask", HINDSIGHT_KEY)
    permuted = {**obs, **{key: obs[key][:, perm] for key in slot_keys}}
    padded = {key: value.copy() for key, value in obs.items()}
    for key in ("candidates", HINDSIGHT_KEY):
        padded[key][0, ~valid] = rng.normal(scale=1e3, size=padded[key][0, ~valid].shape)

    def logits_and_value(o: dict[str, np.ndarray]) -> tuple[th.Tensor, th.Tensor]:
        tensors = {k: th.as_tensor(v) for k, v in o.items()}
        with th.no_grad():
            dist = policy.get_distribution(tensors, o["action_mask"].astype(bool)).distribution
            assert (dist.probs[o["action_mask"] == 0] == 0).all()  # a padding slot is never chosen
            return policy.actor_logits(tensors), policy.predict_values(tensors)

    logits, value = logits_and_value(obs)
    logits_p, value_p = logits_and_value(permuted)
    th.testing.assert_close(logits_p, logits[:, perm], rtol=1e-5, atol=1e-5)
    th.testing.assert_close(value_p, value, rtol=1e-5, atol=1e-5)
    logits_pad, value_pad = logits_and_value(padded)
    th.testing.assert_close(logits_pad[0, valid], logits[0, valid], rtol=1e-5, atol=1e-5)
    th.testing.assert_close(value_pad, value, rtol=1e-5, atol=1e-5)
    alone, alone_value = logits_and_value({key: value[:1] for key, value in obs.items()})
    th.testing.assert_close(alone, logits[:1], rtol=1e-5, atol=1e-5)
    th.testing.assert_close(alone_value, value[:1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("interaction", INTERACTIONS)
def test_a_saved_slot_policy_loads_with_its_interaction_and_weights(slot_policies, interaction: str, tmp_path):
    """SB3's policy.save/load rebuilds the policy from its constructor parameters: the interaction, hidden size and
    critic inputs come back, and so the same logits and value."""
    policy = slot_policies[interaction]
    policy.save(tmp_path / "policy.pt")
    loaded = SlotPolicy.load(tmp_path / "policy.pt")
    assert (loaded.interaction, loaded.hidden, loaded.critic_hindsight) == (interaction, 8, True)
    rng = np.random.default_rng(0)
    obs = {key: th.as_tensor(rng.normal(size=(2, *space.shape)).astype(np.float32))
           for key, space in policy.observation_space.spaces.items()}
    with th.no_grad():
        th.testing.assert_close(loaded.actor_logits(obs), policy.actor_logits(obs))
        th.testing.assert_close(loaded.predict_values(obs), policy.predict_values(obs))


def test_a_fresh_slot_policy_starts_near_uniform():
    """The orthogonal init gives the score head SB3's 0.01 gain of an action_net: the first policy explores."""
    space = gym.make("DynaSched/DFJSP-v0", instance="mk01", max_candidates=8).observation_space
    with th.random.fork_rng(devices=[]):
        th.manual_seed(0)
        policy = SlotPolicy(space, gym.spaces.Discrete(8), lambda _: 3e-4, hidden=16)
    rng = np.random.default_rng(3)
    obs = {key: th.as_tensor(rng.normal(scale=10.0, size=(4, *s.shape)).astype(np.float32))
           for key, s in space.spaces.items()}
    with th.no_grad():
        logits = policy.actor_logits(obs)
    assert (logits.amax(dim=1) - logits.amin(dim=1) < 0.05).all()


def test_short_run_saves_reloads_evaluates_and_resumes(cache, train_script, tmp_path: Path, monkeypatch):
    replaced, replace = [], os.replace  # every output goes through a temporary file and a rename
    monkeypatch.setattr(os, "replace", lambda src, dst: (replaced.append(Path(dst).name), replace(src, dst))[1])
    first = train_script.train(_config(tmp_path / "run", "train.imitation.rule=auto"))
    monkeypatch.undo()
    monkeypatch.setenv("DYNASCHED_CACHE", str(cache))
    assert {"ppo_1024_steps.zip", "ppo_1024_steps.json", "ppo_2048_steps.zip", "best_0_steps.zip", "best.zip",
            "last.zip", "last.json", "model.zip", "report.md", "model.yaml"} <= set(replaced)
    record = yaml.safe_load(first.with_suffix(".yaml").read_text(encoding="utf-8"))
    assert record["timesteps"] == 2048 and record["seed"] == 0 and record["reward_scale"] > 0
    assert record["forecast_rule"] == record["imitation"]["rule"]  # both "auto": the best rule on the training seeds
    assert record["selected"]["timesteps"] in (0, 1024, 2048)  # the warm start (0: no timestep trained on), 1024, 2048
    assert (tmp_path / "run" / "best.zip").is_file() and (tmp_path / "run" / "last.zip").is_file()
    assert record["config"]["env"]["tier"] == "medium"
    assert len(record["evaluation"]["instances"]) == len(EVAL_SEEDS)
    assert record["evaluation"]["best_rule"] in record["evaluation"]["rule_means"]
    # saved after its rollout's update: 1024 timesteps learnt from, 4 rollouts of 2 x 128 (before, 3: the fourth
    # rollout's update came after the save, and a run resumed from it trained one rollout fewer)
    assert MaskablePPO.load(tmp_path / "run" / "checkpoints" / "ppo_1024_steps.zip", device="cpu")._n_updates == 4
    assert list((tmp_path / "run" / "tb").rglob("events.out.tfevents.*"))
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "PPO - best rule on these instances" in report and "PPO - best rule on the validation seeds" in report
    evaluation = record["evaluation"]
    assert evaluation["validation_rule_mean"] == pytest.approx(evaluation["rule_means"][evaluation["validation_rule"]])
    assert evaluation["validation_margin"] == pytest.approx(evaluation["ppo_mean"] - evaluation["validation_rule_mean"])
    validation = [tier_pool("medium", "small").instance(s) for s in VALIDATION_SEEDS]
    chosen = rule_objectives(validation, record["config"]["env"]["objective"])
    assert evaluation["validation_rule"] == min(chosen, key=lambda r: float(chosen[r].mean()))
    assert {"ppo_wins", "ties", "validation_ppo_wins", "validation_ties"} <= set(evaluation)

    agent = make("ppo", checkpoint=first)
    assert agent.config()["checkpoint"] == str(first) and len(agent.config()["sha256"]) == 64
    assert agent.feature_scales == pool_scales("small")  # the training env's units, saved with the policy
    env = gym.make("DynaSched/DFJSP-v0", instance=tier_pool("medium", "small").instance(EVAL_SEEDS.start),
                   objective="weighted_tardiness", **agent.env_settings())
    schedule = run_episode(agent, env, seed=0)
    assert schedule.finished and validate_schedule(schedule).ok
    assert schedule.metrics["total_weighted_tardiness"] == pytest.approx(record["evaluation"]["ppo_values"][0])
    with pytest.raises(ValueError, match="observation space"):
        agent.reset(gym.make("DynaSched/DFJSP-v0", instance=env.unwrapped.instance, max_candidates=16,
                             objective="weighted_tardiness"))
    rules = tuple(record["config"]["env"]["forecast_features"])
    assert rules and agent.model.policy.forecast_rules == rules  # the default config trains with forecasts
    wrapped = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=env.unwrapped.instance,
                                        objective="weighted_tardiness", **agent.env_settings()), rules)
    assert run_episode(agent, wrapped, seed=0).metrics == schedule.metrics  # env-made and agent-made forecasts agree
    other = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", instance=env.unwrapped.instance,
                                      objective="weighted_tardiness", **agent.env_settings()),
                             ("SPT:EET",) * len(rules))
    with pytest.raises(ValueError, match="the policy was trained on"):  # same shape, other rollouts
        agent.reset(other)

    checkpoint = tmp_path / "run" / "checkpoints" / "ppo_1024_steps.zip"
    with pytest.raises(ValueError, match=rf"^train\.resume={checkpoint} is already at 1024 timesteps, at or after "
                                         r"train\.total_timesteps=1024: nothing left to train"):
        train_script.train(_config(tmp_path / "done", "train.total_timesteps=1024", f"train.resume={checkpoint}"))
    assert not (tmp_path / "done").exists()
    # the checkpoint's schedules and observation space are its own: other values would not take effect (before,
    # the schedules were trained with silently and max_candidates failed late in SB3's load, naming no key)
    with pytest.raises(ValueError, match=r"not take effect: train\.learning_rate=0\.5 \(the checkpoint's: 0\.0003\); "
                                         r"train\.anneal_lr=False \(the checkpoint's: True\); train\.clip_range="
                                         r"0\.9 \(the checkpoint's: 0\.2\); env\.max_candidates=16 \(the "
                                         r"checkpoint's: 32\); env\.observability=full \(the checkpoint's: concise\)"):
        train_script.train(_config(tmp_path / "other", f"train.resume={checkpoint}", "train.learning_rate=0.5",
                                   "train.anneal_lr=false", "train.clip_range=0.9", "env.max_candidates=16",
                                   "env.observability=full"))
    assert not (tmp_path / "other").exists()

    # the best validation result before the checkpoint (the warm start's, at 0) carries over into the resumed
    # run; made unbeatable here (a tardiness is >= 0), it must be the one selected, with its policy
    sidecar = checkpoint.with_suffix(".json")
    saved = json.loads(sidecar.read_text(encoding="utf-8"))
    assert saved["best"]["timesteps"] == 0 and saved["best"]["policy"] == "best_0_steps.zip"
    assert MaskablePPO.load(checkpoint.with_name("best_0_steps.zip"), device="cpu").num_timesteps == 0
    saved["best"]["validation_mean"] = -1.0
    sidecar.write_text(json.dumps(saved), encoding="utf-8")
    best = record["forecast_rule"]
    resumed = train_script.train(_config(tmp_path / "resumed", "train.total_timesteps=3072",
                                         f"train.resume={checkpoint}", "env.forecast_auto_rules=2"))
    record = yaml.safe_load(resumed.with_suffix(".yaml").read_text(encoding="utf-8"))
    assert record["timesteps"] == 3072 and record["resumed_from"].endswith("ppo_1024_steps.zip")
    assert len(record["forecast_rule"]) == 2 and record["forecast_rule"][0] == best  # auto: 2 complementary rules
    assert make("ppo", checkpoint=resumed.with_name("last.zip")).model.num_timesteps == 3072
    assert record["selected"] == {"validation_mean": -1.0, "timesteps": 0}
    assert resumed.read_bytes() == checkpoint.with_name("best_0_steps.zip").read_bytes()


def test_resuming_a_checkpoint_saved_before_policies_recorded_their_units(cache, train_script, tmp_path: Path):
    """Such a checkpoint trained in its pool's units: the resumed run validates, tests and saves in them."""
    train_script.train(_config(tmp_path / "run"))
    checkpoint = tmp_path / "run" / "checkpoints" / "ppo_1024_steps.zip"
    old = MaskablePPO.load(checkpoint, device="cpu")
    del old.policy_kwargs["feature_scales"]
    old.save(checkpoint)
    assert MaskablePPO.load(checkpoint, device="cpu").policy.feature_scales is None
    resumed = train_script.train(_config(tmp_path / "resumed", f"train.resume={checkpoint}"))
    for saved in (resumed.with_name("last.zip"), resumed):
        assert MaskablePPO.load(saved, device="cpu").policy.feature_scales == pool_scales("small")


def test_rule_chosen_on_the_test_instances_themselves_is_the_post_hoc_best(cache, train_script, tmp_path: Path):
    cfg = _config(tmp_path / "run")
    pool = tier_pool("medium", "small")
    test = [pool.instance(s) for s in EVAL_SEEDS]
    ppo = np.array([1.0, 2.0])
    result = train_script.compare_with_rules(ppo, cfg.env, test, validation=test)
    assert result["validation_rule"] == result["best_rule"]
    assert result["validation_margin"] == result["margin"] == pytest.approx(1.5 - result["best_rule_mean"])
    assert "validation_rule" not in train_script.compare_with_rules(ppo, cfg.env, test)


def test_reward_scale_env_units_and_held_out_instances(cache, train_script, tmp_path, monkeypatch):
    """The automatic reward scale is 1 / FIFO:EET's mean objective on the training pool's seeds (1 where that mean is
    0), a given scale is kept; the envs take the pool's feature units; held-out instances are those of their seeds."""
    env = _config(tmp_path / "run").env
    pool, key = tier_pool("medium", "small"), OBJECTIVE_METRICS[env.objective]
    mean = np.mean([rollout(pool.instance(s), rule="FIFO:EET").metrics[key] for s in TRAIN_SEEDS])
    assert train_script.auto_reward_scale(env) == pytest.approx(1.0 / mean)
    assert train_script.auto_reward_scale(_config(tmp_path / "run", "env.reward_scale=0.5").env) == 0.5
    kwargs = train_script.play_kwargs(env)
    assert (kwargs["time_scale"], kwargs["ops_scale"]) == pool_scales("small")
    held_out = train_script.held_out(env, _config(tmp_path / "run").train.eval_seeds)
    assert [inst.name for inst in held_out] == [pool.instance(s).name for s in EVAL_SEEDS]
    monkeypatch.setattr(train_script, "rollout", lambda instance, rule: SimpleNamespace(metrics={key: 0.0}))
    assert train_script.auto_reward_scale(env) == 1.0  # no tardiness to scale by


def test_the_report_lists_the_five_best_rules_and_the_wins_and_ties(train_script, tmp_path):
    margin = {"margin": -1.0, "ci95": [-2.0, 0.5], "relative": -0.1, "wins": 3, "ties": 1}
    result = {"metric": "total_weighted_tardiness", "instances": ["a", "b"], "ppo_mean": 9.0, "best_rule": "R1",
              "best_rule_mean": 10.0, **train_script._margin_fields(margin, ""),
              "rule_means": {f"R{i}": 9.0 + i for i in range(1, 7)}}
    meta = {"timesteps": 2048, "wall_s": 3.0, "ppo_steps_per_s": 700.0, "selected": None}
    report = train_script.report_markdown(result, _config(tmp_path / "run").env, meta)
    assert [line.split(" |")[0] for line in report.splitlines() if line.startswith("| R")] == \
        ["| R1", "| R2", "| R3", "| R4", "| R5"]
    assert "**-1.000**, paired bootstrap 95 % CI [-2.000, 0.500]; PPO better on 3, tied on 1 instances." in report


def test_validation_keeps_the_first_of_equal_means_and_resumed_schedules_keep_their_multiples(train_script, tmp_path,
                                                                                              monkeypatch):
    """A later policy becomes the best only with a lower mean (a tie keeps the earlier one); resumed between two
    multiples of ``every``, validation and checkpoints come at the next multiple, not ``every`` after the resume."""
    means, saved, checkpoints = iter([5.0, 5.0, 4.0, 3.0]), [], []
    monkeypatch.setattr(train_script, "PPOAgent", lambda model: model)
    monkeypatch.setattr(train_script, "evaluate", lambda agent, env_cfg, instances: np.array([next(means)]))
    validator = train_script.ValidationEval(_config(tmp_path / "run").env, [], 512, tmp_path / "best.zip", {})
    validator.model = SimpleNamespace(logger=SimpleNamespace(record=lambda key, value: None))
    monkeypatch.setattr(train_script, "save_model", lambda model, path: saved.append(validator.num_timesteps))
    validator.num_timesteps = 0
    validator._on_training_start()  # the warm start
    for validator.num_timesteps in (256, 512, 768, 1024):
        validator._on_step()
    assert saved == [0, 1024] and validator.best == (4.0, 1024)
    validator.num_timesteps = 1280  # resumed from 1280: next at 1536, not 1792
    validator._on_training_start()
    for validator.num_timesteps in (1408, 1536):
        validator._on_step()
    assert saved == [0, 1024, 1536]
    monkeypatch.setattr(train_script, "save_checkpoint", lambda model, path, validator: checkpoints.append(path.name))
    callback = train_script.Checkpoints(1024, tmp_path, validator)
    callback.model = validator.model
    callback.num_timesteps = 512  # resumed from 512: next at 1024, not 1536
    callback._on_training_start()
    for callback.num_timesteps in (768, 1024, 1280):
        callback._on_rollout_start()
    assert checkpoints == ["ppo_1024_steps.zip"]


def test_validation_seeds_must_not_overlap_the_test_seeds(cache, train_script, tmp_path: Path):
    config = _config(tmp_path / "run", f"train.validation_seeds.start={EVAL_SEEDS.start + 1}")
    with pytest.raises(ValueError, match=r"overlap train\.eval_seeds"):
        train_script.train(config)


def test_forecast_auto_rules_must_be_positive(cache, train_script, tmp_path: Path):
    with pytest.raises(ValueError, match=r"env\.forecast_auto_rules must be an integer >= 1, got 0"):
        train_script.train(_config(tmp_path / "run", "env.forecast_auto_rules=0"))
    assert not (tmp_path / "run").exists()


def test_total_timesteps_must_be_positive(cache, train_script, tmp_path: Path):
    with pytest.raises(ValueError, match=r"train\.total_timesteps must be an integer >= 1, got -5"):
        train_script.train(_config(tmp_path / "run", "train.total_timesteps=-5"))
    assert not (tmp_path / "run" / "model.zip").exists()


@pytest.mark.parametrize(("tier", "observability"), [(tier, "concise") for tier in TIERS] + [("medium", "full")])
def test_shipped_checkpoint_loads_and_plays(tier, observability, tmp_path, monkeypatch):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    path = shipped_checkpoint(tier, observability=observability)
    assert path.stat().st_size <= 3 * 2**20
    record = yaml.safe_load(path.with_suffix(".yaml").read_text(encoding="utf-8"))
    env_cfg = record["config"]["env"]
    assert env_cfg["tier"] == tier and env_cfg["size"] == "small" and env_cfg["observability"] == observability
    inst = tier_pool(tier, "small").instance(record["config"]["train"]["eval_seeds"]["start"])
    agent = make("ppo", checkpoint=path)
    time_scale, ops_scale = pool_scales("small")  # the training env's: recorded by the policy, or (older) its pool's
    assert agent.env_settings() == {"max_candidates": env_cfg["max_candidates"], "observability": observability,
                                    "time_scale": time_scale, "ops_scale": ops_scale}
    env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective=env_cfg["objective"], **agent.env_settings())
    schedule = run_episode(agent, env, seed=0)
    assert schedule.finished and validate_schedule(schedule).ok


def test_unknown_shipped_checkpoint_names_the_shipped_ones():
    """A valid (tier, size, level) not shipped lists those that are; a misspelt name is a ValueError naming it."""
    with pytest.raises(FileNotFoundError, match=r"ppo-medium-small-oracle.zip; shipped: \[.*'ppo-medium-small-full'"):
        shipped_checkpoint("medium", observability="oracle")
    for args, message in [(("trivial",), "tier must be one of"), (("Hard",), "got 'Hard'"),
                          (("medium", "huge"), "size must be one of"),
                          (("medium", "small", "partial"), "observability must be one of")]:
        with pytest.raises(ValueError, match=message):
            shipped_checkpoint(*args)


@pytest.mark.parametrize("content", [b"not a zip", {"other": "{not json"}, {"data": "{not json"}, {"data": "[1]"},
                                     {"n_envs": "x"}])
def test_a_file_that_is_no_model_is_refused_naming_it(content, tmp_path):
    """A text file, or a zip SB3 cannot read, is a ValueError naming the file (it was SB3's AssertionError,
    JSONDecodeError or ValueError, none naming what was wrong; for data that is JSON but no object, or the shipped
    model with a data entry of the wrong type, SB3's AttributeError or TypeError)."""
    path = tmp_path / "model.zip"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif "n_envs" in content:  # the shipped model with its data entries updated by ``content``
        with zipfile.ZipFile(shipped_checkpoint("medium")) as source, zipfile.ZipFile(path, "w") as archive:
            for name in source.namelist():
                raw = source.read(name)
                archive.writestr(name, json.dumps({**json.loads(raw), **content}) if name == "data" else raw)
    else:  # archive members and their text
        with zipfile.ZipFile(path, "w") as archive:
            for name, text in content.items():
                archive.writestr(name, text)
    with pytest.raises(ValueError, match=r"PPO checkpoint '.*model\.zip' is not a model saved by scripts\.train"):
        make("ppo", checkpoint=path)


def test_a_checkpoint_with_no_recorded_units_and_no_config_beside_it_warns(tmp_path):
    """Neither the policy nor a sidecar says which units it was trained in: loading it says so."""
    model = MaskablePPO.load(shipped_checkpoint("medium"), device="cpu")
    del model.policy_kwargs["feature_scales"]
    bare = tmp_path / "bare.zip"
    model.save(bare)
    with pytest.warns(RuntimeWarning, match=r"bare\.zip records no feature units and has no training config"):
        agent = make("ppo", checkpoint=bare)
    assert agent.feature_scales is None and "time_scale" not in agent.env_settings()
    shutil.copy(shipped_checkpoint("medium").with_suffix(".yaml"), bare.with_suffix(".yaml"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make("ppo", checkpoint=bare).feature_scales == pool_scales("small")  # the sidecar's pool's units


def test_play_refuses_an_unknown_objective_without_warning_first():
    """play(instances, "wt") warned that the policy "was trained for weighted_tardiness, the env's objective is wt",
    then raised the env's ValueError."""
    agent = make("ppo", checkpoint=shipped_checkpoint("hard"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^objective must be one of .*, got 'wt'$"):
            agent.play(["mk01"], "wt")


def test_batched_play_equals_single_env_episodes(tmp_path, monkeypatch):
    """``PPOAgent.play`` (3 episodes at a time, sub-envs reused and idling at the end) matches ``run_episode``."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    pool = tier_pool("medium", "small")
    instances = [pool.instance(seed) for seed in range(5)]
    agent = make("ppo", checkpoint=shipped_checkpoint("medium"))
    played = agent.play(instances, "weighted_tardiness", num_envs=3)
    for inst, schedule in zip(instances, played):
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness", **agent.env_settings())
        single = run_episode(agent, env, seed=0)
        assert schedule.instance.name == inst.name and schedule.finished
        assert schedule.metrics == single.metrics
        for field in ("segment_job", "segment_machine", "segment_start"):
            np.testing.assert_array_equal(getattr(schedule, field), getattr(single, field))
    # three episodes of one length on two sub-envs: the second sub-env's replay (idle) ends at the step the first one's
    # last episode does, and its schedule is no one's
    copies = [dataclasses.replace(instances[0], name=f"copy{k}") for k in range(3)]
    played = agent.play(copies, "weighted_tardiness", num_envs=2)
    assert [schedule.instance.name for schedule in played] == ["copy0", "copy1", "copy2"]
    assert agent.play([], "weighted_tardiness") == []
    # None returned [] and [None, None] two schedules of one drawn pool instance; one Instance failed on len()
    for wrong in (None, [None, None], instances[0], "mk01"):
        with pytest.raises(TypeError, match=r"^instances must be a list of instances .*, got "):
            agent.play(wrong, "weighted_tardiness")
    with pytest.raises(ValueError, match="observation space"):  # mk03 has 8 machines, the policy saw 6
        agent.play([resolve_instance("mk03")], "weighted_tardiness")


def test_playing_gives_the_probabilities_and_actions_of_sb3s_predict_bit_for_bit(tmp_path, monkeypatch):
    """``PPOAgent`` computes the masked action probabilities itself, not through ``MaskablePPO.predict`` (whose
    overheads were half of a decision's time): one observation and a batch give exactly sb3-contrib's values."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    agent = make("ppo", checkpoint=shipped_checkpoint("hard"))
    policy = agent.model.policy
    env = gym.make("DynaSched/DFJSP-v0", instance=tier_pool("hard", "small").instance(0),
                   objective="weighted_tardiness", **agent.env_settings())
    observation, info = env.reset(seed=0)
    agent.reset(env)
    policy.set_training_mode(True)  # as a training run leaves it between its evaluations
    seen, done = [], False
    while not done:
        sim = env.unwrapped
        full = {**observation, FORECASTS_KEY: agent._forecaster(0, sim.simulator, *sim.offered_pairs(),
                                                                 sim.time_scale)}
        masks = sim.action_masks()
        with th.no_grad():
            expected = policy.get_distribution(policy.obs_to_tensor(full)[0], masks).distribution.probs
        assert th.equal(agent._probs(full, masks), expected)
        action = agent.act(observation, info)
        assert not policy.training
        assert action == int(agent.model.predict(full, deterministic=True, action_masks=masks)[0])
        seen.append((full, masks))
        observation, _, done, _, info = env.step(action)
    assert len(seen) > 20
    batch = {key: np.stack([full[key] for full, _ in seen]) for key in seen[0][0]}
    masks = np.stack([m for _, m in seen])
    with th.no_grad():
        expected = policy.get_distribution(policy.obs_to_tensor(batch)[0], masks).distribution.probs
    assert th.equal(agent._probs(batch, masks), expected)
    np.testing.assert_array_equal(agent._predict(batch, masks, [None] * len(seen)),
                                  agent.model.predict(batch, deterministic=True, action_masks=masks)[0])


def test_a_policy_giving_nan_logits_is_refused_naming_it(tmp_path, monkeypatch):
    """NaN parameters: an error naming the checkpoint, not an argmax over NaN (sb3's validation refused them too)."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    agent = make("ppo", checkpoint=shipped_checkpoint("hard"))
    with th.no_grad():
        agent.model.policy.mlp_extractor.score_net[-1].bias.fill_(float("nan"))
    env = gym.make("DynaSched/DFJSP-v0", instance=tier_pool("hard", "small").instance(0),
                   objective="weighted_tardiness", **agent.env_settings())
    with pytest.raises(ValueError, match=r"^the PPO policy .*ppo-hard-small\.zip gives NaN logits: its parameters "):
        run_episode(agent, env, seed=0)


def test_batched_play_of_a_sampling_policy_equals_single_env_episodes(tmp_path, monkeypatch):
    """deterministic=False: ``play`` drew every sub-env's actions from one stream for the batch, so a schedule
    depended on ``num_envs`` and on the instances beside and before it, and none equalled ``run_episode``'s (all 5
    here), against docs/agents.md. Now each episode samples from its own stream seeded with ``seed``."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    pool = tier_pool("hard", "small")
    instances = [pool.instance(seed) for seed in range(5)]
    agent = make("ppo", checkpoint=shipped_checkpoint("hard"), deterministic=False, seed=3)
    state = th.get_rng_state()
    played = agent.play(instances, "weighted_tardiness", num_envs=3)
    assert th.equal(th.get_rng_state(), state)  # torch's global stream is left alone
    for inst, schedule in zip(instances, played):
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness", **agent.env_settings())
        assert schedule.to_json() == run_episode(agent, env, seed=0).to_json()
    assert [s.to_json() for s in agent.play(instances[::-1], "weighted_tardiness", num_envs=2)] == \
        [s.to_json() for s in played[::-1]]


def test_a_sampling_policy_draws_from_its_own_seeded_stream_at_every_episode(tmp_path, monkeypatch):
    """deterministic=False sampled from torch's global stream: a seed's row depended on the episodes played before
    it in the process (hard seed 10002: 19.40 after three others, 3.65 alone)."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    inst = tier_pool("hard", "small").instance(0)
    agent = make("ppo", checkpoint=shipped_checkpoint("hard"), deterministic=False, seed=3)

    def episode() -> dict:
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective="weighted_tardiness", **agent.env_settings())
        return run_episode(agent, env, seed=0).metrics

    first = episode()
    th.manual_seed(123)  # another state of the global stream: no effect on the agent's draws, nor they on it
    state = th.get_rng_state()
    assert episode() == first
    assert th.equal(th.get_rng_state(), state)
    other = make("ppo", checkpoint=shipped_checkpoint("hard"), deterministic=False, seed=4)
    assert other.config()["seed"] == 4 and other.config() != agent.config()
    assert "seed" not in make("ppo", checkpoint=shipped_checkpoint("hard")).config()  # deterministic: no draws
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*32\), got -1"):
        make("ppo", checkpoint=shipped_checkpoint("hard"), deterministic=False, seed=-1)


def test_a_sampling_policy_draws_afresh_at_each_decision_from_its_seeds_stream(monkeypatch):
    """Each draw moves the episode's stream on (one left where it was drew the same number at every decision), the
    stream starts again from ``seed`` at each episode, and another seed is another stream."""
    agents = [make("ppo", checkpoint=shipped_checkpoint("hard"), deterministic=False, seed=seed) for seed in (3, 4)]
    for agent in agents:  # uniform over 8 slots: 20 draws all alike are chance only when something is wrong
        monkeypatch.setattr(agent, "_probs", lambda observation, masks: th.full((1, 8), 1 / 8))

    def draws(agent) -> list[int]:
        streams = [agent._sampling_start()]
        return [int(agent._predict({}, np.ones(8, bool), streams)[0]) for _ in range(20)]

    first = draws(agents[0])
    assert len(set(first)) > 1
    assert draws(agents[0]) == first
    assert draws(agents[1]) != first


def _shipped_medium_on_seed_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[PPOAgent, gym.Env]:
    """The shipped medium policy and an env of its settings on medium pool seed 0 (the pool cached in ``tmp_path``)."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    agent = make("ppo", checkpoint=shipped_checkpoint("medium"))
    return agent, gym.make("DynaSched/DFJSP-v0", instance=tier_pool("medium", "small").instance(0),
                           objective="weighted_tardiness", **agent.env_settings())


def test_the_shipped_medium_policy_plays_as_it_was_shipped(tmp_path, monkeypatch):
    """What the policy computes from a checkpoint (symlog, pools, context, interaction) is not in the checkpoint's
    hash that results stores key rows by: a change that moves these pins needs a BEHAVIOUR_VERSION bump."""
    agent, env = _shipped_medium_on_seed_0(tmp_path, monkeypatch)
    observation, info = env.reset(seed=0)
    agent.reset(env)
    log_probability, done = 0.0, False
    while not done:
        sim = env.unwrapped
        full = {**observation, FORECASTS_KEY: agent._forecaster(0, sim.simulator, *sim.offered_pairs(),
                                                                 sim.time_scale)}
        action = agent.act(observation, info)
        log_probability += float(th.log(agent._probs(full, sim.action_masks())[0, action]))
        observation, _, done, _, info = env.step(action)
    metrics = env.unwrapped.schedule().metrics
    assert (metrics["makespan"], metrics["total_weighted_tardiness"]) == pytest.approx((227.50489, 3.45312), abs=1e-5)
    assert log_probability == pytest.approx(-10.9072, abs=1e-3)  # of the 72 actions taken


def test_a_policy_of_flattened_observations_is_refused_saying_so():
    """It failed with "TypeError: 'Box' object is not subscriptable"."""
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    model = MaskablePPO("MlpPolicy", make_sb3_vec_env(num_envs=1, flatten=True, instance="mk01"), n_steps=8)
    with pytest.raises(ValueError, match=r"reads Box observations: PPOAgent plays policies of the Dict observations"):
        make("ppo", checkpoint=model)


def test_a_policy_of_the_rule_selection_env_is_refused_saying_so(tmp_path):
    """A policy trained on DFJSP-Rules-v0 (ten actions, one per composite rule) was refused only at reset, through
    its action_mask's shape, with advice to change max_candidates, which cannot help."""
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    model = MaskablePPO("MultiInputPolicy", make_sb3_vec_env("DynaSched/DFJSP-Rules-v0", num_envs=1, instance="mk01"),
                        n_steps=8)
    model.save(tmp_path / "rules.zip")
    for checkpoint in (model, tmp_path / "rules.zip"):
        with pytest.raises(ValueError, match=r"acts in Discrete\(10\), not in the 32 candidate slots of its "
                                             r"observations: it was trained on the rule-selection env "
                                             r"DynaSched/DFJSP-Rules-v0"):
            make("ppo", checkpoint=checkpoint)


def test_ppo_plays_an_env_with_forecast_rewards_around_its_forecasts(tmp_path, monkeypatch):
    """The reward wrapper's potential rules are not mistaken for the observation's rollout rules."""
    agent, env = _shipped_medium_on_seed_0(tmp_path, monkeypatch)
    rules = agent.model.policy.forecast_rules
    env = ForecastReward(ForecastFeatures(env, rules), ["SPT:EET", "LPT:LIT"], hindsight=True)
    schedule = run_episode(agent, env, seed=0)
    assert schedule.finished and env.potential_rules == ("SPT:EET", "LPT:LIT")
    assert env.get_wrapper_attr("rules") == rules


def test_ppo_refuses_an_env_whose_forecasts_roll_out_other_rules(tmp_path, monkeypatch):
    """The forecasts of other rules (here the policy's in another order) fill the same space: only the rules tell."""
    agent, env = _shipped_medium_on_seed_0(tmp_path, monkeypatch)
    rules = agent.model.policy.forecast_rules
    with pytest.raises(ValueError, match=r"the env's forecasts roll out \('ATC:LWL', 'EDD:EET'\) in 0 sampled"):
        agent.reset(ForecastFeatures(env, rules[::-1]))


def test_ctrl_c_saves_the_model_prints_the_resume_command_and_the_resume_finishes(cache, train_script, tmp_path,
                                                                                   monkeypatch):
    """A KeyboardInterrupt inside ``learn`` (raised here by a callback, as Ctrl-C would be) keeps the steps learnt
    since the last checkpoint in ``interrupted.zip``; the printed command resumes from it. Stopped at 512, the last
    step of the rollout of 256 .. 512 (2 envs x 128 steps) that was collected but not trained on, it counts 256
    timesteps, and the resumed run trains the 4 rollouts of the uninterrupted one; before, it counted 512 and the
    resumed run trained on 3."""

    _ctrl_c_at(512, train_script, monkeypatch)
    short = ("train.total_timesteps=1024", "train.eval_every=0", "env.forecast_features=[]", "env.forecast_rule=null")
    with pytest.raises(train_script.TrainingInterrupted) as caught:
        train_script.train(_config(tmp_path / "run", *short), overrides=["env.tier=medium", "train.resume=old.zip",
                                                                         "train.n_epochs=1"])
    interrupted = caught.value
    assert isinstance(interrupted, KeyboardInterrupt) and interrupted.timesteps == 256
    assert interrupted.path == (tmp_path / "run" / "interrupted.zip").resolve() and interrupted.path.is_file()
    assert interrupted.command == f"python -m scripts.train env.tier=medium train.n_epochs=1 " \
                                  f"train.resume={interrupted.path}"  # the old train.resume is replaced
    assert interrupted.command in str(interrupted) and not (tmp_path / "run" / "model.zip").exists()
    assert make("ppo", checkpoint=interrupted.path).model.num_timesteps == 256
    monkeypatch.undo()
    monkeypatch.setenv("DYNASCHED_CACHE", str(cache))
    seeded, set_seed = [], MaskablePPO.set_random_seed
    monkeypatch.setattr(MaskablePPO, "set_random_seed", lambda self, seed=None: (seeded.append(seed),
                                                                                  set_seed(self, seed))[1])
    resumed = train_script.train(_config(tmp_path / "resumed", *short, f"train.resume={interrupted.path}"))
    assert seeded[-1] == 256  # seed + the resumed timesteps: not the random stream the run began with
    record = yaml.safe_load(resumed.with_suffix(".yaml").read_text(encoding="utf-8"))
    assert record["timesteps"] == 1024 and record["resumed_from"] == str(interrupted.path)
    model = make("ppo", checkpoint=resumed.with_name("last.zip")).model
    assert (model.num_timesteps, model._n_updates) == (1024, 4)  # 4 rollouts of 256 timesteps, 1 epoch each


def test_a_ctrl_c_while_the_best_policy_is_saved_records_the_best_actually_saved(cache, train_script, tmp_path,
                                                                                  monkeypatch):
    """The best-so-far record of interrupted.zip names the policy best.zip holds, not one whose save was cut off."""
    save, calls = train_script.save_model, []

    def cut_short(model, path):
        calls.append(path.name)
        if path.name == "best.zip" and calls.count("best.zip") == 2:
            raise KeyboardInterrupt
        save(model, path)

    monkeypatch.setattr(train_script, "save_model", cut_short)
    means = iter([5.0, 4.0, 3.0, 2.0])  # every validation a new best
    monkeypatch.setattr(train_script, "evaluate",
                        lambda agent, env_cfg, instances, progress=False: np.array([next(means)]))
    short = ("train.total_timesteps=2048", "train.eval_every=512", "env.forecast_features=[]", "env.forecast_rule=null")
    with pytest.raises(train_script.TrainingInterrupted) as caught:
        train_script.train(_config(tmp_path / "run", *short))
    record = json.loads(caught.value.path.with_suffix(".json").read_text(encoding="utf-8"))["best"]
    saved = MaskablePPO.load(tmp_path / "run" / "best.zip", device="cpu").num_timesteps
    assert record["timesteps"] == saved and record["validation_mean"] == 5.0


def test_an_interrupted_final_evaluation_leaves_the_run_dirs_files_as_they_were(cache, train_script, tmp_path,
                                                                               monkeypatch):
    """Trained again into the same dir, a run stopped in its final evaluation replaces neither model.zip nor its
    model.yaml (before, the new model.zip sat beside the old run's record)."""
    short = ("train.total_timesteps=1024", "train.eval_every=0", "env.forecast_features=[]", "env.forecast_rule=null")
    first = train_script.train(_config(tmp_path / "run", *short))
    before = (first.read_bytes(), first.with_suffix(".yaml").read_bytes())

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_script, "compare_with_rules", stopped)
    with pytest.raises(KeyboardInterrupt):
        train_script.train(_config(tmp_path / "run", *short, "seed=1"))
    assert (first.read_bytes(), first.with_suffix(".yaml").read_bytes()) == before


def test_a_total_short_of_a_whole_rollout_says_where_training_stops(cache, train_script, tmp_path, capsys):
    """SB3 runs whole rollouts (2 envs x 128 steps here): 1000 timesteps become 1024, and the run says so."""
    short = ("train.total_timesteps=1000", "train.eval_every=0", "env.forecast_features=[]", "env.forecast_rule=null")
    record = yaml.safe_load(train_script.train(_config(tmp_path / "run", *short)).with_suffix(".yaml").read_text())
    assert record["timesteps"] == 1024
    assert "whole rollouts of train.n_steps x env.num_envs = 256 timesteps: it stops at 1024, not " \
           "train.total_timesteps=1000" in capsys.readouterr().err


@pytest.mark.parametrize(("override", "error", "message"), [
    ("env.objective=foo", ValueError, r"env\.objective must be one of .* got 'foo'"),
    ("env.tier=trivial", ValueError, r"env\.tier must be one of .* got 'trivial'"),
    ("env.size=huge", ValueError, r"env\.size must be one of .* got 'huge'"),
    ("env.observability=partial", ValueError, r"env\.observability must be one of .* got 'partial'"),
    ("train.resume=/nope.zip", FileNotFoundError, r"^train\.resume=/nope\.zip: no such checkpoint file$"),
    ("env.forecast_rule=FOO", ValueError, r"^env\.forecast_rule=FOO: unknown rule 'FOO'"),
    ("env.forecast_rule=[EDD:EET,FOO:EET]", ValueError, r"^env\.forecast_rule=\['EDD:EET', 'FOO:EET'\]: unknown rule"),
    ("env.forecast_features=[FOO]", ValueError, r"^env\.forecast_features=\['FOO'\]: unknown rule 'FOO'"),
    ("train.imitation.rule=FOO", ValueError, r"^train\.imitation\.rule=FOO: unknown rule 'FOO'"),
    ("train.resume=5", TypeError, r"^train\.resume must be a checkpoint path or null, got 5$"),
    ("train.total_timesteps=abc", TypeError, r"^train\.total_timesteps must be an integer >= 1, got 'abc'$"),
    ("train.n_steps=0", ValueError, r"^train\.n_steps must be an integer >= 1, got 0$"),
    ("train.n_steps=true", TypeError, r"^train\.n_steps must be an integer >= 1, got True$"),
    ("train.batch_size=1", ValueError, r"^train\.batch_size must be an integer >= 2, got 1$"),
    ("train.n_epochs=0", ValueError, r"^train\.n_epochs must be an integer >= 1, got 0$"),
    ("train.checkpoint_every=0", ValueError, r"^train\.checkpoint_every must be an integer >= 1, got 0$"),
    ("train.eval_every=-1", ValueError, r"^train\.eval_every must be an integer >= 0, got -1$"),
    ("train.validation_seeds.count=0", ValueError, r"^train\.validation_seeds\.count must be an integer >= 1, got 0$"),
    ("train.validation_seeds.start=1", ValueError, r"^train\.validation_seeds\.start=1 overlaps the training pool"),
    ("train.eval_seeds.start=1", ValueError, r"^train\.eval_seeds\.start=1 overlaps the training pool seeds 0\.\.1$"),
    ("train.imitation.epochs=0", ValueError, r"^train\.imitation\.epochs must be an integer >= 1, got 0$"),
    ("env.num_envs=0", ValueError, r"^env\.num_envs must be an integer >= 1, got 0$"),
    (f"env.pool_size={10**30}", ValueError, r"^env\.pool_size must be at most 1000000, got 10+$"),  # filled the memory
    ("train.eval_seeds.count=1000001", ValueError, r"^train\.eval_seeds\.count must be at most 1000000"),
    # the env's and torch's own bounds: each was a traceback after the pool, the reward scale and the envs' setup
    ("env.forecast_futures=1001", ValueError, r"^env\.forecast_futures must be at most 1000, got 1001$"),
    ("env.max_candidates=65537", ValueError, r"^env\.max_candidates must be at most 65536, got 65537$"),
    ("env.num_envs=65537", ValueError, r"^env\.num_envs must be at most 65536, got 65537$"),
    (f"train.torch_threads={2**31}", ValueError, r"^train\.torch_threads must be at most 2147483647, got 2147483648$"),
    ("seed=-1", ValueError, r"^seed must be an integer >= 0, got -1$"),
    ("seed=4294967296", ValueError, r"^seed must be an integer <= 4294967295, got 4294967296$"),
    ("train.learning_rate=0", ValueError, r"^train\.learning_rate must be a finite number > 0, got 0$"),
    ("train.imitation.learning_rate=-0.1", ValueError, r"^train\.imitation\.learning_rate must be a finite number > 0"),
    ("train.max_grad_norm=nan", ValueError, r"^train\.max_grad_norm must be a finite number > 0, got nan$"),
    ("train.clip_range=0", ValueError, r"^train\.clip_range must be a finite number > 0, got 0$"),
    ("train.gamma=0", ValueError, r"^train\.gamma must be a finite number in \(0, 1\], got 0$"),
    ("train.gamma=1.5", ValueError, r"^train\.gamma must be a finite number in \(0, 1\], got 1\.5$"),
    ("train.gae_lambda=-0.1", ValueError, r"^train\.gae_lambda must be a finite number in \[0, 1\], got -0\.1$"),
    ("train.ent_coef=-1", ValueError, r"^train\.ent_coef must be a finite number >= 0, got -1$"),
    ("train.vf_coef=inf", ValueError, r"^train\.vf_coef must be a finite number >= 0, got inf$"),
    ("train.anneal_lr=maybe", TypeError, r"^train\.anneal_lr must be true or false, got 'maybe'$"),
    ("train.keep_best=1", TypeError, r"^train\.keep_best must be true or false, got 1$"),
    ("train.interaction=rnn", ValueError, r"^train\.interaction must be one of .* got 'rnn'$"),
    ("env.reward_scale=-1", ValueError, r"^env\.reward_scale must be a finite number > 0, got -1$"),
    ("env.forecast_features=EDD:EET", ValueError, r"^env\.forecast_features must be a list of JOB:MACHINE rules "
                                                  r"\(\[\] for none\), got 'EDD:EET'$"),  # was split into letters
    ("env.forecast_features=null", ValueError, r"^env\.forecast_features must be a list .*, got None$"),
    ("env.forecast_features=[RANDOM:EET]", ValueError, r"^env\.forecast_features=\['RANDOM:EET'\]: env\.forecast_"
                                                       r"features take deterministic rules only"),  # irreproducible
    ("env.forecast_rule=RANDOM", ValueError, r"^env\.forecast_rule=RANDOM: env\.forecast_rule take deterministic"),
    ("env.forecast_rule=[EDD:EET,1.5]", TypeError, r"^env\.forecast_rule=\['EDD:EET', 1\.5\]: rules are one rule "
                                                    r"name or a sequence"),  # named no key
    ("env.forecast_rule=5", TypeError, r"^env\.forecast_rule=5: rules are one rule name"),  # int is not iterable
    ("env.forecast_rule=[]", ValueError, r"^env\.forecast_rule must be a JOB:MACHINE rule, a non-empty list of them, "
                                         r"auto or null \(no forecast reward\), got \[\]$"),  # was read as null
    ("env.forecast_auto_rules=53", ValueError, r"^env\.forecast_auto_rules must be at most 52 \(the deterministic "
                                               r"rules\), got 53$"),  # was refused after setup, unnamed
    ("train.imitation.rule=[EDD:EET,ATC:LWL]", ValueError, r"^train\.imitation\.rule must be one JOB:MACHINE rule, "
                                                          r"auto or null, got \["),
])
def test_bad_settings_are_refused_up_front_naming_the_key(train_script, tmp_path, monkeypatch, override, error,
                                                         message):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    cfg = _config(tmp_path / "run", override)
    began = time.perf_counter()
    with pytest.raises(SettingError, match=message) as refused:
        train_script.train(cfg)
    assert isinstance(refused.value.__cause__, error)
    assert time.perf_counter() - began < 3.0  # before any setup: no pool, no env, no model
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()


def test_a_run_folder_to_resume_is_an_error_listing_its_models(train_script, tmp_path):
    """``train.resume=<the run's folder>`` said only 'no such checkpoint file'; now which models it holds."""
    run = tmp_path / "old"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("interrupted.zip", "checkpoints/ppo_1024_steps.zip"):
        (run / name).write_bytes(b"")
    with pytest.raises(SettingError, match=rf"^train\.resume={run}: no such checkpoint file \({run} is a folder; its "
                                           r"models: checkpoints/ppo_1024_steps\.zip, interrupted\.zip\)$"):
        train_script.train(_config(tmp_path / "run", f"train.resume={run}"))


@pytest.mark.parametrize(("overrides", "message"), [
    (["env.critic_hindsight=true", "env.forecast_features=[]"],
     r"^env\.critic_hindsight=true needs env\.forecast_features"),
    (["env.forecast_features=[]", "env.forecast_futures=3"],  # trained without futures, recorded with 3
     r"^env\.forecast_futures=3 samples futures for the env\.forecast_features rollouts, got \[\]$"),
    (["env.num_envs=1", "train.n_steps=129", "train.batch_size=64"],  # NaN logits after setup and a rollout
     r"^train\.n_steps=129 x env\.num_envs=1 leaves a last minibatch of one sample at train\.batch_size=64"),
    (["env.forecast_futures=2", "train.eval_seeds.start=900000"],
     r"^train\.eval_seeds: pool seeds 900000\.\.900001 overlap the seeds of the sampled futures 900000\.\.900999 "
     r"\(env\.forecast_futures=2\)"),
    (["env.num_envs=3", "train.n_steps=43", "train.batch_size=64"],  # 129 samples: n_steps alone leaves no one
     r"^train\.n_steps=43 x env\.num_envs=3 leaves a last minibatch of one sample"),
    (["env.forecast_futures=2", "train.eval_seeds.start=899999"],  # only the last seed is a sampled future's
     r"^train\.eval_seeds: pool seeds 899999\.\.900000 overlap the seeds of the sampled futures"),
    (["env.forecast_futures=2", "train.validation_seeds.start=900000"],  # model selection must not see them either
     r"^train\.validation_seeds: pool seeds 900000\.\.900001 overlap the seeds of the sampled futures"),
])
def test_settings_that_contradict_each_other_are_refused_up_front(train_script, tmp_path, monkeypatch, overrides,
                                                                   message):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=message):
        train_script.train(_config(tmp_path / "run", *overrides))
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()


def test_resume_refuses_settings_that_would_not_take_effect(train_script, tmp_path, monkeypatch):
    """A resumed run keeps its checkpoint's hyperparameters and policy: another value in the config is refused up
    front, naming the key (before, it was ignored in training and recorded in model.yaml as used)."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "ckpt.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"num_timesteps": 1024, "n_steps": 64, "batch_size": 128,
                                             "policy_kwargs": {"hidden": 8, "forecast_rules": ["EDD:EET", "ATC:LWL"],
                                                               "forecast_futures": 1}}))
        archive.writestr("policy.pth", b"weights")
    with pytest.raises(ValueError, match=r"so these settings would not take effect: train\.n_steps=128 \(the "
                                         r"checkpoint's: 64\); env\.forecast_futures=0 \(the checkpoint's: 1\)"):
        train_script.train(_config(tmp_path / "run", f"train.resume={path}"))
    assert not (tmp_path / "run").exists()


def _checkpoint(path: Path, timesteps: Any, best: dict | None = None, validation: dict | None = None,
                **data: Any) -> Path:
    """A file shaped like an SB3 checkpoint at ``timesteps`` (what the up-front checks read; ``data``: more of SB3's
    saved attributes), with a best-so-far record beside it when ``validation`` is given."""
    path.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", data_to_json({"num_timesteps": timesteps, **data}))
        archive.writestr("policy.pth", b"weights")
    if validation is not None:
        path.with_suffix(".json").write_text(json.dumps({"best": best, "validation": validation}), encoding="utf-8")
    return path


def test_resume_is_refused_up_front_unless_a_checkpoint_short_of_total_timesteps(train_script, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    good, empty, cut = _checkpoint(tmp_path / "good.zip", 256), tmp_path / "empty.zip", tmp_path / "cut.zip"
    empty.write_bytes(b"")  # what a kill in the middle of a non-atomic save left
    cut.write_bytes(good.read_bytes()[:200])
    with zipfile.ZipFile(tmp_path / "nopolicy.zip", "w") as archive:
        archive.writestr("data", json.dumps({"num_timesteps": 256}))
    setting = {"tier": "medium", "size": "small", "objective": "weighted_tardiness",
               "validation_seeds": {"start": VALIDATION_SEEDS.start, "count": len(VALIDATION_SEEDS)}}
    best = {"validation_mean": 3.0, "timesteps": 128, "policy": "best_128_steps.zip"}
    other = _checkpoint(tmp_path / "other" / "ppo_256_steps.zip", 256, best, {**setting, "objective": "makespan"})
    lost = _checkpoint(tmp_path / "lost" / "ppo_256_steps.zip", 256, best, setting)  # its best policy is gone
    damaged = _checkpoint(tmp_path / "damaged.zip", 256)  # a byte of a member changed: its CRC no longer matches
    damaged.write_bytes(damaged.read_bytes().replace(b"weights", b"Weights"))
    fraction = _checkpoint(tmp_path / "fraction.zip", 1.5)
    cases = [(empty, 1024, rf"^train\.resume={empty}: {empty} is not a loadable checkpoint"),
             (cut, 1024, r"cut\.zip is not a loadable checkpoint \(BadZipFile"),
             (tmp_path / "nopolicy.zip", 1024, r"nopolicy\.zip is not a loadable checkpoint \(KeyError"),
             (good, 128, rf"^train\.resume={good} is already at 256 timesteps, at or after train\.total_timesteps=128"),
             (good, 256, r"is already at 256 timesteps, at or after train\.total_timesteps=256"),
             (other, 1024, r"its best validation mean was measured on .*'makespan'.* this run validates on .*; "
                           r"set env\.objective=makespan to validate as it did, or delete .*ppo_256_steps\.json"),
             (lost, 1024, r"\(best policy in ppo_256_steps\.json\): .*best_128_steps\.zip is not a loadable"),
             (damaged, 1024, r"damaged\.zip is not a loadable checkpoint \(damaged member 'policy\.pth'"),
             (fraction, 1024, r"fraction\.zip is not a loadable checkpoint \(damaged member None or timesteps 1\.5\)")]
    for path, total, message in cases:
        began = time.perf_counter()
        with pytest.raises(ValueError, match=message):
            train_script.train(_config(tmp_path / "run", f"train.resume={path}", f"train.total_timesteps={total}"))
        assert time.perf_counter() - began < 3.0  # before any setup
        assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()


def test_resume_reads_the_checkpoints_schedules_and_best_record(train_script, tmp_path):
    """The learning rate at the start and whether it anneals are read from the saved schedule; the best record is
    read only where this run selects on validation, a record of no best is none, and a record measured on other
    validation seeds names the overrides that validate as it did."""
    setting = {"tier": "medium", "size": "small", "objective": "weighted_tardiness",
               "validation_seeds": {"start": VALIDATION_SEEDS.start, "count": len(VALIDATION_SEEDS)}}
    rules = tuple(_config(tmp_path / "run").env.forecast_features)  # a tuple, where the kwargs are pickled whole
    annealed = _checkpoint(tmp_path / "annealed" / "ppo_256_steps.zip", 256, None, setting,
                           lr_schedule=LinearSchedule(3e-4, 0.0, 1.0), clip_range=FloatSchedule(0.2),
                           policy_kwargs={"forecast_rules": rules, "activation_fn": th.nn.ReLU})
    resume = train_script.check_config(_config(tmp_path / "run", f"train.resume={annealed}"))
    assert (resume.path, resume.timesteps, resume.best) == (annealed, 256, None)
    with pytest.raises(ValueError, match=r"not take effect: train\.anneal_lr=False \(the checkpoint's: True\); set"):
        train_script.check_config(_config(tmp_path / "run", f"train.resume={annealed}", "train.anneal_lr=false"))
    best = {"validation_mean": 3.0, "timesteps": 128, "policy": "best_128_steps.zip"}
    other = _checkpoint(tmp_path / "other" / "ppo_256_steps.zip", 256, best,
                        {**setting, "validation_seeds": {"start": VALIDATION_SEEDS.start, "count": 3}})
    with pytest.raises(ValueError, match=r"set train\.validation_seeds\.count=3 to validate as it did, or delete"):
        train_script.check_config(_config(tmp_path / "run", f"train.resume={other}"))
    assert train_script.check_config(_config(tmp_path / "run", f"train.resume={other}", "train.keep_best=false")).best \
        is None  # no selection in this run: the record is not read


def test_a_save_killed_midway_leaves_no_partial_checkpoint(cache, train_script, tmp_path, monkeypatch):
    """A save that dies after writing part of the file (as a kill would) leaves no ``ppo_512_steps.zip``."""
    real_save = MaskablePPO.save

    def dying_save(self, path, *args, **kwargs):
        if "ppo_512_steps" in str(path):
            Path(path).write_bytes(b"PK\x03\x04")
            raise KeyboardInterrupt
        return real_save(self, path, *args, **kwargs)

    monkeypatch.setattr(MaskablePPO, "save", dying_save)
    with pytest.raises(train_script.TrainingInterrupted):
        train_script.train(_config(tmp_path / "run", "train.total_timesteps=1024", "train.checkpoint_every=256",
                                   "train.eval_every=0", "env.forecast_features=[]", "env.forecast_rule=null"))
    checkpoints = tmp_path / "run" / "checkpoints"
    assert not (checkpoints / "ppo_512_steps.zip").exists() and not list(checkpoints.glob("*.tmp"))
    assert MaskablePPO.load(checkpoints / "ppo_256_steps.zip", device="cpu").num_timesteps == 256


def test_a_finished_run_says_how_to_rank_its_model_and_to_train_it_on(train_script, tmp_path):
    """A run ended with "wrote .../model.zip" and no word of what to do with it: it names a leaderboard command
    that ranks the model beside the rules on its tier, size and objective, and the command that trains it on. A job
    of ``-m launcher=joblib env.tier=easy,hard`` said "this command with train.resume=...": the sweep's command, which
    would resume every tier from this one's model; its command, with the launcher, was refused without -m."""
    import shlex

    from scripts.overrides import check_command_line

    model = tmp_path / "my run" / "model.zip"
    overrides = ["launcher=joblib", "env.tier=easy", "train.total_timesteps=2048"]
    board, resume = train_script.next_steps(model, _config(tmp_path / "run", "env.tier=easy").env,
                                            overrides).splitlines()
    words = shlex.split(board.removeprefix("next: "))
    assert words[:3] == ["python", "-m", "scripts.leaderboard"]
    check_command_line(words[3:], False, None, "leaderboard")  # every override one the leaderboard takes
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        cfg = compose("leaderboard", overrides=words[3:])
    assert (cfg.ppo, list(cfg.tiers), list(cfg.sizes), cfg.objective, list(cfg.agent)) == (
        str(model), ["easy"], ["small"], "weighted_tardiness", ["rules"])
    assert cfg.out == str(model.parent / "leaderboard")
    command, _, note = resume.removeprefix("  or train on: ").rpartition(", ")
    words = shlex.split(command)
    assert words == ["python", "-m", "scripts.train", "env.tier=easy", "train.total_timesteps=2048",
                     f"train.resume={model.parent / 'last.zip'}"] and note == "with a larger train.total_timesteps"
    check_command_line(words[3:], False, None, "train/ppo")


#: a training sweep's settings for a run of a few seconds on the pool seeds of the ``cache`` fixture
SWEEP_RUN = ("env.pool_size=2", "env.num_envs=2", "train.n_steps=128", "train.batch_size=128", "train.hidden=8",
             "train.eval_every=0", "env.forecast_features=[]", "env.forecast_rule=null", "env.reward_scale=1.0",
             f"train.validation_seeds.start={VALIDATION_SEEDS.start}",
             f"train.validation_seeds.count={len(VALIDATION_SEEDS)}", f"train.eval_seeds.start={EVAL_SEEDS.start}",
             f"train.eval_seeds.count={len(EVAL_SEEDS)}", "train.progress_bar=false")


def test_the_resume_command_replaces_the_runs_resume_setting_however_given(train_script):
    command = train_script.resume_command(Path("/runs/a/interrupted.zip"), ["+train.resume=old.zip", "seed=1"])
    assert command == "python -m scripts.train seed=1 train.resume=/runs/a/interrupted.zip"


def test_a_training_sweep_with_a_bad_value_is_refused_before_any_job(train_script, tmp_path, monkeypatch, capsys):
    """``-m env.tier=medium,hard train.total_timesteps=...,abc``: the first tier trained in full before the bad value
    of a later job stopped the sweep; every job's settings are now checked first, and nothing runs or is written."""
    sweep = tmp_path / "sweep"
    monkeypatch.setattr(sys, "argv", ["train", "-m", "env.tier=medium,hard", "train.total_timesteps=256,abc",
                                      *SWEEP_RUN, f"hydra.sweep.dir={sweep}"])
    with pytest.raises(SystemExit) as exit_info:
        train_script.main()
    assert exit_info.value.code == 2 and not sweep.exists(), list(sweep.rglob("*"))
    assert capsys.readouterr().err.startswith("error: sweep job #1 (env.tier=medium train.total_timesteps=abc ")


def test_training_sweep_jobs_given_one_out_folder_are_refused(cache, train_script, tmp_path, monkeypatch, capsys):
    """``-m seed=0,1 out=runs/x``: both jobs trained into one folder, the second overwriting the first's model.zip,
    report and checkpoints, without a word. Refused before any job; an ``out`` of one folder per job is taken."""
    out = tmp_path / "runs"
    monkeypatch.setattr(sys, "argv", ["train", "-m", "seed=0,1", f"out={out}", "train.total_timesteps=256", *SWEEP_RUN])
    with pytest.raises(SystemExit) as exit_info:
        train_script.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and not out.exists()
    assert err.startswith(f"error: sweep jobs #0 and #1 (seed=1 out={out} ")
    assert f"would both write into out={out}; give each job its own" in err
    monkeypatch.setattr(sys, "argv", ["train", "-m", "seed=0,1", f"out={out}/${{hydra:job.num}}", "env.tier=nightmare",
                                      *SWEEP_RUN])
    with pytest.raises(SystemExit):
        train_script.main()
    assert "error: sweep job #0 " in capsys.readouterr().err  # no shared folder: the tier is what is refused


def test_a_ctrl_c_in_a_training_sweep_names_the_jobs_it_left_out(cache, train_script, tmp_path, monkeypatch, capsys):
    """Ctrl-C in job #0 of ``-m seed=0,1,2`` printed the command resuming job #0 alone, and nothing of jobs #1 and #2,
    which the stopped sweep never ran (rerunning the sweep trains job #0 again from the start)."""
    from scripts.overrides import check_command_line

    _ctrl_c_at(256, train_script, monkeypatch)
    monkeypatch.setattr(sys, "argv", ["train", "-m", "seed=0,1,2", "train.total_timesteps=512", *SWEEP_RUN,
                                      f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    with pytest.raises(SystemExit) as exit_info:
        train_script.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 130 and "Resume with:\n  python -m scripts.train seed=0 " in err
    note, *commands = err[err.index("the sweep's"):].rstrip("\n").split("\n")
    assert note == "the sweep's 2 later job(s) did not run; each alone:" and len(commands) == 2
    for seed, command in zip((1, 2), commands):
        words = shlex.split(command)
        assert words[:4] == ["python", "-m", "scripts.train", f"seed={seed}"]
        check_command_line(words[3:], False, None, "train/ppo")


def test_forecast_auto_rules_is_bounded_only_where_it_is_used(train_script, tmp_path):
    """Without env.forecast_rule=auto the count is not read (it was refused after setup even then)."""
    assert train_script.check_config(_config(tmp_path / "run", "env.forecast_rule=EDD:EET",
                                             "env.forecast_auto_rules=60")) is None


@pytest.mark.parametrize("overrides", [
    ["train.imitation.batch_size=1"], ["seed=4294967295"], ["train.ent_coef=0", "train.vf_coef=0"],
    ["train.gae_lambda=0", "train.gamma=1"], ["env.forecast_rule=auto", "env.forecast_auto_rules=52"],
    ["env.pool_size=2", "train.validation_seeds.start=2"],  # the first seed above the training pool
    ["train.validation_seeds.start=998"], ["train.validation_seeds.start=1002"],  # just below, just above the test
])
def test_settings_at_their_bounds_are_taken(train_script, tmp_path, overrides):
    """Each least or most value a setting may take, and held-out seeds right beside the training or test seeds."""
    assert train_script.check_config(_config(tmp_path / "run", *overrides)) is None


def test_training_sweeps_take_the_projects_launchers():
    """DESIGN: tier sweeps run locally (joblib) or on a cluster; train's config had no launcher group."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        cfg = compose("train/ppo", overrides=["launcher=joblib"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith("JoblibLauncher")


@pytest.mark.parametrize("name", ["train", "evaluate", "leaderboard", "observability"])
def test_sweepable_scripts_run_their_importable_main(name):
    """``python -m scripts.train -m launcher=joblib ...`` failed before any job ("cannot pickle 'generator' object"):
    run as ``__main__``, the script handed joblib its own ``main``, which cloudpickle copies by value with everything
    it calls, including a ``settings_checked()`` decorator's context manager. Workers must get ``scripts.<name>.main``
    by name, as the launcher-capable scripts' ``__main__`` blocks import it."""
    tree = ast.parse((Path(__file__).parents[1] / "scripts" / f"{name}.py").read_text(encoding="utf-8"))
    blocks = [node for node in tree.body
              if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"]
    imports = [node for block in blocks for node in ast.walk(block) if isinstance(node, ast.ImportFrom)]
    assert [(node.module, [alias.name for alias in node.names]) for node in imports] == [(f"scripts.{name}", ["main"])]


def test_sigterm_during_training_saves_the_model_as_ctrl_c_does(cache, train_script, tmp_path, monkeypatch):
    """SIGTERM (what a scheduler or ``kill`` sends) stops training as Ctrl-C does: ``interrupted.zip`` and the resume
    command, not a silent death that loses every step since the last checkpoint."""
    import signal

    class Term(train_script.Checkpoints):
        def _on_step(self) -> bool:
            if self.num_timesteps == 512:
                os.kill(os.getpid(), signal.SIGTERM)
            return super()._on_step()

    def unhandled(signum, frame):  # what the default handler would do is end pytest: stand in for it
        raise RuntimeError("SIGTERM was not handled by the training script")

    monkeypatch.setattr(train_script, "Checkpoints", Term)
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            train_script.train(_config(tmp_path / "run", "train.total_timesteps=1024", "train.eval_every=0",
                                       "env.forecast_features=[]", "env.forecast_rule=null"))
    finally:
        restored = signal.signal(signal.SIGTERM, previous)
    assert restored is unhandled  # the script put the handler back
    assert isinstance(caught.value, train_script.TrainingInterrupted) and caught.value.path.is_file()
    assert make("ppo", checkpoint=caught.value.path).model.num_timesteps == caught.value.timesteps >= 256


def test_a_second_ctrl_c_while_interrupted_zip_is_saved_does_not_lose_it(cache, train_script, tmp_path,
                                                                        monkeypatch):
    """Ctrl-C pressed again while ``interrupted.zip`` is being saved (as one does when a stop seems slow) lets the
    save finish and still prints the resume command; before, it cut the save short and nothing was kept."""
    import signal

    _ctrl_c_at(512, train_script, monkeypatch)
    save = train_script.save_checkpoint

    def second_ctrl_c(model, path, validator):
        if path.name == "interrupted.zip":
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # the second Ctrl-C, mid-save
            time.sleep(0.05)
        save(model, path, validator)

    monkeypatch.setattr(train_script, "save_checkpoint", second_ctrl_c)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt) as caught:
        train_script.train(_config(tmp_path / "run", "train.total_timesteps=1024", "train.eval_every=0",
                                   "env.forecast_features=[]", "env.forecast_rule=null"))
    assert isinstance(caught.value, train_script.TrainingInterrupted)
    assert make("ppo", checkpoint=caught.value.path).model.num_timesteps == 256  # the rollout of 256 .. 512 untrained
    assert signal.getsignal(signal.SIGINT) is handler  # Ctrl-C works as before afterwards


def test_ctrl_c_in_the_final_evaluation_says_the_training_is_saved_and_how_to_test_it(cache, train_script, tmp_path,
                                                                                      monkeypatch):
    """Stopped in the final evaluation, the run says that training finished and where its policies are (resuming is
    refused: nothing left to train), and gives the command that tests the selected policy on the same seeds."""

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_script, "compare_with_rules", stopped)
    with pytest.raises(KeyboardInterrupt) as caught:
        train_script.train(_config(tmp_path / "run", "train.total_timesteps=1024", "train.eval_every=512",
                                   "env.forecast_features=[]", "env.forecast_rule=null"))
    stop = caught.value
    assert isinstance(stop, train_script.EvaluationInterrupted) and stop.timesteps == 1024
    assert stop.chosen == "best.zip" and (tmp_path / "run" / "best.zip").is_file()
    assert (tmp_path / "run" / "last.zip").is_file() and not (tmp_path / "run" / "model.zip").exists()
    assert stop.command.startswith("python -m scripts.compare_agents --agent ppo --checkpoint ")
    assert f"--start {EVAL_SEEDS.start} --seeds {len(EVAL_SEEDS)}" in stop.command and stop.command in str(stop)


def test_a_run_resumed_between_checkpoints_saves_and_validates_on_the_uninterrupted_schedule(cache, train_script,
                                                                                            tmp_path, monkeypatch):
    """Resumed from ``interrupted.zip`` (640 timesteps, between two checkpoints), the run saves its checkpoints and
    validates at the multiples of ``train.checkpoint_every`` and ``train.eval_every``, as the uninterrupted run does;
    before, both schedules restarted at the resume point (``ppo_1664_steps.zip``, validations at 642 and 1666), so the
    resumed run selected among other policies than the uninterrupted one would have. Stopped at 640, inside the rollout
    of 512 .. 768 (2 envs x 128 steps), ``interrupted.zip`` counts the 512 timesteps its policy was trained on, so the
    resumed run trains the uninterrupted run's 8 rollouts and stops at 2048; before, it counted the 128 steps of the
    discarded rollout as done and stopped at 2176."""

    checkpoints = _ctrl_c_at(640, train_script, monkeypatch)
    validated = _record_validations(train_script, monkeypatch)
    short = ("train.total_timesteps=2048", "env.forecast_features=[]", "env.forecast_rule=null")
    with pytest.raises(train_script.TrainingInterrupted) as caught:
        train_script.train(_config(tmp_path / "run", *short))
    assert caught.value.timesteps == 512 and validated == [0]  # the warm start, before any step
    assert MaskablePPO.load(caught.value.path, device="cpu").num_timesteps == 512
    monkeypatch.setattr(train_script, "Checkpoints", checkpoints)
    validated.clear()
    train_script.train(_config(tmp_path / "resumed", *short, f"train.resume={caught.value.path}"))
    assert validated[:-1] == [1024, 2048]  # the last one: the final test of the selected policy
    last = MaskablePPO.load(tmp_path / "resumed" / "last.zip", device="cpu")
    assert (last.num_timesteps, last._n_updates) == (2048, 8)  # 8 rollouts of 256 timesteps, 1 epoch each
    checkpoints = sorted(p.name for p in (tmp_path / "resumed" / "checkpoints").glob("ppo_*_steps.zip"))
    assert checkpoints == ["ppo_1024_steps.zip", "ppo_2048_steps.zip"]


def _record_validations(train_script, monkeypatch) -> list[int]:
    """Replace train's validation by one that records the timestep count it validates at, each a new best."""
    validated: list[int] = []

    def validate(agent, env_cfg, instances, progress=False):
        validated.append(agent.model.num_timesteps)
        return np.full(len(instances), 10.0 - len(validated))

    monkeypatch.setattr(train_script, "evaluate", validate)
    return validated


def test_a_run_resumed_at_a_validation_step_does_not_validate_it_again(cache, train_script, tmp_path, monkeypatch):
    """Stopped inside the rollout of 1024 .. 1280, ``interrupted.zip`` counts 1024 timesteps, a multiple of
    ``train.eval_every``: the uninterrupted run validated there already (at the rollout's last step, in the record
    beside the checkpoint) and next validates at 2048. Before, the resumed run validated again at its first step
    (1026), a policy (after the update of the rollout that ends at 1024) the uninterrupted run never validates, which
    could then be selected."""

    checkpoints = _ctrl_c_at(1100, train_script, monkeypatch)
    validated = _record_validations(train_script, monkeypatch)
    short = ("train.total_timesteps=2048", "env.forecast_features=[]", "env.forecast_rule=null")
    with pytest.raises(train_script.TrainingInterrupted) as caught:
        train_script.train(_config(tmp_path / "run", *short))
    assert caught.value.timesteps == 1024 and validated == [0, 1024]
    monkeypatch.setattr(train_script, "Checkpoints", checkpoints)
    validated.clear()
    train_script.train(_config(tmp_path / "resumed", *short, f"train.resume={caught.value.path}"))
    assert validated[:-1] == [2048]  # the last one: the final test of the selected policy


def test_a_checkpoint_of_an_interrupted_run_knows_its_objective(cache, train_script, tmp_path, monkeypatch):
    """An interrupted run writes no ``model.yaml``: its checkpoints' objective comes from the record beside each
    (``<stem>.json``). Before, ``PPOAgent`` knew none, so a makespan policy played weighted tardiness unwarned (and
    scripts.evaluate ranked it on any objective)."""

    _ctrl_c_at(768, train_script, monkeypatch)
    with pytest.raises(train_script.TrainingInterrupted) as caught:
        train_script.train(_config(tmp_path / "run", "env.objective=makespan", "train.checkpoint_every=512",
                                   "train.eval_every=0", "env.forecast_features=[]", "env.forecast_rule=null"))
    assert not (tmp_path / "run" / "model.yaml").exists()
    for checkpoint in (caught.value.path, tmp_path / "run" / "checkpoints" / "ppo_512_steps.zip"):
        agent = make("ppo", checkpoint=checkpoint)
        assert agent.trained_objective == "makespan"
        env = gym.make("DynaSched/DFJSP-v0", tier="medium", objective="weighted_tardiness", **agent.env_settings())
        env.reset(seed=0)
        with pytest.warns(RuntimeWarning, match="was trained for makespan"):
            agent.reset(env)


@pytest.mark.parametrize(("text", "message"), [
    ("- a\n- b\n", r"its config\.env must be a mapping, got list: \['a', 'b'\]"),
    ("config:\n  env: [1, 2]\n", r"its config\.env must be a mapping, got list: \[1, 2\]"),
    ("a: [1,\n", "is no YAML: while parsing a flow node"),
])
def test_a_training_config_beside_a_checkpoint_that_is_none_is_named(tmp_path, text, message):
    """A ``<name>.yaml`` beside the checkpoint is read as its training config: one that is no YAML mapping failed
    with "'list' object has no attribute 'get'" (or yaml's ParserError), naming no file."""
    shutil.copy(shipped_checkpoint("medium"), tmp_path / "m.zip")
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "m.yaml")) + ", read as the PPO checkpoint's "
                       "training config, .*" + message):
        make("ppo", checkpoint=tmp_path / "m.zip")


def test_an_unknown_objective_in_the_training_config_is_refused_when_the_agent_is_made(tmp_path):
    """``objective: lateness`` beside the checkpoint was taken as the trained objective, and refused only at the
    first ``play()``."""
    shutil.copy(shipped_checkpoint("medium"), tmp_path / "m.zip")
    (tmp_path / "m.yaml").write_text("config:\n  env:\n    objective: lateness\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"the objective of the training config beside {tmp_path / 'm.zip'}"
                                                   " must be one of") + ".*got 'lateness'"):
        make("ppo", checkpoint=tmp_path / "m.zip")


def test_a_json_record_beside_a_checkpoint_that_is_none_is_ignored(tmp_path):
    """``{"validation": 3}`` beside the checkpoint raised "argument of type 'int' is not iterable"; like other
    files that are no record of scripts.train, it says nothing of the training env."""
    shutil.copy(shipped_checkpoint("medium"), tmp_path / "m.zip")
    (tmp_path / "m.json").write_text('{"validation": 3}', encoding="utf-8")
    assert make("ppo", checkpoint=tmp_path / "m.zip").trained_objective is None


def test_a_json_record_beside_a_checkpoint_gives_the_training_envs_tier_size_and_objective(tmp_path):
    """The record scripts.train writes beside each checkpoint: its validation setting's tier, size and objective are
    the training env's (the size sets the feature units of a checkpoint that records none)."""
    from dynasched_gym.agents.ppo import training_env

    setting = {"tier": "hard", "size": "large", "objective": "makespan", "validation_seeds": {"start": 5, "count": 2}}
    (tmp_path / "m.json").write_text(json.dumps({"best": None, "validation": setting}), encoding="utf-8")
    assert training_env(tmp_path / "m.zip") == {"tier": "hard", "size": "large", "objective": "makespan"}


def test_a_policy_whose_actor_read_the_hindsight_forecasts_is_refused():
    """SB3's MultiInputPolicy on make_sb3_vec_env(critic_hindsight=True) reads hindsight_forecasts (the real future) in
    its actor: PPOAgent played it with zeros there, an actor trained on the future fed what it never saw."""
    from dynasched_gym.envs.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=1, instance="mk01", forecast_features=["EDD:EET"],
                            critic_hindsight=True)
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=8, batch_size=8)
    with pytest.raises(ValueError, match=re.escape(f"reads {HINDSIGHT_KEY!r}, the real future, in its actor too: "
                                                   "MaskableMultiInputActorCriticPolicy feeds every")):
        make("ppo", checkpoint=model)
