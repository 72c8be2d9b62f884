"""Seeded scenario generator.

:func:`draft` draws every random quantity of an instance once (one ``numpy.random.Generator``
stream per concern: routes, processing times, arrivals, batches, due dates, breakdowns,
maintenance, dynamic events) into a :class:`Draft`. A draft then turns into an
:class:`~dynasched_gym.instance.Instance` through a few **calibration knobs** that the
calibrators (SESC and the evolutionary baselines) edit without drawing anything new:

- ``horizon``: the last release time H; arrivals, breakdowns and maintenance dilate with it
  (utilization ~ 1/H, disturbance unchanged);
- ``arrival_exponent`` a: planned inter-arrival gaps are base_gap**a, rescaled to end at H
  (a = 0 gives regular arrivals; larger a, burstier ones; arrival_scv grows with a);
- ``processing_exponent`` b and ``group_scale``: nominal times are c * s_g * base**b, with c
  keeping the total work fixed (processing_scv grows with b; s_g moves load between groups);
- ``due_scale``: due dates are r_j + due_scale * q_j * P_j (due_date_tightness ~ due_scale);
- ``downtime_scale``: breakdown and maintenance durations (fractions of H) are multiplied by it;
- ``window_downtime[i]``: for bottleneck window i (``Scenario.bottleneck_windows``), one breakdown
  on every machine of the window's group, lasting this fraction of the window (window utilization
  grows with it), at a position inside the window drawn once.

Batch arrivals and every dynamic event are drawn here, before calibration, so the realised
metrics are always those of the exported instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dynasched_gym.checks import check_integer
from dynasched_gym.generation import libm
from dynasched_gym.generation.realised import MetricInputs, group_columns, measure, window_arrays
from dynasched_gym.generation.scenario import (
    ARRIVAL_GRID_STEPS,
    MIN_GAMMA_DRAW,
    Scenario,
    check_scenario,
    maintenance_fraction,
    planned_jobs,
)
from dynasched_gym.instance import Event, EventType, Instance, Job, Machine

#: Bumped whenever the same (scenario, seed) would give a different instance; part of pool cache keys.
GENERATOR_VERSION = "2"

# Append new streams at the end: SeedSequence children are numbered, so the others keep their draws.
_STREAMS = ("routes", "ptimes", "arrivals", "batches", "due", "breakdowns", "maintenance", "events", "windows")
_DUE_SPREAD = 0.3  # log-normal sigma of individual due-date allowances
_PRIORITY_WEIGHTS = (0.5, 2.0, 3.0)


@dataclass
class Draft:
    """Random draws of one instance plus the calibration knobs (see the module docstring).

    Arrays: J jobs, A planned arrivals, O operations, E eligible pairs, M machines,
    B breakdowns, K maintenance windows, V job events, W bottleneck windows, X window breakdowns.
    """

    scenario: Scenario
    seed: int
    machine_speed: np.ndarray  # (M,)
    machine_group: np.ndarray  # (M,) group index
    group_names: list[str]
    job_arrival: np.ndarray  # (J,) index of the job's planned arrival, -1 = warm start (t = 0)
    base_gap: np.ndarray  # (A,) base inter-arrival gaps (mean 1)
    job_due_allowance: np.ndarray  # (J,) q_j, individual due allowance factor (mean ~1)
    job_op_ptr: np.ndarray  # (J + 1,)
    op_base: np.ndarray  # (O,) base nominal time (before exponent and group scale)
    op_elig_ptr: np.ndarray  # (O + 1,)
    elig_machine: np.ndarray  # (E,)
    elig_relative: np.ndarray  # (E,) per-machine time factor, mean 1 per operation
    breakdown_machine: np.ndarray  # (B,)
    breakdown_length: np.ndarray  # (B,) duration as a fraction of H (before downtime_scale)
    breakdown_gap: np.ndarray  # (B,) Dirichlet share of the machine's free time before it
    maintenance_machine: np.ndarray  # (K,)
    maintenance_position: np.ndarray  # (K,) start as a fraction of H
    maintenance_length: np.ndarray  # (K,) duration as a fraction of H
    event_type: np.ndarray  # (V,) EventType value
    event_job: np.ndarray  # (V,)
    event_offset: np.ndarray  # (V,) time = release + offset * P_j
    event_op: np.ndarray  # (V,) op index (PTIME_CHANGE, REWORK), -1 otherwise
    event_value: np.ndarray  # (V,) factor | weight | due-allowance change (in units of P_j)
    event_route: list[tuple[dict[int, float], ...] | None]  # (V,) ROUTE_CHANGE operations (times as drawn)
    window_index: np.ndarray  # (X,) the bottleneck window of each window breakdown
    window_machine: np.ndarray  # (X,)
    window_position: np.ndarray  # (X,) start: window start + position * (window length - duration)
    horizon: float = 1.0
    arrival_exponent: float = 1.0
    processing_exponent: float = 1.0
    group_scale: np.ndarray = field(default_factory=lambda: np.ones(0))  # (G,)
    due_scale: float = 1.0
    downtime_scale: float = 1.0
    window_downtime: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (W,) fraction of each window

    # ------------------------------------------------------------------ derived quantities
    def op_nominal(self) -> np.ndarray:
        """(O,) nominal operation times under the current knobs (total work kept constant)."""
        share = self._op_group_share()
        raw = libm.power(self.op_base, self.processing_exponent) * (share * self.group_scale).sum(axis=1)
        return raw * (self._base_work / float(np.sum(raw * self._op_work_factor)))

    def releases(self) -> np.ndarray:
        """(J,) release times under the current knobs."""
        gaps = libm.power(self.base_gap, self.arrival_exponent)
        cum = np.cumsum(gaps) / gaps.sum()
        times = _warp(cum, self.scenario.arrivals) * self.horizon
        return np.where(self.job_arrival >= 0, times[np.maximum(self.job_arrival, 0)], 0.0)

    def eligible_times(self) -> np.ndarray:
        """(E,) processing time of each eligible (operation, machine) pair under the current knobs, as :meth:`build`
        writes it."""
        return self.op_nominal()[self._elig_op] * self.elig_relative / self.machine_speed[self.elig_machine]

    def shortest_time(self) -> float:
        """The shortest processing time of the instance under the current knobs: of an eligible pair, or of a job's
        shortest pair under its PTIME_CHANGE factor below 1 (each job draws one at most). :meth:`build` fails (the
        instance refuses it) where it is below :data:`~dynasched_gym.instance.MIN_PROCESSING_TIME`, which powers
        of base times above 1 and group scales can cause; ROUTE_CHANGE times, and their changes, do not depend on
        the knobs, and the scenario's checks keep them in range."""
        job_shortest = np.minimum.reduceat(np.minimum.reduceat(self.eligible_times(), self.op_elig_ptr[:-1]),
                                           self.job_op_ptr[:-1])
        changed = self.event_type == EventType.PTIME_CHANGE
        factor = np.ones(len(job_shortest))
        factor[self.event_job[changed]] = np.minimum(self.event_value[changed], 1.0)
        return float((job_shortest * factor).min())

    def job_time(self, nominal: np.ndarray) -> np.ndarray:
        """(J,) expected processing time P_j of each job for the given nominal times."""
        return np.add.reduceat(nominal * self._op_time_factor, self.job_op_ptr[:-1])

    def downtime(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(machine, start, end) of breakdowns, window breakdowns, then maintenance windows, in time units."""
        lengths = self.breakdown_length * self.downtime_scale
        starts = np.empty_like(lengths)
        for m in np.unique(self.breakdown_machine):
            mine = np.flatnonzero(self.breakdown_machine == m)
            total = lengths[mine].sum()
            if total > 0.95:  # never more breakdown time than 95 % of the horizon on one machine
                lengths[mine] *= 0.95 / total
                total = 0.95
            before = np.concatenate([[0.0], np.cumsum(lengths[mine])[:-1]])
            starts[mine] = np.cumsum(self.breakdown_gap[mine]) * (1.0 - total) + before
        breakdown_start = starts * self.horizon
        maintenance_start = self.maintenance_position * self.horizon
        maintenance_length = np.minimum(self.maintenance_length * self.downtime_scale, 0.5)
        window_start_fraction, window_end_fraction = self._window_bounds
        window_start = window_start_fraction * self.horizon
        window_length = window_end_fraction * self.horizon - window_start
        duration = self.window_downtime[self.window_index] * window_length
        begin = window_start + self.window_position * (window_length - duration)
        return (np.concatenate([self.breakdown_machine, self.window_machine, self.maintenance_machine]),
                np.concatenate([breakdown_start, begin, maintenance_start]),
                np.concatenate([breakdown_start + lengths * self.horizon, begin + duration,
                                maintenance_start + maintenance_length * self.horizon]))

    @cached_property
    def _window_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the window of each window breakdown, as fractions of the horizon (fixed by the scenario)."""
        windows = self.scenario.bottleneck_windows
        return (np.array([w.start for w in windows])[self.window_index],
                np.array([w.end for w in windows])[self.window_index])

    @cached_property
    def _window_arrays(self) -> dict[str, np.ndarray]:
        """The window columns of the metric inputs (fixed by the scenario)."""
        return window_arrays(self.scenario.bottleneck_windows, self.group_names)

    def metric_inputs(self) -> MetricInputs:
        """The realised-metric inputs of the instance this draft builds (no Instance needed)."""
        nominal = self.op_nominal()
        release = self.releases()
        machines, start, end = self.downtime()
        return MetricInputs(
            release=release,
            due=release + self.due_scale * self.job_due_allowance * self.job_time(nominal),
            job_op_ptr=self.job_op_ptr,
            op_work=nominal * self._op_work_factor,
            op_time=nominal * self._op_time_factor,
            op_machine_share=self._op_machine_share,
            machine_speed=self.machine_speed,
            machine_group=self.machine_group,
            down_machine=machines,
            down_start=start,
            down_end=end,
            **self._window_arrays,
        )

    def metrics(self) -> dict[str, float]:
        """Realised metrics of the instance this draft builds."""
        return measure(self.metric_inputs())

    # ------------------------------------------------------------------------------ build
    def build(self) -> Instance:
        """The instance under the current knobs."""
        s = self.scenario
        nominal = self.op_nominal()
        times = self.eligible_times()
        release = self.releases()
        ptime = self.job_time(nominal)
        due = release + self.due_scale * self.job_due_allowance * ptime
        speed = self.machine_speed
        counters: dict[int, int] = {}
        machines = []
        for m, g in enumerate(self.machine_group):
            counters[g] = counters.get(g, 0) + 1
            machines.append(Machine(f"{self.group_names[g]}-M{counters[g]}", self.group_names[g], float(speed[m])))
        jobs = []
        for j in range(len(release)):
            ops = []
            for o in range(self.job_op_ptr[j], self.job_op_ptr[j + 1]):
                lo, hi = self.op_elig_ptr[o], self.op_elig_ptr[o + 1]
                ops.append({int(m): float(t) for m, t in zip(self.elig_machine[lo:hi], times[lo:hi])})
            jobs.append(Job(f"Job-{j + 1}", ops, release=float(release[j]), due=float(due[j])))
        events = []
        machine, start, end = self.downtime()
        num_breakdowns = len(self.breakdown_machine) + len(self.window_machine)
        for i, (m, t0, t1) in enumerate(zip(machine, start, end)):
            if t1 > t0:  # calibration may scale downtime to nothing (a disturbance target of 0)
                kind = EventType.BREAKDOWN if i < num_breakdowns else EventType.MAINTENANCE
                events.append(Event(float(t0), kind, machine=int(m), duration=float(t1 - t0)))
        for kind, j, offset, op, value, route in zip(self.event_type, self.event_job, self.event_offset,
                                                     self.event_op, self.event_value, self.event_route):
            events.append(_job_event(EventType(int(kind)), int(j), float(release[j] + offset * ptime[j]), int(op),
                                     float(value), route, float(release[j]), float(due[j]), float(ptime[j])))
        events.sort(key=lambda e: e.time)
        return Instance.build(f"{s.name}-seed{self.seed}", machines, jobs, events, s.breakdown_policy)

    # ---------------------------------------------------------------------------- internals
    def __post_init__(self) -> None:
        counts = np.diff(self.op_elig_ptr)
        rows = self._elig_op = np.repeat(np.arange(len(counts)), counts)
        speed = self.machine_speed[self.elig_machine]
        self._op_work_factor = np.bincount(rows, weights=self.elig_relative, minlength=len(counts)) / counts
        self._op_time_factor = np.bincount(rows, weights=self.elig_relative / speed, minlength=len(counts)) / counts
        share = np.zeros((len(counts), len(self.machine_speed)))
        share[rows, self.elig_machine] = 1.0 / counts[rows]
        self._op_machine_share = share
        if self.group_scale.size == 0:
            self.group_scale = np.ones(len(self.group_names))
        if self.window_downtime.size == 0:
            self.window_downtime = np.zeros(len(self.scenario.bottleneck_windows))
        self._base_work = float(np.sum(self.op_base * self._op_work_factor))

    def _op_group_share(self) -> np.ndarray:
        return group_columns(self._op_machine_share, self.machine_group, len(self.group_names))


def _job_event(kind: EventType, job: int, time: float, op: int, value: float,
               route: tuple[dict[int, float], ...] | None, release: float, due: float, ptime: float) -> Event:
    if kind == EventType.CANCELLATION:
        return Event(time, kind, job=job)
    if kind == EventType.PRIORITY_CHANGE:
        return Event(time, kind, job=job, weight=value)
    if kind == EventType.PTIME_CHANGE:
        return Event(time, kind, job=job, op=op, factor=value)
    if kind == EventType.REWORK:
        return Event(time, kind, job=job, op=op)
    if kind == EventType.ROUTE_CHANGE:
        return Event(time, kind, job=job, ops=route)
    # DUE_DATE_CHANGE: shift the allowance, never below half the job's expected processing time
    return Event(time, kind, job=job, due=max(due + value * ptime, release + 0.5 * ptime))


def _warp(cum: np.ndarray, arrivals) -> np.ndarray:
    """Map uniform cumulative positions in (0, 1] to times in (0, 1] under the arrival-rate pattern."""
    if arrivals.pattern == "constant" or arrivals.amplitude == 0:
        return cum
    grid = np.linspace(0.0, 1.0, ARRIVAL_GRID_STEPS + 1)
    amp = arrivals.amplitude
    if arrivals.pattern == "periodic":
        period = arrivals.period_fraction
        intensity = grid - amp * period / (2 * math.pi) * (libm.cos(2 * math.pi * grid / period) - 1.0)
    else:  # trend: rate 1 + amp * (2t - 1)
        intensity = grid + amp * (grid**2 - grid)
    return np.interp(cum * intensity[-1], intensity, grid)


def _gamma(rng: np.random.Generator, scv: float, size: int) -> np.ndarray:
    """Positive draws with mean 1 and the given squared coefficient of variation."""
    if scv <= 0:
        return np.ones(size)
    return np.maximum(rng.gamma(1.0 / scv, scv, size), MIN_GAMMA_DRAW)


def draft(scenario: Scenario, seed: int) -> Draft:
    """Draw an instance of ``scenario`` (deterministic in ``seed``) with knobs set from the targets.

    ``seed`` must be an integer >= 0 (NumPy integers too, bools not): ``None`` would draw OS entropy,
    a different instance on every call under the same name. ``scenario`` is checked again
    (:func:`~dynasched_gym.generation.scenario.check_scenario`): it may have been edited since it was built.
    """
    seed = check_integer("seed", seed, 0)
    check_scenario("scenario", scenario)
    rngs = dict(zip(_STREAMS, (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(_STREAMS)))))
    plant, targets, rates = scenario.plant, scenario.targets, scenario.events
    speeds = np.array([v for g in plant.groups for v in g.speeds], dtype=np.float64)
    machine_group = np.array([i for i, g in enumerate(plant.groups) for _ in g.speeds], dtype=np.int64)
    group_names = [g.name for g in plant.groups]
    group_machines = [np.flatnonzero(machine_group == i) for i in range(len(group_names))]

    # planned arrivals, warm-start jobs and batches
    num_planned = planned_jobs(scenario) - scenario.scale.warm_start_jobs
    job_arrival = [-1] * scenario.scale.warm_start_jobs
    rng = rngs["batches"]
    for a in range(num_planned):
        size = 1
        if rates.batch_arrival > 0 and rng.random() < rates.batch_arrival:
            size = max(2, round(rng.normal(rates.batch_size_mean, rates.batch_size_std)))
        job_arrival.extend([a] * size)
    num_jobs = len(job_arrival)
    base_gap = _gamma(rngs["arrivals"], targets.arrival_scv, num_planned)

    # routes and base processing times
    routes = _routes(scenario, num_jobs, rngs["routes"], group_machines)
    job_op_ptr = np.concatenate([[0], np.cumsum([len(r) for r in routes])]).astype(np.int64)
    flat = [op for r in routes for op in r]
    op_elig_ptr = np.concatenate([[0], np.cumsum([len(m) for m, _, _ in flat])]).astype(np.int64)
    elig_machine = np.concatenate([m for m, _, _ in flat]).astype(np.int64)
    elig_relative = np.concatenate([rel for _, rel, _ in flat])
    op_base = np.array([mean for _, _, mean in flat]) * _gamma(rngs["ptimes"], targets.processing_scv, len(flat))

    # due-date allowances
    due_allowance = libm.exp(rngs["due"].normal(-_DUE_SPREAD**2 / 2, _DUE_SPREAD, num_jobs))

    # maintenance windows (fractions of H) and breakdowns (fractions of H, before scaling)
    num_m = len(speeds)
    mt_machine, mt_pos, mt_len = [], [], []
    if rates.maintenance_interval > 0:
        rng = rngs["maintenance"]
        # validation checked the windows for the expected number of jobs; batches may draw more
        frac, horizon_guess = maintenance_fraction(scenario, num_jobs, speeds.sum())
        for m in range(num_m):
            for k in range(1, int(1.0 / frac) + 1):
                pos = (k - 1 + (m + 1) / (num_m + 1)) * frac
                if pos >= 1.0:
                    break
                length = max(0.1, rng.normal(rates.maintenance_duration, rates.maintenance_duration_std))
                mt_machine.append(m)
                mt_pos.append(pos)
                mt_len.append(length / horizon_guess)
    rng = rngs["breakdowns"]
    bd_machine, bd_len, bd_gap = [], [], []
    if targets.disturbance > 0:
        maint_share = np.bincount(np.array(mt_machine, dtype=np.int64), weights=np.array(mt_len), minlength=num_m)
        for m in range(num_m):
            budget = max(targets.disturbance - maint_share[m], targets.disturbance * 0.1)
            # at least one breakdown a machine, so that downtime_scale moves every machine's share of the target
            count = max(1, int(rng.poisson(max(1.0, budget * 40))))
            weights = rng.dirichlet(np.ones(count + 1))
            bd_machine.extend([m] * count)
            bd_len.extend(rng.dirichlet(np.ones(count)) * budget)
            bd_gap.extend(weights[:count])

    # one breakdown per machine of each bottleneck window's group, sized by the window_downtime knob
    rng = rngs["windows"]
    window_index, window_machine = [], []
    for i, window in enumerate(scenario.bottleneck_windows):
        for m in group_machines[group_names.index(window.group)]:
            window_index.append(i)
            window_machine.append(int(m))
    window_position = rng.uniform(0.0, 1.0, len(window_index))

    draft_ = Draft(
        scenario=scenario, seed=seed, machine_speed=speeds, machine_group=machine_group, group_names=group_names,
        job_arrival=np.array(job_arrival, dtype=np.int64), base_gap=base_gap, job_due_allowance=due_allowance,
        job_op_ptr=job_op_ptr, op_base=op_base, op_elig_ptr=op_elig_ptr, elig_machine=elig_machine,
        elig_relative=elig_relative,
        breakdown_machine=np.array(bd_machine, dtype=np.int64), breakdown_length=np.array(bd_len),
        breakdown_gap=np.array(bd_gap),
        maintenance_machine=np.array(mt_machine, dtype=np.int64), maintenance_position=np.array(mt_pos),
        maintenance_length=np.array(mt_len),
        **_job_events(scenario, routes, rngs["events"], group_machines),
        window_index=np.array(window_index, dtype=np.int64), window_machine=np.array(window_machine, dtype=np.int64),
        window_position=window_position,
    )
    draft_.due_scale = targets.due_date_tightness
    draft_.horizon = draft_._base_work / (targets.utilization * speeds.sum())
    return draft_


