"""Pictures: Gantt charts (figure, PNG/PDF/HTML), event timeline, exact metric curves, CLI commands."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from dynasched_gym import (
    Event,
    EventType,
    Instance,
    Job,
    Machine,
    Schedule,
    data,
    load_instance,
    rollout,
    validate_schedule,
)
from dynasched_gym.cli import main
from dynasched_gym.errors import InstanceFormatError, UnreadFieldWarning
from dynasched_gym.instance import STREAM_EVENT_TYPES
from dynasched_gym.schedule import (
    DOWNTIME_KINDS,
    SEGMENT_STATUSES,
    load_schedule,
    load_schedule_dict,
    schedule_from_dict,
)
from dynasched_gym.viz import (
    curves_figure,
    event_times,
    figure_rgb,
    gantt_figure,
    gantt_html,
    metric_curves,
    save_curves,
    save_figure,
    save_gantt,
    save_timeline,
    timeline_figure,
)
from dynasched_gym.viz.gantt import gantt_size

pytest.importorskip("matplotlib")
E = EventType


def every_event_instance() -> Instance:
    """Three machines, five jobs and one event of every stream type (SPT preempts, aborts and cancels)."""
    jobs = [
        Job("a", [{0: 4.0, 1: 5.0}, {2: 3.0}], release=0.0, due=10.0),
        Job("b", [{1: 3.0}, {0: 2.0, 2: 2.0}], release=1.0, due=6.0, weight=2.0),
        Job("c", [{0: 2.0}, {1: 4.0}], release=2.0, due=20.0),
        Job("d", [{2: 6.0}], release=0.0),
        Job("e", [{0: 3.0, 2: 3.0}, {1: 2.0}], release=5.0, due=9.0),
    ]
    events = [
        Event(1.0, E.BREAKDOWN, machine=0, duration=3.0),
        Event(2.0, E.REPAIR, machine=0),
        Event(3.0, E.CANCELLATION, job=3),
        Event(3.5, E.PTIME_CHANGE, job=2, op=1, factor=1.5),
        Event(4.0, E.PRIORITY_CHANGE, job=4, weight=5.0),
        Event(4.5, E.DUE_DATE_CHANGE, job=2, due=8.0),
        Event(5.0, E.ROUTE_CHANGE, job=4, op=1, ops=({2: 1.0},)),
        Event(6.0, E.MAINTENANCE, machine=1, duration=2.0),
        Event(8.0, E.REWORK, job=0, op=0),
    ]
    return Instance.build("every-event", [Machine("M0"), Machine("M1"), Machine("M2")], jobs, events)


@pytest.fixture(scope="module")
def small() -> Schedule:
    schedule = rollout(every_event_instance(), "SPT")
    assert set(schedule.segment_status) == {0, 1, 2} and set(schedule.downtime_kind) == {0, 1}
    assert np.isnan(schedule.job_cancelled_at).sum() == 4
    return schedule


@pytest.fixture(scope="module")
def medium() -> Schedule:
    return rollout(load_instance(data.path("dsbx-medium")), "SPT")


def hand_schedule() -> Schedule:
    """Two machines, three jobs, built by hand (see test_curves_are_exact_on_a_hand_made_schedule)."""
    inst = Instance.build(
        "hand",
        [Machine("M0"), Machine("M1")],
        [Job("a", [{0: 4.0}]), Job("b", [{1: 3.0}], release=1.0, due=5.0), Job("c", [{0: 2.0}], release=2.0)],
        [Event(2.0, E.BREAKDOWN, machine=1, duration=2.0), Event(3.0, E.CANCELLATION, job=2),
         Event(6.0, E.MAINTENANCE, machine=0, duration=1.0)],
    )
    return Schedule(
        instance=inst,
        segment_job=np.array([0, 1, 1]), segment_op=np.array([0, 0, 0]), segment_machine=np.array([0, 1, 1]),
        segment_start=np.array([0.0, 1.0, 4.0]), segment_end=np.array([4.0, 2.0, 6.0]),
        segment_work=np.array([1.0, 1 / 3, 2 / 3]), segment_status=np.array([0, 1, 0]),
        downtime_machine=np.array([1, 0]), downtime_start=np.array([2.0, 6.0]), downtime_end=np.array([4.0, 7.0]),
        downtime_kind=np.array([0, 1]),
        job_due=np.array([np.nan, 5.0, np.nan]), job_weight=np.ones(3),
        job_completion=np.array([4.0, 6.0, np.nan]), job_cancelled_at=np.array([np.nan, np.nan, 3.0]),
    )


# ------------------------------------------------------------------------------------ curves
def test_curves_are_exact_on_a_hand_made_schedule():
    curves = {k: (t.tolist(), v.tolist()) for k, (t, v) in metric_curves(hand_schedule()).items()}
    assert curves == {
        "wip": ([0, 1, 2, 3, 4, 6], [1, 2, 3, 2, 1, 0]),  # releases 0, 1, 2; cancel 3; completions 4, 6
        "wip_waiting": ([0, 2, 3, 4], [0, 2, 1, 0]),  # b waits while M1 is down, c until cancelled
        "jobs_arrived": ([0, 1, 2], [1, 2, 3]),
        "jobs_completed": ([0, 4, 6], [0, 1, 2]),
        "jobs_cancelled": ([0, 3], [0, 1]),
        "busy_machines": ([0, 1, 2, 6], [1, 2, 1, 0]),  # at 4, a ends on M0 as b restarts on M1
        "machines_down": ([0, 2, 4, 6, 7], [0, 1, 0, 1, 0]),
        "utilization": ([0, 1, 4, 6], [0.5, 1.0, 0.5, 0.0]),  # 1/1 while M1 is down
    }


def test_a_job_cancelled_before_its_release_never_arrives_in_the_curves():
    """jobs_arrived counted every job at its release, also one cancelled before it, which never arrives (its release
    after the episode's end never applied, as the timeline has it): the curves stepped up at 20 in an episode that
    ended at 2, and their time axis ran to 20."""
    inst = Instance.build("never", [Machine("M")], [Job("a", [{0: 2.0}]), Job("b", [{0: 3.0}], release=20.0)],
                          [Event(1.0, E.CANCELLATION, job=1)])
    schedule = rollout(inst, "SPT")
    t, v = metric_curves(schedule)["jobs_arrived"]
    assert (t.tolist(), v.tolist()) == ([0.0], [1])
    assert curves_figure(schedule).axes[-1].get_xlim() == (0.0, 1.01 * 2.0)


def test_a_job_cancelled_at_its_release_up_to_rounding_is_never_in_the_system():
    """A cancellation up to EPS before the release: the job arrives (as the simulator has it) and leaves at once, its
    cancellation time before its arrival; counted as an interval it made wip dip below its true count."""
    inst = Instance.build("rounding", [Machine("M0")], [Job("a", [{0: 4.0}]), Job("b", [{0: 1.0}], release=2.0)],
                          [Event(2.0 - 5e-10, E.CANCELLATION, job=1)])
    schedule = rollout(inst, "SPT")
    assert schedule.job_arrival[1] == 2.0 and schedule.job_cancelled_at[1] < 2.0
    t, v = metric_curves(schedule)["wip"]
    assert (t.tolist(), v.tolist()) == ([0.0, 4.0], [1, 0])


def integral(curve: tuple[np.ndarray, np.ndarray], end: float) -> float:
    t, v = curve
    return float(np.sum(v * np.diff(np.minimum(np.append(t, end), end))))


@pytest.mark.parametrize("name", ["small", "medium", "hand"])
def test_curves_agree_with_the_schedule_metrics(name, request):
    schedule = hand_schedule() if name == "hand" else request.getfixturevalue(name)
    curves = metric_curves(schedule)
    m = schedule.metrics
    for t, v in curves.values():
        assert t[0] == 0 and np.all(np.diff(t) > 0) and np.all(v[1:] != v[:-1])
    busy = integral(curves["busy_machines"], m["makespan"])
    available = schedule.instance.num_machines * m["makespan"] - integral(curves["machines_down"], m["makespan"])
    assert busy / available == pytest.approx(m["utilization"])
    assert curves["wip"][1][-1] == 0 and curves["wip_waiting"][1].min() >= 0
    changes = np.unique(np.concatenate([t for t, _ in curves.values()]))

    def at(name: str) -> np.ndarray:
        t, v = curves[name]
        return v[np.searchsorted(t, changes, side="right") - 1]

    assert np.array_equal(at("wip_waiting"), at("wip") - at("busy_machines"))  # also where only a machine starts
    assert curves["jobs_completed"][1][-1] == np.count_nonzero(~np.isnan(schedule.job_completion))
    assert curves["jobs_cancelled"][1][-1] == m["num_cancelled_jobs"]
    assert curves["utilization"][1].max() <= 1.0


# -------------------------------------------------------------------------------- figures
@pytest.mark.parametrize("by", ["machine", "job"])
def test_gantt_figure_draws_every_kind_of_record(small, by):
    fig = gantt_figure(small, by=by)
    ax = fig.axes[0]
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars == len(small.segment_job) + (len(small.downtime_machine) if by == "machine" else 0)
    assert {c.get_hatch() for c in ax.collections} >= {None, "////", "xxxx"}
    labels = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {"preempted", "aborted", "cancellation"} <= labels and "completed" not in labels  # plain bars: no key
    assert ({"breakdown", "maintenance", "arrival"} if by == "machine" else {"release", "due", "due (late)"}) <= labels
    assert "every-event" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="by must be"):
        gantt_figure(small, by="operation")


@pytest.mark.parametrize("by", ["machine", "job"])
def test_gantt_leaves_no_gap_for_markers_it_does_not_draw(by):
    """With no cancellation (and, by job, no late job) an empty marker line drawn unclipped counted as an artist at the
    figure's corner, so constrained layout left an empty band above the legend (0.9 in of mk01's 3.7, 3.2 in of a
    60-machine chart's 22.6)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    schedule = rollout(load_instance(data.path("mk01")), "SPT")
    fig = gantt_figure(schedule, by=by)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax, legend = fig.axes[0], fig.legends[0]
    gap = ax.get_tightbbox(canvas.get_renderer()).y0 - legend.get_window_extent().y1
    assert 0 <= gap < 0.2 * fig.dpi


def test_a_job_on_time_up_to_float_rounding_is_not_drawn_late():
    """The due tick was red when the completion passed the due date by any amount; the metrics count a job tardy only
    beyond EPS, so a chart titled with no tardiness showed a late job."""
    hand = hand_schedule()
    due = hand.job_due.copy()
    due[1] = hand.job_completion[1] - 1e-12  # b ends at its due date, up to rounding
    schedule = dataclasses.replace(hand, job_due=due)
    assert schedule.metrics["num_tardy_jobs"] == 0
    late = [line for line in gantt_figure(schedule, by="job").axes[0].get_lines()
            if line.get_marker() == "|" and line.get_color() == "tab:red"]
    assert sum(len(line.get_xdata()) for line in late) == 0
    assert '<line class="due"' in gantt_html(schedule, by="job") and '<line class="due late"' not in gantt_html(
        schedule, by="job")


def test_an_open_job_past_its_due_date_is_drawn_late():
    """A running episode's job still open past its due date got the black (on time) tick: only a completion after the
    due date was late. It is tardy already (the environments' tardiness potential counts it), so its tick is red at
    now, and in a schedule file (HTML) at the latest time its records show; not before its due date."""
    from dynasched_gym import Simulator

    inst = Instance.build("open", [Machine("M0")], [Job("a", [{0: 5.0}], due=1.0), Job("b", [{0: 5.0}], due=20.0),
                                                    Job("c", [{0: 5.0}], due=7.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.run("SPT", max_decisions=2)
    schedule = sim.schedule()
    assert sim.now == schedule.clock == 10.0 and np.isnan(schedule.job_completion[2])

    def late_ticks(now: float) -> list[float]:
        lines = gantt_figure(schedule, by="job", now=now).axes[0].get_lines()
        return sorted(x for line in lines if line.get_marker() == "|" and line.get_color() == "tab:red"
                      for x in line.get_xdata())

    assert late_ticks(10.0) == [1.0, 7.0] and late_ticks(12.0) == [1.0, 7.0]
    assert late_ticks(7.0) == [1.0]  # c is due at 7: on time up to then
    page = gantt_html(schedule, by="job")
    assert "c due (late) at 7" in page and "b due at 20" in page
    assert page.count('<line class="due late"') == 2 and page.count('<line class="due"') == 1  # a and c; b


def test_a_running_job_view_draws_no_due_date_beyond_its_time_axis():
    """With now, the time axis ends at now (or the planned ends of the running operations), but the due ticks of the
    released jobs were drawn wherever their due dates lay, unclipped: dsbx-medium after 30 SPT decisions had ticks
    far right of the axes, and constrained layout gave up (a warning, the axes squeezed under an empty band)."""
    from dynasched_gym import Simulator

    inst = Instance.build("far", [Machine("M0")], [Job("a", [{0: 5.0}], due=100.0), Job("b", [{0: 5.0}], due=3.0)])
    sim = Simulator(inst)
    sim.reset()
    sim.run("SPT", max_decisions=1)  # a runs on [0, 5]; at 5, b (due 3) waits
    assert sim.now == 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = gantt_figure(sim.schedule(), by="job", now=sim.now)
        figure_rgb(fig)
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    ticks = [x for line in ax.get_lines() if line.get_marker() == "|" for x in line.get_xdata()]
    drawn = np.concatenate([np.asarray(line.get_xdata(), dtype=float) for line in ax.get_lines()])
    assert ticks == [3.0] and np.all((low <= drawn) & (drawn <= high) | np.isnan(drawn))  # b's, late; not a's at 100


def test_a_running_job_view_has_rows_for_the_jobs_released_by_now_only():
    """The running job view kept a row for every job of the instance: a non-oracle agent deciding at now knows of the
    jobs released by then only, so the empty rows of later ones (e, released at 50) told of the future, those of jobs
    cancelled before their release (c) of jobs it never sees, and on a pool instance mid-episode (medium-small-seed0
    after 25 SPT decisions) 19 of 31 rows were empty. The complete chart keeps every row, and so does the running
    machine view, which marks the arrivals up to now only."""
    from dynasched_gym import Simulator

    inst = Instance.build("unknown", [Machine("M0"), Machine("M1")], [
        Job("a", [{0: 3.0}]), Job("b", [{1: 4.0}]), Job("c", [{0: 2.0}], release=2.0),
        Job("d", [{0: 5.0}], release=3.0), Job("e", [{1: 1.0}], release=50.0)], [Event(1.0, E.CANCELLATION, job=2)])
    sim = Simulator(inst)
    sim.reset()
    sim.run("SPT", max_decisions=2)
    schedule = sim.schedule()
    assert sim.now == 3.0 and np.isnan(schedule.job_arrival[2])
    running = (np.array([1]), np.array([1]), np.array([0.0]), np.array([4.0]))  # b on M1 until 4
    fig = gantt_figure(schedule, by="job", now=sim.now, running=running)
    ax = fig.axes[0]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["a", "b", "d"]
    assert ax.get_ylim() == (2.5, -0.5) and fig.get_figheight() == gantt_size(inst, "job")[1] - 2 * 0.18
    assert ax.get_xlim() == (0.0, 1.01 * 4.0)  # past now (3) to b's planned end
    bar_rows = sorted(path.get_extents().intervaly.mean() for c in ax.collections for path in c.get_paths())
    assert bar_rows == [0.0, 1.0]  # a's segment, b running
    marks = {line.get_marker(): line.get_ydata().tolist() for line in ax.get_lines() if line.get_marker() != "None"}
    assert marks == {">": [0, 1, 2]}  # releases, d's on the third row
    complete = gantt_figure(schedule, by="job").axes[0]
    assert [label.get_text() for label in complete.get_yticklabels()] == list("abcde")
    by_machine = gantt_figure(schedule, now=sim.now).axes[0].get_lines()  # every row, but no arrival after now
    assert [line.get_xdata().tolist() for line in by_machine if line.get_marker() == "^"] == [[0.0, 0.0, 3.0]]

    late = rollout(Instance.build("later", [Machine("M0")], [Job("x", [{0: 1.0}], release=2.0)]), "SPT")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # equal y limits would warn
        fig = gantt_figure(late, by="job", now=1.0)  # nothing released yet: no row, and x's segment is not drawn
        figure_rgb(fig)
    assert fig.axes[0].get_yticklabels() == [] and len(fig.axes[0].collections) == 0


def test_a_running_job_view_of_many_rows_numbers_them_by_job():
    """Beyond 60 rows the rows are not named and the ticks number them: with rows left out (b, cancelled before its
    release), the ticks give the job's index, not the row's."""
    jobs = [Job(f"j{j}", [{0: 1.0}]) for j in range(62)]
    jobs[1] = Job("b", [{0: 1.0}], release=10.0)
    schedule = rollout(Instance.build("many", [Machine("M0")], jobs, [Event(5.0, E.CANCELLATION, job=1)]), "SPT")
    label = gantt_figure(schedule, by="job", now=schedule.clock).axes[0].yaxis.get_major_formatter()
    assert [label(y, 0) for y in (0.0, 1.0, 60.0, 1.5, 61.0)] == ["0", "2", "61", "", ""]
    assert gantt_figure(schedule, by="job").axes[0].yaxis.get_major_formatter()(1.0, 0) == "1"


def test_the_job_view_keys_the_machine_colours_for_any_number_of_machines():
    """The job view's legend keyed the machine colours up to 8 machines only: mk10's (15) had no key. Beyond 16
    machines the palette cycles, so each colour's entry names the machines sharing it, in as many legend columns as
    fit the figure's width; the HTML legend has the same entries."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    mk10 = rollout(load_instance(data.path("mk10")), "SPT")
    labels = [text.get_text() for text in gantt_figure(mk10, by="job").legends[0].get_texts()]
    assert labels[-15:] == list(mk10.instance.machine_names)
    names = [f"GroupX-M{m}" for m in range(40)]
    schedule = rollout(Instance.build("forty", [Machine(n) for n in names], [Job(n, [{m: 1.0}])
                                                                             for m, n in enumerate(names)]), "SPT")
    fig = gantt_figure(schedule, by="job")
    FigureCanvasAgg(fig).draw()
    legend = fig.legends[0]
    key = [text.get_text() for text in legend.get_texts()][-16:]
    assert key[0] == "GroupX-M0, GroupX-M16, GroupX-M32" and key[15] == "GroupX-M15, GroupX-M31"
    assert 0 <= legend.get_window_extent().x0 and legend.get_window_extent().x1 <= fig.bbox.width
    page = gantt_html(schedule, by="job")
    assert page.count('<span><i style="background:') == 16
    assert '<i style="background:#1f77b4"></i>GroupX-M0, GroupX-M16, GroupX-M32</span>' in page


def test_timeline_and_curves_figures(small):
    counts = {k: len(v) for k, v in event_times(small).items()}
    completed = np.count_nonzero(small.segment_status == 0)
    assert counts == {"COMPLETION": completed, "ARRIVAL": 5, **{t.name: 1 for t in STREAM_EVENT_TYPES}}
    assert set(event_times(small.instance)) == set(counts) - {"COMPLETION"}
    fig = timeline_figure(small, bins=10)
    assert [tick.get_text() for tick in fig.axes[1].get_yticklabels()] == list(counts)
    assert len(fig.axes[0].patches) == len(counts)
    assert len(curves_figure(small).axes) == 4
    for bad in (0, 1001):
        with pytest.raises(ValueError, match="bins"):
            timeline_figure(small, bins=bad)
    for bad in (2.5, True):  # failed inside NumPy / matplotlib
        with pytest.raises(TypeError, match=f"bins must be an integer >= 1, got {bad}"):
            timeline_figure(small, bins=bad)


@pytest.mark.parametrize("draw", [timeline_figure, curves_figure])
def test_timeline_and_curves_legends_cover_no_data(draw):
    """The legends sat inside the axes at the upper right, where the cumulative curves end and, in the timeline, the
    bins of the last completions are: on dsbx-medium under MWKR both hid data. They are now beside the axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = draw(rollout(load_instance(data.path("mk01")), "SPT"))
    FigureCanvasAgg(fig).draw()
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    for ax, legend in legends:
        assert legend.get_window_extent().x0 >= ax.get_window_extent().x1


def test_a_schedules_timeline_leaves_out_what_came_after_the_episode():
    """A schedule's timeline showed the events and arrivals after its episode ended, which never applied: here a
    breakdown, its repair and the release of a job cancelled before it. Those of the last instant did apply."""
    inst = Instance.build("after", [Machine("M0")], [Job("a", [{0: 2.0}]), Job("b", [{0: 3.0}], release=20.0)],
                          [Event(1.0, E.CANCELLATION, job=1), Event(2.0, E.MAINTENANCE, machine=0, duration=1.0),
                           Event(50.0, E.BREAKDOWN, machine=0, duration=5.0), Event(60.0, E.REPAIR, machine=0)])
    schedule = rollout(inst, "SPT")
    assert {k: list(v) for k, v in event_times(schedule).items()} == {
        "COMPLETION": [2.0], "ARRIVAL": [0.0], "CANCELLATION": [1.0], "MAINTENANCE": [2.0]}
    assert schedule.clock == 2.0 and list(schedule.downtime_start) == [2.0]
    assert {k: len(v) for k, v in event_times(inst).items()} == {
        "ARRIVAL": 2, "CANCELLATION": 1, "MAINTENANCE": 1, "BREAKDOWN": 1, "REPAIR": 1}  # an instance: all
    assert timeline_figure(schedule).axes[1].get_xlim() == (-0.01 * 2.0, 1.01 * 2.0)


def test_figure_now_and_dpi_are_checked(small):
    """now="abc" failed inside NumPy, NaN and -5 drew a chart of no moment; dpi=0, -3 or NaN failed only when the
    figure was drawn, inside matplotlib."""
    for bad, error in (("abc", TypeError), (float("nan"), ValueError), (-5.0, ValueError), (float("inf"), ValueError),
                       (True, TypeError)):
        with pytest.raises(error, match=re.escape(f"now must be a finite number >= 0, got {bad!r}")):
            gantt_figure(small, now=bad)
    for bad, error in ((0, ValueError), (-3, ValueError), (float("nan"), ValueError), ("abc", TypeError)):
        for draw in (gantt_figure, curves_figure, timeline_figure):
            with pytest.raises(error, match=re.escape(f"dpi must be a finite number > 0, got {bad!r}")):
                draw(small, dpi=bad)
    assert figure_rgb(gantt_figure(small, now=np.float64(2), dpi=50)).shape[1] == 500


def test_a_figure_argument_that_is_no_figure_is_named(small):
    """gantt_figure(fig=5) failed with "'int' object has no attribute 'clf'"."""
    for draw in (gantt_figure, curves_figure, timeline_figure):
        with pytest.raises(TypeError, match=r"^fig must be a matplotlib Figure or None, got 5$"):
            draw(small, fig=5)


def test_saved_files_are_complete(small, tmp_path):
    from matplotlib.image import imread

    for by in ("machine", "job"):
        png = save_gantt(small, tmp_path / f"{by}.png", by=by)
        width, height = gantt_size(small.instance, by)
        assert imread(png).shape == (round(100 * height), round(100 * width), 4)
    pdf = save_gantt(small, tmp_path / "g.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and len(pdf) > 5000
    page = save_gantt(small, tmp_path / "g.html", by="job").read_text()
    assert page == gantt_html(small, by="job")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.html", "g.pdf", "job.png", "machine.png"]  # no temp files


def test_html_has_one_element_per_record_and_no_network(medium):
    page = gantt_html(medium)
    assert page.count('<rect class="seg ') == len(medium.segment_job)
    for i, status in enumerate(SEGMENT_STATUSES):
        assert page.count(f'<rect class="seg {status}"') == np.count_nonzero(medium.segment_status == i)
    for i, kind in enumerate(DOWNTIME_KINDS):
        assert page.count(f'<rect class="down {kind}"') == np.count_nonzero(medium.downtime_kind == i)
    assert page.count('<line class="arrival"') == medium.instance.num_jobs
    assert re.findall(r"https?://[^\"]*", page) == ["http://www.w3.org/2000/svg"]  # the SVG namespace only
    assert "<script src" not in page and "<link" not in page
    job_page = gantt_html(medium, by="job")
    assert job_page.count('<line class="due') == np.count_nonzero(~np.isnan(medium.job_due))


def test_html_tooltips_tell_times_of_a_long_horizon_apart():
    """Tooltip and title times had 6 significant digits: from 1e6 on, a segment [1000000, 1000001.5] read "1e+06 –
    1e+06" and the makespan 1000004 "1e+06"; the axis labels of a zoomed-in chart repeated one value."""
    inst = Instance.build("long", [Machine("M")], [Job("a", [{0: 1.5}, {0: 2.5}], release=1e6, due=1e6 + 3)])
    page = gantt_html(rollout(inst, "SPT"), by="job")
    assert "1000000 – 1000001.5," in page and "1000001.5 – 1000004," in page and "a due (late) at 1000003\"" in page
    assert "toPrecision(6)" not in page and "makespan 1000004, total tardiness 1," in page  # the title had 1e+06


def test_html_and_curves_do_not_import_matplotlib(tmp_path):
    code = ("import sys; from dynasched_gym import data, load_instance, rollout; from dynasched_gym import viz; "
            "s = rollout(load_instance(data.path('mk01'))); viz.metric_curves(s); "
            f"viz.save_gantt(s, {str(tmp_path / 'g.html')!r}); assert 'matplotlib' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_large_schedules_render_quickly(tmp_path):
    rng = np.random.default_rng(0)
    jobs = [Job(f"j{j}", [{int(m): float(rng.integers(1, 10)) for m in rng.choice(8, 2, replace=False)}
                          for _ in range(3)], release=float(j)) for j in range(1200)]
    events = [Event(float(t), E.BREAKDOWN, machine=int(t) % 8, duration=5.0) for t in range(50, 1200, 37)]
    schedule = rollout(Instance.build("large", [Machine(f"M{m}") for m in range(8)], jobs, events), "SPT")
    assert len(schedule.segment_job) >= 3600
    began = time.perf_counter()
    for by in ("machine", "job"):
        save_gantt(schedule, tmp_path / f"{by}.png", by=by)
        save_gantt(schedule, tmp_path / f"{by}.html", by=by)
    save_figure(curves_figure(schedule), tmp_path / "curves.png")
    save_figure(timeline_figure(schedule), tmp_path / "timeline.png")
    assert time.perf_counter() - began < 20.0  # about 2 s here; a per-segment artist would take minutes


def test_an_unsupported_suffix_is_refused_before_drawing(small, tmp_path, monkeypatch):
    """save_curves and save_timeline drew the whole figure (long for a large schedule) before refusing .html."""
    def never(*args, **kwargs):
        raise AssertionError("drawn before the suffix was checked")

    monkeypatch.setattr("dynasched_gym.viz.curves.curves_figure", never)
    monkeypatch.setattr("dynasched_gym.viz.timeline.timeline_figure", never)
    for save, source in ((save_curves, small), (save_timeline, small.instance)):
        with pytest.raises(InstanceFormatError, match=r"unsupported output type.*got '\.html'"):
            save(source, tmp_path / "picture.html")
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_nothing_behind(small, tmp_path):
    fig = gantt_figure(small)
    fig.savefig = lambda *a, **k: (_ for _ in ()).throw(OSError("disk full"))
    with pytest.raises(OSError, match="disk full"):
        save_figure(fig, tmp_path / "g.png")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InstanceFormatError, match=r"g\.gif.*unsupported output type"):
        save_gantt(small, tmp_path / "g.gif")


# ---------------------------------------------------------------------------- schedule files
def test_schedule_files_load_back_exactly(small, tmp_path):
    small.instance.to_json(tmp_path / "inst.json")
    (tmp_path / "s.json").write_text(json.dumps(small.to_dict(instance_path="inst.json")))
    small.to_json(tmp_path / "inline.json")
    for name in ("s.json", "inline.json"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no field of a file it wrote goes unread
            back = load_schedule(tmp_path / name)
        assert back.instance == small.instance and back.metrics == small.metrics
        for field in Schedule.__dataclass_fields__:
            if field not in ("instance", "decisions"):
                np.testing.assert_array_equal(getattr(back, field), getattr(small, field), err_msg=field)


def test_a_schedule_field_not_read_is_named_in_a_warning_at_the_callers_line(small, tmp_path):
    """Extra fields were ignored without a word (a file of another tool or version)."""
    d = small.to_dict()
    d["segmentz"] = []
    for segment in d["segments"][1:]:
        segment["wrk"] = 1.0
    d["jobs"][2]["note"] = "x"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(d))
    for read in (load_schedule, validate_schedule):
        with pytest.warns(UnreadFieldWarning) as caught:
            read(path)
        assert [str(w.message) for w in caught] == [
            f"{path}: field segmentz is not read; a schedule holds format, instance, segments, downtime, jobs, metrics",
            f"{path}: field segments[].wrk ({len(d['segments']) - 1} records, the first segments[1]) is not read; a "
            "schedule record holds job, op, machine, start, end, work, status",
            f"{path}: field jobs[2].note is not read; a schedule record holds job, release, due, weight, completion, "
            "cancelled_at"]
        assert {w.filename for w in caught} == {__file__}


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["segments"][2].update(status="paused"), "segments[2].status"),
    (lambda d: d["segments"][0].update(machine=7), "segments[0].machine"),
    (lambda d: d["downtime"][1].pop("end"), "downtime[1].end"),
    (lambda d: d["jobs"][3].update(completion="soon"), "jobs[3].completion"),
    (lambda d: d.update(segments={}), "segments"),
    (lambda d: d.update(jobs=[]), "jobs"),  # every job needs its record ...
    (lambda d: d["jobs"].append(dict(d["jobs"][0])), "jobs"),  # ... exactly once
    (lambda d: d["jobs"][1].update(release="0"), "jobs[1].release"),
    (lambda d: d["segments"][1].update(end=d["segments"][1]["start"] - 1), "segments[1].end"),
    (lambda d: d["downtime"][0].update(end=d["downtime"][0]["start"] - 0.5), "downtime[0].end"),
    (lambda d: d["segments"][3].update(work=0.0), "segments[3].work"),
    (lambda d: d["segments"][0].update(work=1.5), "segments[0].work"),
    (lambda d: d["segments"][0].update(start=None), "segments[0].start"),  # null only where a time may not have come
    (lambda d: d["jobs"][0].update(weight=None), "jobs[0].weight"),
])
def test_bad_schedule_records_name_the_field(small, edit, field):
    """What the loader refuses (gantt, curves and timeline read through it), the validator reports as 'format'."""
    d = small.to_dict()
    edit(d)
    with pytest.raises(InstanceFormatError) as err:
        schedule_from_dict(d, source="bad.json")
    assert err.value.source == "bad.json" and err.value.field == field
    assert "format" in validate_schedule(d).kinds()


def test_schedule_ids_beyond_int64_and_inline_instance_errors_are_located(small, tmp_path):
    """An op beyond int64 raised a bare OverflowError from numpy (gantt, curves and timeline printed a traceback);
    an error in the inline instance named 'jobs[0].release', the schedule's own job records, not 'instance.jobs...'."""
    for edit, field, value in (
        (lambda d: d["segments"][0].update(op=10**20), "segments[0].op", 10**20),
        (lambda d: d["instance"]["jobs"][0].update(release=-1), "instance.jobs[0].release", -1.0),
        (lambda d: d.update(instance="x"), "instance", "x"),
    ):
        d = small.to_dict()
        edit(d)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(d))
        with pytest.raises(InstanceFormatError) as err:
            load_schedule(bad)
        assert (err.value.source, err.value.field, err.value.value) == (str(bad), field, value)
        assert f"field {field!r}" in str(err.value) and repr(value) in str(err.value)


def test_a_non_string_instance_path_names_the_field(small, tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({**small.to_dict(), "instance": {"path": 5}}))
    with pytest.raises(InstanceFormatError) as err:
        load_schedule(bad)
    assert err.value.field == "instance.path" and err.value.value == 5
    assert not validate_schedule(bad).ok


def test_to_dict_takes_only_a_path_for_the_instance(small, tmp_path):
    """to_dict(instance_path=5) wrote a file that did not load, "" stored the instance inline, a pathlib.Path was
    stored as is (json.dumps then failed)."""
    with pytest.raises(TypeError, match=r"^instance_path must be a path \(str or os.PathLike\), got int: 5$"):
        small.to_dict(instance_path=5)
    with pytest.raises(ValueError, match=r"^instance_path must be a path relative to the schedule file, .* got ''$"):
        small.to_dict(instance_path="")
    small.instance.to_json(tmp_path / "inst.json")
    for given in (Path("inst.json"), "./inst.json"):
        (tmp_path / "s.json").write_text(json.dumps(small.to_dict(instance_path=given)))
        assert json.loads((tmp_path / "s.json").read_text())["instance"] == {"path": str(given)}
        assert load_schedule(tmp_path / "s.json").instance == small.instance


@pytest.mark.parametrize("bad", [5, None])
def test_schedule_and_picture_files_name_a_path_of_the_wrong_type(small, tmp_path, bad):
    """pathlib's "expected str, bytes or os.PathLike object, not int" named neither the argument nor the value (and
    save_curves and save_timeline drew the whole figure first)."""
    calls = [load_schedule, load_schedule_dict, lambda p: save_gantt(small, p), lambda p: save_curves(small, p),
             lambda p: save_timeline(small, p), lambda p: save_figure(gantt_figure(small), p)]
    if bad is not None:  # to_json(None) writes no file
        calls.append(small.to_json)
    for call in calls:
        with pytest.raises(TypeError, match=re.escape(f"path must be a path (str or os.PathLike), got "
                                                      f"{type(bad).__name__}: {bad!r}")):
            call(bad)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------- CLI
def test_cli_says_its_version_and_what_each_argument_is(capsys):
    """``dynasched-gym --version`` was an error, and ``compare``'s and ``convert``'s arguments had no help."""
    import dynasched_gym

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"dynasched-gym {dynasched_gym.__version__}\n"
    for command in ("info", "rollout", "convert", "compare", "gantt", "timeline", "curves", "validate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        arguments = text.split("positional arguments:")[1].split("options:")[0]
        assert all(len(line.split(maxsplit=1)) == 2 or line.startswith(" " * 10)
                   for line in arguments.strip().splitlines()), f"{command}: an argument without help\n{text}"


def test_cli_round_trip(tmp_path, capsys):
    sched = tmp_path / "mk01.json"
    assert main(["rollout", "mk01", "--out", str(sched)]) == 0
    outputs = []
    for args in (["gantt", str(sched), "--out", "g.png"], ["gantt", str(sched), "--out", "g.html", "--by", "job"],
                 ["gantt", str(sched), "--out", "g.pdf"], ["timeline", str(sched), "--out", "t.png"],
                 ["timeline", "mk01", "--out", "ti.svg", "--bins", "5"], ["curves", str(sched), "--out", "c.png"]):
        out = tmp_path / args[args.index("--out") + 1]
        args[args.index("--out") + 1] = str(out)
        assert main(args) == 0
        assert out.stat().st_size > 1000
        outputs.append(out)
    assert "ti.svg: written" in capsys.readouterr().out
    assert outputs[4].read_text().startswith("<?xml") and outputs[1].read_text().startswith("<!DOCTYPE html>")


def test_cli_rollout_times_the_simulation_without_loading_the_compiled_kernels(capsys, monkeypatch):
    """rollout's 'decisions: 531 in 0.462 s' on dsbx-medium was the first call's loading of the compiled kernels from
    numba's cache (0.46 s); the simulation took 0.003 s. The kernels load on a warm-up rollout, timed apart."""
    import dynasched_gym.core as core

    real, calls = core.rollout, []

    def first_call_loads(inst, rule="SPT", seed=0):
        calls.append(inst.name)
        if len(calls) == 1:
            time.sleep(0.5)  # stands for numba loading the kernels on the first call in a process
        return real(inst, rule=rule, seed=seed)

    monkeypatch.setattr(core, "rollout", first_call_loads)
    assert main(["rollout", "mk02", "--rule", "MWKR"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "decisions" in line)
    found = re.search(r"decisions: (\d+) in ([\d.]+) s \(after ([\d.]+) s loading the compiled kernels\)", line)
    assert found, line
    assert len(calls) == 2 and calls[1] == "mk02" and float(found[2]) < 0.5 <= float(found[3])


def test_cli_runs_without_docstrings():
    # python -OO (PYTHONOPTIMIZE=2) strips docstrings: the parser's description must not need the module's
    done = subprocess.run([sys.executable, "-OO", "-m", "dynasched_gym", "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "rollout" in done.stdout


def test_cli_help_describes_the_command_in_plain_text():
    done = subprocess.run([sys.executable, "-m", "dynasched_gym", "--help"], capture_output=True, text=True)
    assert "The dynasched-gym command line: inspect" in done.stdout and "``" not in done.stdout, done.stdout


def test_cli_prints_the_package_warnings_as_one_line(tmp_path):
    """A warning of the package printed Python's ``cli.py:88: UserWarning: ...`` and the source line that raised it;
    the command line prints ``warning: <message>``, as it prints errors."""
    from dynasched_gym import Event, EventType, Instance, Job, Machine

    source = tmp_path / "x.json"
    Instance.build("x", [Machine("A1", "A", 1.0), Machine("A2", "A", 2.0)], [Job("J", [{0: 4.0, 1: 2.0}])],
                   [Event(time=1.0, type=EventType.REWORK, job=0, op=0)]).to_json(source)
    done = subprocess.run([sys.executable, "-m", "dynasched_gym", "convert", str(source), str(tmp_path / "out"),
                           "--to", "dsbx-dir", "--drop-unsupported"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "warning: dsbx format: dropped 1 unsupported item(s): events[0] REWORK\n"
    from dynasched_gym.cli import _format_warning

    assert _format_warning("old", DeprecationWarning, "/elsewhere/lib.py", 3) == (  # a dependency's: its location
        "/elsewhere/lib.py:3: DeprecationWarning: old\n")


def test_cli_errors_name_the_file(tmp_path, capsys):
    sched = tmp_path / "mk01.json"
    main(["rollout", "mk01", "--out", str(sched)])
    bad = tmp_path / "bad.json"
    bad.write_text(sched.read_text().replace('"completed"', '"done"', 1))
    cases = [
        (["gantt", str(tmp_path / "missing.json"), "--out", str(tmp_path / "g.png")], "missing.json"),
        (["gantt", str(bad), "--out", str(tmp_path / "g.png")], "bad.json, field 'segments[0].status'"),
        (["curves", str(sched), "--out", str(tmp_path / "c.gif")], "c.gif: unsupported output type"),
        (["timeline", str(tmp_path / "nothing"), "--out", str(tmp_path / "t.png")], "nothing"),
    ]
    instance = tmp_path / "instance.json"
    main(["convert", "mk01", str(instance)])
    cases += [  # a file that is no schedule at all is bad input (2), not an invalid schedule (1)
        (["validate", str(tmp_path / "missing.json")], "missing.json: no such schedule file"),
        (["validate", str(tmp_path)], f"{tmp_path}: no such schedule file"),  # a folder too, not "Is a directory"
        (["curves", "dsbx-medium", "--out", str(tmp_path / "c.png")],  # an instance's name: how to make a schedule
         "dsbx-medium: no such schedule file (a schedule JSON, as `dynasched-gym rollout <instance> --out"),
        (["validate", str(instance)], "instance.json, field 'format': not a schedule file"),
    ]
    for args, message in cases:
        capsys.readouterr()
        try:
            status = main(args)
        except SystemExit as refused:  # argparse's usage error: the same exit status on the command line
            status = refused.code
        assert status == 2
        assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "instance.json", "mk01.json"]
    assert main(["validate", str(bad)]) == 1  # readable, with an invalid record


def test_cli_validate_lists_every_violation_up_to_its_limit(tmp_path, capsys):
    """validate printed the counts and only the first violation: a schedule with three broken segments showed one."""
    sched = tmp_path / "s.json"
    main(["rollout", "mk01", "--out", str(sched)])
    data = json.loads(sched.read_text())
    for segment in data["segments"][:3]:
        segment["start"] -= 1000.0  # each now starts before its job's release
    sched.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["validate", str(sched)]) == 1
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  [")]
    assert len(shown) >= 3 and all(f"segment {i} " in "".join(shown) for i in range(3))
    assert main(["validate", str(sched), "--limit", "2"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("  [") for line in out) == 2 and re.fullmatch(r"  \.\.\. and \d+ more", out[-1])
    with pytest.raises(SystemExit):
        main(["validate", str(sched), "--limit", "-1"])
    assert "must be at least 0 (0: all), got -1" in capsys.readouterr().err


@pytest.mark.parametrize("ref, reason", [
    ("nowhere.json", "nowhere.json: no such file or directory"),
    ("broken.json", "broken.json, line 1: invalid JSON"),
    ("a\x00b.json", "expected a path relative to the schedule file"),  # a ValueError's traceback before
    ("", "expected a path relative to the schedule file"),  # not the schedule's folder, read as an instance folder
])
def test_cli_validate_refuses_a_schedule_whose_instance_does_not_load(tmp_path, capsys, ref, reason):
    """A broken instance reference is bad input (2) in one line naming the schedule file and the field: validate
    reported it as an invalid schedule (1), and every command named only the instance file."""
    sched = tmp_path / "s.json"
    main(["rollout", "mk01", "--out", str(sched)])
    (tmp_path / "broken.json").write_text("{not json")
    sched.write_text(json.dumps({**json.loads(sched.read_text()), "instance": {"path": ref}}))
    for args in (["validate", str(sched)], ["curves", str(sched), "--out", str(tmp_path / "c.png")]):
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {sched}, field 'instance.path': ") and reason in err, err
        assert err.count("\n") == 1


def test_cli_without_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    sched = tmp_path / "mk01.json"
    main(["rollout", "mk01", "--out", str(sched)])
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # as if not installed
    capsys.readouterr()
    assert main(["gantt", str(sched), "--out", str(tmp_path / "g.png")]) == 2
    assert "needs the package 'matplotlib.figure', which is not installed: pip install 'dynasched-gym[viz]'" in (
        capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mk01.json"]


def test_cli_with_an_unknown_mplbackend_names_the_variable(small, tmp_path):
    """matplotlib's import fails on an MPLBACKEND it does not know: every figure command ended in its traceback."""
    sched = tmp_path / "s.json"
    small.to_json(sched)
    command = [sys.executable, "-m", "dynasched_gym", "gantt", str(sched), "--out", str(tmp_path / "g.png")]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "bogus"})
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("error: environment variable MPLBACKEND: not a backend matplotlib knows: unset it or name "
                           "one, such as agg (got 'bogus')\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_human_render_with_an_unknown_mplbackend_names_the_variable():
    """The human viewer imported pyplot itself: an unknown MPLBACKEND ended its first render (reset) in matplotlib's
    ValueError, listing every backend, instead of the error the figure commands give."""
    code = ("from dynasched_gym.envs.dfjsp.env import DFJSPEnv\n"
            "env = DFJSPEnv(instance='mk01', render_mode='human')\n"
            "try:\n    env.reset(seed=0)\nexcept Exception as exc:\n    print(type(exc).__name__, exc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "bogus"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("InstanceFormatError environment variable MPLBACKEND: not a backend matplotlib knows: unset "
                           "it or name one, such as agg (got 'bogus')\n")


def test_cli_draws_names_with_dollars_and_reads_any_schedule_name(tmp_path, capsys):
    """A '$' in a name started TeX math in matplotlib (an unmatched one failed every picture); timeline took a
    schedule for an instance unless its name ended in .json; compare rounded every metric to 0.1."""
    inst = Instance.build("cost$\\foo$", [Machine("M$^$"), Machine("M1")], [Job("J$0", [{0: 2.0, 1: 3.0}])])
    schedule = tmp_path / "s.sched"
    rollout(inst, "SPT").to_json(schedule)
    for command in ("gantt", "timeline", "curves"):
        assert main([command, str(schedule), "--out", str(tmp_path / f"{command}.png")]) == 0
    assert main(["gantt", str(schedule), "--by", "job", "--out", str(tmp_path / "job.png")]) == 0
    capsys.readouterr()
    assert main(["compare", "mk01", "--rules", "SPT", "--metric", "utilization"]) == 0
    assert "0.520833" in capsys.readouterr().out


def test_cli_rollout_refuses_an_instance_whose_metrics_json_cannot_hold(tmp_path, capsys):
    """Its total_weighted_tardiness overflowed to inf after the rollout; now the file is refused as it loads."""
    data = Instance.build("huge", [Machine("M0")], [Job("J0", [{0: 1.0}], due=0.0, weight=10.0)]).to_dict()
    data["jobs"][0]["release"] = 1.7e308
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    assert main(["rollout", str(path), "--out", str(tmp_path / "s.json")]) == 2
    assert "field 'jobs[0].release': release must be a finite time in [0, 1e+30] (got 1.7e+308)" in \
        capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()
    for args, message in ((["rollout", "mk01", "--rule", "FOO"], "unknown rule 'FOO'"),  # a usage error, no traceback
                          (["rollout", "mk01", "--rule", "RANDOM", "--seed", "-1"], "must be in [0, 2**32), got -1"),
                          # ignored: the same schedule as without it
                          (["rollout", "mk01", "--rule", "MWKR", "--seed", "3"],
                           "--seed: only the RANDOM rule draws from it; MWKR makes no random choice")):
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_cli_checks_options_and_reports_file_system_errors(tmp_path, capsys):
    for args, message in ((["compare", "mk01", "--metric", "tardiness"], "invalid choice: 'tardiness'"),
                          (["compare", "mk01", "--rules", "SPT,FOO:EET"], "unknown rule 'FOO:EET'"),
                          # two columns of one rule
                          (["compare", "mk01", "--rules", "SPT,EDD,spt:eet"], "'spt:eet' repeats 'SPT' (both SPT:EET)"),
                          (["timeline", "mk01", "--out", str(tmp_path / "t.png"), "--bins", "0"], "at least 1, got 0")):
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert main(["compare", "mk01", "--rules", "SPT,EDD:EET", "--metric", "total_tardiness"]) == 0  # "SPT" as rollout
    assert "mk01" in capsys.readouterr().out
    (tmp_path / "file").write_text("")
    assert main(["convert", "dsbx-medium", str(tmp_path / "file" / "sub"), "--to", "dsbx-dir"]) == 2
    assert "File exists" in capsys.readouterr().err


def test_cli_compare_checks_every_instance_before_the_rollouts(monkeypatch, capsys):
    """``compare mk01 nonexist`` rolled mk01 out under every rule before failing on the second name."""
    import dynasched_gym.core

    played = []
    monkeypatch.setattr(dynasched_gym.core, "rollout", lambda *args, **kwargs: played.append(args))
    assert main(["compare", "mk01", "nonexist"]) == 2
    assert played == [] and "nonexist" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["info", ""], "expected a path or an embedded name"),  # was a ValueError traceback, status 1
    (["compare", " "], "expected a path or an embedded name"),
    (["timeline", "", "--out", "t.png"], "expected a path or an embedded name"),
    (["gantt", __file__, "--out", ""], "argument --out: expected a file path, got ''"),  # was ".: Is a directory"
    (["convert", "mk01", " "], "argument output: expected a file or folder path, got ' '"),  # a file named " "
    (["rollout", "mk01", "--seed", "abc"], "expected an integer, got 'abc'"),  # was "invalid _seed value: 'abc'"
    (["timeline", "mk01", "--out", "t.png", "--bins", "x"], "expected an integer, got 'x'"),
    # a NumPy MemoryError traceback, status 1 (an invalid schedule's); 10,000 bins took 45 s for 11 event types
    (["timeline", "mk01", "--out", "t.png", "--bins", str(10**12)], "at most 1000, got 1000000000000"),
])
def test_cli_blank_instances_and_non_integers_are_usage_errors(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err


def test_cli_timeline_recognises_a_schedule_by_its_format_field(small, tmp_path):
    sched = tmp_path / "sorted.json"
    sched.write_text(json.dumps(small.to_dict(), sort_keys=True, indent=1))  # "format" is far from the top
    assert main(["timeline", str(sched), "--out", str(tmp_path / "t.png")]) == 0


def test_cli_info_counts_the_events_and_spans_the_releases(tmp_path, capsys, monkeypatch):
    every, quiet = tmp_path / "every.json", tmp_path / "quiet.json"
    every_event_instance().to_json(every)
    Instance.build("quiet", [Machine("M0")], [Job("a", [{0: 1.0}], release=2.5),
                                              Job("b", [{0: 1.0}], release=4.0)]).to_json(quiet)
    monkeypatch.setattr(warnings, "formatwarning", lambda *args: "")  # a format no earlier main left
    formatwarning = warnings.formatwarning
    assert main(["info", str(every)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "releases: 0 .. 5", "events: BREAKDOWN 1, CANCELLATION 1, DUE_DATE_CHANGE 1, MAINTENANCE 1, PRIORITY_CHANGE 1, "
                            "PTIME_CHANGE 1, REPAIR 1, REWORK 1, ROUTE_CHANGE 1"]
    assert main(["info", str(quiet)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["releases: 2.5 .. 4", "events: none"]
    assert warnings.formatwarning is formatwarning  # main's own warning format ends with it


def test_cli_rollout_defaults_to_spt_and_seeds_the_random_rule_with_0(tmp_path, capsys, monkeypatch):
    """The metrics, then where the schedule went; a schedule the validator refuses is exit status 1."""
    inst = load_instance(data.path("mk01"))
    out = tmp_path / "s.json"
    assert main(["rollout", "mk01", "--out", str(out)]) == 0
    metrics = rollout(inst, "SPT").metrics
    assert load_schedule(out).metrics == metrics
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{'makespan':>26}: {metrics['makespan']:g}" and lines[-1] == f"schedule written to {out}"
    assert main(["rollout", "mk01", "--rule", "RANDOM", "--out", str(out)]) == 0
    seeded = [rollout(inst, "RANDOM", seed=seed).metrics for seed in (0, 1)]
    assert seeded[0] != seeded[1] and load_schedule(out).metrics == seeded[0]
    with pytest.raises(SystemExit):  # a seed of 0 is a seed given too
        main(["rollout", "mk01", "--seed", "0"])
    assert "only the RANDOM rule draws from it; SPT makes no random choice" in capsys.readouterr().err
    import dynasched_gym.validate

    monkeypatch.setattr(dynasched_gym.validate, "validate_schedule", lambda schedule: SimpleNamespace(ok=False))
    capsys.readouterr()
    assert main(["rollout", "mk01"]) == 1
    assert "validator: namespace(ok=False)" in capsys.readouterr().out


def test_cli_validate_lists_20_violations_by_default_and_all_at_limit_0(tmp_path, capsys):
    sched = tmp_path / "s.json"
    main(["rollout", "mk01", "--out", str(sched)])
    content = json.loads(sched.read_text())
    for segment in content["segments"]:
        segment["start"] -= 1000.0  # each now starts before its job's release
    sched.write_text(json.dumps(content))
    capsys.readouterr()
    assert main(["validate", str(sched)]) == 1
    out = capsys.readouterr().out.splitlines()
    total = int(re.match(r"invalid schedule: (\d+) violation", out[0])[1])
    assert total > 20 and sum(line.startswith("  [") for line in out) == 20
    assert out[-1] == f"  ... and {total - 20} more"
    assert main(["validate", str(sched), "--limit", "0"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("  [") for line in out) == total and "more" not in out[-1]


@pytest.fixture
def compared(monkeypatch):
    """compare's rollouts and validator stood in for: the (instance, rule) pairs played, in order; the makespan is
    100000/3 under SPT and 7 otherwise, and mk02's schedule under MWKR:EET fails validation."""
    import dynasched_gym.core
    import dynasched_gym.validate

    played = []

    def fake_rollout(inst, rule="SPT", seed=0):
        played.append((inst.name, rule))
        return SimpleNamespace(metrics={"makespan": 100000 / 3 if rule == "SPT" else 7.0}, played=played[-1])

    monkeypatch.setattr(dynasched_gym.core, "rollout", fake_rollout)
    monkeypatch.setattr(dynasched_gym.validate, "validate_schedule",
                        lambda schedule: SimpleNamespace(ok=schedule.played != ("mk02", "MWKR:EET")))
    return played


def test_cli_compare_marks_failed_schedules_and_fits_each_column(compared, capsys):
    assert main(["compare", "mk01", "mk02", "--rules", "SPT,MWKR:EET"]) == 1
    assert capsys.readouterr().out.splitlines()[-4:] == [
        "makespan by rule (! = schedule failed validation)",
        "instance      SPT  MWKR:EET",
        "    mk01  33333.3         7",
        "    mk02  33333.3        7!"]
    assert main(["compare", "mk01", "--rules", "MWKR:EET"]) == 0  # every schedule valid


def test_cli_compare_plays_six_rules_on_every_embedded_instance_by_default(compared, capsys):
    assert main(["compare"]) == 1  # mk02 under MWKR:EET
    rules = ["SPT:EET", "FIFO:EET", "MWKR:EET", "MOPNR:EET", "EDD:EET", "ATC:EET"]
    assert [rule for _, rule in compared] == rules * len(data.EMBEDDED)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-len(data.EMBEDDED) - 1].split() == ["instance", *rules]
    assert [line.split()[0] for line in lines[-len(data.EMBEDDED):]] == list(data.EMBEDDED)


def test_cli_convert_writes_indented_native_json(tmp_path, capsys):
    out = tmp_path / "mk01.json"
    assert main(["convert", "mk01", str(out)]) == 0
    assert out.read_text() == load_instance(data.path("mk01")).to_json(indent=1)
    assert capsys.readouterr().out == f"mk01: written to {out} (native)\n"


def test_cli_draws_with_the_options_given_and_reads_an_instance_in_any_format(small, tmp_path, monkeypatch):
    """gantt's --by and timeline's --bins reach the drawing; timeline takes a schedule by its format field, and an
    instance in native JSON (whose format field is the instance's) or in a text format (not JSON) from its path."""
    import dynasched_gym.viz

    drawn = []
    monkeypatch.setattr(dynasched_gym.viz, "save_gantt", lambda schedule, out, by: drawn.append((schedule, by)))
    monkeypatch.setattr(dynasched_gym.viz, "save_timeline", lambda source, out, bins: drawn.append((source, bins)))
    sched, native = tmp_path / "s.json", tmp_path / "i.json"
    small.to_json(sched)
    small.instance.to_json(native)
    for args in (["gantt", str(sched)], ["gantt", str(sched), "--by", "job"], ["timeline", str(sched)],
                 ["timeline", str(native), "--bins", "7"], ["timeline", str(data.path("mk01")), "--bins", "1"]):
        assert main([*args, "--out", str(tmp_path / "x.png")]) == 0
    assert [(type(source).__name__, option) for source, option in drawn] == [
        ("Schedule", "machine"), ("Schedule", "job"), ("Schedule", 60), ("Instance", 7), ("Instance", 1)]
    assert drawn[3][0] == small.instance and drawn[4][0].name == "mk01"


def test_cli_option_bounds_are_inclusive(tmp_path, capsys):
    from dynasched_gym.cli import build_parser

    parser, out = build_parser(), str(tmp_path / "t.png")
    assert parser.parse_args(["timeline", "mk01", "--out", out, "--bins", "1000"]).bins == 1000
    assert parser.parse_args(["validate", __file__, "--limit", "0"]).limit == 0
    for seed in (0, 2**32 - 1):
        assert parser.parse_args(["rollout", "mk01", "--rule", "RANDOM", "--seed", str(seed)]).seed == seed
    with pytest.raises(SystemExit):
        parser.parse_args(["rollout", "mk01", "--rule", "RANDOM", "--seed", str(2**32)])
    assert "must be in [0, 2**32), got 4294967296" in capsys.readouterr().err


def test_a_job_cancelled_before_its_release_never_arrives_in_the_gantt_and_the_timeline():
    """The Gantt chart drew an arrival mark at the release of a job cancelled before it (which never arrives), and
    stretched its time axis to that release; the timeline counted the arrival when the release fell inside the
    episode. The job's cancellation is still shown."""
    inst = Instance.build("never", [Machine("M")], [Job("a", [{0: 2.0}]), Job("b", [{0: 3.0}], release=1.5),
                                                     Job("c", [{0: 3.0}], release=20.0)],
                          [Event(1.0, E.CANCELLATION, job=1), Event(1.0, E.CANCELLATION, job=2)])
    schedule = rollout(inst, "SPT")
    assert np.isnan(schedule.job_arrival[1:]).all() and schedule.job_arrival[0] == 0.0
    assert event_times(schedule)["ARRIVAL"].tolist() == [0.0]
    for by in ("machine", "job"):
        ax = gantt_figure(schedule, by=by).axes[0]
        assert ax.get_xlim()[1] == pytest.approx(1.01 * 2.0)
        marks = {line.get_marker(): line.get_xdata().tolist() for line in ax.get_lines()}
        assert marks["^" if by == "machine" else ">"] == [0.0] and marks["x"] == [1.0, 1.0]
    page = gantt_html(schedule)
    assert "a arrives" in page and "b arrives" not in page and "b cancelled" in page


def test_pictures_name_an_argument_of_the_wrong_kind(tmp_path: Path) -> None:
    """gantt_figure(instance), gantt_html, metric_curves, curves_figure and the save_* of them failed with
    "AttributeError: 'Instance' object has no attribute 'instance'"; event_times(path) with another AttributeError;
    validate_schedule(instance) reported "unreadable instance: instance: expected a JSON object (got None)"."""
    inst = every_event_instance()
    for draw in (gantt_figure, gantt_html, metric_curves, curves_figure, lambda s: save_gantt(s, tmp_path / "g.html"),
                 lambda s: save_curves(s, tmp_path / "c.png")):
        with pytest.raises(TypeError, match=r"^schedule must be a Schedule \(an instance's comes from "
                                            r"dynasched_gym.rollout\(instance\).*got Instance: Instance\(name="):
            draw(inst)
    assert not list(tmp_path.iterdir())
    for draw in (event_times, timeline_figure):
        with pytest.raises(TypeError, match=r"^source must be an Instance or a Schedule, got str: 'mk01'$"):
            draw("mk01")
    report = validate_schedule(inst)
    assert not report.ok and "an Instance, not a schedule" in str(report)


def test_the_timeline_of_a_schedule_taken_before_anything_happened_is_empty(tmp_path):
    """A schedule taken right after reset records nothing (its clock is 0) while the first release is later: its
    timeline has no event, and drawing it failed with "TypeError: 'float' object is not iterable" (the CLI printed
    a traceback and exit status 1). It is an empty chart."""
    from dynasched_gym import Simulator

    sim = Simulator(Instance.build("later", [Machine("M0")], [Job("a", [{0: 1.0}], release=2.0)]))
    sim.reset()
    schedule = sim.schedule()
    assert schedule.clock == 0.0 and event_times(schedule) == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # equal y limits and a legend of no entry would warn
        fig = timeline_figure(schedule)
        figure_rgb(fig)
    assert fig.axes[1].get_xlim() == (-0.01, 1.01) and fig.axes[0].get_legend() is None
    path = tmp_path / "s.json"
    schedule.to_json(path)
    assert main(["timeline", str(path), "--out", str(tmp_path / "t.png")]) == 0


def test_the_machine_view_time_axis_ends_with_what_it_draws():
    """The machine view draws no due dates, but its time axis ran on to the latest one: on a generated instance with
    every event type under MWKR (small-seed3) it ended at 215 though nothing happened after 170, a fifth of the
    chart empty; in the HTML too. The job view, which draws them, still reaches them."""
    inst = Instance.build("due", [Machine("M0")], [Job("a", [{0: 4.0}], due=100.0)])
    schedule = rollout(inst, "SPT")
    assert gantt_figure(schedule).axes[0].get_xlim() == (0.0, 1.01 * 4.0)
    assert gantt_figure(schedule, by="job").axes[0].get_xlim() == (0.0, 1.01 * 100.0)
    assert f'viewBox="0 0 {1.01 * 4.0:.10g} ' in gantt_html(schedule)
    assert f'viewBox="0 0 {1.01 * 100.0:.10g} ' in gantt_html(schedule, by="job")


def test_the_curves_final_values_are_drawn():
    """Every curve's last step drew zero-long at the end of the time axis, where the episode ends, on the axes' edge:
    the final drop was hidden under the frame, so the curves of a finished episode (small-seed3 under MWKR) ended
    reading one job in the system and one busy machine where the metrics have none. The time axis now runs on a
    little past the end, and each curve's final value is drawn there."""
    curves = metric_curves(hand_schedule())
    fig = curves_figure(hand_schedule())
    lines = {line.get_label(): line for ax in fig.axes for line in ax.get_lines()}
    assert set(lines) == set(curves)
    end = fig.axes[-1].get_xlim()[1]
    assert end > 7.0  # the last change: M0's maintenance ends
    for name, (t, v) in curves.items():
        x, y = lines[name].get_xdata(), lines[name].get_ydata()
        assert x[-1] == end and x[-2] == t[-1] < end and y[-1] == y[-2] == v[-1], name


def test_the_timeline_histogram_is_one_stacked_patch_per_event_type(small):
    """The histogram drew a rectangle per bin and type, empty ones too: at the most bins (1000) the timeline of
    small-seed3 (24 jobs) took 14 s to write and its SVG held 2 MB of rectangles. Each type is one stepped patch from
    the top of the types below it, whatever the bins."""
    events = event_times(small)
    hist = timeline_figure(small, bins=1000).axes[0]
    assert len(hist.patches) == len(events)
    edges = np.linspace(0.0, max(v[-1] for v in events.values()), 1001)
    below = np.zeros(1000)
    for patch, (name, times) in zip(hist.patches, events.items()):
        values, patch_edges, baseline = patch.get_data()
        assert np.array_equal(patch_edges, edges) and np.array_equal(baseline, below), name
        below = below + np.histogram(times, edges)[0]
        assert np.array_equal(values, below) and patch.get_label() == f"{name} ({len(times)})", name


def test_the_timeline_rug_draws_no_tick_on_the_frame(small):
    """The time axis ran from 0 to the last event exactly, so the rug's first and last ticks (releases at 0, the
    completion that ends the episode) sat on the axes' frame, drawn over by it. The axis now has a margin each side."""
    rug = timeline_figure(small).axes[1]
    low, high = rug.get_xlim()
    ticks = np.concatenate([line.get_xdata() for line in rug.get_lines()])
    assert ticks.min() == 0.0 and ticks.max() == small.clock
    assert low < ticks.min() and ticks.max() < high


def test_a_due_date_before_0_is_drawn_on_the_time_axis():
    """A due date before 0 (a job overdue when the episode starts; DESIGN section 3 allows it) lay left of the time
    axis, which started at 0: in the figure its late tick was drawn out of sight, and constrained layout squeezed the
    axes into the right four fifths of the figure to make room for it; in the HTML it lay outside the SVG's view. The
    axis now starts a little before it, in the job view, the one that draws due dates."""
    inst = Instance.build("overdue", [Machine("M0")], [Job("a", [{0: 3.0}], due=-5.0), Job("b", [{0: 2.0}], due=2.0)])
    schedule = rollout(inst, "SPT")
    fig = gantt_figure(schedule, by="job")
    figure_rgb(fig)
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    assert low < -5.0 < 0.0 and high == 1.01 * 5.0 and ax.get_position().x0 < 0.1
    view = re.search(r'id="plot" [^>]*viewBox="([^"]+)"', gantt_html(schedule, by="job"))[1]
    x0, _, width, _ = map(float, view.split())
    assert x0 < -5.0 and x0 + width == pytest.approx(1.01 * 5.0)
    assert gantt_figure(schedule).axes[0].get_xlim()[0] == 0.0  # no due date drawn by machine
    assert 'viewBox="0 0 ' in gantt_html(schedule)


def test_an_html_tooltip_never_rounds_a_sliver_of_work_to_0_or_100_percent():
    """A breakdown 1 time unit into a 1000-unit operation left a segment with 0.1 % of the op's work, and its tooltip
    read "0% of the op's work" (the resumed rest, 99.9 %, read "100%")."""
    jobs = [Job("a", [{0: 1000.0}], release=0.0)]
    inst = Instance.build("sliver", [Machine("M0")], jobs, [Event(1.0, E.BREAKDOWN, machine=0, duration=3.0)])
    schedule = rollout(inst, "SPT")
    assert sorted(schedule.segment_work.tolist()) == pytest.approx([0.001, 0.999])
    page = gantt_html(schedule)
    assert "&lt;1% of the op&#x27;s work" in page and "&gt;99% of the op&#x27;s work" in page
    assert "0% of the op" not in page.replace("&lt;1%", "") and "100% of the op" not in page


def test_a_cancelled_job_is_not_drawn_late():
    """A cancelled job never completes, and its due date passed in the episode does not make it tardy (the metrics
    leave it out): its due tick is black in the figure and the page."""
    hand = hand_schedule()
    schedule = dataclasses.replace(hand, job_due=np.array([np.nan, 5.0, 2.5]))  # c: due 2.5, cancelled at 3
    lines = gantt_figure(schedule, by="job").axes[0].get_lines()
    assert [line.get_xdata().tolist() for line in lines if line.get_marker() == "|"] == [[2.5], [5.0]]
    assert [line.get_color() for line in lines if line.get_marker() == "|"] == ["black", "tab:red"]
    page = gantt_html(schedule, by="job")
    assert "c due at 2.5" in page and "b due (late) at 6" not in page and "b due (late) at 5" in page


def test_a_figure_is_at_most_24_inches_high():
    inst = Instance.build("tall", [Machine("M0")], [Job(f"j{j}", [{0: 1.0}]) for j in range(200)])
    assert gantt_size(inst, "job") == (10.0, 24.0) and gantt_size(inst, "machine") == (10.0, 1.6 + 0.35)


def test_a_suffix_in_capitals_picks_the_same_file_type(small, tmp_path):
    assert save_gantt(small, tmp_path / "G.HTML").read_text() == gantt_html(small)
    assert save_curves(small, tmp_path / "C.PNG").read_bytes().startswith(b"\x89PNG")
    assert save_timeline(small, tmp_path / "T.Svg").read_text().startswith("<?xml")


def test_html_rows_labels_and_stripes():
    """Names are escaped text; the label column is at most 200 px wide; every other row is striped; the job view has
    no marker strips above and below its rows (12 px each)."""
    names = ["<b>&", "x" * 60, "c"]
    schedule = rollout(Instance.build("names", [Machine("M0")], [Job(n, [{0: 1.0}]) for n in names]), "SPT")
    page = gantt_html(schedule, by="job")
    assert ">&lt;b&gt;&amp;</text>" in page and "<b>&" not in page
    assert '<svg class="labels" width="200" height="36">' in page
    assert page.count('<rect class="stripe"') == 1 and '<rect class="stripe" x="0" y="12.0" ' in page
    machine_page = gantt_html(schedule)
    assert '<svg class="labels" width="24" height="60">' in machine_page  # 20 px strips above and below M0's row


@pytest.mark.parametrize("draw", [gantt_figure, curves_figure, timeline_figure])
def test_a_figure_drawn_again_is_cleared_first(small, draw):
    """The environments' viewer draws every frame on one figure: a frame drawn over the last one added its axes."""
    fig = draw(small)
    axes = len(fig.axes)
    assert draw(small, fig=fig) is fig and len(fig.axes) == axes


def test_figure_pixels_are_rgb_and_the_palette_cycles():
    from matplotlib.figure import Figure

    from dynasched_gym.viz._mpl import PALETTE, palette

    pixels = figure_rgb(Figure(figsize=(1, 1), dpi=10, facecolor=(1.0, 0.0, 0.5)))
    assert pixels.shape == (10, 10, 3) and pixels[5, 5].tolist() == [255, 0, 128]
    assert palette(18).tolist() == [*PALETTE, *PALETTE[:2]]


def test_a_matplotlib_import_error_with_no_mplbackend_is_its_own(monkeypatch):
    """Only an MPLBACKEND that is set can be the reason matplotlib's import fails with a ValueError."""
    from dynasched_gym.viz import _mpl

    def broken(module: str):
        raise ValueError(f"{module} is broken")

    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setattr(_mpl, "importlib", SimpleNamespace(import_module=broken))
    with pytest.raises(ValueError, match=r"^matplotlib.figure is broken$") as err:
        _mpl.import_matplotlib("matplotlib.figure")
    assert type(err.value) is ValueError


def test_a_schedules_timeline_keeps_an_event_of_its_last_instant_up_to_rounding():
    """A maintenance 5e-10 after the last completion applies at that instant (the simulator's EPS): it is in the
    timeline."""
    inst = Instance.build("instant", [Machine("M0")], [Job("a", [{0: 2.0}])],
                          [Event(2.0 + 5e-10, E.MAINTENANCE, machine=0, duration=1.0)])
    schedule = rollout(inst, "SPT")
    assert schedule.clock == 2.0 and schedule.downtime_start.tolist() == [2.0]
    assert event_times(schedule)["MAINTENANCE"].tolist() == [2.0 + 5e-10]
