"""The DFJSP instance model: machines, jobs, flexible operations and a typed event stream.

An :class:`Instance` is immutable and stored as a struct of arrays (CSR for job -> operations and
operation -> eligible machines) so that the numba core can compile it without copying Python
objects. Events stay as a tuple of small frozen :class:`Event` records, sorted by time.

The native JSON form (``format: dynasched-instance/1``) is written by :meth:`Instance.to_json`
and read by :meth:`Instance.from_dict` / :func:`dynasched_gym.load_instance`; the round trip is
exact (floats are written with ``repr`` precision).
"""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.checks import (
    INEXACT_INTEGER,
    check_integer,
    check_path,
    holds_exactly,
    is_finite_real,
    is_integer,
    is_real,
)
from dynasched_gym.errors import IgnoredEventWarning, InstanceFormatError

INSTANCE_FORMAT = "dynasched-instance/1"
BREAKDOWN_POLICIES = ("resume", "restart")


class EventType(IntEnum):
    """Event kinds; the integer value is the order in which same-time events apply.

    ``COMPLETION`` (an operation ends) and ``ARRIVAL`` (a job's release time) are produced by the
    simulator itself and never appear in :attr:`Instance.events`.
    """

    REPAIR = 0
    COMPLETION = 1
    ARRIVAL = 2
    PTIME_CHANGE = 3
    ROUTE_CHANGE = 4
    PRIORITY_CHANGE = 5
    DUE_DATE_CHANGE = 6
    CANCELLATION = 7
    REWORK = 8
    MAINTENANCE = 9
    BREAKDOWN = 10


#: Event kinds that may appear in an instance's event stream.
STREAM_EVENT_TYPES = tuple(t for t in EventType if t not in (EventType.COMPLETION, EventType.ARRIVAL))
#: Why an event type outside :data:`STREAM_EVENT_TYPES` is refused (by the loaders and :meth:`Instance.build`).
UNKNOWN_EVENT_TYPE = f"unknown event type (one of {[t.name for t in STREAM_EVENT_TYPES]})"

# Which payload fields each stream event kind requires; every other payload field must be unset.
_REQUIRED_FIELDS: dict[EventType, tuple[str, ...]] = {
    EventType.REPAIR: ("machine",),
    EventType.PTIME_CHANGE: ("job", "op"),
    EventType.ROUTE_CHANGE: ("job", "ops"),
    EventType.PRIORITY_CHANGE: ("job", "weight"),
    EventType.DUE_DATE_CHANGE: ("job", "due"),
    EventType.CANCELLATION: ("job",),
    EventType.REWORK: ("job", "op"),
    EventType.MAINTENANCE: ("machine", "duration"),
    EventType.BREAKDOWN: ("machine", "duration"),
}
_OPTIONAL_FIELDS: dict[EventType, tuple[str, ...]] = {
    EventType.PTIME_CHANGE: ("factor", "value"),
    EventType.ROUTE_CHANGE: ("op",),
}
#: Payload fields of :class:`Event`, in the order :meth:`Event.to_dict` writes them (after time and type).
PAYLOAD_FIELDS = ("machine", "job", "op", "duration", "factor", "value", "weight", "due", "ops")
#: The shortest processing time an instance may give (time units): 1000 times the simulator's tolerance
#: ``metrics.EPS``, within which happenings are one instant (docs/semantics.md); an instance in a finer time
#: unit must be rescaled.
MIN_PROCESSING_TIME = 1e-6
#: The largest magnitude of every number of an instance: a time (release, due date, processing time, also after the
#: PTIME_CHANGE factors compound, event time, duration), a weight, and a machine speed (which must be at least its
#: reciprocal). The metrics multiply weights by times and the SSI sums squares of times and of work (time x speed):
#: loaded processing times of 1e160 or a speed of 1e300 raised a bare OverflowError in the SSI, and weights of 1e305
#: made total_weighted_tardiness inf (NaN rewards, an unwritable schedule). 1e30 keeps all of them inside float64 with
#: a wide margin and lies far above anything the generator makes (its processing times are at most
#: ``scenario.TIME_RANGE[1]`` = 1e12) or a benchmark holds.
MAX_MAGNITUDE = 1e30
#: Weight from which a job counts as an emergency: the generator's default ``emergency_weight``, the weight the
#: dsbx importers give emergency jobs, and the threshold of the rules' emergency-first option.
EMERGENCY_WEIGHT = 10.0


def too_short(minimum: float = MIN_PROCESSING_TIME) -> str:
    """The loaders' reason for a processing time below ``minimum`` (:data:`MIN_PROCESSING_TIME` on a machine of
    speed 1)."""
    return f"processing time must be >= {minimum:g} (the simulator's time tolerance)"


def too_long(maximum: float = MAX_MAGNITUDE) -> str:
    """The loaders' reason for a processing time above ``maximum`` (:data:`MAX_MAGNITUDE` on a machine of speed 1)."""
    return f"processing time must be <= {maximum:g} (instance.MAX_MAGNITUDE, which keeps the metrics finite)"


