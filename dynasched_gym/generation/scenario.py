"""Scenario configuration: what to generate (Hydra structured configs, validated dataclasses).

A :class:`Scenario` describes a plant (machine groups and either process families with group
routes, or random FJSP ranges), a scale, an arrival pattern, calibration :class:`Targets` and the
rates of dynamic events. Size presets (``small``, ``medium``, ``large``) live in ``conf/size/``.

Target names are the realised-metric names of :mod:`dynasched_gym.generation.realised`, so a
target and its measurement are always called the same.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from dynasched_gym.checks import in_interval, is_finite_real, is_integer
from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import EMERGENCY_WEIGHT, MIN_PROCESSING_TIME


@dataclass
class MachineGroupConfig:
    """A group of machines; one machine per entry of ``speeds`` (speed divides nominal times), each in
    :data:`SPEED_RANGE`."""

    name: str = "G1"
    speeds: list[float] = field(default_factory=lambda: [1.0, 1.0])


@dataclass
class RouteStepConfig:
    """One operation of a family's route: a machine group and a nominal (speed 1) mean time; over the speed of
    each machine of the group it gives a processing time in :data:`TIME_RANGE`."""

    group: str = "G1"
    mean_time: float = 10.0


@dataclass
class FamilyConfig:
    """A process family: a route over machine groups and its share of the job mix (``mix_weight`` relative to the
    other families', in :data:`MIX_WEIGHT_RANGE`)."""

    name: str = "A"
    route: list[RouteStepConfig] = field(default_factory=list)
    mix_weight: float = 1.0


@dataclass
class FJSPConfig:
    """Random flexible-job-shop ranges (Song et al. style), used instead of process families.

    Machines keep the groups (names and speeds) of ``plant.groups``; each job has a random number
    of operations in ``ops_per_job``, each eligible on a random subset of ``eligible_machines``
    machines drawn from all machines, whatever their group, with a base time drawn uniformly in
    ``mean_time`` and per-machine times spread uniformly around it (``time_spread`` is the relative
    half-width). ``ops_per_job`` and ``eligible_machines`` are integer ``[min, max]`` pairs. ``mean_time`` over the
    fastest and the slowest machine's speed lies in :data:`TIME_RANGE`, and so does it times the per-machine factors
    ``time_spread`` allows (:func:`spread_factors`).
    """

    ops_per_job: list[int] = field(default_factory=lambda: [4, 6])  # [min, max]
    eligible_machines: list[int] = field(default_factory=lambda: [1, 3])  # [min, max]
    mean_time: list[float] = field(default_factory=lambda: [1.0, 20.0])  # [min, max] of base times
    time_spread: float = 0.2


@dataclass
class PlantConfig:
    """Machines (by group) and the routes jobs take."""

    groups: list[MachineGroupConfig] = field(default_factory=list)
    families: list[FamilyConfig] = field(default_factory=list)
    fjsp: FJSPConfig | None = None


@dataclass
class ScaleConfig:
    """The instance's size: ``num_jobs`` planned jobs (batches add more), or a ``horizon`` (time units) that
    the utilization target fills (``num_jobs: null``; :func:`planned_jobs`); ``warm_start_jobs`` of the planned
    jobs already wait at t = 0. Give exactly one of ``num_jobs`` and ``horizon``."""

    num_jobs: int | None = 200
    horizon: float | None = None
    warm_start_jobs: int = 0


@dataclass
class ArrivalConfig:
    """Arrival-rate pattern over the horizon: ``constant``, ``periodic`` or ``trend``."""

    pattern: str = "constant"
    amplitude: float = 0.0  # in [0, 1)
    period_fraction: float = 1.0 / 3.0  # periodic: period as a fraction of the horizon, >= 2 / ARRIVAL_GRID_STEPS


@dataclass
class Targets:
    """Calibration targets (realised-metric names); allowed values: :data:`TARGET_RANGES`.

    Every target is calibrated except ``load_cv``, the only one that may be ``None`` (the default),
    which leaves it uncalibrated; with n machine groups it is at most sqrt(n - 1) (all load on one group).
    ``utilization`` and ``due_date_tightness`` are at least :data:`MIN_UTILIZATION_TIGHTNESS` (below it due dates
    round to the releases; docs/generation.md, "Numeric bounds of a scenario"); ``arrival_scv`` and
    ``processing_scv`` are 0 or at least the smallest normal float (``sys.float_info.min``).
    """

    utilization: float = 0.8
    load_cv: float | None = None
    due_date_tightness: float = 2.0
    arrival_scv: float = 1.0
    processing_scv: float = 0.5
    disturbance: float = 0.05


@dataclass
class Tolerances:
    """Relative tolerance per target (|realised - target| / target; absolute when the target is 0)."""

    utilization: float = 0.03
    load_cv: float = 0.10
    due_date_tightness: float = 0.05
    arrival_scv: float = 0.10
    processing_scv: float = 0.10
    disturbance: float = 0.05
    bottleneck_window: float = 0.05  # every window of Scenario.bottleneck_windows


@dataclass
class BottleneckWindow:
    """A stretch of the horizon in which machine group ``group`` runs at ``utilization`` (a calibration target):
    downtime of the group's machines inside the window takes away the capacity that the group's load,
    spread evenly over the horizon, does not fill. ``start`` < ``end`` are fractions of the horizon."""

    group: str = ""
    start: float = 0.0
    end: float = 1.0
    utilization: float = 0.9


@dataclass
class EventRates:
    """Dynamic-event rates. Probabilities are per job; the maintenance interval is in time units.

    Every processing time times every ``ptime_change_factors`` factor stays in :data:`TIME_RANGE`;
    ``emergency_weight`` and ``due_date_change_factor`` are at most :data:`MAX_EVENT_FACTOR`.
    """

    cancellation: float = 0.0
    emergency: float = 0.0  # share of jobs raised to `emergency_weight` soon after arrival
    emergency_weight: float = EMERGENCY_WEIGHT
    priority_change: float = 0.0
    ptime_change: float = 0.0
    ptime_change_factors: list[float] = field(default_factory=lambda: [0.8, 1.2, 1.5])
    maintenance_interval: float = 0.0  # 0 disables; as a fraction of the horizon when <= 1
    maintenance_duration: float = 5.0
    maintenance_duration_std: float = 1.0
    batch_arrival: float = 0.0
    batch_size_mean: float = 3.0
    batch_size_std: float = 1.0
    route_change: float = 0.0
    rework: float = 0.0
    due_date_change: float = 0.0
    due_date_change_factor: float = 0.3


@dataclass
class Scenario:
    """Everything the generator needs, except the seed."""

    name: str = "scenario"
    plant: PlantConfig = field(default_factory=PlantConfig)
    scale: ScaleConfig = field(default_factory=ScaleConfig)
    arrivals: ArrivalConfig = field(default_factory=ArrivalConfig)
    targets: Targets = field(default_factory=Targets)
    tolerances: Tolerances = field(default_factory=Tolerances)
    events: EventRates = field(default_factory=EventRates)
    breakdown_policy: str = "resume"
    bottleneck_windows: list[BottleneckWindow] = field(default_factory=list)

    def __post_init__(self) -> None:
        validate_scenario(self)

    def to_dict(self) -> dict[str, Any]:
        """A plain nested dict (JSON/YAML ready)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Build from a nested mapping (e.g. a Hydra/OmegaConf config converted to a container).

        Errors name fields by their path in ``data`` (``targets.utilization``, ``plant.groups[0].speeds[1]``).
        """
        if data is None:  # _from_mapping passes a null section on, for validation to name; a null scenario was None
            raise InstanceFormatError("expected a mapping", source="<scenario>", value=data)
        return _from_mapping(cls, data, "")

    @classmethod
    def preset(cls, size: str) -> Scenario:
        """The size preset ``small`` | ``medium`` | ``large`` (``conf/size/<size>.yaml``).

        Errors name the file and the field by its path in the file (``scenario.targets.utilization``).
        """
        from dynasched_gym import conf

        # by name only: a path such as "../tier/hard" or "/tmp/x" read whatever YAML file it named
        if size not in size_presets():
            raise InstanceFormatError(f"unknown size preset (known by name: {', '.join(size_presets())})",
                                      source=str(conf.CONF_DIR / "size"), field="size", value=size)
        path = conf.CONF_DIR / "size" / f"{size}.yaml"
        data = read_conf_yaml(path)
        # an empty file, a list or a missing key raised a TypeError or a KeyError; another key was ignored
        if not isinstance(data, Mapping) or "scenario" not in data:
            raise InstanceFormatError("expected a mapping with the key scenario (the preset's scenario)",
                                      source=str(path), value=data)
        unknown = sorted(set(data) - {"scenario"}, key=str)
        if unknown:
            raise InstanceFormatError("unknown key (known: scenario)", source=str(path), field=str(unknown[0]),
                                      value=data[unknown[0]])
        try:
            return cls.from_dict(data["scenario"])
        except InstanceFormatError as exc:
            raise exc.located(str(path), field_prefix="scenario") from None


#: The scenario's sections and their dataclasses.
_SECTIONS: dict[str, type] = {"plant": PlantConfig, "scale": ScaleConfig, "arrivals": ArrivalConfig,
                              "targets": Targets, "tolerances": Tolerances, "events": EventRates}

TARGET_NAMES = tuple(f.name for f in fields(Targets))

#: Smallest ``utilization`` and ``due_date_tightness`` targets. At utilization u the horizon H is about J / u
#: times a job's processing time P (J jobs, about 1e6 at most with batches: MAX_OPERATIONS), and a due date is
#: due_date_tightness * P after a release that may lie near H: at 1e-3 each the allowance still spans tens of
#: float64's rounding steps at H, while at 1e-50 it rounded away (due dates equal to the releases, and a
#: ZeroDivisionError out of SESC).
MIN_UTILIZATION_TIGHTNESS = 1e-3

#: Allowed values of each target: (low, high, low_open, high_open), in validation order.
TARGET_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "utilization": (MIN_UTILIZATION_TIGHTNESS, 1.0, False, True),
    "due_date_tightness": (MIN_UTILIZATION_TIGHTNESS, 100.0, False, False),
    "arrival_scv": (0.0, 10.0, False, False),
    "processing_scv": (0.0, 4.0, False, False),
    "disturbance": (0.0, 0.5, False, True),
    "load_cv": (0.0, 1.5, False, False),
}

