"""SESC, the Sequential Event-Space Calibrator, and the common :func:`calibrate` entry point.

SESC measures the realised metrics of a draft, picks the target furthest outside its tolerance
(largest |error| / tolerance) and makes **one targeted edit** of the event space: it solves for
the one knob (see :mod:`dynasched_gym.generation.generator`) that moves that metric onto its
target with every other knob held, then measures again. Knobs and metrics are nearly decoupled
(utilization <- horizon, arrival_scv <- arrival exponent, processing_scv <- processing exponent,
due_date_tightness <- due scale, disturbance <- downtime scale, load_cv <- group scales,
bottleneck window i <- its window downtime), so a handful of steps suffice. Every measurement is
of the instance that is finally exported.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from dynasched_gym.checks import check_bool, check_choice, check_integer
from dynasched_gym.errors import user_stacklevel
from dynasched_gym.generation.generator import Draft, draft
from dynasched_gym.generation.realised import (
    WINDOW_METRIC,
    column_sums,
    measure,
    realised_metrics,
    window_index,
    window_metric,
)
from dynasched_gym.generation.scenario import (
    BottleneckWindow,
    Scenario,
    Targets,
    Tolerances,
    check_scenario,
    replace_targets,
)
from dynasched_gym.instance import MIN_PROCESSING_TIME, Instance

METHODS = ("sesc", "cmaes", "nsga2")
#: The most edits SESC may make (``max_steps``): 40 times the default 25. Of 1638 SESC runs on the presets with
#: targets and tolerances drawn at random (``max_steps=3000``), every one that stopped on its own did so within 192
#: steps; the 2 others cycled between two edits up to the cap. A step takes 1-55 ms on the
#: 2-core machine (the costliest, a bisection's 60 halvings on the large preset), so 1000 steps take at most a
#: minute, with a history of about 0.8 KB a step. More is a slip: a run that cycles with 10**9 would go on
#: for weeks, its history filling the memory.
MAX_STEPS = 1_000


class CalibrationWarning(UserWarning):
    """A calibrator kept a knob short of what its target asks, because the processing times would fall below
    :data:`~dynasched_gym.instance.MIN_PROCESSING_TIME`, which no instance may hold."""


@dataclass
class CalibrationResult:
    """Outcome of one calibration. ``metrics`` are measured on ``instance`` itself."""

    instance: Instance
    metrics: dict[str, float]
    targets: dict[str, float]
    errors: dict[str, float]  # relative error per target (absolute when the target is 0)
    converged: bool  # every target within its tolerance
    seconds: float
    method: str
    history: list[dict[str, Any]] = field(default_factory=list)  # one record per step / generation
    knobs: dict[str, Any] = field(default_factory=dict)


def active_targets(targets: Targets, windows: Sequence[BottleneckWindow] = ()) -> dict[str, float]:
    """The targets that are set (``load_cv`` may be None), then the utilization of each bottleneck window."""
    return {**{k: v for k, v in vars(targets).items() if v is not None},
            **{window_metric(i): w.utilization for i, w in enumerate(windows)}}


def tolerance(tolerances: Tolerances, name: str) -> float:
    """The tolerance of target ``name`` (every bottleneck window shares ``tolerances.bottleneck_window``)."""
    return getattr(tolerances, name if window_index(name) is None else WINDOW_METRIC)


def relative_errors(metrics: Mapping[str, float], targets: Mapping[str, float]) -> dict[str, float]:
    """|realised - target| / target per target (absolute error when the target is 0)."""
    return {k: abs(metrics[k] - t) / t if t > 0 else abs(metrics[k]) for k, t in targets.items()}


def within(errors: Mapping[str, float], tolerances: Tolerances) -> bool:
    """True when every error is inside its tolerance."""
    return all(err <= tolerance(tolerances, k) for k, err in errors.items())


def worst_target(errors: Mapping[str, float], tolerances: Tolerances) -> tuple[str, float]:
    """The target furthest outside its tolerance, and its error / tolerance ratio."""
    ratio = {k: err / tolerance(tolerances, k) for k, err in errors.items()}
    worst = max(ratio, key=ratio.get)
    return worst, ratio[worst]


def knobs(d: Draft) -> dict[str, Any]:
    """The calibration knobs of a draft (for reports and reproducibility)."""
    return {"horizon": d.horizon, "arrival_exponent": d.arrival_exponent,
            "processing_exponent": d.processing_exponent, "due_scale": d.due_scale,
            "downtime_scale": d.downtime_scale, "group_scale": d.group_scale.tolist(),
            "window_downtime": d.window_downtime.tolist()}


#: A scalar knob of a draft: how to read it and how to set it.
Knob = tuple[Callable[[Draft], float], Callable[[Draft, float], None]]


def _attribute(name: str) -> Knob:
    """The knob that is attribute ``name`` of the draft."""
    return (lambda d: getattr(d, name)), (lambda d, x: setattr(d, name, x))


def _window_downtime(index: int) -> Knob:
    """The downtime knob of bottleneck window ``index``."""
    return (lambda d: d.window_downtime[index]), (lambda d, x: d.window_downtime.__setitem__(index, x))


def _slack(target: float, tol: float) -> float:
    """How far from ``target`` a metric is "well inside" relative tolerance ``tol``."""
    return tol * max(target, 1e-12) / 4


def _closer(got: float, now: float, target: float, slack: float) -> bool:
    """A metric moving from ``now`` to ``got`` gets closer to ``target`` by more than ``slack``: an edit short of its
    target is kept only then (else it would creep towards it by rounding-sized steps, never marked out of reach)."""
    return abs(got - target) < abs(now - target) - slack


def _solve(d: Draft, knob: Knob, metric: str, target: float, lo: float, hi: float, tol: float) -> bool:
    """Set ``knob`` in [lo, hi] so that ``metric`` (increasing in the knob) reaches ``target``. A target beyond
    the range moves the knob to the nearer end only if that brings the metric closer (else the knob keeps its
    value, e.g. downtime in a window of an idle group); returns True when the target is beyond the range."""
    get, put = knob
    original = get(d)
    slack = _slack(target, tol)

    def value(x: float) -> float:
        put(d, x)
        return measure(d.metric_inputs())[metric]

    now = value(original)
    for end, beyond in ((hi, lambda got: got <= target), (lo, lambda got: got >= target)):
        got = value(end)
        if beyond(got):
            if not _closer(got, now, target, slack):
                value(original)
            return True
    for _ in range(60):  # bisection; stops as soon as the metric is well inside its tolerance
        mid = 0.5 * (lo + hi)
        got = value(mid)
        if abs(got - target) <= slack:
            break
        lo, hi = (mid, hi) if got < target else (lo, mid)
    return False


def _keep_times(d: Draft, knob: str, before: Any, wanted: Any, target: str, value: float, tol: float) -> bool:
    """Leave knob ``knob`` (an attribute of ``d``) at ``wanted``, the edit for target ``target`` (``value``,
    tolerance ``tol``), if the processing times stay ones an instance may hold (:meth:`Draft.shortest_time`); else
    at the point of the segment from ``before`` (whose times do) towards ``wanted`` where they stop doing so, found
    by bisection, if that brings the metric closer (:func:`_closer`), else at ``before``, with a
    :class:`CalibrationWarning`. Returns True in that case: the target is then beyond the knob's range."""
    setattr(d, knob, wanted)
    shortest = d.shortest_time()
    if shortest >= MIN_PROCESSING_TIME:
        return False
    held, short = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (held + short)
        setattr(d, knob, before + mid * (wanted - before))
        held, short = (mid, short) if d.shortest_time() >= MIN_PROCESSING_TIME else (held, mid)
    setattr(d, knob, before)
    now = measure(d.metric_inputs())[target]
    setattr(d, knob, before + held * (wanted - before))
    got = measure(d.metric_inputs())[target]
    if not _closer(got, now, value, _slack(value, tol)):
        setattr(d, knob, before)
        got = now
    warnings.warn(f"calibration: target {target} = {value:g} needs knob {knob} = {np.round(wanted, 4).tolist()}, "
                  f"which makes processing times as short as {shortest:.3g}, below MIN_PROCESSING_TIME "
                  f"({MIN_PROCESSING_TIME:g}); the knob stops at {np.round(getattr(d, knob), 4).tolist()}, where "
                  f"{target} is {got:.4g} (the plant's mean times, in a finer time unit, would leave it more room)",
                  CalibrationWarning, stacklevel=user_stacklevel())
    return True


