"""Stable-Baselines3 ``VecEnv`` adapter of the DFJSP vector environments (needs the ``rl`` extra).

This module imports ``stable_baselines3``; nothing else in :mod:`dynasched_gym.envs` does.

Example:
    >>> from stable_baselines3 import PPO
    >>> from dynasched_gym.envs.sb3 import make_sb3_vec_env
    >>> venv = make_sb3_vec_env("DynaSched/DFJSP-v0", num_envs=8, flatten=True, instance="ta01")
    >>> PPO("MlpPolicy", venv).learn(10_000)
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, VectorWrapper

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym.checks import check_arguments, check_bool, check_integer, keyword_arguments
from dynasched_gym.core.rules import rule_list
from dynasched_gym.envs.dfjsp.env import ENV_ARGUMENTS_DOCS, DFJSPEnv
from dynasched_gym.envs.dfjsp.vector import (
    SINGLE_ATTRIBUTES,
    DFJSPVectorEnv,
    check_actions,
    dfjsp_unwrapped,
    is_sub_env_method,
    sub_env_results,
)
from dynasched_gym.envs.futures import MAX_FUTURES
from dynasched_gym.envs.wrappers import ForecastFeaturesVector, ForecastRewardVector, flat_space, flatten
from dynasched_gym.errors import needs_extra
from dynasched_gym.registration import ENV_SPECS

with needs_extra("rl", "dynasched_gym.envs.sb3"):
    from stable_baselines3.common.vec_env import VecMonitor
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn


def env_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-environment ``i``'s info from Gymnasium's vector ``infos`` (arrays over sub-environments, dicts of them
    nested; a ``_key`` mask, where there is one, says which hold ``key``): its row of each, NumPy scalars as Python
    ones."""
    info: dict[str, Any] = {}
    for key, value in infos.items():
        mask = infos.get(f"_{key}")
        if key.startswith("_") or (mask is not None and not mask[i]):
            continue
        if isinstance(value, dict):  # RecordEpisodeStatistics' episode masks only the dict, not its arrays
            info[key] = env_info(value, i)
        else:
            item = value[i] if isinstance(value, np.ndarray) else value
            info[key] = item.item() if isinstance(item, np.generic) else item
    return info


