"""Gantt charts of a schedule, by machine or by job: a matplotlib figure (PNG/PDF/SVG) or interactive HTML.

Machine view: one row per machine; segments coloured by job (preempted ones hatched ``//``,
aborted ones crossed ``xx``), downtime as thin bars (breakdowns red, maintenance grey), job
arrivals as green triangles above the rows and cancellations as red crosses below them.
Job view: one row per job (while running, per job released by now); segments coloured by machine,
the release (green triangle), the due date in force at completion or now (black tick, red when the
job was late, or is still open and past it) and the cancellation (red cross) on the job's row.
Bars are a few ``PolyCollection``s (one per segment status), so thousands of segments draw in well
under a second.

The HTML version is one self-contained file: an inline SVG whose x axis is time itself (zooming
changes the ``viewBox``), one element per segment, downtime interval and marker, and a little
vanilla JavaScript for hover tooltips, wheel zoom, drag to pan and double-click to reset.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from string import Template
from typing import Any

import numpy as np

from dynasched_gym.checks import check_path, check_real
from dynasched_gym.instance import Instance, write_text_atomic
from dynasched_gym.metrics import EPS
from dynasched_gym.schedule import DOWNTIME_KINDS, SEGMENT_STATUSES, Schedule, check_schedule
from dynasched_gym.viz._mpl import (
    FIGURE_SUFFIXES,
    PALETTE,
    blank_figure,
    check_suffix,
    palette,
    plain_text,
    save_figure,
)

#: The two views: one row per machine, or one row per job.
VIEWS = ("machine", "job")
#: Output types of :func:`save_gantt`, by suffix.
GANTT_SUFFIXES = (*FIGURE_SUFFIXES, ".html")
DOWN_COLOURS = {"breakdown": "#d62728", "maintenance": "#9e9e9e"}
HATCHES = {"completed": None, "preempted": "////", "aborted": "xxxx"}

Running = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Operations in progress, as parallel arrays: job, machine, start, planned end."""


