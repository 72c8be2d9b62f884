"""Rendering of a running simulation: a text summary and a Gantt chart (matplotlib, imported lazily).

The Gantt chart has one row per machine: finished segments (coloured by job; preempted ones
hatched, aborted ones crossed), the running operations up to their planned end (faded),
downtime (breakdowns red, maintenance grey), job arrivals (triangles under the axis), job
cancellations (crosses above the axis) and the current time (a dashed line).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dynasched_gym.core.compiled import C_DOWNTIMES, DOWN_BREAKDOWN, DOWN_MAINTENANCE, JOB_ACTIVE, JOB_COMPLETED
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.schedule import SEGMENT_STATUSES

_DOWN_COLOURS = ("#d62728", "#9e9e9e")  # breakdown, maintenance
_HATCH = {"completed": "", "preempted": "//", "aborted": "xx"}


def render_text(sim: Simulator, objective: str) -> str:
    """A text summary: clock, jobs, and one line per machine."""
    st = sim.state
    status = st.job_status
    lines = [
        f"t={sim.now:g}  decisions={sim.decisions}  objective={objective}  "
        f"jobs: {int(np.sum(status == JOB_ACTIVE))} open, {int(np.sum(status == JOB_COMPLETED))} completed, "
        f"{int(np.sum(~np.isnan(st.job_cancelled_at)))} cancelled"
    ]
    names = sim.instance.machine_names
    for m in range(sim.instance.num_machines):
        if st.machine_job[m] >= 0:
            what = f"job {st.machine_job[m]} until {st.machine_end[m]:g}"
        elif st.machine_down[m] == DOWN_BREAKDOWN:
            what = "breakdown"
        elif st.machine_down[m] == DOWN_MAINTENANCE:
            what = "maintenance"
        else:
            what = "idle"
        queued = "  (maintenance queued)" if st.machine_maintenance[m] > 0 else ""
        lines.append(f"  {names[m]:>10}: {what}{queued}")
    return "\n".join(lines)


def _figure(sim: Simulator, fig: Any = None) -> Any:
    """Draw the Gantt chart of ``sim`` on ``fig`` (a new figure when ``None``)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    inst = sim.instance
    st = sim.state
    schedule = sim.schedule()
    num_m = inst.num_machines
    if fig is None:
        fig = Figure(figsize=(10, 1.2 + 0.35 * num_m), dpi=80)
    fig.clf()
    ax = fig.add_subplot()
    colours = _job_colours(inst.num_jobs)
    for j, m, s, e, status in zip(schedule.segment_job, schedule.segment_machine, schedule.segment_start,
                                  schedule.segment_end, schedule.segment_status):
        ax.barh(m, e - s, left=s, height=0.7, color=colours[j], edgecolor="black", linewidth=0.4,
                hatch=_HATCH[SEGMENT_STATUSES[status]])
    for m in np.flatnonzero(st.machine_job >= 0):
        ax.barh(m, st.machine_end[m] - st.machine_start[m], left=st.machine_start[m], height=0.7,
                color=colours[st.machine_job[m]], alpha=0.45, edgecolor="black", linewidth=0.4)
    for d in range(int(st.counters[C_DOWNTIMES])):
        start, end = st.downtime_start[d], min(st.downtime_end[d], max(sim.now, st.downtime_start[d]))
        ax.barh(st.downtime_machine[d], end - start, left=start, height=0.35, color=_DOWN_COLOURS[st.downtime_kind[d]])
    released = inst.job_release[inst.job_release <= sim.now]
    ax.plot(released, np.full(released.shape, -0.8), "^", color="tab:green", markersize=5, clip_on=False)
    cancelled = st.job_cancelled_at[~np.isnan(st.job_cancelled_at)]
    ax.plot(cancelled, np.full(cancelled.shape, num_m - 0.2), "x", color="tab:red", markersize=6, clip_on=False)
    ax.axvline(sim.now, color="black", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(num_m), inst.machine_names)
    ax.set_ylim(num_m - 0.2, -1.0)
    ax.set_xlabel("time")
    ax.set_title(f"{inst.name}  t={sim.now:g}  decisions={sim.decisions}", fontsize=9)
    ax.legend(handles=[Patch(color=_DOWN_COLOURS[0], label="breakdown"),
                       Patch(color=_DOWN_COLOURS[1], label="maintenance"),
                       Patch(facecolor="white", edgecolor="black", hatch="//", label="preempted"),
                       Patch(facecolor="white", edgecolor="black", hatch="xx", label="aborted")],
              loc="upper right", fontsize=7, ncol=4)
    fig.tight_layout()
    return fig


def _job_colours(num_jobs: int) -> np.ndarray:
    from matplotlib import colormaps

    return colormaps["tab20"](np.arange(num_jobs) % 20)


def render_gantt(sim: Simulator) -> np.ndarray:
    """The Gantt chart as an RGB array ``(height, width, 3)`` uint8 (matplotlib Agg, no window)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure(sim)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def show_gantt(sim: Simulator, window: Any = None) -> Any:
    """Draw the Gantt chart in a matplotlib window (created on the first call); returns the window's figure."""
    import matplotlib.pyplot as plt

    if window is None:
        plt.ion()
        window = plt.figure(figsize=(10, 1.2 + 0.35 * sim.instance.num_machines), dpi=80)
    _figure(sim, window)
    window.canvas.draw_idle()
    plt.pause(0.001)
    return window


def close(window: Any) -> None:
    """Close a window made by :func:`show_gantt`."""
    import matplotlib.pyplot as plt

    plt.close(window)
