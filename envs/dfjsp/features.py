"""The observation features of the DFJSP environments: one table per observation block.

Each block (``candidates``, ``machines``, ``global``) is a table of :class:`Feature` rows in
column order. Columns are sorted by observability level, so the ``concise`` columns of a block
are a prefix of its ``full`` columns, which are a prefix of its ``oracle`` columns: an env built
with ``observability="full"`` has the ``concise`` and ``full`` columns of each block, and an
``oracle`` env has them all (:func:`num_columns`).

Scaling. Times are divided by the episode's time scale ``tau`` and operation counts by ``ops_scale``,
fixed before the episode starts so that they tell nothing of later jobs: a tier draw's are its plant's
expected operation time and operations per job, any other instance's those of its jobs released at its
first release time (:meth:`~dynasched_gym.envs.dfjsp.episodes.InstanceSource.scales`); the env's
``time_scale`` and ``ops_scale`` arguments replace them. Neither changes within an episode. "Soon"
features map a time ``dt`` until an event to ``1 / (1 + dt / tau)``: 1 when it is now, towards 0 when
it is far, and exactly 0 when no such event remains. Unbounded features are clipped to ``[-BIG, BIG]``
so every observation lies in its (finite) space.

The kernels in :mod:`.kernels` write the columns through the ``C_*`` / ``M_*`` / ``G_*`` indices
below; ``docs/environments.md`` renders the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONCISE, FULL, ORACLE = 0, 1, 2
#: Observability levels, by index: ``OBSERVABILITY[CONCISE] == "concise"``.
OBSERVABILITY = ("concise", "full", "oracle")
BIG = 1e6
"""Bound of the unbounded features (values are clipped to ``[-BIG, BIG]``)."""


@dataclass(frozen=True)
class Feature:
    """One column of an observation block.

    Attributes:
        name: column name, unique within its block.
        level: lowest observability level that shows it (``CONCISE``, ``FULL`` or ``ORACLE``).
        low: lower bound of the column in the observation space.
        high: upper bound of the column in the observation space.
        meaning: what the value is and how it is scaled.
    """

    name: str
    level: int
    low: float
    high: float
    meaning: str


def _flag(name: str, level: int, meaning: str) -> Feature:
    return Feature(name, level, 0.0, 1.0, meaning)


def _amount(name: str, level: int, meaning: str) -> Feature:
    return Feature(name, level, 0.0, BIG, meaning)


#: Columns of ``candidates``: one row per offered (operation, machine) pair; padding rows are 0.
CANDIDATE_FEATURES = (
    _flag("valid", CONCISE, "1 for an offered pair, 0 for a padding row"),
    _amount("proc_time", CONCISE, "remaining processing time of the pair (work left x time on this machine) / tau"),
    _amount("proc_time_ratio", CONCISE, "time of the operation on this machine / its shortest time over its "
            "eligible machines (1 = fastest machine)"),
    _amount("job_remaining_work", CONCISE, "job's remaining work: current operation's work left x its mean time "
            "over eligible machines, plus the mean times of its later operations, / tau"),
    _amount("job_remaining_ops", CONCISE, "operations left in the job's list, current one included, / ops_scale"),
    _flag("job_progress", CONCISE, "completed operations / length of the job's operation list"),
    _amount("job_weight", CONCISE, "job weight in force (unscaled; emergency jobs carry large weights)"),
    Feature("due_lateness", CONCISE, -BIG, BIG, "(now - due date in force) / tau: > 0 when already late; "
            "0 for a job without a due date"),
    _flag("has_due", CONCISE, "1 when the job has a due date"),
    _amount("waiting_time", CONCISE, "(now - time the job's current operation became startable: its release, the end "
            "of its previous operation, or the breakdown that preempted it) / tau"),
    _amount("job_age", CONCISE, "(now - job release) / tau, the job's flow time so far"),
    _amount("machine_speed", CONCISE, "machine speed (unscaled; nominal 1)"),
    _amount("machine_queue", CONCISE, "the machine's queue_work (see machines)"),
    _amount("machine_bottleneck", FULL, "the machine's bottleneck score (see machines)"),
    _flag("machine_utilization", FULL, "the machine's utilization so far (see machines)"),
    _flag("machine_breakdown_soon", ORACLE, "soon(time until the machine's next BREAKDOWN event)"),
    _flag("machine_maintenance_soon", ORACLE, "soon(time until the machine's next MAINTENANCE event)"),
    _flag("job_cancellation_soon", ORACLE, "soon(time until the job's next CANCELLATION event)"),
)

#: Columns of ``machines``: one row per machine.
MACHINE_FEATURES = (
    _flag("available", CONCISE, "1 when idle, up and without queued maintenance (can take an operation now)"),
    _flag("busy", CONCISE, "1 when running an operation"),
    _flag("in_breakdown", CONCISE, "1 when down after a breakdown"),
    _flag("in_maintenance", CONCISE, "1 when down for maintenance"),
    _flag("maintenance_queued", CONCISE, "1 when an announced maintenance waits to start (for the running "
          "operation to end, or queued during a breakdown)"),
    _amount("busy_remaining", CONCISE, "(planned end of the running operation - now) / tau; 0 when not busy"),
    _amount("down_elapsed", CONCISE, "(now - start of the current downtime) / tau; 0 when up"),
    _amount("queue_work", CONCISE, "work waiting for it: over visible jobs whose current operation waits and may "
            "run here, work left x time here / number of eligible machines, summed, / tau"),
    _amount("speed", CONCISE, "machine speed (unscaled; nominal 1)"),
    _amount("bottleneck", FULL, "share of the remaining work of visible jobs that may run here, x number of "
            "machines (1 = average): a running operation's time left counts on its machine, each operation not "
            "started its work left x time here / number of eligible machines; 0 when no work remains"),
    _flag("utilization", FULL, "busy time so far / (now - downtime so far); 0 while the machine has not been up "
          "yet (at time 0, or down since)"),
    _flag("breakdown_soon", ORACLE, "soon(time until the machine's next BREAKDOWN event)"),
    _flag("maintenance_soon", ORACLE, "soon(time until the machine's next MAINTENANCE event)"),
    _amount("down_remaining", ORACLE, "(planned end of the current downtime - now) / tau; 0 when up (an early "
            "REPAIR event can still shorten it)"),
)

#: Columns of ``global``.
GLOBAL_FEATURES = (
    _amount("time", CONCISE, "log(1 + now / tau)"),
    _amount("open_jobs", CONCISE, "visible jobs neither completed nor cancelled / number of machines"),
    _amount("waiting_jobs", CONCISE, "visible open jobs not running / number of machines"),
    _flag("candidates", CONCISE, "offered pairs / max_candidates"),
    _flag("candidates_truncated", CONCISE, "1 when more pairs can start than max_candidates (only the "
          "longest-waiting max_candidates are offered)"),
    _flag("machines_available", CONCISE, "fraction of machines that can take an operation now"),
    _flag("machines_down", CONCISE, "fraction of machines in breakdown or maintenance"),
    _flag("jobs_completed", CONCISE, "completed jobs / jobs whose release time has passed (cancelled ones included, "
          "also those cancelled before their release)"),
    _flag("open_jobs_tardy", CONCISE, "fraction of visible open jobs past their due date"),
    _amount("objective_so_far", CONCISE, "log(1 + potential / tau): the objective's potential now, at reset "
            "too (see the reward)"),
    _amount("bottleneck_max", FULL, "largest machine bottleneck score"),
    _flag("utilization_mean", FULL, "mean machine utilization so far"),
    _flag("arrival_soon", ORACLE, "soon(time until the next arrival: the release of a job not released yet and not "
          "cancelled before it)"),
    _amount("pending_arrivals", ORACLE, "jobs not released yet that will arrive (not cancelled before their release) "
            "/ number of machines"),
    _flag("event_soon", ORACLE, "soon(time until the next stream event of any kind)"),
)

BLOCKS = {"candidates": CANDIDATE_FEATURES, "machines": MACHINE_FEATURES, "global": GLOBAL_FEATURES}


def _index(table: tuple[Feature, ...]) -> dict[str, int]:
    return {f.name: i for i, f in enumerate(table)}


def num_columns(table: tuple[Feature, ...], level: int) -> int:
    """Number of columns of ``table`` shown at observability ``level`` (a prefix of the table)."""
    return sum(f.level <= level for f in table)


def bounds(table: tuple[Feature, ...], level: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds (float32) of the columns shown at ``level``."""
    shown = table[: num_columns(table, level)]
    return (np.array([f.low for f in shown], dtype=np.float32), np.array([f.high for f in shown], dtype=np.float32))


