"""Empirical difficulty: what the SSI is validated against.

Empirical difficulty of an instance = the mean, over a fixed portfolio of dispatching rules
(:data:`PORTFOLIO`), of the **normalised weighted tardiness**: total weighted tardiness divided
by the total weighted expected work sum_j w_j P_j of the jobs that were not cancelled, where P_j
is the job's expected processing time (sum over its operations of the mean time over eligible
machines) and w_j its weight in force. It is the quantity the SSI estimates (docs/ssi.md).
"""

from __future__ import annotations

import numpy as np

from dynasched_gym.core import rollout
from dynasched_gym.instance import Instance
from dynasched_gym.schedule import Schedule

PORTFOLIO = ("SPT", "FIFO", "MWKR", "EDD")


def normalised_weighted_tardiness(schedule: Schedule) -> float:
    """Total weighted tardiness / sum of w_j P_j over non-cancelled jobs (0 when nothing completed)."""
    inst = schedule.instance
    rows = np.repeat(np.arange(inst.num_ops), np.diff(inst.op_elig_ptr))
    op_time = np.bincount(rows, weights=inst.elig_time, minlength=inst.num_ops) / np.diff(inst.op_elig_ptr)
    job_time = np.add.reduceat(op_time, inst.job_op_ptr[:-1])
    kept = np.isnan(schedule.job_cancelled_at)
    work = float((schedule.job_weight[kept] * job_time[kept]).sum())
    return schedule.metrics["total_weighted_tardiness"] / work if work > 0 else 0.0


def empirical_difficulty(instance: Instance, rules: tuple[str, ...] = PORTFOLIO) -> float:
    """Mean normalised weighted tardiness over the rule portfolio."""
    return float(np.mean([normalised_weighted_tardiness(rollout(instance, rule=r)) for r in rules]))
