"""What an LLM dispatcher is shown: observability levels, candidate pruning, prompt text and ablation variants.

**Levels** (each adds to the one before; the reference package's ``L1_MYOPIC``, ``L2_STATISTICAL``,
``L3_STRUCTURAL`` and a clairvoyant ablation):

- ``L1`` myopic. Table: id, job, op (k/n), machine, time (on this machine), best (on its fastest
  eligible machine). Shop: critical status (machines down now, emergency jobs among the candidates).
- ``L2`` concise / statistical. Table: + weight, due, slack = due - now - remaining work, work
  (remaining), prog (ops done / total), wait (since startable), queue (work waiting for this
  machine). Shop: + realised statistics (jobs released / open / waiting / past due / completed /
  cancelled, machine states, realised event counts, the objective so far).
- ``L3`` full structural. Table: + bneck (machine bottleneck score), util (machine utilisation so
  far), next (work queued at the machines of the job's next operation). Shop: + machine table,
  system utilisation, the scenario's **design priors**.
- ``oracle`` (ablation only). As L3, + the future: the next stream events, hidden arrivals and the
  planned ends of downtimes.

Every figure is computed from the simulator's present state. ``queue``, ``bneck`` and ``util`` are
the environment's own machine statistics (``queue_work``, ``bottleneck``, ``utilization`` of
``docs/environments.md``, the same numba kernel), so unlike the reference package (whose queues
are never filled) they are real. "next" is the mean ``queue`` over the eligible machines of the
job's next operation (``-`` for a last operation). Only :func:`observe` with ``oracle=True``
reads events that have not happened or jobs not yet released; no other level ever does.

**Design priors** (L3): what the instance's designer fixed before generating it, never its
realised stream: for an instance drawn from a tier pool (or an env's explicit instance of a stated
``tier=``), the tier, its prior ranges of the calibration targets (``conf/tier/<tier>.yaml``), the size
preset's event rates and arrival pattern (``conf/size/<size>.yaml``) and the tier's SSI band; for an
explicit instance of no stated tier none (or the ``priors`` mapping given to the agent). The
instance's own SSI score rates its event stream too, so only the ``oracle`` level adds it.

**Candidate pruning.** The env offers up to its ``max_candidates`` startable pairs. When more
than ``max_rows`` are offered, the table keeps ``max_rows`` of them: each rule of ``prune_rules``
ranks the offered pairs (the pair its rule agent plays: the pair it would dispatch, by its job and
machine rules, or if the env does not offer it the offered pair that agent plays instead; then its job
priority, the processing time on the machine, the slot), and the rankings take turns adding their
best pair not yet kept. So every rule's own choice is shown (the fallback rule's first), whatever
the table size. Rows are listed by id.

**Variants** (ablations that separate the priors from the prompt length; the reference's V3–V6):
``none``; ``padded`` (L2 padded with neutral domain text to the length of the L3 prompt for the same
state); ``priors`` (L2 plus only the design priors); ``priors_tagged`` (L3 with the priors inside
``<global_priors>`` tags and a note that they may be ignored).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dynasched_gym.agents.rules import offered_slot
from dynasched_gym.checks import is_finite_real, is_real
from dynasched_gym.core.compiled import (
    C_EVENT,
    C_RELEASE,
    DOWN_BREAKDOWN,
    DOWN_NONE,
    EPS,
    JOB_ACTIVE,
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_HIDDEN,
)
from dynasched_gym.core.kernels import slot_time
from dynasched_gym.core.rules import EMERGENCY_WEIGHT, JOB_RULES, job_priority, select
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.envs.dfjsp.features import FULL
from dynasched_gym.envs.dfjsp.kernels import machine_stats, potential
from dynasched_gym.envs.dfjsp.types import (
    MS_BOTTLENECK,
    MS_QUEUE,
    MS_UTILIZATION,
    NUM_CONFIG,
    NUM_COUNTERS,
    NUM_MACHINE_STATS,
    NUM_SCALARS,
    Workspace,
)
from dynasched_gym.instance import Event, EventType, Instance
from dynasched_gym.metrics import OBJECTIVES

LEVELS = ("L1", "L2", "L3", "oracle")
VARIANTS = ("none", "padded", "priors", "priors_tagged")
#: The level each variant is defined at.
VARIANT_LEVEL = {"padded": "L2", "priors": "L2", "priors_tagged": "L3"}
MODES = ("direct", "cot", "tools")
#: Version of what the prompts show, part of :meth:`LLMAgent.config` so that stored episodes played with other
#: prompts are never reused; bump it with every change of a prompt's content (2: L3 shows the priors of an
#: explicit instance's stated tier; 3: a given priors mapping's tier is shown also without an SSI; 4: the oracle says
#: when its future events are cut to the first N of M or not shown, ``future_events=0``, where it said "none"; 5: the
#: oracle's system prompt says how many future events it shows, where it said they are shown also at 0; 6: the oracle's
#: inspect_action cuts its future events as the prompt does, where it listed them all also at 0, and its
#: simulate_action is described as playing the real future, where it said future events are not known to it; a
#: hidden job cancelled before its release is listed without an arrival; the goal says cancelled jobs do not count;
#: 7: a rule whose pair is not offered ranks first the slot its agent plays, so a pruned table keeps it).
PROMPT_VERSION = 7

_MWKR = JOB_RULES.index("MWKR")
_OBJECTIVE_TEXT = {
    "makespan": "the makespan (the completion time of the last job)",
    "tardiness": "the total tardiness, the sum over jobs of max(0, completion - due date)",
    "weighted_tardiness": "the total weighted tardiness, the sum over jobs of weight x max(0, completion - due date)",
    "flow_time": "the mean flow time (completion - release) of the jobs",
}
#: Neutral domain text the ``padded`` variant repeats: no fact about the instance or its future.
FILLER = ("Background. A job shop is a set of machines grouped by capability; each job visits some of them in a "
          "fixed order. Dispatching decides which waiting operation a free machine takes next. Common dispatching "
          "heuristics rank waiting operations by processing time, remaining work, due date or arrival order; "
          "shops record machine states, queue contents and completed work for planning and reporting. ")


def agent_name(level: str, variant: str = "none") -> str:
    """The LLM agent's name (and evaluation label): ``llm:<level>``, or ``llm:<level>+<variant>`` for a variant."""
    return f"llm:{level}" + (f"+{variant}" if variant != "none" else "")


