"""Records of the DFJSP environments: the configuration, the observation, the kernels' workspace
and the batch layout.

The workspace is what the numba kernels of :mod:`.kernels` read and write besides the simulator's
own ``Static`` / ``State`` arrays (:mod:`dynasched_gym.core.compiled`): the observation buffers,
the decoding table of the action slots, scratch arrays and a few scalars.

Batches. Environments keep their ``Static``, ``State`` and ``Workspace`` arrays in batch buffers
(:class:`StaticBatch`, :class:`StateBatch`, :class:`WorkspaceBatch`): each field is a buffer with a
leading ``num_envs`` axis, padded along its first axis to the batch's capacity of its size
dimension (``D_*``: jobs, slots, ...). Env ``i``'s ``State`` and ``Workspace`` are row ``i``; its
``Static`` is row ``static_rows[i]``, shared by the envs that play the same instance. The kernels cut each row to
the env's own sizes (``dims[i, D_*]``) to rebuild its records as views, which costs no reference
counting; that is what lets one numba call step hundreds of simulations of different instances.
A single env is a batch of one.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from dynasched_gym.checks import check_choice, check_integer, check_positive
from dynasched_gym.core.compiled import State, Static
from dynasched_gym.core.rules import COMPOSITE_RULES
from dynasched_gym.envs.dfjsp.features import OBSERVABILITY
from dynasched_gym.metrics import OBJECTIVES

#: Objective codes of the kernels (``dynasched_gym.metrics.OBJECTIVE_METRICS`` order).
OBJ_MAKESPAN, OBJ_TARDINESS, OBJ_WEIGHTED_TARDINESS, OBJ_FLOW_TIME = range(len(OBJECTIVES))
INVALID_ACTION_POLICIES = ("replace", "raise")

ACTION_PAIR = 0
"""Action kind of ``DFJSP-v0`` / ``FJSP-v0``: the index of an offered (operation, machine) slot."""
ACTION_RULE = 1
"""Action kind of ``DFJSP-Rules-v0``: an index into ``dynasched_gym.core.rules.COMPOSITE_RULES``."""

# Workspace.scalars
S_PHI = 0  # the potential after the last step (0 after reset)
S_REWARD = 1  # the reward of the last step (0 after reset)
S_TIME_SCALE = 2  # tau
S_OPS_SCALE = 3  # mean operations per job
S_REWARD_SCALE = 4
S_FOLDED = 5  # the potential's fold over the folded jobs (K_JOBS_FOLDED)
NUM_SCALARS = 6

# Workspace.counters
K_CODE = 0  # return code of the last reset / step (kernels.DECISION, DONE or an error)
K_CANDIDATES = 1  # pairs that can start now (may exceed max_candidates)
K_INVALID = 2  # invalid actions replaced in this episode
# The per-step scans skip what can no longer change (kernels.py, "Folded history"):
K_JOBS_FOLDED = 3  # jobs 0 .. K_JOBS_FOLDED - 1 (none active) are folded into S_FOLDED and K_FOLDED_COMPLETED
K_FOLDED_COMPLETED = 4  # completed jobs among the folded ones
K_JOBS_SEEN = 5  # the largest active-window end at a step so far: the jobs from it on are hidden or cancelled
K_SEGMENTS_FOLDED = 6  # segments 0 .. K_SEGMENTS_FOLDED - 1 are folded into MS_BUSY_FOLDED
K_DOWNTIMES_FOLDED = 7  # downtimes 0 .. K_DOWNTIMES_FOLDED - 1 are folded into MS_DOWN_FOLDED
NUM_COUNTERS = 8

# Workspace.config
CFG_ACTION_KIND = 0  # ACTION_PAIR | ACTION_RULE
CFG_LEVEL = 1  # features.CONCISE | FULL | ORACLE
CFG_OBJECTIVE = 2  # index into OBJECTIVES
CFG_RAISE = 3  # 1: an invalid action is refused (the env raises), 0: replaced by slot / rule 0
NUM_CONFIG = 4

# Workspace.machine_stat rows
MS_QUEUE = 0  # queued work (time units)
MS_BOTTLENECK = 1  # bottleneck score
MS_UTILIZATION = 2  # utilization so far
MS_DOWN = 3  # downtime so far (time units)
MS_BREAKDOWN_SOON = 4  # soon(next BREAKDOWN), 0 = none
MS_MAINTENANCE_SOON = 5  # soon(next MAINTENANCE), 0 = none
MS_BUSY_FOLDED = 6  # busy time of the folded segments (K_SEGMENTS_FOLDED)
MS_DOWN_FOLDED = 7  # downtime of the folded downtimes (K_DOWNTIMES_FOLDED)
NUM_MACHINE_STATS = 8

Observation = TypedDict(
    "Observation",
    {
        "candidates": np.ndarray,  # (max_candidates, num_candidate_features) float32
        "machines": np.ndarray,  # (num_machines, num_machine_features) float32
        "global": np.ndarray,  # (num_global_features,) float32
        "action_mask": np.ndarray,  # (num_actions,) int8
    },
)
Observation.__doc__ = """One observation (a ``Dict`` space sample); features are listed in :mod:`.features`.

