"""The PPO agent: a trained sb3-contrib ``MaskablePPO`` (:class:`~dynasched_gym.agents.policy.SlotPolicy`).

Checkpoints come from ``python -m scripts.train`` (docs/agents.md, "PPO"); small ones per tier ship
in :data:`CHECKPOINTS` (``ppo-<tier>-small.zip``, with ``ppo-<tier>-small.yaml``: the config, seed
and measured results that produced it).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import yaml
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.preprocessing import preprocess_obs
from tqdm import tqdm

from dynasched_gym.agents.base import Agent
from dynasched_gym.agents.policy import SlotPolicy
from dynasched_gym.checks import check_bool, check_choice, check_path
from dynasched_gym.core.rules import COMPOSITE_RULES, check_seed
from dynasched_gym.envs.dfjsp.episodes import pool_scales
from dynasched_gym.envs.dfjsp.features import CANDIDATE_FEATURES, OBSERVABILITY, num_columns
from dynasched_gym.envs.wrappers import (
    FORECASTS_KEY,
    HINDSIGHT_KEY,
    ForecastFeaturesVector,
    SlotForecaster,
    forecaster,
)
from dynasched_gym.instance import Instance
from dynasched_gym.metrics import OBJECTIVES
from dynasched_gym.schedule import Schedule

#: Directory of the shipped checkpoints.
CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"


def checkpoint_file(path: str | os.PathLike[str]) -> Path | None:
    """``path`` if it is a file, else ``path.zip`` if that is (SB3's convention: "model" means model.zip); None when
    neither is."""
    return next((p for p in (Path(path), Path(f"{path}.zip")) if p.is_file()), None)


def models_in(folder: Path) -> list[str]:
    """The model ``.zip`` files in ``folder`` and one level below (a ``scripts.train`` run: ``model.zip``,
    ``best.zip``, ``checkpoints/...``), relative to it and sorted: what an error about a folder given as a
    checkpoint lists."""
    return sorted(p.relative_to(folder).as_posix() for p in [*folder.glob("*.zip"), *folder.glob("*/*.zip")])


def shipped_checkpoint(tier: str, size: str = "small", observability: str = "concise") -> Path:
    """Path of the shipped checkpoint for ``tier`` (trained on ``DFJSP-v0`` with its ``.yaml``'s env config).

    ``ppo-<tier>-<size>.zip`` sees ``concise`` observations; ``ppo-<tier>-<size>-full.zip``, where
    shipped, the same training on ``full`` ones (the RL side of the observability ablation). A name that is no tier,
    size preset or observability level is a ValueError naming it; a valid combination not shipped a
    FileNotFoundError listing those that are.
    """
    from dynasched_gym.generation import TIERS, size_presets  # not at import: the agent itself never needs it

    check_choice("tier", tier, TIERS)
    check_choice("size", size, tuple(size_presets()))
    check_choice("observability", observability, OBSERVABILITY)
    path = CHECKPOINTS / f"ppo-{tier}-{size}{'' if observability == 'concise' else '-' + observability}.zip"
    if not path.is_file():
        shipped = sorted(p.stem for p in CHECKPOINTS.glob("ppo-*.zip"))
        raise FileNotFoundError(f"no shipped PPO checkpoint {path.name}; shipped: {shipped}")
    return path


def training_env(checkpoint: Path) -> dict[str, Any]:
    """The env config ``checkpoint`` was trained with, from the config saved beside it (a shipped model's
    ``<name>.yaml``; ``model.yaml`` of a ``scripts.train`` run, for its models and ``checkpoints/``); else the
    tier, size and objective of the record ``scripts.train`` writes beside each checkpoint (``<name>.json``: a run
    interrupted, or still training, has no ``model.yaml``); ``{}`` when there is none."""
    for sidecar in (checkpoint.with_suffix(".yaml"), checkpoint.parent / "model.yaml",
                    checkpoint.parent.parent / "model.yaml"):
        if sidecar.is_file():
            return _config_env(sidecar)
    record_path = checkpoint.with_suffix(".json")
    if record_path.is_file():
        try:
            setting = json.loads(record_path.read_text(encoding="utf-8")).get("validation") or {}
        except (ValueError, AttributeError):  # not a record of scripts.train
            return {}
        if not isinstance(setting, dict):  # {"validation": 3} raised "argument of type 'int' is not iterable"
            return {}
        return {key: setting[key] for key in ("tier", "size", "objective") if key in setting}
    return {}


def _config_env(path: Path) -> dict[str, Any]:
    """The ``config.env`` mapping of the training config ``path`` (``{}`` where it has none); a ValueError naming the
    file when it is no YAML or that entry no mapping (a list there failed with "'list' object has no attribute
    'get'")."""
    try:
        env = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ValueError(f"{path}, read as the PPO checkpoint's training config, is no YAML: {error}") from None
    for key in ("config", "env"):
        if not isinstance(env, dict):
            break
        env = env.get(key)
    env = {} if env is None else env
    if not isinstance(env, dict):
        raise ValueError(f"{path}, read as the PPO checkpoint's training config, is no config of scripts.train: its "
                         f"config.env must be a mapping, got {type(env).__name__}: {env!r:.80}")
    return dict(env)


class PPOAgent(Agent):
    """Plays a ``MaskablePPO`` policy on ``DynaSched/DFJSP-v0`` (masks from ``env.action_masks()``).

    The env must give the observations the policy was trained on (same ``observability``,
    ``max_candidates`` and number of machines); :meth:`reset` checks the spaces. A policy trained
    with rollout forecasts (``SlotPolicy(forecast_rules=...)``) gets them computed by the agent
    from the env's state unless the env already adds them (:class:`~dynasched_gym.envs.wrappers.ForecastFeatures`).
    A policy with an asymmetric critic (``SlotPolicy(critic_hindsight=True)``) gets zeros for the critic's
    privileged ``hindsight_forecasts``: its actor never reads them, and the env never has to reveal the future.
    :meth:`reset` warns when the env's objective is not :attr:`trained_objective` (read from the config saved
    beside the checkpoint, :func:`training_env`), or when its feature units are not :attr:`feature_scales`, the
    (time_scale, ops_scale) of the training env (saved with the policy; for older checkpoints, their pool's; a
    checkpoint file with neither gets a warning when loaded): make the env with ``**agent.env_settings()``.

    Args:
        checkpoint: a ``.zip`` saved by ``MaskablePPO.save`` (or a model in memory, e.g. while training).
        deterministic: play the most probable action (else sample, from a stream of its own seeded with ``seed``
            at every :meth:`reset`, as the random agent is: an episode depends on the instance and ``seed`` only).
        seed: the sampling stream's seed (``deterministic=False``), in [0, 2**32).
    """

    name = "ppo"

    def __init__(self, checkpoint: str | os.PathLike[str] | MaskablePPO | None = None,
                 deterministic: bool = True, seed: int = 0) -> None:
        if checkpoint is None:
            raise TypeError("make('ppo') needs checkpoint=: a model .zip of scripts.train, or a shipped one, e.g. "
                            "checkpoint=dynasched_gym.agents.ppo.shipped_checkpoint('hard')")
        if isinstance(checkpoint, MaskablePPO):
            self.model, self.checkpoint, self.sha256 = checkpoint, None, None
        else:
            path = checkpoint_file(check_path("checkpoint", checkpoint, " or a MaskablePPO"))
            if path is None:
                raise FileNotFoundError(f"PPO checkpoint {str(checkpoint)!r} is not a file (shipped ones: "
                                        "dynasched_gym.agents.ppo.shipped_checkpoint(tier))")
            # the training schedules are not needed to act (and may not unpickle across cloudpickle versions)
            try:
                self.model = MaskablePPO.load(path, device="cpu",
                                              custom_objects={"learning_rate": 0.0, "lr_schedule": 0.0})
            except (ValueError, KeyError, AssertionError, EOFError, RuntimeError, zipfile.BadZipFile,
                    pickle.UnpicklingError, AttributeError, TypeError) as error:  # SB3's, for a file it cannot read
                raise ValueError(f"PPO checkpoint {str(path)!r} is not a model saved by scripts.train or "
                                 f"MaskablePPO.save: {type(error).__name__}: {error}") from error
            self.checkpoint, self.sha256 = str(path), hashlib.sha256(path.read_bytes()).hexdigest()
        if not isinstance(self.model.observation_space, spaces.Dict):
            kind = type(self.model.observation_space).__name__
            raise ValueError(f"the PPO policy {self.checkpoint or 'given'} reads {kind} observations: PPOAgent "
                             "plays policies of the Dict observations of "
                             "DynaSched/DFJSP-v0 (SlotPolicy, MultiInputPolicy); play one trained on flattened "
                             "observations with model.predict on an env with the same flattening")
        _check_pair_policy(self.model, self.checkpoint or "given")
        _check_fair_actor(self.model, self.checkpoint or "given")
        trained_on = {} if self.checkpoint is None else training_env(Path(self.checkpoint))
        self.trained_objective = trained_on.get("objective")
        if self.trained_objective is not None:  # else accepted here and refused at the first play()
            check_choice(f"the objective of the training config beside {self.checkpoint}", self.trained_objective,
                         OBJECTIVES)
        scales = getattr(self.model.policy, "feature_scales", None)  # older checkpoints: their pool's
        self.feature_scales = pool_scales(trained_on["size"]) if scales is None and "size" in trained_on else scales
        if self.feature_scales is None and self.checkpoint is not None:
            warnings.warn(f"the PPO policy {self.checkpoint} records no feature units and has no training config "
                          "beside it (<name>.yaml or model.yaml): it plays in each env's own units, which may not be "
                          "the ones it was trained in; pass time_scale= and ops_scale= to the env if you know them",
                          RuntimeWarning, stacklevel=2)
        self.deterministic = check_bool("deterministic", deterministic)
        self.seed = check_seed(seed)
        self._sampling: torch.Tensor | None = None  # the sampling stream's state (deterministic=False)
        self._forecaster: SlotForecaster | None = None
        if self.env_settings()["observability"] == "oracle":  # it reads future events: a reference, never ranked
            self.name, self.clairvoyant = "ppo-oracle", True

    def reset(self, env: gym.Env) -> None:
        super().reset(env)
        self.require_pair_env()
        self._sampling = self._sampling_start()
        if not isinstance(env.observation_space, spaces.Dict):
            raise ValueError(f"the PPO agent reads the Dict observations of DynaSched/DFJSP-v0, got "
                             f"{type(env.observation_space).__name__}: play it on the env without "
                             "FlattenDictObservation / FlattenObservation")
        self._check_objective(self.env.config.objective)
        rules, futures, pool = self._forecast_settings()
        expected = self._played_space()
        self._forecaster = None
        if rules and FORECASTS_KEY not in env.observation_space.spaces:  # the agent adds them itself
            expected = spaces.Dict({k: v for k, v in expected.spaces.items() if k != FORECASTS_KEY})
            self._forecaster = forecaster(env.unwrapped, rules, futures, 1, pool)
        elif rules:  # the env adds them: they must be the policy's
            wrapped = (tuple(env.get_wrapper_attr("rules")), env.get_wrapper_attr("futures"),
                       env.get_wrapper_attr("future_pool"))
            trained = (tuple(rules), futures, forecaster(self.env, rules, futures, 1, pool).future_pool)
            if wrapped != trained:  # same shape, other rollouts
                raise ValueError(f"the env's forecasts roll out {wrapped[0]} in {wrapped[1]} sampled futures (pool "
                                 f"{wrapped[2]}), the policy was trained on {trained[0]} in {trained[1]} (pool "
                                 f"{trained[2]}): wrap the env with these or leave it unwrapped")
        _check_space(env.observation_space, expected)
        units = (self.env.time_scale, self.env.ops_scale)
        if self.feature_scales is not None and not np.allclose(units, self.feature_scales, rtol=1e-12, atol=0.0):
            warnings.warn(f"the PPO policy {self.checkpoint} was trained with features in units (time_scale, "
                          f"ops_scale) = {self.feature_scales}, this episode's are {units}: make the env with "
                          "**agent.env_settings()", RuntimeWarning, stacklevel=2)

    def _check_objective(self, objective: str) -> None:
        """Warn when ``objective`` is not the one the policy was trained for (its forecasts would read another)."""
        if self.trained_objective not in (None, objective):
            warnings.warn(f"the PPO policy {self.checkpoint} was trained for {self.trained_objective}, the env's "
                          f"objective is {objective}: make the env with objective={self.trained_objective!r} to play "
                          "it on its own objective", RuntimeWarning, stacklevel=3)

    def _played_space(self) -> spaces.Dict:
        """The policy's observation space without the critic's privileged block (the agent fills it with zeros)."""
        return spaces.Dict({k: v for k, v in self.model.observation_space.spaces.items() if k != HINDSIGHT_KEY})

    def _blank_hindsight(self, observation: dict[str, np.ndarray],
                         batch: tuple[int, ...] = ()) -> dict[str, np.ndarray]:
        """``observation`` with zeros for ``hindsight_forecasts`` when the policy's critic reads them."""
        space = self.model.observation_space.spaces.get(HINDSIGHT_KEY)
        if space is None:
            return observation
        return {**observation, HINDSIGHT_KEY: np.zeros((*batch, *space.shape), dtype=np.float32)}

    @property
    def sampled_futures(self) -> int:
        """The sampled futures the policy's forecast features roll out in (``env.forecast_futures`` in training)."""
        return self._forecast_settings()[1]

    def _forecast_settings(self) -> tuple[tuple[str, ...], int, tuple[str, str] | None]:
        """The policy's forecast rollout rules, sampled futures and their pool (older checkpoints: none)."""
        policy = self.model.policy
        return (tuple(getattr(policy, "forecast_rules", ())), getattr(policy, "forecast_futures", 0),
                getattr(policy, "future_pool", None))

    def check_pool(self, tier: str, size: str, **env_kwargs: Any) -> None:
        """A ValueError now if the policy cannot play the instances of ``tier_pool(tier, size)`` in an env of its
        :meth:`env_settings` and ``env_kwargs``: their machines shape its observations (a policy of another size
        failed every episode)."""
        env = gym.make("DynaSched/DFJSP-v0", tier=tier, size=size, **{**self.env_settings(), **env_kwargs})
        try:
            with warnings.catch_warnings():  # only the spaces are checked here
                warnings.simplefilter("ignore")
                self.reset(env)
        finally:
            env.close()

    def env_settings(self) -> dict[str, Any]:
        """The env arguments the policy's observations need: ``max_candidates`` and ``observability``, and the
        feature units it was trained in, ``time_scale`` and ``ops_scale``, where known (:attr:`feature_scales`)."""
        units = {} if self.feature_scales is None else dict(zip(("time_scale", "ops_scale"), self.feature_scales))
        return {**observation_settings(self.model.observation_space), **units}

    def play(self, instances: Sequence[Instance], objective: str | None = None, num_envs: int = 16,
             progress: bool = False) -> list[Schedule]:
        """The policy's schedule of every instance (each episode reset with seed 0, as ``run_episode(..., seed=0)``).

        ``objective``: the episodes' objective; ``None``: the one the policy was trained for (weighted tardiness when
        unknown). Another than the trained one warns, as :meth:`reset` does.

        ``num_envs`` episodes run at a time in one ``DFJSP-v0`` vector env, so the policy scores a
        batch of observations per call: the choices of :meth:`act` in single envs, several times faster.
        """
        if (isinstance(instances, (str, bytes, os.PathLike, Instance)) or not isinstance(instances, Sequence)
                or any(inst is None for inst in instances)):  # None played a drawn pool instance, unsaid
            raise TypeError(f"instances must be a list of instances (Instance objects, paths or embedded names), got "
                            f"{type(instances).__name__}: {instances!r:.80}")
        objective = objective or self.trained_objective or "weighted_tardiness"
        check_choice("objective", objective, OBJECTIVES)  # before the warning that it is not the trained one
        self._check_objective(objective)
        if not instances:
            return []
        num_envs = min(num_envs, len(instances))
        venv = gym.make_vec("DynaSched/DFJSP-v0", num_envs=num_envs, vectorization_mode="vector_entry_point",
                            autoreset_mode="Disabled", instance=instances[0], objective=objective,
                            **self.env_settings())
        rules, futures, pool = self._forecast_settings()
        if rules:
            venv = ForecastFeaturesVector(venv, rules, futures, pool)
        _check_space(venv.single_observation_space, self._played_space())
        vector = venv.unwrapped
        playing = np.arange(num_envs)  # the instance each sub-env plays; -1: idle (replays its last one)
        shown = list(playing)  # the instance each sub-env has
        observation, _ = venv.reset(seed=[0] * num_envs, options={"instance": list(instances[:num_envs])})
        # each episode samples from its own stream (deterministic=False), as in run_episode: one stream for the batch
        # made a schedule depend on num_envs and on the instances beside and before it
        streams = [self._sampling_start()] * num_envs
        schedules: list[Schedule | None] = [None] * len(instances)
        following = num_envs
        with tqdm(total=len(instances), desc="play ppo", unit="inst", disable=not progress) as bar:
            while (playing >= 0).any():
                actions = self._predict(self._blank_hindsight(observation, (num_envs,)), venv.action_masks(), streams)
                observation, _, terminated, _, _ = venv.step(actions)
                if not terminated.any():
                    continue
                for i in np.flatnonzero(terminated):
                    if playing[i] >= 0:
                        schedules[playing[i]] = vector.schedule(i)
                        bar.update()
                    playing[i] = following if following < len(instances) else -1
                    streams[i] = self._sampling_start()
                    shown[i] = playing[i] if playing[i] >= 0 else shown[i]
                    following += 1
                observation, _ = venv.reset(seed=[0 if ended else None for ended in terminated],
                                            options={"instance": [instances[k] for k in shown],
                                                     "reset_mask": terminated})
        venv.close()
        return schedules  # type: ignore[return-value]  # every instance was played

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        if self._forecaster is not None:
            env = self.env.unwrapped
            forecasts = self._forecaster(0, env.simulator, *env.offered_pairs(), env.time_scale)
            observation = {**observation, FORECASTS_KEY: forecasts}
        streams = [self._sampling]
        action = self._predict(self._blank_hindsight(observation), self.env.action_masks(), streams)
        self._sampling = streams[0]
        return int(np.asarray(action).reshape(-1)[0])

    def _sampling_start(self) -> torch.Tensor | None:
        """The state of the sampling stream at the start of an episode (``None`` when playing deterministically)."""
        return None if self.deterministic else torch.Generator().manual_seed(self.seed).get_state()

    def _predict(self, observation: dict[str, np.ndarray], action_masks: np.ndarray,
                 streams: list[torch.Tensor | None]) -> np.ndarray:
        """The policy's action(s), of one observation (``act``) or a batch (``play``); a sampled action of row ``i``
        draws from ``streams[i]``, its episode's stream (updated in place), never from torch's global one."""
        probs = self._probs(observation, action_masks)
        if self.deterministic:
            return probs.argmax(dim=1).cpu().numpy()  # MaskableCategoricalDistribution.mode
        probs = probs.cpu()  # on a GPU, multinomial would draw from the device's generator, which ignores the seed
        actions = np.empty(len(streams), dtype=np.int64)
        with torch.random.fork_rng(devices=[]):
            for i, state in enumerate(streams):
                torch.set_rng_state(state)
                actions[i] = int(torch.multinomial(probs[i:i + 1], 1, True))  # Categorical.sample's draw
                streams[i] = torch.get_rng_state()
        return actions

    def _probs(self, observation: dict[str, np.ndarray], action_masks: np.ndarray) -> torch.Tensor:
        """The (B, K) action probabilities of one observation (B = 1) or a batch: those of ``MaskablePPO.predict``
        and ``policy.get_distribution``, bit for bit (tests/test_ppo.py), without their per-call overheads, which
        were half of a decision's time (the deep copy and checks of ``obs_to_tensor``, ``set_training_mode`` walking
        every module, a masked distribution built and validated three times)."""
        policy = self.model.policy
        if policy.training:  # no layer of these policies depends on the mode; switching walks every module
            policy.set_training_mode(False)
        space, device = policy.observation_space, self.model.device  # policy.device walks the modules
        with torch.inference_mode():
            observation = {key: torch.as_tensor(value, device=device).reshape(-1, *space[key].shape)
                           for key, value in observation.items()}
            observation = preprocess_obs(observation, space, policy.normalize_images)
            if isinstance(policy, SlotPolicy):  # its actor alone: the critic's inputs were ~15% of a decision
                logits = policy.actor_logits(observation)
            else:
                features = policy.pi_features_extractor(observation)
                logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
            logits = logits.view(-1, policy.action_space.n)
            # sb3-contrib's MaskableCategorical: the logits normalised, masked with -1e8, normalised again
            logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            if torch.isnan(logits).any():  # its argument validation refused them too
                raise ValueError(f"the PPO policy {self.checkpoint or 'given'} gives NaN logits: its parameters or "
                                 "this observation hold NaN or infinite values")
            masks = torch.as_tensor(action_masks, dtype=torch.bool, device=logits.device).reshape(logits.shape)
            logits = torch.where(masks, logits, torch.tensor(-1e8, dtype=logits.dtype, device=logits.device))
            return torch.softmax(logits - logits.logsumexp(dim=-1, keepdim=True), dim=-1)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "checkpoint": self.checkpoint, "sha256": self.sha256,
                "deterministic": self.deterministic, **({} if self.deterministic else {"seed": self.seed})}


def observation_settings(space: spaces.Dict) -> dict[str, Any]:
    """The env arguments ``max_candidates`` and ``observability`` that give a policy's observation ``space``."""
    if "candidates" not in space.spaces:  # a bare KeyError: 'candidates'
        raise ValueError(f"the policy's observations {sorted(space.spaces)} have no 'candidates' block: it was trained "
                         "on another env than DynaSched/DFJSP-v0")
    slots, columns = space["candidates"].shape
    widths = {level: num_columns(CANDIDATE_FEATURES, i) for i, level in enumerate(OBSERVABILITY)}
    level = next((level for level, width in widths.items() if width == columns), None)
    if level is None:  # a bare StopIteration, raised out of make("ppo", ...)
        raise ValueError(f"the policy's candidate rows have {columns} columns, those of DynaSched/DFJSP-v0 {widths} "
                         "by observability: it was trained on observations of another env or version")
    return {"max_candidates": int(slots), "observability": level}


def _check_pair_policy(model: MaskablePPO, label: str) -> None:
    """Refuse a policy whose actions are not the candidate slots of its observations: it was trained on another env
    (the rule-selection env, whose actions are its composite rules), and no env setting makes it a pair policy."""
    actions, candidates = model.action_space, model.observation_space.spaces.get("candidates")
    if candidates is None or (isinstance(actions, spaces.Discrete) and actions.n == candidates.shape[0]):
        return
    trained = (f"the rule-selection env DynaSched/DFJSP-Rules-v0 (one action per composite rule, {COMPOSITE_RULES})"
               if isinstance(actions, spaces.Discrete) and actions.n == len(COMPOSITE_RULES) else "another env")
    raise ValueError(f"the PPO policy {label} acts in {actions}, not in the {candidates.shape[0]} candidate slots of "
                     f"its observations: it was trained on {trained}, and PPOAgent plays pair-selection policies of "
                     "DynaSched/DFJSP-v0 (no env setting changes that); play it with model.predict(observation, "
                     "action_masks=env.action_masks()) on the env it was trained on")


def _check_fair_actor(model: MaskablePPO, label: str) -> None:
    """Refuse a policy with ``hindsight_forecasts`` in its observations whose actor reads them (any but
    ``SlotPolicy(critic_hindsight=True)``): it learned to act on the real future, which the agent replaces by zeros."""
    policy = model.policy
    if HINDSIGHT_KEY in model.observation_space.spaces and not getattr(policy, "critic_hindsight", False):
        raise ValueError(f"the PPO policy {label} reads {HINDSIGHT_KEY!r}, the real future, in its actor too: "
                         f"{type(policy).__name__} feeds every observation key to both actor and critic, and only "
                         "SlotPolicy(critic_hindsight=True) keeps that block from its actor; train it with that "
                         "policy, or without critic_hindsight")


def _check_space(actual: spaces.Dict, expected: spaces.Dict) -> None:
    """Refuse an env whose observations are not the ones the policy was trained on."""
    if actual != expected:
        shapes = [{key: space.shape for key, space in s.spaces.items()} for s in (actual, expected)]
        raise ValueError(f"the env's observation space {shapes[0]} is not the policy's {shapes[1]}: use the "
                         "observability, max_candidates and number of machines it was trained with")
