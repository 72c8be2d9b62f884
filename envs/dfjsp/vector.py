"""Vector versions of the DFJSP environments: every sub-environment steps in one numba call.

``gym.make_vec("DynaSched/DFJSP-v0", num_envs=N, vectorization_mode="vector_entry_point")``
returns a :class:`DFJSPVectorEnv`. Sub-environment ``i`` behaves exactly like the single env
reset with seed ``seed + i`` (and reset again without a seed after each episode).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dynasched_gym.checks import check_arguments, check_bool, check_choice, check_integer, is_integer, keyword_arguments
from dynasched_gym.core.kernels import DONE, ERR_STALLED
from dynasched_gym.core.simulator import Simulator, check_code
from dynasched_gym.envs.dfjsp.batch import EnvBatch
from dynasched_gym.envs.dfjsp.env import (
    ENV_ARGUMENTS_DOCS,
    DFJSPEnv,
    DFJSPRulesEnv,
    FJSPEnv,
    InvalidActionError,
    copy_refused,
    instance_option,
)
from dynasched_gym.envs.dfjsp.episodes import final_info
from dynasched_gym.envs.dfjsp.kernels import reset_batch, step_batch, step_batch_parallel
from dynasched_gym.envs.dfjsp.types import K_CODE, K_INVALID, S_OPS_SCALE, S_REWARD, S_TIME_SCALE, Observation
from dynasched_gym.instance import Instance
from dynasched_gym.schedule import Schedule

#: The most sub-environments of one vector env: each takes 0.1-0.9 MiB (docs/performance.md), so this many is tens of
#: GiB already (num_envs=10**7 was a MemoryError, 10**30 NumPy's "maximum allowed dimension exceeded").
MAX_NUM_ENVS = 2**16
#: How many refused sub-environments an InvalidActionError lists the valid actions of.
MAX_SHOWN = 3
#: The vector env's attributes that are batched where a sub-environment's are single: call and get_attr give these.
SINGLE_ATTRIBUTES = {"observation_space": "single_observation_space", "action_space": "single_action_space"}


class DFJSPVectorEnv(VectorEnv):
    """``num_envs`` copies of :class:`~dynasched_gym.envs.dfjsp.env.DFJSPEnv` stepped together.

    One :meth:`step` is one numba call over all sub-environments (plus one for those that reset).
    Observations are the single env's, stacked on a leading ``num_envs`` axis.

    Autoreset (Gymnasium 1.x, ``metadata["autoreset_mode"]``):

    - ``NEXT_STEP`` (default): after a sub-environment terminates, its next ``step`` ignores the
      action, resets it and returns the first observation, reward 0 and ``terminated=False``.
    - ``SAME_STEP``: a terminating sub-environment is reset within the same ``step``; the returned
      observation is the new episode's, and ``info["final_obs"]`` / ``info["final_info"]`` hold
      the last ones.
    - ``DISABLED``: no automatic reset; reset finished ones with ``reset(options={"reset_mask": mask})``.

    Seeding: ``reset(seed=s)`` seeds sub-environment ``i`` with ``s + i`` (a list seeds each one).

    Info (arrays over sub-environments, each with its ``_key`` mask): ``invalid_actions``; after
    a reset, ``tier``; for a sub-environment whose episode ended, ``metrics`` and ``ssi`` (as ``DFJSP-v0``).

    ``call``, ``get_attr`` and ``set_attr`` answer as ``SyncVectorEnv``'s, one item per sub-environment; the
    sub-environments are rows of this env, so they share its attributes (``set_attr`` sets one value for all).

    Args:
        num_envs: number of sub-environments.
        autoreset_mode: an :class:`~gymnasium.vector.AutoresetMode` (or its value).
        copy: return copies of the observation buffers (``False`` returns the buffers themselves,
            which the next step overwrites).
        parallel: step the sub-environments on numba's threads (``NUMBA_NUM_THREADS``, default all
            cores); worth it for tens of sub-environments and free cores, not beside other busy
            processes (docs/environments.md, "Performance"). Same results as serial stepping.
        max_episode_steps: truncate a sub-environment's episode after this many steps (``truncated=True``), as
            the single env under ``gym.make(..., max_episode_steps=N)``'s ``TimeLimit``; ``gym.make_vec`` passes
            it to vector entry points. ``None`` (default): episodes only end by themselves.
        **kwargs: the keyword arguments of the single env (``instance``, ``objective``, ...).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["rgb_array", "ansi"],
        "render_fps": DFJSPEnv.metadata["render_fps"],  # Gymnasium's vector HumanRendering / RecordVideo read it
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }
    env_class: ClassVar[type[DFJSPEnv]] = DFJSPEnv

    def __init__(
        self,
        num_envs: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        parallel: bool = False,
        max_episode_steps: int | None = None,
        **kwargs: Any,
    ) -> None:
        # its own arguments too, so that make_vec(..., autoreset_mod=...) is not said to be none of the env's
        check_arguments(type(self).__name__, kwargs, [*keyword_arguments(DFJSPVectorEnv),
                                                      *keyword_arguments(DFJSPEnv)], ENV_ARGUMENTS_DOCS)
        num_envs = check_integer("num_envs", num_envs, 1, MAX_NUM_ENVS)
        self.max_episode_steps = None if max_episode_steps is None else check_integer(
            "max_episode_steps", max_episode_steps, 1)
        render_mode = kwargs.get("render_mode")
        if render_mode is not None:
            check_choice("render_mode of a vector env", render_mode, self.metadata["render_modes"])
        template = self.env_class(**kwargs)
        self.num_envs = num_envs
        self.config = template.config
        self.source = template.source  # where each episode's instance comes from (tier pool or fixed)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode_of(autoreset_mode)}
        self.single_observation_space = template.observation_space
        self.single_action_space = template.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._copy = check_bool("copy", copy)
        self._step_batch = step_batch_parallel if check_bool("parallel", parallel) else step_batch
        self._batch = EnvBatch(template.config, template.source, num_envs, template.instance)
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self._ended = np.zeros(num_envs, dtype=bool)  # episode over, reset pending (NEXT_STEP / DISABLED)
        self._steps = np.zeros(num_envs, dtype=np.int64)  # steps of the current episodes (max_episode_steps)
        self._started = False

    def __getstate__(self) -> dict[str, Any]:
        # as the single env's: pickle's "cannot pickle '_nrt_python._MemInfo' object" named neither env nor way out
        raise copy_refused(self, "venv.unwrapped.instance(i)", "venv.unwrapped.simulator(i)")

    # ---------------------------------------------------------------------------- gym API
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Reset every sub-environment (or those in ``options["reset_mask"]``).

        ``options={"instance": ...}`` plays that instance in the new episodes; a list gives one per
        sub-environment (``None``: drawn as usual; entries of sub-environments not reset are ignored).
        """
        seeds = per_env_seeds(seed, self.num_envs)
        override = instance_option(options, vector=True)
        overrides = list(override) if isinstance(override, (list, tuple)) else [override] * self.num_envs
        if len(overrides) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} instances (one per sub-environment), got {len(overrides)}")
        mask = np.ones(self.num_envs, dtype=bool)
        if options and options.get("reset_mask") is not None:
            mask = reset_mask_of(options["reset_mask"], self.num_envs)
        if not self._started and not mask.all():
            raise ValueError("the first reset must reset every sub-environment")
        overrides = [None if spec is None or not mask[i] else self._batch.resolve(spec)  # all checked before any loads
                     for i, spec in enumerate(overrides)]
        # reseeded once everything is checked: a refused reset leaves every random stream as it was
        super().reset(seed=seeds[0] if is_integer(seed) else None)  # the vector env's own rng
        for i in np.flatnonzero(mask):
            if seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i] = seeding.np_random(seeds[i])[0]
        infos = self._begin(mask, overrides)
        self._started = True
        infos = self._add_array_info(infos, "invalid_actions", self._batch.works.counters[:, K_INVALID], mask)
        return self._observation(), infos

    def step(
        self, actions: np.ndarray
    ) -> tuple[Observation, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-environment with its action (see the class docstring for autoresets)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = check_actions(actions, self.num_envs)
        mode = self.metadata["autoreset_mode"]
        infos: dict[str, Any] = {}
        stepping = ~self._ended
        if mode == AutoresetMode.DISABLED and self._ended.any():
            raise RuntimeError(f"sub-environments {np.flatnonzero(self._ended).tolist()} ended: reset them with "
                               "reset(options={'reset_mask': mask}) (autoreset_mode=DISABLED)")
        if self.config.invalid_action == "raise":  # before the autoreset: a refused step changes nothing
            self._check_actions(actions, stepping)
        if mode == AutoresetMode.NEXT_STEP and self._ended.any():
            infos = self._begin(self._ended)
        if self._step_batch(self._batch.handle, actions, stepping.view(np.uint8)):  # some left the decision state
            codes = self._batch.works.counters[:, K_CODE]
            self._check_codes(codes, stepping)
            terminated = (codes == DONE) & stepping
        else:
            terminated = np.zeros(self.num_envs, dtype=bool)
        rewards = self._batch.works.scalars[:, S_REWARD].copy()
        self._steps[stepping] += 1
        if self.max_episode_steps is None:
            truncated = np.zeros(self.num_envs, dtype=bool)
        else:  # as TimeLimit: truncated once the limit is reached, terminated or not
            truncated = stepping & (self._steps >= self.max_episode_steps)
        done = terminated | truncated
        if mode == AutoresetMode.SAME_STEP and done.any():
            final_obs = self._observation(copy=True)
            final = [(i, {key: value[i] for key, value in final_obs.items()}, self._final_info(i, terminated[i]))
                     for i in np.flatnonzero(done)]
            infos = self._begin(done)
            for i, obs, info in final:
                infos = self._add_info(infos, {"final_obs": obs, "final_info": info}, i)
        else:
            for i in np.flatnonzero(terminated):
                infos = self._add_info(infos, self._final_info(i), i)
            self._ended = done  # a new array: the caller owns the returned ones
        infos = self._add_array_info(infos, "invalid_actions", self._batch.works.counters[:, K_INVALID],
                                     np.ones(self.num_envs, dtype=bool))
        return self._observation(), rewards, terminated, truncated, infos

    def render(self) -> tuple[Any, ...] | None:
        """One rendering per sub-environment (``rgb_array``: Gantt charts; ``ansi``: text)."""
        from dynasched_gym.envs.dfjsp import viewer

        if self.render_mode is None:
            viewer.warn_no_render_mode()
            return None
        sims = [self._batch.simulator(i) for i in range(self.num_envs)]
        if self.render_mode == "ansi":
            return tuple(viewer.render_text(sim, self.config.objective) for sim in sims)
        return tuple(viewer.render_gantt(sim) for sim in sims)

    # ------------------------------------------------------------------------- extras
    def action_masks(self) -> np.ndarray:
        """Valid actions of every sub-environment, ``(num_envs, num_actions)`` bool."""
        return self._batch.works.action_mask.astype(bool)

    def offered_pairs(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The (job, machine) pair behind each action slot of sub-environment ``index`` (``-1``: padding), as copies."""
        works, index = self._batch.works, self._index(index)
        return works.slot_job[index].copy(), works.slot_machine[index].copy()

    def time_scale(self, index: int) -> float:
        """The features' time unit tau of sub-environment ``index``'s episode."""
        return float(self._batch.works.scalars[self._index(index), S_TIME_SCALE])

    def ops_scale(self, index: int) -> float:
        """The unit of the features' operation counts in sub-environment ``index``'s episode."""
        return float(self._batch.works.scalars[self._index(index), S_OPS_SCALE])

    def now(self, index: int) -> float:
        """The simulation clock of sub-environment ``index``."""
        return float(self._batch.states.now[self._index(index), 0])

    def schedule(self, index: int) -> Schedule:
        """The schedule so far of sub-environment ``index``."""
        return self._batch.simulator(self._index(index)).schedule()

    def instance(self, index: int) -> Instance:
        """The current instance of sub-environment ``index``."""
        return self._batch.simulators[self._index(index)].instance

    def simulator(self, index: int) -> Simulator:
        """Sub-environment ``index``'s simulator, to read its state (never to step it directly)."""
        return self._batch.simulator(self._index(index))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """As ``SyncVectorEnv.call``: for each sub-environment, the result of its method ``name`` (``action_masks``,
        ``schedule``, ``offered_pairs``, ...) or the value of its attribute (``time_scale``, ``instance``, the single
        ``observation_space``, ``render_mode``, ...)."""
        if name in ("reset", "step"):
            raise ValueError(f"call({name!r}) would {name} the vector env as a whole, not each sub-environment: call "
                             f"venv.{name}(...)")
        if name in ("np_random", "np_random_seed"):  # the vector env's own are not its sub-environments'
            raise AttributeError(f"the sub-environments' {name} are internal to {type(self).__name__}: "
                                 "reset(seed=s) seeds sub-environment i with s + i")
        value = getattr(self, SINGLE_ATTRIBUTES.get(name, name))
        if not callable(value):
            return (value,) * self.num_envs
        return tuple(sub_env_results(value, name, range(self.num_envs), self.num_envs, args, kwargs,
                                     f"call({name!r})", f"venv.unwrapped.{name}"))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """As ``SyncVectorEnv.get_attr``: :meth:`call` without arguments."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """As ``SyncVectorEnv.set_attr``, for the attribute ``name`` the sub-environments share: one value, or a list
        or tuple of ``num_envs`` equal ones."""
        own = getattr(type(self), name, None)  # a method or property (a callable set on the instance may be replaced)
        if name in SINGLE_ATTRIBUTES or callable(own) or isinstance(own, property):
            raise ValueError(f"set_attr({name!r}) would replace the vector env's own {name}")
        if isinstance(values, (list, tuple)):
            if len(values) != self.num_envs:
                raise ValueError(f"set_attr({name!r}) takes one value or {self.num_envs} (one per sub-environment), "
                                 f"got {len(values)}: {values!r}")
            if not all(same(value, values[0]) for value in values):
                raise ValueError(f"set_attr({name!r}): the {self.num_envs} sub-environments share the vector env's "
                                 f"attributes; got different values {list(values)!r}")
            values = values[0]
        setattr(self, name, values)

    # ------------------------------------------------------------------------- helpers
    def _index(self, index: Any) -> int:
        """``index`` of a sub-environment, checked: NumPy's indexing would take -1 as the last, True as 1 and None as
        all of them."""
        return check_integer("index", index, 0, self.num_envs - 1)

    def _begin(self, mask: np.ndarray, overrides: list[Any] | None = None) -> dict[str, Any]:
        """Reset the sub-environments in ``mask`` (one kernel call), each on its ``overrides`` entry if any;
        returns their reset infos."""
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(mask):
            override = None if overrides is None else overrides[i]
            infos = self._add_info(infos, self._batch.begin(i, self._rngs[i], override), i)
        if reset_batch(self._batch.handle, mask.view(np.uint8)):
            self._check_codes(self._batch.works.counters[:, K_CODE], mask)
        self._steps[mask] = 0  # before _ended is cleared: mask may be _ended itself
        self._ended[mask] = False
        return infos

    def _final_info(self, i: int, terminated: bool = True) -> dict[str, Any]:
        """The last step's info of sub-environment ``i``, whose episode just ended (``metrics`` and ``ssi`` only
        when it terminated: a truncated one's schedule is unfinished, as the single env under ``TimeLimit``)."""
        info: dict[str, Any] = {"invalid_actions": int(self._batch.works.counters[i, K_INVALID])}
        if terminated:
            info.update(final_info(self._batch.simulator(i).schedule()))
        return info

    def _add_info(self, vector_infos: dict[str, Any], env_info: dict[str, Any], env_num: int) -> dict[str, Any]:
        """Gymnasium's merge, but ``ssi`` is an object array: a float one (made from the first sub-environment's
        score) would turn another's ``None`` into NaN."""
        if "ssi" in env_info and "ssi" not in vector_infos:
            vector_infos = {**vector_infos, "ssi": np.full(self.num_envs, None, dtype=object),
                            "_ssi": np.zeros(self.num_envs, dtype=np.bool_)}
        return super()._add_info(vector_infos, env_info, env_num)

    def _add_array_info(self, infos: dict[str, Any], key: str, values: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
        infos[key] = values.copy()
        infos[f"_{key}"] = mask.copy()
        return infos

    def _check_actions(self, actions: np.ndarray, stepping: np.ndarray) -> None:
        num_actions = self._batch.works.action_mask.shape[1]
        inside = (actions >= 0) & (actions < num_actions)
        valid = inside & (self._batch.works.action_mask[np.arange(self.num_envs), np.where(inside, actions, 0)] == 1)
        waiting = self._batch.works.counters[:, K_CODE] != DONE  # an episode without decisions ends on any action
        bad = np.flatnonzero(stepping & waiting & ~valid)
        if bad.size:
            shown = [f"{i}: {np.flatnonzero(self._batch.works.action_mask[i]).tolist()}" for i in bad[:MAX_SHOWN]]
            more = f"; {bad.size - MAX_SHOWN} more" if bad.size > MAX_SHOWN else ""
            raise InvalidActionError(f"invalid actions for sub-environments {bad.tolist()}: {actions[bad].tolist()}; "
                                     f"valid now in sub-environment {'; '.join(shown)}{more} (see "
                                     "observation['action_mask'] or action_masks())")

    def _check_codes(self, codes: np.ndarray, mask: np.ndarray) -> None:
        for i in np.flatnonzero(mask & (codes == ERR_STALLED)):
            sim = self._batch.simulator(i)
            check_code(ERR_STALLED, sim.instance, sim.now)

    def _observation(self, copy: bool | None = None) -> Observation:
        w = self._batch.works
        if self._copy if copy is None else copy:
            return {"candidates": w.candidates.copy(), "machines": w.machines.copy(), "global": w.global_.copy(),
                    "action_mask": w.action_mask.copy()}
        return {"candidates": w.candidates, "machines": w.machines, "global": w.global_,
                "action_mask": w.action_mask}


def same(a: Any, b: Any) -> bool:
    """``a`` is ``b`` or equals it (an array's elementwise ``==`` is no answer: False)."""
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):
        return False