class SB3VecEnv(VecEnv):
    """A :class:`~dynasched_gym.envs.dfjsp.vector.DFJSPVectorEnv` behind SB3's ``VecEnv`` API.

    SB3 resets a finished sub-environment within the same step and passes the last observation as
    ``info["terminal_observation"]``, so the wrapped vector env must use
    ``autoreset_mode=SAME_STEP`` (:func:`make_sb3_vec_env` sets it). Per-env infos carry
    ``invalid_actions``, and at an episode's end ``TimeLimit.truncated`` (``True`` only for an episode cut by the
    vector env's ``max_episode_steps``) and, when it terminated, ``metrics`` (the schedule's metrics) and ``ssi``, and
    the keys a Gymnasium vector wrapper adds (``RecordEpisodeStatistics``' ``episode``), each sub-environment's row.

    ``env_method(name)`` calls the vector env's method once and returns its per-env results (rows),
    so ``env_method("action_masks")`` gives the masks sb3-contrib's ``MaskablePPO`` needs; a method of one
    sub-environment (``schedule(index)``, ``offered_pairs(index)``, ...) is called for each index.
    ``get_attr`` returns each sub-environment's value (``time_scale``, ``instance``, ...) or the vector env's attribute
    for every index; ``set_attr`` sets the vector env's attribute for all of them.

    Args:
        venv: the vector env (``SAME_STEP`` autoreset).
        flatten: give flat float32 observations (:class:`~dynasched_gym.envs.wrappers.FlattenDictObservation`
            layout) instead of the ``Dict``.
        keep_mask: with ``flatten``, append the action mask to the vector.
    """

    def __init__(self, venv: DFJSPVectorEnv | VectorWrapper, flatten: bool = False,
                 keep_mask: bool = True) -> None:
        dfjsp_unwrapped(venv, "SB3VecEnv", vector=True)
        if venv.metadata["autoreset_mode"] != AutoresetMode.SAME_STEP:
            raise ValueError("SB3VecEnv needs a vector env with autoreset_mode=AutoresetMode.SAME_STEP "
                             "(SB3 resets finished environments within the step)")
        self.venv = venv
        self.flatten = check_bool("flatten", flatten)
        self.keep_mask = check_bool("keep_mask", keep_mask)
        if not self.keep_mask and not self.flatten:  # each option applies to the one it names
            raise ValueError("keep_mask=False leaves the action mask out of flat observations, and flatten=False keeps "
                             "the Dict ones, whose 'action_mask' stays: pass flatten=True too, or leave keep_mask out")
        space = venv.single_observation_space
        super().__init__(venv.num_envs, flat_space(space, keep_mask) if flatten else space, venv.single_action_space)
        self._actions = np.zeros(venv.num_envs, dtype=np.int64)

    def _observation(self, observation: dict[str, np.ndarray], batched: bool = True) -> VecEnvObs:
        if not self.flatten:
            return observation
        return flatten(observation, self.keep_mask, self.num_envs if batched else None)

    def reset(self) -> VecEnvObs:
        """Reset every sub-environment, with the seeds / options set by ``seed()`` / ``set_options()`` (one
        ``instance`` per sub-environment: ``set_options([{"instance": a}, {"instance": b}, ...])``)."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        observation, infos = self.venv.reset(seed=seeds, options=self._vector_options())
        self.reset_infos = [{"tier": infos["tier"][i]} for i in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return self._observation(observation)

    def _vector_options(self) -> dict[str, Any] | None:
        """The per-sub-environment options of ``set_options`` as the vector env's ``reset`` options."""
        options = [dict(o or {}) for o in self._options]
        if all(o == options[0] for o in options):
            return options[0] or None
        unknown = set().union(*options) - {"instance"}
        if unknown:
            raise ValueError(f"set_options gave the sub-environments different options {sorted(unknown, key=repr)}: "
                             "only 'instance' may differ between them (the vector env's other options are shared)")
        return {"instance": [o.get("instance") for o in options]}

    def step_async(self, actions: np.ndarray) -> None:
        """Store the actions for :meth:`step_wait` (integers, one per sub-environment: 1.7 is refused, not slot 1)."""
        self._actions = check_actions(actions, self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every sub-environment; finished ones are reset (SB3 semantics)."""
        observation, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        # every key, those a wrapper adds too (RecordEpisodeStatistics' episode); the reset's go to reset_infos
        step_infos = {key: value for key, value in infos.items() if key not in ("final_obs", "final_info", "tier")}
        env_infos = [env_info(step_infos, i) for i in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            # the finished episode's last info (the top level's invalid_actions belong to the episode that began)
            env_infos[i].update(env_info(infos["final_info"], i))
            env_infos[i]["terminal_observation"] = self._observation(infos["final_obs"][i], batched=False)
            env_infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            self.reset_infos[i] = {"tier": infos["tier"][i]}
        return self._observation(observation), rewards.astype(np.float32), dones, env_infos

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    def _lookup(self, name: str) -> Any:
        """The vector env's attribute ``name``: of the outermost wrapper that has it (Gymnasium's vector wrappers,
        e.g. ``NormalizeReward``, do not pass attributes on, so ``action_masks`` would be lost under them)."""
        venv = self.venv
        while not hasattr(venv, name):
            if not isinstance(venv, VectorWrapper):
                raise AttributeError(f"the vector env {self.venv} has no attribute {name!r}, nor the envs it wraps")
            venv = venv.env
        return getattr(venv, name)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Each sub-environment's attribute ``attr_name`` at ``indices``, as ``DummyVecEnv`` gives a Gymnasium env's:
        the value of a method of one sub-environment (``time_scale``, ``instance``, ...) for each index, this adapter's
        ``observation_space`` and ``action_space``, any other attribute of the vector env once per index."""
        indices = self._get_indices(indices)
        if attr_name in SINGLE_ATTRIBUTES:
            return [getattr(self, attr_name) for _ in indices]
        value = self._lookup(attr_name)
        if is_sub_env_method(value):
            return [value(i) for i in indices]
        return [value for _ in indices]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the vector env, shared by every sub-environment (so ``indices`` must name them all:
        ``indices=[0]`` set it for every one without a word)."""
        if sorted(self._get_indices(indices)) != list(range(self.num_envs)):
            raise ValueError(f"set_attr({attr_name!r}) sets an attribute of the vector env, shared by its "
                             f"{self.num_envs} sub-environments: it cannot be set for indices={indices!r} only")
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """The results of the vector env's method ``method_name`` at ``indices``: a sub-environment's method (its first
        parameter is ``index``: ``schedule``, ``offered_pairs``, ``time_scale``, ...) is called for each index; any
        other once for all of them, whatever ``indices``, giving one row per sub-environment (``action_masks``) or
        one None each (``close``)."""
        return sub_env_results(self._lookup(method_name), method_name, self._get_indices(indices), self.num_envs,
                               method_args, method_kwargs, f"env_method({method_name!r})",
                               f"venv.unwrapped.venv.{method_name}")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Sub-environments are not gymnasium envs, so they are never wrapped."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One Gantt chart per sub-environment (``render_mode="rgb_array"``)."""
        frames = self.venv.render()
        return [None] * self.num_envs if frames is None else list(frames)


