"""A clean-room reference simulator of DESIGN section 3 and docs/semantics.md, in plain Python.

It shares no code with :mod:`dynasched_gym.core` (it reads only the public :class:`Instance`), so that
``tests/test_spec_differential.py`` can compare the two decision by decision. Slow and simple on purpose:
every rule of docs/semantics.md is spelled out once, in the order the page gives, with its ``EPS`` and its
instants (one clock for the whole shop, which starts at 0). Choices are (job, op, machine) triples, not slots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dynasched_gym.instance import EventType, Instance

EPS = 1e-9
JOB_EVENTS = (EventType.PTIME_CHANGE, EventType.ROUTE_CHANGE, EventType.PRIORITY_CHANGE,
              EventType.DUE_DATE_CHANGE, EventType.CANCELLATION, EventType.REWORK)


@dataclass
class Slot:
    times: dict[int, float]  # machine -> time in force
    touched: bool = False


@dataclass
class JobState:
    slots: list[Slot]
    release: float
    due: float  # NaN: none
    weight: float
    pos: int = 0  # current slot; == len(slots) once completed
    work: float = 1.0  # work left of the current slot
    visible: bool = False
    running: bool = False
    completion: float = math.nan
    cancelled_at: float = math.nan

    @property
    def open(self) -> bool:
        return math.isnan(self.completion) and math.isnan(self.cancelled_at)

    def first_untouched(self) -> int:
        return self.pos + 1 if self.pos < len(self.slots) and self.slots[self.pos].touched else self.pos


@dataclass
class MachineState:
    run: tuple[int, int, float, float, float] | None = None  # job, op, start, work at start, planned end
    down: str | None = None  # "breakdown" | "maintenance"
    down_end: float = 0.0
    record: dict | None = None  # the open downtime record
    queued: float = 0.0  # queued maintenance duration
    has_queue: bool = False


@dataclass
class ReferenceSimulator:
    inst: Instance
    now: float = 0.0
    segments: list[dict] = field(default_factory=list)
    downtime: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        inst = self.inst
        self.jobs = [JobState([Slot(dict(op)) for op in inst.job_ops(j)], float(inst.job_release[j]),
                              float(inst.job_due[j]), float(inst.job_weight[j])) for j in range(inst.num_jobs)]
        self.machines = [MachineState() for _ in range(inst.num_machines)]
        self.instants: list[list] = []  # stream events grouped into instants (docs/semantics.md, "Instants")
        for e in inst.events:  # sorted by time (the loaders check it)
            if self.instants and e.time <= self.instants[-1][0].time + EPS:
                self.instants[-1].append(e)
            else:
                self.instants.append([e])
        self.next_instant = 0
        self.instant(0.0)  # the clock starts at 0: releases within EPS of it arrive then
        self.advance()

    @property
    def done(self) -> bool:
        return not any(j.open for j in self.jobs)

    def candidates(self) -> dict[tuple[int, int, int], float]:
        """Startable (job, op, machine) -> remaining processing time."""
        out = {}
        for j, job in enumerate(self.jobs):
            if not (job.visible and job.open) or job.running:
                continue
            for m, t in job.slots[job.pos].times.items():
                mach = self.machines[m]
                if mach.run is None and mach.down is None and not mach.has_queue:
                    out[(j, job.pos, m)] = job.work * t
        return out

    def step(self, job: int, op: int, machine: int) -> None:
        js, mach = self.jobs[job], self.machines[machine]
        assert (job, op, machine) in self.candidates(), (job, op, machine, self.now)
        js.running, js.slots[op].touched = True, True
        mach.run = (job, op, self.now, js.work, self.now + js.work * js.slots[op].times[machine])
        self.advance()

    # -- time ---------------------------------------------------------------------------------------
    def advance(self) -> None:
        while not self.done and not self.candidates():
            times = [m.run[4] for m in self.machines if m.run] + [m.down_end for m in self.machines if m.down]
            # every release is a happening, also of a job cancelled before it (an instant, though nothing arrives),
            # unless the instant at now took it in (within EPS after now)
            times += [j.release for j in self.jobs if not j.visible and j.release > self.now + EPS]
            if self.next_instant < len(self.instants):
                times.append(self.instants[self.next_instant][0].time)
            self.now = max(self.now, min(times))
            self.instant(self.now)

    def instant(self, t: float) -> None:
        batch = []
        if self.next_instant < len(self.instants) and self.instants[self.next_instant][0].time <= t + EPS:
            batch = sorted(self.instants[self.next_instant], key=lambda e: int(e.type))  # stable: file order
            self.next_instant += 1
        repairs = {e.machine for e in batch if e.type == EventType.REPAIR}
        for m, mach in enumerate(self.machines):  # 1. REPAIR
            if m in repairs and mach.down == "breakdown":
                mach.down_end = t
            if mach.down and mach.down_end <= t + EPS:
                mach.record["end"], mach.down = mach.down_end, None
                self.start_queued(m, mach.down_end)
        for m, mach in enumerate(self.machines):  # 2. COMPLETION
            if mach.run and mach.run[4] <= t + EPS:
                j, _, _, work, end = mach.run
                self.stop(m, end, "completed", work)
                js = self.jobs[j]
                js.pos, js.work = js.pos + 1, 1.0
                if js.pos == len(js.slots):
                    js.completion = end
        for js in self.jobs:  # 3. ARRIVAL
            if js.release <= t + EPS and math.isnan(js.cancelled_at):
                js.visible = True
        for e in batch:  # 4. stream events, by type, at the instant's time
            if e.type in JOB_EVENTS:
                if self.jobs[e.job].open:
                    self.job_event(e, t)
            elif e.type == EventType.MAINTENANCE:
                self.maintenance(e.machine, e.duration, t)
            elif e.type == EventType.BREAKDOWN:
                self.breakdown(e.machine, e.duration, t)

    # -- machines -----------------------------------------------------------------------------------
    def stop(self, m: int, t: float, status: str, work: float, idle: bool = True) -> None:
        """End the running segment of ``m`` at ``t``; ``idle``: the machine stays up (a queued maintenance starts)."""
        mach = self.machines[m]
        j, op, start, _, _ = mach.run
        self.segments.append({"job": j, "op": op, "machine": m, "start": start, "end": t, "work": work,
                              "status": status})
        self.jobs[j].running, mach.run = False, None
        if idle:
            self.start_queued(m, t)

    def open_down(self, m: int, kind: str, start: float, end: float) -> None:
        mach = self.machines[m]
        mach.down, mach.down_end = kind, end
        mach.record = {"machine": m, "start": start, "end": end, "kind": kind}
        self.downtime.append(mach.record)

    def start_queued(self, m: int, t: float) -> None:
        mach = self.machines[m]
        if mach.has_queue and mach.run is None and mach.down is None:
            self.open_down(m, "maintenance", t, t + mach.queued)
            mach.queued, mach.has_queue = 0.0, False

    def maintenance(self, m: int, duration: float, t: float) -> None:
        mach = self.machines[m]
        if mach.down == "maintenance":
            mach.down_end += duration
            mach.record["end"] = mach.down_end
        else:
            mach.queued, mach.has_queue = mach.queued + duration, True
            self.start_queued(m, t)

    def breakdown(self, m: int, duration: float, t: float) -> None:
        mach = self.machines[m]
        if mach.run:
            j, op, start, work, _ = mach.run
            js = self.jobs[j]
            done = (t - start) / js.slots[op].times[m]
            js.work = work - done if self.inst.breakdown_policy == "resume" else 1.0
            self.stop(m, t, "preempted", done, idle=False)  # down at once: a queued maintenance waits
        if mach.down == "breakdown":
            mach.down_end = max(mach.down_end, t + duration)
            mach.record["end"] = mach.down_end
        elif mach.down == "maintenance":
            end, mach.record["end"] = mach.down_end, max(t, mach.record["start"])
            self.open_down(m, "breakdown", t, max(end, t + duration))
        else:
            self.open_down(m, "breakdown", t, t + duration)

    # -- jobs ---------------------------------------------------------------------------------------
    def job_event(self, e, t: float) -> None:
        js = self.jobs[e.job]
        if e.type == EventType.PTIME_CHANGE:
            if e.op < len(js.slots) and not js.slots[e.op].touched:
                slot = js.slots[e.op]
                speed = self.inst.machine_speed
                slot.times = {m: (x * e.factor if e.factor is not None else e.value / float(speed[m]))
                              for m, x in slot.times.items()}
        elif e.type == EventType.ROUTE_CHANGE:
            start = max(e.op or 0, js.first_untouched())
            js.slots = js.slots[:start] + [Slot(dict(op)) for op in e.ops]
        elif e.type == EventType.PRIORITY_CHANGE:
            js.weight = e.weight
        elif e.type == EventType.DUE_DATE_CHANGE:
            js.due = e.due
        elif e.type == EventType.CANCELLATION:
            js.cancelled_at = t
            for m, mach in enumerate(self.machines):
                if mach.run and mach.run[0] == e.job:
                    self.stop(m, t, "aborted", (t - mach.run[2]) / js.slots[mach.run[1]].times[m])
        elif e.type == EventType.REWORK and e.op < js.pos:
            js.slots.insert(js.first_untouched(), Slot(dict(js.slots[e.op].times)))

    # -- records ------------------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """DESIGN section 6, over non-cancelled jobs."""
        done = [j for j in self.jobs if math.isnan(j.cancelled_at)]
        makespan = max((j.completion for j in done), default=0.0)
        due = [j for j in done if not math.isnan(j.due)]
        tard = [max(0.0, j.completion - j.due) for j in due]
        busy = sum(min(s["end"], makespan) - min(s["start"], makespan) for s in self.segments)
        down = sum(min(d["end"], makespan) - min(d["start"], makespan) for d in self.downtime)
        cap = len(self.machines) * makespan - down
        return {
            "makespan": makespan,
            "total_tardiness": sum(tard),
            "mean_tardiness": sum(tard) / len(tard) if tard else 0.0,
            "total_weighted_tardiness": sum(j.weight * x for j, x in zip(due, tard)),
            "num_tardy_jobs": float(sum(j.completion - j.due > EPS for j in due)),
            "mean_flow_time": sum(j.completion - j.release for j in done) / len(done) if done else 0.0,
            "num_cancelled_jobs": float(len(self.jobs) - len(done)),
            "utilization": busy / cap if cap > 0 else 0.0,
        }