def fmt(x: float | None) -> str:
    """A compact number: at most 2 decimals, no trailing zeros; ``-`` for None / NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# ----------------------------------------------------------------------------------------- the state
class MachineStats:
    """The env's machine statistics (queued work, bottleneck score, utilisation) for any simulator state.

    Runs the environments' own kernel on a private workspace (module docstring), so the figures equal
    the ``queue_work`` (times tau), ``bottleneck`` and ``utilization`` features of a ``full`` env.
    """

    def __init__(self, num_jobs: int, num_machines: int) -> None:
        f, i = np.float64, np.int64
        self.work = Workspace(
            candidates=np.zeros((1, 1), np.float32), machines=np.zeros((1, 1), np.float32),
            global_=np.zeros(1, np.float32), action_mask=np.zeros(1, np.int8), slot_job=np.zeros(1, i),
            slot_machine=np.zeros(1, i), slot_time=np.zeros(1, f), slot_key=np.zeros(1, f), pair_job=np.zeros(1, i),
            pair_machine=np.zeros(1, i), pair_time=np.zeros(1, f), job_stat=np.zeros(num_jobs, f),
            machine_stat=np.zeros((NUM_MACHINE_STATS, num_machines), f), scalars=np.ones(NUM_SCALARS, f),
            counters=np.zeros(NUM_COUNTERS, i), config=np.zeros(NUM_CONFIG, i), rng=np.ones(1, np.uint64))

    def __call__(self, sim: Simulator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(queued work in time units, bottleneck score, utilisation so far), one entry per machine."""
        machine_stats(sim.static, sim.state, self.work, FULL, sim.now)
        stat = self.work.machine_stat
        return stat[MS_QUEUE].copy(), stat[MS_BOTTLENECK].copy(), stat[MS_UTILIZATION].copy()


