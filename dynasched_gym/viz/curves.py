"""Metric curves over time, computed exactly from a schedule's segment, downtime and job records.

Every curve is a right-continuous step function ``(times, values)``: ``values[i]`` holds on
``[times[i], times[i + 1])`` and the last value from ``times[-1]`` on; ``times[0] == 0`` and
consecutive values differ (no redundant steps). Events at the same time are applied together,
so a job released and another completed at t leave no step at t.

Curves: ``wip`` (released jobs not yet completed or cancelled), ``wip_waiting`` (of those, the
ones not being processed), ``jobs_arrived`` (not a job cancelled before its release),
``jobs_completed``, ``jobs_cancelled``, ``busy_machines``, ``machines_down`` (breakdown or
maintenance) and ``utilization`` (busy machines / machines not down; 0 while every machine is down).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.schedule import Schedule, check_schedule
from dynasched_gym.viz._mpl import blank_figure, figure_path, plain_text, save_figure

Curve = tuple[np.ndarray, np.ndarray]

#: The panels of :func:`curves_figure`: (y label, curves drawn in it).
PANELS = (
    ("jobs in system", ("wip", "wip_waiting")),
    ("jobs (cumulative)", ("jobs_arrived", "jobs_completed", "jobs_cancelled")),
    ("machines", ("busy_machines", "machines_down")),
    ("utilisation", ("utilization",)),
)


def metric_curves(schedule: Schedule) -> dict[str, Curve]:
    """The curves named in the module docstring, as exact step functions."""
    inst = check_schedule("schedule", schedule).instance
    done = np.fmin(schedule.job_completion, schedule.job_cancelled_at)  # NaN when neither happened
    wip = _count(schedule.job_arrival, done)
    busy = _count(schedule.segment_start, schedule.segment_end)
    down = _count(schedule.downtime_start, schedule.downtime_end)
    grid = np.union1d(busy[0], down[0])
    up = inst.num_machines - _at(down, grid)
    util = np.divide(_at(busy, grid), up, out=np.zeros(len(grid)), where=up > 0)
    wip_grid = np.union1d(wip[0], busy[0])
    never = np.full(inst.num_jobs, np.nan)
    return {
        "wip": wip,
        "wip_waiting": _canonical(wip_grid, _at(wip, wip_grid) - _at(busy, wip_grid)),
        "jobs_arrived": _count(schedule.job_arrival, never),
        "jobs_completed": _count(schedule.job_completion, never),
        "jobs_cancelled": _count(schedule.job_cancelled_at, never),
        "busy_machines": busy,
        "machines_down": down,
        "utilization": _canonical(grid, util),
    }


def curves_figure(schedule: Schedule, fig: Any = None, dpi: float = 100) -> Any:
    """Plot the curves in four stacked panels sharing the time axis (see :data:`PANELS`)."""
    curves = metric_curves(schedule)
    # a little past the last change: a curve's final value drawn from there to the axes' edge hid under the frame
    end = 1.01 * max(1.0, *(float(t[-1]) for t, _ in curves.values()))
    fig = blank_figure(fig, 10.0, 2.0 * len(PANELS) + 0.6, dpi)
    axes = fig.subplots(len(PANELS), 1, sharex=True)
    for ax, (label, names) in zip(axes, PANELS):
        for name in names:
            t, v = curves[name]
            ax.step(np.append(t, end), np.append(v, v[-1]), where="post", label=name, linewidth=1.0)
        ax.set_ylabel(label, fontsize=8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # inside, it hid the cumulative curves' ends
        ax.grid(alpha=0.3)
    axes[-1].set_ylim(0.0, 1.05)
    axes[-1].set_xlim(0.0, end)
    axes[-1].set_xlabel("time")
    fig.suptitle(f"{schedule.instance.name}: metric curves", fontsize=9, x=0.01, ha="left")
    return plain_text(fig)


def save_curves(schedule: Schedule, path: str | os.PathLike[str]) -> Path:
    """Write :func:`curves_figure` to ``path`` atomically (PNG, PDF or SVG by suffix)."""
    path = figure_path(path)  # a bad suffix was refused only after the drawing
    return save_figure(curves_figure(schedule), path)


def _count(start: np.ndarray, end: np.ndarray) -> Curve:
    """How many intervals ``[start, end)`` contain t; a NaN or infinite end never comes, a NaN start never starts."""
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    live = ~np.isnan(start) & ~(end <= start)  # empty intervals never count
    ends = end[live & np.isfinite(end)]
    times = np.concatenate([[0.0], start[live], ends])
    delta = np.concatenate([[0.0], np.ones(int(live.sum())), -np.ones(len(ends))])
    grid, where = np.unique(times, return_inverse=True)
    return _canonical(grid, np.cumsum(np.bincount(where, weights=delta, minlength=len(grid))).round().astype(np.int64))


def _at(curve: Curve, t: np.ndarray) -> np.ndarray:
    """The step function ``curve`` evaluated at times ``t`` (all >= 0)."""
    times, values = curve
    return values[np.searchsorted(times, t, side="right") - 1]


def _canonical(times: np.ndarray, values: np.ndarray) -> Curve:
    """Drop the steps that do not change the value (keeping the one at time 0)."""
    keep = np.r_[True, values[1:] != values[:-1]]
    return times[keep], values[keep]
