"""Python-level handle on one simulation: reset, candidates, step, snapshot/restore, schedule."""

from __future__ import annotations

import weakref

import numpy as np

from dynasched_gym.checks import check_integer, is_integer
from dynasched_gym.core import kernels
from dynasched_gym.core.batch import candidates_one, make_handle, reset_one, run_rule_one, step_one
from dynasched_gym.core.compiled import (
    C_DECISIONS,
    C_DOWNTIMES,
    C_OPEN_JOBS,
    C_SEGMENTS,
    State,
    allocate_state,
    compile_instance,
    copy_state,
)
from dynasched_gym.core.rules import check_seed, parse_rule, seed_rng
from dynasched_gym.instance import Instance, check_instance
from dynasched_gym.schedule import Schedule

#: Id types :meth:`Simulator.step` takes without the general check (``candidates()`` gives int64 arrays).
_ID_TYPES = frozenset({int, np.int64, np.int32})
#: Ids from -2**63 below this are int64 values; an id beyond is no id (the kernel refuses it as -1).
_ID_LIMIT = 2**63
#: Offered pairs an invalid step's error lists (an instance may offer thousands).
_SHOWN = 10
#: The instance each snapshot was taken of, by the id of its ``now`` array; an entry goes with its array (so before
#: the id can be reused). Shapes alone let a snapshot of another instance of the same size (ta01 into ta02) be
#: restored without a word.
_TAKEN_OF: dict[int, Instance] = {}


def check_code(code: int, instance: Instance, now: float) -> None:
    """Raise on a simulator error code (a stall cannot happen on a valid instance)."""
    if code == kernels.ERR_STALLED:
        raise RuntimeError(f"simulation of {instance.name!r} stalled at t={now}: jobs remain but nothing can happen "
                           "(please report this instance)")