@dataclass(frozen=True)
class Candidate:
    """One offered (operation, machine) pair as the prompt shows it (times in the instance's unit)."""

    action_id: int  # the env's action slot
    job: int
    machine: int
    op: int  # index of the operation in the job's current list
    num_ops: int
    time: float  # remaining processing time on this machine
    best_time: float  # remaining processing time on the fastest eligible machine
    weight: float
    due: float  # NaN: no due date
    remaining_work: float  # the job's remaining work (mean times over eligible machines)
    waiting: float
    next_load: float  # NaN for a last operation


@dataclass
class View:
    """What the simulator shows at one decision (``future`` only when observed with ``oracle=True``: the first
    ``future_limit`` of the ``future_total`` events and arrivals to come)."""

    now: float
    decision: int
    objective: str
    instance: Instance
    rows: list[Candidate]
    offered: int
    queue: np.ndarray
    bottleneck: np.ndarray
    utilization: np.ndarray
    machine_status: list[str]
    counts: dict[str, int]
    events_so_far: dict[str, int]
    objective_so_far: float
    future: list[str] = field(default_factory=list)
    future_limit: int = 0
    future_total: int = 0

    @property
    def ids(self) -> list[int]:
        """The action ids of the table."""
        return [r.action_id for r in self.rows]

    def row(self, action_id: int) -> Candidate:
        """The table row with ``action_id`` (KeyError when it is not shown)."""
        for r in self.rows:
            if r.action_id == action_id:
                return r
        raise KeyError(action_id)


def op_times(sim: Simulator, slot: int) -> dict[int, float]:
    """Full processing time of operation slot ``slot`` on each eligible machine (changes in force applied)."""
    static, state = sim.static, sim.state
    op = int(state.slot_op[slot])
    lo, hi = static.op_elig_ptr[op], static.op_elig_ptr[op + 1]
    return {int(m): float(slot_time(static.op_time, static.machine_speed, state.slot_op, state.slot_factor,
                                    state.slot_nominal, slot, m)) for m in static.elig_machine[lo:hi]}


def current_slot(sim: Simulator, job: int) -> int:
    """The slot of ``job``'s current operation."""
    return int(sim.static.job_slot_ptr[job] + sim.state.job_pos[job])


def prune(sim: Simulator, slots: Sequence[int], jobs: np.ndarray, machines: np.ndarray,
          times: Mapping[tuple[int, int], float], max_rows: int, rules: np.ndarray) -> list[int]:
    """The slots the table keeps: all of them, or ``max_rows`` taken in turns from each rule's ranking.

    ``rules``: (job rule, machine rule) codes. A rule's ranking starts with the slot its agent plays (the pair it
    would dispatch, :func:`~dynasched_gym.core.rules.select`, or when that pair is not offered the offered pair it
    ranks first: :func:`~dynasched_gym.agents.rules.offered_slot`), then its job priority, processing time and slot
    order.
    """
    if len(slots) <= max_rows:
        return list(slots)
    static, state = sim.static, sim.state
    rankings = []
    for job_rule, machine_rule in rules:
        played = offered_slot(sim, jobs, machines, *select(static, state, job_rule, machine_rule), job_rule)
        rankings.append(sorted(slots, key=lambda s, r=job_rule, p=played: (
            s != p, job_priority(static, state, int(jobs[s]), r), times[(int(jobs[s]), int(machines[s]))], s)))
    kept: dict[int, None] = {}
    position = [0] * len(rankings)
    while len(kept) < max_rows:
        for k, ranking in enumerate(rankings):
            while position[k] < len(ranking) and ranking[position[k]] in kept:
                position[k] += 1
            if position[k] < len(ranking) and len(kept) < max_rows:
                kept[ranking[position[k]]] = None
    return sorted(kept)