def gantt_figure(
    schedule: Schedule,
    by: str = "machine",
    *,
    now: float | None = None,
    running: Running | None = None,
    title: str | None = None,
    fig: Any = None,
    dpi: float = 100,
) -> Any:
    """Draw the Gantt chart of ``schedule`` on ``fig`` (cleared first; a new figure when ``None``).

    ``now`` (a running episode) draws the current time, hides arrivals after it and cuts
    downtime at it; ``running`` adds the operations in progress, faded, up to their planned end. The time axis
    then ends there, and due dates after it are left out. The job view then has rows for the jobs released by
    ``now`` only.
    """
    check_schedule("schedule", schedule)
    _check_view(by)
    if now is not None:  # a string failed inside NumPy; NaN or a negative time drew a chart of no moment
        now = check_real("now", now, 0.0)
    inst = schedule.instance
    machine_view = by == "machine"
    names = inst.machine_names if machine_view else inst.job_names
    arrival = schedule.job_arrival  # NaN: cancelled before its release, the job never arrived
    arrived = ~np.isnan(arrival) if now is None else arrival <= now
    # while running, a non-oracle agent knows of no job released later, nor of one cancelled before its release
    shown = np.flatnonzero(arrived) if now is not None and not machine_view else np.arange(len(names))
    rows = len(shown)
    row_of = np.full(len(names), -1)
    row_of[shown] = np.arange(rows)
    fig = blank_figure(fig, *_size(rows, by), dpi)
    ax = fig.add_subplot()
    colours = palette(inst.num_jobs if machine_view else inst.num_machines)
    seg_row, seg_colour = _row_and_colour(schedule.segment_job, schedule.segment_machine, machine_view, row_of)
    edge = 0.4 if len(seg_row) <= 60 * rows else 0.0  # dense charts: edges would hide the colours
    for i, status in enumerate(SEGMENT_STATUSES):
        sel = (schedule.segment_status == i) & (seg_row >= 0)
        _bars(ax, seg_row[sel], schedule.segment_start[sel], schedule.segment_end[sel], 0.7,
              facecolors=colours[seg_colour[sel]], edgecolors="black", linewidths=edge, hatch=HATCHES[status])
    if running is not None:
        job, machine, start, end = running
        run_row, run_colour = _row_and_colour(job, machine, machine_view, row_of)
        sel = run_row >= 0
        _bars(ax, run_row[sel], start[sel], end[sel], 0.7, facecolors=colours[run_colour[sel]], alpha=0.45,
              edgecolors="black", linewidths=edge)
    horizon = _horizon(schedule, by, now, running)
    cancel = schedule.job_cancelled_at
    if machine_view:
        down_end = schedule.downtime_end if now is None else np.minimum(
            schedule.downtime_end, np.maximum(now, schedule.downtime_start))
        down_colours = np.array([DOWN_COLOURS[k] for k in DOWNTIME_KINDS])[schedule.downtime_kind]
        _bars(ax, schedule.downtime_machine, schedule.downtime_start, down_end, 0.35, facecolors=down_colours)
        _marks(ax, arrival[arrived], -0.8, "^", "tab:green", 5)
        _marks(ax, cancel[~np.isnan(cancel)], rows - 0.2, "x", "tab:red", 6)
        ax.set_ylim(rows - 0.2, -1.0)
        axis_start = 0.0
    else:
        size = float(np.clip(0.8 * 72 * (fig.get_figheight() - 1.2) / max(rows, 1), 1.0, 6.0))
        row = np.arange(rows)
        due = schedule.job_due[shown]
        late = _late(schedule, now)[shown]
        on_time = ~late & (due <= horizon)  # with now, a later due date would be drawn beyond the time axis
        axis_start = _start(due[on_time | late], horizon)
        released, cancelled = arrived[shown], ~np.isnan(cancel[shown])
        _marks(ax, arrival[shown][released], row[released], ">", "tab:green", size)
        _marks(ax, due[on_time], row[on_time], "|", "black", 1.6 * size)
        _marks(ax, due[late], row[late], "|", "tab:red", 1.6 * size)
        _marks(ax, cancel[shown][cancelled], row[cancelled], "x", "tab:red", size)
        ax.set_ylim(max(rows, 1) - 0.5, -0.5)  # no row (nothing released yet): equal limits would warn
    if now is not None:
        ax.axvline(now, color="black", linestyle="--", linewidth=0.8)
    ax.set_xlim(axis_start, 1.01 * horizon)
    if rows <= 60:
        ax.set_yticks(range(rows), [names[i] for i in shown], fontsize=8 if rows <= 30 else 6)
    else:  # too many rows to name: the ticks number them, by job index where rows are left out
        ax.yaxis.set_major_formatter(lambda y, _: str(shown[int(y)]) if float(y).is_integer() and 0 <= y < rows
                                     else "")
    ax.set_ylabel(by)
    ax.set_xlabel("time")
    _add_legend(fig, _legend(inst.machine_names, machine_view, now is not None, running is not None))
    fig.suptitle(title or _title(schedule, by), fontsize=9, x=0.01, ha="left")
    return plain_text(fig)


def gantt_size(instance: Instance, by: str = "machine") -> tuple[float, float]:
    """Default figure size in inches of the complete chart: 10 wide, a fixed height per row (at most 24)."""
    return _size(instance.num_machines if by == "machine" else instance.num_jobs, by)


def _size(rows: int, by: str) -> tuple[float, float]:
    return 10.0, min(1.6 + (0.35 if by == "machine" else 0.18) * rows, 24.0)


def save_gantt(schedule: Schedule, path: str | os.PathLike[str], by: str = "machine") -> Path:
    """Write the Gantt chart to ``path`` atomically: PNG, PDF or SVG (matplotlib) or HTML, by suffix."""
    path = check_path("path", path)
    if check_suffix(path, GANTT_SUFFIXES) == ".html":
        write_text_atomic(path, gantt_html(schedule, by))
    else:
        save_figure(gantt_figure(schedule, by), path)
    return path


