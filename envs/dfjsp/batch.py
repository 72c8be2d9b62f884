"""The Python side of a batch of environments: buffers, loading instances, reading results back.

An :class:`EnvBatch` keeps the ``Static``, ``State`` and ``Workspace`` arrays of ``num_envs``
simulations in padded batch buffers (:mod:`.types`, "Batches") and hands the kernels one typed
list holding them. Env ``i``'s observation, reward and counters are row ``i`` of buffers that
never move, so a vector env reads the whole batch back with a few array copies. Buffers whose size
dimension must grow for a larger instance are reallocated (contents kept) and the handle rebuilt.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import typed

from dynasched_gym.core.compiled import State
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.envs.dfjsp.episodes import InstanceSource, InstanceSpec
from dynasched_gym.envs.dfjsp.features import CANDIDATE_FEATURES, GLOBAL_FEATURES, MACHINE_FEATURES, num_columns
from dynasched_gym.envs.dfjsp.kernels import make_handle
from dynasched_gym.envs.dfjsp.types import (
    ACTION_RULE,
    FIXED,
    NUM_COUNTERS,
    NUM_DIMS,
    NUM_MACHINE_STATS,
    NUM_SCALARS,
    S_OPS_SCALE,
    S_REWARD_SCALE,
    S_TIME_SCALE,
    SCALAR,
    STATE_LAYOUT,
    STATIC_LAYOUT,
    WORKSPACE_LAYOUT,
    EnvConfig,
    StateBatch,
    StaticBatch,
    Workspace,
    WorkspaceBatch,
    sizes_of,
)
from dynasched_gym.instance import Instance

Layout = dict[str, tuple[int, int]]


def _allocate(cls: type, layout: Layout, sample: Any, num_envs: int, capacity: np.ndarray) -> Any:
    """Zeroed batch buffers for records shaped like ``sample``, padded to ``capacity``."""
    buffers = {}
    for name, (dim, extra) in layout.items():
        value = getattr(sample, name)
        if dim == SCALAR:
            buffers[name] = np.zeros(num_envs, dtype=np.int64)
        elif dim == FIXED:
            buffers[name] = np.zeros((num_envs, *value.shape), dtype=value.dtype)
        else:
            buffers[name] = np.zeros((num_envs, capacity[dim] + extra, *value.shape[1:]), dtype=value.dtype)
    return cls(**buffers)


def _grow(batch: Any, layout: Layout, old: np.ndarray, new: np.ndarray) -> Any:
    """``batch`` with the buffers of grown dimensions reallocated to ``new`` capacities (rows kept)."""
    buffers = batch._asdict()
    for name, (dim, extra) in layout.items():
        if dim >= 0 and new[dim] > old[dim]:
            buf = buffers[name]
            grown = np.zeros((buf.shape[0], new[dim] + extra, *buf.shape[2:]), dtype=buf.dtype)
            grown[:, : buf.shape[1]] = buf
            buffers[name] = grown
    return type(batch)(**buffers)


def _put_row(batch: Any, layout: Layout, i: int, record: Any) -> None:
    """Copy ``record`` into row ``i`` of the batch buffers."""
    for name, (dim, _) in layout.items():
        value = getattr(record, name)
        buf = getattr(batch, name)
        if dim == SCALAR or dim == FIXED:
            buf[i] = value
        else:
            buf[i, : len(value)] = value


def _row(batch: Any, layout: Layout, cls: type, i: int, sizes: np.ndarray) -> Any:
    """Row ``i`` of the batch buffers as a record of views cut to ``sizes`` (the kernels' ``*_at``)."""
    fields = {}
    for name, (dim, extra) in layout.items():
        buf = getattr(batch, name)
        if dim == SCALAR:
            fields[name] = int(buf[i])
        elif dim == FIXED:
            fields[name] = buf[i]
        else:
            fields[name] = buf[i, : sizes[dim] + extra]
    return cls(**fields)


def _set_writeable(batch: Any, flag: bool) -> None:
    for buf in batch:
        buf.setflags(write=flag)


class EnvBatch:
    """``num_envs`` simulations in batch buffers, entered through :attr:`handle`.

    Args:
        config: the envs' settings.
        source: where each episode's instance comes from.
        num_envs: number of simulations.
        probe: the instance every env holds until its first episode; it fixes the number of machines
            (the observation shapes depend on it).

    Envs that hold the same instance share one row of the ``Static`` buffers (:attr:`static_rows`);
    these buffers are read-only (as the arrays of ``compile_instance`` are) except while an
    instance is written in. Each env also keeps a :class:`~dynasched_gym.core.Simulator` of
    its instance whose ``state`` is the env's batch rows (views), to read its schedule; the
    kernels step the batch, never that simulator.
    """

    def __init__(self, config: EnvConfig, source: InstanceSource, num_envs: int, probe: Instance) -> None:
        self.config = config
        self.source = source
        self.num_envs = num_envs
        self.num_machines = probe.num_machines
        self.dims = np.zeros((num_envs, NUM_DIMS), dtype=np.int64)
        self.capacity = np.zeros(NUM_DIMS, dtype=np.int64)
        self.simulators: list[Simulator | None] = [None] * num_envs
        self.begun = np.zeros(num_envs, dtype=bool)  # env -> whether an episode began (its state is one)
        self.static_rows = np.zeros(num_envs, dtype=np.int64)  # env -> row of the Static buffers
        self._row_instances: list[Instance | None] = [None] * num_envs  # Static row -> the instance it holds
        self.statics: StaticBatch | None = None
        self.states: StateBatch | None = None
        self.works: WorkspaceBatch | None = None
        self.handle: typed.List | None = None
        probe_tier = None if self.source.fixed is not None else self.source.tier
        for i in range(num_envs):
            self.load(i, probe, probe_tier)
        self._build_handle()

    # -------------------------------------------------------------------------- episodes
    def begin(self, i: int, rng: np.random.Generator, override: InstanceSpec | None = None) -> dict[str, Any]:
        """Prepare env ``i``'s next episode (instance, random stream); returns its reset info (``tier``).

        The kernel reset itself is left to the caller (one call for every env that begins).
        """
        instance, tier = self.source.draw(rng, override)
        self.load(i, instance, tier)
        self.works.rng[i, 0] = rng.integers(1, 2**64 - 1, dtype=np.uint64, endpoint=True)
        self.begun[i] = True
        return {"tier": tier}

    def load(self, i: int, instance: Instance, tier: str | None) -> None:
        """Give env ``i`` the simulation of ``instance``, drawn from ``tier``'s pool or not (``None``), which
        sets the feature scales (:meth:`InstanceSource.scales`); the simulation is kept when env ``i`` already
        has that instance."""
        tau, ops_scale = self.source.scales(instance, tier)
        tau, ops_scale = self.config.time_scale or tau, self.config.ops_scale or ops_scale
        current = self.simulators[i]
        if current is not None and current.instance is instance:
            self.works.scalars[i, [S_TIME_SCALE, S_OPS_SCALE]] = tau, ops_scale
            return
        self._check_fits(instance)
        sim = Simulator(instance)
        static = sim.static
        work = self._workspace(instance, static.op_elig_ptr, tau, ops_scale)
        sizes = sizes_of(static, work.pair_job.shape[0])
        self._fit(sizes, static, sim.state, work)
        self.static_rows[i] = self._static_row(i, instance, static)
        _put_row(self.states, STATE_LAYOUT, i, sim.state)
        _put_row(self.works, WORKSPACE_LAYOUT, i, work)
        self.dims[i] = sizes
        sim.bind(self.state(i))
        self.simulators[i] = sim

    def resolve(self, spec: InstanceSpec) -> Instance:
        """A ``reset`` option's instance, resolved and checked to fit this batch's spaces (nothing loaded yet)."""
        instance = self.source.resolve(spec)
        self._check_fits(instance)
        return instance

    def _check_fits(self, instance: Instance) -> None:
        if instance.num_machines != self.num_machines:
            raise ValueError(
                f"instance {instance.name!r} has {instance.num_machines} machines but this env's observation space "
                f"was fixed at construction for {self.num_machines}; make a new env for it"
            )

    def _static_row(self, i: int, instance: Instance, static: Any) -> int:
        """The Static row for env ``i``'s new ``instance``: one already holding it, else a free one (written)."""
        for row, held in enumerate(self._row_instances):
            if held is instance:
                return row
        others = {int(r) for j, r in enumerate(self.static_rows) if j != i and self.simulators[j] is not None}
        row = next(r for r in range(self.num_envs) if r not in others)
        _set_writeable(self.statics, True)
        _put_row(self.statics, STATIC_LAYOUT, row, static)
        _set_writeable(self.statics, False)
        self._row_instances[row] = instance
        return row

    def _workspace(self, instance: Instance, op_elig_ptr: np.ndarray, tau: float, ops_scale: float) -> Workspace:
        """A fresh workspace record for ``instance`` with the features' time unit ``tau`` and operations-per-job
        unit ``ops_scale`` (written into the env's batch row)."""
        config = self.config
        k, level = config.max_candidates, config.level
        pair_capacity = instance.num_jobs * int(np.diff(op_elig_ptr).max())
        scalars = np.zeros(NUM_SCALARS)
        scalars[S_TIME_SCALE] = tau
        scalars[S_OPS_SCALE] = ops_scale
        scalars[S_REWARD_SCALE] = config.reward_scale
        return Workspace(
            candidates=np.zeros((k, num_columns(CANDIDATE_FEATURES, level)), dtype=np.float32),
            machines=np.zeros((self.num_machines, num_columns(MACHINE_FEATURES, level)), dtype=np.float32),
            global_=np.zeros(num_columns(GLOBAL_FEATURES, level), dtype=np.float32),
            action_mask=np.full(config.num_actions, config.action_kind == ACTION_RULE, dtype=np.int8),
            slot_job=np.full(k, -1, dtype=np.int64), slot_machine=np.full(k, -1, dtype=np.int64),
            slot_time=np.zeros(k), slot_key=np.zeros(k),
            pair_job=np.zeros(pair_capacity, dtype=np.int64), pair_machine=np.zeros(pair_capacity, dtype=np.int64),
            pair_time=np.zeros(pair_capacity), job_stat=np.zeros(instance.num_jobs),
            machine_stat=np.zeros((NUM_MACHINE_STATS, self.num_machines)), scalars=scalars,
            counters=np.zeros(NUM_COUNTERS, dtype=np.int64), config=config.config_row(),
            rng=np.ones(1, dtype=np.uint64),
        )

    def _fit(self, sizes: np.ndarray, static: Any, state: State, work: Workspace) -> None:
        """Allocate the buffers (first load) or grow those too small for ``sizes``."""
        n = self.num_envs
        if self.statics is None:
            self.capacity = sizes.copy()
            self.statics = _allocate(StaticBatch, STATIC_LAYOUT, static, n, self.capacity)
            _set_writeable(self.statics, False)
            self.states = _allocate(StateBatch, STATE_LAYOUT, state, n, self.capacity)
            self.works = _allocate(WorkspaceBatch, WORKSPACE_LAYOUT, work, n, self.capacity)
            return
        if np.all(sizes <= self.capacity):
            return
        grown = np.where(sizes > self.capacity, np.maximum(sizes, self.capacity + self.capacity // 2), self.capacity)
        self.statics = _grow(self.statics, STATIC_LAYOUT, self.capacity, grown)
        _set_writeable(self.statics, False)
        self.states = _grow(self.states, STATE_LAYOUT, self.capacity, grown)
        self.works = _grow(self.works, WORKSPACE_LAYOUT, self.capacity, grown)
        self.capacity = grown
        for j, sim in enumerate(self.simulators):
            if sim is not None:
                sim.bind(self.state(j))
        if self.handle is not None:
            self._build_handle()

    def _build_handle(self) -> None:
        self.handle = make_handle(self.statics, self.states, self.works, self.dims, self.static_rows)

    # --------------------------------------------------------------------------- results
    def state(self, i: int) -> State:
        """Env ``i``'s ``State`` as views of its batch rows."""
        return _row(self.states, STATE_LAYOUT, State, i, self.dims[i])

    def simulator(self, i: int) -> Simulator:
        """Env ``i``'s simulator, to read its schedule, clock and state (never to step it); ``RuntimeError`` before
        its first reset, when it holds no episode."""
        if not self.begun[i]:
            raise RuntimeError("no episode has begun: call reset() first")
        return self.simulators[i]