def _status(sim: Simulator, m: int, oracle: bool) -> str:
    state = sim.state
    if state.machine_down[m] != DOWN_NONE:
        kind = "breakdown" if state.machine_down[m] == DOWN_BREAKDOWN else "maintenance"
        since = state.downtime_start[state.machine_downtime[m]]
        until = f" until {fmt(float(state.machine_down_until[m]))}" if oracle else ""
        return f"down ({kind} since {fmt(float(since))}{until})"
    if state.machine_job[m] >= 0:
        queued = ", maintenance queued" if state.machine_maintenance[m] > 0 else ""
        return f"busy (job {sim.instance.job_names[state.machine_job[m]]} until {fmt(float(state.machine_end[m]))}" \
               f"{queued})"
    return "idle"


def describe_event(event: Event, instance: Instance) -> str:
    """One line for a stream event (oracle prompts only)."""
    parts = [f"t={fmt(event.time)} {event.type.name}"]
    if event.machine is not None:
        parts.append(f"machine {instance.machine_names[event.machine]}")
    if event.job is not None:
        parts.append(f"job {instance.job_names[event.job]}")
    for name in ("op", "duration", "factor", "value", "weight", "due"):
        value = getattr(event, name)
        if value is not None:
            parts.append(f"{name} {fmt(float(value))}")
    if event.ops is not None:
        parts.append(f"{len(event.ops)} new operation(s)")
    return " ".join(parts)


def pending_events(sim: Simulator) -> list[Event]:
    """The stream events not applied yet, in the simulator's order (oracle prompts and tools only)."""
    events = sorted(sim.instance.events, key=lambda e: (e.time, int(e.type)))  # compile_instance's order
    return events[int(sim.state.counters[C_EVENT]):]


def upcoming(sim: Simulator, limit: int, concerns: Callable[[int | None, int | None], bool] | None = None
             ) -> tuple[list[str], int]:
    """The next ``limit`` stream events and hidden arrivals, soonest first (the clairvoyant ablation), and how many
    there are in all; ``concerns(job, machine)``: only those it is true of (an arrival has no machine)."""
    instance, state = sim.instance, sim.state
    keep = concerns or (lambda job, machine: True)
    events = pending_events(sim)
    # (time, event or arriving job); only the shown ones are described: describing all of them made each oracle
    # prompt cost time linear in the instance's events and hidden jobs for a list cut to ``limit``
    items: list[tuple[float, Event | int]] = [(e.time, e) for e in events if keep(e.job, e.machine)]
    cancelled = np.full(instance.num_jobs, math.inf)  # a hidden job cancelled before its release never arrives; at
    for e in reversed(events):  # its release it arrives first; the first pending cancellation of a job counts
        if e.type == EventType.CANCELLATION:
            cancelled[e.job] = e.time
    hidden = np.flatnonzero(state.job_status == JOB_HIDDEN)
    hidden = hidden[instance.job_release[hidden] <= cancelled[hidden] + EPS]
    items += [(t, j) for t, j in zip(instance.job_release[hidden].tolist(), hidden.tolist()) if keep(j, None)]
    shown = heapq.nsmallest(limit, items, key=lambda x: x[0])  # sorted(items, key=...)[:limit], as stable
    lines = [describe_event(x, instance) if isinstance(x, Event) else _arrival(x, instance) for _, x in shown]
    return lines, len(items)