- ``candidates``: one row per action slot: the offered (operation, machine) pairs, longest-waiting
  job first; rows past the offered pairs are all 0.
- ``machines``: one row per machine, in machine id order.
- ``global``: the shop as a whole.
- ``action_mask``: 1 where the action is valid. ``DFJSP-v0``: slot ``k`` is valid when row ``k`` of
  ``candidates`` is an offered pair. ``DFJSP-Rules-v0``: every rule is valid (all ones).
"""

Workspace = namedtuple(
    "Workspace",
    [
        "candidates",  # (max_candidates, num_candidate_features) float32, observation block, padding rows 0
        "machines",  # (num_machines, num_machine_features) float32, observation block
        "global_",  # (num_global_features,) float32, observation block
        "action_mask",  # (num_actions,) int8, 1 = valid action
        "slot_job",  # (max_candidates,) int64, job of each offered pair, -1 = padding
        "slot_machine",  # (max_candidates,) int64, machine of each offered pair, -1 = padding
        "slot_time",  # (max_candidates,) float64, remaining processing time of each offered pair (time units)
        "slot_key",  # (max_candidates,) float64, ranking key of each offered pair: its job's ready time
        "pair_job",  # (pair capacity,) int64, scratch: every startable pair's job, in job order
        "pair_machine",  # (pair capacity,) int64, scratch: every startable pair's machine
        "pair_time",  # (pair capacity,) float64, scratch: every startable pair's remaining processing time
        "job_stat",  # (num_jobs,) float64, scratch: time of each job's next CANCELLATION, inf = none (oracle)
        "machine_stat",  # (NUM_MACHINE_STATS, num_machines) float64, per-machine statistics (MS_* rows)
        "scalars",  # (NUM_SCALARS,) float64, S_* entries
        "counters",  # (NUM_COUNTERS,) int64, K_* entries
        "config",  # (NUM_CONFIG,) int64, CFG_* entries
        "rng",  # (1,) uint64, xorshift64 state of the RANDOM rule (DFJSP-Rules-v0)
    ],
)
Workspace.__doc__ = """Arrays the environment kernels read and write; shapes and units in the field comments.