def _edit_processing_scv(d: Draft, target: float, tol: float) -> bool:
    """Bisect the processing exponent in [0, 6] for processing_scv ``target`` (:func:`_solve`), kept to the
    exponents whose processing times an instance may hold (:func:`_keep_times`: exponents above 1 shrink the
    shortest base times)."""
    before = d.processing_exponent
    beyond = _solve(d, _attribute("processing_exponent"), "processing_scv", target, 0.0, 6.0, tol)
    return (_keep_times(d, "processing_exponent", before, d.processing_exponent, "processing_scv", target, tol)
            or beyond)


def _edit_load_cv(d: Draft, target: float, tol: float) -> bool:
    """Spread the group loads around their mean so that their CV becomes ``target`` (via the group scales), kept to
    the scales whose processing times an instance may hold (:func:`_keep_times`)."""
    inputs = d.metric_inputs()
    machine_work = column_sums(inputs.op_work, inputs.op_machine_share)
    num_groups = len(d.group_names)
    work = np.bincount(d.machine_group, weights=machine_work, minlength=num_groups)
    speed = np.bincount(d.machine_group, weights=d.machine_speed, minlength=num_groups)
    rho = work / speed  # proportional to the group utilisations; only ratios matter
    mean = rho.mean()
    current = rho.std() / mean
    k = target / current if current > 0 else 0.0
    wanted = np.maximum(mean + k * (rho - mean), 0.05 * mean)
    return _keep_times(d, "group_scale", d.group_scale, d.group_scale * wanted / rho, "load_cv", target, tol)