def is_sub_env_method(value: Any) -> bool:
    """Whether ``value`` is a vector env's method of one sub-environment: its first parameter is ``index``."""
    # a bound method only: inspect.signature raises ValueError on builtin types (an attribute holding dict)
    return inspect.ismethod(value) and next(iter(inspect.signature(value).parameters), None) == "index"


def sub_env_results(method: Callable[..., Any], name: str, indices: Sequence[int], num_envs: int,
                    args: Sequence[Any], kwargs: dict[str, Any], caller: str, hint: str) -> list[Any]:
    """The results of a vector env's method ``name`` for the sub-environments ``indices``: a method of one
    sub-environment (its first parameter is ``index``: ``schedule``, ``time_scale``, ...) is called for each index, any
    other once, its result cut into one row per sub-environment (``action_masks``), or one None each when it returns
    nothing (``render`` without a render mode, ``close``), as each of a SyncVectorEnv's envs would; a TypeError naming
    ``caller`` and ``hint`` (where to call it instead) when the result has no such rows."""
    if is_sub_env_method(method):
        return [method(i, *args, **kwargs) for i in indices]
    result = method(*args, **kwargs)
    if result is None:
        return [None] * len(indices)
    if not hasattr(result, "__getitem__") or not hasattr(result, "__len__") or len(result) != num_envs:
        raise TypeError(f"{caller} called the vector env's {name}() once and got {type(result).__name__}, not one "
                        f"result per sub-environment ({num_envs}): call it on the vector env itself ({hint})")
    return [result[i] for i in indices]


