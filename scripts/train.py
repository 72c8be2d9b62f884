"""Train PPO on ``DynaSched/DFJSP-v0`` (Hydra entry point, ``conf/train/ppo.yaml`` + ``conf/env/dfjsp.yaml``).

``python -m scripts.train [env.tier=medium] [train.total_timesteps=...] [train.resume=ckpt.zip]``;
``python -m scripts.train -m env.tier=easy,medium,hard,extreme`` trains one model per tier.

sb3-contrib ``MaskablePPO`` with :class:`~dynasched_gym.agents.policy.SlotPolicy` on the SB3 vector env
(``dynasched_gym.envs.sb3``), episodes drawn from pool seeds ``0 .. env.pool_size - 1``; observations carry
the fair rollout forecasts of ``env.forecast_features``, rewards come from ``env.forecast_rule``'s hindsight
forecast, and an optional warm start imitates a rule (``train.imitation``: behaviour cloning plus value
regression on its returns; off by default).
Writes into Hydra's run dir (``out``):

- ``tb/``: TensorBoard logs (SB3's training curves; ``eval/mean_<metric>``: the deterministic policy's mean
  objective on the validation seeds ``train.validation_seeds``, every ``train.eval_every`` timesteps);
- ``checkpoints/ppo_<timesteps>_steps.zip``: every ``train.checkpoint_every`` timesteps, each with
  ``ppo_<timesteps>_steps.json``: the best validation mean so far, its timesteps and the policy that scored
  it (``best.zip`` moves on, so a copy is kept as ``checkpoints/best_<timesteps>_steps.zip``);
  ``last.zip`` and ``interrupted.zip`` get the same record (``last.json``, ``interrupted.json``);
- ``best.zip``: the policy with the best validation mean so far (``train.keep_best``, the warm start
  included); ``last.zip``: the policy at the end of training;
- ``model.zip``: the policy tested and shipped: a copy of ``best.zip`` (the policy selected on the
  validation seeds) when ``train.keep_best`` and ``train.eval_every`` are on, else of ``last.zip``;
  ``model.yaml``: the resolved config, seed, reward scale, timesteps, which policy was selected, wall
  time, throughput and the final evaluation;
- ``report.md``: the final evaluation of ``model.zip`` on the held-out test pool seeds ``train.eval_seeds``:
  PPO (deterministic) against every deterministic rule of the library (in-kernel rollouts), with the
  paired bootstrap 95 % CI of PPO minus the best rule (chosen on the test seeds, and on the validation seeds).

Every file is written atomically (a temporary file beside it, then a rename): a killed run leaves no
partial one.

``train.resume=path.zip`` loads that checkpoint (its hyperparameters and timestep count) and trains on
up to ``train.total_timesteps`` timesteps in all; the best validation result recorded beside it (and its
policy, copied to ``best.zip``) carries over, so the resumed run selects as the uninterrupted one would.
Ctrl-C (or SIGTERM, as a scheduler or ``kill`` sends) during training saves ``interrupted.zip`` (the model with
the timesteps it was trained on: those of the unfinished rollout are not, and are collected again on resume; a
second Ctrl-C while it is saved waits for the save) and prints the command that resumes from it.

Every setting the script reads (choices, rule names, numbers, switches, the ``train.resume`` file) is
checked before any setup (:func:`check_config`): a bad one is refused naming its config key and value.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import signal
import sys
import time
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import sb3_contrib
import torch as th
import yaml
from gymnasium import spaces
from omegaconf import DictConfig, OmegaConf
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.save_util import json_to_data
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import VecEnv
from tqdm import tqdm

from dynasched_gym import Instance, rollout, validate_schedule
from dynasched_gym.agents.policy import INTERACTIONS, SlotPolicy
from dynasched_gym.agents.ppo import PPOAgent, checkpoint_file, models_in, observation_settings
from dynasched_gym.agents.rules import RuleAgent, complementary_rules, rule_names, rule_objectives
from dynasched_gym.checks import check_bool, check_choice, check_integer, check_positive, check_real
from dynasched_gym.core import compile_note
from dynasched_gym.core.rules import parse_deterministic_rule, parse_rule, rule_list
from dynasched_gym.envs.dfjsp.episodes import pool_scales
from dynasched_gym.envs.dfjsp.features import OBSERVABILITY
from dynasched_gym.envs.dfjsp.types import MAX_CANDIDATES_LIMIT
from dynasched_gym.envs.dfjsp.vector import MAX_NUM_ENVS
from dynasched_gym.envs.futures import MAX_FUTURES, check_outside_futures
from dynasched_gym.envs.sb3 import make_sb3_vec_env
from dynasched_gym.envs.wrappers import ForecastFeatures, ForecastReward
from dynasched_gym.generation import MAX_SEEDS, TIERS, size_presets, tier_pool
from dynasched_gym.instance import atomic_path, write_text_atomic
from dynasched_gym.metrics import OBJECTIVE_METRICS
from dynasched_gym.results import paired_margin
from scripts.interrupts import interrupted_exit, signal_handlers, sigterm_as_interrupt
from scripts.overrides import (
    check_added_keys,
    checked_main,
    later_sweep_jobs,
    output_folder,
    setting_errors_exit,
    settings_checked,
    single_run_overrides,
)

ENV_ID = "DynaSched/DFJSP-v0"
#: Rule whose mean objective on the first pool instances sets the automatic reward scale.
SCALE_RULE, SCALE_SEEDS = "FIFO:EET", 32
#: Value of ``env.forecast_rule`` / ``train.imitation.rule`` meaning: chosen on the training seeds.
AUTO = "auto"
#: Integer settings and their least values (``train.batch_size`` 2: SB3 normalises the advantages per
#: minibatch, and one sample has no spread); the seed is bounded above by NumPy's seed range.
INTEGERS = {"seed": 0, "env.num_envs": 1, "env.pool_size": 1, "env.max_candidates": 1, "env.forecast_auto_rules": 1,
            "env.forecast_futures": 0, "train.total_timesteps": 1, "train.n_steps": 1, "train.batch_size": 2,
            "train.n_epochs": 1, "train.hidden": 1, "train.torch_threads": 1, "train.checkpoint_every": 1,
            "train.eval_every": 0, "train.imitation.episodes": 1, "train.imitation.epochs": 1,
            "train.imitation.batch_size": 1, "train.validation_seeds.start": 0, "train.validation_seeds.count": 1,
            "train.eval_seeds.start": 0, "train.eval_seeds.count": 1}
MAX_SEED = 2**32 - 1
#: The integer settings bounded above, and their most: those that count pool seeds (each seed is an instance to
#: generate and cache), and those the env and torch bound (refused there only after the pool and the envs' setup).
MAXIMA = {**dict.fromkeys(("env.pool_size", "train.validation_seeds.count", "train.eval_seeds.count"), MAX_SEEDS),
          "env.forecast_futures": MAX_FUTURES, "env.max_candidates": MAX_CANDIDATES_LIMIT, "env.num_envs": MAX_NUM_ENVS,
          "train.torch_threads": 2**31 - 1}  # torch.set_num_threads takes a C int
#: Real settings that must be > 0, and those that must be >= 0.
POSITIVE = ("train.learning_rate", "train.clip_range", "train.max_grad_norm", "train.imitation.learning_rate")
NON_NEGATIVE = ("train.ent_coef", "train.vf_coef")
SWITCHES = ("env.forecast_hindsight", "env.critic_hindsight", "train.anneal_lr", "train.keep_best",
            "train.progress_bar")


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training; the model, trained on ``timesteps``, was saved to ``path`` and ``command`` resumes
    it."""

    def __init__(self, path: Path, timesteps: int, command: str) -> None:
        super().__init__(f"training interrupted; the model trained on {timesteps} timesteps is saved in {path} (the "
                         f"steps of the unfinished rollout are collected again). Resume with:\n  {command}")
        self.path, self.timesteps, self.command = path, timesteps, command