def _arrival(j: int, instance: Instance) -> str:
    """The line announcing hidden job ``j``'s arrival (oracle prompts only)."""
    release = float(instance.job_release[j])
    ops = int(instance.job_op_ptr[j + 1] - instance.job_op_ptr[j])
    return (f"t={fmt(release)} ARRIVAL job {instance.job_names[j]} ({ops} operation(s), due "
            f"{fmt(float(instance.job_due[j]))}, weight {fmt(float(instance.job_weight[j]))})")


def future_section(heading: str, future: Sequence[str], total: int, limit: int) -> list[str]:
    """The lines listing ``future``, the first ``limit`` of ``total`` events to come (:func:`upcoming`), under
    ``heading``: how the list is cut, or that none is shown at ``limit`` 0."""
    # "none" only where nothing is to come: an empty list cut to 0 or a list cut short would read as a calm future
    if not limit:
        return [f"{heading}: not shown (future_events=0)."]
    cut = f", the first {len(future)} of {total}" if len(future) < total else ""
    return [f"{heading}{cut}, soonest first:", *(future or ["none"])]


def observe(env: Any, stats: MachineStats, objective: str, max_rows: int, prune_rules: np.ndarray,
            oracle: bool = False, future_limit: int = 25) -> View:
    """The :class:`View` of ``env`` (an unwrapped ``DFJSPEnv``) now; the future only when ``oracle``.

    ``prune_rules``: (job rule, machine rule) codes (:func:`dynasched_gym.agents.lookahead.rule_codes`).
    """
    sim = env.simulator
    static, state = sim.static, sim.state
    now = sim.now
    jobs, machines = env.offered_pairs()
    slots = [int(s) for s in np.flatnonzero(jobs >= 0)]
    per_job = {}
    for j in set(jobs[slots].tolist()):
        slot = current_slot(sim, j)
        work = float(state.slot_work[slot])
        per_job[j] = {m: work * t for m, t in op_times(sim, slot).items()}
    times = {(j, m): t for j, row in per_job.items() for m, t in row.items()}
    queue, bottleneck, utilization = stats(sim)
    rows = []
    for s in prune(sim, slots, jobs, machines, times, max_rows, prune_rules):
        j, m = int(jobs[s]), int(machines[s])
        pos, num = int(state.job_pos[j]), int(state.job_num_slots[j])
        next_load = math.nan
        if pos + 1 < num:
            op = int(state.slot_op[static.job_slot_ptr[j] + pos + 1])
            next_load = float(queue[static.elig_machine[static.op_elig_ptr[op]:static.op_elig_ptr[op + 1]]].mean())
        rows.append(Candidate(s, j, m, pos, num, times[(j, m)], min(per_job[j].values()), float(state.job_weight[j]),
                              float(state.job_due[j]), -float(job_priority(static, state, j, _MWKR)),
                              now - float(state.job_ready[j]), next_load))
    status = state.job_status
    active = status == JOB_ACTIVE
    due = state.job_due
    counts = {
        "released": int(state.counters[C_RELEASE]), "open": int(active.sum()),
        "waiting": int((active & (state.job_machine < 0)).sum()),
        "tardy": int((active & (now > np.nan_to_num(due, nan=np.inf))).sum()),
        "completed": int((status == JOB_COMPLETED).sum()), "cancelled": int((status == JOB_CANCELLED).sum()),
    }
    # counted in NumPy: a Python pass over every event applied so far made each prompt slower as the episode went on
    applied = {EventType(t).name.lower(): int(c)
               for t, c in enumerate(np.bincount(static.event_type[:int(state.counters[C_EVENT])])) if c}
    status_text = [_status(sim, m, oracle) for m in range(sim.instance.num_machines)]
    future, total = upcoming(sim, future_limit) if oracle else ([], 0)
    return View(now, sim.decisions, objective, sim.instance, rows, len(slots), queue, bottleneck, utilization,
                status_text, counts, dict(sorted(applied.items())),
                float(potential(static, state, OBJECTIVES.index(objective))), future,
                future_limit if oracle else 0, total)