def generate(scenario: Scenario, seed: int) -> Instance:
    """An uncalibrated instance of ``scenario`` (knobs set analytically from the targets); ``seed`` as in
    :func:`draft`."""
    return draft(scenario, seed).build()


Route = list[tuple[np.ndarray, np.ndarray, float]]  # per operation: (machines, relative factors, mean time)


def _routes(scenario: Scenario, num_jobs: int, rng: np.random.Generator, group_machines) -> list[Route]:
    """Operation chains of every job: eligible machines, relative time factors, mean nominal time."""
    plant = scenario.plant
    if plant.fjsp is None:
        names = [g.name for g in plant.groups]
        weights = np.array([fam.mix_weight for fam in plant.families])
        families = rng.choice(len(plant.families), size=num_jobs, p=weights / weights.sum())
        return [[(group_machines[names.index(step.group)], np.ones(len(group_machines[names.index(step.group)])),
                  step.mean_time) for step in plant.families[f].route] for f in families]
    return [_fjsp_route(plant.fjsp, rng, sum(len(g) for g in group_machines)) for _ in range(num_jobs)]


def _fjsp_route(f, rng: np.random.Generator, num_m: int) -> Route:
    route = []
    for _ in range(int(rng.integers(f.ops_per_job[0], f.ops_per_job[1] + 1))):
        count = int(rng.integers(f.eligible_machines[0], f.eligible_machines[1] + 1))
        machines = np.sort(rng.choice(num_m, size=count, replace=False))
        rel = rng.uniform(1 - f.time_spread, 1 + f.time_spread, count)
        route.append((machines, rel / rel.mean(), float(rng.uniform(f.mean_time[0], f.mean_time[1]))))
    return route


