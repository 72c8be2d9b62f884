"""Realised scenario metrics, measured on an instance without simulating it.

One implementation serves the generator, the calibrators and every report: the generator's draft
and a finished :class:`~dynasched_gym.instance.Instance` are both reduced to
:class:`MetricInputs` and measured by :func:`measure`.

Definitions (H = the **horizon** = the last release time; for an instance whose jobs are all
released at 0, H = total work / total speed, so its utilization is 1):

- work of an operation W_o: mean over its eligible machines of time(o, m) * speed(m) (nominal
  work); expected time of an operation: mean over its eligible machines of time(o, m); a job's
  expected processing time P_j is the sum over its operations.
- ``utilization``: sum_o W_o / (H * sum_m speed_m).
- ``load_cv``: population std / mean over machine groups of rho_g = W_g / (H * sum_{m in g} speed_m),
  where each operation's work is split evenly over its eligible machines (0 with one group).
- ``arrival_scv``: squared coefficient of variation of the gaps between consecutive releases
  (sorted; batches and warm-start jobs give zero gaps).
- ``processing_scv``: squared coefficient of variation of W_o over all operations.
- ``due_date_tightness``: mean over jobs with a due date of (d_j - r_j) / P_j.
- ``disturbance``: speed-weighted share of machine time lost to downtime inside [0, H]:
  sum_m speed_m * |down_m ∩ [0, H]| / (H * sum_m speed_m). A breakdown lasts until its end or an
  earlier REPAIR of a later instant (one at the breakdown's own instant applies first and is ignored, DESIGN
  section 3); maintenance counts from its event time; overlaps count once.
- ``bottleneck_window[i]`` (only for the windows passed in, ``Scenario.bottleneck_windows``): the
  utilization of window i's group g inside the window [s H, e H] of length L, its load spread evenly
  over the horizon: rho_g * S_g L / (S_g L - lost), with S_g the group's total speed and lost the
  speed-weighted downtime of its machines inside the window (overlaps once); a window whose whole
  capacity is down measures ``WINDOW_SATURATED``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dynasched_gym.generation.scenario import BottleneckWindow
from dynasched_gym.instance import EventType, Instance
from dynasched_gym.metrics import EPS

#: The stem of the bottleneck-window metrics (and of their shared tolerance, ``tolerances.bottleneck_window``).
WINDOW_METRIC = "bottleneck_window"
METRIC_NAMES = ("utilization", "load_cv", "due_date_tightness", "arrival_scv", "processing_scv", "disturbance")
WINDOW_SATURATED = 1e6  # the utilization of a window without capacity left


def window_metric(index: int) -> str:
    """The metric (and target) name of bottleneck window ``index``."""
    return f"{WINDOW_METRIC}[{index}]"


def window_index(name: str) -> int | None:
    """The index of the bottleneck window that metric ``name`` measures (:func:`window_metric`); None for others."""
    return int(name[len(WINDOW_METRIC) + 1:-1]) if name.startswith(f"{WINDOW_METRIC}[") else None


@dataclass(frozen=True)
class MetricInputs:
    """The arrays the realised metrics need (J jobs, O operations, M machines, D downtime intervals)."""

    release: np.ndarray  # (J,) release times
    due: np.ndarray  # (J,) due dates, NaN = none
    job_op_ptr: np.ndarray  # (J + 1,) CSR job -> operations
    op_work: np.ndarray  # (O,) nominal work W_o
    op_time: np.ndarray  # (O,) expected time over eligible machines
    op_machine_share: np.ndarray  # (O, M) share of the op's work on each machine (rows sum to 1)
    machine_speed: np.ndarray  # (M,)
    machine_group: np.ndarray  # (M,) group index
    down_machine: np.ndarray  # (D,)
    down_start: np.ndarray  # (D,)
    down_end: np.ndarray  # (D,)
    window_group: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (W,) group index
    window_start: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (W,) fraction of the horizon
    window_end: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (W,) fraction of the horizon


# Reductions below avoid BLAS (``@``): its rounding depends on the CPU kernel, and generated
# instances must be byte-identical on every machine.
def column_sums(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """sum_o weights[o] * matrix[o, :] (bit-reproducible across CPUs)."""
    return (weights[:, None] * matrix).sum(axis=0)


def group_columns(matrix: np.ndarray, machine_group: np.ndarray, num_groups: int) -> np.ndarray:
    """(rows, machines) -> (rows, groups): the sum of each group's columns."""
    return np.stack([matrix[:, machine_group == g].sum(axis=1) for g in range(num_groups)], axis=1)


def horizon(inputs: MetricInputs) -> float:
    """The last release time (or total work / total speed when every job is released at 0)."""
    last = float(inputs.release.max())
    return last if last > 0 else float(inputs.op_work.sum() / inputs.machine_speed.sum())


def _scv(x: np.ndarray) -> float:
    mean = float(x.mean()) if x.size else 0.0
    return float(x.var() / mean**2) if mean > 0 else 0.0