# ----------------------------------------------------------------------------------------- the priors
def design_priors(tier: str | None, size: str | None, ssi: float | None = None) -> dict[str, Any]:
    """The design priors of an episode's scenario (module docstring); ``tier`` None: an explicit instance;
    ``ssi``: the instance's own score (only for the ``oracle`` level: it rates the future events too)."""
    priors: dict[str, Any] = {}
    if ssi is not None:
        priors["ssi"] = round(float(ssi), 1)
    if tier is None or size is None:
        return priors
    from dynasched_gym.generation import TIER_BANDS, Scenario
    from dynasched_gym.generation.tiers import tier_prior

    preset = Scenario.preset(size)
    rates = {k: v for k, v in vars(preset.events).items() if isinstance(v, (int, float)) and v}
    low, high = TIER_BANDS[tier]
    priors.update(tier=tier, ssi_band=[low, min(high, 100.0)], size=size, target_ranges=tier_prior(tier, size),
                  arrivals={"pattern": preset.arrivals.pattern, "amplitude": preset.arrivals.amplitude},
                  event_rates=rates)
    return priors


def check_priors(priors: Any) -> dict[str, Any]:
    """``priors`` (the agent's setting) as a dict, checked to be what :func:`_priors_text` shows and a config hashes:
    text keys; ``ssi`` a number, ``ssi_band`` a pair of numbers; other entries text, a number, a list of them, or a
    mapping of names to text, numbers or lists of numbers (numbers finite). A TypeError or ValueError names the
    entry and its value: others failed in the first L3 prompt, or in the config's hash (NaN), naming nothing."""
    if not isinstance(priors, Mapping):
        raise TypeError(f"priors must be a mapping of prior names to values or None, got {priors!r}")

    def numbers(v: Any) -> bool:
        return isinstance(v, (list, tuple)) and all(map(is_finite_real, v))

    def flat(v: Any) -> bool:
        return isinstance(v, str) or is_finite_real(v)

    for name, value in priors.items():
        if not isinstance(name, str):
            raise TypeError(f"priors[{name!r}]: prior names must be text, got {name!r}")
        if name == "ssi":
            ok, want = is_finite_real(value), "a finite number"
        elif name == "ssi_band":
            ok, want = numbers(value) and len(value) == 2, "a pair of finite numbers"
        elif isinstance(value, Mapping):
            ok = all(isinstance(k, str) and (flat(v) or numbers(v)) for k, v in value.items())
            want = "a mapping of names to text, finite numbers or lists of finite numbers"
        else:
            ok = flat(value) or (isinstance(value, (list, tuple)) and all(map(flat, value)))
            want = "text, a finite number, a list of them or a mapping"
        if not ok:
            raise (ValueError if is_real(value) else TypeError)(f"priors[{name!r}] must be {want}, got {value!r}")
    return dict(priors)


