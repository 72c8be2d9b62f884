"""Event timeline: when the events of an instance (or of a finished episode) happen, by type.

Top panel: events per time bin, stacked by type. Bottom panel: a rug, one row per type, one tick
per event. An instance contributes its event stream and the job arrivals (releases); a schedule shows
what happened in its episode: the events and arrivals up to its end (:attr:`Schedule.clock`; later
ones never applied, docs/semantics.md) and the operation completions.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.checks import check_integer
from dynasched_gym.instance import EventType, Instance
from dynasched_gym.metrics import EPS
from dynasched_gym.schedule import SEGMENT_STATUSES, Schedule
from dynasched_gym.viz._mpl import blank_figure, figure_path, palette, plain_text, save_figure


def event_times(source: Instance | Schedule) -> dict[str, np.ndarray]:
    """Sorted event times per event type name, in :class:`EventType` order; types without events left out.

    For a schedule, only what happened in its episode: events and arrivals after its end (its
    :attr:`~dynasched_gym.schedule.Schedule.clock`, up to the simulator's :data:`~dynasched_gym.metrics.EPS`) are
    left out, and so is the arrival of a job cancelled before its release
    (:attr:`~dynasched_gym.schedule.Schedule.job_arrival`); the completed segments' ends are added.
    """
    if not isinstance(source, (Instance, Schedule)):  # a path failed as an AttributeError deep inside
        raise TypeError(f"source must be an Instance or a Schedule, got {type(source).__name__}: {source!r:.80}")
    inst = source.instance if isinstance(source, Schedule) else source
    times: dict[EventType, list[float]] = {t: [] for t in EventType}
    times[EventType.ARRIVAL] = list(inst.job_release)
    for event in inst.events:
        times[event.type].append(event.time)
    if isinstance(source, Schedule):
        times[EventType.ARRIVAL] = list(source.job_arrival[~np.isnan(source.job_arrival)])
        end = source.clock + EPS  # every happening of the last instant applies, later events do not
        times = {t: [x for x in v if x <= end] for t, v in times.items()}
        completed = source.segment_status == SEGMENT_STATUSES.index("completed")
        times[EventType.COMPLETION] = list(source.segment_end[completed])
    return {t.name: np.sort(np.asarray(v, dtype=np.float64)) for t, v in times.items() if v}


#: The most time bins: more than the default figure's 1,000 pixel columns draw nothing more, and 10**12 ran out of
#: memory.
MAX_BINS = 1000


def timeline_figure(source: Instance | Schedule, bins: int = 60, fig: Any = None, dpi: float = 100) -> Any:
    """Plot events per time bin (stacked by type) above a rug of the event times."""
    bins = check_integer("bins", bins, 1, MAX_BINS)  # 2.5 and True failed inside NumPy and matplotlib
    events = event_times(source)
    colours = dict(zip((t.name for t in EventType), palette(len(EventType))))
    horizon = max([1.0, *(float(v[-1]) for v in events.values())])  # no event: a schedule taken before the first
    edges = np.linspace(0.0, horizon, bins + 1)
    fig = blank_figure(fig, 10.0, 3.2 + 0.25 * len(events), dpi)
    hist, rug = fig.subplots(2, 1, sharex=True, height_ratios=(2.0, 0.4 + 0.25 * len(events)))
    bottom = np.zeros(bins)
    for row, (name, times) in enumerate(events.items()):
        top = bottom + np.histogram(times, edges)[0]
        # one patch per type: a bar per bin took 14 s to draw at 1000 bins, empty bins included
        hist.stairs(top, edges, baseline=bottom, fill=True, color=colours[name], label=f"{name} ({len(times)})")
        bottom = top
        rug.plot(times, np.full(len(times), row), linestyle="none", marker="|", markersize=8, color=colours[name])
    hist.set_ylabel(f"events per bin (width {edges[1]:.3g})", fontsize=8)
    if events:  # a legend of no entry warns
        # beside the axes: inside, it hid the tallest bins, often the last ones (completions as the episode ends)
        hist.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    rug.set_yticks(range(len(events)), list(events), fontsize=7)
    rug.set_ylim(max(len(events), 1) - 0.5, -0.5)  # no row: equal limits would warn
    rug.set_xlim(-0.01 * horizon, 1.01 * horizon)  # the first and last ticks (at 0, the end) hid under the frame
    rug.set_xlabel("time")
    fig.suptitle(f"{(source.instance if isinstance(source, Schedule) else source).name}: event timeline",
                 fontsize=9, x=0.01, ha="left")
    return plain_text(fig)


def save_timeline(source: Instance | Schedule, path: str | os.PathLike[str], bins: int = 60) -> Path:
    """Write :func:`timeline_figure` to ``path`` atomically (PNG, PDF or SVG by suffix)."""
    path = figure_path(path)  # a bad suffix was refused only after the drawing
    return save_figure(timeline_figure(source, bins), path)