#: The targets whose SCV the generator draws with: gamma variates of shape 1 / SCV (an SCV of 0 draws none). A
#: positive SCV below the smallest normal float, 2.2e-308, gives an infinite shape (5e-324 gave NaN releases).
_GAMMA_SCVS = ("arrival_scv", "processing_scv")

#: The generator tabulates the arrival-rate pattern at this many equal steps of the horizon (``generator._warp``);
#: a periodic pattern's period spans two of them at least (``arrivals.period_fraction`` >= 2 / ARRIVAL_GRID_STEPS):
#: a shorter one falls between the grid points, and one of 5e-324 raised a ValueError out of the cosine.
ARRIVAL_GRID_STEPS = 2048

#: Most planned jobs a scenario may have (``scale.num_jobs``, or what ``scale.horizon`` holds): the generator
#: draws jobs one by one in Python, so a larger instance would take minutes to draw.
MAX_PLANNED_JOBS = 100_000
#: Largest ``events.batch_size_mean`` and ``events.batch_size_std``, a bound for the same reason.
MAX_BATCH_SIZE = 1000.0
#: Most maintenance windows an instance may have (``events.maintenance_interval``), a bound for the same reason.
MAX_MAINTENANCE_WINDOWS = 100_000
#: Most operations a scenario may expect (its planned jobs with their batch arrivals, times the operations of a job
#: on average), a bound for the same reason: the planned jobs alone did not bound them, as batches multiply the jobs
#: up to 1000 times and an FJSP job has up to 1000 operations (100 000 planned jobs in batches of 1000 ran out of
#: memory). The generator draws about 30 000 operations a second.
MAX_OPERATIONS = 1_000_000
#: Most (operation, machine) pairs a scenario may expect: its expected operations times its machines. The generator
#: and the realised metrics hold an array of floats of that shape (1e8: 1.6 GB and 20 s to draw); 10**6 machines
#: ran out of memory, or past minutes, with two jobs.
MAX_OPERATION_MACHINE_PAIRS = 100_000_000
#: Most machines a plant may have: the generator places each machine's breakdowns by a pass over all of them, on
#: every measurement of a calibration (10 000 machines: 20-40 s to calibrate; 100 000: 15 s a measurement).
MAX_MACHINES = 10_000
#: The smallest value of the generator's gamma draws (mean 1) that scale nominal times and arrival gaps.
MIN_GAMMA_DRAW = 1e-3
#: Shortest and longest expected processing time (time units) of an operation on a machine: a route step's (or the
#: FJSP range's) ``mean_time`` over the machine's speed. The shortest is MIN_PROCESSING_TIME / MIN_GAMMA_DRAW, so
#: that every time the generator draws is one an instance may hold (a mean_time of 1e-12 built no instance). The
#: longest keeps the generator inside float64, which raises times to the processing exponent (up to 6 while SESC
#: solves for it) and whose metrics and SSI sum their squares: a mean_time of 1e60 overflowed in the power, one of
#: 1e200 in the squares; 1e12 leaves a wide margin.
TIME_RANGE = (MIN_PROCESSING_TIME / MIN_GAMMA_DRAW, 1e12)
#: Largest ``events.emergency_weight`` and ``events.due_date_change_factor``: the SSI and the metrics multiply
#: weights and due-date shifts (this factor times due_date_tightness times a job's processing time) by times and
#: sum them, so they are bounded as times are (an emergency weight of 1e305 made the SSI NaN, and a due-date change
#: factor of 1e305 gave an infinite due date, one of 1.7e308 an OverflowError out of the generator's draw).
MAX_EVENT_FACTOR = 1e12
#: Allowed ``mix_weight`` of a process family. The weights are relative shares, which the generator sums and
#: multiplies by work: a weight of 10**30 (a Python int, beyond int64) was a TypeError out of the family draw, two
#: of 1.7e308 summed to inf (a ValueError there), and subnormal weights lose the digits of the expected job work.
MIX_WEIGHT_RANGE = (1e-12, 1e12)
#: Allowed machine speeds: those at which some nominal time gives a processing time in :data:`TIME_RANGE` (also on a
#: group no route visits, whose speed still adds to the plant's capacity: one of 1e300 made the SSI NaN).
SPEED_RANGE = (TIME_RANGE[0] / TIME_RANGE[1], TIME_RANGE[1] / TIME_RANGE[0])