Padding: slot arrays hold -1 (ids) or 0 (times) past the offered pairs; the observation blocks
hold 0 in padding rows and in the columns of features above the env's observability level are
not there at all (their widths follow the level).
"""


#: The most action slots an env takes: more than the jobs x machines of any benchmark or generated size (at most
#: a few thousand), the most (job, machine) pairs an instance can offer at once.
MAX_CANDIDATES_LIMIT = 2**16


@dataclass(frozen=True)
class EnvConfig:
    """Validated settings shared by a single env and its vector version.

    Args:
        action_kind: ``ACTION_PAIR`` or ``ACTION_RULE``.
        objective: one of :data:`OBJECTIVES`; the episode return is ``-reward_scale`` x its metric.
        observability: ``"concise"``, ``"full"`` or ``"oracle"`` (see :mod:`.features`).
        max_candidates: number of action slots K (pairs offered at once).
        invalid_action: ``"replace"`` (play slot / rule 0 and count it) or ``"raise"``.
        reward_scale: positive factor of every reward.
        time_scale: the time unit ``tau`` of the features; ``None``: fixed before each episode
            (:meth:`~dynasched_gym.envs.dfjsp.episodes.InstanceSource.scales`).
        ops_scale: the unit of the features' operation counts; ``None``: fixed before each episode, as ``tau``.
    """

    action_kind: int
    objective: str = "makespan"
    observability: str = "concise"
    max_candidates: int = 32
    invalid_action: str = "replace"
    reward_scale: float = 1.0
    time_scale: float | None = None
    ops_scale: float | None = None

    def __post_init__(self) -> None:
        check_choice("objective", self.objective, OBJECTIVES)
        check_choice("observability", self.observability, OBSERVABILITY)
        check_choice("invalid_action", self.invalid_action, INVALID_ACTION_POLICIES)
        object.__setattr__(self, "max_candidates", check_integer("max_candidates", self.max_candidates, 1))
        if self.max_candidates > MAX_CANDIDATES_LIMIT:  # the arrays are allocated up front: 10**12 was a MemoryError
            raise ValueError(f"max_candidates must be at most {MAX_CANDIDATES_LIMIT} (more action slots than any "
                             f"instance offers pairs), got {self.max_candidates}")
        check_positive("reward_scale", self.reward_scale)
        for name in ("time_scale", "ops_scale"):
            if getattr(self, name) is not None:
                check_positive(name, getattr(self, name))

    @property
    def level(self) -> int:
        """Observability level index (``features.CONCISE``, ``FULL`` or ``ORACLE``)."""
        return OBSERVABILITY.index(self.observability)

    @property
    def num_actions(self) -> int:
        """Size of the ``Discrete`` action space (and of ``action_mask``)."""
        return self.max_candidates if self.action_kind == ACTION_PAIR else len(COMPOSITE_RULES)

    def config_row(self) -> np.ndarray:
        """The ``Workspace.config`` entries."""
        row = np.zeros(NUM_CONFIG, dtype=np.int64)
        row[CFG_ACTION_KIND] = self.action_kind
        row[CFG_LEVEL] = self.level
        row[CFG_OBJECTIVE] = OBJECTIVES.index(self.objective)
        row[CFG_RAISE] = self.invalid_action == "raise"
        return row


# ------------------------------------------------------------------------------ batch layout
# Size dimensions: the columns of EnvBatch.dims (each env's sizes) and of the batch capacities.
D_JOBS = 0  # J
D_SLOTS = 1  # operation slot capacity
D_OPS = 2  # operations, static and route-change
D_ELIG = 3  # eligible (operation, machine) pairs
D_EVENTS = 4  # stream events
D_ROUTE = 5  # route-change operations
D_SEGMENTS = 6  # segment capacity
D_DOWNTIMES = 7  # downtime capacity
D_PAIRS = 8  # startable-pair scratch capacity
NUM_DIMS = 9
FIXED = -1
"""Layout entry of a field with the same shape in every env (machines, action slots, counters)."""
SCALAR = -2
"""Layout entry of an int field of ``Static`` (a ``(num_envs,)`` buffer)."""

#: Batch layout of ``Static``: field -> (size dimension or FIXED / SCALAR, extra length).
STATIC_LAYOUT = {
    "machine_speed": (FIXED, 0), "job_release": (D_JOBS, 0), "job_due": (D_JOBS, 0), "job_weight": (D_JOBS, 0),
    "release_order": (D_JOBS, 0), "job_slot_ptr": (D_JOBS, 1), "job_num_ops": (D_JOBS, 0), "slot_op": (D_SLOTS, 0),
    "op_elig_ptr": (D_OPS, 1), "elig_machine": (D_ELIG, 0), "op_time": (D_OPS, 0), "op_mean_time": (D_OPS, 0),
    "event_time": (D_EVENTS, 0), "event_type": (D_EVENTS, 0), "event_machine": (D_EVENTS, 0),
    "event_job": (D_EVENTS, 0), "event_op": (D_EVENTS, 0), "event_value": (D_EVENTS, 0),
    "event_is_value": (D_EVENTS, 0), "event_route_lo": (D_EVENTS, 0), "event_route_hi": (D_EVENTS, 0),
    "route_ops": (D_ROUTE, 0), "policy": (SCALAR, 0), "segment_capacity": (SCALAR, 0),
    "downtime_capacity": (SCALAR, 0),
}
#: Batch layout of ``State`` (see :data:`STATIC_LAYOUT`).
STATE_LAYOUT = {
    **{f: (FIXED, 0) for f in State._fields if f in ("now", "counters") or f.startswith("machine_")},
    **{f: (D_JOBS, 0) for f in State._fields if f.startswith("job_")},
    **{f: (D_SLOTS, 0) for f in State._fields if f.startswith("slot_")},
    **{f: (D_SEGMENTS, 0) for f in State._fields if f.startswith("segment_")},
    **{f: (D_DOWNTIMES, 0) for f in State._fields if f.startswith("downtime_")},
}
#: Batch layout of :class:`Workspace` (see :data:`STATIC_LAYOUT`).
WORKSPACE_LAYOUT = {
    **{f: (FIXED, 0) for f in Workspace._fields},
    "pair_job": (D_PAIRS, 0), "pair_machine": (D_PAIRS, 0), "pair_time": (D_PAIRS, 0), "job_stat": (D_JOBS, 0),
}

StaticBatch = namedtuple("StaticBatch", Static._fields)
StaticBatch.__doc__ = """``Static`` of every env of a batch: fields ``(num_envs, *padded shape)`` (STATIC_LAYOUT)."""
StateBatch = namedtuple("StateBatch", State._fields)
StateBatch.__doc__ = """``State`` of every env of a batch: fields ``(num_envs, *padded shape)`` (STATE_LAYOUT)."""
WorkspaceBatch = namedtuple("WorkspaceBatch", Workspace._fields)
WorkspaceBatch.__doc__ = """``Workspace`` of every env of a batch: ``(num_envs, *padded shape)`` (WORKSPACE_LAYOUT)."""


def sizes_of(static: Static, pair_capacity: int) -> np.ndarray:
    """An env's sizes along the ``D_*`` dimensions, for its ``static`` and its pair scratch capacity."""
    sizes = np.zeros(NUM_DIMS, dtype=np.int64)
    sizes[D_JOBS] = static.job_release.shape[0]
    sizes[D_SLOTS] = static.slot_op.shape[0]
    sizes[D_OPS] = static.op_time.shape[0]
    sizes[D_ELIG] = static.elig_machine.shape[0]
    sizes[D_EVENTS] = static.event_time.shape[0]
    sizes[D_ROUTE] = static.route_ops.shape[0]
    sizes[D_SEGMENTS] = static.segment_capacity
    sizes[D_DOWNTIMES] = static.downtime_capacity
    sizes[D_PAIRS] = pair_capacity
    return sizes
