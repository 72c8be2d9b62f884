"""Evaluate agents on held-out tier-pool instances: one row per episode in the results store.

``python -m scripts.evaluate [agent=[rules,lookahead]] [tiers=[easy,hard]] [sizes=[small]]
[seeds.count=200] [objective=weighted_tardiness] [ppo=shipped|null|path.zip] [store=PATH] [workers=2]``
(Hydra, ``conf/evaluate.yaml``; agents in ``conf/agent/``). Sweeps: ``-m tiers=easy,medium
launcher=joblib`` (or ``launcher=ray``, ``launcher=slurm``; docs/leaderboard.md).

For every agent x tier x size x seed (pool seeds ``seeds.start ..``, held out from training, which
draws seeds below 10_000), the agent plays the instance ``tier_pool(tier, size).instance(seed)``
through ``DynaSched/DFJSP-v0`` (:func:`dynasched_gym.agents.run_episode`); the clairvoyant CP-SAT
reference (``cpsat-oracle``, when :mod:`dynasched_gym.oracle` imports) solves it instead. Every
schedule is validated: an invalid one, or an episode that raises, becomes a failed row (status
``invalid`` / ``error``, no metric values) and is reported on stderr, never a silent number.

Rows (fields: docs/leaderboard.md) go to :class:`~dynasched_gym.results.ResultStore`, keyed by
(agent config hash, tier, size, seed, objective): rows already in the store are reused, so an
interrupted run resumes where it stopped, and concurrent runs (launcher workers) never store a key twice.

Failures a rerun may not repeat are kept out of the store: an episode in which requests to the model
failed after their retries (an LLM agent's ``usage["errors"]``: decisions that fell back to the rule, lost
reflection rounds or best-of-n samples) is a failed row with ``retry: true`` that is reported but not
stored, so the next run plays it again; an exception that
sets ``stops_run`` (the LLM agent's ``LLMUnavailableError``: the endpoint failed several decisions in a
row; an ``LLMConfigError`` for a wrong key or model) stops the whole evaluation with
:class:`EvaluationStopped`. Ctrl-C stops it too (also during a CP-SAT solve); the episode it
interrupted is not stored.
"""

from __future__ import annotations

import difflib
import glob
import hashlib
import importlib
import inspect
import multiprocessing
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

import dynasched_gym
from dynasched_gym.checks import as_list, check_bool, check_choice, check_choices, check_integer
from dynasched_gym.metrics import METRIC_KEYS, OBJECTIVE_METRICS
from dynasched_gym.results import (
    BEHAVIOUR_VERSION,
    KEY_FIELDS,
    ROW_FORMAT,
    Key,
    ResultStore,
    canonical_json,
    config_hash,
    row_key,
)
from dynasched_gym.schedule import Schedule
from scripts.interrupts import WorkerPool, interrupted_exit, stop_workers
from scripts.overrides import (
    SettingError,
    check_added_keys,
    checked_main,
    mapping_setting,
    output_file,
    setting_errors_exit,
    settings_checked,
    single_run_overrides,
)

#: ``checkpoint`` value of the PPO agent meaning: the shipped checkpoint of each row's tier and size
#: (``shipped:full``: the one trained on full observations, where shipped).
SHIPPED = "shipped"
#: ``env.max_candidates`` value meaning: offer every startable pair (jobs x machines slots).
ALL = "all"
#: Modules whose absence skips an agent with a note (an optional extra, or the oracle module) instead of failing.
OPTIONAL = ("dynasched_gym.oracle", "ortools", "torch", "stable_baselines3", "sb3_contrib", "openai")
#: Keys of an agent entry (``conf/agent/<group>.yaml``): ``names`` (agents of ``dynasched_gym.agents.make``) or
#: ``_target_`` (``module.Class``, a subclass of ``dynasched_gym.agents.Agent``), its ``kwargs``, ``env`` settings of
#: ``DynaSched/DFJSP-v0``, and an optional board ``label``.
ENTRY_KEYS = ("names", "_target_", "kwargs", "env", "label")
#: What an interrupt outside the episodes says (they say how many were stored).
RESUME_NOTE = ("the pool instances generated and the episodes stored so far are kept; rerun the same command to "
               "resume")
#: Config mappings whose keys the script checks itself (:func:`agent_specs`), so ``+`` may add to them.
FREE_FORM = ("agent",)


class EvaluationStopped(SystemExit):
    """An agent raised an error that stops the run (it sets ``stops_run``, e.g. an unreachable LLM
    endpoint); the message says why and how to resume. A ``SystemExit``: the scripts exit with status 1 and
    the message, without a traceback."""