def per_env_seeds(seed: Any, num_envs: int) -> list[int | None]:
    """The reset seed of each sub-environment: ``seed + i`` for an integer, the items of a list, tuple or array
    (one per sub-environment; None: not reseeded), all None for None."""
    if seed is None:
        return [None] * num_envs
    if is_integer(seed):  # >= 0, as a single env's seed and each seed of a list (-1 failed inside Gymnasium)
        return [check_integer("seed", seed, 0) + i for i in range(num_envs)]
    if isinstance(seed, (list, tuple)) or (isinstance(seed, np.ndarray) and seed.ndim == 1):  # a 0-d one has no len
        if len(seed) != num_envs:
            raise ValueError(f"expected {num_envs} seeds (one per sub-environment), got {len(seed)}")
        # each an integer >= 0 or None (True is no seed 1)
        return [None if s is None else check_integer(f"seed[{i}]", s, 0) for i, s in enumerate(seed)]
    raise TypeError(f"seed must be an integer, a list of {num_envs} integers or None, or None; got {seed!r}")


def dfjsp_unwrapped(env: Any, user: str, vector: bool = False) -> Any:
    """``env.unwrapped``: a DFJSP env (a :class:`DFJSPVectorEnv` with ``vector``), or a TypeError naming ``user``
    (another env failed deep inside with an AttributeError about ``config`` or ``simulator``)."""
    unwrapped = getattr(env, "unwrapped", None)
    if not isinstance(unwrapped, DFJSPVectorEnv if vector else DFJSPEnv):
        what = ("vector env (gym.make_vec(..., vectorization_mode='vector_entry_point'))" if vector else
                "env (gym.make('DynaSched/DFJSP-v0', ...))")
        raise TypeError(f"{user} needs a DynaSched {what}, got {type(env).__name__}: {env!r:.80}")
    return unwrapped


