"""Pictures of instances and finished episodes: Gantt charts, event timelines and metric curves.

matplotlib (the ``viz`` extra) is imported only when a figure is drawn; the HTML Gantt chart and
:func:`metric_curves` need nothing beyond numpy. Every ``save_*`` writes atomically and picks the
file type from the suffix.
"""

from __future__ import annotations

from dynasched_gym.viz._mpl import figure_rgb, save_figure
from dynasched_gym.viz.curves import curves_figure, metric_curves, save_curves
from dynasched_gym.viz.gantt import gantt_figure, gantt_html, save_gantt
from dynasched_gym.viz.timeline import event_times, save_timeline, timeline_figure

__all__ = [
    "curves_figure",
    "event_times",
    "figure_rgb",
    "gantt_figure",
    "gantt_html",
    "metric_curves",
    "save_curves",
    "save_figure",
    "save_gantt",
    "save_timeline",
    "timeline_figure",
]
