"""Gymnasium environments of the Dynamic Flexible Job Shop Scheduling Problem.

- :class:`DFJSPEnv` (``DynaSched/DFJSP-v0``): at each decision point the agent picks one of the
  offered (operation, machine) pairs.
- :class:`DFJSPRulesEnv` (``DynaSched/DFJSP-Rules-v0``): the agent picks a dispatching rule, which
  picks the pair.
- :class:`FJSPEnv` (``DynaSched/FJSP-v0``): :class:`DFJSPEnv` on a fixed instance (default mk01).

Every step is one numba call (:mod:`.kernels`); the semantics of the simulation are those of
``docs/semantics.md`` and the observation, reward and options are documented in
``docs/environments.md``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, overload

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dynasched_gym.checks import check_arguments, check_integer, keyword_arguments
from dynasched_gym.core.kernels import DONE, ERR_INVALID_ACTION
from dynasched_gym.core.rules import COMPOSITE_RULES
from dynasched_gym.core.simulator import Simulator, check_code
from dynasched_gym.envs.dfjsp.batch import EnvBatch
from dynasched_gym.envs.dfjsp.episodes import InstanceSource, InstanceSpec, final_info
from dynasched_gym.envs.dfjsp.features import (
    CANDIDATE_FEATURES,
    GLOBAL_FEATURES,
    MACHINE_FEATURES,
    Feature,
    bounds,
)
from dynasched_gym.envs.dfjsp.kernels import reset_batch, step_first
from dynasched_gym.envs.dfjsp.types import (
    ACTION_PAIR,
    ACTION_RULE,
    K_CODE,
    K_INVALID,
    S_OPS_SCALE,
    S_REWARD,
    S_TIME_SCALE,
    EnvConfig,
    Observation,
)
from dynasched_gym.instance import Instance
from dynasched_gym.schedule import Schedule

RENDER_MODES = ("human", "rgb_array", "ansi")
#: Where an unknown argument's error sends the reader.
ENV_ARGUMENTS_DOCS = "docs/environments.md, 'Arguments'"


class InvalidActionError(ValueError):
    """An action that is not valid now, under ``invalid_action="raise"``."""


def copy_refused(env: object, instance: str, simulator: str) -> TypeError:
    """The error of pickling or copying ``env``, whose numba batch buffers cannot be: it says how to branch the
    simulation instead, from ``instance`` and ``simulator`` (how the reader's code reaches them)."""
    return TypeError(f"{type(env).__name__} cannot be pickled or copied (it holds numba state). To branch the "
                     f"simulation (search, MCTS): branch = dynasched_gym.Simulator({instance}); branch.reset(); "
                     f"branch.restore({simulator}.snapshot()), then step the branch")


def _refuse_vector_arguments(cls: type, kwargs: dict[str, Any]) -> None:
    """Raise a TypeError naming the first of ``kwargs`` that belongs to ``cls``'s vector env and where it goes: the
    nearest of the single env's arguments misled (make_vec(..., vectorization_mode="sync", autoreset_mode=...): "did
    you mean 'render_mode'?")."""
    from dynasched_gym.envs.dfjsp import vector  # it imports this module

    base = vector.DFJSPVectorEnv
    vector_class = next((c for c in base.__subclasses__() if c.env_class is cls), base)
    for name in kwargs:
        if name in keyword_arguments(vector_class):
            raise TypeError(f"{cls.__name__} got {name!r}, an argument of the vector env {vector_class.__name__}, "
                            "not of a single env: gym.make_vec(..., vectorization_mode='vector_entry_point') passes it "
                            "on; the 'sync' and 'async' modes take Gymnasium's autoreset_mode and copy in "
                            "vector_kwargs={...}")


def _block(table: tuple[Feature, ...], level: int, rows: int | None) -> spaces.Box:
    low, high = bounds(table, level)
    if rows is not None:
        low, high = np.tile(low, (rows, 1)), np.tile(high, (rows, 1))
    return spaces.Box(low, high, dtype=np.float32)


def make_spaces(config: EnvConfig, num_machines: int) -> tuple[spaces.Dict, spaces.Discrete]:
    """The observation and action spaces of an env with ``config`` on ``num_machines`` machines."""
    level = config.level
    observation = spaces.Dict({
        "candidates": _block(CANDIDATE_FEATURES, level, config.max_candidates),
        "machines": _block(MACHINE_FEATURES, level, num_machines),
        "global": _block(GLOBAL_FEATURES, level, None),
        "action_mask": spaces.MultiBinary(config.num_actions),
    })
    return observation, spaces.Discrete(config.num_actions)


class DFJSPEnv(gym.Env[Observation, np.int64]):
    """Dynamic flexible job shop scheduling: pick the (operation, machine) pair to start now.

    ## Episode
    An episode simulates one instance from time 0 until every job is completed or cancelled.
    The env stops at each decision point (some operation can start on some machine now); the agent
    picks one of the offered pairs, which starts at once, and the simulator advances to the next
    decision point (``docs/semantics.md``). Episodes always end (``terminated``); nothing truncates.

    ## Action space
    ``Discrete(max_candidates)``: the index of an action slot. Slot ``k`` is row ``k`` of
    ``observation["candidates"]``; the slots hold the pairs that can start now, longest-waiting
    job first, and ``action_mask`` (or :meth:`action_masks`) marks the offered ones. When more
    pairs can start than there are slots, only the ``max_candidates`` longest-waiting are offered.

    ## Observation space
    ``Dict`` with ``candidates`` (K, F_c), ``machines`` (M, F_m), ``global`` (F_g,) float32 and
    ``action_mask`` (K,) int8. Features and their scaling: :mod:`~dynasched_gym.envs.dfjsp.features`
    and ``docs/environments.md``. The shapes are fixed at construction from the first instance:
    a later instance must have the same number of machines M.

    ## Rewards
    Potential-based: ``reward = -reward_scale * (phi_after - phi_before)`` with ``phi = 0``
    before the first step, so an episode's rewards sum to ``-reward_scale`` times the objective's
    final metric (``makespan``, ``total_tardiness``, ``total_weighted_tardiness`` or
    ``mean_flow_time`` of :attr:`dynasched_gym.Schedule.metrics`).

    ## Info
    ``reset``: ``tier`` (``None`` for an explicit instance), ``invalid_actions`` (0). ``step``:
    ``invalid_actions`` (replaced invalid actions so far in the episode); on the final step also ``metrics``
    (the schedule's metrics) and ``ssi`` (the instance's SSI score or ``None``: it rates the whole instance,
    its future events included, so it comes only once the episode is over).

    Args:
        tier: tier of the instance pool to draw from when ``instance`` is ``None``
            (``easy | medium | hard | extreme``; ``None``: ``medium``). With ``instance``, the tier that instance
            belongs to: the pool of sampled futures (lookahead ``futures``, ``ForecastFeatures(futures=N)``),
            which are refused when it is ``None``.
        size: size of the tier pool (with ``instance``: of the sampled futures' pool).
        instance: a fixed instance: an :class:`~dynasched_gym.Instance`, a path, or an embedded
            name (``mk01``..``mk10``, ``ta01``, ``dsbx-medium``); played instead of pool draws.
        objective: ``makespan | tardiness | weighted_tardiness | flow_time``.
        observability: ``concise`` (local and realised), ``full`` (adds structure: bottlenecks and
            utilisation) or ``oracle`` (adds future events; a clairvoyant ablation).
        max_candidates: number of action slots K.
        breakdown_policy: ``resume`` or ``restart`` overrides the instances' policy.
        invalid_action: ``replace`` plays slot 0 (the longest-waiting offered pair) instead of an
            invalid action and counts it in ``info["invalid_actions"]``; ``raise`` raises
            :class:`InvalidActionError` and leaves the state unchanged.
        reward_scale: positive factor of every reward.
        time_scale: time unit of the features; ``None``: fixed before each episode from what is known then
            (a tier draw's plant, else the jobs of the instance's first release; docs/environments.md).
        ops_scale: unit of the features' operation counts; ``None``: fixed before each episode, as ``tau``.
        render_mode: ``human``, ``rgb_array`` (Gantt chart) or ``ansi`` (text).
        pool_start: the first pool seed episodes draw: 0 (the default) for the seeds PPO trains on,
            e.g. 10_000 for held-out test instances.
        pool_size: a tier pool's episodes draw its instances of seeds ``pool_start .. pool_start + pool_size - 1``;
            each is generated once and cached on disk (build them ahead with ``tier_pool(...).prepare``).

    Example:
        >>> import gymnasium as gym, dynasched_gym
        >>> env = gym.make("DynaSched/DFJSP-v0", instance="mk01")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(0)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": 4}
    action_kind = ACTION_PAIR

    def __new__(cls, *args: Any, **kwargs: Any) -> DFJSPEnv:
        # Python's TypeError names an unknown argument (gym.make(..., teir="hard")) but not the env's arguments
        arguments = keyword_arguments(DFJSPEnv)
        if any(name not in arguments for name in kwargs):
            _refuse_vector_arguments(cls, kwargs)
        check_arguments(cls.__name__, kwargs, arguments, ENV_ARGUMENTS_DOCS)
        return super().__new__(cls)

    def __init__(
        self,
        tier: str | None = None,
        size: str = "small",
        instance: InstanceSpec | None = None,
        objective: str = "makespan",
        observability: str = "concise",
        max_candidates: int = 32,
        breakdown_policy: str | None = None,
        invalid_action: str = "replace",
        reward_scale: float = 1.0,
        time_scale: float | None = None,
        ops_scale: float | None = None,
        render_mode: str | None = None,
        pool_size: int = 1000,
        pool_start: int = 0,
    ) -> None:
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.config = EnvConfig(self.action_kind, objective, observability, max_candidates, invalid_action,
                                reward_scale, time_scale, ops_scale)
        self.source = InstanceSource(instance, tier, size, breakdown_policy, pool_size, pool_start)
        probe = self.source.probe()
        self.observation_space, self.action_space = make_spaces(self.config, probe.num_machines)
        self.render_mode = render_mode
        self._batch = EnvBatch(self.config, self.source, 1, probe)
        works = self._batch.works
        self._views = (works.candidates[0], works.machines[0], works.global_[0], works.action_mask[0])
        self._counters = works.counters[0]
        self._scalars = works.scalars[0]
        self._first = np.ones(1, dtype=np.uint8)
        self._done = True
        self._viewer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        raise copy_refused(self, "env.unwrapped.instance", "env.unwrapped.simulator")

    # ---------------------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        """Start an episode; ``options={"instance": ...}`` plays that instance in this episode. A reset that
        fails (a bad option or instance) changes nothing: the episode before it and the random stream stay."""
        if seed is not None:  # True is no seed 1; a NumPy integer is one, as in the vector env
            seed = check_integer("seed", seed, 0)
        override = instance_option(options)
        if override is not None:  # checked before the reseed, as the vector env checks before any load
            override = self._batch.resolve(override)
        super().reset(seed=seed)
        info = self._batch.begin(0, self.np_random, override)
        reset_batch(self._batch.handle, self._first)
        check_code(int(self._counters[K_CODE]), self.instance, self.now)
        self._done = False
        info["invalid_actions"] = 0
        if self.render_mode == "human":
            self.render()
        return self._observation(), info

    def step(self, action: int | np.integer) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Play ``action`` (an action slot, or a rule for the rules env) and advance to the next decision."""
        if self._done:
            raise RuntimeError("the episode is over (or has not started): call reset()")
        try:
            slot = operator.index(action)  # an integer (numpy ones and 0-d arrays too); 1.7 is not truncated to 1
        except TypeError:
            slot = None
        if slot is None or isinstance(action, (bool, np.bool_)):  # True is not slot 1 (nor in the vector env)
            raise TypeError(f"action must be an integer (an action slot), got {action!r}")
        if not 0 <= slot < 2**63:  # out of range, as the kernel reads every negative slot; int64 cannot hold it
            slot = -1
        code = step_first(self._batch.handle, slot)
        if code == ERR_INVALID_ACTION:
            raise InvalidActionError(
                f"action {action!r} is not valid now: valid actions are "
                f"{np.flatnonzero(self._views[3]).tolist()} (see observation['action_mask'] or action_masks())"
            )
        check_code(code, self.instance, self.now)
        terminated = code == DONE
        info: dict[str, Any] = {"invalid_actions": int(self._counters[K_INVALID])}
        if terminated:
            self._done = True
            info.update(final_info(self.schedule()))
        if self.render_mode == "human":
            self.render()
        return self._observation(), float(self._scalars[S_REWARD]), terminated, False, info

    def render(self) -> np.ndarray | str | None:
        """The current schedule: a Gantt chart (``rgb_array``, ``human``) or text (``ansi``)."""
        from dynasched_gym.envs.dfjsp import viewer

        if self.render_mode is None:
            viewer.warn_no_render_mode()
            return None
        if self.render_mode == "ansi":
            return viewer.render_text(self._batch.simulator(0), self.config.objective)
        if self.render_mode == "rgb_array":
            return viewer.render_gantt(self._batch.simulator(0))
        self._viewer = viewer.show_gantt(self._batch.simulator(0), self._viewer)
        return None

    def close(self) -> None:
        """Close the ``human`` render window, if any."""
        if self._viewer is not None:
            from dynasched_gym.envs.dfjsp import viewer

            viewer.close(self._viewer)
            self._viewer = None

    # ------------------------------------------------------------------------- extras
    def action_masks(self) -> np.ndarray:
        """Valid actions now, as a bool array (the sb3-contrib ``MaskablePPO`` convention)."""
        return self._views[3].astype(bool)

    def offered_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The (job, machine) pair behind each action slot now (``-1`` for padding), as copies."""
        works = self._batch.works
        return works.slot_job[0].copy(), works.slot_machine[0].copy()

    @property
    def time_scale(self) -> float:
        """The features' time unit tau in this episode (the ``time_scale`` argument, else fixed at reset)."""
        return float(self._scalars[S_TIME_SCALE])

    @property
    def ops_scale(self) -> float:
        """The unit of the features' operation counts in this episode (the ``ops_scale`` argument, else fixed at
        reset)."""
        return float(self._scalars[S_OPS_SCALE])

    @property
    def simulator(self) -> Simulator:
        """The current episode's simulator, for agents that read the state (never step it directly)."""
        return self._batch.simulator(0)

    @property
    def instance(self) -> Instance:
        """The current episode's instance (before the first reset: the one that fixed the spaces)."""
        return self._batch.simulators[0].instance

    @property
    def now(self) -> float:
        """The simulation clock."""
        return float(self._batch.states.now[0, 0])

    def schedule(self) -> Schedule:
        """The schedule so far (running operations left out); the full record once the episode ended."""
        return self._batch.simulator(0).schedule()

    def _observation(self) -> Observation:
        candidates, machines, global_, mask = self._views
        return {"candidates": candidates.copy(), "machines": machines.copy(), "global": global_.copy(),
                "action_mask": mask.copy()}


class DFJSPRulesEnv(DFJSPEnv):
    """Rule selection: at each decision point the agent picks the dispatching rule that dispatches.

    Same episodes, observation and rewards as :class:`DFJSPEnv`; the action is an index into
    :attr:`rules` (``dynasched_gym.core.rules.COMPOSITE_RULES``: ten composite ``JOB:MACHINE`` rules,
    see that module for their semantics), so ``action_mask`` is all ones. The ``RANDOM`` rule draws
    from a per-env stream seeded by ``reset(seed=...)``. With ``invalid_action="replace"`` an
    out-of-range action plays rule 0 (``SPT:EET``).
    """

    action_kind = ACTION_RULE
    rules = COMPOSITE_RULES


class FJSPEnv(DFJSPEnv):
    """:class:`DFJSPEnv` on a fixed instance: static FJSP benchmarks (Brandimarte mk01..mk10, ...).

    Args:
        instance: an :class:`~dynasched_gym.Instance`, a path or an embedded name (default ``mk01``).
        **kwargs: the other arguments of :class:`DFJSPEnv`; ``tier`` and ``size`` draw no episodes here, they name
            the pool the instance belongs to, where sampled futures come from (``ForecastFeatures(futures=N)``).
    """

    def __init__(self, instance: InstanceSpec = "mk01", **kwargs: Any) -> None:
        if instance is None:
            raise ValueError("FJSP-v0 plays a fixed instance: pass instance= (a path, an Instance or an embedded name)")
        super().__init__(instance=instance, **kwargs)


#: A vector env's ``instance`` reset option given per sub-environment (``None``: drawn as usual).
PerEnvSpecs = list[InstanceSpec | None] | tuple[InstanceSpec | None, ...]


@overload
def instance_option(options: dict[str, Any] | None, vector: Literal[False] = False) -> InstanceSpec | None: ...


@overload
def instance_option(options: dict[str, Any] | None, vector: bool) -> InstanceSpec | PerEnvSpecs | None: ...


def instance_option(options: dict[str, Any] | None, vector: bool = False) -> InstanceSpec | PerEnvSpecs | None:
    """The ``instance`` reset option (the only one besides a vector env's ``reset_mask``); a vector env's may be a
    list or tuple, one per sub-environment."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict (or None), got {type(options).__name__}: {options!r}")
    unknown = set(options) - ({"instance", "reset_mask"} if vector else {"instance"})
    if unknown:
        # sorted by repr: {1: .., "x": ..} failed with "'<' not supported between instances of 'str' and 'int'"
        raise ValueError(f"unknown reset option(s) {sorted(unknown, key=repr)}; the options are 'instance' "
                         "(and 'reset_mask' for vector envs)")
    return options.get("instance")