def check_actions(actions: Any, num_envs: int) -> np.ndarray:
    """``actions`` as an ``(num_envs,)`` int64 array (one beyond int64 as -1, out of range); a TypeError unless they
    are integers (1.7 is not truncated to slot 1, nor True read as 1), a ValueError unless they have that shape."""
    actions = np.asarray(actions)
    if actions.dtype == object and all(is_integer(a) for a in actions.flat):
        # Python integers beyond int64 (10**20) made an object array: out of range, -1 as in the single env
        actions = np.array([a if -(2**63) <= a < 2**63 else -1 for a in actions.flat],
                           dtype=np.int64).reshape(actions.shape)
    if actions.dtype.kind not in "iu":
        raise TypeError(f"actions must be integers (action slots), got dtype {actions.dtype}: {actions!r}")
    if actions.shape != (num_envs,):  # a (3, 1) or (1, 3) array is no batch of 3 actions, though it holds 3
        raise ValueError(f"actions must hold one action per sub-environment ({num_envs}), got shape "
                         f"{actions.shape}: {actions!r}")
    # the kernels are compiled for contiguous writeable arrays: a column of a table (actions[:, t]) or a read-only
    # array made numba compile another version, a ~25 s stall on the first step
    return np.require(actions, np.int64, ("C_CONTIGUOUS", "ALIGNED", "WRITEABLE"))