def _saving(signum: int, frame: Any) -> None:
    print("\nsaving interrupted.zip, stopping right after", file=sys.stderr, flush=True)


def signals_deferred() -> contextlib.AbstractContextManager[None]:
    """Within the block Ctrl-C and SIGTERM only print that the block is finishing (the save of ``interrupted.zip``,
    a second or so); the caller stops right after it."""
    return signal_handlers(_saving, signal.SIGINT, signal.SIGTERM)


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the final evaluation: training finished and its policies are saved in ``out`` (``chosen``: the
    one to be tested), but ``model.zip``, ``report.md`` and ``model.yaml`` were not written."""

    def __init__(self, out: Path, chosen: str, timesteps: int, env_cfg: DictConfig, seeds: DictConfig) -> None:
        command = (f"python -m scripts.compare_agents --agent ppo --checkpoint {shlex.quote(str(out / chosen))} "
                   f"--tier {env_cfg.tier} --size {env_cfg.size} --objective {env_cfg.objective} "
                   f"--start {seeds.start} --seeds {seeds.count}")
        super().__init__(f"training finished ({timesteps} timesteps) and is saved in {out}: last.zip (the last "
                         f"policy) and {chosen} (the one selected for testing); the final evaluation was interrupted, "
                         "so model.zip, report.md and model.yaml were not written (an earlier run's are left as they "
                         f"were). Test the policy on the same seeds without training again:\n  {command}")
        self.out, self.chosen, self.timesteps, self.command = out, chosen, timesteps, command


# ------------------------------------------------------------------------------------------- config
def _check_rules(key: str, value: Any, auto: bool = False, rollout: bool = False) -> None:
    """Every rule of the setting ``key`` (one rule, a list, null, or ``auto`` where ``auto``) must parse; where
    ``rollout`` (forecasts) it must be deterministic, or training would not repeat."""
    if value is None or (auto and value == AUTO):
        return
    try:
        for rule in rule_list(list(value) if OmegaConf.is_list(value) else value):
            parse_deterministic_rule(str(rule), key) if rollout else parse_rule(str(rule))
    except (TypeError, ValueError) as exc:  # a number among the rules is a TypeError of rule_list
        raise type(exc)(f"{key}={value}: {exc}") from None


class Resume(NamedTuple):
    """What ``train.resume`` holds: the checkpoint, its timestep count, and the best validation result before
    it (mean, timesteps, the policy file that scored it; None when there is none to carry over)."""

    path: Path
    timesteps: int
    best: tuple[float, int, Path] | None


@settings_checked()
def check_config(cfg: DictConfig) -> Resume | None:
    """Refuse bad settings before any setup, each :class:`~scripts.overrides.SettingError` naming the config key
    and the value given; returns what ``train.resume`` holds (None without it)."""
    tc, ec = cfg.train, cfg.env
    output_folder("out", cfg.out)
    check_choice("env.tier", ec.tier, TIERS)
    check_choice("env.size", ec.size, size_presets())
    check_choice("env.objective", ec.objective, tuple(OBJECTIVE_METRICS))
    check_choice("env.observability", ec.observability, OBSERVABILITY)
    check_choice("train.interaction", tc.interaction, INTERACTIONS)
    for key, least in INTEGERS.items():
        check_integer(key, OmegaConf.select(cfg, key), least, MAXIMA.get(key))
    if cfg.seed > MAX_SEED:
        raise ValueError(f"seed must be an integer <= {MAX_SEED}, got {cfg.seed}")
    for key in POSITIVE:
        check_positive(key, OmegaConf.select(cfg, key))
    for key in NON_NEGATIVE:
        check_real(key, OmegaConf.select(cfg, key), 0.0)
    check_real("train.gamma", tc.gamma, 0.0, 1.0, open_low=True)
    check_real("train.gae_lambda", tc.gae_lambda, 0.0, 1.0)
    for key in SWITCHES:
        check_bool(key, OmegaConf.select(cfg, key))
    if ec.reward_scale is not None:
        check_positive("env.reward_scale", ec.reward_scale)
    _check_rules("env.forecast_rule", ec.forecast_rule, auto=True, rollout=True)
    if OmegaConf.is_list(ec.forecast_rule) and not ec.forecast_rule:  # [] was read as null without a word
        raise ValueError("env.forecast_rule must be a JOB:MACHINE rule, a non-empty list of them, auto or null (no "
                         "forecast reward), got []")
    if ec.forecast_rule == AUTO and ec.forecast_auto_rules > len(rule_names()):
        raise ValueError(f"env.forecast_auto_rules must be at most {len(rule_names())} (the deterministic rules), got "
                         f"{ec.forecast_auto_rules}")
    if not OmegaConf.is_list(ec.forecast_features):
        raise ValueError(f"env.forecast_features must be a list of JOB:MACHINE rules ([] for none), got "
                         f"{ec.forecast_features!r}")
    _check_rules("env.forecast_features", ec.forecast_features, rollout=True)
    if (tc.n_steps * ec.num_envs) % tc.batch_size == 1:  # SB3 splits the rollout into minibatches as they come
        raise ValueError(f"train.n_steps={tc.n_steps} x env.num_envs={ec.num_envs} leaves a last minibatch of one "
                         f"sample at train.batch_size={tc.batch_size} (its advantages cannot be normalised): change "
                         "one of them")
    if ec.forecast_futures and not ec.forecast_features:
        raise ValueError(f"env.forecast_futures={ec.forecast_futures} samples futures for the env.forecast_features "
                         "rollouts, got []")
    if ec.critic_hindsight and not ec.forecast_features:
        raise ValueError("env.critic_hindsight=true needs env.forecast_features (the critic reads their hindsight "
                         "rollouts), got []")
    if tc.imitation.rule is not None and not isinstance(tc.imitation.rule, str):
        raise ValueError(f"train.imitation.rule must be one JOB:MACHINE rule, auto or null, got {tc.imitation.rule!r}")
    _check_rules("train.imitation.rule", tc.imitation.rule, auto=True)
    if ec.forecast_futures:  # held-out instances must not be drawn as sampled futures in training
        for name in ("validation_seeds", "eval_seeds"):
            check_outside_futures(f"train.{name}", range(tc[name].start, tc[name].start + tc[name].count),
                                  f"env.forecast_futures={ec.forecast_futures}")
    for name in ("validation_seeds", "eval_seeds"):
        if tc[name].start < ec.pool_size:
            raise ValueError(f"train.{name}.start={tc[name].start} overlaps the training pool seeds "
                             f"0..{ec.pool_size - 1}")
    check_disjoint(tc.validation_seeds, tc.eval_seeds)
    return read_resume(cfg) if tc.resume is not None else None


def checkpoint_timesteps(where: str, path: Path) -> int:
    """The timestep count saved in the SB3 checkpoint ``path``; a file that is no complete checkpoint (empty,
    cut short, corrupt) is refused up front, the error starting with ``where`` and naming ``path``."""
    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()  # CRCs: a file cut short or damaged inside
            archive.getinfo("policy.pth")
            steps = json.loads(archive.read("data"))["num_timesteps"]
    except (OSError, zipfile.BadZipFile, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {path} is not a loadable checkpoint ({type(exc).__name__}: {exc})") from None
    if broken is not None or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"{where}: {path} is not a loadable checkpoint (damaged member {broken!r} or timesteps "
                         f"{steps!r})")
    return steps


def read_resume(cfg: DictConfig) -> Resume:
    """``train.resume`` checked: a loadable checkpoint short of ``train.total_timesteps``, and the best
    validation result recorded beside it (:func:`read_best`) when this run selects on validation."""
    tc = cfg.train
    if not isinstance(tc.resume, str):
        raise TypeError(f"train.resume must be a checkpoint path or null, got {tc.resume!r}")
    where = f"train.resume={tc.resume}"
    path = checkpoint_file(tc.resume)
    if path is None:
        folder = Path(tc.resume)
        models = models_in(folder)
        hint = (f" ({folder} is a folder; its models: {', '.join(models)})" if models else
                f" ({folder} is a folder, with no model .zip in it)") if folder.is_dir() else ""
        raise FileNotFoundError(f"{where}: no such checkpoint file{hint}")
    steps = checkpoint_timesteps(where, path)
    if steps >= tc.total_timesteps:
        raise ValueError(f"{where} is already at {steps} timesteps, at or after train.total_timesteps="
                         f"{tc.total_timesteps}: nothing left to train (raise train.total_timesteps)")
    with zipfile.ZipFile(path) as archive:  # the schedules and spaces decoded as the resumed model will have them
        data = json_to_data(archive.read("data").decode("utf-8"))
    saved = {f"train.{k}": data.get(k) for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                "ent_coef", "vf_coef", "max_grad_norm")}
    learning_rate, clip_range, space = data.get("lr_schedule"), data.get("clip_range"), data.get("observation_space")
    if callable(learning_rate):  # at progress 1 (the start) and 0 (the end): annealed when they differ
        saved.update({"train.learning_rate": float(learning_rate(1.0)),
                      "train.anneal_lr": bool(learning_rate(0.0) != learning_rate(1.0))})
    if callable(clip_range):
        saved["train.clip_range"] = float(clip_range(1.0))
    if isinstance(space, spaces.Dict) and "candidates" in space.spaces:
        saved.update({f"env.{k}": v for k, v in observation_settings(space).items()})
    kwargs = data.get("policy_kwargs") or {}
    saved.update({"train.hidden": kwargs.get("hidden"), "train.interaction": kwargs.get("interaction"),
                  "env.forecast_features": kwargs.get("forecast_rules"),
                  "env.forecast_futures": kwargs.get("forecast_futures"),
                  "env.critic_hindsight": kwargs.get("critic_hindsight")})
    differ = []
    for key, value in saved.items():
        wanted = OmegaConf.select(cfg, key)
        wanted = list(wanted) if OmegaConf.is_list(wanted) else wanted
        if value is not None and not isinstance(value, dict) and _jsonish(value) != _jsonish(wanted):
            differ.append(f"{key}={wanted} (the checkpoint's: {value})")
    if differ:
        raise ValueError(f"{where}: a resumed run keeps its checkpoint's model and policy, so these settings would "
                         f"not take effect: {'; '.join(differ)}; set them to the checkpoint's, or start a new run")
    return Resume(path, steps, read_best(cfg, path) if tc.keep_best and tc.eval_every else None)


def _jsonish(value: Any) -> Any:
    """``value`` with a tuple as a list (JSON has no tuples), for comparisons."""
    return list(value) if isinstance(value, tuple) else value


def validation_setting(cfg: DictConfig) -> dict[str, Any]:
    """What a validation mean is measured on: two means compare only under the same setting."""
    return {"tier": cfg.env.tier, "size": cfg.env.size, "objective": cfg.env.objective,
            "validation_seeds": OmegaConf.to_container(cfg.train.validation_seeds)}


def read_best(cfg: DictConfig, checkpoint: Path) -> tuple[float, int, Path] | None:
    """The best validation result :func:`save_checkpoint` recorded beside ``checkpoint``: (mean, timesteps,
    policy file), or None when there was none (a warning when there is no record at all)."""
    where, record_path = f"train.resume={cfg.train.resume}", checkpoint.with_suffix(".json")
    if not record_path.is_file():
        warnings.warn(f"{where}: no {record_path.name} beside it records the best validation result so far; "
                      "model selection starts afresh from the resumed policy", stacklevel=2)
        return None
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        best, setting = record["best"], record["validation"]
        if best is None:
            return None
        mean, steps, policy = float(best["validation_mean"]), int(best["timesteps"]), str(best["policy"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{where}: unreadable record {record_path} ({type(exc).__name__}: {exc})") from None
    if setting != validation_setting(cfg):
        same = " ".join(_validating_as(setting, cfg))
        raise ValueError(f"{where}: its best validation mean was measured on {setting}, this run validates on "
                         f"{validation_setting(cfg)}; {f'set {same} to validate as it did, or ' if same else ''}"
                         f"delete {record_path} to restart model selection")
    checkpoint_timesteps(f"{where} (best policy in {record_path.name})", checkpoint.parent / policy)
    return mean, steps, checkpoint.parent / policy


def _validating_as(setting: Any, cfg: DictConfig) -> list[str]:
    """The overrides that make ``cfg`` validate on a record's ``setting`` (:func:`validation_setting`), most often
    the training run's own, left out of the resume's command line; none for a record of another shape."""
    now = validation_setting(cfg)
    if not isinstance(setting, dict) or not isinstance(setting.get("validation_seeds"), dict):
        return []
    keys = [(f"env.{k}", v, now[k]) for k, v in setting.items() if k in ("tier", "size", "objective")]
    keys += [(f"train.validation_seeds.{k}", v, now["validation_seeds"].get(k))
             for k, v in setting["validation_seeds"].items()]
    return [f"{key}={value}" for key, value, current in keys if value != current]


def resume_command(path: Path, overrides: Sequence[str] | None) -> str:
    """The command line that resumes from ``path`` with the run's other ``overrides`` (None: unknown, a
    placeholder says where they go; a sweep job's without its launcher, refused without -m)."""
    resumed = ("train.resume=", "+train.resume=")
    kept = ["<the run's other overrides>"] if overrides is None else [
        shlex.quote(o) for o in single_run_overrides(overrides) if not o.startswith(resumed)]
    return " ".join(["python -m scripts.train", *kept, shlex.quote(f"train.resume={path}")])