def _union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length covered by the intervals [starts, ends] (overlaps count once)."""
    total = 0.0
    cur_start = cur_end = -math.inf
    for s, e in sorted(zip(starts.tolist(), ends.tolist())):
        if s > cur_end:
            total += cur_end - cur_start if cur_end > cur_start else 0.0
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    return total + (cur_end - cur_start if cur_end > cur_start else 0.0)


def measure(inputs: MetricInputs) -> dict[str, float]:
    """All realised metrics (see the module docstring for the definitions)."""
    h = horizon(inputs)
    speed = inputs.machine_speed
    capacity = h * float(speed.sum())
    machine_work = column_sums(inputs.op_work, inputs.op_machine_share)
    num_groups = int(inputs.machine_group.max()) + 1
    group_work = np.bincount(inputs.machine_group, weights=machine_work, minlength=num_groups)
    group_speed = np.bincount(inputs.machine_group, weights=speed, minlength=num_groups)
    group_rho = group_work / (h * group_speed)
    job_time = np.add.reduceat(inputs.op_time, inputs.job_op_ptr[:-1])
    has_due = ~np.isnan(inputs.due)
    gaps = np.diff(np.sort(inputs.release))
    lost = sum(_machine_downtime(inputs, m, 0.0, h) for m in range(speed.shape[0]))
    windows = {}
    for i, (g, s, e) in enumerate(zip(inputs.window_group, inputs.window_start, inputs.window_end)):
        t0, t1 = s * h, e * h
        window_capacity = group_speed[g] * (t1 - t0)
        machines = np.flatnonzero(inputs.machine_group == g)
        free = window_capacity - sum(_machine_downtime(inputs, m, t0, t1) for m in machines)
        saturated = free <= 1e-12 * window_capacity
        windows[window_metric(i)] = WINDOW_SATURATED if saturated else float(group_rho[g] * window_capacity / free)
    return {
        "utilization": float(inputs.op_work.sum() / capacity),
        "load_cv": float(group_rho.std() / group_rho.mean()) if num_groups > 1 else 0.0,
        "due_date_tightness": float(((inputs.due - inputs.release)[has_due] / job_time[has_due]).mean())
        if has_due.any() else 0.0,
        "arrival_scv": _scv(gaps),
        "processing_scv": _scv(inputs.op_work),
        "disturbance": float(lost / capacity),
        **windows,
    }


def _machine_downtime(inputs: MetricInputs, machine: int, t0: float, t1: float) -> float:
    """Speed-weighted downtime of ``machine`` inside [t0, t1] (overlaps count once)."""
    mine = inputs.down_machine == machine
    if not mine.any():
        return 0.0
    start, end = np.clip(inputs.down_start[mine], t0, t1), np.clip(inputs.down_end[mine], t0, t1)
    return float(inputs.machine_speed[machine]) * _union_length(start, end)


def instance_inputs(instance: Instance, windows: Sequence[BottleneckWindow] = ()) -> MetricInputs:
    """Reduce an instance to :class:`MetricInputs` (static operations; downtime from its events; ``windows``
    to measure, of the scenario that generated it)."""
    num_m = instance.num_machines
    rows = np.repeat(np.arange(instance.num_ops), np.diff(instance.op_elig_ptr))
    counts = np.diff(instance.op_elig_ptr).astype(np.float64)
    speed = instance.machine_speed
    work = np.bincount(rows, weights=instance.elig_time * speed[instance.elig_machine], minlength=instance.num_ops)
    time = np.bincount(rows, weights=instance.elig_time, minlength=instance.num_ops)
    share = np.zeros((instance.num_ops, num_m))
    share[rows, instance.elig_machine] = 1.0 / counts[rows]
    groups = {name: i for i, name in enumerate(dict.fromkeys(instance.machine_groups))}
    starts, ends, machines = [], [], []
    for i, e in enumerate(instance.events):
        if e.type in (EventType.BREAKDOWN, EventType.MAINTENANCE):
            end = e.time + e.duration
            if e.type == EventType.BREAKDOWN:
                for later in instance.events[i + 1:]:
                    if later.time >= end:
                        break
                    # a REPAIR of the breakdown's instant applies before it (type order) and ends nothing
                    if later.type == EventType.REPAIR and later.machine == e.machine and later.time > e.time + EPS:
                        end = later.time
                        break
            machines.append(e.machine)
            starts.append(e.time)
            ends.append(end)
    return MetricInputs(
        release=instance.job_release,
        due=instance.job_due,
        job_op_ptr=instance.job_op_ptr,
        op_work=work / counts,
        op_time=time / counts,
        op_machine_share=share,
        machine_speed=speed,
        machine_group=np.array([groups[g] for g in instance.machine_groups], dtype=np.int64),
        down_machine=np.array(machines, dtype=np.int64),
        down_start=np.array(starts, dtype=np.float64),
        down_end=np.array(ends, dtype=np.float64),
        **window_arrays(windows, list(groups)),
    )


def window_arrays(windows: Sequence[BottleneckWindow], group_names: Sequence[str]) -> dict[str, np.ndarray]:
    """The ``window_*`` fields of :class:`MetricInputs` for ``windows`` of a plant with ``group_names``."""
    names = list(group_names)
    for w in windows:
        if w.group not in names:
            raise ValueError(f"bottleneck window group {w.group!r} is not a machine group of the plant ({names})")
    return {"window_group": np.array([names.index(w.group) for w in windows], dtype=np.int64),
            "window_start": np.array([w.start for w in windows], dtype=np.float64),
            "window_end": np.array([w.end for w in windows], dtype=np.float64)}


def realised_metrics(instance: Instance, windows: Sequence[BottleneckWindow] = ()) -> dict[str, float]:
    """The realised metrics of ``instance`` (module docstring), with those of the bottleneck ``windows`` of the
    scenario that generated it."""
    return measure(instance_inputs(instance, windows))