# ------------------------------------------------------------------------------------------- players
class AgentPlayer:
    """Plays a :class:`~dynasched_gym.agents.Agent` through ``DynaSched/DFJSP-v0`` with ``env`` settings: an agent
    of :func:`dynasched_gym.agents.make` by ``name``, or one of the user's classes by ``target`` (``module.Class``,
    built anew with ``kwargs`` for every episode, so that no state of one episode reaches another)."""

    def __init__(self, name: str | None, kwargs: Mapping[str, Any], env: Mapping[str, Any],
                 target: str | None = None) -> None:
        from dynasched_gym.agents import Agent, make

        self.target, self.kwargs = target, dict(kwargs)
        if target is None:
            self.build: Callable[[], Any] = lambda: make(str(name), **self.kwargs)
        else:
            cls = agent_class(target)
            self.build = lambda: cls(**self.kwargs)
            self.source_sha256 = _source_sha256(cls)
        self.agent = self.build()
        self.name = self.agent.name
        if target is not None and self.name == Agent.name:  # the default name: the class names it on the board
            self.name = target.rpartition(".")[2]
        self.env = {**_policy_env(self.agent), **env}  # a trained policy's own settings unless overridden
        # an oracle env's observations hold future events: any agent playing in it is a reference, never ranked
        self.clairvoyant = self.agent.clairvoyant or self.env.get("observability") == "oracle"
        self._warm = False

    def check_env(self) -> None:
        """Make the env of these settings once (on mk01), so that a bad setting fails before any episode."""
        import gymnasium as gym

        gym.make("DynaSched/DFJSP-v0", instance="mk01", **self._env_for_checks()).close()

    def check_pool(self, tier: str, size: str) -> None:
        """A trained policy meets the env of the pool's instances, whose machines shape its observations, before
        any episode (a policy of another size failed every episode, each a final error row)."""
        check = getattr(self.agent, "check_pool", None)
        if check is not None:
            check(tier, size, **self._env_for_checks())

    def _env_for_checks(self) -> dict[str, Any]:
        """The env settings, ``max_candidates="all"`` (each instance's pair count) as 1 for a check."""
        return {**self.env, **({"max_candidates": 1} if self.env.get("max_candidates") == ALL else {})}

    def config(self) -> dict[str, Any]:
        config = dict(self.agent.config())
        if config.get("sha256"):  # a checkpoint is identified by its content, not its path
            config.pop("checkpoint", None)
        if self.target is None:
            return {"agent": config, "env": self.env}
        # a user's class: its config() may not cover its arguments, and its code may change under the same name
        return {"agent": config, "target": self.target, "kwargs": self.kwargs, "source_sha256": self.source_sha256,
                "env": self.env}

    def play(self, instance: dynasched_gym.Instance, objective: str, seed: int, pool: tuple[str, str]
             ) -> tuple[Schedule, dict[str, Any]]:
        import gymnasium as gym

        from dynasched_gym.agents import run_episode

        # the instance's pool: the tier and size its sampled futures come from (a lookahead with futures=N)
        env_kwargs = {"tier": pool[0], "size": pool[1], **self.env}
        if env_kwargs.get("max_candidates") == ALL:
            env_kwargs["max_candidates"] = instance.num_jobs * instance.num_machines
        # an invalid action fails the episode: the env's default would play slot 0 instead and count it
        env_kwargs.update(instance=instance, objective=objective, invalid_action="raise")
        if not self._warm and _usage(self.agent) is None:  # compile the kernels outside the timed episode
            run_episode(self.agent, gym.make("DynaSched/DFJSP-v0", **env_kwargs), seed=seed)
            self._warm = True
        if self.target is not None:
            self.agent = self.build()
        before, began = _usage(self.agent), time.perf_counter()
        env = gym.make("DynaSched/DFJSP-v0", **env_kwargs)
        schedule = run_episode(self.agent, env, seed=seed)
        wall, after = time.perf_counter() - began, _usage(self.agent)
        tokens = None if after is None else {k: v - (before or {}).get(k, 0) for k, v in after.items()}
        usage = getattr(self.agent, "episode_usage", None)  # LLM agents' counters of this episode (docs/llm.md)
        return schedule, {"wall_time": wall, "tokens": tokens, "usage": usage}


class OraclePlayer:
    """The clairvoyant CP-SAT reference: ``dynasched_gym.oracle.solve_clairvoyant`` (sees every future event)."""

    name = "cpsat-oracle"
    clairvoyant = True

    def __init__(self, name: str, kwargs: Mapping[str, Any], env: Mapping[str, Any]) -> None:
        oracle = importlib.import_module("dynasched_gym.oracle")
        self.solve = oracle.solve_clairvoyant
        self.kwargs = dict(kwargs)
        # checked now, before any episode: a bad option failed every episode, each an error row stored for good
        unknown = sorted(set(self.kwargs) - set(oracle.SOLVER_OPTIONS), key=str)
        if unknown:
            raise TypeError(f"solve_clairvoyant takes no option {unknown[0]!r} here; its options are "
                            f"{', '.join(oracle.SOLVER_OPTIONS)} (the evaluation gives the instance and the objective)")
        oracle.check_solver_options(**self.kwargs)

    def config(self) -> dict[str, Any]:
        return {"agent": {"name": self.name, **self.kwargs}}

    def play(self, instance: dynasched_gym.Instance, objective: str, seed: int, pool: tuple[str, str]
             ) -> tuple[Schedule, dict[str, Any]]:
        began = time.perf_counter()
        result = self.solve(instance, objective=objective, **self.kwargs)  # Ctrl-C stops it: nothing stored
        return result.schedule, {"wall_time": time.perf_counter() - began, "decisions": None, "oracle": {
            "status": str(result.status), "objective": result.objective, "bound": result.bound,
            "seconds": result.seconds}}