# ------------------------------------------------------------------------------------------- envs
def play_kwargs(env_cfg: DictConfig) -> dict[str, Any]:
    """The ``gym.make`` arguments that shape observations and rewards (training and evaluation envs alike): the
    feature units are the pool's (:func:`pool_scales`) also where an episode is given its instance."""
    time_scale, ops_scale = pool_scales(env_cfg.size)
    return {"objective": env_cfg.objective, "observability": env_cfg.observability,
            "max_candidates": env_cfg.max_candidates, "time_scale": time_scale, "ops_scale": ops_scale}


def auto_reward_scale(env_cfg: DictConfig) -> float:
    """``env.reward_scale``, or when null 1 / the mean objective of ``SCALE_RULE`` on the first pool instances."""
    if env_cfg.reward_scale is not None:
        return float(env_cfg.reward_scale)
    pool = tier_pool(env_cfg.tier, env_cfg.size)
    key = OBJECTIVE_METRICS[env_cfg.objective]
    mean = np.mean([rollout(pool.instance(s), rule=SCALE_RULE).metrics[key]
                    for s in range(min(SCALE_SEEDS, env_cfg.pool_size))])
    return float(1.0 / mean) if mean > 0 else 1.0


def make_train_env(env_cfg: DictConfig, reward_scale: float, forecast_rule: str | list[str] | None) -> VecEnv:
    """The SB3 vector env of ``env.num_envs`` envs on the tier pool (forecast rewards when a rule is given)."""
    return make_sb3_vec_env(ENV_ID, num_envs=env_cfg.num_envs, tier=env_cfg.tier, size=env_cfg.size,
                            pool_size=env_cfg.pool_size, reward_scale=reward_scale, forecast_rule=forecast_rule,
                            hindsight=bool(forecast_rule) and env_cfg.forecast_hindsight,
                            forecast_features=tuple(env_cfg.forecast_features),
                            forecast_futures=env_cfg.forecast_futures, critic_hindsight=env_cfg.critic_hindsight,
                            **play_kwargs(env_cfg))