def _priors_text(priors: Mapping[str, Any]) -> str:
    if not priors:
        return "Design priors: none known for this instance."
    lines = ["Design priors of the scenario generator (what it aimed for, not what will happen):"]
    shown = {"ssi", "ssi_band"}
    if "ssi" in priors or "ssi_band" in priors:
        score = (fmt(priors["ssi"]) if "ssi" in priors
                 else "-".join(fmt(x) for x in priors["ssi_band"]) + " (its tier's band)")
        lines.append(f"- Schedule Stress Index (0-100, higher = harder): {score}"
                     + (f", tier {priors['tier']}" if "tier" in priors else ""))
        shown.add("tier")  # on the SSI line; without one it has a line of its own
    for name, value in priors.items():
        if name in shown:
            continue
        if isinstance(value, Mapping):
            items = ", ".join(f"{k} {fmt(v) if isinstance(v, (int, float)) else '-'.join(fmt(x) for x in v)}"
                              if not isinstance(v, str) else f"{k} {v}" for k, v in value.items())
            lines.append(f"- {name}: {items}")
        else:
            lines.append(f"- {name}: {value}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- the text
_COLUMNS = {
    "L1": [("id", "the action_id to answer with"), ("job", "the job"), ("op", "its operation k of n"),
           ("machine", "the machine it would start on now"), ("time", "processing time on that machine"),
           ("best", "processing time on its fastest eligible machine")],
    "L2": [("weight", "job weight (emergency jobs: >= 10)"), ("due", "due date (- none)"),
           ("slack", "due - now - remaining work (negative: late even if started now)"),
           ("work", "remaining work of the job"), ("prog", "operations done / total"),
           ("wait", "time since the operation could start"), ("queue", "work waiting that may run on this machine")],
    "L3": [("bneck", "machine bottleneck score: its share of all remaining work x number of machines, 1 = average"),
           ("util", "machine utilisation so far"),
           ("next", "mean queue at the machines of the job's next operation (- last operation)")],
}


def _level_index(level: str) -> int:
    return min(LEVELS.index(level), 2)  # the oracle's table is L3's


def _columns(level: str) -> list[tuple[str, str]]:
    return [c for lv in ("L1", "L2", "L3")[: _level_index(level) + 1] for c in _COLUMNS[lv]]


def _cells(view: View, r: Candidate, level: str) -> list[str]:
    inst = view.instance
    cells = [str(r.action_id), inst.job_names[r.job], f"{r.op + 1}/{r.num_ops}", inst.machine_names[r.machine],
             fmt(r.time), fmt(r.best_time)]
    if _level_index(level) >= 1:
        cells += [fmt(r.weight), fmt(r.due), fmt(r.due - view.now - r.remaining_work), fmt(r.remaining_work),
                  f"{r.op}/{r.num_ops}", fmt(r.waiting), fmt(float(view.queue[r.machine]))]
    if _level_index(level) >= 2:
        cells += [fmt(float(view.bottleneck[r.machine])), fmt(float(view.utilization[r.machine])), fmt(r.next_load)]
    return cells


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, *rows])


_ANSWER = {
    "direct": 'Answer with one JSON object and nothing else: {"action_id": <an id from the table>}.',
    "cot": 'Reason briefly step by step, then answer with one JSON object and nothing else: '
           '{"reasoning": "<your reasoning>", "action_id": <an id from the table>}.',
    "tools": 'You may first call the tools: simulate_action estimates the final objective if an action starts now '
             'and a dispatching rule finishes the schedule; inspect_action shows a candidate in detail. Then answer '
             'with one JSON object and nothing else: {"action_id": <an id from the table>}.',
}


def system_prompt(level: str, mode: str, objective: str, priors: Mapping[str, Any] | None, tagged: bool = False,
                  future_limit: int = 0) -> str:
    """The system message: the task, the table's columns at ``level``, the answer format (and ``priors`` if given);
    ``future_limit``: the future events the ``oracle`` level lists (:attr:`View.future_limit`)."""
    if level != "oracle":
        future = " Nothing tells you the future."
    elif future_limit:
        future = (f" You are also shown the future events to come, at most the first {future_limit}, soonest first: a "
                  "clairvoyant view used only as an ablation.")
    else:  # "shown" would have the model read the missing list as a calm future (the user prompt says so too)
        future = " The future events of this clairvoyant ablation are not shown (future_events=0)."
    lines = ["You dispatch a dynamic flexible job shop. Jobs arrive over time; each is a chain of operations, and an "
             "operation may run on several machines with machine-dependent times. At each decision some operations "
             "can start now on idle machines: you choose one (operation, machine) pair, it starts at once, and you "
             "are asked again for the next decision. Machines break down, and jobs are cancelled, re-prioritised or "
             "re-timed without notice." + future,
             f"Goal: minimise {_OBJECTIVE_TEXT[objective]} over the whole run; cancelled jobs do not count.", "",
             "Candidate table columns:"]
    lines += [f"- {name}: {meaning}" for name, meaning in _columns(level)]
    if priors is not None:
        text = _priors_text(priors)
        if tagged:
            text = (f"<global_priors>\n{text}\n</global_priors>\nThe global priors describe the generator of such "
                    "scenarios, not necessarily this one: you may ignore them.")
        lines += ["", text]
    lines += ["", _ANSWER[mode]]
    return "\n".join(lines)