def read_conf_yaml(path: Path) -> Any:
    """The YAML document of configuration file ``path`` (``conf/size/``, ``conf/tier/``); invalid YAML is an
    :class:`InstanceFormatError` naming the file, the line and its text (it was the parser's traceback)."""
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        lines = text.splitlines()
        line = mark.line if mark is not None and mark.line < len(lines) else None
        raise InstanceFormatError(f"not valid YAML ({getattr(exc, 'problem', None) or exc})", source=str(path),
                                  line=None if mark is None else mark.line + 1,
                                  value=None if line is None else lines[line].strip()) from None


def size_presets() -> tuple[str, ...]:
    """The names of the size presets, the files ``conf/size/<name>.yaml``."""
    from dynasched_gym import conf

    return tuple(sorted(p.stem for p in (conf.CONF_DIR / "size").glob("*.yaml")))


def _from_mapping(cls: type, data: Any, where: str) -> Any:
    """Build dataclass ``cls`` from mapping ``data`` found at field path ``where`` ("" for the scenario itself).

    Field paths are relative to the scenario (``targets.utilization``), as in :func:`validate_scenario`.
    """
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise InstanceFormatError("expected a mapping", source="<scenario>", field=where or None, value=data)
    known = {f.name: f for f in fields(cls)}
    unknown = set(data) - set(known)
    if unknown:
        name = sorted(unknown, key=str)[0]
        raise InstanceFormatError(f"unknown field (known: {', '.join(known)})", source="<scenario>",
                                  field=_join(where, name), value=data[name])
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(_NESTED.get((cls, name)), value, _join(where, name))
    return cls(**kwargs)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _convert(kind: Any, value: Any, where: str) -> Any:
    if kind is None:
        return list(value) if isinstance(value, (list, tuple)) else value
    if isinstance(kind, list):  # a list of dataclasses, each item a mapping
        if not isinstance(value, (list, tuple)):
            raise InstanceFormatError("expected a list", source="<scenario>", field=where, value=value)
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise InstanceFormatError("expected a mapping", source="<scenario>", field=f"{where}[{i}]",
                                          value=item)
        return [_from_mapping(kind[0], item, f"{where}[{i}]") for i, item in enumerate(value)]
    return _from_mapping(kind, value, where)