def held_out(env_cfg: DictConfig, seeds: DictConfig, progress: bool = False) -> list[Instance]:
    """The pool instances of ``seeds`` (above the training seeds: :func:`check_config`)."""
    pool = tier_pool(env_cfg.tier, env_cfg.size)
    span = range(seeds.start, seeds.start + seeds.count)
    pool.prepare(span, progress=progress)
    return [pool.instance(s) for s in span]


def check_disjoint(validation: DictConfig, test: DictConfig) -> None:
    """Model selection must not see the test instances."""
    if validation.start < test.start + test.count and test.start < validation.start + validation.count:
        raise ValueError(f"train.validation_seeds {validation.start}..{validation.start + validation.count - 1} "
                         f"overlap train.eval_seeds {test.start}..{test.start + test.count - 1}")


# ------------------------------------------------------------------------------------- evaluation
def evaluate(agent: PPOAgent, env_cfg: DictConfig, instances: list[Instance], progress: bool = False) -> np.ndarray:
    """The objective of ``agent``'s (validated) schedule on each instance (``env.num_envs`` episodes at a time)."""
    key = OBJECTIVE_METRICS[env_cfg.objective]
    values = []
    for inst, schedule in zip(instances, agent.play(instances, env_cfg.objective, env_cfg.num_envs, progress)):
        report = validate_schedule(schedule)
        if not report.ok:
            raise RuntimeError(f"{agent.name} produced an invalid schedule on {inst.name}: {report}")
        values.append(schedule.metrics[key])
    return np.array(values)