def gantt_html(schedule: Schedule, by: str = "machine", title: str | None = None) -> str:
    """The Gantt chart as a self-contained interactive HTML page (no network access needed)."""
    check_schedule("schedule", schedule)
    _check_view(by)
    inst = schedule.instance
    machine_view = by == "machine"
    names = inst.machine_names if machine_view else inst.job_names
    row_h = 20 if machine_view else 12
    top = row_h if machine_view else 0  # machine view: strips above and below the rows for the markers
    height = 2 * top + len(names) * row_h
    horizon = 1.01 * _horizon(schedule, by)
    start = 0.0 if machine_view else _start(schedule.job_due, horizon)
    colours = palette(inst.num_jobs if machine_view else inst.num_machines)

    def y(row: int, frac: float) -> float:  # top of a bar filling `frac` of row `row`
        return top + (row + (1 - frac) / 2) * row_h

    out = [f'<rect class="stripe" x="{start:.10g}" y="{y(r, 1)}" width="{horizon - start:.10g}" height="{row_h}"/>'
           for r in range(1, len(names), 2)]
    for j, k, m, s, e, w, st in zip(schedule.segment_job, schedule.segment_op, schedule.segment_machine,
                                    schedule.segment_start, schedule.segment_end, schedule.segment_work,
                                    schedule.segment_status):
        status = SEGMENT_STATUSES[st]
        tip = (f"{inst.job_names[j]} (job {j}), op {k} on {inst.machine_names[m]}\n"
               f"{time_text(s)} – {time_text(e)}, {_share_text(w)} of the op's work, {status}")
        out.append(_rect(f"seg {status}", s, e, y(m if machine_view else j, 0.7), 0.7 * row_h,
                         tip, colours[j if machine_view else m]))
    if machine_view:
        for m, s, e, kind in zip(schedule.downtime_machine, schedule.downtime_start, schedule.downtime_end,
                                 schedule.downtime_kind):
            name = DOWNTIME_KINDS[kind]
            out.append(_rect(f"down {name}", s, e, y(m, 0.35), 0.35 * row_h,
                             f"{name} of {inst.machine_names[m]}\n{time_text(s)} – {time_text(e)}", DOWN_COLOURS[name]))
    late, arrival = _late(schedule), schedule.job_arrival
    for j in range(inst.num_jobs):
        r0, r1 = (2, top - 2) if machine_view else (y(j, 0.9), y(j, 0.9) + 0.9 * row_h)
        if not np.isnan(arrival[j]):
            out.append(_tick("arrival", arrival[j], r0, r1, f"{inst.job_names[j]} arrives"))
        if not np.isnan(schedule.job_cancelled_at[j]):
            c0, c1 = (height - top + 2, height - 2) if machine_view else (r0, r1)
            out.append(_tick("cancel", schedule.job_cancelled_at[j], c0, c1, f"{inst.job_names[j]} cancelled"))
        if not machine_view and not np.isnan(schedule.job_due[j]):
            out.append(_tick("due late" if late[j] else "due", schedule.job_due[j], r0, r1,
                             f"{inst.job_names[j]} due" + (" (late)" if late[j] else "")))
    label_w = min(200, 10 + 7 * max(len(n) for n in names))
    labels = "".join(f'<text x="{label_w - 6}" y="{top + (r + 0.5) * row_h}">{html.escape(n)}</text>'
                     for r, n in enumerate(names))
    legend = [f'<span><i style="background:{DOWN_COLOURS[k]}"></i>{k}</span>' for k in DOWNTIME_KINDS
              if machine_view]
    legend += ['<span><i class="preempted"></i>preempted</span>', '<span><i class="aborted"></i>aborted</span>',
               '<span><b class="arrival"></b>arrival</span>', '<span><b class="cancel"></b>cancellation</span>']
    if not machine_view:
        legend += ['<span><b class="due"></b>due</span>', '<span><b class="due late"></b>due (late)</span>']
        legend += [f'<span><i style="background:{c}"></i>{html.escape(n)}</span>'
                   for c, n in _colour_key(inst.machine_names)]
    return _PAGE.substitute(title=html.escape(title or _title(schedule, by)), legend="".join(legend),
                            label_w=label_w, height=height, start=f"{start:.10g}", horizon=f"{horizon:.10g}",
                            span=f"{horizon - start:.10g}", labels=labels,
                            body="\n".join(out))


