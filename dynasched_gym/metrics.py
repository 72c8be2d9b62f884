"""The metrics of DESIGN section 6: one implementation, used by the simulator, the validator,
the environments and the evaluation scripts.
"""

from __future__ import annotations

import numpy as np

from dynasched_gym.checks import check_integer

#: The one tolerance of time comparisons (docs/semantics.md, "Time and tolerance"), absolute: the simulator's,
#: the validator's when it decides what happened first, and the tardy-job count's.
EPS = 1e-9

#: Metric keys, in the order they are reported.
METRIC_KEYS = (
    "makespan",
    "total_tardiness",
    "mean_tardiness",
    "total_weighted_tardiness",
    "num_tardy_jobs",
    "mean_flow_time",
    "num_cancelled_jobs",
    "utilization",
)

#: Objectives (environments, agents, the oracle, evaluation) -> the metric key each one minimises.
#: The order is the objective code used by the numba kernels.
OBJECTIVE_METRICS = {
    "makespan": "makespan",
    "tardiness": "total_tardiness",
    "weighted_tardiness": "total_weighted_tardiness",
    "flow_time": "mean_flow_time",
}
OBJECTIVES = tuple(OBJECTIVE_METRICS)


def compute_metrics(
    release: np.ndarray,
    due: np.ndarray,
    weight: np.ndarray,
    completion: np.ndarray,
    cancelled: np.ndarray,
    busy_start: np.ndarray,
    busy_end: np.ndarray,
    down_start: np.ndarray,
    down_end: np.ndarray,
    num_machines: int,
) -> dict[str, float]:
    """Compute the metrics of a (possibly unfinished) schedule.

    Args:
        release, due, weight: per job (J,); ``due`` is NaN for jobs without a due date; ``due`` and
            ``weight`` must be the values in force when the job completed.
        completion: per job (J,), NaN while unfinished.
        cancelled: per job (J,), bool. Cancelled jobs are excluded from every job metric.
        busy_start, busy_end: the processing segments (S,), on any machine.
        down_start, down_end: the downtime intervals (D,), non-overlapping per machine.
        num_machines: M.

    Only completed, non-cancelled jobs enter ``makespan``, tardiness and flow time. A job is tardy when
    its tardiness exceeds ``EPS``: one that ends on its due date up to float rounding is on time (its
    tardiness of order 1e-17 still enters the sums).
    ``utilization`` = busy time / available time, both clipped to [0, makespan]; it is 0 when
    nothing completed, and never above 1 for a valid schedule, up to the simulator's time tolerance (an operation
    that ends within 1e-9 after the next one on its machine starts is one instant; measured up to 1 + 5e-12 on
    instances with sub-1e-9 time offsets, exactly at most 1 on integer times).
    """
    cancelled = np.asarray(cancelled)
    if cancelled.dtype != np.bool_:  # ~ of an int array is no negation: ~1 == -2 counted a cancelled job as done
        raise TypeError(f"cancelled must be a bool array (one per job), got dtype {cancelled.dtype}: {cancelled!r:.80}")
    num_machines = check_integer("num_machines", num_machines, 1)
    # arrays that do not pair up would broadcast: one busy_end against two starts counted busy time twice
    for group in ({"release": release, "due": due, "weight": weight, "completion": completion, "cancelled": cancelled},
                  {"busy_start": busy_start, "busy_end": busy_end}, {"down_start": down_start, "down_end": down_end}):
        shapes = {name: np.shape(a) for name, a in group.items()}
        if len(set(shapes.values())) > 1 or any(len(s) != 1 for s in shapes.values()):
            raise ValueError(f"{', '.join(group)} must be 1-D arrays of one length, got shapes "
                             + ", ".join(f"{name} {s}" for name, s in shapes.items()))
    done = ~cancelled & ~np.isnan(completion)
    c, r, d, w = completion[done], release[done], due[done], weight[done]
    makespan = float(c.max()) if c.size else 0.0
    has_due = ~np.isnan(d)
    tardiness = np.maximum(0.0, c[has_due] - d[has_due])
    busy = np.clip(busy_end, 0.0, makespan) - np.clip(busy_start, 0.0, makespan)
    down = np.clip(down_end, 0.0, makespan) - np.clip(down_start, 0.0, makespan)
    available = num_machines * makespan - float(down.sum())
    return {
        "makespan": makespan,
        "total_tardiness": float(tardiness.sum()),
        "mean_tardiness": float(tardiness.mean()) if tardiness.size else 0.0,
        "total_weighted_tardiness": float((w[has_due] * tardiness).sum()),
        "num_tardy_jobs": int(np.count_nonzero(tardiness > EPS)),
        "mean_flow_time": float((c - r).mean()) if c.size else 0.0,
        "num_cancelled_jobs": int(np.count_nonzero(cancelled)),
        "utilization": float(busy.sum() / available) if available > 0 else 0.0,
    }
