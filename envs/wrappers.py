"""Wrappers of the DFJSP environments: flat observations for MLP policies, observability ablations,
rewards from a dispatching rule's forecast of the final objective, and rollout forecasts of every
offered pair as extra observation features.

Episode statistics need no wrapper of ours: Gymnasium's
:class:`~gymnasium.wrappers.RecordEpisodeStatistics` (single env) and
:class:`gymnasium.wrappers.vector.RecordEpisodeStatistics` (vector env) record returns and
lengths; the final step's ``info["metrics"]`` carries the schedule's metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from dynasched_gym.checks import check_bool, check_choice, check_integer
from dynasched_gym.core.compiled import ScratchStates
from dynasched_gym.core.lookahead import forecast, objective_value, slot_forecasts
from dynasched_gym.core.rules import parse_deterministic_rule, rule_list
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.envs.dfjsp.features import BIG, BLOCKS, OBSERVABILITY, num_columns
from dynasched_gym.envs.dfjsp.vector import dfjsp_unwrapped
from dynasched_gym.envs.futures import MAX_FUTURES, SampledFutures
from dynasched_gym.metrics import OBJECTIVE_METRICS, OBJECTIVES

FEATURE_KEYS = ("candidates", "machines", "global")
#: Observation key of the rollout forecasts added by :class:`ForecastFeatures`.
FORECASTS_KEY = "forecasts"
#: Observation key of the clairvoyant forecasts added by ``ForecastFeatures(hindsight=True)``: training
#: input of a critic only (:class:`~dynasched_gym.agents.policy.SlotPolicy` ``critic_hindsight``).
HINDSIGHT_KEY = "hindsight_forecasts"


def flat_keys(keep_mask: bool, present: Any = ()) -> tuple[str, ...]:
    """The observation keys a flat observation concatenates, in order (``forecasts`` when in ``present``)."""
    forecasts = (FORECASTS_KEY,) if FORECASTS_KEY in present else ()
    return (*FEATURE_KEYS, *forecasts, *(("action_mask",) if keep_mask else ()))


def flat_space(space: spaces.Dict, keep_mask: bool) -> spaces.Box:
    """The ``Box`` of flat observations of the ``Dict`` observation space ``space``; a ValueError for one with the
    clairvoyant ``hindsight_forecasts``, which a flat vector would either drop (their rollouts paid for nothing) or
    hand to the actor."""
    if HINDSIGHT_KEY in space.spaces:
        raise ValueError(f"the observations hold {HINDSIGHT_KEY!r} (ForecastFeatures(hindsight=True)), a critic's "
                         "training input only: a flat vector would drop them or show the actor the future; keep "
                         "the Dict observations (SlotPolicy with critic_hindsight)")
    lows, highs = [], []
    for key in flat_keys(keep_mask, space.spaces):
        sub = space[key]
        if isinstance(sub, spaces.MultiBinary):
            lows.append(np.zeros(sub.n, dtype=np.float32))
            highs.append(np.ones(sub.n, dtype=np.float32))
        else:
            lows.append(sub.low.ravel())
            highs.append(sub.high.ravel())
    return spaces.Box(np.concatenate(lows), np.concatenate(highs), dtype=np.float32)


def flatten(observation: dict[str, np.ndarray], keep_mask: bool, num_envs: int | None = None) -> np.ndarray:
    """Concatenate a ``Dict`` observation (or, with ``num_envs``, a batch of them) into float32 vectors."""
    keys = flat_keys(keep_mask, observation)
    if num_envs is None:
        return np.concatenate([observation[k].ravel() for k in keys], dtype=np.float32)
    return np.concatenate([observation[k].reshape(num_envs, -1) for k in keys], axis=1, dtype=np.float32)


#: The rollout rules of the forecast features by default (``conf/env/dfjsp.yaml`` trains with the same).
DEFAULT_FORECAST_RULES = ("EDD:EET", "ATC:LWL")


def dict_space(space: spaces.Space, wrapper: str) -> spaces.Dict:
    """``space`` (an env's observation space, a vector env's single one) as the ``Dict`` of the DFJSP envs; a
    TypeError naming ``wrapper`` when it is flat already (a flattening wrapper below ``wrapper``: it goes last)."""
    if not isinstance(space, spaces.Dict):
        raise TypeError(f"{wrapper} wraps an env with the Dict observations of the DFJSP envs, got "
                        f"{type(space).__name__} observations: wrap it before FlattenDictObservation (or "
                        "Gymnasium's FlattenObservation)")
    return space


class _PassMasks:
    """Keeps the wrapped env's ``action_masks()`` (the sb3-contrib convention)."""

    env: gym.Env

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool), from the wrapped env."""
        return self.env.get_wrapper_attr("action_masks")()


class _PassVectorMasks(VectorWrapper):
    """A vector wrapper that keeps the wrapped DFJSP vector env's ``action_masks()``."""

    def _refuse_truncation(self) -> None:
        """The forecast wrappers work on a finished episode's last state, which a ``SAME_STEP`` reset has already
        replaced: they need episodes that end by themselves (no ``max_episode_steps``)."""
        if getattr(self.env.unwrapped, "max_episode_steps", None) is not None:
            raise ValueError(f"{type(self).__name__} needs episodes that end by themselves: make the vector env "
                             f"without max_episode_steps (got {self.env.unwrapped.max_episode_steps})")

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool), from the wrapped vector env."""
        return self.env.unwrapped.action_masks()


class _MaskedWrapper(_PassMasks, gym.ObservationWrapper):
    """An observation wrapper that keeps the env's ``action_masks()``."""