def _check_view(by: str) -> None:
    if by not in VIEWS:
        raise ValueError(f"by must be one of {VIEWS}, got {by!r}")


def _late(schedule: Schedule, now: float | None = None) -> np.ndarray:
    """Per job: completed more than :data:`~dynasched_gym.metrics.EPS` after its due date, as the tardy-job count
    decides (one that ends on its due date up to float rounding is on time), or, still open (released, neither
    completed nor cancelled), with the clock more than EPS past it: tardy already, by the tardiness the
    environments' potential counts for open jobs (docs/environments.md, Rewards). The clock is ``now``, else
    :attr:`~dynasched_gym.schedule.Schedule.clock` (a finished schedule has no open job)."""
    clock = schedule.clock if now is None else now
    open_ = np.isnan(schedule.job_completion) & np.isnan(schedule.job_cancelled_at) & (
        schedule.instance.job_release <= clock)
    return (schedule.job_completion - schedule.job_due > EPS) | (open_ & (clock - schedule.job_due > EPS))


def _row_and_colour(
    job: np.ndarray, machine: np.ndarray, machine_view: bool, row_of: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which row each bar goes on (-1: a job given no row, released after ``now``) and which palette entry colours
    it."""
    return (row_of[machine], job) if machine_view else (row_of[job], machine)


def _horizon(schedule: Schedule, by: str, now: float | None = None, running: Running | None = None) -> float:
    """The last time anything in the chart happens (at least 1): due dates in the job view only, the one that draws
    them; while running, nothing after ``now`` but the planned ends of the running operations (future arrivals and
    due dates are not shown)."""
    times = [schedule.segment_end, [1.0]]
    if now is None:
        times += [schedule.downtime_end, schedule.job_arrival, schedule.job_cancelled_at]
        if by == "job":
            times.append(schedule.job_due)
    else:
        times.append([now])
    if running is not None:
        times.append(running[3])
    return float(np.nanmax(np.concatenate([np.asarray(t, dtype=np.float64) for t in times])))


def _start(due: np.ndarray, end: float) -> float:
    """Where the time axis starts: at 0, or, when a due date drawn lies before 0 (a job overdue from the start),
    a little before the earliest: beyond the axis its tick was out of sight, and constrained layout squeezed the axes
    to make room for it."""
    first = float(np.nanmin(due, initial=0.0))
    return first - 0.01 * (end - first) if first < 0 else 0.0


def _bars(ax: Any, row: np.ndarray, start: np.ndarray, end: np.ndarray, height: float, **style: Any) -> None:
    """Add one rectangle per (row, start, end), centred on the row, as a single PolyCollection."""
    if len(row) == 0:
        return
    from matplotlib.collections import PolyCollection

    y0, y1 = row - height / 2, row + height / 2
    verts = np.stack([np.c_[start, y0], np.c_[start, y1], np.c_[end, y1], np.c_[end, y0]], axis=1)
    ax.add_collection(PolyCollection(verts, **style))


def _marks(ax: Any, x: np.ndarray, y: Any, marker: str, colour: str, size: float) -> None:
    """Markers at (x, y), drawn outside the axes too (arrival and cancellation strips)."""
    if len(x) == 0:  # an empty unclipped line sits at the figure's corner: constrained layout left a band for it
        return
    y = np.broadcast_to(y, np.shape(x))
    ax.plot(x, y, linestyle="none", marker=marker, color=colour, markersize=size, clip_on=False)


def _legend(machine_names: tuple[str, ...], machine_view: bool, now: bool, running: bool) -> list[Any]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def mark(marker: str, colour: str, label: str) -> Line2D:
        return Line2D([], [], linestyle="none", marker=marker, color=colour, label=label)

    handles = [Patch(facecolor="white", edgecolor="black", hatch=HATCHES[s], label=s) for s in SEGMENT_STATUSES[1:]]
    if machine_view:
        handles[:0] = [Patch(color=DOWN_COLOURS[k], label=k) for k in DOWNTIME_KINDS]
        handles += [mark("^", "tab:green", "arrival"), mark("x", "tab:red", "cancellation")]
    else:
        handles += [mark(">", "tab:green", "release"), mark("|", "black", "due"), mark("|", "tab:red", "due (late)"),
                    mark("x", "tab:red", "cancellation")]
        handles += [Patch(color=c, label=n) for c, n in _colour_key(machine_names)]
    if running:
        handles.append(Patch(facecolor="tab:blue", alpha=0.45, label="running"))
    if now:
        handles.append(Line2D([], [], color="black", linestyle="--", label="now"))
    return handles


def _colour_key(names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(colour, label) for each palette colour ``names`` are drawn in: the name, or beyond 16 names, where the palette
    cycles, the names sharing the colour, joined by commas (a key of at most 16 entries, none ambiguous)."""
    step = len(PALETTE)
    return [(c, ", ".join(names[i::step])) for i, c in enumerate(palette(min(len(names), step)))]


def _add_legend(fig: Any, handles: list[Any], fontsize: float = 7) -> None:
    """The legend below the axes, in as many columns (at most 8) as fit the figure's width: each column counted as
    wide as the longest label (a colour shared by several machines names them all) plus matplotlib's default handle
    and spacings (4.8 font sizes)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    prop = FontProperties(size=fontsize)
    longest = max(text_to_path.get_text_width_height_descent(h.get_label(), prop, ismath=False)[0] for h in handles)
    ncol = int(np.clip((72 * fig.get_figwidth() - 2 * fontsize) // (longest + 4.8 * fontsize), 1, 8))
    fig.legend(handles=handles, loc="outside lower left", ncol=ncol, fontsize=fontsize, frameon=False)


def _title(schedule: Schedule, by: str) -> str:
    m = schedule.metrics
    return (f"{schedule.instance.name} by {by}: makespan {time_text(m['makespan'])}, total tardiness "
            f"{time_text(m['total_tardiness'])}, {m['num_cancelled_jobs']} cancelled, "
            f"utilisation {m['utilization']:.1%}")


def time_text(x: float) -> str:
    """``x`` to 6 significant digits, and to one decimal at least up to 15 digits: ``:g`` wrote 1000001.5 and
    1000004 alike as 1e+06, so a long horizon's tooltips and titles (and the environments' renderings) told no
    time apart."""
    digits = int(np.floor(np.log10(abs(x)))) + 1 if np.isfinite(x) and x != 0 else 0  # of the integer part
    return f"{x:.{min(15, max(6, digits + 1))}g}"


def _share_text(share: float) -> str:
    """``share`` (0 to 1) as a whole percentage that reads 0 % or 100 % only when it is: ``:.0%`` wrote a segment
    holding 0.1 % of its operation's work as 0 %."""
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{share:.0%}"


