"""The tools of the ``tools`` mode: simulate an action with snapshot rollouts, and inspect a candidate.

- ``simulate_action(action_id)``: the final objective if that pair starts now and the schedule is
  finished by each of the rollout rules (the best is reported), as the lookahead agent
  scores a pair: the simulator's state is copied, the copy forgets the future (no event that has not
  happened, no unreleased job; :func:`dynasched_gym.core.lookahead.forget_future`) unless the agent
  is at the ``oracle`` level, the pair is started and the jitted rule runs to the end
  (:mod:`dynasched_gym.core.lookahead` kernels). The value covers the jobs known now.
- ``inspect_action(action_id)``: the candidate in detail, at the agent's level: L1 its operation's
  eligible machines and times; L2 also the job's due date, weight, release, later operations and the
  machine's queue; L3 also the machine's group, speed, bottleneck score and utilisation; ``oracle``
  also the future events of that job or machine, cut as the prompt's list is (the first
  ``future_events`` of them; none shown at 0).

Answers are JSON text; a bad call (unknown tool, unreadable arguments, an id not in the table)
gets ``{"error": ...}`` and the conversation goes on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from dynasched_gym.agents.llm.parsing import action_id as parse_action_id
from dynasched_gym.agents.llm.prompts import LEVELS, View, current_slot, fmt, future_section, op_times, upcoming
from dynasched_gym.core.compiled import ScratchStates
from dynasched_gym.core.lookahead import pair_value
from dynasched_gym.core.simulator import Simulator
from dynasched_gym.metrics import OBJECTIVES


def _function(name: str, description: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {"action_id": {"type": "integer"}}, "required": ["action_id"],
                       "additionalProperties": False}}}


def tool_definitions(level: str) -> list[dict[str, Any]]:
    """The tool definitions sent with every request of the ``tools`` mode at this observability level."""
    # at the oracle level the rollouts play the instance's real future (pair_value's oracle flag)
    future = ("It plays the instance's actual future events." if level == "oracle"
              else "Future events are not known to it.")
    return [
        _function("simulate_action", "Estimate the final objective (lower is better) if the candidate with this "
                  f"action_id starts now and a dispatching rule schedules everything after it. {future}"),
        _function("inspect_action", "Details of the candidate with this action_id: its job's operations, eligible "
                  "machines and times, and its machine's state."),
    ]


class Toolbox:
    """Runs the tool calls of one decision against the env's simulator (never stepping it)."""

    def __init__(self, rules: Sequence[tuple[int, int]] | np.ndarray, level: str) -> None:
        self.rules = np.asarray(rules, dtype=np.int64).reshape(-1, 2)  # (job rule, machine rule) codes
        self.level = level
        self.definitions = tool_definitions(level)
        self._scratch = ScratchStates()
        self._lock = threading.Lock()  # best-of-n samples call tools from several threads; one scratch state

    def simulate(self, sim: Simulator, job: int, machine: int, objective: str) -> float:
        """The best final objective over rollouts under ``rules`` after starting (job, machine) now (the lookahead's
        :func:`~dynasched_gym.core.lookahead.pair_value`, on a scratch state of the simulator's instance)."""
        with self._lock:
            value, _ = pair_value(sim.static, sim.state, self._scratch.get(sim.static), job, machine, self.rules,
                                  OBJECTIVES.index(objective), self.level == "oracle", -1)
            return float(value)

    def inspect(self, sim: Simulator, view: View, action_id: int) -> dict[str, Any]:
        """The details of a table row at the toolbox's level (module docstring)."""
        row = view.row(action_id)
        inst, state = sim.instance, sim.state
        names = inst.machine_names
        slot = current_slot(sim, row.job)
        work = float(state.slot_work[slot])
        level = LEVELS.index(self.level)
        out: dict[str, Any] = {
            "action_id": action_id, "job": inst.job_names[row.job], "operation": f"{row.op + 1} of {row.num_ops}",
            "machine": names[row.machine], "time_here": fmt(row.time),
            "eligible_times": {names[m]: fmt(work * t) for m, t in op_times(sim, slot).items()},
        }
        if level >= 1:
            later = range(slot + 1, int(sim.static.job_slot_ptr[row.job] + row.num_ops))
            out.update(release=fmt(float(inst.job_release[row.job])), due=fmt(row.due), weight=fmt(row.weight),
                       waiting_since=fmt(view.now - row.waiting), remaining_work=fmt(row.remaining_work),
                       later_operations=[{names[m]: fmt(t) for m, t in op_times(sim, s).items()} for s in later],
                       machine_queue=fmt(float(view.queue[row.machine])))
        if level >= 2:
            out.update(machine_group=inst.machine_groups[row.machine], machine_speed=fmt(float(inst.machine_speed[
                row.machine])), machine_bottleneck=fmt(float(view.bottleneck[row.machine])),
                machine_utilization=fmt(float(view.utilization[row.machine])), next_load=fmt(row.next_load))
        if level >= 3:  # cut as the prompt's list is: future_events=0 shows no future here either
            future, total = upcoming(sim, view.future_limit,
                                     lambda job, machine: job == row.job or machine == row.machine)
            out["future_events"] = future_section(f"Future events of job {inst.job_names[row.job]} or machine "
                                                  f"{names[row.machine]}", future, total, view.future_limit)
        return out

    def call(self, name: str, arguments: str, sim: Simulator, view: View) -> str:
        """The JSON answer to one tool call."""
        if name not in ("simulate_action", "inspect_action"):  # before the arguments, which another tool need not have
            return json.dumps({"error": f"unknown tool {name!r}; tools: simulate_action, inspect_action"})
        try:
            action_id = parse_action_id(json.loads(arguments or "{}")["action_id"])  # as in an answer: "3" is 3
            if action_id is None:
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            return json.dumps({"error": f"arguments must be a JSON object with an integer action_id: "
                                        f"{(arguments or '')[:200]!r}"})
        if action_id not in view.ids:
            return json.dumps({"error": f"action_id {action_id} is not in the table; ids: {view.ids}"})
        if name == "simulate_action":
            row = view.row(action_id)
            value = self.simulate(sim, row.job, row.machine, view.objective)
            return json.dumps({"action_id": action_id, "estimated_final_objective": fmt(value),
                               "objective": view.objective})
        return json.dumps(self.inspect(sim, view, action_id))