_FLOAT_FIELDS = ("machine_speed", "job_release", "job_due", "job_weight", "elig_time")
_INT_FIELDS = ("job_op_ptr", "op_elig_ptr", "elig_machine")
# The arrays held by instances (by id; an entry goes when its array does): they are read-only and
# shared by nobody else, so a new instance may hold them without a copy (``replace``).
_OWNED: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
_BOOLS = frozenset((bool, np.bool_))
# The item types of a list that converting to an array's dtype leaves as they are (build's lists).
_PLAIN: dict[type[np.generic], frozenset[type]] = {np.float64: frozenset((float,)), np.int64: frozenset((int,))}

Operation = Mapping[int, float]
"""An operation: eligible machine id -> processing time on that machine."""


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict that refuses changes, for the mappings immutable records hold: an :class:`Event`'s operations (an
    instance validates and compiles its events once: a changed time went unchecked, and the simulation kept the
    old one) and memoised results' (an SSI's components)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("this mapping cannot be changed (it belongs to an immutable record): make a new one")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:  # pickle's default sets the items one by one
        return FrozenDict, (dict(self),)


@dataclass(frozen=True)
class Event:
    """One exogenous event. Unused payload fields are ``None``; NumPy scalars given for ids, times
    and numbers (also in ``ops``) are stored as Python ints and floats, and each of ``ops`` as a read-only
    :class:`FrozenDict`.

    Payloads by type (times in the instance's time unit):

    - ``BREAKDOWN(machine, duration)``: the machine fails; a running operation is preempted.
    - ``REPAIR(machine)``: an early end of the machine's current breakdown.
    - ``MAINTENANCE(machine, duration)``: non-preemptive downtime, starts when the running op ends.
    - ``PTIME_CHANGE(job, op, factor | value)``: ``factor`` multiplies the op's times on every
      eligible machine; ``value`` sets a nominal time, so the time on machine m is value / speed(m).
    - ``ROUTE_CHANGE(job, ops, op=0)``: the job's operations from index max(op, first unstarted op)
      on are replaced by ``ops``.
    - ``PRIORITY_CHANGE(job, weight)``, ``DUE_DATE_CHANGE(job, due)``, ``CANCELLATION(job)``.
    - ``REWORK(job, op)``: completed operation ``op`` is processed again, inserted before the
      job's first unstarted operation.
    """

    time: float
    type: EventType
    machine: int | None = None
    job: int | None = None
    op: int | None = None
    duration: float | None = None
    factor: float | None = None
    value: float | None = None
    weight: float | None = None
    due: float | None = None
    ops: tuple[Operation, ...] | None = None

    def __post_init__(self) -> None:
        # NumPy scalars become Python numbers (so that to_json() can write them); anything else is
        # left for Instance validation to judge, which names the event and field.
        for name in ("time", *PAYLOAD_FIELDS):
            if name != "ops":
                object.__setattr__(self, name, _python_number(getattr(self, name)))
        if isinstance(self.ops, (list, tuple, Iterator)):  # a generator failed validation as a bare TypeError
            object.__setattr__(self, "ops", tuple(
                FrozenDict({_python_number(m): _python_number(t) for m, t in op.items()})
                if isinstance(op, Mapping) else op
                for op in self.ops
            ))

    def to_dict(self) -> dict[str, Any]:
        """The event as a native-JSON object."""
        out: dict[str, Any] = {"time": self.time, "type": self.type.name}
        for name in PAYLOAD_FIELDS:
            val = getattr(self, name)
            if val is None:
                continue
            if name == "ops":
                val = [{"eligible": _operation_to_dict(op)} for op in val]
            out[name] = val
        return out


@dataclass(frozen=True)
class Machine:
    """A machine of the plant. ``speed`` divides nominal processing times of group routes."""

    name: str
    group: str = "default"
    speed: float = 1.0


@dataclass(frozen=True)
class Job:
    """A job: release (arrival) time, optional due date, weight, and its operation chain."""

    name: str
    ops: Sequence[Operation]
    release: float = 0.0
    due: float | None = None
    weight: float = 1.0