def compare_with_rules(ppo: np.ndarray, env_cfg: DictConfig, instances: list[Instance],
                       validation: Sequence[Instance] = (), progress: bool = False) -> dict[str, Any]:
    """PPO against every deterministic rule on ``instances``: means, and PPO minus the best rule with a 95 % CI.

    The best rule is chosen on ``instances`` themselves (post hoc, the bar that favours the rules) and,
    when ``validation`` instances are given, also on those (the rule one would deploy without seeing
    the test instances): ``best_rule`` / ``margin`` and ``validation_rule`` / ``validation_margin``.
    """
    key = OBJECTIVE_METRICS[env_cfg.objective]
    rules = rule_objectives(instances, env_cfg.objective, progress=progress)
    means = {r: float(v.mean()) for r, v in rules.items()}
    best = min(means, key=means.get)
    result = {"metric": key, "instances": [inst.name for inst in instances], "ppo_values": ppo.tolist(),
              "ppo_mean": float(ppo.mean()), "best_rule": best, "best_rule_mean": means[best],
              **_margin_fields(paired_margin(ppo, rules[best]), ""),
              "rule_means": dict(sorted(means.items(), key=lambda kv: kv[1]))}
    if validation:
        chosen = rule_objectives(validation, env_cfg.objective, progress=progress)
        rule = min(chosen, key=lambda r: float(chosen[r].mean()))
        result.update({"validation_rule": rule, "validation_rule_mean": means[rule],
                       **_margin_fields(paired_margin(ppo, rules[rule]), "validation_")})
    return result