def user_prompt(view: View, level: str) -> str:
    """The user message: the shop section and the candidate table of ``view`` at ``level``."""
    inst = view.instance
    index = _level_index(level)
    lines = [f"Time now: {fmt(view.now)}; decision {view.decision + 1}."]
    down = [f"{inst.machine_names[m]} {s.removeprefix('down ')}" for m, s in enumerate(view.machine_status)
            if s.startswith("down")]
    emergency = sorted({inst.job_names[r.job] for r in view.rows if r.weight >= EMERGENCY_WEIGHT})
    lines.append(f"Critical: machines down: {', '.join(down) or 'none'}; emergency jobs among the candidates: "
                 f"{', '.join(emergency) or 'none'}.")
    if index >= 1:
        c = view.counts
        states = Counter(s.split(" ")[0] for s in view.machine_status)
        events = ", ".join(f"{k} {v}" for k, v in view.events_so_far.items()) or "none"
        lines.append(f"Shop so far: jobs released {c['released']}, open {c['open']} (waiting {c['waiting']}, past due "
                     f"{c['tardy']}), completed {c['completed']}, cancelled {c['cancelled']}; machines busy "
                     f"{states['busy']}, idle {states['idle']}, down {states['down']}; events so far: {events}; "
                     f"objective so far: {fmt(view.objective_so_far)}.")
    if index >= 2:
        rows = [[inst.machine_names[m], inst.machine_groups[m], fmt(float(inst.machine_speed[m])),
                 view.machine_status[m], fmt(float(view.queue[m])), fmt(float(view.bottleneck[m])),
                 fmt(float(view.utilization[m]))]
                for m in range(inst.num_machines)]
        top = int(np.argmax(view.bottleneck))
        lines += ["", f"Machines (system utilisation so far {fmt(float(view.utilization.mean()))}; bottleneck "
                  f"{inst.machine_names[top]}):",
                  _table(["machine", "group", "speed", "status", "queue", "bneck", "util"], rows)]
    if level == "oracle":
        lines += ["", *future_section("Future events (clairvoyant ablation)", view.future, view.future_total,
                                      view.future_limit)]
    plural = "s" if view.offered != 1 else ""
    shown = f"{len(view.rows)} of {view.offered} startable pairs" if len(view.rows) < view.offered else \
        f"{len(view.rows)} startable pair{plural}"
    lines += ["", f"Candidates ({shown}):",
              _table([name for name, _ in _columns(level)], [_cells(view, r, level) for r in view.rows])]
    return "\n".join(lines)


def messages(view: View, level: str, variant: str, mode: str, priors: Mapping[str, Any]) -> list[dict[str, str]]:
    """The chat messages of one decision (system, user) for ``level`` and ``variant``."""
    show_priors = level in ("L3", "oracle") or variant == "priors"
    system = system_prompt(level, mode, view.objective, priors if show_priors else None, variant == "priors_tagged",
                           view.future_limit)
    user = user_prompt(view, level)
    if variant == "padded":
        target = len(system_prompt("L3", mode, view.objective, priors)) + len(user_prompt(view, "L3"))
        missing = target - len(system) - len(user)
        if missing > 2:  # the filler follows a blank line
            filler = (FILLER * (missing // len(FILLER) + 1))[:missing - 2]
            system = f"{system}\n\n{filler}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