@dataclass(frozen=True, eq=False)
class Instance:
    """An immutable DFJSP instance as a struct of arrays.

    Machine ``m`` is described by ``machine_names[m]``, ``machine_groups[m]`` and
    ``machine_speed[m]``. Job ``j`` owns operations ``job_op_ptr[j] : job_op_ptr[j + 1]``
    (global operation ids, in chain order); operation ``o`` may run on machines
    ``elig_machine[op_elig_ptr[o] : op_elig_ptr[o + 1]]`` with the matching ``elig_time``.

    The arrays are read-only and the instance's own: arrays passed in are copied (the caller's stay
    writable, and changing them later does not change the instance), except arrays already held by
    an instance, which are shared (so :meth:`replace` copies nothing it keeps).
    """

    name: str
    machine_names: tuple[str, ...]
    machine_groups: tuple[str, ...]
    machine_speed: np.ndarray  # (num_machines,) float64, > 0
    job_names: tuple[str, ...]
    job_release: np.ndarray  # (num_jobs,) float64, release time >= 0
    job_due: np.ndarray  # (num_jobs,) float64, due date; NaN = no due date
    job_weight: np.ndarray  # (num_jobs,) float64, weight >= 0
    job_op_ptr: np.ndarray  # (num_jobs + 1,) int64, CSR row pointer job -> operations
    op_elig_ptr: np.ndarray  # (num_ops + 1,) int64, CSR row pointer operation -> eligible pairs
    elig_machine: np.ndarray  # (num_eligible,) int64, machine id of each eligible pair
    elig_time: np.ndarray  # (num_eligible,) float64, processing time > 0 of each eligible pair
    events: tuple[Event, ...] = ()
    breakdown_policy: str = "resume"
    # not an __init__ argument: dataclasses.replace passed it on, and the new instance simulated the old one
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for names, dtype in ((_FLOAT_FIELDS, np.float64), (_INT_FIELDS, np.int64)):
            for name in names:
                object.__setattr__(self, name, _owned_array(getattr(self, name), dtype, name))
        object.__setattr__(self, "events", tuple(self.events))
        _validate(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickling (and copy.copy/deepcopy) bypasses __init__: the arrays it made are new, so they
        # are only made read-only and recorded as owned, not copied.
        self.__dict__.update(state)
        for name in (*_FLOAT_FIELDS, *_INT_FIELDS):
            arr = state[name]
            arr.setflags(write=False)
            _OWNED[id(arr)] = arr
        # The memoised values came back writable too: a compiled instance's writable arrays had numba
        # compile every kernel again for them (core.compiled.read_only).
        for value in self._cache.values():
            for arr in value if isinstance(value, tuple) else (value,):
                if isinstance(arr, np.ndarray):
                    arr.setflags(write=False)

    # ------------------------------------------------------------------ sizes
    @property
    def num_machines(self) -> int:
        """Number of machines."""
        return len(self.machine_names)

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return len(self.job_names)

    @property
    def num_ops(self) -> int:
        """Number of operations in the static job chains (route-change ops not counted)."""
        return int(self.job_op_ptr[-1])

    def job_ops(self, job: int) -> list[dict[int, float]]:
        """The static operation chain of ``job`` as a list of {machine: time} dicts."""
        _check_index("job", job, self.num_jobs)
        return [self.operation(o) for o in range(self.job_op_ptr[job], self.job_op_ptr[job + 1])]

    def operation(self, op: int) -> dict[int, float]:
        """Eligible machines and times of global operation ``op``."""
        _check_index("op", op, len(self.op_elig_ptr) - 1)
        lo, hi = self.op_elig_ptr[op], self.op_elig_ptr[op + 1]
        return {int(m): float(t) for m, t in zip(self.elig_machine[lo:hi], self.elig_time[lo:hi])}

    # ----------------------------------------------------------- construction
    @classmethod
    def build(
        cls,
        name: str,
        machines: Sequence[Machine],
        jobs: Sequence[Job],
        events: Sequence[Event] = (),
        breakdown_policy: str = "resume",
    ) -> Instance:
        """Build an instance from readable records (validated like every instance).

        Numbers may be Python or NumPy scalars; anything else (a string, a bool, a non-integer machine
        id, an integer float64 would round) raises naming the field instead of being converted, as the loaders
        do. A due date is ``None`` or finite.
        """
        machines = _records("machines", machines, Machine)
        jobs = _records("jobs", jobs, Job)
        events = _records("events", events, Event)
        release: list[float] = []
        due: list[float] = []
        weight: list[float] = []
        job_op_ptr = [0]
        op_elig_ptr = [0]
        elig_machine: list[int] = []
        elig_time: list[float] = []
        for j, job in enumerate(jobs):
            release.append(real_number(job.release, f"jobs[{j}].release"))
            weight.append(real_number(job.weight, f"jobs[{j}].weight"))
            if job.due is None:
                due.append(math.nan)  # NaN stands for "no due date" in job_due, so a NaN due is refused
            elif not is_finite_real(job.due):
                raise InstanceFormatError("due must be a finite time or null", field=f"jobs[{j}].due", value=job.due)
            elif _rounds(job.due):
                raise InstanceFormatError(INEXACT_INTEGER, field=f"jobs[{j}].due", value=job.due)
            else:
                due.append(float(job.due))
            for k, op in enumerate(job.ops):
                where = f"jobs[{j}].ops[{k}].eligible"
                if not isinstance(op, Mapping):
                    raise InstanceFormatError("an operation must map machine ids to times", field=where, value=op)
                for m, t in op.items():
                    _check_machine_id(m, len(machines), where)  # before the array conversion, which would overflow
                    if type(t) is not float or not math.isfinite(t):  # the common case at once: no field name made
                        t = real_number(t, f"{where}.{m}")
                    elig_machine.append(m)  # NumPy scalars too: the array below converts them
                    elig_time.append(t)
                op_elig_ptr.append(len(elig_machine))
            job_op_ptr.append(len(op_elig_ptr) - 1)
        return cls(  # lists: __post_init__ makes each array once
            name=name,
            machine_names=tuple(m.name for m in machines),
            machine_groups=tuple(m.group for m in machines),
            machine_speed=[real_number(m.speed, f"machines[{i}].speed") for i, m in enumerate(machines)],
            job_names=tuple(job.name for job in jobs),
            job_release=release,
            job_due=due,
            job_weight=weight,
            job_op_ptr=job_op_ptr,
            op_elig_ptr=op_elig_ptr,
            elig_machine=elig_machine,
            elig_time=elig_time,
            events=tuple(events),
            breakdown_policy=breakdown_policy,
        )

    def replace(self, **changes: Any) -> Instance:
        """A copy with some fields replaced (validated again)."""
        kwargs = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "_cache"}
        kwargs.update(changes)
        return Instance(**kwargs)

    # ------------------------------------------------------------ native JSON
    def to_dict(self) -> dict[str, Any]:
        """The native-JSON object (DESIGN section 5)."""
        return {
            "format": INSTANCE_FORMAT,
            "name": self.name,
            "config": {"breakdown_policy": self.breakdown_policy},
            "machines": [
                {"id": m, "name": self.machine_names[m], "group": self.machine_groups[m],
                 "speed": float(self.machine_speed[m])}
                for m in range(self.num_machines)
            ],
            "jobs": [
                {
                    "id": j,
                    "name": self.job_names[j],
                    "release": float(self.job_release[j]),
                    "due": None if math.isnan(self.job_due[j]) else float(self.job_due[j]),
                    "weight": float(self.job_weight[j]),
                    "ops": [{"eligible": _operation_to_dict(op)} for op in self.job_ops(j)],
                }
                for j in range(self.num_jobs)
            ],
            "events": [e.to_dict() for e in self.events],
        }

    def to_json(self, path: str | os.PathLike[str] | None = None, indent: int | None = None) -> str:
        """Serialise to native JSON; with ``path``, also write the file atomically (:func:`atomic_path`)."""
        return dump_json(self.to_dict(), path, indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<instance>") -> Instance:
        """Parse a native-JSON object; errors name ``source`` and the offending field."""
        from dynasched_gym.io.native import instance_from_dict

        return instance_from_dict(data, source)

    # --------------------------------------------------------------- equality
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        # consistent with ==, which compares the whole content: equal instances share these, and they are cheap
        return hash((self.name, self.num_machines, self.num_jobs, self.num_ops, len(self.events),
                     self.breakdown_policy))

    def __repr__(self) -> str:
        return (
            f"Instance(name={self.name!r}, jobs={self.num_jobs}, machines={self.num_machines}, "
            f"ops={self.num_ops}, events={len(self.events)}, breakdown_policy={self.breakdown_policy!r})"
        )


def writable_file(path: Path) -> Path:
    """``path`` as a file to write, or its target if it is a symbolic link (written through, as :func:`open`
    would); before any work, an :class:`OSError` naming the path in the way: a directory there
    (IsADirectoryError), a file that is no regular one (EINVAL: a device such as ``/dev/null``, a FIFO, a
    socket, which a rename or an append would replace or lose), a file where a parent folder belongs
    (NotADirectoryError), or a file or folder that cannot be written (PermissionError)."""
    return _can_be_made(regular_file(path))


def regular_file(path: Path) -> Path:
    """``path``, or its target if it is a symbolic link, where a regular file is or may be; an :class:`OSError`
    naming the path otherwise: a directory (IsADirectoryError), or a device, FIFO or socket (EINVAL)."""
    if path.is_symlink():
        path = path.resolve()
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory: give a file path", str(path))
    if path.exists() and not path.is_file():
        raise OSError(errno.EINVAL, "Not a regular file (a device, FIFO or socket)", str(path))
    return path


def _can_be_made(path: Path) -> Path:
    """``path``, or an OSError naming what stops it being written: a NotADirectoryError for a file that stands
    where one of its parent folders belongs, a PermissionError for an existing file or nearest existing folder
    this process cannot write (no permission, a read-only file system): found now, not after the work."""
    blocking = next((parent for parent in path.parents if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        raise NotADirectoryError(errno.ENOTDIR, f"Not a directory, so {path} cannot be made", str(blocking))
    if path.is_file() and not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "Cannot be written (permission or a read-only file system)", str(path))
    folder = next(folder for folder in (path, *path.parents) if folder.is_dir())
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, f"Cannot be written (permission or a read-only file system), so {path} "
                              "cannot be made", str(folder))
    return path


def writable_folder(path: Path) -> Path:
    """``path`` as a folder to write files into, made by whoever writes the first file; before any work, an
    :class:`OSError` naming the path in the way: a file there (FileExistsError), a file where a parent folder
    belongs (NotADirectoryError), or a folder that cannot be written (PermissionError). Nothing is made, so a run
    refused later leaves no empty folder behind."""
    if path.exists() and not path.is_dir():
        raise FileExistsError(errno.EEXIST, "File exists: give a folder path", str(path))
    return _can_be_made(path)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed onto ``path`` on success, removed on failure.

    Missing parent folders are made; ``path`` must be a :func:`writable_file` (a symbolic link's target is
    replaced). An :class:`OSError` of the temporary file is raised again naming ``path``, the file the caller
    asked for.
    """
    path = writable_file(path)
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600 files; give the usual mode
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename is not None and Path(str(exc.filename)).name.startswith(f".{path.name}."):  # the temporary
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


#: The widest JSON indent: wider ones only bloat the file (an indent of 10**9 spaces would fill the memory).
MAX_INDENT = 16


def dump_json(data: Any, path: str | os.PathLike[str] | None, indent: int | None) -> str:
    """``data`` as JSON text (no NaN), indented by ``indent`` spaces (None: one line); with ``path``, also written
    atomically (:func:`atomic_path`)."""
    if indent is not None:
        check_integer("indent", indent, 0, MAX_INDENT)
    text = json.dumps(data, indent=indent, allow_nan=False)
    if path is not None:
        write_text_atomic(check_path("path", path), text)
    return text


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (no partial files)."""
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(text, encoding="utf-8")


def current_umask() -> int:
    """The process umask (read without changing it for more than an instant)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _check_index(name: str, value: Any, count: int) -> None:
    """Raise naming ``name`` and ``value`` unless it is an integer id in ``0 .. count - 1`` (-1 is no last one: it
    gave an empty chain)."""
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer id in 0..{count - 1}, got {value!r}")
    if not 0 <= value < count:
        raise IndexError(f"{name} must be an integer id in 0..{count - 1}, got {value!r}")


def check_instance(name: str, value: Any) -> Instance:
    """``value``; a TypeError naming argument ``name`` unless it is an :class:`Instance` (a path or an embedded name
    is loaded first: ``load_instance(path)``, ``resolve_instance(name)``)."""
    if not isinstance(value, Instance):
        raise TypeError(f"{name} must be an Instance (load a file with dynasched_gym.load_instance(path), an embedded "
                        f"one with dynasched_gym.io.resolve_instance(name)), got {type(value).__name__}: {value!r:.80}")
    return value


def _operation_to_dict(op: Operation) -> dict[str, float]:
    return {str(int(m)): float(t) for m, t in op.items()}


def _records(field: str, value: Any, kind: type) -> Sequence[Any]:
    """``value``, checked to be a sequence (or a generator) of ``kind`` records: a TypeError naming ``field``
    otherwise (a dict was read as its keys, a lone record or None failed as not iterable), an InstanceFormatError
    naming the record."""
    if isinstance(value, Iterator):  # a generator of events always worked
        value = tuple(value)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"{field} must be a list of {kind.__name__} records, got {type(value).__name__}: "
                        f"{value!r:.80}")
    for i, record in enumerate(value):
        if not isinstance(record, kind):
            raise InstanceFormatError(f"not a {kind.__name__}", field=f"{field}[{i}]", value=record)
    return value


def real_number(x: Any, field: str, source: str = "<instance>") -> float:
    """``x`` as a Python float; anything but a finite number that float64 holds exactly raises naming ``field`` (and
    ``source``): the check of every number :meth:`Instance.build` and the native loader read."""
    if not is_real(x):
        raise InstanceFormatError("expected a number", source=source, field=field, value=x)
    if not is_finite_real(x):  # NaN, infinities, an integer beyond the float range (float() would overflow)
        raise InstanceFormatError("expected a finite number", source=source, field=field, value=x)
    if not holds_exactly(x):  # an integer above 2**53: float() would round it
        raise InstanceFormatError(INEXACT_INTEGER, source=source, field=field, value=x)
    return float(x)


def _rounds(x: Any) -> bool:
    """``x`` is a finite integer that float64 cannot hold exactly (:func:`~dynasched_gym.checks.holds_exactly`)."""
    return is_finite_real(x) and not holds_exactly(x)


def _python_number(x: Any) -> Any:
    """``x`` as a Python int or float when it is a NumPy integer or floating scalar; anything else as is."""
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def _owned_array(value: Any, dtype: type[np.generic], name: str) -> np.ndarray:
    """A read-only C-contiguous ``dtype`` array of ``value`` (field ``name``) that no caller can write to.

    An array already held by an instance (see ``_OWNED``) is returned as is; anything else is
    copied, so the caller's array is neither shared nor made read-only. Values the conversion would change are
    refused naming the field: bools, complex numbers and strings, for an integer field fractions (0.9 is no
    machine 0), for a float field integers float64 cannot hold exactly (2**53 + 1).
    """
    if _OWNED.get(id(value)) is value and value.dtype == dtype:
        return value
    given = np.asarray(value)
    if given.dtype.kind in "bcUSMmV":
        raise InstanceFormatError(f"expected numbers, got an array of dtype {given.dtype}", field=name,
                                  value=given.tolist()[:8])
    _check_items(value, given, dtype, name)
    if dtype is np.int64 and given.dtype.kind == "f" and not np.all(np.isfinite(given) & (given == np.trunc(given))):
        raise InstanceFormatError("expected integers", field=name, value=given.tolist()[:8])
    arr = np.array(given, dtype=dtype, order="C", copy=True)
    arr.setflags(write=False)
    _OWNED[id(arr)] = arr
    return arr


def _check_items(value: Any, given: np.ndarray, dtype: type[np.generic], name: str) -> None:
    """Refuse the items of ``value`` (``given`` as an array) that converting to ``dtype`` would change, naming field
    ``name``; the items of a number array of the right kind are left to the array checks."""
    if given.dtype.kind == "O":  # converted one by one: True read as 1, "1.5" as 1.5, machine 0.9 as 0
        items = given.ravel().tolist()
    elif isinstance(value, (list, tuple)):  # already a number array: True read as 1, 2**53 + 1 beside 2.0 rounded
        items = value
    elif dtype is np.float64 and given.dtype.kind in "iu" and given.dtype.itemsize == 8:  # smaller ones are exact
        items = given[np.abs(given) > 2**53].tolist()  # -2**63, whose abs wraps, is exact
    else:
        return
    if set(map(type, items)) <= _PLAIN[dtype]:  # build's lists: nothing to convert
        return
    for x in items:
        if type(x) in _BOOLS:
            raise InstanceFormatError("expected numbers, got a bool", field=name, value=list(items)[:8])
        if not is_real(x):
            raise InstanceFormatError(f"expected numbers, got a {type(x).__name__}", field=name, value=x)
        if dtype is np.float64 and is_integer(x) and not (is_finite_real(x) and holds_exactly(x)):
            raise InstanceFormatError(INEXACT_INTEGER, field=name, value=x)
        if dtype is np.int64 and not is_integer(x) and not (is_finite_real(x) and float(x).is_integer()):
            raise InstanceFormatError("expected integers", field=name, value=x)


def _validate(inst: Instance) -> None:
    """Raise :class:`InstanceFormatError` on the first inconsistency (fields in native-JSON terms)."""
    num_m, num_j = inst.num_machines, inst.num_jobs
    for where, names in (("name", [inst.name]), ("machines[{}].name", inst.machine_names),
                         ("machines[{}].group", inst.machine_groups), ("jobs[{}].name", inst.job_names)):
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise InstanceFormatError("expected a string", field=where.format(i), value=name)
    if not isinstance(inst.breakdown_policy, str) or inst.breakdown_policy not in BREAKDOWN_POLICIES:
        raise InstanceFormatError(
            f"must be one of {BREAKDOWN_POLICIES}", field="config.breakdown_policy", value=inst.breakdown_policy
        )
    if num_m == 0:
        raise InstanceFormatError("an instance needs at least one machine", field="machines", value=[])
    if num_j == 0:
        raise InstanceFormatError("an instance needs at least one job", field="jobs", value=[])
    _validate_machines(inst)
    _validate_jobs(inst)
    _validate_operations(inst)
    _validate_events(inst.events, num_m, num_j)
    _check_changed_times(inst)
    _warn_unreachable_ops(inst)


def _validate_machines(inst: Instance) -> None:
    num_m = inst.num_machines
    if len(inst.machine_groups) != num_m or inst.machine_speed.shape != (num_m,):
        raise InstanceFormatError("machine arrays differ in length", field="machines", value=num_m)
    for m, speed in enumerate(inst.machine_speed):
        if not (math.isfinite(speed) and 1 / MAX_MAGNITUDE <= speed <= MAX_MAGNITUDE):
            raise InstanceFormatError(f"speed must be a finite number in [{1 / MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}]",
                                      field=f"machines[{m}].speed", value=float(speed))


def _validate_jobs(inst: Instance) -> None:
    """The jobs' release, due date and weight."""
    num_j = inst.num_jobs
    for name, arr in (("release", inst.job_release), ("due", inst.job_due), ("weight", inst.job_weight)):
        if arr.shape != (num_j,):
            raise InstanceFormatError("job arrays differ in length", field=f"jobs.{name}", value=arr.shape)
    for j in range(num_j):
        if not (math.isfinite(inst.job_release[j]) and 0 <= inst.job_release[j] <= MAX_MAGNITUDE):
            raise InstanceFormatError(f"release must be a finite time in [0, {MAX_MAGNITUDE:g}]",
                                      field=f"jobs[{j}].release", value=float(inst.job_release[j]))
        if abs(inst.job_due[j]) > MAX_MAGNITUDE:  # NaN (no due date) passes; an infinity does not
            raise InstanceFormatError(f"due must be a finite time in [-{MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}] or null",
                                      field=f"jobs[{j}].due", value=float(inst.job_due[j]))
        if not (math.isfinite(inst.job_weight[j]) and 0 <= inst.job_weight[j] <= MAX_MAGNITUDE):
            raise InstanceFormatError(f"weight must be a finite number in [0, {MAX_MAGNITUDE:g}]",
                                      field=f"jobs[{j}].weight", value=float(inst.job_weight[j]))


def _validate_operations(inst: Instance) -> None:
    """The CSR arrays of the jobs' operations and their eligible machines, and each operation's (machine, time)
    pairs."""
    num_j = inst.num_jobs
    ptr = inst.job_op_ptr
    if ptr.shape != (num_j + 1,) or ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] + 1 != len(inst.op_elig_ptr):
        raise InstanceFormatError("job_op_ptr is not a valid CSR pointer", field="jobs", value=ptr.tolist()[:8])
    eptr = inst.op_elig_ptr
    if len(inst.elig_machine) != len(inst.elig_time):
        raise InstanceFormatError("eligible arrays differ in length", field="jobs", value=len(inst.elig_time))
    if eptr[0] != 0 or np.any(np.diff(eptr) < 0) or eptr[-1] != len(inst.elig_machine):
        raise InstanceFormatError("op_elig_ptr is not a valid CSR pointer", field="jobs", value=eptr.tolist()[:8])
    for j in range(num_j):
        if ptr[j + 1] == ptr[j]:
            raise InstanceFormatError("a job needs at least one operation", field=f"jobs[{j}].ops", value=[])
        for k, o in enumerate(range(ptr[j], ptr[j + 1])):
            _validate_operation(inst, o, f"jobs[{j}].ops[{k}].eligible")