def _usage(agent: Any) -> dict[str, int] | None:
    """Cumulative token counts of an agent that reports them (``token_usage()``: e.g. prompt, completion, total)."""
    usage = getattr(agent, "token_usage", None)
    usage = usage() if callable(usage) else usage
    return None if usage is None else {k: int(v) for k, v in dict(usage).items()}


def agent_class(target: str) -> type:
    """The :class:`~dynasched_gym.agents.Agent` subclass ``target`` (``package.module.Class``); a ValueError says why
    there is none (no such module or class, or not an Agent)."""
    from dynasched_gym.agents import Agent

    module_name, _, class_name = str(target).rpartition(".")
    if not module_name:
        raise ValueError(f"_target_={target!r}: give the class as module.Class")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except ImportError as exc:
        raise ValueError(f"_target_={target!r}: cannot import {module_name!r} ({exc}); is its directory on "
                         "PYTHONPATH?") from None
    except AttributeError:
        raise ValueError(f"_target_={target!r}: module {module_name!r} has no {class_name!r}") from None
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise ValueError(f"_target_={target!r} is no subclass of dynasched_gym.agents.Agent")
    return cls


def _source_sha256(cls: type) -> str:
    """SHA-256 of the source file of ``cls``'s module (a changed agent is another configuration)."""
    path = inspect.getsourcefile(cls)
    if path is None:
        raise ValueError(f"{cls.__module__}.{cls.__qualname__}: no source file to identify the agent's code by")
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _policy_env(agent: Any) -> dict[str, Any]:
    """Env settings a trained policy needs (:meth:`PPOAgent.env_settings`), ``{}`` for other agents."""
    settings = getattr(agent, "env_settings", None)
    return settings() if settings is not None else {}


Player = AgentPlayer | OraclePlayer


@lru_cache(maxsize=64)
def _player(spec_json: str) -> Player:
    """The player of a resolved spec (cached per process: PPO models load once)."""
    import json

    spec = json.loads(spec_json)
    if spec["name"] == OraclePlayer.name:
        return OraclePlayer(spec["name"], spec["kwargs"], spec["env"])
    return AgentPlayer(spec["name"], spec["kwargs"], spec["env"], spec.get("target"))


@lru_cache(maxsize=8)
def _instance(tier: str, size: str, seed: int) -> tuple[dynasched_gym.Instance, float, str]:
    """A pool instance with its SSI score and the SHA-256 of its native JSON."""
    from dynasched_gym.generation import ssi, tier_pool

    inst = tier_pool(tier, size).instance(seed)
    return inst, float(ssi(inst).score), _digest(inst)


def _digest(inst: dynasched_gym.Instance) -> str:
    return hashlib.sha256(inst.to_json().encode("utf-8")).hexdigest()


def check_reused(rows: Sequence[Mapping[str, Any]], validate: bool, store: Path) -> None:
    """Refuse to reuse stored rows that do not hold for this run: played on another instance than the pool now
    gives for their (tier, size, seed) (the generator changed), or stored unvalidated when this run validates.
    An append-only store cannot replace them; the :class:`~scripts.overrides.SettingError` (a usage error: one
    line, status 2) says which and what to do."""
    from dynasched_gym.generation import tier_pool

    pools: dict[tuple[str, str], Any] = {}
    digests: dict[tuple[str, str, int], str] = {}
    stale = []
    for row in rows:
        where = (row["tier"], row["size"], row["seed"])
        if row.get("instance_sha256") is not None:
            if where not in digests:
                if where[:2] not in pools:
                    pools[where[:2]] = tier_pool(*where[:2])
                digests[where] = _digest(pools[where[:2]].instance(where[2]))
            if digests[where] != row["instance_sha256"]:
                stale.append(f"{row['agent']} on {'/'.join(map(str, where))} played another instance than the "
                             "pool gives now")
        if validate and row.get("validated") is False:
            stale.append(f"{row['agent']} on {'/'.join(map(str, where))} was stored with validate=false")
    if stale:
        raise SettingError(f"{store}: {len(stale)} stored row(s) this run would reuse do not hold for it; first: "
                           f"{stale[0]}. Use another store (store=...), or remove those rows from this one")


# ------------------------------------------------------------------------------------------- plan
@dataclass(frozen=True)
class Entrant:
    """One agent as configured for one (tier, size): its resolved spec, label and identity."""

    spec: str  # canonical JSON of {"name", "kwargs", "env"} (checkpoint paths resolved)
    agent: str
    agent_hash: str
    clairvoyant: bool
    config: dict[str, Any] = field(compare=False, hash=False)