_C = _index(CANDIDATE_FEATURES)
C_VALID = _C["valid"]
C_PROC_TIME = _C["proc_time"]
C_PROC_TIME_RATIO = _C["proc_time_ratio"]
C_JOB_REMAINING_WORK = _C["job_remaining_work"]
C_JOB_REMAINING_OPS = _C["job_remaining_ops"]
C_JOB_PROGRESS = _C["job_progress"]
C_JOB_WEIGHT = _C["job_weight"]
C_DUE_LATENESS = _C["due_lateness"]
C_HAS_DUE = _C["has_due"]
C_WAITING_TIME = _C["waiting_time"]
C_JOB_AGE = _C["job_age"]
C_MACHINE_SPEED = _C["machine_speed"]
C_MACHINE_QUEUE = _C["machine_queue"]
C_MACHINE_BOTTLENECK = _C["machine_bottleneck"]
C_MACHINE_UTILIZATION = _C["machine_utilization"]
C_MACHINE_BREAKDOWN_SOON = _C["machine_breakdown_soon"]
C_MACHINE_MAINTENANCE_SOON = _C["machine_maintenance_soon"]
C_JOB_CANCELLATION_SOON = _C["job_cancellation_soon"]

_M = _index(MACHINE_FEATURES)
M_AVAILABLE = _M["available"]
M_BUSY = _M["busy"]
M_IN_BREAKDOWN = _M["in_breakdown"]
M_IN_MAINTENANCE = _M["in_maintenance"]
M_MAINTENANCE_QUEUED = _M["maintenance_queued"]
M_BUSY_REMAINING = _M["busy_remaining"]
M_DOWN_ELAPSED = _M["down_elapsed"]
M_QUEUE_WORK = _M["queue_work"]
M_SPEED = _M["speed"]
M_BOTTLENECK = _M["bottleneck"]
M_UTILIZATION = _M["utilization"]
M_BREAKDOWN_SOON = _M["breakdown_soon"]
M_MAINTENANCE_SOON = _M["maintenance_soon"]
M_DOWN_REMAINING = _M["down_remaining"]

_G = _index(GLOBAL_FEATURES)
G_TIME = _G["time"]
G_OPEN_JOBS = _G["open_jobs"]
G_WAITING_JOBS = _G["waiting_jobs"]
G_CANDIDATES = _G["candidates"]
G_CANDIDATES_TRUNCATED = _G["candidates_truncated"]
G_MACHINES_AVAILABLE = _G["machines_available"]
G_MACHINES_DOWN = _G["machines_down"]
G_JOBS_COMPLETED = _G["jobs_completed"]
G_OPEN_JOBS_TARDY = _G["open_jobs_tardy"]
G_OBJECTIVE_SO_FAR = _G["objective_so_far"]
G_BOTTLENECK_MAX = _G["bottleneck_max"]
G_UTILIZATION_MEAN = _G["utilization_mean"]
G_ARRIVAL_SOON = _G["arrival_soon"]
G_PENDING_ARRIVALS = _G["pending_arrivals"]
G_EVENT_SOON = _G["event_soon"]