def _validate_operation(inst: Instance, o: int, where: str) -> None:
    lo, hi = inst.op_elig_ptr[o], inst.op_elig_ptr[o + 1]
    _check_eligible(
        list(zip(inst.elig_machine[lo:hi].tolist(), inst.elig_time[lo:hi].tolist())), inst.num_machines, where
    )


def _check_machine_id(m: Any, num_m: int, where: str) -> None:
    if not (is_integer(m) and 0 <= m < num_m):
        known = f"machines are 0..{num_m - 1}" if num_m else "the instance has no machines"
        raise InstanceFormatError(f"unknown machine id ({known})", field=where, value=m)


def _check_eligible(pairs: list[tuple[Any, Any]], num_m: int, where: str) -> None:
    if not pairs:
        raise InstanceFormatError("an operation needs at least one eligible machine", field=where, value={})
    seen: set[int] = set()
    for m, t in pairs:
        _check_machine_id(m, num_m, where)
        if m in seen:
            raise InstanceFormatError("machine listed twice", field=where, value=m)
        seen.add(int(m))
        if type(t) is not float and _rounds(t):  # no call for a float (every time of an instance's arrays)
            raise InstanceFormatError(INEXACT_INTEGER, field=f"{where}.{m}", value=t)
        if not is_finite_real(t) or not MIN_PROCESSING_TIME <= t <= MAX_MAGNITUDE:
            raise InstanceFormatError(
                f"processing time must be a finite number >= {MIN_PROCESSING_TIME:g} and <= {MAX_MAGNITUDE:g}",
                field=f"{where}.{m}", value=t)


