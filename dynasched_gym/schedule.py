"""The schedule record of a finished (or running) episode, in the JSON form of DESIGN section 5."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import Instance, write_text_atomic
from dynasched_gym.metrics import compute_metrics

SCHEDULE_FORMAT = "dynasched-schedule/1"
SEGMENT_STATUSES = ("completed", "preempted", "aborted")
DOWNTIME_KINDS = ("breakdown", "maintenance")


@dataclass(frozen=True, eq=False)
class Schedule:
    """What happened in an episode, as arrays (S segments, D downtime intervals, J jobs).

    ``segment_op`` indexes the job's operation list as it stood when the segment ran;
    ``segment_work`` is the fraction of that operation's work the segment performed.
    ``job_due`` / ``job_weight`` are the values in force at completion (NaN due = none);
    ``job_completion`` / ``job_cancelled_at`` are NaN when they did not happen.
    """

    instance: Instance
    segment_job: np.ndarray  # (S,) int64
    segment_op: np.ndarray  # (S,) int64
    segment_machine: np.ndarray  # (S,) int64
    segment_start: np.ndarray  # (S,) float64
    segment_end: np.ndarray  # (S,) float64
    segment_work: np.ndarray  # (S,) float64, fraction of the op's work in (0, 1]
    segment_status: np.ndarray  # (S,) int64, index into SEGMENT_STATUSES
    downtime_machine: np.ndarray  # (D,) int64
    downtime_start: np.ndarray  # (D,) float64
    downtime_end: np.ndarray  # (D,) float64
    downtime_kind: np.ndarray  # (D,) int64, index into DOWNTIME_KINDS
    job_due: np.ndarray  # (J,) float64, NaN = no due date
    job_weight: np.ndarray  # (J,) float64
    job_completion: np.ndarray  # (J,) float64, NaN = not completed
    job_cancelled_at: np.ndarray  # (J,) float64, NaN = not cancelled
    decisions: int = 0

    @property
    def finished(self) -> bool:
        """True when every job completed or was cancelled."""
        return bool(np.all(~np.isnan(self.job_completion) | ~np.isnan(self.job_cancelled_at)))

    @property
    def metrics(self) -> dict[str, float]:
        """The DESIGN section 6 metrics of this schedule."""
        return compute_metrics(
            release=self.instance.job_release,
            due=self.job_due,
            weight=self.job_weight,
            completion=self.job_completion,
            cancelled=~np.isnan(self.job_cancelled_at),
            busy_start=self.segment_start,
            busy_end=self.segment_end,
            down_start=self.downtime_start,
            down_end=self.downtime_end,
            num_machines=self.instance.num_machines,
        )

    def to_dict(self, instance_path: str | None = None) -> dict[str, Any]:
        """The DESIGN section 5 JSON object; ``instance_path`` stores a path instead of the instance."""
        inst = self.instance
        return {
            "format": SCHEDULE_FORMAT,
            "instance": {"path": instance_path} if instance_path else inst.to_dict(),
            "segments": [
                {"job": int(j), "op": int(k), "machine": int(m), "start": float(s), "end": float(e),
                 "work": float(w), "status": SEGMENT_STATUSES[st]}
                for j, k, m, s, e, w, st in zip(self.segment_job, self.segment_op, self.segment_machine,
                                                self.segment_start, self.segment_end, self.segment_work,
                                                self.segment_status)
            ],
            "downtime": [
                {"machine": int(m), "start": float(s), "end": float(e), "kind": DOWNTIME_KINDS[k]}
                for m, s, e, k in zip(self.downtime_machine, self.downtime_start, self.downtime_end,
                                      self.downtime_kind)
            ],
            "jobs": [
                {"job": j, "release": float(inst.job_release[j]), "due": _or_none(self.job_due[j]),
                 "weight": float(self.job_weight[j]), "completion": _or_none(self.job_completion[j]),
                 "cancelled_at": _or_none(self.job_cancelled_at[j])}
                for j in range(inst.num_jobs)
            ],
            "metrics": self.metrics,
        }

    def to_json(self, path: str | os.PathLike[str] | None = None, indent: int | None = None) -> str:
        """Serialise to JSON; with ``path``, also write the file atomically."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            write_text_atomic(Path(path), text)
        return text


def _or_none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def load_schedule_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a schedule JSON file into a dict, resolving ``instance.path`` relative to the file."""
    from dynasched_gym.io.text import read_json

    p = Path(path)
    data = read_json(p)
    if not isinstance(data, Mapping) or data.get("format") != SCHEDULE_FORMAT:
        raise InstanceFormatError(f"not a {SCHEDULE_FORMAT} file", source=str(p), field="format",
                                  value=data.get("format") if isinstance(data, Mapping) else data)
    inst = data.get("instance")
    if isinstance(inst, Mapping) and "path" in inst:
        from dynasched_gym.io import load_instance

        data["instance"] = load_instance(p.parent / inst["path"]).to_dict()
    return data
