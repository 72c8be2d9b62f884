"""The evolutionary calibration baselines (CMA-ES, NSGA-II) on the small preset."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dynasched_gym.generation import Scenario, calibrate, draft, evolutionary
from dynasched_gym.generation.evolutionary import bounds, evolve
from dynasched_gym.generation.generator import Draft
from dynasched_gym.generation.realised import measure
from dynasched_gym.generation.scenario import Tolerances
from dynasched_gym.generation.sesc import CalibrationWarning, active_targets, knobs, relative_errors
from dynasched_gym.instance import MIN_PROCESSING_TIME as MIN

METHODS = ("cmaes", "nsga2")


def _scenario(tolerance: float | None = None, **targets: float) -> Scenario:
    data = Scenario.preset("small").to_dict()
    data["targets"].update(targets)
    if tolerance is not None:
        data["tolerances"] = {k: tolerance for k in data["tolerances"]}
    return Scenario.from_dict(data)


@pytest.mark.parametrize("method", METHODS)
def test_reaches_an_easy_target_and_stops_there(method: str) -> None:
    scenario = _scenario(tolerance=0.2, disturbance=0.1)
    for seed in range(3):
        result = calibrate(scenario, method=method, seed=seed, budget=600)
        assert result.converged, (seed, result.errors)
        last = result.history[-1]
        assert last["within"] and last["evaluations"] < 600  # stopped early, at the first success
        assert not any(record["within"] for record in result.history[:-1])
        assert [r["evaluations"] for r in result.history] == sorted(r["evaluations"] for r in result.history)


@pytest.mark.parametrize("method", METHODS)
def test_spends_the_budget_and_leaves_the_draft_at_the_best(method: str) -> None:
    scenario = _scenario(load_cv=0.4)  # load_cv targeted: group scales are searched too
    wanted = active_targets(scenario.targets)
    tight = Tolerances(**{k: 1e-6 for k in vars(Tolerances())})  # unreachable: no early stop
    d = draft(scenario, 3)
    box = bounds(d, load_cv=True)
    initial_groups = d.group_scale.copy()
    history = evolve(d, wanted, tight, method=method, seed=3, budget=120)
    assert history[-1]["evaluations"] == 120
    errors = relative_errors(measure(d.metric_inputs()), wanted)
    assert errors == pytest.approx(history[-1]["errors"], rel=1e-9, abs=1e-12)
    assert sum(errors.values()) < sum(history[0]["errors"].values())  # improved on the initial knobs
    values = {name: getattr(d, name) for name in ("horizon", "arrival_exponent", "processing_exponent",
                                                  "due_scale", "downtime_scale")}
    values.update({f"group_scale[{g}]": s for g, s in enumerate(d.group_scale)})
    assert set(values) == set(box)
    for name, (lo, hi) in box.items():
        assert lo * (1 - 1e-9) <= values[name] <= hi * (1 + 1e-9), name
    assert not np.allclose(d.group_scale, initial_groups)


@pytest.mark.parametrize("method", METHODS)
def test_deterministic_for_a_fixed_seed(method: str) -> None:
    scenario = _scenario()
    runs = [calibrate(scenario, method=method, seed=seed, budget=80) for seed in (5, 5, 6)]
    assert runs[0].history == runs[1].history
    assert runs[0].knobs == runs[1].knobs
    assert runs[0].metrics == runs[1].metrics
    assert runs[0].history != runs[2].history


def test_bounds_surround_the_initial_knobs() -> None:
    d = draft(_scenario(), 0)
    box = bounds(d)
    assert set(box) == {"horizon", "arrival_exponent", "processing_exponent", "due_scale", "downtime_scale"}
    for name, (lo, hi) in box.items():
        assert lo < getattr(d, name) < hi, name
    assert len(bounds(d, load_cv=True)) == 5 + len(d.group_names)


def test_rejects_unknown_methods_and_empty_budgets() -> None:
    scenario = _scenario()
    d = draft(scenario, 0)
    wanted = active_targets(scenario.targets)
    before = knobs(d)
    with pytest.raises(ValueError, match="unknown evolutionary method"):
        evolve(d, wanted, scenario.tolerances, method="ga", seed=0)
    with pytest.raises(ValueError, match="budget"):
        evolve(d, wanted, scenario.tolerances, method="cmaes", seed=0, budget=0)
    with pytest.raises(ValueError, match="method must be one of"):
        calibrate(scenario, method="ga")
    assert knobs(d) == before  # nothing was evaluated


def test_bounds_are_the_documented_box_around_the_initial_knobs() -> None:
    """The module docstring's table: horizon and due_scale x0/2..2x0, the exponents 0..x0+2 and 0..x0+1, downtime_scale
    x0/50..50x0, group scales x0/4..4x0 and each window's downtime 0..0.95; a log knob at 0 cannot be searched."""
    d = draft(_scenario(), 0)
    d.window_downtime = np.array([0.3, 0.0])  # two bottleneck windows
    expected = {"horizon": (d.horizon / 2, d.horizon * 2), "arrival_exponent": (0.0, d.arrival_exponent + 2.0),
                "processing_exponent": (0.0, d.processing_exponent + 1.0),
                "due_scale": (d.due_scale / 2, d.due_scale * 2),
                "downtime_scale": (d.downtime_scale / 50, d.downtime_scale * 50),
                **{f"group_scale[{g}]": (s / 4, s * 4) for g, s in enumerate(d.group_scale.tolist())},
                "window_downtime[0]": (0.0, 0.95), "window_downtime[1]": (0.0, 0.95)}
    assert bounds(d, load_cv=True) == expected
    d.downtime_scale = 0.0
    with pytest.raises(ValueError, match=r"knob downtime_scale must be > 0 to be searched on a log scale"):
        bounds(d)


