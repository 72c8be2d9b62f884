"""Evolutionary calibration baselines: CMA-ES (``cma``) and NSGA-II (``pymoo``) over SESC's knobs.

Both search exactly the knobs SESC edits (:mod:`dynasched_gym.generation.sesc`), each mapped
linearly onto [0, 1] from the search coordinate below, with bounds around the draft's initial
(target-derived) knob value x0:

==========================  ===========  ==========================  =================================
knob                        coordinate   bounds                      why
==========================  ===========  ==========================  =================================
``horizon``                 log          [x0 / 2, 2 x0]              utilization ~ 1/H, x0 exact already
``arrival_exponent``        linear       [0, x0 + 2]                 SESC ends in ~[0.4, 1.4]
``processing_exponent``     linear       [0, x0 + 1]                 SESC ends in ~[0.85, 1.4]
``due_scale``               log          [x0 / 2, 2 x0]              tightness ~ due_scale, x0 ~ exact
``downtime_scale``          log          [x0 / 50, 50 x0]            small plants need ~0.05 (SESC: <= 50)
``group_scale[g]``          log          [x0 / 4, 4 x0]              only when ``load_cv`` is targeted
``window_downtime[i]``      linear       [0, 0.95]                   per bottleneck window, as SESC
==========================  ===========  ==========================  =================================

Both evaluate a candidate exactly as SESC does: set the knobs, ``measure(d.metric_inputs())``,
relative error per target. The first evaluation is the initial knob vector (SESC's step 0).

- ``cmaes``: ``cma.CMAEvolutionStrategy`` on the unit box (``sigma0`` 0.1, default population
  4 + 3 ln n, sampling from ``numpy.random.default_rng(seed)``; numpy's global generator is left
  alone), minimising sum over targets of (relative error / tolerance)^2; restarts from
  the best point while budget is left when CMA-ES stops on its own criteria.
- ``nsga2``: pymoo ``NSGA2`` with one objective per target (relative error), the reference's
  operators (SBX prob 0.9 eta 15, PM eta 20, duplicates eliminated), population 12 (the reference
  uses 60) seeded with the initial vector plus uniform random points.

``sigma0`` and the NSGA-II population are the best of a small sweep (CMA-ES sigma0 0.05–0.3,
NSGA-II population 8–100) on the small and medium presets at a 600-evaluation budget, so the
baselines are tuned in their favour.

Both stop as soon as one candidate meets every tolerance, or after ``budget`` evaluations. The draft
ends at the best candidate evaluated: every tolerance met first, then the least score (the CMA-ES
objective; the sum of relative errors for NSGA-II, as in the reference's selection, here over
every candidate evaluated rather than the final population). A candidate whose processing times fall below
``MIN_PROCESSING_TIME`` (``Draft.shortest_time``; no instance may hold them) is never the best; where one scored
better than the candidate kept, a ``CalibrationWarning`` says so. The history has one record per
generation (0: the initial vector for CMA-ES, the initial population for NSGA-II) with the
evaluations so far and the best-so-far ``errors``, ``score``, ``worst``, ``worst_ratio``, ``within``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dynasched_gym.checks import check_integer, check_positive
from dynasched_gym.errors import needs_extra, user_stacklevel
from dynasched_gym.generation.generator import Draft
from dynasched_gym.generation.realised import measure
from dynasched_gym.generation.scenario import Tolerances
from dynasched_gym.generation.sesc import (
    CalibrationWarning,
    knobs,
    relative_errors,
    set_knobs,
    tolerance,
    within,
    worst_target,
)
from dynasched_gym.instance import MIN_PROCESSING_TIME

EVOLUTIONARY_METHODS = ("cmaes", "nsga2")
_DEFAULT_SIGMA0 = 0.1  # CMA-ES initial step size on the unit box
_NSGA2_POPSIZE = 12  # NSGA-II default population
_MIN_POPSIZE = {"cmaes": 2, "nsga2": 1}  # CMA-ES needs two samples to recombine
_LOG_KNOBS = ("horizon", "due_scale", "downtime_scale", "group_scale")
#: The most evaluations a calibration may spend: some 170 times the 600 the baselines were tuned at, 1-4 minutes on
#: the presets (0.6-2.2 ms an evaluation on the 2-core machine), and a history of at most as many records (one per
#: generation, about 0.6 KB each). More is a slip: 10**9 would run for a week or more.
MAX_BUDGET = 100_000


def bounds(d: Draft, load_cv: bool = False) -> dict[str, tuple[float, float]]:
    """Search bounds per knob (``group_scale[g]`` per group with ``load_cv``) around ``d``'s knobs."""
    out = {"horizon": (d.horizon / 2, d.horizon * 2),
           "arrival_exponent": (0.0, d.arrival_exponent + 2.0),
           "processing_exponent": (0.0, d.processing_exponent + 1.0),
           "due_scale": (d.due_scale / 2, d.due_scale * 2),
           "downtime_scale": (d.downtime_scale / 50, d.downtime_scale * 50)}
    if load_cv:
        out.update({f"group_scale[{g}]": (s / 4, s * 4) for g, s in enumerate(d.group_scale.tolist())})
    out.update({f"window_downtime[{i}]": (0.0, 0.95) for i in range(len(d.window_downtime))})
    for name, (lo, _) in out.items():
        if name.startswith(_LOG_KNOBS) and not lo > 0:
            raise ValueError(f"knob {name} must be > 0 to be searched on a log scale")
    return out