class FlattenDictObservation(_MaskedWrapper, gym.utils.RecordConstructorArgs):
    """One float32 vector per observation, for MLP policies.

    The vector is ``candidates`` (row by row), ``machines`` (row by row), ``global``, ``forecasts``
    (row by row, when a :class:`ForecastFeatures` wrapper below adds them) and, with
    ``keep_mask=True`` (default), ``action_mask`` as 0/1 floats; with ``keep_mask=False`` the mask
    is dropped from the vector (padding slots still show ``valid = 0`` in ``candidates``) and stays
    available through :meth:`action_masks` for masked algorithms.

    Args:
        env: a DFJSP env (``Dict`` observation).
        keep_mask: append the action mask to the vector.
    """

    def __init__(self, env: gym.Env, keep_mask: bool = True) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, keep_mask=keep_mask)
        _MaskedWrapper.__init__(self, env)
        self.keep_mask = check_bool("keep_mask", keep_mask)
        self.observation_space = flat_space(dict_space(env.observation_space, type(self).__name__), keep_mask)

    def observation(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        """The flat vector of ``observation``."""
        return flatten(observation, self.keep_mask)



class ObservabilityWrapper(_MaskedWrapper, gym.utils.RecordConstructorArgs):
    """Zero the feature columns above an observability level (an ablation; the spaces do not change).

    Wrapping an ``oracle`` env with ``observability="full"`` shows a policy trained with oracle
    features what it would see without the future events, at the same observation shape.

    Args:
        env: a DFJSP env (``Dict`` observation).
        observability: ``concise`` or ``full`` (or ``oracle``, which changes nothing).
    """

    def __init__(self, env: gym.Env, observability: str) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, observability=observability)
        _MaskedWrapper.__init__(self, env)
        dict_space(env.observation_space, type(self).__name__)
        check_choice("observability", observability, OBSERVABILITY)
        self.observability = observability
        level = OBSERVABILITY.index(observability)
        self._shown = {key: num_columns(BLOCKS[key], level) for key in FEATURE_KEYS}

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``observation`` with the hidden columns set to 0 (in place: the env returns fresh arrays)."""
        for key, shown in self._shown.items():
            observation[key][..., shown:] = 0.0
        return observation


def _potential_rules(rule: str | Sequence[str]) -> tuple[str, ...]:
    """The rules of a forecast reward's potential from its ``rule`` argument: one ``JOB:MACHINE`` rule or several."""
    rules = rule_list(rule)
    if not rules:
        raise ValueError("a forecast reward needs at least one rule")
    return rules