# metric -> how SESC edits its knob. :func:`sesc` calls every edit the same way, edit(draft, metrics,
# target, tolerance), so each takes all four; the `_`-prefixed ones are those that edit does not need
# (the closed-form utilization and due-date edits need no tolerance, bisections and the load-CV edit measure for
# themselves). An edit returns True when its target is beyond its knob's range (bisections, and the edits that
# change processing times when they are kept short of their target; the others return None).
_EDITS: dict[str, Callable[[Draft, Mapping[str, float], float, float], bool | None]] = {
    "utilization": lambda d, m, t, _tol: setattr(d, "horizon", d.horizon * m["utilization"] / t),
    "due_date_tightness": lambda d, m, t, _tol: setattr(d, "due_scale", d.due_scale * t / m["due_date_tightness"]),
    "arrival_scv": lambda d, _m, t, tol: _solve(d, _attribute("arrival_exponent"), "arrival_scv", t, 0.0, 8.0, tol),
    "processing_scv": lambda d, _m, t, tol: _edit_processing_scv(d, t, tol),
    "disturbance": lambda d, _m, t, tol: _solve(d, _attribute("downtime_scale"), "disturbance", t, 0.0, 50.0, tol),
    "load_cv": lambda d, _m, t, tol: _edit_load_cv(d, t, tol),
}