def _margin_fields(margin: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``paired_margin``'s fields under the report's keys (``margin``, ``margin_ci95``, ``relative_margin``,
    ``ppo_wins``, ``ties``), each after ``prefix``."""
    return {f"{prefix}margin": margin["margin"], f"{prefix}margin_ci95": margin["ci95"],
            f"{prefix}relative_margin": margin["relative"], f"{prefix}ppo_wins": margin["wins"],
            f"{prefix}ties": margin["ties"]}


def report_markdown(result: dict[str, Any], env_cfg: DictConfig, meta: dict[str, Any]) -> str:
    """The final evaluation as markdown: PPO and the five best rules, then the margins with their CIs."""
    rows = [f"| **ppo** | {result['ppo_mean']:.3f} |"]
    rows += [f"| {r} | {m:.3f} |" for r, m in list(result["rule_means"].items())[:5]]
    margins = [_margin_line(result, "", f"PPO - best rule on these instances ({result['best_rule']})")]
    if "validation_rule" in result:
        margins.append(_margin_line(result, "validation_", "PPO - best rule on the validation seeds "
                                    f"({result['validation_rule']}, {result['validation_rule_mean']:.3f} here)"))
    return "\n".join([
        f"# PPO evaluation: {env_cfg.tier} tier, size {env_cfg.size}",
        "",
        f"{len(result['instances'])} held-out pool instances ({result['instances'][0]} ..), mean "
        f"`{result['metric']}`; {meta['timesteps']} timesteps, trained in {meta['wall_s']:.0f} s "
        f"(PPO {meta['ppo_steps_per_s']:.0f} steps/s).",
        selection_line(meta),
        "",
        "| agent | mean |",
        "|---|---|",
        *rows,
        "",
        *margins,
        "",
    ])


def _margin_line(result: dict[str, Any], prefix: str, label: str) -> str:
    low, high = result[f"{prefix}margin_ci95"]
    return (f"- {label}: **{result[f'{prefix}margin']:.3f}**, paired bootstrap 95 % CI [{low:.3f}, {high:.3f}]; "
            f"PPO better on {result[f'{prefix}ppo_wins']}, tied on {result[f'{prefix}ties']} instances.")


def selection_line(meta: dict[str, Any]) -> str:
    """Which policy was tested: the best one on the validation seeds, or the last one."""
    if meta["selected"] is None:
        return "The policy tested is the last one trained (no model selection on the validation seeds)."
    return (f"The policy tested is the one with the best validation mean ({meta['selected']['validation_mean']:.3f}"
            f" at {meta['selected']['timesteps']} timesteps; the last one is `last.zip`).")


def save_model(model: MaskablePPO, path: Path) -> None:
    """``model.save(path)`` through a temporary file beside it and a rename."""
    with atomic_path(path) as tmp:
        model.save(tmp)


def copy_file(source: Path, path: Path) -> None:
    """Copy ``source`` to ``path`` through a temporary file beside it and a rename."""
    with atomic_path(path) as tmp:
        shutil.copyfile(source, tmp)


class ValidationEval(BaseCallback):
    """Every ``every`` timesteps, evaluate the deterministic policy on the validation instances.

    Logs ``eval/mean_<metric>`` and, with ``keep_best``, saves the best policy so far to ``path``
    (the first evaluation, right after the warm start, included). ``setting``: what the means are
    measured on (:func:`validation_setting`), recorded with the best one (:func:`save_checkpoint`).
    """

    def __init__(self, env_cfg: DictConfig, instances: list[Instance], every: int, path: Path | None,
                 setting: dict[str, Any]) -> None:
        super().__init__()
        self.env_cfg, self.instances, self.every, self.path, self.setting = env_cfg, instances, every, path, setting
        self.next_at = every
        self.best: tuple[float, int] | None = None  # (validation mean, timesteps)

    def _on_training_start(self) -> None:
        # a fresh run validates the warm start here, at 0 timesteps (at the first step it was labelled num_envs
        # timesteps, as if trained on them); then every multiple of ``every``: a run resumed between two validations
        # validates where the uninterrupted run does, not ``every`` after the resume point; one resumed at a multiple
        # T not at T again: the uninterrupted run validated there (the last step of the rollout before the
        # checkpoint, in its record)
        self.next_at = (self.num_timesteps // self.every + 1) * self.every
        if not self.num_timesteps:
            self._validate()

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_at:
            self.next_at += self.every
            self._validate()
        return True

    def _validate(self) -> None:
        mean = float(evaluate(PPOAgent(self.model), self.env_cfg, self.instances).mean())
        self.logger.record(f"eval/mean_{OBJECTIVE_METRICS[self.env_cfg.objective]}", mean)
        if self.path is not None and (self.best is None or mean < self.best[0]):
            save_model(self.model, self.path)  # first: a record never names a policy not yet written
            self.best = (mean, self.num_timesteps)


def save_checkpoint(model: MaskablePPO, path: Path, validator: ValidationEval) -> None:
    """Save ``model`` to ``path`` with ``<stem>.json`` beside it: the best validation result so far, its
    timesteps and the policy that scored it (a copy ``best_<timesteps>_steps.zip`` where ``best.zip`` is not
    beside ``path``), for :func:`read_best`. The record goes first: no checkpoint without its record."""
    best = None
    if validator.best is not None and validator.path is not None:
        mean, steps = validator.best
        policy = validator.path
        if policy.parent.resolve() != path.parent.resolve():  # best.zip moves on; this best must stay
            policy = path.parent / f"best_{steps}_steps.zip"
            if not policy.is_file():
                copy_file(validator.path, policy)
        best = {"validation_mean": mean, "timesteps": steps, "policy": policy.name}
    record = {"best": best, "validation": validator.setting}
    write_text_atomic(path.with_suffix(".json"), json.dumps(record, indent=2) + "\n")
    save_model(model, path)


class Checkpoints(BaseCallback):
    """Once the timestep count reaches each multiple of ``every``, ``<directory>/ppo_<timesteps>_steps.zip`` saved by
    :func:`save_checkpoint`: the multiples, not the steps since the start, so that a run resumed between two
    checkpoints saves the ones the uninterrupted run saves. Saved after the update that follows the rollout (at the
    next rollout's start, or the training's end): the policy has learnt from every step it counts, so a run resumed
    from it trains as the uninterrupted one (saved at the rollout's last step, it lacked that rollout's update)."""

    def __init__(self, every: int, directory: Path, validator: ValidationEval) -> None:
        super().__init__()
        self.every, self.directory, self.validator = every, directory, validator
        self.next_at = every

    def _on_training_start(self) -> None:
        self.next_at = (self.num_timesteps // self.every + 1) * self.every  # the resumed checkpoint is saved already

    def _save_due(self) -> None:
        if self.num_timesteps >= self.next_at:
            self.next_at = (self.num_timesteps // self.every + 1) * self.every
            save_checkpoint(self.model, self.directory / f"ppo_{self.num_timesteps}_steps.zip", self.validator)

    def _on_rollout_start(self) -> None:
        self._save_due()

    def _on_training_end(self) -> None:
        self._save_due()

    def _on_step(self) -> bool:
        return True


class TrainedSteps(BaseCallback):
    """``timesteps``: the count at the start of the current rollout, the steps the policy was trained on. SB3 trains
    on a rollout only once it is complete, and a stop inside one discards it: its steps were never learnt from (a stop
    in the update that follows keeps the partly updated policy under the same count)."""

    def __init__(self, timesteps: int) -> None:
        super().__init__()
        self.timesteps = timesteps

    def _on_rollout_start(self) -> None:
        self.timesteps = self.model.num_timesteps

    def _on_step(self) -> bool:
        return True


# ------------------------------------------------------------------------------ imitation warm start
def best_rules(env_cfg: DictConfig, episodes: int, count: int = 1) -> list[str]:
    """``count`` complementary rules (:func:`complementary_rules`) on the training pool seeds 0 .. episodes - 1;
    the first is the rule with the lowest mean objective there."""
    pool = tier_pool(env_cfg.tier, env_cfg.size)
    instances = [pool.instance(s) for s in range(min(episodes, env_cfg.pool_size))]
    return complementary_rules(rule_objectives(instances, env_cfg.objective), count)


Demonstrations = tuple[dict[str, th.Tensor], th.Tensor, th.Tensor]


def demonstrations(env_cfg: DictConfig, rule: str, episodes: int, gamma: float, scale: float,
                   forecast_rule: str | list[str] | None, progress: bool = False) -> Demonstrations:
    """Observations, actions and discounted returns-to-go of ``rule`` on the training pool seeds 0 .. episodes - 1."""
    pool = tier_pool(env_cfg.tier, env_cfg.size)
    observations: list[dict[str, np.ndarray]] = []
    actions: list[int] = []
    returns: list[float] = []
    agent = RuleAgent(rule)
    for seed in tqdm(range(min(episodes, env_cfg.pool_size)), desc=f"demonstrations {rule}", unit="episode",
                     disable=not progress):
        env = gym.make(ENV_ID, instance=pool.instance(seed), reward_scale=scale, **play_kwargs(env_cfg))
        if env_cfg.forecast_features:
            env = ForecastFeatures(env, tuple(env_cfg.forecast_features), env_cfg.forecast_futures,
                                   (env_cfg.tier, env_cfg.size))
        if env_cfg.critic_hindsight:
            env = ForecastFeatures(env, tuple(env_cfg.forecast_features), hindsight=True)
        if forecast_rule:
            env = ForecastReward(env, forecast_rule, env_cfg.forecast_hindsight)
        observation, info = env.reset(seed=seed)
        agent.reset(env)
        rewards, done = [], False
        while not done:
            action = agent.act(observation, info)
            observations.append({key: value.copy() for key, value in observation.items()})
            actions.append(action)
            observation, reward, done, _, info = env.step(action)
            rewards.append(float(reward))
        to_go, backwards = 0.0, []
        for reward in reversed(rewards):
            to_go = reward + gamma * to_go
            backwards.append(to_go)
        returns.extend(reversed(backwards))
    stacked = {key: th.as_tensor(np.stack([o[key] for o in observations]), dtype=th.float32) for key in observations[0]}
    return stacked, th.as_tensor(actions), th.as_tensor(returns, dtype=th.float32)


def pretrain(model: MaskablePPO, data: Demonstrations,
             pc: DictConfig, progress: bool = False) -> dict[str, float]:
    """Behaviour cloning (cross-entropy of the masked logits) plus value regression on the returns-to-go."""
    observations, actions, returns = data
    policy = model.policy
    optimizer = th.optim.Adam(policy.parameters(), lr=pc.learning_rate)
    stats: dict[str, float] = {}
    for _ in tqdm(range(pc.epochs), desc="imitation", unit="epoch", disable=not progress):
        totals = np.zeros(2)
        for batch in th.randperm(len(actions)).split(pc.batch_size):
            obs = {key: value[batch] for key, value in observations.items()}
            values, log_prob, _ = policy.evaluate_actions(obs, actions[batch], action_masks=obs["action_mask"] > 0.5)
            value_loss = th.nn.functional.mse_loss(values.flatten(), returns[batch])
            loss = -log_prob.mean() + model.vf_coef * value_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            totals += len(batch) * np.array([-log_prob.mean().item(), value_loss.item()])
        stats = dict(zip(("cross_entropy", "value_mse"), (totals / len(actions)).tolist()))
    return stats


# ------------------------------------------------------------------------------------------ train
def train(cfg: DictConfig, overrides: Sequence[str] | None = None) -> Path:
    """Train (or resume), save, evaluate; returns the path of the final model.

    ``overrides``: the command line's config overrides, for the resume command printed on Ctrl-C
    (:class:`TrainingInterrupted`, raised after ``interrupted.zip`` is saved).
    """
    began = time.perf_counter()
    tc, ec = cfg.train, cfg.env
    resume = check_config(cfg)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    th.set_num_threads(tc.torch_threads)

    # 1. envs: the training pool (built ahead, in parallel), the validation and the test instances
    if tc.progress_bar and (note := compile_note()):
        tqdm.write(note, file=sys.stderr)
    tier_pool(ec.tier, ec.size).prepare(range(ec.pool_size), progress=tc.progress_bar)
    scale = auto_reward_scale(ec)
    auto_rules = (best_rules(ec, tc.imitation.episodes, ec.forecast_auto_rules if ec.forecast_rule == AUTO else 1)
                  if AUTO in (ec.forecast_rule, tc.imitation.rule) else [])
    forecast_rule = ec.forecast_rule
    if forecast_rule == AUTO:
        forecast_rule = auto_rules[0] if len(auto_rules) == 1 else auto_rules
    elif OmegaConf.is_list(forecast_rule):  # several rules: the potential is the lowest of their forecasts
        forecast_rule = list(forecast_rule)
    venv = make_train_env(ec, scale, forecast_rule)
    validation = held_out(ec, tc.validation_seeds, tc.progress_bar)  # model selection and the deployable rule
    instances = held_out(ec, tc.eval_seeds, tc.progress_bar)

    # 2. the model: resumed from a checkpoint (its hyperparameters and timestep count), or new and
    #    warm-started by imitating a rule
    imitation = None
    if resume:
        model = MaskablePPO.load(resume.path, env=venv, device="cpu", tensorboard_log=str(out / "tb"))
        if model.policy.feature_scales is None:  # saved before policies recorded their units: they are the pool's
            model.policy.feature_scales = model.policy_kwargs["feature_scales"] = pool_scales(ec.size)
        model.set_random_seed((cfg.seed + model.num_timesteps) % 2**32)
    else:
        lr = LinearSchedule(tc.learning_rate, 0.0, 1.0) if tc.anneal_lr else tc.learning_rate
        model = MaskablePPO(SlotPolicy, venv, learning_rate=lr,
                            n_steps=tc.n_steps, batch_size=tc.batch_size, n_epochs=tc.n_epochs, gamma=tc.gamma,
                            gae_lambda=tc.gae_lambda, clip_range=tc.clip_range, ent_coef=tc.ent_coef,
                            vf_coef=tc.vf_coef, max_grad_norm=tc.max_grad_norm,
                            policy_kwargs={"hidden": tc.hidden, "forecast_rules": tuple(ec.forecast_features),
                                           "forecast_futures": ec.forecast_futures, "future_pool": (ec.tier, ec.size),
                                           "critic_hindsight": ec.critic_hindsight, "interaction": tc.interaction,
                                           "feature_scales": pool_scales(ec.size)},
                            tensorboard_log=str(out / "tb"), seed=cfg.seed, device="cpu")
        if tc.imitation.rule:
            ic = tc.imitation
            rule = auto_rules[0] if ic.rule == AUTO else ic.rule
            data = demonstrations(ec, rule, ic.episodes, tc.gamma, scale, forecast_rule, tc.progress_bar)
            imitation = {"rule": rule, "samples": len(data[1]), **pretrain(model, data, ic, tc.progress_bar)}
    start_steps = model.num_timesteps

    # 3. learn: checkpoints, validation (and the best policy so far), TensorBoard, progress bar
    validator = ValidationEval(ec, validation, tc.eval_every, out / "best.zip" if tc.keep_best else None,
                               validation_setting(cfg))
    if resume and resume.best:  # selection goes on from the best before the checkpoint, as without the break
        mean, steps, policy = resume.best
        if policy.resolve() != (out / "best.zip").resolve():  # the same file when resumed into its own run dir
            copy_file(policy, out / "best.zip")
        validator.best = (mean, steps)
    trained = TrainedSteps(start_steps)
    callbacks: list[BaseCallback] = [trained, Checkpoints(tc.checkpoint_every, out / "checkpoints", validator)]
    if tc.eval_every:
        callbacks.append(validator)
    rollout_size = model.n_steps * model.n_envs
    stop = start_steps + -(-(tc.total_timesteps - start_steps) // rollout_size) * rollout_size
    if stop != tc.total_timesteps:  # SB3 never stops inside a rollout
        tqdm.write(f"note: PPO collects whole rollouts of train.n_steps x env.num_envs = {rollout_size} timesteps: "
                   f"it stops at {stop}, not train.total_timesteps={tc.total_timesteps}", file=sys.stderr)
    learn_began = time.perf_counter()
    try:
        with sigterm_as_interrupt():  # a scheduler's or kill's SIGTERM saves interrupted.zip as Ctrl-C does
            model.learn(tc.total_timesteps - start_steps, callback=callbacks, tb_log_name="ppo",
                        reset_num_timesteps=False, progress_bar=tc.progress_bar)
    except KeyboardInterrupt:  # keep what was learnt since the last checkpoint
        path = (out / "interrupted.zip").resolve()
        # the unfinished rollout's steps are collected again on resume: counted here, the resumed run would train
        # on fewer steps than the uninterrupted one and stop at another total
        model.num_timesteps = trained.timesteps
        with signals_deferred():  # a second Ctrl-C must not cut the save short (and lose those steps)
            venv.close()
            save_checkpoint(model, path, validator)
        raise TrainingInterrupted(path, trained.timesteps, resume_command(path, overrides)) from None
    learn_wall = time.perf_counter() - learn_began
    trained_steps = model.num_timesteps - start_steps
    save_checkpoint(model, out / "last.zip", validator)
    chosen = out / ("best.zip" if validator.best is not None else "last.zip")  # the best validation mean, else last
    if validator.best is not None:
        model = MaskablePPO.load(chosen, device="cpu")
    wall = time.perf_counter() - began
    venv.close()

    # 4. test on the held-out eval seeds against every rule; save config, seed and measurements with the model
    try:
        with sigterm_as_interrupt():
            ppo = evaluate(PPOAgent(model), ec, instances, progress=tc.progress_bar)
            result = compare_with_rules(ppo, ec, instances, validation, progress=tc.progress_bar)
    except KeyboardInterrupt:  # the training is done and saved: say so, and how to test the policy without it
        raise EvaluationInterrupted(out.resolve(), chosen.name, int(start_steps + trained_steps), ec,
                                    tc.eval_seeds) from None
    selected = {"validation_mean": validator.best[0], "timesteps": validator.best[1]} if validator.best else None
    meta = {"seed": int(cfg.seed), "reward_scale": scale, "forecast_rule": forecast_rule,
            "timesteps": int(start_steps + trained_steps), "selected": selected,
            "resumed_from": tc.resume, "imitation": imitation, "wall_s": round(wall, 1),
            "ppo_steps_per_s": round(trained_steps / learn_wall, 1),
            "torch_threads": int(tc.torch_threads),
            "versions": {"torch": str(th.__version__), "sb3_contrib": sb3_contrib.__version__}}
    # written together after the evaluation: an interrupted one leaves a reused run dir's earlier files as they were
    record = {"config": OmegaConf.to_container(cfg, resolve=True), **meta, "evaluation": result}
    copy_file(chosen, out / "model.zip")
    write_text_atomic(out / "report.md", report_markdown(result, ec, meta))
    write_text_atomic(out / "model.yaml", yaml.safe_dump(record, sort_keys=False))
    return out / "model.zip"


def next_steps(model: Path, env_cfg: DictConfig, overrides: Sequence[str]) -> str:
    """What to do with a finished run's ``model``, printed after it: rank it beside the rules, or train it on (the
    run's ``overrides``, a sweep job's own: "this command" of a sweep would have resumed every job from this one's
    model)."""
    board = [f"ppo={model}", f"tiers=[{env_cfg.tier}]", f"sizes=[{env_cfg.size}]", f"objective={env_cfg.objective}",
             "agent=[rules]", f"out={model.parent / 'leaderboard'}"]
    return (f"next: python -m scripts.leaderboard {' '.join(map(shlex.quote, board))}\n"
            f"  or train on: {resume_command(model.parent / 'last.zip', overrides)}, with a larger "
            "train.total_timesteps")


def check_job(cfg: DictConfig) -> Path:
    """:func:`check_config`, for a job of a ``-m`` sweep checked before the first job runs; the folder the job writes
    into (``out``), which no other job of the sweep may share."""
    check_config(cfg)
    return output_folder("out", cfg.out)


@checked_main("train/ppo", check_job)
def main(cfg: DictConfig) -> None:
    """Hydra entry point; on Ctrl-C or SIGTERM during training prints the resume command (during the final
    evaluation, where the trained policy is) and exits with status 130; exits with status 2 on a bad setting."""
    from hydra.core.hydra_config import HydraConfig

    # outside learning and the final evaluation (which say what they saved): setup, the warm start, the saves
    kept = (f"outside the training loop; what was written is kept (pool instances in the cache, checkpoints in "
            f"{cfg.out}/checkpoints). Rerun the same command to start again, or add train.resume=<checkpoint>")
    with setting_errors_exit(), interrupted_exit(kept):
        check_added_keys(cfg)
        overrides = list(HydraConfig.get().overrides.task)
        try:
            path = train(cfg, overrides)
        except KeyboardInterrupt as exc:  # in a sweep, also how to run the jobs that the stop left out
            later = later_sweep_jobs("scripts.train")
            if later is None:
                raise
            raise KeyboardInterrupt(f"{exc or f'interrupted: {kept}'}\n{later}") from None
    print((path.parent / "report.md").read_text(encoding="utf-8"))
    print(f"wrote {path}")
    print(next_steps(path, cfg.env, overrides))


if __name__ == "__main__":  # run the importable module's main: launcher workers unpickle its functions by name
    from scripts.train import main as entry

    entry()