class _Forecaster(ScratchStates):
    """The lowest of some rules' forecasts of the final objective from a simulator's state."""

    def __init__(self, rules: Sequence[str], objective: str, hindsight: bool, num_envs: int) -> None:
        super().__init__(num_envs)
        self.codes = [parse_deterministic_rule(rule, "forecast reward rules") for rule in rules]
        self.objective = OBJECTIVES.index(objective)
        self.hindsight = check_bool("hindsight", hindsight)

    def __call__(self, i: int, sim: Simulator) -> float:
        scratch = self.get(sim.static, i)
        return min(float(forecast(sim.static, sim.state, scratch, job_rule, machine_rule, self.objective,
                                  self.hindsight)) for job_rule, machine_rule in self.codes)


class SlotForecaster(ScratchStates):
    """Rollout forecasts of every offered pair (:func:`dynasched_gym.core.lookahead.slot_forecasts`).

    For each offered pair and each rollout rule: the objective if the pair starts now and the rule
    finishes the schedule, knowing only the present (the lookahead agent's rollouts), as two
    columns: its gap to the best pair under that rule, and its increase over the objective of the
    jobs completed so far, both divided by the features' time unit tau (docs/environments.md).

    With ``sampled`` futures the rollouts play the present followed by sampled futures instead of an empty
    one, and the objective is their mean (:class:`~dynasched_gym.envs.futures.SampledFutures`). With
    ``hindsight`` they play the instance's real future instead: privileged information, for a critic in
    training only.

    Args:
        rules: the rollout rules, ``JOB:MACHINE`` each.
        objective: the env's objective.
        num_envs: how many envs (scratch states) it serves.
        sampled: the sampled futures (serving ``num_envs`` envs), or ``None``: the future forgotten.
        hindsight: roll out in the real future (not with ``sampled``).
    """

    def __init__(self, rules: Sequence[str], objective: str, num_envs: int = 1,
                 sampled: SampledFutures | None = None, hindsight: bool = False) -> None:
        super().__init__(num_envs)
        if not rules:
            raise ValueError("SlotForecaster needs at least one rollout rule")
        if hindsight and sampled is not None:
            raise ValueError(f"hindsight forecasts play the real future: they cannot also play {sampled!r}")
        self.rules = tuple(rules)
        self.codes = np.array([parse_deterministic_rule(rule, "forecast rules") for rule in self.rules],
                              dtype=np.int64)
        self.objective = OBJECTIVES.index(objective)
        self.sampled = sampled
        self.hindsight = hindsight

    @property
    def future_pool(self) -> tuple[str, str] | None:
        """(tier, size) of the pool the futures are sampled from; ``None`` when none are."""
        return None if self.sampled is None else (self.sampled.tier, self.sampled.size)

    def __call__(self, i: int, sim: Simulator, slot_job: np.ndarray, slot_machine: np.ndarray, time_scale: float,
                 out: np.ndarray | None = None) -> np.ndarray:
        """The (K, 2R) float32 forecasts of env ``i``'s offered pairs (``-1``: padding, rows of 0), in units
        of the env's ``time_scale``, clipped to [-BIG, BIG] as every feature is (the block's space)."""
        if out is None:
            out = np.zeros((slot_job.shape[0], 2 * len(self.rules)), dtype=np.float32)
        if self.sampled is None:
            slot_forecasts(sim.static, sim.state, self.get(sim.static, i), slot_job, slot_machine, self.codes,
                           self.objective, self.hindsight, time_scale, out)
        else:
            out[:] = 0.0
            offered = np.flatnonzero(slot_job >= 0)
            if offered.size:
                values = self.sampled.pair_values(sim, slot_job[offered], slot_machine[offered], offered.size,
                                                  self.codes, self.objective, i)
                out[offered, 0::2] = (values - values.min(axis=0)) / time_scale
                out[offered, 1::2] = (values - objective_value(sim.static, sim.state, self.objective)) / time_scale
        return np.clip(out, -BIG, BIG, out=out)