def _check_changed_times(inst: Instance) -> None:
    """Refuse a PTIME_CHANGE that could make a processing time shorter than :data:`MIN_PROCESSING_TIME` or longer
    than :data:`MAX_MAGNITUDE`: a nominal ``value`` on the fastest (slowest) machine, or the factors of one (job, op)
    compounded, applied to the job's shortest (longest) time (of its operations and its route changes' operations; a
    bound, since the op a slot holds can change)."""
    changes = [(i, e) for i, e in enumerate(inst.events) if e.type == EventType.PTIME_CHANGE]
    if not changes:
        return
    fastest, slowest = float(np.max(inst.machine_speed)), float(np.min(inst.machine_speed))
    op_starts, job_starts = inst.op_elig_ptr[:-1], inst.job_op_ptr[:-1]  # every op and job has one at least
    shortest = dict(enumerate(np.minimum.reduceat(np.minimum.reduceat(inst.elig_time, op_starts), job_starts).tolist()))
    longest = dict(enumerate(np.maximum.reduceat(np.maximum.reduceat(inst.elig_time, op_starts), job_starts).tolist()))
    for e in inst.events:
        if e.type == EventType.ROUTE_CHANGE:
            shortest[e.job] = min(shortest[e.job], *(min(op.values()) for op in e.ops))
            longest[e.job] = max(longest[e.job], *(max(op.values()) for op in e.ops))
    # (job, op) -> (shortest and longest base time, product of factors)
    slots: dict[tuple[int, int], tuple[float, float, float]] = {}
    for i, e in changes:
        if e.value is not None:
            short, long, product = e.value / fastest, e.value / slowest, 1.0
            name, given = "value", e.value
            how_short = f"value {e.value:g} / speed {fastest:g} of the fastest machine"
            how_long = f"value {e.value:g} / speed {slowest:g} of the slowest machine"
        else:
            short, long, product = slots.get((e.job, e.op), (shortest[e.job], longest[e.job], 1.0))
            product *= e.factor
            name, given = "factor", e.factor
            how_short = f"time {short:g} x this op's factors so far {product:g}"
            how_long = f"time {long:g} x this op's factors so far {product:g}"
        slots[(e.job, e.op)] = (short, long, product)
        if short * product < MIN_PROCESSING_TIME:
            raise InstanceFormatError(
                f"job {e.job} op {e.op} could take {short * product:g} < {MIN_PROCESSING_TIME:g} time units after this "
                f"change ({how_short}); rescale the instance's time unit", field=f"events[{i}].{name}", value=given)
        if long * product > MAX_MAGNITUDE:
            raise InstanceFormatError(
                f"job {e.job} op {e.op} could take {long * product:g} > {MAX_MAGNITUDE:g} time units after this "
                f"change ({how_long}); rescale the instance's time unit", field=f"events[{i}].{name}", value=given)