def _job_events(scenario: Scenario, routes: list[Route], rng: np.random.Generator, group_machines) -> dict:
    """Dynamic job events, with times relative to each job's release and expected processing time."""
    rates = scenario.events
    kinds, jobs, offsets, ops, values, extra = [], [], [], [], [], []

    def add(kind: EventType, j: int, offset: float, op: int = -1, value: float = math.nan, route=None) -> None:
        kinds.append(int(kind))
        jobs.append(j)
        offsets.append(offset)
        ops.append(op)
        values.append(value)
        extra.append(route)

    for j, route in enumerate(routes):
        num_ops = len(route)
        if rng.random() < rates.emergency:
            add(EventType.PRIORITY_CHANGE, j, rng.uniform(0.0, 0.25), value=rates.emergency_weight)
        if rng.random() < rates.priority_change:
            add(EventType.PRIORITY_CHANGE, j, rng.uniform(0.0, 1.0), value=float(rng.choice(_PRIORITY_WEIGHTS)))
        if rng.random() < rates.ptime_change:
            k = int(rng.integers(num_ops))
            add(EventType.PTIME_CHANGE, j, rng.uniform(0.0, 1.0) * k / num_ops, op=k,
                value=float(rng.choice(rates.ptime_change_factors)))
        if rng.random() < rates.route_change:
            new = _routes(scenario, 1, rng, group_machines)[0]
            ops_new = tuple({int(m): float(mean * r) for m, r in zip(machines, rel)} for machines, rel, mean in new)
            add(EventType.ROUTE_CHANGE, j, rng.uniform(0.0, 0.5), route=_with_speed(ops_new, scenario))
        if rng.random() < rates.rework:
            k = int(rng.integers(num_ops))
            add(EventType.REWORK, j, (k + 1) / num_ops * rng.uniform(1.0, 2.0), op=k)
        if rng.random() < rates.due_date_change:
            sign = -1.0 if rng.random() < 0.5 else 1.0
            shift = sign * rng.uniform(0.0, rates.due_date_change_factor * scenario.targets.due_date_tightness)
            add(EventType.DUE_DATE_CHANGE, j, rng.uniform(0.0, 0.3), value=shift)
        if rng.random() < rates.cancellation:
            add(EventType.CANCELLATION, j, rng.uniform(0.0, 1.5))
    return {"event_type": np.array(kinds, dtype=np.int64), "event_job": np.array(jobs, dtype=np.int64),
            "event_offset": np.array(offsets), "event_op": np.array(ops, dtype=np.int64),
            "event_value": np.array(values), "event_route": extra}


def _with_speed(ops: tuple[dict[int, float], ...], scenario: Scenario) -> tuple[dict[int, float], ...]:
    speeds = [v for g in scenario.plant.groups for v in g.speeds]
    return tuple({m: t / speeds[m] for m, t in op.items()} for op in ops)