def forecaster(env: Any, rules: Sequence[str], futures: int, num_envs: int,
               future_pool: tuple[str, str] | None = None, hindsight: bool = False) -> SlotForecaster:
    """The :class:`SlotForecaster` of a DFJSP env or vector env (unwrapped) for ``rules``, in ``futures``
    futures sampled from the tier pool ``future_pool`` = (tier, size), by default the env's (``futures=0``:
    the future forgotten; ``hindsight``: the real future)."""
    futures, hindsight = check_integer("futures", futures, 0, MAX_FUTURES), check_bool("hindsight", hindsight)
    if future_pool is not None and (not isinstance(future_pool, Sequence) or isinstance(future_pool, str)
                                    or len(future_pool) != 2):
        raise TypeError(f"future_pool must be a (tier, size) pair such as ('hard', 'small') or None, got "
                        f"{future_pool!r}")
    if hindsight and futures:  # before the futures are sampled: an env without a tier failed with "no tier" first
        raise ValueError(f"hindsight forecasts play the real future: they cannot also play futures={futures} "
                         "sampled ones (futures must be 0)")
    sampled = SampledFutures(futures, *(future_pool or env.source.future_pool()), slots=num_envs) if futures else None
    return SlotForecaster(rules, env.config.objective, num_envs, sampled, hindsight)


def with_forecast_space(space: spaces.Dict, rules: Sequence[str], key: str = FORECASTS_KEY) -> spaces.Dict:
    """``space`` (a DFJSP ``Dict`` observation space) with the forecast block ``key`` of ``rules`` added."""
    block = spaces.Box(-BIG, BIG, shape=(space["candidates"].shape[0], 2 * len(rules)), dtype=np.float32)
    return spaces.Dict({**space.spaces, key: block})


