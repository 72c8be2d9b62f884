"""The evolutionary calibration baselines (CMA-ES, NSGA-II) on the small preset."""

from __future__ import annotations

import numpy as np
import pytest

from dynasched_gym.generation import Scenario, calibrate, draft
from dynasched_gym.generation.evolutionary import bounds, evolve
from dynasched_gym.generation.realised import measure
from dynasched_gym.generation.scenario import Tolerances
from dynasched_gym.generation.sesc import active_targets, knobs, relative_errors

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
