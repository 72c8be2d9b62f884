"""The clairvoyant oracle: a CP-SAT model of an instance with every future event known in advance.

:func:`solve_clairvoyant` returns a schedule that passes :func:`~dynasched_gym.validate.validate_schedule`,
its objective value and CP-SAT's lower bound, proven over the model's schedules (an online schedule outside the
model can beat it). The model (details, limits and measured solve times: ``docs/oracle.md``):

- **Variants.** A job's operation list depends on timing (REWORK, ROUTE_CHANGE, CANCELLATION). Its
  job events are replayed symbolically: each outcome of a timing-dependent event becomes a branch with
  its conditions ("slot x started before t", "completed by t", ...). Every leaf is a *variant*: a chain
  of slots and its conditions; the model picks exactly one variant per job. A cancelled job processes
  nothing (only for ``flow_time`` may it instead complete before its cancellation).
- **Slots.** One optional interval per (slot, eligible machine); exactly one is present when the
  variant is chosen. PTIME_CHANGEs make a slot's time piecewise in its start (one *regime* boolean per
  piece); a rework copy inherits the time its original had when it started.
- **Machines.** ``NoOverlap`` of operations and maintenances. A maintenance starts at or after its
  event, after the maintenances queued before it, and no operation starts while it is queued; it may
  overlap a breakdown (their union is the downtime, as in the simulator). A breakdown window is before,
  after or (``resume`` policy) inside an operation, which then resumes on the same machine at the repair.
- **Time.** Times are integer ticks of ``1 / scale``: the smallest power of ten (up to 10^6) that makes
  every time of the instance integral, else the finest that keeps the horizon below 10^9 ticks (then
  durations round up and strict conditions keep a margin). The schedule's float times are the ticks
  divided by ``scale`` with exact processing times, so every condition the model enforces holds in floats.
- **Objectives.** ``makespan``, ``tardiness`` and ``weighted_tardiness`` (due date and weight in force at
  completion: piecewise in the completion time) and ``flow_time`` (mean over completed jobs, a ratio when
  a job may complete before its cancellation).
- **Warm start.** Every dispatching rule of :data:`~dynasched_gym.core.rules.RULES` is rolled out (and an
  optional ``hint`` schedule added); the best one hints CP-SAT and is returned when the solver finds
  nothing better, so the result is never worse than any rule or hint.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

import numpy as np

from dynasched_gym.checks import check_choice, check_integer, check_real
from dynasched_gym.core.rules import RULES
from dynasched_gym.core.simulator import rollout
from dynasched_gym.errors import needs_extra
from dynasched_gym.instance import Event, EventType, Instance, check_instance
from dynasched_gym.metrics import EPS, OBJECTIVE_METRICS
from dynasched_gym.schedule import DOWNTIME_KINDS, SEGMENT_STATUSES, Schedule
from dynasched_gym.validate import events_by_instant, machine_downtime, validate_schedule

with needs_extra("oracle", "the CP-SAT oracle"):
    from ortools.sat.python import cp_model

__all__ = ["SOLVER_OPTIONS", "OracleResult", "check_solver_options", "solve_clairvoyant"]

#: Most variants a job may have (more raise ValueError naming the job).
MAX_VARIANTS = 256
#: Largest tick resolution tried for an exact time grid, and the horizon (ticks) of an inexact one.
MAX_EXACT_SCALE = 10**6
MAX_HORIZON_TICKS = 10**9
#: Mean flow time is minimised as sum_n [n jobs complete] * (L / n) * flow, L = lcm of the possible n, at most this
#: (beyond, L / n rounds down: the objective and bound then slightly underestimate the mean).
MAX_LCM = 10**6
#: Most ticks a time of the model may have: CP-SAT's integers are 64-bit (and sums of them must fit).
_MAX_INT = 2**62
_VALIDATOR_TOL = 1e-6  # validate_schedule's default tolerance, relative to max(1, |t|)
_SNAP = 1e-6  # ticks: x * scale within this of an integer counts as that integer
_STRUCTURAL = (EventType.ROUTE_CHANGE, EventType.REWORK, EventType.CANCELLATION)
_START_LT, _START_GE, _END_LE, _END_GT = range(4)  # condition kinds: start < t, start >= t, end <= t, end > t
_Key = tuple[Any, ...]  # a slot's identity within its job: ("op", k), ("rework", event), ("route", event, i)
_Cond = tuple[int, _Key, float]  # (kind, slot, t)
_COMPLETED, _PREEMPTED = SEGMENT_STATUSES.index("completed"), SEGMENT_STATUSES.index("preempted")
_BREAKDOWN, _MAINTENANCE = DOWNTIME_KINDS.index("breakdown"), DOWNTIME_KINDS.index("maintenance")


@dataclass(frozen=True)
class OracleResult:
    """The clairvoyant solution.

    ``bound`` is CP-SAT's proven lower bound on the objective over the model's schedules (lowered by the
    rounding of an inexact time grid, capped at ``objective``); ``status`` is ``"optimal"`` when CP-SAT
    proved the returned schedule optimal for the model, else ``"feasible"``; ``seconds`` is wall time. The model
    leaves out some schedules (docs/oracle.md, "Limits": preemption, and on an inexact grid those that need two
    float times to coincide exactly), so both speak of the model.
    """

    schedule: Schedule
    objective: float
    bound: float
    status: str
    seconds: float


def _solve_interruptibly(solver: cp_model.CpSolver, model: cp_model.CpModel) -> Any:
    """``solver.solve(model)``, but Ctrl-C raises KeyboardInterrupt at once instead of cutting the search short.

    CP-SAT's default ``catch_sigint_signal`` takes SIGINT for itself: the search stops and returns a
    schedule as if the time limit had passed, which a caller would store as a normal result. Here the
    parameter is off and, in the main thread (the one signals reach), the search runs in a helper thread
    while the main thread waits; an interrupt stops the search (``stop_search``) and is raised again.
    """
    solver.parameters.catch_sigint_signal = False
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model)
    outcome: dict[str, Any] = {}
    finished = threading.Event()  # not Thread.join: interrupted, it may report a running thread as stopped

    def search() -> None:
        try:
            outcome["status"] = solver.solve(model)
        except BaseException as exc:  # handed to the main thread
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=search, name="cp-sat", daemon=True).start()
    try:
        while not finished.wait(0.05):
            pass
    except KeyboardInterrupt:
        while not finished.is_set():  # the search may not have started yet: ask until it has stopped
            solver.stop_search()
            finished.wait(0.05)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["status"]


#: The solver options of :func:`solve_clairvoyant`: what a configuration may set (the instance, the objective and a
#: hint come from the caller).
SOLVER_OPTIONS = ("time_limit", "workers", "seed")


def check_solver_options(time_limit: Any = 10.0, workers: Any = 2, seed: Any = 0) -> tuple[float, int, int]:
    """The :data:`SOLVER_OPTIONS` of :func:`solve_clairvoyant` checked, as it checks them (``scripts.evaluate`` checks
    an entry's before any episode): a ``time_limit`` that is no finite number > 0, ``workers`` < 1 or a ``seed``
    outside [0, 2**31) is a ValueError (a TypeError where no number or integer), naming the option and the value."""
    time_limit = check_real("time_limit", time_limit, 0.0, open_low=True)  # -1 or NaN ran 0.05 s without a word
    workers = check_integer("workers", workers, 1)  # CP-SAT reads 0 as "choose for me"
    seed = check_integer("seed", seed, 0)
    if seed >= 2**31:
        raise ValueError(f"seed must be an integer in [0, 2**31) (CP-SAT's random_seed), got {seed!r}")
    return time_limit, workers, seed


def solve_clairvoyant(
    instance: Instance,
    objective: str = "weighted_tardiness",
    time_limit: float = 10.0,
    workers: int = 2,
    seed: int = 0,
    hint: Schedule | None = None,
) -> OracleResult:
    """Solve ``instance`` with full knowledge of its future events (module docstring, ``docs/oracle.md``).

    Args:
        instance: the instance, events included.
        objective: ``makespan | tardiness | weighted_tardiness | flow_time`` (the metric
            ``makespan | total_tardiness | total_weighted_tardiness | mean_flow_time``).
        time_limit: seconds for the rule rollouts, the model and the solver (at least 0.05 s for the solver);
            reading and validating the solver's schedule come on top.
        workers: CP-SAT search workers.
        seed: CP-SAT random seed.
        hint: a finished schedule of ``instance`` (e.g. an agent's); the result is never worse.

    Raises:
        ValueError: unknown objective, a hint of another instance or unfinished, a job with more
            than :data:`MAX_VARIANTS` variants, times (or a tardiness) of more ticks than CP-SAT's integers hold,
            a ``time_limit`` not a finite number > 0, ``workers`` < 1, or a ``seed`` outside [0, 2**31).
        TypeError: ``instance`` is no Instance, ``objective`` no string, ``hint`` no Schedule, ``time_limit`` no
            number, ``workers`` or ``seed`` no integer.
        RuntimeError: the model's schedule fails validation (a bug).
    """
    t0 = time.perf_counter()
    check_instance("instance", instance)
    check_choice("objective", objective, tuple(OBJECTIVE_METRICS))  # a list failed with "unhashable type: 'list'"
    key = OBJECTIVE_METRICS[objective]
    time_limit, workers, seed = check_solver_options(time_limit, workers, seed)
    if hint is not None and not isinstance(hint, Schedule):
        raise TypeError(f"hint must be a Schedule of the instance or None, got {type(hint).__name__}: {hint!r:.80}")
    if hint is not None and (hint.instance != instance or not hint.finished):
        raise ValueError("hint must be a finished schedule of the same instance")
    candidates = [rollout(instance, rule) for rule in RULES] + ([hint] if hint is not None else [])
    best = min(candidates, key=lambda s: s.metrics[key])
    model = _Model(instance, objective)
    model.add_hint(best)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.max_time_in_seconds = max(0.05, time_limit - (time.perf_counter() - t0))
    status = _solve_interruptibly(solver, model.cp)
    schedule, value = best, best.metrics[key]
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solved = model.schedule(solver)
        report = validate_schedule(solved)
        if not report.ok:
            raise RuntimeError(f"the oracle built an invalid schedule (a bug; please report it): {report}")
        if solved.metrics[key] <= value:
            schedule, value = solved, solved.metrics[key]
    bound = max(0.0, model.bound(solver.best_objective_bound))
    # else a hint beat the model's optimum, or with rounded weights the model's optimum may not be the schedules'
    error = model.float_error()
    optimal = status == cp_model.OPTIMAL and (bound <= value + error if model.weights_exact else bound >= value - error)
    return OracleResult(schedule, value, min(bound, value), "optimal" if optimal else "feasible",
                        time.perf_counter() - t0)


# ------------------------------------------------------------------------------------ time grid
@dataclass(frozen=True)
class _Grid:
    """Integer ticks of ``1 / scale`` time units. ``exact``: every time of the instance is a whole tick.

    Float times are ticks / scale with exact processing times, so a float end lies up to ``slack`` - 1
    ticks below the integer end (rounded-up durations and breakdown windows); strict conditions keep
    that slack and, on an inexact grid, twice the validator's tolerance.
    """

    scale: int
    exact: bool
    slack: int

    def up(self, x: float) -> int:
        return math.ceil(x * self.scale - _SNAP)

    def down(self, x: float) -> int:
        return math.floor(x * self.scale + _SNAP)

    def _margin(self, t: float) -> float:
        return 0.0 if self.exact else 2 * _VALIDATOR_TOL * max(1.0, abs(t))

    def started_before(self, t: float) -> int:
        """Latest start (ticks) of a slot that counts as started before ``t``."""
        return self.down(t - self._margin(t)) - 1

    def ends_after(self, t: float) -> int:
        """Earliest end (ticks) of a slot that counts as not completed by ``t``."""
        return self.up(t + self._margin(t)) + self.slack


def _grid(values: Sequence[float], horizon: float, max_windows: int) -> _Grid:
    arr = np.abs(np.asarray(values, dtype=np.float64))
    for k in range(int(math.log10(MAX_EXACT_SCALE)) + 1):
        scaled = arr * 10**k
        whole = np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1, scaled))
        if whole and horizon * 10**k <= MAX_HORIZON_TICKS:
            return _Grid(10**k, True, 1)
    scale = 10 ** max(0, int(math.log10(MAX_HORIZON_TICKS / max(horizon, 1.0))))
    return _Grid(scale, False, 2 + 2 * max_windows)


# ------------------------------------------------------------------------------------- variants
@dataclass(frozen=True)
class _Slot:
    """An operation slot: its eligible times (or, for a rework copy, its ``origin``) and PTIME_CHANGEs."""

    key: _Key
    times: dict[int, float] | None
    origin: _Slot | None = None
    changes: tuple[Event, ...] = ()

    def regimes(self, speed: np.ndarray) -> list[tuple[tuple[tuple[_Key, int], ...], dict[int, float]]]:
        """(regime conditions [(slot key, regime index)], machine -> time) for each piecewise case.

        Regime r of a slot means its first ``r`` change times are <= its start (those changes apply).
        """
        base = self.origin.regimes(speed) if self.origin is not None else [((), dict(self.times or {}))]
        breaks = self.breaks()
        out = []
        for (conds, times), r in product(base, range(len(breaks) + 1)):
            cur = dict(times)
            for e in self.changes:
                if r and e.time <= breaks[r - 1]:
                    cur = ({m: p * e.factor for m, p in cur.items()} if e.factor is not None
                           else {m: e.value / float(speed[m]) for m in cur})  # type: ignore[operator]
            out.append((conds + (((self.key, r),) if breaks else ()), cur))
        return out

    def breaks(self) -> list[float]:
        return sorted({e.time for e in self.changes})


@dataclass(frozen=True)
class _Variant:
    """A job's operation list under one outcome of its timing-dependent events, with the conditions
    ``(kind, slot key, t)`` that outcome needs; ``cancelled_at`` set: the job is cancelled then."""

    slots: tuple[_Slot, ...]
    conds: tuple[_Cond, ...]
    cancelled_at: float | None = None


def _job_events(instance: Instance, j: int) -> list[tuple[int, Event]]:
    """(index in the stream, event) of job ``j``, in the order they apply."""
    evs = [(i, e) for i, e in enumerate(instance.events) if e.job == j]
    return sorted(evs, key=lambda ie: (ie[1].time, ie[1].type, ie[0]))


def _variants(instance: Instance, j: int, objective: str) -> list[_Variant]:
    """Every variant of job ``j`` that may be feasible (pruned by earliest start times)."""
    events = _job_events(instance, j)
    cancels = [e for _, e in events if e.type == EventType.CANCELLATION]
    if cancels and objective != "flow_time":  # processing a job that gets cancelled never helps
        return [_Variant((), (), cancels[0].time)]
    release, speed = float(instance.job_release[j]), instance.machine_speed
    lo, hi = instance.job_op_ptr[j], instance.job_op_ptr[j + 1]
    out: list[_Variant] = []

    def feasible(slots: tuple[_Slot, ...], conds: tuple[_Cond, ...]) -> bool:  # by earliest start and end times
        est, early = release, {}
        for s in slots:
            est = max([est] + [t for k, key, t in conds if k == _START_GE and key == s.key])
            early[s.key] = (est, est + min(min(tm.values()) for _, tm in s.regimes(speed)))
            est = early[s.key][1]
        # float sums overshoot (0.1 + 0.2 > 0.3), where the simulator and the grid see an end at t: not impossible
        late = [(k, key, t + EPS * max(1.0, abs(t))) for k, key, t in conds if key in early]
        return not any((k == _START_LT and early[key][0] >= t) or (k == _END_LE and early[key][1] > t)
                       for k, key, t in late)

    def leaf(slots: tuple[_Slot, ...], conds: tuple[_Cond, ...]) -> None:
        if len(out) >= MAX_VARIANTS:
            kinds = [e.type.name for _, e in events if e.type in _STRUCTURAL]
            raise ValueError(f"job {j} has more than {MAX_VARIANTS} variants (timing-dependent events: {kinds}); "
                             "the oracle cannot model it")
        keys = {s.key for s in slots}
        out.append(_Variant(slots, tuple(c for c in conds if c[1] in keys)))

    def walk(pos: int, slots: tuple[_Slot, ...], conds: tuple[_Cond, ...], u_min: int) -> None:
        for at in range(pos, len(events)):
            idx, e = events[at]
            t, n = e.time, len(slots)
            if e.type == EventType.PTIME_CHANGE and e.op < n:  # type: ignore[operator]
                slots = (*slots[:e.op], replace(slots[e.op], changes=(*slots[e.op].changes, e)), *slots[e.op + 1:])
            if e.type not in _STRUCTURAL:
                continue
            branches = [(slots, (*conds, (_END_LE, slots[-1].key, t)), None)]  # completed by t: later events ignored
            if e.type == EventType.CANCELLATION:
                out.append(_Variant((), (), t))
            else:
                branches += _outcomes(e, idx, slots, conds, u_min)
            for new_slots, new_conds, new_u in branches:
                if feasible(new_slots, new_conds):
                    if new_u is None:
                        leaf(new_slots, new_conds)
                    else:
                        walk(at + 1, new_slots, new_conds, new_u)
            return
        leaf(slots, conds)

    walk(0, tuple(_Slot(("op", k), instance.operation(o)) for k, o in enumerate(range(lo, hi))), (), 0)
    return out


def _outcomes(e: Event, idx: int, slots: tuple[_Slot, ...], conds: tuple[_Cond, ...],
              u_min: int) -> list[tuple[tuple[_Slot, ...], tuple[_Cond, ...], int]]:
    """The branches (slots, conditions, first-untouched lower bound) of a REWORK or ROUTE_CHANGE at
    ``e.time`` on a job that is not complete then (docs/semantics.md)."""
    t, n = e.time, len(slots)
    out = []
    running = ((_END_GT, slots[-1].key, t),)  # the last slot started and runs past t (else the job is complete)
    if e.type == EventType.REWORK:
        k = e.op
        if k >= n:  # type: ignore[operator]
            return [(slots, conds, u_min)]
        out.append((slots, (*conds, (_END_GT, slots[k].key, t)), u_min))  # slot k not completed by t: ignored
        copy = _Slot(("rework", idx), None, slots[k])
        for u in range(max(u_min, k + 1), n + 1):  # type: ignore[operator]
            extra = ((_END_LE, slots[k].key, t), (_START_LT, slots[u - 1].key, t), (_START_GE, copy.key, t))
            out.append(((*slots[:u], copy, *slots[u:]), conds + extra + (running if u == n else ()), u))
        return out
    new = tuple(_Slot(("route", idx, i), dict(op)) for i, op in enumerate(e.ops or ()))
    s = e.op or 0
    first = ((_START_GE, new[0].key, t),)
    if s >= n:
        return [(slots + new, conds + first + running, u_min)]
    if u_min <= s:  # first untouched slot <= s: slots from s on are replaced
        out.append((slots[:s] + new, conds + first, u_min))
    for u in range(max(u_min, s + 1), n + 1):  # first untouched slot u > s: slots from u on are replaced
        extra = ((_START_LT, slots[u - 1].key, t),) + (running if u == n else ())
        out.append((slots[:u] + new, conds + first + extra, u))
    return out


# ------------------------------------------------------------------------------------- machines
def _breakdown_windows(instance: Instance) -> list[list[list[float]]]:
    """Per machine, the [start, end] of each breakdown downtime (BREAKDOWN, extension, early REPAIR)."""
    windows: list[list[list[float]]] = [[] for _ in range(instance.num_machines)]
    for e in sorted(instance.events, key=lambda e: (e.time, e.type)):
        if e.type not in (EventType.BREAKDOWN, EventType.REPAIR):
            continue
        ws = windows[e.machine]  # type: ignore[index]
        open_ = ws[-1] if ws and ws[-1][0] <= e.time < ws[-1][1] else None
        if e.type == EventType.REPAIR:
            if open_ is not None and open_[0] < e.time:
                open_[1] = e.time
        elif open_ is not None and e.time + EPS < open_[1]:  # else it ends first (in the instant), as in the simulator
            open_[1] = max(open_[1], e.time + e.duration)  # type: ignore[operator]
        else:
            windows[e.machine].append([e.time, e.time + e.duration])  # type: ignore[index, operator]
    return windows


# ---------------------------------------------------------------------------------------- model
@dataclass
class _SlotVars:
    """CP-SAT variables of one slot of one variant."""

    slot: _Slot
    start: cp_model.IntVar
    end: cp_model.IntVar
    machines: dict[int, cp_model.IntVar]  # machine -> presence literal
    cases: list[tuple[Any, dict[int, float]]]  # (literal or None, machine -> time) per regime case
    inside: dict[int, list[tuple[int, cp_model.IntVar]]]  # machine -> (window index, "runs across it" literal)


class _Model:
    """The CP-SAT model of one instance and objective, and the schedule of a solution."""

    def __init__(self, instance: Instance, objective: str) -> None:
        self.inst = instance
        # every event at its instant's time (docs/semantics.md, "Instants"): events less than EPS apart apply
        # together, in type order; the returned schedule still names the instance as given
        inst = self.timed = instance.replace(events=tuple(events_by_instant(instance.events)))
        self.objective = objective
        self.variants = [_variants(inst, j, objective) for j in range(inst.num_jobs)]
        self.windows = _breakdown_windows(inst)
        self.maint = [[(e.time, float(e.duration)) for e in inst.events  # type: ignore[arg-type]
                       if e.type == EventType.MAINTENANCE and e.machine == m] for m in range(inst.num_machines)]
        speed = inst.machine_speed
        horizon = (max([0.0, *inst.job_release] + [e.time for e in inst.events] + [w[1] for ws in self.windows
                                                                                   for w in ws])
                   + sum(d for ms in self.maint for _, d in ms) + sum(w[1] - w[0] for ws in self.windows for w in ws)
                   + sum(max((sum(max(max(tm.values()) for _, tm in s.regimes(speed)) for s in v.slots)
                              for v in vs), default=0.0) for vs in self.variants) + 1.0)
        values = ([*inst.job_release, *inst.job_due[~np.isnan(inst.job_due)]]
                  + [x for e in inst.events for x in (e.time, e.duration, e.due) if x is not None]
                  + [p for vs in self.variants for v in vs for s in v.slots for _, tm in s.regimes(speed)
                     for p in tm.values()])
        self.grid = _grid(values, horizon, max((len(ws) for ws in self.windows), default=0))
        self.horizon = self.grid.up(horizon)
        if self.horizon * max(1, inst.num_jobs) > _MAX_INT:  # the flow time sums the jobs'; ortools raised a TypeError
            raise ValueError(f"instance {instance.name!r}: its horizon, {horizon:g} time units, times its "
                             f"{inst.num_jobs} jobs is more ticks than CP-SAT's integers hold ({_MAX_INT}); the oracle "
                             "cannot model it")
        self.cp = cp_model.CpModel()
        self._build_machines()
        self._build_jobs()
        self._build_objective()

    # ---------------------------------------------------------------------------- variables
    def _time(self) -> cp_model.IntVar:
        return self.cp.new_int_var(0, self.horizon, "")

    def _build_machines(self) -> None:
        g, cp = self.grid, self.cp
        self.intervals: list[list[Any]] = [[] for _ in range(self.inst.num_machines)]
        self.maint_vars: list[list[cp_model.IntVar]] = []
        for m, ms in enumerate(self.maint):
            starts: list[cp_model.IntVar] = []
            ends: list[Any] = []
            uncut: dict[tuple[int, int], cp_model.IntVar] = {}
            for i, (t, d) in enumerate(ms):
                start = cp.new_int_var(g.up(t), self.horizon, "")
                self.intervals[m].append(cp.new_fixed_size_interval_var(start, g.up(d), ""))
                exempt = []  # a maintenance in a block that a breakdown cuts may start inside it (absorbed whole)
                if ends:  # queued maintenances run in order, back to back at the earliest
                    cp.add(start >= ends[-1])
                    joined = cp.new_bool_var("")  # it continues the previous one's block, which nothing cut by t
                    cp.add(start == ends[-1]).only_enforce_if(joined)
                    cut_before = sum(w[0] < t for w in self.windows[m])
                    cp.add_implication(joined, self._uncut(m, i - 1, cut_before, starts, ends, uncut))
                    exempt.append(~joined)
                for b_s, b_e in self.windows[m]:  # never starts inside a breakdown (it may start before one)
                    if b_s < t < b_e:
                        cp.add(start >= g.up(b_e))
                    elif b_e > t:
                        early = cp.new_bool_var("")
                        cp.add(start <= g.down(b_s)).only_enforce_if(early)
                        cp.add(start >= g.up(b_e)).only_enforce_if(~early, *exempt)
                starts.append(start)
                ends.append(start + g.up(d))
            self.maint_vars.append(starts)

    def _uncut(self, m: int, i: int, k: int, starts: list[cp_model.IntVar], ends: list[Any],
               memo: dict[tuple[int, int], cp_model.IntVar]) -> cp_model.IntVar:
        """A literal that holds only if none of the first ``k`` breakdown windows of machine ``m`` cut the block
        of maintenance ``i`` (a chain of back-to-back ones): a maintenance that arrives after such a cut finds the
        machine in a breakdown, not in the block, and waits for its end.

        A window cuts a maintenance that has started by its start and is not over then. The simulator starts a
        maintenance no later than the model does (at the first moment the machine is idle and up), so only one
        whose event comes after the window's start surely starts after it; any other must be over by then.
        """
        if (i, k) not in memo:
            cp, g = self.cp, self.grid
            lit = memo[i, k] = cp.new_bool_var("")
            t = self.maint[m][i][0]
            for b_s, _ in self.windows[m][:k]:  # windows are in time order
                if t <= b_s:  # else it starts after the window's start
                    cp.add(ends[i] <= g.down(b_s)).only_enforce_if(lit)
            if i:  # the block goes on from the previous maintenance, or begins here
                head = cp.new_bool_var("")
                cp.add(starts[i] > ends[i - 1]).only_enforce_if(head)
                cp.add_bool_or([~lit, head, self._uncut(m, i - 1, k, starts, ends, memo)])
        return memo[i, k]

    def _build_jobs(self) -> None:
        cp, g, inst = self.cp, self.grid, self.inst
        speed = inst.machine_speed
        self.chosen: list[list[cp_model.IntVar]] = []
        self.slot_vars: list[list[list[_SlotVars]]] = []
        self.completion: list[cp_model.IntVar] = []
        self.alive: list[Any] = []  # 1 - (cancelled variant chosen), as a linear expression
        for j, variants in enumerate(self.variants):
            xs = [cp.new_bool_var("") for _ in variants]
            cp.add_exactly_one(xs)
            c = self._time()
            self.chosen.append(xs)
            self.completion.append(c)
            self.alive.append(1 - sum(x for x, v in zip(xs, variants) if v.cancelled_at is not None))
            job_vars = []
            for x, v in zip(xs, variants):
                regime_lits: dict[_Key, list[cp_model.IntVar]] = {}
                svs = [self._slot(slot, x, speed, regime_lits) for slot in v.slots]
                est = g.up(float(inst.job_release[j]))  # earliest start (ticks)
                for i, sv in enumerate(svs):
                    cp.add(sv.start >= (est if i == 0 else svs[i - 1].end))
                    self._machine_links(sv, est)
                    est += g.up(min(min(tm.values()) for _, tm in sv.cases))
                where = {sv.slot.key: sv for sv in svs}
                for kind, key, t in v.conds:
                    sv = where[key]
                    cp.add([sv.start <= g.started_before(t), sv.start >= g.up(t), sv.end <= g.down(t),
                            sv.end >= g.ends_after(t)][kind]).only_enforce_if(x)
                cp.add(c == (svs[-1].end if svs else 0)).only_enforce_if(x)
                job_vars.append(svs)
            self.slot_vars.append(job_vars)

    def _slot(self, slot: _Slot, chosen: cp_model.IntVar, speed: np.ndarray,
              regime_lits: dict[_Key, list[cp_model.IntVar]]) -> _SlotVars:
        """Variables of ``slot`` in a variant chosen by ``chosen``; ``regime_lits`` holds the regime
        literals of the variant's slots (a rework copy's time depends on its origin's regime)."""
        cp = self.cp
        start, end = self._time(), self._time()
        if slot.changes:
            regime_lits[slot.key] = self._regimes(slot.breaks(), start)
        cases = []
        for conds, times in slot.regimes(speed):
            # a rework copy's origin may carry later PTIME_CHANGEs than the copy saw; they fall after the
            # rework, which the origin completes before, so its regime indices agree on what can happen
            lits = [regime_lits[key][r] for key, r in conds]
            if len(lits) > 1:
                both = cp.new_bool_var("")
                cp.add_bool_and(lits).only_enforce_if(both)
                cp.add_bool_or([~lit for lit in lits] + [both])
                lits = [both]
            cases.append((lits[0] if lits else None, times))
        machines = {m: cp.new_bool_var("") for m in cases[0][1]}
        cp.add(sum(machines.values()) == chosen)
        return _SlotVars(slot, start, end, machines, cases, {})

    def _regimes(self, breaks: list[float], start: cp_model.IntVar) -> list[cp_model.IntVar]:
        """One literal per regime of a slot with PTIME_CHANGEs at ``breaks``: regime r <=> the slot
        starts at or after the first r of them and before the next."""
        lits = [self.cp.new_bool_var("") for _ in range(len(breaks) + 1)]
        self.cp.add_exactly_one(lits)
        for r, lit in enumerate(lits):
            if r:
                self.cp.add(start >= self.grid.up(breaks[r - 1])).only_enforce_if(lit)
            if r < len(breaks):
                self.cp.add(start <= self.grid.started_before(breaks[r])).only_enforce_if(lit)
        return lits

    def _machine_links(self, sv: _SlotVars, est: int) -> None:
        """Interval, breakdown windows and maintenances of each machine option of ``sv``."""
        cp, g = self.cp, self.grid
        resume = self.inst.breakdown_policy == "resume"
        for m, lit in sv.machines.items():
            ticks = [(case, g.up(times[m])) for case, times in sv.cases]
            size_terms = [p if case is None else p * case for case, p in ticks]
            inside = []
            for w, (b_s, b_e) in enumerate(self.windows[m]):
                if g.up(b_e) <= est or b_s >= self.horizon / g.scale:
                    continue
                after = cp.new_bool_var("")
                cp.add(sv.start >= g.up(b_e)).only_enforce_if([lit, after])
                if resume:
                    across = cp.new_bool_var("")
                    cp.add_at_most_one([after, across])
                    cp.add(sv.start <= g.down(b_s) - 1).only_enforce_if([lit, across])
                    cp.add(sv.end >= g.up(b_e) + g.slack).only_enforce_if([lit, across])
                    cp.add(sv.end <= g.down(b_s)).only_enforce_if([lit, ~after, ~across])
                    size_terms.append((g.up(b_e) - g.down(b_s)) * across)
                    inside.append((w, across))
                else:
                    cp.add(sv.end <= g.down(b_s)).only_enforce_if([lit, ~after])
            sv.inside[m] = inside
            if len(size_terms) == 1 and ticks[0][0] is None:
                size: Any = ticks[0][1]
            else:
                size = cp.new_int_var(0, self.horizon, "")
                cp.add(size == sum(size_terms)).only_enforce_if(lit)
            self.intervals[m].append(cp.new_optional_interval_var(sv.start, size, sv.end, lit, ""))
            for (t, d), start in zip(self.maint[m], self.maint_vars[m]):
                after_maint = sv.start >= start + g.up(d)
                if g.up(t) <= est:  # cannot start before t: after it
                    cp.add(after_maint).only_enforce_if(lit)
                    continue
                before = cp.new_bool_var("")
                cp.add(sv.start <= g.started_before(t)).only_enforce_if([lit, before])  # not in t's instant
                cp.add(after_maint).only_enforce_if([lit, ~before])
                for w, across in inside:  # resuming at a repair while this maintenance is queued is not possible
                    if t <= self.windows[m][w][1]:
                        cp.add_bool_or([~across, ~before])

    # ---------------------------------------------------------------------------- objective
    def _build_objective(self) -> None:
        cp, g, inst = self.cp, self.grid, self.inst
        self.weights_exact, self.weight_ratio = True, 1.0  # ratio: the least weight / its rounding in the model
        for m in range(inst.num_machines):
            cp.add_no_overlap(self.intervals[m])
        if self.objective == "makespan":
            cmax = self._time()
            cp.add_max_equality(cmax, self.completion)
            cp.minimize(cmax)
            self.scale, self.slack_terms = g.scale, 1
        elif self.objective == "flow_time":  # sum_n [n jobs complete] * flow / n, as (lcm / n) * flow
            flow = sum(c - g.up(float(r)) * a for c, r, a in zip(self.completion, inst.job_release, self.alive))
            fixed = sum(1 for vs in self.variants if all(v.cancelled_at is None for v in vs))
            counts = {n: cp.new_bool_var("") for n in range(fixed, inst.num_jobs + 1)}
            cp.add_exactly_one(counts.values())
            cp.add(sum(self.alive) == sum(n * z for n, z in counts.items()))
            lcm = min(math.lcm(*(n for n in counts if n)), MAX_LCM)
            terms = []
            for n, z in counts.items():
                if n:
                    share = cp.new_int_var(0, inst.num_jobs * self.horizon, "")
                    cp.add(share >= flow).only_enforce_if(z)
                    terms.append(lcm // n * share)
            cp.minimize(sum(terms))
            self.scale, self.slack_terms = g.scale * lcm, lcm
        else:
            weighted = self.objective == "weighted_tardiness"
            pieces = [_pieces(self.timed, j) for j in range(inst.num_jobs)]
            weights = [w for ps in pieces for _, _, w in ps] if weighted else [1.0]
            wscale = next((10**k for k in range(7) if all(abs(w * 10**k - round(w * 10**k)) <= 1e-9 * max(1, w * 10**k)
                                                            for w in weights)), None)
            if wscale is None:  # rounded: the model's optimum need not be the schedules' (its bound is scaled down)
                wscale, self.weights_exact = 10**6, False
                self.weight_ratio = min([1.0] + [w * wscale / round(w * wscale) for w in weights if round(w * wscale)])
            terms = []
            for j, ps in enumerate(pieces):
                split = len(ps) > 1 or any(v.cancelled_at is not None for v in self.variants[j])
                lits = [cp.new_bool_var("") for _ in ps] if split else [None]
                if split:  # one piece when the job completes, none when it is cancelled
                    cp.add(sum(lits) == self.alive[j])
                for i, ((t_from, due, w), lit) in enumerate(zip(ps, lits)):
                    enforce = [lit] if lit is not None else []
                    if i:
                        cp.add(self.completion[j] >= g.ends_after(t_from)).only_enforce_if(enforce)
                    if i + 1 < len(ps):
                        cp.add(self.completion[j] <= g.down(ps[i + 1][0])).only_enforce_if(enforce)
                    due_ticks = None if due is None else round(due * g.scale)
                    if due_ticks is not None and due_ticks < self.horizon:  # never tardy by a later one
                        if self.horizon - due_ticks > _MAX_INT:  # as the horizon's
                            raise ValueError(f"job {j}: its tardiness against due date {due:g} is more ticks than "
                                             f"CP-SAT's integers hold ({_MAX_INT}); the oracle cannot model it")
                        tard = cp.new_int_var(0, self.horizon - min(0, due_ticks), "")
                        cp.add(tard >= self.completion[j] - due_ticks).only_enforce_if(enforce)
                        terms.append(round((w if weighted else 1.0) * wscale) * tard)
            cp.minimize(sum(terms))
            max_w = [max(w for _, due, w in ps if due is not None) if any(d is not None for _, d, _ in ps) else 0.0
                     for ps in pieces]
            self.scale = g.scale * wscale
            self.slack_terms = sum(round((w if weighted else 1.0) * wscale) for w in max_w if w)

    def bound(self, solver_bound: float) -> float:
        """The solver's bound in time units, lowered by the rounding of the grid and of the weights (a weight
        rounded up by the model makes its objective larger than the schedule's)."""
        g = self.grid
        items = sum(max(len(v.slots) for v in vs) for vs in self.variants) + sum(len(ms) for ms in self.maint)
        ticks = 0 if g.exact else items * (3 + g.slack) * self.slack_terms
        return (solver_bound - ticks) / self.scale * self.weight_ratio

    def float_error(self) -> float:
        """A bound on the float rounding of a schedule's objective: its times are sums of floats (three jobs of 0.7 end
        at 2.0999999999999996, the model's optimum is 21 ticks of 0.1), so a value this close to the bound meets it."""
        per_tick = self.slack_terms * self.grid.scale / self.scale  # the objective's weight of one time unit
        return 1e-12 * max(1.0, self.horizon / self.grid.scale) * per_tick

    # --------------------------------------------------------------------------------- hint
    def add_hint(self, schedule: Schedule) -> None:
        """Hint the variants, machines and starts of ``schedule`` where the model can represent them."""
        g = self.grid
        by_job: list[dict[int, list[int]]] = [{} for _ in range(self.inst.num_jobs)]
        for s, (j, k) in enumerate(zip(schedule.segment_job, schedule.segment_op)):
            by_job[j].setdefault(int(k), []).append(s)
        for j, variants in enumerate(self.variants):
            slots = by_job[j]
            cancelled = not np.isnan(schedule.job_cancelled_at[j])
            first = {k: float(schedule.segment_start[ss[0]]) for k, ss in slots.items()}
            end = {k: float(schedule.segment_end[ss[-1]]) for k, ss in slots.items()}
            for x, v, svs in zip(self.chosen[j], variants, self.slot_vars[j]):
                pos = {s.key: i for i, s in enumerate(v.slots)}
                match = ((v.cancelled_at is not None) == cancelled and (cancelled or len(slots) == len(v.slots))
                         and all(i in first and [first[i] < t, first[i] >= t, end[i] <= t, end[i] > t][kind]
                                 for kind, key, t in v.conds for i in [pos[key]]))
                if match and not cancelled:
                    for i, sv in enumerate(svs):
                        machines = {int(schedule.segment_machine[s]) for s in slots[i]}
                        if len(machines) == 1 and machines <= sv.machines.keys():
                            for m, lit in sv.machines.items():
                                self.cp.add_hint(lit, m in machines)
                            self.cp.add_hint(sv.start, min(self.horizon, g.up(first[i])))
                self.cp.add_hint(x, match)
                if match:
                    break

    # ----------------------------------------------------------------------------- solution
    def schedule(self, solver: cp_model.CpSolver) -> Schedule:
        """The float schedule of the solver's solution (segments, downtime and job records)."""
        inst, g = self.inst, self.grid
        segs: list[tuple[int, int, int, float, float, float, int]] = []
        completion = np.full(inst.num_jobs, np.nan)
        cancelled = np.full(inst.num_jobs, np.nan)
        for j, (xs, variants) in enumerate(zip(self.chosen, self.variants)):
            v_idx = next(i for i, x in enumerate(xs) if solver.boolean_value(x))
            if variants[v_idx].cancelled_at is not None:
                cancelled[j] = variants[v_idx].cancelled_at
                continue
            for k, sv in enumerate(self.slot_vars[j][v_idx]):
                m = next(m for m, lit in sv.machines.items() if solver.boolean_value(lit))
                p = next(tm[m] for lit, tm in sv.cases if lit is None or solver.boolean_value(lit))
                tick = solver.value(sv.start)
                cur, work = tick / g.scale, 1.0
                for w, across in sv.inside[m]:
                    if solver.boolean_value(across):
                        b_s, b_e = self.windows[m][w]
                        if b_s > cur:
                            segs.append((j, k, m, cur, b_s, (b_s - cur) / p, _PREEMPTED))
                            work -= (b_s - cur) / p
                        cur = b_e
                segs.append((j, k, m, cur, cur + work * p, work, _COMPLETED))
                completion[j] = cur + work * p
        end = float(np.nanmax(np.fmax(completion, cancelled)))
        down = self._downtime(segs, end)
        due, weight = _in_force(self.timed, completion)
        cols = list(zip(*segs)) if segs else [()] * 7
        return Schedule(
            instance=inst,
            segment_job=np.array(cols[0], dtype=np.int64), segment_op=np.array(cols[1], dtype=np.int64),
            segment_machine=np.array(cols[2], dtype=np.int64), segment_start=np.array(cols[3], dtype=np.float64),
            segment_end=np.array(cols[4], dtype=np.float64), segment_work=np.array(cols[5], dtype=np.float64),
            segment_status=np.array(cols[6], dtype=np.int64),
            downtime_machine=np.array([d[0] for d in down], dtype=np.int64),
            downtime_start=np.array([d[1] for d in down], dtype=np.float64),
            downtime_end=np.array([d[2] for d in down], dtype=np.float64),
            downtime_kind=np.array([d[3] for d in down], dtype=np.int64),
            job_due=due, job_weight=weight, job_completion=completion, job_cancelled_at=cancelled,
        )

    def _downtime(self, segs: Sequence[tuple[int, int, int, float, float, float, int]],
                  end: float) -> list[tuple[int, float, float, int]]:
        """Downtime records up to the episode's ``end``: what each machine's events imply given when it runs
        operations (:func:`~dynasched_gym.validate.machine_downtime`, docs/semantics.md: maintenance queued
        behind operations and run back to back as one block, a breakdown absorbing the block in progress, the
        events of the last instant applied). The model's own downtime never ends earlier, so the operations it
        placed never overlap these records."""
        events: list[list[Event]] = [[] for _ in range(self.inst.num_machines)]
        runs: list[list[tuple[float, float, str]]] = [[] for _ in range(self.inst.num_machines)]
        for e in self.timed.events:
            if e.machine is not None:  # only BREAKDOWN, REPAIR and MAINTENANCE name a machine
                events[e.machine].append(e)
        for seg in segs:
            runs[seg[2]].append((seg[3], seg[4], SEGMENT_STATUSES[seg[6]]))
        return [(m, start, stop, DOWNTIME_KINDS.index(kind)) for m in range(self.inst.num_machines)
                for kind, start, stop in machine_downtime(events[m], runs[m], end)]


def _pieces(instance: Instance, j: int) -> list[tuple[float, float | None, float]]:
    """(from time, due, weight) in force when job ``j`` completes after ``from`` (and, for the next
    piece, by its ``from``); the first piece starts at -inf."""
    due = None if math.isnan(instance.job_due[j]) else float(instance.job_due[j])
    weight = float(instance.job_weight[j])
    out: list[tuple[float, float | None, float]] = [(-math.inf, due, weight)]
    for _, e in _job_events(instance, j):
        if e.type == EventType.DUE_DATE_CHANGE:
            due = e.due
        elif e.type == EventType.PRIORITY_CHANGE:
            weight = float(e.weight)  # type: ignore[arg-type]
        else:
            continue
        if out[-1][0] == e.time:
            out[-1] = (e.time, due, weight)
        else:
            out.append((e.time, due, weight))
    return out


def _in_force(instance: Instance, completion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Due dates and weights in force at each job's completion, or at its cancellation when it has none.

    A completion up to the simulator's EPS after an event applies before it, as in the validator's replay
    (an absolute EPS: the validator's relative tolerance would let a completion 1e-6 after a change at
    t = 25 count as before it).
    """
    due = np.array(instance.job_due, dtype=np.float64)
    weight = np.array(instance.job_weight, dtype=np.float64)
    for j in range(instance.num_jobs):
        c = completion[j]
        for _, e in _job_events(instance, j):
            if (not np.isnan(c) and c <= e.time + EPS) or (e.type == EventType.CANCELLATION and np.isnan(c)):
                break
            if e.type == EventType.DUE_DATE_CHANGE:
                due[j] = e.due
            elif e.type == EventType.PRIORITY_CHANGE:
                weight[j] = e.weight
    return due, weight