_NESTED: dict[tuple[type, str], Any] = {
    (Scenario, "plant"): PlantConfig, (Scenario, "scale"): ScaleConfig, (Scenario, "arrivals"): ArrivalConfig,
    (Scenario, "targets"): Targets, (Scenario, "tolerances"): Tolerances, (Scenario, "events"): EventRates,
    (Scenario, "bottleneck_windows"): [BottleneckWindow],
    (PlantConfig, "groups"): [MachineGroupConfig], (PlantConfig, "families"): [FamilyConfig],
    (PlantConfig, "fjsp"): FJSPConfig, (FamilyConfig, "route"): [RouteStepConfig],
}


def _fail(field_name: str, reason: str, value: Any) -> InstanceFormatError:
    return InstanceFormatError(reason, source="<scenario>", field=field_name, value=value)


def _is_int(value: Any) -> bool:
    """A Python integer, bools excluded (``True`` is not a count). Unlike :func:`~dynasched_gym.checks.is_integer`
    NumPy integers are refused too: a scenario stays JSON-ready (:meth:`Scenario.to_dict`)."""
    return isinstance(value, int) and is_integer(value)


def _is_number(value: Any) -> bool:
    """A finite Python real number, bools excluded (``True`` is not a speed or a rate): JSON-ready, as ``_is_int``."""
    return isinstance(value, (int, float)) and is_finite_real(value)


def _check_range(field_name: str, value: Any, lo: float, hi: float, lo_open: bool = False,
                 hi_open: bool = False) -> None:
    """Raise naming ``field_name`` and ``value`` unless ``value`` is a finite number (not a bool) in the interval."""
    if not (_is_number(value) and in_interval(value, lo, hi, lo_open, hi_open)):
        lo_s = f"({lo}" if lo_open else f"[{lo}"
        hi_s = f"{hi})" if hi_open else f"{hi}]"
        raise _fail(field_name, f"must be a number in {lo_s}, {hi_s}", value)


def check_target(name: str, value: Any, field_name: str | None = None) -> None:
    """Raise :class:`InstanceFormatError` naming ``field_name`` (default ``targets.<name>``) and ``value``
    unless ``value`` is an allowed value of target ``name`` (:data:`TARGET_RANGES`)."""
    _check_range(field_name or f"targets.{name}", value, *TARGET_RANGES[name])
    if name in _GAMMA_SCVS and 0 < value < sys.float_info.min:
        raise _fail(field_name or f"targets.{name}", f"must be 0 or at least {sys.float_info.min:.3g} (the generator "
                    "draws gamma variates of shape 1 / SCV, which must be finite)", value)


def _is_pair(value: Any, kind: Callable[[Any], bool]) -> bool:
    """A ``[min, max]`` list (or tuple) of two values of ``kind``."""
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(kind(v) for v in value)


def validate_scenario(s: Scenario) -> None:
    """Raise :class:`InstanceFormatError` naming the first invalid field (e.g. ``targets.utilization``)."""
    _check_name("name", s.name)
    for name, kind in _SECTIONS.items():
        _check_kind(name, getattr(s, name), kind)
    _check_plant(s.plant)
    _check_scale(s.scale)
    if s.arrivals.pattern not in ("constant", "periodic", "trend"):
        raise _fail("arrivals.pattern", "must be constant, periodic or trend", s.arrivals.pattern)
    _check_range("arrivals.amplitude", s.arrivals.amplitude, 0.0, 1.0, hi_open=True)
    _check_range("arrivals.period_fraction", s.arrivals.period_fraction, 2 / ARRIVAL_GRID_STEPS, 1.0)
    _check_targets(s.targets, len(s.plant.groups))
    for f_ in fields(Tolerances):
        _check_range(f"tolerances.{f_.name}", getattr(s.tolerances, f_.name), 0.0, 1.0, lo_open=True)
    _check_events(s.events)
    _check_ptime_change_factors(s.events.ptime_change_factors, s.plant)
    if s.breakdown_policy not in ("resume", "restart"):
        raise _fail("breakdown_policy", "must be resume or restart", s.breakdown_policy)
    _check_bottleneck_windows(s.bottleneck_windows, s.plant)
    _check_planned_jobs(s)
    _check_expected_size(s)
    if s.events.maintenance_interval > 0:  # the number of windows the generator would draw for the expected jobs
        speed = sum(v for g in s.plant.groups for v in g.speeds)
        maintenance_fraction(s, expected_jobs(s), speed)