class _Search:
    """Unit-box encoding of the knobs plus the bookkeeping both methods share."""

    def __init__(self, d: Draft, targets: Mapping[str, float], tolerances: Tolerances, budget: int,
                 score: Callable[[Mapping[str, float]], float], tick: Callable[[], Any] | None) -> None:
        self.d, self.targets, self.tolerances, self.budget, self.score = d, targets, tolerances, budget, score
        self.tick = tick
        box = bounds(d, load_cv="load_cv" in targets)
        self.names = list(box)
        warp = [np.log if n.startswith(_LOG_KNOBS) else (lambda v: v) for n in self.names]
        self.lo = np.array([w(lo) for w, (lo, _) in zip(warp, box.values())])
        self.hi = np.array([w(hi) for w, (_, hi) in zip(warp, box.values())])
        self.is_log = np.array([n.startswith(_LOG_KNOBS) for n in self.names])
        self.num_groups = sum(n.startswith("group_scale[") for n in self.names)  # 0 unless load_cv is targeted
        self.x0 = self.encode(knobs(d))
        self.evaluations = 0
        self.best: tuple[tuple[bool, float], dict[str, float], dict[str, Any]] | None = None
        self.refused: tuple[tuple[bool, float], float] | None = None  # the best key whose times are too short
        self.history: list[dict[str, Any]] = []

    def encode(self, values: Mapping[str, Any]) -> np.ndarray:
        """Unit-box point of a knob snapshot (as :func:`~dynasched_gym.generation.sesc.knobs` returns)."""
        flat = [*(values[n] for n in self.names[:5]), *values["group_scale"][: self.num_groups],
                *values["window_downtime"]]
        flat = np.array(flat, dtype=np.float64)
        coordinate = np.where(self.is_log, np.log(np.where(self.is_log, flat, 1.0)), flat)  # no log of a linear 0
        return (coordinate - self.lo) / (self.hi - self.lo)

    def __call__(self, u: np.ndarray) -> dict[str, float]:
        """Set the knobs from unit-box point ``u``, measure, record; the relative errors."""
        x = self.lo + np.clip(u, 0.0, 1.0) * (self.hi - self.lo)
        x = np.where(self.is_log, np.exp(x), x)
        d = self.d
        d.horizon, d.arrival_exponent, d.processing_exponent, d.due_scale, d.downtime_scale = map(float, x[:5])
        if self.num_groups:
            d.group_scale = x[5:5 + self.num_groups].copy()
        d.window_downtime = x[5 + self.num_groups:].copy()
        errors = relative_errors(measure(d.metric_inputs()), self.targets)
        self.evaluations += 1
        if self.tick is not None:
            self.tick()
        key = (not within(errors, self.tolerances), self.score(errors))
        if self.best is None or key < self.best[0]:  # the times are checked only for a new best: it is rare
            shortest = d.shortest_time()
            if self.best is None or shortest >= MIN_PROCESSING_TIME:  # the first is the draft's own knobs
                self.best = (key, errors, knobs(d))
            elif self.refused is None or key < self.refused[0]:
                self.refused = (key, shortest)
        return errors

    @property
    def done(self) -> bool:
        """Budget spent, or a candidate met every tolerance."""
        return self.evaluations >= self.budget or (self.best is not None and not self.best[0][0])

    def record(self, generation: int) -> None:
        """Append the generation's record (best-so-far errors, evaluations so far)."""
        (missed, score), errors, _ = self.best
        worst, ratio = worst_target(errors, self.tolerances)
        self.history.append({"generation": generation, "evaluations": self.evaluations, "errors": dict(errors),
                             "score": score, "worst": worst, "worst_ratio": ratio, "within": not missed})

    def finish(self) -> list[dict[str, Any]]:
        """Leave the draft at the best candidate; the history."""
        set_knobs(self.d, self.best[2])
        if self.refused is not None and self.refused[0] < self.best[0]:
            warnings.warn(f"calibration: better candidates were refused, their processing times as short as "
                          f"{self.refused[1]:.3g}, below MIN_PROCESSING_TIME ({MIN_PROCESSING_TIME:g}); the best "
                          "candidate kept misses targets they met or came closer to (the plant's mean times, in a "
                          "finer time unit, would leave more room)", CalibrationWarning,
                          stacklevel=user_stacklevel())
        return self.history


