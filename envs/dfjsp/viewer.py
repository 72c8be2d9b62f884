"""Rendering of a running simulation: a text summary and a Gantt chart (matplotlib, imported lazily).

The Gantt chart is the machine view of :func:`dynasched_gym.viz.gantt_figure` (finished segments,
downtime, arrivals and cancellations so far), plus the running operations up to their planned
end (faded) and the current time (a dashed line).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dynasched_gym.core.compiled import DOWN_BREAKDOWN, DOWN_MAINTENANCE, JOB_ACTIVE, JOB_COMPLETED
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.viz import figure_rgb, gantt_figure
from dynasched_gym.viz._mpl import import_matplotlib
from dynasched_gym.viz.gantt import gantt_size, time_text


def warn_no_render_mode() -> None:
    """Warn that ``render()`` was called on an env made without a ``render_mode`` (it then returns ``None``)."""
    import gymnasium as gym

    gym.logger.warn("render() called without a render_mode; pass render_mode= to the env")


def render_text(sim: Simulator, objective: str) -> str:
    """A text summary: clock, jobs, and one line per machine."""
    st = sim.state
    status = st.job_status
    lines = [
        f"t={time_text(sim.now)}  decisions={sim.decisions}  objective={objective}  "
        f"jobs: {int(np.sum(status == JOB_ACTIVE))} open, {int(np.sum(status == JOB_COMPLETED))} completed, "
        f"{int(np.sum(~np.isnan(st.job_cancelled_at)))} cancelled"
    ]
    names = sim.instance.machine_names
    for m in range(sim.instance.num_machines):
        if st.machine_job[m] >= 0:
            what = f"job {st.machine_job[m]} until {time_text(st.machine_end[m])}"
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
    """Draw the Gantt chart of ``sim`` on ``fig`` (a new figure when ``None``) with :func:`gantt_figure`."""
    st = sim.state
    busy = np.flatnonzero(st.machine_job >= 0)
    running = (st.machine_job[busy], busy, st.machine_start[busy], st.machine_end[busy])
    return gantt_figure(sim.schedule(), now=sim.now, running=running, fig=fig, dpi=80,
                        title=f"{sim.instance.name}  t={time_text(sim.now)}  decisions={sim.decisions}")


def render_gantt(sim: Simulator) -> np.ndarray:
    """The Gantt chart as an RGB array ``(height, width, 3)`` uint8 (matplotlib Agg, no window)."""
    return figure_rgb(_figure(sim))


#: matplotlib's built-in backends that draw no window (the one chosen headless is agg).
NON_INTERACTIVE_BACKENDS = ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template")


def show_gantt(sim: Simulator, window: Any = None) -> Any:
    """Draw the Gantt chart in a matplotlib window (created on the first call); returns the window's figure. An
    ``$MPLBACKEND`` matplotlib does not know is an :class:`~dynasched_gym.errors.InstanceFormatError` naming it; a
    backend without windows (no display) draws the figure, shows nothing, and says so once per window."""
    plt = import_matplotlib("matplotlib.pyplot")
    if window is None:
        backend = plt.get_backend()
        if backend.lower() in NON_INTERACTIVE_BACKENDS:
            warnings.warn(f"render_mode='human' shows the Gantt chart in a window, but matplotlib's backend "
                          f"{backend!r} has none (no display?): nothing is shown. Set MPLBACKEND to an interactive "
                          "backend (TkAgg, QtAgg) or use render_mode='rgb_array'", UserWarning, stacklevel=4)
        plt.ion()
        window = plt.figure(figsize=gantt_size(sim.instance), dpi=80)
    _figure(sim, window)
    window.canvas.draw_idle()
    plt.pause(0.001)
    return window


def close(window: Any) -> None:
    """Close a window made by :func:`show_gantt`."""
    import_matplotlib("matplotlib.pyplot").close(window)