def check_scenario(name: str, value: Any) -> Scenario:
    """``value`` if it is a valid :class:`Scenario`: a TypeError naming ``name`` otherwise, or the
    :class:`InstanceFormatError` of :func:`validate_scenario`. A scenario is validated when built, but its fields
    may be set afterwards: a utilization target set to 1.5 was calibrated to 1.5, a cancellation probability of 2
    cancelled every job, and an arrival pattern "bogus" was drawn as a trend."""
    if not isinstance(value, Scenario):
        raise TypeError(f"{name} must be a Scenario (e.g. Scenario.preset('small')), got {type(value).__name__}: "
                        f"{value!r:.80}")
    validate_scenario(value)
    return value


def _check_kind(field_name: str, value: Any, kind: type) -> None:
    """A section or list item of the right dataclass: a Python caller may pass anything, and a file's null
    section comes through :meth:`Scenario.from_dict` as ``None``."""
    if not isinstance(value, kind):
        raise _fail(field_name, f"must be a mapping (from Python: {kind.__name__})", value)


def _check_items(field_name: str, value: Any, kind: type) -> None:
    """A list of ``kind`` items."""
    if not isinstance(value, list):
        raise _fail(field_name, "must be a list", value)
    for i, item in enumerate(value):
        _check_kind(f"{field_name}[{i}]", item, kind)