class ForecastFeatures(_MaskedWrapper, gym.utils.RecordConstructorArgs):
    """Add ``forecasts`` (K, 2R) to the observation: fair rollout forecasts of every offered pair.

    Column ``2r`` is how much worse than the best offered pair the pair ends the schedule when
    rollout rule ``r`` finishes it, column ``2r + 1`` what it adds to the objective so far (both /
    tau; padding rows 0). The rollouts forget the future as the lookahead agent's do
    (:class:`SlotForecaster`), so the features show only the present. A policy trained with them
    is a learned lookahead; it costs ``R`` rollouts per offered pair per step.

    With ``hindsight=True`` the block is ``hindsight_forecasts`` (:data:`HINDSIGHT_KEY`) instead: the same
    columns from rollouts that play the instance's real future. It is privileged information for an
    asymmetric critic in training (``SlotPolicy(critic_hindsight=True)``, whose actor never reads it).

    Args:
        env: a ``DynaSched/DFJSP-v0`` env (``Dict`` observation), possibly wrapped.
        rules: the rollout rules, ``JOB:MACHINE`` each.
        futures: roll out in this many futures sampled from a tier pool instead of an empty one, the
            objective averaged over them (:class:`~dynasched_gym.envs.futures.SampledFutures`); ``0``:
            the future forgotten.
        future_pool: (tier, size) of that pool; ``None``: the env's.
        hindsight: roll out in the real future, into ``hindsight_forecasts`` (``futures`` must be 0).
    """

    def __init__(self, env: gym.Env, rules: str | Sequence[str] = DEFAULT_FORECAST_RULES, futures: int = 0,
                 future_pool: tuple[str, str] | None = None, hindsight: bool = False) -> None:
        rules = rule_list(rules)
        gym.utils.RecordConstructorArgs.__init__(self, rules=rules, futures=futures, future_pool=future_pool,
                                                 hindsight=hindsight)
        _MaskedWrapper.__init__(self, env)
        unwrapped = dfjsp_unwrapped(env, type(self).__name__)
        self._forecaster = forecaster(unwrapped, rules, futures, 1, future_pool, hindsight)  # checks them all
        self.rules, self.futures, self.key = rules, futures, HINDSIGHT_KEY if hindsight else FORECASTS_KEY
        self.future_pool = self._forecaster.future_pool  # resolved: the env's pool when none is given
        self.observation_space = with_forecast_space(dict_space(env.observation_space, type(self).__name__), self.rules,
                                                     self.key)

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``observation`` with its forecast block."""
        env = self.env.unwrapped
        observation[self.key] = self._forecaster(0, env.simulator, *env.offered_pairs(), env.time_scale)
        return observation


class ForecastFeaturesVector(_PassVectorMasks):
    """:class:`ForecastFeatures` for the DFJSP vector envs (also on ``info["final_obs"]``).

    Args:
        env: a DFJSP vector env.
        rules: the rollout rules, ``JOB:MACHINE`` each.
        futures, future_pool, hindsight: as for :class:`ForecastFeatures`.
    """

    def __init__(self, env: VectorEnv, rules: str | Sequence[str] = DEFAULT_FORECAST_RULES, futures: int = 0,
                 future_pool: tuple[str, str] | None = None, hindsight: bool = False) -> None:
        super().__init__(env)
        unwrapped = dfjsp_unwrapped(env, type(self).__name__, vector=True)
        space = dict_space(env.single_observation_space, type(self).__name__)
        self._refuse_truncation()
        self.rules = rule_list(rules)
        self._forecaster = forecaster(unwrapped, self.rules, futures, env.num_envs, future_pool, hindsight)
        self.futures, self.key = futures, HINDSIGHT_KEY if hindsight else FORECASTS_KEY
        self.future_pool = self._forecaster.future_pool  # resolved: the env's pool when none is given
        self.single_observation_space = with_forecast_space(space, self.rules, self.key)
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)

    def _add(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        venv = self.env.unwrapped
        out = np.zeros((self.num_envs, *self.single_observation_space[self.key].shape), dtype=np.float32)
        for i in range(self.num_envs):
            self._forecaster(i, venv.simulator(i), *venv.offered_pairs(i), venv.time_scale(i), out=out[i])
        observation[self.key] = out
        return observation

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset; the first observations with their forecasts."""
        observation, infos = self.env.reset(**kwargs)
        return self._add(observation), infos

    def step(self, actions: Any) -> tuple[Any, Any, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step; the observations with their forecasts (final observations: rows of 0, nothing is offered)."""
        observation, rewards, terminated, truncated, infos = self.env.step(actions)
        if "final_obs" in infos:
            shape = self.single_observation_space[self.key].shape
            for final in infos["final_obs"]:
                if isinstance(final, dict):
                    final[self.key] = np.zeros(shape, dtype=np.float32)
        return self._add(observation), rewards, terminated, truncated, infos


class ForecastReward(_PassMasks, gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Rewards from a rule's forecast of the final objective instead of the objective accrued so far.

    The potential after each step is the objective ``rule`` would reach if it finished the schedule
    from there (an in-kernel rollout, :func:`dynasched_gym.core.lookahead.forecast`), or with several
    rules the lowest of their forecasts (a tighter estimate of what is still reachable); the reward is
    ``-reward_scale * (phi_after - phi_before)``. At the end ``phi`` is the final objective, so an
    episode's rewards sum to ``-reward_scale * (objective - phi_start)``: the env's return up to a
    constant of the instance, so the optimal policies are unchanged, but each step is credited with
    how much it changed the forecast, which cuts the variance of policy-gradient estimates.

    By default the rollout knows only the present (no future event or unreleased job), as the
    lookahead's do. With ``hindsight=True`` it plays the instance's real future: the reward of a
    step is then how much better (or worse) the episode ends than had the rule taken over before
    it, an unbiased and far less noisy training signal. It is privileged information for the
    *reward* only, like a Monte-Carlo return; the observations never show the future.

    Args:
        env: a ``DynaSched/DFJSP-v0`` (or ``FJSP-v0``) env, possibly wrapped.
        rule: the forecasting rule ``JOB:MACHINE``, or a sequence of them.
        hindsight: let the forecast see the future (training rewards only).
    """

    def __init__(self, env: gym.Env, rule: str | Sequence[str] = "EDD:EET", hindsight: bool = False) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, rule=rule, hindsight=hindsight)
        gym.Wrapper.__init__(self, env)
        config = dfjsp_unwrapped(env, type(self).__name__).config
        self.potential_rules, self.hindsight = _potential_rules(rule), check_bool("hindsight", hindsight)
        self._forecaster = _Forecaster(self.potential_rules, config.objective, self.hindsight, 1)
        self._scale = config.reward_scale
        self._phi = 0.0
        self._ended = False

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset the env and forecast from its first decision."""
        observation, info = self.env.reset(**kwargs)
        self._phi = self._forecaster(0, self.env.unwrapped.simulator)
        self._ended = False
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step the env; the reward is the change of the forecast (0 on a reset step of an ``Autoreset`` below)."""
        observation, _, terminated, truncated, info = self.env.step(action)
        phi = self._forecaster(0, self.env.unwrapped.simulator)
        # a step after the episode's end reset it below this wrapper (gymnasium's Autoreset): the new episode's first
        # forecast is no change of the old one's final objective
        reward = 0.0 if self._ended else self._scale * (self._phi - phi)  # +0.0, not -0.0, for no change
        self._phi, self._ended = phi, terminated or truncated
        return observation, reward, terminated, truncated, info