def reset_mask_of(mask: Any, num_envs: int) -> np.ndarray:
    """The ``reset_mask`` reset option as a ``(num_envs,)`` bool array: bools, or integers 0 and 1; anything else
    (indices such as ``[2, 5]``, strings, fractions) raises naming the value instead of being read as true."""
    array = np.asarray(mask)
    if array.shape != (num_envs,):
        raise ValueError(f"reset_mask must have shape ({num_envs},), got {array.shape}: {mask!r}")
    if array.dtype.kind != "b" and (array.dtype.kind not in "iu" or not np.isin(array, (0, 1)).all()):
        raise ValueError(f"reset_mask must hold one bool (or 0 / 1) per sub-environment, got {mask!r}")
    return array.astype(bool)


def autoreset_mode_of(mode: AutoresetMode | str) -> AutoresetMode:
    """``mode`` as an ``AutoresetMode``; a string may be its value (``"SameStep"``) or name, in any case and with
    ``_`` or ``-`` (``"same_step"``, ``"SAME_STEP"``)."""
    if isinstance(mode, AutoresetMode):
        return mode
    key = str(mode).replace("_", "").replace("-", "").lower()
    for member in AutoresetMode:
        if key in (member.value.lower(), member.name.replace("_", "").lower()):
            return member
    raise ValueError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]} (or their names), got {mode!r}")


class DFJSPRulesVectorEnv(DFJSPVectorEnv):
    """Vector version of :class:`~dynasched_gym.envs.dfjsp.env.DFJSPRulesEnv`."""

    env_class = DFJSPRulesEnv


class FJSPVectorEnv(DFJSPVectorEnv):
    """Vector version of :class:`~dynasched_gym.envs.dfjsp.env.FJSPEnv`."""

    env_class = FJSPEnv