def make_sb3_vec_env(env_id: str | EnvSpec = "DynaSched/DFJSP-v0", num_envs: int = 8, flatten: bool = False,
                     keep_mask: bool = True, forecast_rule: str | Sequence[str] | None = None, hindsight: bool = False,
                     forecast_features: Sequence[str] = (), forecast_futures: int = 0, critic_hindsight: bool = False,
                     **kwargs: Any) -> VecMonitor:
    """An :class:`SB3VecEnv` over ``gym.make_vec(env_id, num_envs, "vector_entry_point", **kwargs)``, in SB3's
    ``VecMonitor`` (finished episodes' ``info["episode"]``, so ``rollout/ep_rew_mean`` and ``ep_len_mean`` are
    logged; the return is of the rewards given, shaped ones included).

    With ``forecast_rule``, rewards come from that rule's forecast of the final objective (with several
    rules, the lowest of their forecasts), seeing the future if ``hindsight``
    (:class:`~dynasched_gym.envs.wrappers.ForecastRewardVector`). With ``forecast_features`` (rollout
    rules), observations carry the fair rollout forecasts of every offered pair
    (:class:`~dynasched_gym.envs.wrappers.ForecastFeaturesVector`), rolled out in ``forecast_futures``
    futures sampled from the env's tier pool (``0``: the future forgotten). With ``critic_hindsight``
    they also carry the same rules' rollouts in the real future (``hindsight_forecasts``), the privileged
    input of an asymmetric critic (``SlotPolicy(critic_hindsight=True)``; ``Dict`` observations only: any other
    policy, ``"MultiInputPolicy"`` too, feeds them to its actor).
    """
    # gym.make_vec takes an EnvSpec too; a "module:" prefix imports the module, imported here already
    spec = env_id if isinstance(env_id, EnvSpec) else gym.registry.get(env_id.split(":")[-1])
    entry = None if spec is None else spec.vector_entry_point
    if spec is not None and entry not in [vector for _, vector, _ in ENV_SPECS.values()] and not (
            isinstance(entry, type) and issubclass(entry, DFJSPVectorEnv)):
        # another env's vector class failed on the autoreset_mode passed below, which the caller never gave
        raise TypeError(f"make_sb3_vec_env adapts the vector envs of {', '.join(ENV_SPECS)}; got {spec.id!r}: SB3's "
                        "make_vec_env vectorizes any other")
    # the vector env's own check names neither the adapter's arguments nor their nearest (flaten=True)
    own = [name for name in inspect.signature(make_sb3_vec_env).parameters if name not in ("env_id", "kwargs")]
    arguments = list(dict.fromkeys([*own, *keyword_arguments(DFJSPVectorEnv), *keyword_arguments(DFJSPEnv)]))
    check_arguments("make_sb3_vec_env", kwargs, arguments, f"help(make_sb3_vec_env); {ENV_ARGUMENTS_DOCS}")
    try:  # 0 or {} meant no features without a word
        forecast_features = () if forecast_features is None else rule_list(forecast_features)
    except TypeError as exc:
        raise TypeError(f"forecast_features: {exc}") from None
    forecast_futures = check_integer("forecast_futures", forecast_futures, 0, MAX_FUTURES)
    check_bool("hindsight", hindsight)
    check_bool("critic_hindsight", critic_hindsight)
    if forecast_futures and not forecast_features:  # each option applies to the one it names
        raise ValueError(f"forecast_futures={forecast_futures} samples futures for the forecast_features rollouts, "
                         "and none are given")
    if hindsight and forecast_rule is None:
        raise ValueError("hindsight=True lets the forecast_rule forecasts see the future, and no forecast_rule is "
                         "given")
    if "autoreset_mode" in kwargs:
        raise ValueError(f"autoreset_mode={kwargs['autoreset_mode']!r}: the SB3 adapter resets each finished "
                         "episode in its final step (AutoresetMode.SAME_STEP), as SB3 expects")
    if critic_hindsight and (flatten or not forecast_features):
        raise ValueError(f"critic_hindsight needs forecast_features (got {list(forecast_features)}) and Dict "
                         f"observations (got flatten={flatten}): a flat policy could not keep it from its actor")
    if kwargs.get("copy", True) is not True and not flatten:
        raise ValueError(f"copy={kwargs['copy']!r} hands SB3 the env's observation buffers, which each step "
                         "overwrites: SB3 keeps an observation across the next step, so its rollout buffer would "
                         "store the wrong ones; leave copy=True (or flatten=True, which builds new arrays)")
    venv = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                        autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    if forecast_features:
        venv = ForecastFeaturesVector(venv, forecast_features, forecast_futures)
    if critic_hindsight:
        venv = ForecastFeaturesVector(venv, forecast_features, hindsight=True)
    if forecast_rule is not None:  # "" or [] was read as None (no forecast reward) without a word: refused there
        venv = ForecastRewardVector(venv, forecast_rule, hindsight)
    return VecMonitor(SB3VecEnv(venv, flatten=flatten, keep_mask=keep_mask))