def check_evolve_options(method: str, budget: int, popsize: int | None, sigma0: float | None) -> None:
    """Refuse a bad ``method`` or option of :func:`evolve` (its docstring says what each may be)."""
    if method not in EVOLUTIONARY_METHODS:
        raise ValueError(f"unknown evolutionary method {method!r}; one of {EVOLUTIONARY_METHODS}")
    check_integer("budget", budget, 1, MAX_BUDGET)
    if popsize is not None:
        check_integer("popsize", popsize, _MIN_POPSIZE[method])
        if popsize > budget:  # 10**9 allocated a population of 37 GiB to evaluate 10 of its members
            raise ValueError(f"popsize must be at most budget ({budget}): a larger population is never evaluated "
                             f"whole, got {popsize!r}")
    if sigma0 is not None:
        if method != "cmaes":
            raise ValueError(f"sigma0 is a CMA-ES option; {method} has no step size (got sigma0={sigma0!r})")
        check_positive("sigma0", sigma0)


def evolve(d: Draft, targets: Mapping[str, float], tolerances: Tolerances, method: str, seed: int,
           budget: int = 600, popsize: int | None = None, sigma0: float | None = None, *,
           tick: Callable[[], Any] | None = None) -> list[dict[str, Any]]:
    """Calibrate draft ``d`` in place with ``method`` (``cmaes`` | ``nsga2``); one history record per generation.

    ``budget`` (an integer in 1..:data:`MAX_BUDGET`) caps the evaluations; ``popsize`` overrides the population (an
    integer >= 2 for CMA-ES, >= 1 for NSGA-II, at most ``budget``; ``None``: CMA-ES default 4 + 3 ln n, NSGA-II 12);
    ``sigma0`` is CMA-ES's initial step size on the unit box (a finite number > 0, default 0.1),
    refused with ``nsga2``, which has no step size. ``tick``, if given, is called after each evaluation:
    :func:`~dynasched_gym.generation.sesc.calibrate`'s progress bar.
    """
    check_evolve_options(method, budget, popsize, sigma0)
    if method == "cmaes":
        search = _Search(d, targets, tolerances, budget,
                         lambda e: sum((v / tolerance(tolerances, k)) ** 2 for k, v in e.items()), tick)
        _cmaes(search, seed, popsize, _DEFAULT_SIGMA0 if sigma0 is None else sigma0)
    else:
        search = _Search(d, targets, tolerances, budget, lambda e: sum(e.values()), tick)
        _nsga2(search, seed, _NSGA2_POPSIZE if popsize is None else popsize)
    return search.finish()


def _cmaes(search: _Search, seed: int, popsize: int | None, sigma0: float) -> None:
    with needs_extra("calibration", "calibrate(method='cmaes')"):
        import cma

    search(search.x0)
    search.record(0)
    rng = np.random.default_rng(seed)  # cma samples through `randn`; numpy's global generator is left alone
    generation, restart = 0, 0
    while not search.done:
        options = {"bounds": [0.0, 1.0], "seed": np.nan, "randn": lambda *shape: rng.standard_normal(shape),
                   "verbose": -9, "verb_log": 0, "verb_disp": 0, **({"popsize": popsize} if popsize else {})}
        start = search.x0 if restart == 0 else search.encode(search.best[2])
        es = cma.CMAEvolutionStrategy(start, sigma0, options)
        while not search.done and not es.stop():
            candidates = es.ask()
            values = []
            for u in candidates:
                values.append(search.score(search(np.asarray(u))))
                if search.done:
                    break
            generation += 1
            search.record(generation)
            if len(values) == len(candidates):
                es.tell(candidates, values)
        restart += 1


def _nsga2(search: _Search, seed: int, popsize: int) -> None:
    with needs_extra("calibration", "calibrate(method='nsga2')"):
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.core.evaluator import Evaluator
        from pymoo.core.problem import Problem
        from pymoo.core.termination import NoTermination
        from pymoo.operators.crossover.sbx import SBX
        from pymoo.operators.mutation.pm import PM
        from pymoo.problems.static import StaticProblem

    n = len(search.x0)
    initial = np.vstack([search.x0, np.random.default_rng(seed).random((popsize - 1, n))])
    algorithm = NSGA2(pop_size=popsize, sampling=initial, crossover=SBX(prob=0.9, eta=15), mutation=PM(eta=20),
                      eliminate_duplicates=True)
    problem = Problem(n_var=n, n_obj=len(search.targets), xl=0.0, xu=1.0)
    algorithm.setup(problem, termination=NoTermination(), seed=seed, verbose=False)
    generation = 0
    while not search.done:
        population = algorithm.ask()
        objectives = []
        for u in population.get("X"):
            objectives.append(list(search(u).values()))
            if search.done:
                break
        search.record(generation)
        generation += 1
        if len(objectives) == len(population):
            Evaluator().eval(StaticProblem(problem, F=np.array(objectives)), population)
            algorithm.tell(infills=population)