def _edit(name: str) -> Callable[[Draft, Mapping[str, float], float, float], bool | None]:
    """The edit of target ``name``: one of :data:`_EDITS`, or the bisection of a bottleneck window's downtime
    (up to 95 % of the window on each of the group's machines)."""
    if name in _EDITS:
        return _EDITS[name]
    knob = _window_downtime(window_index(name))
    return lambda d, _m, t, tol: _solve(d, knob, name, t, 0.0, 0.95, tol)


def sesc(d: Draft, targets: Mapping[str, float], tolerances: Tolerances, max_steps: int = 25, *,
         tick: Callable[[], Any] | None = None) -> tuple[bool, list[dict[str, Any]]]:
    """Run SESC on draft ``d`` in place; returns (converged, per-step history).

    ``max_steps`` (an integer in 0..:data:`MAX_STEPS`) caps the edits; 0 measures the draft as drawn and edits
    nothing. ``tick``, if given, is called once per step (at most ``max_steps + 1``), after its measurement:
    :func:`calibrate`'s progress bar.

    An edit that changes no knob (its target is beyond the knob's range, e.g. an ``arrival_scv`` below
    the floor batch arrivals set) marks that target out of reach: SESC then edits the worst of the
    others, and tries it again after any edit that changes a knob. An edit whose target is beyond its
    knob's range is undone (and its target marked out of reach) when it would put more of the other
    targets out of tolerance: a window's downtime held at 95 % still short of its target must not cost
    the ``disturbance`` target too. SESC stops when only out-of-reach targets are left out of tolerance.
    Unconverged, the draft ends at the state with the fewest targets out of tolerance (then the least sum
    of their error / tolerance ratios). The edits that change processing times (``processing_scv``, ``load_cv``)
    stop, with a :class:`CalibrationWarning`, where the shortest would fall below ``MIN_PROCESSING_TIME``
    (:func:`_keep_times`), their target then beyond the knob's range: every state is one an instance may hold.
    """
    check_integer("max_steps", max_steps, 0, MAX_STEPS)
    history = []
    best: tuple[tuple[int, float], dict[str, Any]] | None = None
    out_of_reach: set[str] = set()
    for step in range(max_steps + 1):
        metrics = measure(d.metric_inputs())
        errors = relative_errors(metrics, targets)
        worst, ratio = worst_target(errors, tolerances)
        record = {"step": step, "metrics": metrics, "errors": errors, "worst": worst, "worst_ratio": ratio,
                  "knobs": knobs(d)}
        history.append(record)
        if tick is not None:
            tick()
        missed = _missed(errors, tolerances)
        if best is None or (len(missed), sum(missed.values())) < best[0]:
            best = ((len(missed), sum(missed.values())), knobs(d))
        if ratio <= 1.0 or step == max_steps:
            break
        reachable = {k: err for k, err in errors.items() if k not in out_of_reach}
        target, target_ratio = worst_target(reachable, tolerances) if reachable else (worst, 0.0)
        if target_ratio <= 1.0:
            break
        record["edit"] = target
        before = record["knobs"]
        beyond = _edit(target)(d, metrics, targets[target], tolerance(tolerances, target))
        if beyond:
            others = set(_missed(relative_errors(measure(d.metric_inputs()), targets), tolerances)) - {target}
            if len(others) > len(set(missed) - {target}):
                set_knobs(d, before)
        if knobs(d) == before:
            out_of_reach.add(target)
        else:
            out_of_reach.clear()
    set_knobs(d, best[1])
    return best[0][0] == 0, history


def _missed(errors: Mapping[str, float], tolerances: Tolerances) -> dict[str, float]:
    """The error / tolerance ratio of each target out of tolerance."""
    return {k: err / tolerance(tolerances, k) for k, err in errors.items() if err > tolerance(tolerances, k)}


def set_knobs(d: Draft, values: Mapping[str, Any]) -> None:
    """Set a draft's knobs from a :func:`knobs` snapshot."""
    for name, value in values.items():
        setattr(d, name, np.array(value) if isinstance(value, list) else value)


