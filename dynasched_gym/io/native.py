"""Native instance JSON (``format: dynasched-instance/1``, DESIGN section 5).

The reader accepts exactly the keys :meth:`Instance.to_dict` writes (each object below may omit
the optional ones); any other key, e.g. a misspelt ``"relase"``, raises naming its path
(``jobs[3].relase``) and value. Numbers must be finite (Python's ``json`` reads ``NaN`` and
``Infinity``); ``null`` is a job's "no due date". Machine ids in ``eligible`` are decimal strings as
written (``"0"``, ``"12"``; not ``"00"``, ``" 0"`` or ``"+1"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dynasched_gym.checks import is_integer
from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import (
    INSTANCE_FORMAT,
    PAYLOAD_FIELDS,
    UNKNOWN_EVENT_TYPE,
    Event,
    EventType,
    Instance,
    Job,
    Machine,
    real_number,
)
from dynasched_gym.io.text import read_json

# The keys the writer emits (Instance.to_dict / Event.to_dict), by object.
TOP_KEYS = ("format", "name", "config", "machines", "jobs", "events")
CONFIG_KEYS = ("breakdown_policy",)
MACHINE_KEYS = ("id", "name", "group", "speed")
JOB_KEYS = ("id", "name", "release", "due", "weight", "ops")
OP_KEYS = ("eligible",)
EVENT_KEYS = ("time", "type", *PAYLOAD_FIELDS)


def load(path: Path) -> Instance:
    """Read a native instance file."""
    return from_json(read_json(path), path)


def from_json(data: Any, path: Path) -> Instance:
    """The instance of the parsed content ``data`` of the file ``path``."""
    return instance_from_dict(data, str(path))


def join(where: str, key: str) -> str:
    """The path of ``key`` inside the object at ``where`` (``""`` is the top level)."""
    return f"{where}.{key}" if where else key


def check_keys(obj: Any, allowed: tuple[str, ...], where: str, source: str) -> None:
    """Raise unless ``obj`` is a JSON object whose keys are all in ``allowed`` (naming the first other key)."""
    if not isinstance(obj, Mapping):
        raise InstanceFormatError("expected a JSON object", source=source, field=where or None, value=obj)
    for key in obj:
        if key not in allowed:
            raise InstanceFormatError(f"unknown field (known: {', '.join(allowed)})", source=source,
                                      field=join(where, str(key)), value=obj[key])


def get_field(obj: Mapping[str, Any], key: str, where: str, source: str, default: Any = ...) -> Any:
    """``obj[key]``; a missing key (without ``default``) or a non-object raises naming ``source`` and the field."""
    if not isinstance(obj, Mapping):
        raise InstanceFormatError("expected a JSON object", source=source, field=where or None, value=obj)
    if key not in obj:
        if default is ...:
            raise InstanceFormatError("missing field", source=source, field=join(where, key), value=None)
        return default
    return obj[key]


def get_list(obj: Mapping[str, Any], key: str, where: str, source: str, default: Any = ...) -> list[Any]:
    """``get_field`` for a field that must be a JSON array; anything else raises naming the field."""
    value = get_field(obj, key, where, source, default)
    if not isinstance(value, list):
        raise InstanceFormatError("expected a list", source=source, field=join(where, key), value=value)
    return value


def as_text(val: Any, where: str, source: str) -> str:
    """``val``, which must be a JSON string; anything else raises naming the field."""
    if not isinstance(val, str):
        raise InstanceFormatError("expected a string", source=source, field=where, value=val)
    return val


def as_number(val: Any, where: str, source: str, allow_none: bool = False) -> float | None:
    """``val`` as a finite float (``None`` passes with ``allow_none``); anything else, ``NaN`` and
    infinities included (Python's ``json`` reads them), and integers float64 would round, raises naming the field
    (the check :meth:`Instance.build` makes: :func:`~dynasched_gym.instance.real_number`)."""
    if val is None and allow_none:
        return None
    return real_number(val, where, source)


def as_int(val: Any, where: str, source: str) -> int:
    """``val`` as an integer id; anything else (bools included) raises naming the field."""
    if not is_integer(val):
        raise InstanceFormatError("expected an integer id", source=source, field=where, value=val)
    return val


def _operation(obj: Any, where: str, source: str) -> dict[int, float]:
    """``{"eligible": {"<machine id>": time}}`` as {machine id: time}.

    Machine ids must be written as ``str(id)`` does, so two keys of an object never name the same machine.
    """
    check_keys(obj, OP_KEYS, where, source)
    eligible = get_field(obj, "eligible", where, source)
    if not isinstance(eligible, Mapping):
        raise InstanceFormatError("expected an object {machine id: time}", source=source, field=f"{where}.eligible",
                                  value=eligible)
    out: dict[int, float] = {}
    for key, time in eligible.items():
        m = _machine_key(key)
        if m is None:
            raise InstanceFormatError('machine id must be an integer written as a decimal string like "3"',
                                      source=source, field=f"{where}.eligible", value=key)
        out[m] = as_number(time, f"{where}.eligible.{key}", source)  # type: ignore[assignment]
    return out


def _machine_key(key: Any) -> int | None:
    """The machine id of an ``eligible`` key: ``int(key)`` where ``str(int(key)) == key``, else ``None``."""
    try:
        m = int(key)
    except (TypeError, ValueError):
        return None
    return m if isinstance(key, str) and str(m) == key else None


def instance_from_dict(data: Mapping[str, Any], source: str = "<instance>") -> Instance:
    """Parse a native-JSON object into an :class:`Instance` (errors name ``source`` and the field)."""
    fmt = get_field(data, "format", "", source)
    if fmt != INSTANCE_FORMAT:
        raise InstanceFormatError(f"unsupported format (expected {INSTANCE_FORMAT!r})", source=source,
                                  field="format", value=fmt)
    check_keys(data, TOP_KEYS, "", source)
    config = get_field(data, "config", "", source, {})
    check_keys(config, CONFIG_KEYS, "config", source)
    policy = get_field(config, "breakdown_policy", "config", source, "resume")
    machines = []
    for i, m in enumerate(get_list(data, "machines", "", source)):
        where = f"machines[{i}]"
        check_keys(m, MACHINE_KEYS, where, source)
        if as_int(get_field(m, "id", where, source), f"{where}.id", source) != i:
            raise InstanceFormatError("machine ids must be 0, 1, 2, ... in order", source=source,
                                      field=f"{where}.id", value=m["id"])
        machines.append(Machine(name=as_text(get_field(m, "name", where, source, f"M{i}"), f"{where}.name", source),
                                group=as_text(get_field(m, "group", where, source, "default"), f"{where}.group",
                                              source),
                                speed=as_number(get_field(m, "speed", where, source, 1.0), f"{where}.speed", source)))
    jobs = []
    for j, job in enumerate(get_list(data, "jobs", "", source)):
        where = f"jobs[{j}]"
        check_keys(job, JOB_KEYS, where, source)
        if as_int(get_field(job, "id", where, source), f"{where}.id", source) != j:
            raise InstanceFormatError("job ids must be 0, 1, 2, ... in order", source=source, field=f"{where}.id",
                                      value=job["id"])
        ops = get_list(job, "ops", where, source)
        jobs.append(Job(
            name=as_text(get_field(job, "name", where, source, f"Job-{j}"), f"{where}.name", source),
            release=as_number(get_field(job, "release", where, source, 0.0), f"{where}.release", source),
            due=as_number(get_field(job, "due", where, source, None), f"{where}.due", source, allow_none=True),
            weight=as_number(get_field(job, "weight", where, source, 1.0), f"{where}.weight", source),
            ops=[_operation(op, f"{where}.ops[{k}]", source) for k, op in enumerate(ops)],
        ))
    events = [_event(e, f"events[{i}]", source) for i, e in enumerate(get_list(data, "events", "", source, []))]
    name = as_text(get_field(data, "name", "", source, "unnamed"), "name", source)
    try:
        return Instance.build(name, machines, jobs, events, policy)
    except InstanceFormatError as exc:
        raise exc.located(source) from None


def _event(obj: Any, where: str, source: str) -> Event:
    check_keys(obj, EVENT_KEYS, where, source)
    kind = get_field(obj, "type", where, source)
    try:
        etype = EventType[kind]
    except (KeyError, TypeError):
        raise InstanceFormatError(UNKNOWN_EVENT_TYPE, source=source, field=f"{where}.type", value=kind) from None
    kwargs: dict[str, Any] = {"time": as_number(get_field(obj, "time", where, source), f"{where}.time", source),
                              "type": etype}
    for key in ("machine", "job", "op"):
        if key in obj:
            kwargs[key] = as_int(obj[key], f"{where}.{key}", source)
    for key in ("duration", "factor", "value", "weight", "due"):
        if key in obj:
            kwargs[key] = as_number(obj[key], f"{where}.{key}", source)
    if "ops" in obj:
        kwargs["ops"] = tuple(_operation(op, f"{where}.ops[{k}]", source)
                              for k, op in enumerate(get_list(obj, "ops", where, source)))
    return Event(**kwargs)