class Simulator:
    """An event-driven simulation of one instance.

    After :meth:`reset` (and after every :meth:`step`) the clock stands at the next decision
    point: :meth:`candidates` lists the (job, machine) pairs that can start now, and ``done``
    tells whether the episode has ended.

    Example:
        >>> sim = Simulator(instance)
        >>> sim.reset()
        >>> while not sim.done:
        ...     jobs, machines, times = sim.candidates()
        ...     sim.step(jobs[0], machines[0])
        >>> sim.schedule().metrics["makespan"]
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = check_instance("instance", instance)
        self.static = compile_instance(instance)
        self.state = allocate_state(self.static)
        self._handle = make_handle(self.static, self.state)
        self._buffers = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))
        self._begun = False  # the state is uninitialised until reset (or bind, restore) fills it

    # ------------------------------------------------------------------ stepping
    def reset(self) -> None:
        """Start a new episode and advance to the first decision."""
        check_code(reset_one(self._handle), self.instance, self.now)
        self._begun = True

    def bind(self, state: State) -> None:
        """Simulate on ``state`` (arrays of this instance, e.g. a row of an env batch) instead of its own."""
        # None failed inside numba at the next step; another instance's arrays were used unchecked (no bounds checks)
        self._check_state("state", state, "a State of this instance")
        self.state = state
        self._handle = make_handle(self.static, state)
        self._begun = True

    @property
    def done(self) -> bool:
        """True once every job is completed or cancelled (and before the first :meth:`reset`)."""
        return int(self.state.counters[C_OPEN_JOBS]) == 0

    @property
    def now(self) -> float:
        """The simulation clock."""
        return float(self.state.now[0])

    @property
    def decisions(self) -> int:
        """Decisions taken so far in this episode."""
        return int(self.state.counters[C_DECISIONS])

    def candidates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The startable pairs now: (jobs, machines, remaining processing times), in job order."""
        jobs, machines, times = self._buffers
        n = candidates_one(self._handle, jobs, machines, times)
        if n > len(jobs):
            self._buffers = jobs, machines, times = (np.empty(2 * n, np.int64), np.empty(2 * n, np.int64),
                                                     np.empty(2 * n, np.float64))
            candidates_one(self._handle, jobs, machines, times)
        return jobs[:n].copy(), machines[:n].copy(), times[:n].copy()

    def step(self, job: int, machine: int) -> None:
        """Start ``job``'s current operation on ``machine`` now; advance to the next decision."""
        self._check_begun()
        if self.done:
            raise RuntimeError("the episode is over; call reset()")
        if type(job) not in _ID_TYPES or type(machine) not in _ID_TYPES:  # the common types pass at once
            for name, value in (("job", job), ("machine", machine)):  # 0.7 is not job 0, nor "1" job 1
                if not is_integer(value):
                    raise TypeError(f"{name} must be an integer (a {name} id), got {value!r}")
        # an id beyond int64 is none: the kernel refuses -1 as it refuses every unknown id
        code = step_one(self._handle, int(job) if -_ID_LIMIT <= job < _ID_LIMIT else -1,
                        int(machine) if -_ID_LIMIT <= machine < _ID_LIMIT else -1)
        if code == kernels.ERR_INVALID_ACTION:
            jobs, machines, _ = self.candidates()
            offered = ", ".join(f"({j}, {m})" for j, m in zip(jobs[:_SHOWN].tolist(), machines[:_SHOWN].tolist()))
            raise ValueError(f"(job {job}, machine {machine}) cannot start at t={self.now}; candidates() offers "
                             f"{offered}{f', ... ({len(jobs)} pairs)' if len(jobs) > _SHOWN else ''}")
        check_code(code, self.instance, self.now)

    def run(self, rule: str = "SPT", seed: int | None = None, max_decisions: int = -1) -> None:
        """Dispatch with a jitted rule (see :mod:`dynasched_gym.core.rules`) without returning to Python, for at most
        ``max_decisions`` decisions (-1: to the end)."""
        job_rule, machine_rule = parse_rule(rule)  # checked also when the episode is over: a typo is no no-op
        if seed is not None:
            check_seed(seed)
        # an integer (3.5 or "3" never equalled the count, and ran to the end); beyond int64 it is never reached
        max_decisions = check_integer("max_decisions", max_decisions, -1)
        if max_decisions >= 2**63:
            max_decisions = -1
        self._check_begun()  # before it, done is True: run() returned having done nothing
        if self.done:
            return
        if seed is not None:
            seed_rng(seed)
        check_code(run_rule_one(self._handle, job_rule, machine_rule, max_decisions), self.instance, self.now)

    # ------------------------------------------------------------ snapshots
    def snapshot(self) -> State:
        """A copy of the full mutable state (shares no memory with the simulation)."""
        snapshot = copy_state(self.state)
        _TAKEN_OF[id(snapshot.now)] = self.instance
        weakref.finalize(snapshot.now, _TAKEN_OF.pop, id(snapshot.now), None)
        return snapshot

    def restore(self, snapshot: State) -> None:
        """Return to a state taken by :meth:`snapshot` of this instance, or of an equal one (the snapshot stays
        usable); a snapshot another simulator took of another instance is refused."""
        self._check_state("snapshot", snapshot, "a State from Simulator.snapshot()")
        for dst, src in zip(self.state, snapshot):
            np.copyto(dst, src)
        self._begun = True

    def _check_begun(self) -> None:
        """Raise unless an episode has begun: before the first reset the state arrays hold no episode."""
        if not self._begun:
            raise RuntimeError("no episode yet: call reset() first")

    def _check_state(self, name: str, state: object, kind: str) -> None:
        """Raise naming ``name`` unless ``state`` is a State whose arrays have this simulation's shapes and dtypes
        (all checked before any is used), and not a :meth:`snapshot` of another instance."""
        if not isinstance(state, State):
            raise TypeError(f"{name} must be {kind}, got {type(state).__name__}")
        for field, dst, src in zip(State._fields, self.state, state):
            if not isinstance(src, np.ndarray) or src.shape != dst.shape or src.dtype != dst.dtype:
                raise ValueError(f"{name} is not of this simulation of {self.instance.name!r}: its {field} is "
                                 f"{getattr(src, 'dtype', type(src).__name__)} of shape {getattr(src, 'shape', None)}, "
                                 f"expected {dst.dtype} of shape {dst.shape} (of another instance?)")
        taken_of = _TAKEN_OF.get(id(state.now), self.instance)  # unknown (pickled, made by hand): shapes only
        if taken_of is not self.instance and taken_of != self.instance:
            raise ValueError(f"{name} is a snapshot of instance {taken_of.name!r}, not of this simulation's "
                             f"{self.instance.name!r}")

    # ------------------------------------------------------------- results
    def schedule(self) -> Schedule:
        """The schedule so far: finished segments (running ones are left out) and downtime."""
        self._check_begun()  # the zeroed arrays read as every job cancelled at 0, a finished schedule
        st = self.state
        n = int(st.counters[C_SEGMENTS])
        keep = np.ones(n, dtype=bool)
        running = st.machine_segment[st.machine_job >= 0]
        keep[running[running < n]] = False
        d = int(st.counters[C_DOWNTIMES])
        return Schedule(
            instance=self.instance,
            segment_job=st.segment_job[:n][keep].copy(),
            segment_op=st.segment_op[:n][keep].copy(),
            segment_machine=st.segment_machine[:n][keep].copy(),
            segment_start=st.segment_start[:n][keep].copy(),
            segment_end=st.segment_end[:n][keep].copy(),
            segment_work=st.segment_work[:n][keep].copy(),
            segment_status=st.segment_status[:n][keep].copy(),
            downtime_machine=st.downtime_machine[:d].copy(),
            downtime_start=st.downtime_start[:d].copy(),
            downtime_end=st.downtime_end[:d].copy(),
            downtime_kind=st.downtime_kind[:d].copy(),
            job_due=st.job_due.copy(),
            job_weight=st.job_weight.copy(),
            job_completion=st.job_completion.copy(),
            job_cancelled_at=st.job_cancelled_at.copy(),
            decisions=self.decisions,
        )


def rollout(instance: Instance, rule: str = "SPT", seed: int = 0) -> Schedule:
    """Simulate ``instance`` to the end under a dispatching rule and return its schedule.

    ``rule`` is a job rule with an optional machine rule (``"MWKR"``, ``"EDD:EET"``, ``"RANDOM"``);
    ``seed`` drives the RANDOM rule.
    """
    sim = Simulator(instance)
    sim.reset()
    sim.run(rule, seed=seed)
    return sim.schedule()