def _rect(cls: str, start: float, end: float, top: float, height: float, tip: str, fill: str) -> str:
    return (f'<rect class="{cls}" x="{start:.10g}" y="{top:g}" width="{end - start:.10g}" height="{height:g}" '
            f'fill="{fill}" data-tip="{html.escape(tip)}"/>')


def _tick(cls: str, t: float, y0: float, y1: float, tip: str) -> str:
    return (f'<line class="{cls}" x1="{t:.10g}" x2="{t:.10g}" y1="{y0:g}" y2="{y1:g}" '
            f'data-tip="{html.escape(tip)} at {time_text(t)}"/>')


_PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>$title</title>
<style>
body{font:13px system-ui,sans-serif;margin:12px;color:#222}
h1{font-size:15px;margin:0 0 4px}
.hint{color:#666;margin:0 0 6px}
.legend span{margin-right:12px;white-space:nowrap}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;border:1px solid #444;vertical-align:middle}
.legend b{display:inline-block;width:3px;height:12px;margin:0 5px;vertical-align:middle}
.legend i.preempted{background:repeating-linear-gradient(45deg,#999 0 2px,#fff 2px 5px)}
.legend i.aborted{background:#fff;border:2px solid #b00}
.chart{max-height:85vh;overflow:auto;border:1px solid #ccc;margin-top:6px}
.rows{display:flex}
.labels{flex:none;font-size:10px;text-anchor:end;dominant-baseline:middle}
#plot{flex:1 1 auto;min-width:0;display:block;cursor:grab}
.axisrow{display:flex;position:sticky;bottom:0;background:#fff;border-top:1px solid #888}
#axis{flex:1 1 auto;min-width:0;font-size:10px;text-anchor:middle}
#axis line{stroke:#444}
rect,line{vector-effect:non-scaling-stroke}
.stripe{fill:#f4f4f4}
.seg{stroke:#222;stroke-width:.5}
.seg.preempted{fill-opacity:.55;stroke-dasharray:3 2}
.seg.aborted{fill-opacity:.3;stroke:#b00;stroke-width:1.5}
.arrival,.legend b.arrival{stroke:#2ca02c;background:#2ca02c;stroke-width:2}
.cancel,.legend b.cancel{stroke:#d62728;background:#d62728;stroke-width:3}
.due,.legend b.due{stroke:#000;background:#000;stroke-width:2}
.due.late,.legend b.due.late{stroke:#d62728;background:#d62728}
#tip{position:fixed;display:none;pointer-events:none;background:#fffbe6;border:1px solid #999;padding:3px 6px;
white-space:pre-line;font-size:12px}
</style></head><body>
<h1>$title</h1>
<p class="hint">wheel over the chart: zoom in time &middot; drag: pan &middot; double-click: reset &middot;
hover: details</p>
<div class="legend">$legend</div>
<div class="chart">
<div class="rows">
<svg class="labels" width="$label_w" height="$height">$labels</svg>
<svg id="plot" height="$height" viewBox="$start 0 $span $height" preserveAspectRatio="none">
$body
</svg>
</div>
<div class="axisrow"><div style="flex:none;width:${label_w}px"></div><svg id="axis" height="22"></svg></div>
</div>
<div id="tip"></div>
<script>
(function () {
  var plot = document.getElementById("plot"), axis = document.getElementById("axis");
  var tip = document.getElementById("tip"), NS = "http://www.w3.org/2000/svg";
  var H = $height, T0 = $start, T = $horizon, a = T0, b = T, drag = null;
  function nice(x) {
    var p = Math.pow(10, Math.floor(Math.log10(x))), f = x / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }
  function add(tag, attrs, text) {
    var el = document.createElementNS(NS, tag);
    for (var k in attrs) el.setAttribute(k, attrs[k]);
    if (text !== undefined) el.textContent = text;
    axis.appendChild(el);
  }
  function draw() {
    plot.setAttribute("viewBox", a + " 0 " + (b - a) + " " + H);
    var w = plot.getBoundingClientRect().width, step = nice((b - a) / Math.max(2, w / 90));
    axis.setAttribute("width", w);
    while (axis.firstChild) axis.removeChild(axis.firstChild);
    for (var t = Math.ceil(a / step) * step; t <= b; t += step) {
      var x = (t - a) / (b - a) * w;
      add("line", {x1: x, x2: x, y1: 0, y2: 5});
      add("text", {x: x, y: 17}, String(+t.toPrecision(15)));  // 6 digits repeated a label from 1e5 on
    }
  }
  function show(lo, span) {
    span = Math.max((T - T0) * 1e-5, Math.min(T - T0, span));
    a = Math.max(T0, Math.min(lo, T - span));
    b = a + span;
    draw();
  }
  plot.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = plot.getBoundingClientRect(), f = (e.clientX - r.left) / r.width, t = a + f * (b - a);
    var span = (b - a) * (e.deltaY < 0 ? 0.8 : 1.25);
    show(t - f * span, span);
  }, {passive: false});
  plot.addEventListener("mousedown", function (e) { drag = {x: e.clientX, a: a}; e.preventDefault(); });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (e) {
    if (drag) show(drag.a - (e.clientX - drag.x) / plot.getBoundingClientRect().width * (b - a), b - a);
  });
  plot.addEventListener("dblclick", function () { show(T0, T - T0); });
  plot.addEventListener("mousemove", function (e) {
    var text = e.target.getAttribute("data-tip");
    if (!text || drag) { tip.style.display = "none"; return; }
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = (e.clientX + 12) + "px";
    tip.style.top = (e.clientY + 12) + "px";
  });
  plot.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  window.addEventListener("resize", draw);
  draw();
})();
</script>
</body></html>
""")