def _with_defaults(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Every option of ``method`` (one of :data:`METHODS`), as given in ``options`` or else its default; a ValueError
    names those it does not take. The options are the search's parameters with defaults, but for the keyword-only ones,
    which :func:`calibrate` sets itself (``tick``)."""
    from dynasched_gym.generation.evolutionary import evolve

    search = sesc if method == "sesc" else evolve
    defaults = {name: p.default for name, p in inspect.signature(search).parameters.items()
                if p.default is not inspect.Parameter.empty and p.kind is not inspect.Parameter.KEYWORD_ONLY}
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} of method {method!r}; it takes {', '.join(defaults)}")
    return {**defaults, **options}


def check_calibration(method: str, seed: Any, **options: Any) -> int:
    """Refuse a bad ``method``, ``seed`` or option of :func:`calibrate` (unknown to the method, or a bad value)
    before any work: :func:`calibrate` would find them only after the draft. Returns the seed."""
    seed = check_integer("seed", seed, 0)
    check_choice("method", method, METHODS)
    from dynasched_gym.generation.evolutionary import check_evolve_options

    values = _with_defaults(method, options)
    if method == "sesc":
        check_integer("max_steps", values["max_steps"], 0, MAX_STEPS)
    else:
        check_evolve_options(method, **values)
    return seed


def calibrate(scenario: Scenario, targets: Targets | Mapping[str, float] | None = None, method: str = "sesc",
              seed: int = 0, progress: bool = False, **options: Any) -> CalibrationResult:
    """Generate one instance of ``scenario`` and calibrate it to ``targets`` (default: the scenario's).

    ``method`` is ``"sesc"`` (``max_steps``), or an evolutionary baseline ``"cmaes"`` / ``"nsga2"``
    searching the same knobs (``budget`` evaluations); see :mod:`dynasched_gym.generation.evolutionary`.
    ``seed`` is an integer >= 0 (NumPy integers too, bools not), as in
    :func:`~dynasched_gym.generation.generator.draft`. ``progress`` shows a tqdm bar on stderr over the SESC steps
    (``max_steps + 1`` at most) or the evaluations (``budget``), full once the calibration ends, also early.
    """
    seed = check_calibration(method, seed, **options)
    check_bool("progress", progress)
    check_scenario("scenario", scenario)
    if targets is not None and not isinstance(targets, (Targets, Mapping)):
        raise TypeError(f"targets must be a Targets, a mapping such as {{'utilization': 0.6}} or None, got "
                        f"{type(targets).__name__}: {targets!r:.80}")
    from dynasched_gym.generation.evolutionary import evolve

    if targets is not None:
        values = vars(targets) if isinstance(targets, Targets) else dict(targets)
        scenario = replace_targets(scenario, **values)
    wanted = active_targets(scenario.targets, scenario.bottleneck_windows)
    chosen = _with_defaults(method, options)
    total, unit = (chosen["max_steps"] + 1, "step") if method == "sesc" else (chosen["budget"], "evaluation")
    began = time.perf_counter()
    d = draft(scenario, seed)
    with tqdm(total=total, desc=f"calibrate {method}", unit=unit, disable=not progress) as bar:
        if method == "sesc":
            _, history = sesc(d, wanted, scenario.tolerances, **options, tick=bar.update)
        else:
            history = evolve(d, wanted, scenario.tolerances, method=method, seed=seed, **options, tick=bar.update)
        bar.total = bar.n  # a calibration that met every target stopped early: it is done all the same
    instance = d.build()
    seconds = time.perf_counter() - began
    metrics = realised_metrics(instance, scenario.bottleneck_windows)
    errors = relative_errors(metrics, wanted)
    return CalibrationResult(instance=instance, metrics=metrics, targets=wanted, errors=errors,
                             converged=within(errors, scenario.tolerances), seconds=seconds, method=method,
                             history=history, knobs=knobs(d))