def _check_name(field_name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise _fail(field_name, "must be a string", value)


def _check_plant(plant: PlantConfig) -> None:
    """The machine groups, and either the process families or the fjsp block."""
    _check_items("plant.groups", plant.groups, MachineGroupConfig)
    if not plant.groups:
        raise _fail("plant.groups", "at least one machine group is needed", [])
    for i, g in enumerate(plant.groups):
        _check_name(f"plant.groups[{i}].name", g.name)
    names = [g.name for g in plant.groups]
    if len(set(names)) != len(names):
        raise _fail("plant.groups", "group names must be unique", names)
    for i, g in enumerate(plant.groups):
        if not isinstance(g.speeds, (list, tuple)):
            raise _fail(f"plant.groups[{i}].speeds", "must be a list of speeds > 0", g.speeds)
        if not g.speeds:
            raise _fail(f"plant.groups[{i}].speeds", "a group needs at least one machine", g.speeds)
        for k, v in enumerate(g.speeds):
            _check_range(f"plant.groups[{i}].speeds[{k}]", v, *SPEED_RANGE)
    machines = sum(len(g.speeds) for g in plant.groups)
    if machines > MAX_MACHINES:
        raise _fail("plant.groups", f"a plant has at most {MAX_MACHINES} machines (one per speed of its groups)",
                    machines)
    _check_items("plant.families", plant.families, FamilyConfig)
    if plant.fjsp is not None and plant.families:
        raise _fail("plant.families", "give either plant.families or plant.fjsp, not both (an fjsp plant would "
                    "ignore the families)", [fam.name for fam in plant.families])
    if plant.fjsp is None:
        _check_families(plant.families, names)
    else:
        _check_kind("plant.fjsp", plant.fjsp, FJSPConfig)
        _check_fjsp(plant.fjsp, sum(len(g.speeds) for g in plant.groups))
    low, high = TIME_RANGE
    for field_name, value, shortest, longest in operation_times(plant):
        if not (low <= shortest and longest <= high):
            how = "mean_time over the speeds of the machines it may run on"
            if field_name == "plant.fjsp.time_spread":
                how = (f"plant.fjsp.mean_time over the machine speeds, times the per-machine factors it allows; at "
                       f"most {_largest_spread(plant):.6g} keeps them in range")
            raise _fail(field_name, f"gives processing times {shortest:.3g} to {longest:.3g} ({how}); they must lie "
                        f"in [{low:g}, {high:g}] time units (scenario.TIME_RANGE)", value)


def _check_families(families: list[FamilyConfig], group_names: list[str]) -> None:
    if not families:
        raise _fail("plant.families", "give process families or an fjsp block", [])
    for i, fam in enumerate(families):
        _check_name(f"plant.families[{i}].name", fam.name)
        _check_items(f"plant.families[{i}].route", fam.route, RouteStepConfig)
        if not fam.route:
            raise _fail(f"plant.families[{i}].route", "a route needs at least one step", [])
        _check_range(f"plant.families[{i}].mix_weight", fam.mix_weight, *MIX_WEIGHT_RANGE)
        for k, step in enumerate(fam.route):
            if step.group not in group_names:
                raise _fail(f"plant.families[{i}].route[{k}].group", f"unknown group (groups: {group_names})",
                            step.group)
            _check_range(f"plant.families[{i}].route[{k}].mean_time", step.mean_time, 0.0, math.inf,
                         lo_open=True, hi_open=True)


def _check_fjsp(f: FJSPConfig, num_machines: int) -> None:
    for name, pair, lo, hi in (("ops_per_job", f.ops_per_job, 1, 1000),
                               ("eligible_machines", f.eligible_machines, 1, num_machines)):
        if not _is_pair(pair, _is_int) or not (lo <= pair[0] <= pair[1] <= hi):
            raise _fail(f"plant.fjsp.{name}", f"must be [min, max] of integers with {lo} <= min <= max <= {hi}",
                        pair)
    if not _is_pair(f.mean_time, _is_number) or not 0 < f.mean_time[0] <= f.mean_time[1]:
        raise _fail("plant.fjsp.mean_time", "must be [min, max] with 0 < min <= max", f.mean_time)
    _check_range("plant.fjsp.time_spread", f.time_spread, 0.0, 1.0, hi_open=True)


def _check_scale(scale: ScaleConfig) -> None:
    if (scale.num_jobs is None) == (scale.horizon is None):
        raise _fail("scale.horizon", "give exactly one of scale.num_jobs and scale.horizon (the other null)",
                    scale.horizon)
    if scale.num_jobs is not None and (not _is_int(scale.num_jobs) or scale.num_jobs < 2):
        raise _fail("scale.num_jobs", "must be an integer >= 2", scale.num_jobs)
    if scale.horizon is not None:
        _check_range("scale.horizon", scale.horizon, 0.0, math.inf, lo_open=True, hi_open=True)
    if not _is_int(scale.warm_start_jobs) or scale.warm_start_jobs < 0:
        raise _fail("scale.warm_start_jobs", "must be an integer >= 0", scale.warm_start_jobs)


def _check_targets(t: Targets, num_groups: int) -> None:
    for name in TARGET_RANGES:
        if name != "load_cv" or t.load_cv is not None:  # load_cv alone may be None: not calibrated
            check_target(name, getattr(t, name))
    if t.load_cv is not None and t.load_cv > math.sqrt(num_groups - 1):
        # the population CV of n non-negative loads peaks at sqrt(n - 1), all the load on one group
        raise _fail("targets.load_cv", f"the load CV of {num_groups} machine group(s) is at most "
                    f"sqrt({num_groups} - 1) = {math.sqrt(num_groups - 1):.3g}", t.load_cv)


def _check_events(e: EventRates) -> None:
    for name in ("cancellation", "emergency", "priority_change", "ptime_change", "batch_arrival", "route_change",
                 "rework", "due_date_change"):
        _check_range(f"events.{name}", getattr(e, name), 0.0, 1.0)
    _check_range("events.emergency_weight", e.emergency_weight, 0.0, MAX_EVENT_FACTOR, lo_open=True)
    _check_range("events.maintenance_duration", e.maintenance_duration, 0.0, math.inf, lo_open=True, hi_open=True)
    for name in ("maintenance_interval", "maintenance_duration_std"):
        _check_range(f"events.{name}", getattr(e, name), 0.0, math.inf, hi_open=True)
    _check_range("events.due_date_change_factor", e.due_date_change_factor, 0.0, MAX_EVENT_FACTOR)
    _check_range("events.batch_size_mean", e.batch_size_mean, 0.0, MAX_BATCH_SIZE, lo_open=True)
    _check_range("events.batch_size_std", e.batch_size_std, 0.0, MAX_BATCH_SIZE)
    if not isinstance(e.ptime_change_factors, (list, tuple)) or not e.ptime_change_factors:
        raise _fail("events.ptime_change_factors", "must be a non-empty list of numbers > 0", e.ptime_change_factors)
    for k, x in enumerate(e.ptime_change_factors):
        _check_range(f"events.ptime_change_factors[{k}]", x, 0.0, math.inf, lo_open=True, hi_open=True)


def _check_ptime_change_factors(factors: list[float], plant: PlantConfig) -> None:
    """Processing times stay in :data:`TIME_RANGE` after every factor (the generator draws one per job at most)."""
    times = operation_times(plant)
    shortest, longest = min(t[2] for t in times), max(t[3] for t in times)
    low, high = TIME_RANGE
    for k, x in enumerate(factors):
        if not (low <= shortest * x and longest * x <= high):
            raise _fail(f"events.ptime_change_factors[{k}]", f"turns processing times {shortest:.3g} to {longest:.3g} "
                        f"into {shortest * x:.3g} to {longest * x:.3g}; after every factor they must lie in [{low:g}, "
                        f"{high:g}] time units (scenario.TIME_RANGE)", x)


def _check_bottleneck_windows(windows: Any, plant: PlantConfig) -> None:
    _check_items("bottleneck_windows", windows, BottleneckWindow)
    names = [g.name for g in plant.groups]
    for i, w in enumerate(windows):
        where = f"bottleneck_windows[{i}]"
        if w.group not in names:
            raise _fail(f"{where}.group", f"unknown group (groups: {names})", w.group)
        if plant.fjsp is None and all(step.group != w.group for fam in plant.families for step in fam.route):
            raise _fail(f"{where}.group", "no route visits this group, so its window utilization is always 0",
                        w.group)
        _check_range(f"{where}.start", w.start, 0.0, 1.0, hi_open=True)
        _check_range(f"{where}.end", w.end, 0.0, 1.0, lo_open=True)
        if w.end <= w.start:
            raise _fail(f"{where}.end", f"must be > start ({w.start})", w.end)
        _check_range(f"{where}.utilization", w.utilization, 0.0, 1.0, lo_open=True, hi_open=True)


def _check_planned_jobs(s: Scenario) -> None:
    """The number of jobs the scale plans, and the warm start within it."""
    scale = s.scale
    jobs = planned_jobs(s)
    if not 2 <= jobs <= MAX_PLANNED_JOBS:
        field_name, value = ("scale.num_jobs", scale.num_jobs) if scale.num_jobs is not None else ("scale.horizon",
                                                                                                   scale.horizon)
        raise _fail(field_name, f"plans {jobs:.4g} jobs; a scenario plans 2 to {MAX_PLANNED_JOBS}", value)
    if scale.warm_start_jobs >= jobs:
        where = "num_jobs" if scale.num_jobs is not None else f"the {jobs} jobs the horizon holds"
        raise _fail("scale.warm_start_jobs", f"must be < {where}", scale.warm_start_jobs)


def _check_expected_size(s: Scenario) -> None:
    """The operations, and (operation, machine) pairs, the scenario expects: at most :data:`MAX_OPERATIONS` and
    :data:`MAX_OPERATION_MACHINE_PAIRS`."""
    jobs, per_job = expected_jobs(s), expected_feature_scales(s.plant)[1]
    operations, machines = jobs * per_job, sum(len(g.speeds) for g in s.plant.groups)
    if operations > MAX_OPERATIONS:
        field_name, value = ("scale.num_jobs", s.scale.num_jobs) if s.scale.num_jobs is not None else (
            "scale.horizon", s.scale.horizon)
        raise _fail(field_name, f"expects {operations:.6g} operations ({jobs:.6g} jobs, batch arrivals included, of "
                    f"{per_job:.6g} operations on average); a scenario expects at most {MAX_OPERATIONS}", value)
    if operations * machines > MAX_OPERATION_MACHINE_PAIRS:
        raise _fail("plant.groups", f"{machines} machines for {operations:.6g} expected operations make "
                    f"{operations * machines:.6g} (operation, machine) pairs; a scenario expects at most "
                    f"{MAX_OPERATION_MACHINE_PAIRS}", machines)


def operation_times(plant: PlantConfig) -> list[tuple[str, Any, float, float]]:
    """(field, value, shortest, longest) per route step, or for the FJSP range then its time spread: the expected
    processing times (mean time over speed) on the fastest and the slowest machine it may run on, before the gamma
    draws; the spread's entry widens the range's by the per-machine factors (:func:`spread_factors`)."""
    if plant.fjsp is not None:
        f = plant.fjsp
        speeds = [v for g in plant.groups for v in g.speeds]
        shortest, longest = f.mean_time[0] / max(speeds), f.mean_time[1] / min(speeds)
        below, above = spread_factors(f.time_spread, f.eligible_machines[1])
        return [("plant.fjsp.mean_time", f.mean_time, shortest, longest),
                ("plant.fjsp.time_spread", f.time_spread, shortest * below, longest * above)]
    speeds_of = {g.name: g.speeds for g in plant.groups}
    return [(f"plant.families[{i}].route[{k}].mean_time", step.mean_time, step.mean_time / max(speeds_of[step.group]),
             step.mean_time / min(speeds_of[step.group]))
            for i, fam in enumerate(plant.families) for k, step in enumerate(fam.route)]


def spread_factors(spread: float, machines: int) -> tuple[float, float]:
    """The infimum and supremum of the per-machine time factors of an FJSP operation on at most ``machines``
    machines: the generator draws them uniformly in [1 - spread, 1 + spread] and divides them by their mean, so one
    draw at an end and the others at the other end give the extremes."""
    if machines == 1:  # the one factor is exactly 1, which the formulas below may round below it
        return 1.0, 1.0
    return (machines * (1 - spread) / (machines * (1 + spread) - 2 * spread),
            machines * (1 + spread) / (machines * (1 - spread) + 2 * spread))


def _largest_spread(plant: PlantConfig) -> float:
    """The largest ``plant.fjsp.time_spread`` whose factors (:func:`spread_factors`) keep the FJSP range's times in
    :data:`TIME_RANGE` (solving them for the spread), where operations may run on two machines or more."""
    f = plant.fjsp
    c = f.eligible_machines[1]
    (_, _, shortest, longest), _ = operation_times(plant)
    low, high = TIME_RANGE
    return min(c * (shortest - low) / (shortest * c + low * (c - 2)),
               c * (high - longest) / (longest * c + high * (c - 2)))


def expected_job_work(plant: PlantConfig) -> float:
    """Mean nominal work of a job under the family mix (FJSP: from the ranges)."""
    if plant.fjsp is not None:
        f = plant.fjsp
        return (f.ops_per_job[0] + f.ops_per_job[1]) / 2 * (f.mean_time[0] + f.mean_time[1]) / 2
    weights = np.array([fam.mix_weight for fam in plant.families])
    works = np.array([sum(step.mean_time for step in fam.route) for fam in plant.families])
    return float(np.sum(weights * works) / weights.sum())


def expected_feature_scales(plant: PlantConfig) -> tuple[float, float]:
    """The plant's expected processing time of an operation (its nominal mean time times the mean of
    1 / speed over its eligible machines) and its expected number of operations per job, under the family
    mix (FJSP: from the ranges, eligible on any machine): the environments' feature scales for episodes drawn
    from the plant, fixed before any job arrives."""
    if plant.fjsp is not None:
        f = plant.fjsp
        every_machine = np.concatenate([np.asarray(g.speeds, dtype=np.float64) for g in plant.groups])
        return (f.mean_time[0] + f.mean_time[1]) / 2 * float(np.mean(1.0 / every_machine)), (
            f.ops_per_job[0] + f.ops_per_job[1]) / 2
    inverse_speed = {g.name: float(np.mean(1.0 / np.asarray(g.speeds, dtype=np.float64))) for g in plant.groups}
    weights = np.array([fam.mix_weight for fam in plant.families])
    ops = np.array([len(fam.route) for fam in plant.families])
    times = np.array([sum(step.mean_time * inverse_speed[step.group] for step in fam.route) for fam in plant.families])
    return float(weights @ times / (weights @ ops)), float(weights @ ops / weights.sum())


def jobs_per_arrival(rates: EventRates) -> float:
    """Expected number of jobs a planned arrival brings: 1, or with probability ``batch_arrival`` a batch of
    ``max(2, round(N(batch_size_mean, batch_size_std)))`` jobs (as the generator draws it)."""
    mean, std = rates.batch_size_mean, rates.batch_size_std
    if rates.batch_arrival == 0:
        return 1.0
    if std == 0:
        batch = max(2.0, float(round(mean)))
    else:
        def below(x: float) -> float:  # P(N(mean, std) < x)
            return 0.5 * (1.0 + math.erf((x - mean) / (std * math.sqrt(2.0))))

        bottom, top = max(3, math.floor(mean - 10.0 * std)), math.ceil(mean + 10.0 * std)
        batch = 2.0 * below(2.5) + sum(k * (below(k + 0.5) - below(k - 0.5)) for k in range(bottom, top + 1))
    return 1.0 + rates.batch_arrival * (batch - 1.0)


def planned_jobs(s: Scenario) -> float:
    """The number of planned jobs (warm-start jobs included, batch members not): ``scale.num_jobs``, or for a
    ``scale.horizon`` H as many as fill it at the utilization target, in expectation over batches:
    ``warm + (utilization * H * total speed / expected_job_work - warm) / jobs_per_arrival``, rounded.
    A float only when the horizon holds more than :data:`MAX_PLANNED_JOBS` (which validation refuses)."""
    if s.scale.num_jobs is not None:
        return s.scale.num_jobs
    speed = sum(v for g in s.plant.groups for v in g.speeds)
    total = s.targets.utilization * s.scale.horizon * speed / expected_job_work(s.plant)
    warm = s.scale.warm_start_jobs
    jobs = warm + max(total - warm, 0.0) / jobs_per_arrival(s.events)
    return round(jobs) if jobs <= MAX_PLANNED_JOBS else jobs


def expected_jobs(s: Scenario) -> float:
    """The number of jobs the scenario expects: its planned jobs, those that arrive with their batches
    (:func:`jobs_per_arrival`)."""
    warm = s.scale.warm_start_jobs
    return warm + (planned_jobs(s) - warm) * jobs_per_arrival(s.events)


def maintenance_fraction(s: Scenario, num_jobs: float, total_speed: float) -> tuple[float, float]:
    """The maintenance interval as a fraction of the horizon, and the horizon guessed for ``num_jobs`` jobs on
    machines of ``total_speed`` at the utilization target, which an interval above 1 (time units) and the windows'
    durations are relative to. Raises naming ``events.maintenance_interval`` where the generator would draw more
    than :data:`MAX_MAINTENANCE_WINDOWS` windows (one by one: an interval of 1e-7 hung it)."""
    interval = s.events.maintenance_interval
    horizon_guess = num_jobs * expected_job_work(s.plant) / (s.targets.utilization * total_speed)
    fraction = interval if interval <= 1 else interval / horizon_guess
    machines = sum(len(g.speeds) for g in s.plant.groups)
    if machines / fraction > MAX_MAINTENANCE_WINDOWS:
        raise _fail("events.maintenance_interval", f"gives about {machines / fraction:.3g} maintenance windows "
                    f"({machines} machines, one every {fraction:.3g} of the horizon guessed for {num_jobs:.4g} jobs); "
                    f"at most {MAX_MAINTENANCE_WINDOWS} are drawn", interval)
    return fraction, horizon_guess


def replace_targets(scenario: Scenario, **targets: float | None) -> Scenario:
    """A copy of ``scenario`` with some targets replaced (validated)."""
    data = scenario.to_dict()
    for name, value in targets.items():
        if name not in TARGET_NAMES:
            raise _fail(f"targets.{name}", f"unknown target (known: {', '.join(TARGET_NAMES)})", value)
        data["targets"][name] = value
    return Scenario.from_dict(data)