#: load_cv targeted, so that the group scales are searched beside a bottleneck window's downtime
TARGETS = {"utilization": 0.7, "disturbance": 0.05, "load_cv": 0.3}
LOOSE = Tolerances(**{k: 0.01 for k in vars(Tolerances())})  # every scripted error misses it
OK = 1.0  # a shortest processing time an instance may hold
Scripted = Callable[[list[tuple[float, float]]], tuple[Draft, list[dict[str, Any]], dict[str, Any]]]


def _flat(values: dict[str, Any]) -> list[float]:
    """A knob snapshot (:func:`knobs`) as one list, scalars first."""
    scalars = [v for v in values.values() if not isinstance(v, list)]
    return [*scalars, *values["group_scale"], *values["window_downtime"]]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Scripted:
    """A draft (with one bottleneck window) whose evaluations are scripted in call order as (relative error of every
    target, shortest processing time), so the bookkeeping is tested whatever points the optimiser proposes; returns
    the draft, the knobs each evaluation saw and the initial knobs."""
    def setup(steps: list[tuple[float, float]]) -> tuple[Draft, list[dict[str, Any]], dict[str, Any]]:
        d = draft(_scenario(), 0)
        d.window_downtime = np.array([0.3])
        seen: list[dict[str, Any]] = []
        shortest = [OK]

        def measured(inputs: Any) -> dict[str, float]:
            error, shortest[0] = steps[len(seen)]
            seen.append(knobs(d))
            return {k: t * (1 + error) for k, t in TARGETS.items()}

        monkeypatch.setattr(evolutionary, "measure", measured)
        monkeypatch.setattr(Draft, "shortest_time", lambda self: shortest[0])
        return d, seen, knobs(d)
    return setup


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("steps", "kept", "refused"), [
    ([(0.5, OK), (0.3, MIN / 2), (0.1, MIN / 4), (0.2, OK)], 3, MIN / 4),  # the best refused one is named
    ([(0.5, OK), (0.3, MIN / 2), (0.2, OK), (0.4, OK)], 2, None),  # refused, but worse than the one kept
    ([(0.5, MIN / 2), (0.6, MIN / 2), (0.1, MIN / 8), (0.7, MIN / 2)], 0, MIN / 8),  # the draft's own knobs kept
])
def test_candidates_with_too_short_times_are_never_kept_and_a_better_one_is_warned_of(
        scripted: Scripted, method: str, steps: list[tuple[float, float]], kept: int, refused: float | None) -> None:
    d, seen, initial = scripted(steps)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = evolve(d, TARGETS, LOOSE, method=method, seed=0, budget=4, popsize={"cmaes": 2, "nsga2": 3}[method])
    warned = [str(w.message) for w in caught if issubclass(w.category, CalibrationWarning)]
    assert len(warned) == (refused is not None) and all(f"as short as {refused:.3g}," in m for m in warned), warned
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]  # no log is taken of a linear knob at 0
    assert _flat(seen[0]) == pytest.approx(_flat(initial), rel=1e-12)  # first: the initial vector, decoded
    assert len(seen) == 4 and knobs(d) == seen[kept]
    assert history[-1]["errors"] == pytest.approx(dict.fromkeys(TARGETS, steps[kept][0]))