def _warn_unreachable_ops(inst: Instance) -> None:
    """Warn about a PTIME_CHANGE or REWORK naming an op its job can never have: the simulator ignores it. A job has
    at most its own operations plus every route change's and one per REWORK (a bound: a route change may also
    shorten the list)."""
    most = np.diff(inst.job_op_ptr)
    for e in inst.events:
        if e.type == EventType.ROUTE_CHANGE:
            most[e.job] += len(e.ops)  # type: ignore[arg-type]
        elif e.type == EventType.REWORK:
            most[e.job] += 1
    for i, e in enumerate(inst.events):
        if e.type in (EventType.PTIME_CHANGE, EventType.REWORK) and e.op >= most[e.job]:
            warnings.warn(f"events[{i}].op: {e.type.name} of job {e.job} op {e.op} can never apply (the job never has "
                          f"more than {most[e.job]} operations); the simulator ignores it", IgnoredEventWarning,
                          stacklevel=2)


#: The numbers of an :class:`Event` (its operations' times aside).
_EVENT_NUMBERS = ("time", "duration", "factor", "value", "weight", "due")


def _validate_events(events: Sequence[Event], num_m: int, num_j: int) -> None:
    prev = 0.0
    for i, e in enumerate(events):
        where = f"events[{i}]"
        if not isinstance(e, Event):
            raise InstanceFormatError("not an Event", field=where, value=e)
        for name in _EVENT_NUMBERS:  # before the range checks, in the loaders' order
            val = getattr(e, name)
            if type(val) is not float and val is not None and _rounds(val):  # most are floats or unset: no call
                raise InstanceFormatError(INEXACT_INTEGER, field=f"{where}.{name}", value=val)
        if not is_finite_real(e.time) or not 0 <= e.time <= MAX_MAGNITUDE:
            raise InstanceFormatError(f"time must be a finite number in [0, {MAX_MAGNITUDE:g}]", field=f"{where}.time",
                                      value=e.time)
        if e.time < prev:
            raise InstanceFormatError(
                f"events are not sorted by time (previous event at {prev})", field=f"{where}.time", value=e.time
            )
        prev = e.time
        _validate_event(e, where, num_m, num_j)