class ForecastRewardVector(_PassVectorMasks):
    """:class:`ForecastReward` for the DFJSP vector envs (``SAME_STEP`` or ``NEXT_STEP`` autoreset).

    Args:
        env: a DFJSP vector env (``gym.make_vec(..., vectorization_mode="vector_entry_point")``).
        rule: the forecasting rule ``JOB:MACHINE``, or a sequence of them.
        hindsight: let the forecast see the future (training rewards only).
    """

    def __init__(self, env: VectorEnv, rule: str | Sequence[str] = "EDD:EET", hindsight: bool = False) -> None:
        super().__init__(env)
        config = dfjsp_unwrapped(env, type(self).__name__, vector=True).config
        self._refuse_truncation()
        self._mode = AutoresetMode(env.metadata["autoreset_mode"])
        if self._mode == AutoresetMode.DISABLED:
            raise ValueError("ForecastRewardVector needs autoreset_mode SAME_STEP or NEXT_STEP, not DISABLED")
        self.potential_rules, self.hindsight = _potential_rules(rule), check_bool("hindsight", hindsight)
        self._forecaster = _Forecaster(self.potential_rules, config.objective, self.hindsight, env.num_envs)
        self._metric = OBJECTIVE_METRICS[config.objective]
        self._scale = config.reward_scale
        self._phi = np.zeros(env.num_envs)
        self._ended = np.zeros(env.num_envs, dtype=bool)

    def _forecast(self, i: int) -> float:
        return self._forecaster(i, self.env.unwrapped.simulator(i))

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset every env (or those of ``options["reset_mask"]``) and forecast from its first decision."""
        observation, infos = self.env.reset(**kwargs)
        mask = (kwargs.get("options") or {}).get("reset_mask")
        for i in range(self.num_envs) if mask is None else np.flatnonzero(mask):
            self._phi[i] = self._forecast(i)
            self._ended[i] = False
        return observation, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env; rewards are the changes of the forecasts (0 on a ``NEXT_STEP`` reset step)."""
        observation, rewards, terminated, truncated, infos = self.env.step(actions)
        done = terminated | truncated
        shaped = np.zeros(self.num_envs, dtype=np.asarray(rewards).dtype)
        for i in range(self.num_envs):
            if self._ended[i]:  # NEXT_STEP: this step reset env i
                self._phi[i] = self._forecast(i)
                continue
            if done[i] and self._mode == AutoresetMode.SAME_STEP:
                end = float(infos["final_info"]["metrics"][self._metric][i])
                shaped[i] = self._scale * (self._phi[i] - end)
                self._phi[i] = self._forecast(i)
                continue
            phi = self._forecast(i)
            shaped[i] = self._scale * (self._phi[i] - phi)
            self._phi[i] = phi
        self._ended = done if self._mode == AutoresetMode.NEXT_STEP else self._ended
        return observation, shaped, terminated, truncated, infos