@pytest.mark.parametrize(("method", "popsize", "evaluations"), [("cmaes", 2, [1, 3, 4]), ("nsga2", 3, [3, 4])])
def test_one_record_per_generation_scored_as_the_method_scores(scripted: Scripted, method: str, popsize: int,
                                                                evaluations: list[int]) -> None:
    """CMA-ES: generation 0 is the initial vector; NSGA-II: the initial population. The score: sum of (error /
    tolerance)^2 for CMA-ES, sum of errors for NSGA-II."""
    d, _, _ = scripted([(0.5, OK), (0.3, OK), (0.4, OK), (0.2, OK)])
    history = evolve(d, TARGETS, LOOSE, method=method, seed=0, budget=4, popsize=popsize)
    assert [r["generation"] for r in history] == list(range(len(evaluations)))
    assert [r["evaluations"] for r in history] == evaluations
    score = 3 * (0.2 / 0.01) ** 2 if method == "cmaes" else 3 * 0.2
    assert history[-1]["score"] == pytest.approx(score)


def test_cmaes_starts_with_its_options_and_restarts_from_the_best_knobs(scripted: Scripted,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cma = pytest.importorskip("cma")
    starts: list[tuple[np.ndarray, float, int | None]] = []

    class OneGeneration(cma.CMAEvolutionStrategy):
        """Stops after its first generation, so that the search restarts."""

        def __init__(self, x0: np.ndarray, sigma0: float, options: dict[str, Any]) -> None:
            starts.append((np.array(x0, dtype=np.float64), sigma0, options.get("popsize")))
            super().__init__(x0, sigma0, options)

        def stop(self) -> Any:
            return self.countiter >= 1 or super().stop()

    monkeypatch.setattr(cma, "CMAEvolutionStrategy", OneGeneration)
    d, seen, initial = scripted([(0.5, OK), (0.2, OK), (0.4, OK), (0.3, OK), (0.6, OK)])
    evolve(d, TARGETS, LOOSE, method="cmaes", seed=0, budget=5, popsize=2, sigma0=0.2)
    assert [(sigma0, popsize) for _, sigma0, popsize in starts] == [(0.2, 2), (0.2, 2)]
    # horizon, due_scale, downtime_scale and the group scales are searched on a log scale, x0 in the middle of its box
    assert starts[0][0][[0, 3, 4, 5]] == pytest.approx([0.5] * 4)
    # and the restart point is the best candidate's (its horizon over [x0 / 2, 2 x0], log-linear)
    assert starts[1][0][0] == pytest.approx(math.log(seen[1]["horizon"] / (initial["horizon"] / 2)) / math.log(4))