def _validate_event(e: Event, where: str, num_m: int, num_j: int) -> None:
    """One event's type and payload: the fields its type needs and takes, ids in range, valid values."""
    if not isinstance(e.type, EventType) or e.type not in _REQUIRED_FIELDS:
        raise InstanceFormatError(UNKNOWN_EVENT_TYPE, field=f"{where}.type", value=getattr(e.type, "name", e.type))
    required = _REQUIRED_FIELDS[e.type]
    allowed = set(required) | set(_OPTIONAL_FIELDS.get(e.type, ()))
    for name in PAYLOAD_FIELDS:
        val = getattr(e, name)
        if name in required and val is None:
            raise InstanceFormatError(f"{e.type.name} needs field {name!r}", field=f"{where}.{name}", value=None)
        if name not in allowed and val is not None:
            raise InstanceFormatError(f"{e.type.name} takes no field {name!r}", field=f"{where}.{name}", value=val)
    if e.machine is not None:
        _check_machine_id(e.machine, num_m, f"{where}.machine")
    if e.job is not None and not (is_integer(e.job) and 0 <= e.job < num_j):
        raise InstanceFormatError(f"unknown job id (jobs are 0..{num_j - 1})", field=f"{where}.job", value=e.job)
    if e.op is not None and not (is_integer(e.op) and 0 <= e.op < 2**31):
        # the compiled event table holds op as a float64 column: beyond 2**53 it would round, beyond 2**63 wrap
        raise InstanceFormatError("op must be an operation index in 0..2**31 - 1", field=f"{where}.op",
                                  value=e.op)
    if e.factor is not None and (not is_finite_real(e.factor) or e.factor <= 0):  # its products: _check_changed_times
        raise InstanceFormatError("must be a finite number > 0", field=f"{where}.factor", value=e.factor)
    if e.duration is not None and (not is_finite_real(e.duration) or not 0 < e.duration <= MAX_MAGNITUDE):
        raise InstanceFormatError(f"must be a finite number > 0 and <= {MAX_MAGNITUDE:g}", field=f"{where}.duration",
                                  value=e.duration)
    if e.value is not None and (not is_finite_real(e.value) or not MIN_PROCESSING_TIME <= e.value <= MAX_MAGNITUDE):
        raise InstanceFormatError(f"a processing time must be a finite number >= {MIN_PROCESSING_TIME:g} and <= "
                                  f"{MAX_MAGNITUDE:g}", field=f"{where}.value", value=e.value)
    if e.type == EventType.PTIME_CHANGE and (e.factor is None) == (e.value is None):
        raise InstanceFormatError(
            "PTIME_CHANGE needs exactly one of 'factor' and 'value'", field=f"{where}.factor", value=e.factor
        )
    if e.weight is not None and (not is_finite_real(e.weight) or not 0 <= e.weight <= MAX_MAGNITUDE):
        raise InstanceFormatError(f"must be a finite number in [0, {MAX_MAGNITUDE:g}]", field=f"{where}.weight",
                                  value=e.weight)
    if e.due is not None and (not is_finite_real(e.due) or abs(e.due) > MAX_MAGNITUDE):
        raise InstanceFormatError(f"must be a finite time in [-{MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}]",
                                  field=f"{where}.due", value=e.due)
    if e.ops is not None:
        if len(e.ops) == 0:
            raise InstanceFormatError("a route change needs at least one operation", field=f"{where}.ops", value=[])
        for k, op in enumerate(e.ops):
            if not isinstance(op, Mapping):
                raise InstanceFormatError("an operation must map machine ids to times", field=f"{where}.ops[{k}]",
                                          value=op)
            _check_eligible(list(op.items()), num_m, f"{where}.ops[{k}].eligible")