@dataclass
class Plan:
    """Every episode a configuration asks for, and the entrants it could not build (with why)."""

    episodes: list[tuple[Entrant, str, str, int]]  # (entrant, tier, size, seed)
    skipped: list[str]
    objective: str

    def key(self, entrant: Entrant, tier: str, size: str, seed: int) -> Key:
        return row_key({"agent_hash": entrant.agent_hash, "tier": tier, "size": size, "seed": seed,
                        "objective": self.objective})

    def keys(self) -> set[Key]:
        return {self.key(*episode) for episode in self.episodes}

    def labelled(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rows of this plan's episodes, each under this run's name of its agent (a row may have been stored
        under another label of the same configuration) and flagged clairvoyant as it is now (a row of an agent in an
        oracle env stored before 2026-12-05 said false)."""
        entrants = {self.key(*episode): episode[0] for episode in self.episodes}
        return [{**r, "agent": entrants[row_key(r)].agent, "clairvoyant": entrants[row_key(r)].clairvoyant}
                for r in rows if row_key(r) in entrants]

    def missing(self, rows: Iterable[Mapping[str, Any]]) -> list[tuple[Entrant, str, str, int]]:
        """This plan's episodes that none of ``rows`` played."""
        played = {row_key(r) for r in rows}
        return [episode for episode in self.episodes if self.key(*episode) not in played]


def _optional_missing(exc: ImportError) -> bool:
    """True when ``exc`` says an optional package (:data:`OPTIONAL`) is not installed."""
    name = getattr(exc, "name", None) or ""
    return isinstance(exc, ModuleNotFoundError) and any(name == m or name.startswith(m + ".") for m in OPTIONAL)


def agent_specs(cfg: DictConfig) -> list[dict[str, Any]]:
    """The configured agents as ``{"name", "kwargs", "env", "label", "where", "key", "env_key"}`` dicts, with
    ``"target"`` for a ``_target_`` entry (``cfg.agent`` entries, :data:`ENTRY_KEYS`, + ``cfg.ppo``). For error
    messages, the config keys of the agent (``where``), its checkpoint (``key``) and its env settings
    (``env_key``): ``agent.<group>...``, unless the group names its own (a script that builds the groups from
    other keys, as ``scripts.observability``)."""
    specs = []
    groups = OmegaConf.to_container(cfg.agent, resolve=True) if cfg.get("agent") else {}
    for group_name, group in groups.items():
        if not isinstance(group, dict):
            raise ValueError(f"agent.{group_name}: an agent entry is a mapping ({', '.join(ENTRY_KEYS)}), got "
                             f"{group!r}")
        where = group.get("where", f"agent.{group_name}")
        env_key = group.get("env_key", f"{where}.env")
        common = {"kwargs": dict(group.get("kwargs") or {}), "env": _entry_env(group, where, env_key),
                  "label": group.get("label"), "where": where, "key": group.get("key", f"{where}.kwargs.checkpoint"),
                  "env_key": env_key}
        if "_target_" in group:
            specs.append({"name": None, "target": str(group["_target_"]), **common})
        else:
            specs.extend({"name": name, **common} for name in as_list(group["names"]))
    # also beside an agent entry of PPO: the top-level ppo was dropped then, without a word (:func:`plan` evaluates the
    # same configuration once, with a note)
    if cfg.get("ppo"):
        specs.append({"name": "ppo", "kwargs": {"checkpoint": str(cfg.ppo)}, "env": {}, "label": None, "where": "ppo",
                      "key": "ppo", "env_key": "ppo"})
    return specs


def _entry_env(group: Any, where: str, env_key: str) -> dict[str, Any]:
    """The env settings (config key ``env_key``) of the agent entry ``group`` (config key ``where``), after checking
    the entry's keys: a misspelt key, or an env setting the evaluation makes itself, would be ignored or fail every
    episode."""
    unknown = sorted(set(group) - set(ENTRY_KEYS) - {"where", "key", "env_key"})  # the last: set by scripts
    if unknown:
        raise ValueError(f"{where}: no such key(s) {', '.join(unknown)}; an agent entry has {', '.join(ENTRY_KEYS)}")
    if ("names" in group) == ("_target_" in group):
        raise ValueError(f"{where}: give names (agents of dynasched_gym.agents.make) or _target_ (a module.Class of "
                         "yours), one of them")
    env = dict(group.get("env") or {})
    own = sorted(set(env) & {"instance", "objective", "invalid_action"})
    if own:
        raise ValueError(f"{env_key}: {', '.join(own)} set by the evaluation itself (each pool instance, the "
                         "run's objective, invalid actions fail the episode); remove them")
    return env


def is_shipped(checkpoint: Any) -> bool:
    """True for a checkpoint setting ``shipped`` / ``shipped:<observability>`` (resolved per tier and size)."""
    return str(checkpoint).partition(":")[0] == SHIPPED


def existing_checkpoint(path: Any, key: str) -> str:
    """An explicit checkpoint ``path`` made absolute (against Hydra's original working directory); a ValueError
    naming the config ``key`` and the path when there is no such file, nor one with ``.zip`` added (SB3's
    convention). A path with ``*``, ``?`` or ``[`` that names no file is a glob pattern, which must match exactly
    one file. Never skipped: only a missing *shipped* checkpoint is. A missing name close to ``shipped`` (``shiped``,
    ``Shipped:full``) is taken for a misspelling of it, and the error says so; a folder's lists the models in it."""
    from dynasched_gym.agents.ppo import checkpoint_file, models_in

    absolute = hydra.utils.to_absolute_path(str(path))
    found = checkpoint_file(absolute)
    if found is None and any(c in absolute for c in "*?["):
        matches = sorted(m for m in glob.glob(absolute) if Path(m).is_file())
        if len(matches) != 1:  # the first of several would pick one model silently
            listed = f"{len(matches)} files ({', '.join(matches[:3])}{', ...' if len(matches) > 3 else ''})"
            raise ValueError(f"{key}={path}: the pattern must match exactly one checkpoint file, it matches "
                             f"{listed if matches else 'none'} ({absolute})")
        absolute, found = matches[0], Path(matches[0])
    if found is None:
        head, colon, level = str(path).partition(":")
        misspelt = "/" not in head and difflib.get_close_matches(head, [SHIPPED])
        hint = f" (did you mean {SHIPPED}{colon}{level}?)" if misspelt else ""
        if Path(absolute).is_dir():  # a training run's folder: name its model
            models = models_in(Path(absolute))
            hint = (f": a folder; name a model .zip in it ({', '.join(models)}; scripts.train's tested policy is "
                    f"model.zip)" if models else ": a folder, with no model .zip in it")
        raise ValueError(f"{key}={path}: no such checkpoint file ({absolute}){hint}")
    return absolute


def tier_checkpoint(path: Any, tier: str, size: str) -> str:
    """An explicit checkpoint setting for one tier and size: ``{tier}`` and ``{size}`` replaced by them, so that
    one setting names a model per tier (those of a training sweep: ``outputs/train/multirun/<date>/*-{tier}-{size}/
    model.zip``)."""
    return str(path).replace("{tier}", tier).replace("{size}", size)


def _resolve(spec: Mapping[str, Any], tier: str, size: str) -> dict[str, Any]:
    """``spec`` for one (tier, size): a ``shipped`` PPO checkpoint becomes the tier's file (or FileNotFoundError,
    the agent is skipped); an explicit checkpoint path (:func:`tier_checkpoint`) must exist
    (:func:`existing_checkpoint`)."""
    kwargs = dict(spec["kwargs"])
    if is_shipped(kwargs.get("checkpoint")):
        from dynasched_gym.agents.ppo import shipped_checkpoint

        observability = str(kwargs["checkpoint"]).partition(":")[2]
        try:
            kwargs["checkpoint"] = str(shipped_checkpoint(tier, size, observability or "concise"))
        except ValueError as exc:  # a misspelt level is refused, never skipped as "not shipped"
            raise ValueError(f"{spec['key']}={kwargs['checkpoint']}: {exc}") from None
    elif kwargs.get("checkpoint"):
        kwargs["checkpoint"] = existing_checkpoint(tier_checkpoint(kwargs["checkpoint"], tier, size), spec["key"])
    return {"name": spec["name"], "kwargs": kwargs, "env": dict(spec["env"]),
            **({"target": spec["target"]} if spec.get("target") else {})}


def _resolved_json(spec: Mapping[str, Any], resolved: Mapping[str, Any]) -> str:
    """The canonical JSON of ``resolved`` (``spec`` for one tier and size, :func:`_resolve`): its player's cache key
    and its entrant's identity. A NaN or infinite setting, which no agent or env takes and JSON cannot hold, is a
    ValueError naming its config key, as :func:`_checked_player` names the others (json's own error named none)."""
    for key, settings in ((_entry(spec), resolved["kwargs"]), (f"{spec['env_key']}={spec['env']}", resolved["env"])):
        try:
            canonical_json(settings)
        except ValueError:
            raise ValueError(f"{key}: settings must be finite numbers, not NaN or infinity") from None
    return canonical_json(resolved)


def _entry(spec: Mapping[str, Any]) -> str:
    """The agent entry ``spec`` as its errors name it: its config key, name (or ``_target_``) and kwargs."""
    what = f"_target_ {spec['target']!r}" if spec.get("target") else f"name {spec['name']!r}"
    return f"{spec['where']} ({what}, kwargs {spec['kwargs']})"


def _checked_player(spec: Mapping[str, Any], resolved: str, tier: str, size: str) -> Player:
    """The player of ``resolved`` (of ``spec``, :func:`agent_specs`); a bad agent name, argument or env setting is a
    ValueError naming its config key."""
    try:
        player = _player(resolved)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{_entry(spec)}: {exc}") from None
    if isinstance(player, OraclePlayer) and spec["env"]:  # they were ignored, and the rows stored under them
        raise ValueError(f"{spec['env_key']}={spec['env']}: {player.name} solves the instance and plays no env, so "
                         "these settings would be ignored; leave its env empty")
    if isinstance(player, AgentPlayer):
        try:
            player.check_env()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{spec['env_key']}={spec['env']}: {exc}") from None
        try:
            player.check_pool(tier, size)
        except ValueError as exc:
            raise ValueError(f"{spec['key']}={getattr(player.agent, 'checkpoint', '')} on {tier}/{size}: {exc}"
                             ) from None
    return player


@settings_checked()
def plan(cfg: DictConfig) -> Plan:
    """Resolve the configuration into episodes; an agent whose optional package (:data:`OPTIONAL`) or shipped
    checkpoint is missing, or a policy trained for another objective, is skipped, with the reason. A setting
    the script cannot use is a :class:`~scripts.overrides.SettingError` naming its key."""
    from dynasched_gym.envs.futures import check_outside_futures
    from dynasched_gym.generation import MAX_SEEDS, TIERS, size_presets

    check_choice("objective", cfg.objective, tuple(OBJECTIVE_METRICS))
    given = mapping_setting(cfg, "seeds")
    start = check_integer("seeds.start", given.get("start"), 0)
    seeds = range(start, start + check_integer("seeds.count", given.get("count"), 1, MAX_SEEDS))
    tiers, sizes = check_choices("tiers", cfg.tiers, TIERS), check_choices("sizes", cfg.sizes, size_presets())
    for key, selected, choices in (("tiers", tiers, TIERS), ("sizes", sizes, tuple(size_presets()))):
        if not selected:  # an evaluation of nothing would end "0 episodes", status 0, as if it had succeeded
            raise ValueError(f"{key} must name at least one of {choices}, got []")
    if not agent_specs(cfg):
        raise ValueError("no agent selected: agent lists no agent and ppo is null")
    episodes, skipped = [], []
    for tier in tiers:
        for size in sizes:
            seen: dict[str, str] = {}  # configuration hash -> the entrant's name on the board
            for spec in agent_specs(cfg):
                try:
                    resolved = _resolved_json(spec, _resolve(spec, tier, size))
                    player = _checked_player(spec, resolved, tier, size)
                except (ImportError, FileNotFoundError) as exc:
                    if isinstance(exc, ImportError) and not _optional_missing(exc):
                        raise  # a broken module of this package is an error, not a missing extra
                    skipped.append(f"{spec.get('target') or spec['name']} on {tier}/{size}: {exc}")
                    continue
                agent = getattr(player, "agent", None)  # an AgentPlayer's; the other players sample no futures
                futures = getattr(agent, "sampled_futures", 0)
                if futures:  # a sample could be the very instance tested
                    check_outside_futures(f"seeds.start={start} seeds.count={len(seeds)}", seeds,
                                          f"{spec['name']} rolls out in {futures} of them")
                trained = getattr(agent, "trained_objective", None)
                if trained not in (None, cfg.objective):  # a policy is ranked on the objective it was trained for
                    skipped.append(f"{spec['name']} on {tier}/{size}: trained for {trained}, this evaluation's "
                                   f"objective is {cfg.objective}")
                    continue
                config = {**player.config(), "behaviour": BEHAVIOUR_VERSION}
                entrant = Entrant(resolved, spec.get("label") or player.name, config_hash(config), player.clairvoyant,
                                  config)
                if entrant.agent_hash in seen:
                    skipped.append(f"{entrant.agent} on {tier}/{size}: the same configuration (hash "
                                   f"{entrant.agent_hash}) as {seen[entrant.agent_hash]}, evaluated once as that")
                    continue
                seen[entrant.agent_hash] = entrant.agent
                episodes.extend((entrant, tier, size, seed) for seed in seeds)
    return Plan(episodes, list(dict.fromkeys(skipped)), str(cfg.objective))


# ------------------------------------------------------------------------------------------- episodes
def play_episode(entrant: Entrant, tier: str, size: str, seed: int, objective: str, validate: bool = True
                 ) -> dict[str, Any]:
    """Play one episode and return its row (status ``ok``, ``invalid`` or ``error``; ``retry: true`` on an error
    row that must not be stored: decisions fell back to the rule because requests failed).

    An exception whose class sets ``stops_run`` is raised, not made a row (module docstring)."""
    from dynasched_gym.generation.difficulty import normalised_weighted_tardiness

    row: dict[str, Any] = {
        "format": ROW_FORMAT, "agent": entrant.agent, "agent_hash": entrant.agent_hash,
        "clairvoyant": entrant.clairvoyant, "agent_config": entrant.config, "tier": tier, "size": size,
        "seed": seed, "objective": objective, "objective_metric": OBJECTIVE_METRICS[objective],
        "instance": None, "instance_sha256": None, "ssi": None, "validated": validate, "status": "error", "error": None,
        "violations": [],
        "objective_value": None, **dict.fromkeys(METRIC_KEYS), "normalised_weighted_tardiness": None,
        "decisions": None, "wall_time": None, "decisions_per_second": None, "tokens": None, "usage": None,
        "oracle": None,
    }
    try:
        inst, score, digest = _instance(tier, size, seed)
        row.update(instance=inst.name, instance_sha256=digest, ssi=score)
        player = _player(entrant.spec)
        schedule, extra = player.play(inst, objective, seed, (tier, size))
        decisions, wall = extra.pop("decisions", schedule.decisions), extra["wall_time"]
        row.update(extra, decisions=decisions,
                   decisions_per_second=decisions / wall if decisions is not None and wall > 0 else None)
        report = dynasched_gym.validate_schedule(schedule) if validate else None
        usage = extra.get("usage") or {}
        # every failed request, not only those that made a decision fall back: a lost reflection round or best-of-n
        # sample changes the decision too, and a rerun with a working endpoint would make another
        failed_requests, fell_back = int(usage.get("errors", 0)), int(usage.get("fallback_error", 0))
        if failed_requests:
            row.update(status="error", retry=True, error=(
                f"{failed_requests} request(s) to the model failed (endpoint errors; {fell_back} "
                f"of {decisions} decisions fell back to the rule, the others lost a reflection round or a best-of-n "
                "sample); not stored: a rerun plays the episode again (the response cache replays the requests that "
                "succeeded)"))
        elif report is not None and not report.ok:
            row.update(status="invalid", error=f"{len(report.violations)} violation(s)",
                       violations=[f"{v.kind}: {v.message}" for v in report.violations[:10]])
        else:
            metrics = schedule.metrics
            row.update(metrics, status="ok", objective_value=metrics[OBJECTIVE_METRICS[objective]],
                       normalised_weighted_tardiness=normalised_weighted_tardiness(schedule))
    except Exception as exc:  # a failed row, reported by the caller; never a silent number
        if getattr(exc, "stops_run", False):
            raise
        row.update(status="error", error=f"{type(exc).__name__}: {exc}")
    row.update(versions={"dynasched_gym": dynasched_gym.__version__}, host=platform.node(), pid=os.getpid(),
               finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    return row


def _play_instance(jobs: Sequence[tuple[Entrant, str, str, int]], objective: str, validate: bool
                   ) -> list[dict[str, Any]]:
    """Worker task: every pending episode of one instance."""
    return [play_episode(*job, objective, validate) for job in jobs]


def _one_thread() -> None:
    """Run torch on one thread: the small policies are fastest so, and with ortools loaded in the same process
    two OpenMP threads made every layer ~500x slower (measured: 5.7 ms instead of 10 us per call)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _run_tasks(tasks: list[list[tuple[Entrant, str, str, int]]], objective: str, validate: bool, workers: int
               ) -> Generator[dict[str, Any], None, None]:
    """Rows of the tasks as they finish (in this process when ``workers <= 1``: episode by episode, so an
    interruption loses only the episode being played; in ``workers`` processes instance by instance, so an
    interruption loses only the instances being played: the rows of every task already finished, in order or
    not, come before the ``KeyboardInterrupt``)."""
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            for job in task:
                yield play_episode(*job, objective, validate)
        return
    # the workers ignore Ctrl-C (it reaches the whole process group): this process ends them, keeping what they finished
    with WorkerPool(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread) as pool:
        futures = [pool.submit(_play_instance, task, objective, validate) for task in tasks]
        handed = 0  # the rows of futures[:handed] are yielded or in `left`
        left: list[dict[str, Any]] = []  # rows of a finished task not yet yielded
        try:
            for future in futures:  # submission order: the store fills seed by seed
                left = list(future.result())
                handed += 1
                while left:
                    yield left.pop(0)
        except KeyboardInterrupt:
            finished = left + [row for future in futures[handed:] if future.done() and not future.cancelled()
                               and future.exception() is None for row in future.result()]
            stop_workers(pool)  # before the rows are stored: a second Ctrl-C then leaves no worker behind
            yield from finished
            raise
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def keep_all(rows: Generator[dict[str, Any], None, None], keep: Callable[[dict[str, Any]], None]) -> None:
    """``keep`` every row of ``rows`` (:func:`_run_tasks`). A Ctrl-C inside ``keep`` (storing a row, where the main
    process spends much of its time) is passed on to ``rows``, so that the rows of the tasks already finished are
    kept too before it propagates; ``keep`` must be idempotent (the row being kept may be kept again)."""
    row = None
    try:
        for row in rows:
            keep(row)
    except KeyboardInterrupt:
        if row is not None and inspect.getgeneratorstate(rows) == inspect.GEN_SUSPENDED:
            keep(row)
            try:
                row = rows.throw(KeyboardInterrupt())
                while True:
                    keep(row)
                    row = next(rows)
            except (KeyboardInterrupt, StopIteration):
                pass
        raise


@dataclass
class Summary:
    """What an evaluation did: rows of its selection already stored, run (and stored) now, failed (of all), its rows.

    ``rows`` and ``failed`` also hold the failed rows of this run that were not stored (``retry``: a rerun
    plays them again)."""

    total: int
    reused: int
    ran: int
    failed: list[dict[str, Any]]
    skipped: list[str]
    seconds: float
    rows: list[dict[str, Any]]
    retry: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        retry = f" ({len(self.retry)} not stored: a rerun retries them)" if self.retry else ""
        return (f"{self.total} episodes: {self.reused} reused from the store, {self.ran} run now, "
                f"{len(self.failed)} failed{retry}, {len(self.skipped)} agent(s) skipped; {self.seconds:.1f} s")


def _report_failure(row: Mapping[str, Any]) -> str:
    detail = "; ".join(row.get("violations") or []) or row.get("error") or ""
    return (f"FAILED [{row['status']}] {row['agent']} on {row['tier']}/{row['size']} seed {row['seed']} "
            f"({row['objective']}): {detail}")


@settings_checked()
def run_settings(cfg: DictConfig) -> tuple[int, bool, bool, ResultStore]:
    """The run's ``workers``, ``validate`` and ``progress`` settings and its ``store``, checked (nothing written)."""
    workers = check_integer("workers", cfg.workers, 1)
    validate, progress = check_bool("validate", cfg.validate), check_bool("progress", cfg.progress)
    return workers, validate, progress, ResultStore(output_file("store", cfg.store))


def check_settings(cfg: DictConfig) -> None:
    """The checks :func:`run` makes of ``cfg`` before any episode, without playing or writing anything: a ``-m``
    sweep's jobs are checked so before the first job runs (:func:`~scripts.overrides.check_sweep_jobs`; the jobs share
    the store, and write nothing else)."""
    run_settings(cfg)
    plan(cfg)


def run(cfg: DictConfig) -> Summary:
    """Evaluate what ``cfg`` asks for, appending the missing rows to ``cfg.store``; the selection's summary."""
    began = time.perf_counter()
    workers, validate, progress, store = run_settings(cfg)
    _one_thread()
    the_plan = plan(cfg)
    _one_thread()  # plan() may have imported torch (PPO)
    for note in the_plan.skipped:
        print(f"skipped: {note}", file=sys.stderr)
    stored = store.rows()  # read once: the keys done and the rows to reuse
    done = {row_key(r) for r in stored}
    wanted_keys = the_plan.keys()
    check_reused([r for r in stored if row_key(r) in wanted_keys], validate, store.path)
    pending = [ep for ep in the_plan.episodes if the_plan.key(*ep) not in done]
    by_instance: dict[tuple[str, str, int], list[tuple[Entrant, str, str, int]]] = {}
    for episode in pending:
        by_instance.setdefault(episode[1:], []).append(episode)
    seeds: dict[tuple[str, str], list[int]] = {}
    for tier, size, seed in by_instance:
        seeds.setdefault((tier, size), []).append(seed)
    from dynasched_gym.core import compile_note
    from dynasched_gym.generation import tier_pool

    if pending and progress and (note := compile_note()):
        tqdm.write(note, file=sys.stderr)
    for (tier, size), wanted in seeds.items():
        tier_pool(tier, size, workers=workers).prepare(wanted, progress=progress)
    retry: list[dict[str, Any]] = []
    with tqdm(total=len(the_plan.episodes), initial=len(the_plan.episodes) - len(pending), desc="episodes",
              unit="ep", disable=not progress) as bar:

        kept: set[Key] = set()

        def keep(row: dict[str, Any]) -> None:  # idempotent: keep_all may hand the row being kept again
            if row_key(row) in kept:
                return
            if row.get("retry"):
                if row not in retry:
                    retry.append(row)
            else:
                store.append(row)
            if row["status"] != "ok":
                tqdm.write(_report_failure(row), file=sys.stderr)
            kept.add(row_key(row))
            bar.update()

        try:
            keep_all(_run_tasks(list(by_instance.values()), the_plan.objective, validate, workers), keep)
        except KeyboardInterrupt:
            # counted from the file: a Ctrl-C may cut an append short after its row was written (it returned nothing)
            ran = len(store.written())
            raise KeyboardInterrupt(f"interrupted: {ran} episode(s) of this run are stored in {store.path} (none "
                                    "of the episodes still playing); rerun the same command to resume") from None
        except Exception as exc:
            if not getattr(exc, "stops_run", False):
                raise
            ran = len(store.written())
            raise EvaluationStopped(
                f"evaluation stopped: {type(exc).__name__}: {exc}\n{ran} episode(s) of this run are stored in "
                f"{store.path}; once the cause is fixed, rerun the same command: it resumes with the episodes "
                "missing") from exc
    ran = len(store.written())
    final = store.rows()
    # another run may have stored some of these episodes meanwhile (its row then stands in for this run's)
    check_reused([r for r in final if row_key(r) in wanted_keys and row_key(r) not in done], validate, store.path)
    rows = the_plan.labelled(final) + retry
    failed = [r for r in rows if r["status"] != "ok"]
    return Summary(len(wanted_keys), len(wanted_keys & done), ran, failed, the_plan.skipped,
                   time.perf_counter() - began, rows, retry)


def report_failures(failed: Sequence[Mapping[str, Any]]) -> None:
    """List failed rows loudly on stderr."""
    if failed:
        print(f"\n*** {len(failed)} FAILED EPISODE(S): invalid schedules or errors, excluded from every "
              "statistic ***", file=sys.stderr)
        for row in failed:
            print("  " + _report_failure(row), file=sys.stderr)


def board_command(overrides: Sequence[str]) -> str:
    """The line that says how to rank what the run stored: the leaderboard takes evaluate's ``overrides`` as they are
    (a sweep job's without its launcher, :func:`~scripts.overrides.single_run_overrides`), and with
    ``run_missing=false`` plays nothing."""
    return " ".join(["rank them: python -m scripts.leaderboard", *map(shlex.quote, single_run_overrides(overrides)),
                     "run_missing=false"])


@checked_main("evaluate", check_settings)
def main(cfg: DictConfig) -> None:
    """Hydra entry point; exits with status 1 when a selected row failed, or with the message of
    :class:`EvaluationStopped` when an agent stopped the run, or with status 130 on Ctrl-C or SIGTERM (the
    message says how to resume), or with status 2 on a bad setting (:func:`~scripts.overrides.setting_errors_exit`)."""
    from hydra.core.hydra_config import HydraConfig

    with setting_errors_exit(), interrupted_exit(RESUME_NOTE):
        check_added_keys(cfg, free=FREE_FORM)
        summary = run(cfg)
    print(f"store: {hydra.utils.to_absolute_path(str(cfg.store))}")
    print(summary)
    print(board_command(HydraConfig.get().overrides.task))
    report_failures(summary.failed)
    if summary.failed:
        sys.exit(1)


__all__ = ["KEY_FIELDS", "RESUME_NOTE", "EvaluationStopped", "Plan", "Summary", "agent_specs", "check_reused",
           "check_settings", "existing_checkpoint", "is_shipped", "main", "plan", "play_episode", "report_failures",
           "run", "run_settings"]

if __name__ == "__main__":  # run the importable module's main: launcher workers unpickle its functions by name
    from scripts.evaluate import main as entry

    entry()
