"""SESC against the evolutionary baselines (CMA-ES, NSGA-II) on a grid of target vectors.

Target vectors: a Latin hypercube of ``--vectors`` points (numpy ``default_rng(GRID_SEED)``; in each
dimension one point at the midpoint of each of ``--vectors`` equal strata, strata permuted
independently per dimension) over utilization 0.5–0.9, due_date_tightness 1.5–5,
arrival_scv 0.5–2.5, processing_scv 0.2–1.5 and disturbance 0.02–0.15 (``load_cv`` not targeted).
Every vector × ``--seeds`` seeds (0, 1, ...) × method goes through
:func:`dynasched_gym.generation.calibrate` on the ``--size`` preset, the baselines with
``--budget`` evaluations. One untimed warm-up run per method loads the optimiser packages first.

Reported per method: success rate (``result.converged``: every tolerance met on the exported
instance), median over runs of the largest relative error, median wall time (``result.seconds``:
draft, calibration and build), the ratio of that median to SESC's, and the median number of metric
evaluations (``measure`` calls, SESC's bisection included).

Resumable: every finished run is appended to ``<out>.jsonl`` (``--out`` with the suffix ``.jsonl``, so an
``--out`` ending in ``.jsonl`` is refused; the whole file rewritten atomically, one row per run key) and
skipped on restart. A run is keyed by its target vector itself, not its index in the grid (the
Latin-hypercube points depend on ``--vectors``), and by what it ran on (:func:`code_key`: the size
preset and ``GENERATOR_VERSION``), so rows of another grid, preset or generator in the same
journal are kept but never reused; an unreadable line (e.g. a partial one left by an older writer) is
skipped with a warning. The summary and this grid's rows go to ``--out`` as JSON.

Usage: ``python -m scripts.calibrate_compare [--size medium] [--vectors 20] [--seeds 3] [--budget 600]
[--out .bench/calibrate_compare.json]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from dynasched_gym.cli import doc_summary, output_file_argument
from dynasched_gym.errors import MissingExtraError
from dynasched_gym.generation import (
    GENERATOR_VERSION,
    MAX_SEEDS,
    Scenario,
    calibrate,
    evolutionary,
    sesc,
    size_presets,
)
from dynasched_gym.generation.sesc import METHODS
from dynasched_gym.instance import write_text_atomic
from dynasched_gym.results import config_hash, read_jsonl
from scripts.interrupts import interrupted_exit
from scripts.journal import JournalWarning
from scripts.overrides import file_errors_exit

GRID_SEED = 20260
RANGES = {"utilization": (0.5, 0.9), "due_date_tightness": (1.5, 5.0), "arrival_scv": (0.5, 2.5),
          "processing_scv": (0.2, 1.5), "disturbance": (0.02, 0.15)}


def target_vectors(count: int) -> list[dict[str, float]]:
    """The deterministic Latin-hypercube target vectors (module docstring)."""
    rng = np.random.default_rng(GRID_SEED)
    unit = np.stack([(rng.permutation(count) + 0.5) / count for _ in RANGES], axis=1)
    return [{k: round(lo + (hi - lo) * float(u), 6) for (k, (lo, hi)), u in zip(RANGES.items(), row)}
            for row in unit]


@contextlib.contextmanager
def counting_measure() -> Iterator[list[int]]:
    """Count the metric evaluations of SESC and the baselines (patches their ``measure``)."""
    count = [0]
    original = sesc.measure

    def counted(inputs: Any) -> dict[str, float]:
        count[0] += 1
        return original(inputs)

    sesc.measure = evolutionary.measure = counted
    try:
        yield count
    finally:
        sesc.measure = evolutionary.measure = original


def code_key(scenario: Scenario) -> str:
    """The hash of what a run depends on besides its settings: the preset ``scenario`` and ``GENERATOR_VERSION``
    (runs of an older generator were reused, so a rerun to time a new one reported the old times)."""
    return config_hash({"scenario": scenario.to_dict(), "generator_version": GENERATOR_VERSION})


def run_key(row: dict[str, Any]) -> tuple:
    """What identifies one run (rows with the same key are the same run): size, target vector (its items,
    sorted), seed, method, budget (not SESC's: it takes none) and :func:`code_key` (None in rows written before it
    was kept). The vector's index is not part of it: it depends on ``--vectors``."""
    budget = None if row["method"] == "sesc" else row["budget"]  # SESC runs of any --budget are one run
    return (row["size"], tuple(sorted(row["targets"].items())), row["seed"], row["method"], budget, row.get("code"))


def run_one(scenario: Scenario, size: str, index: int, targets: dict[str, float], seed: int, method: str,
            budget: int) -> dict[str, Any]:
    """Calibrate once; the JSONL row."""
    options = {} if method == "sesc" else {"budget": budget}
    with counting_measure() as count:
        result = calibrate(scenario, targets, method=method, seed=seed, **options)
    return {"size": size, "vector": index, "seed": seed, "method": method,
            "budget": None if method == "sesc" else budget, "targets": targets,
            "converged": result.converged, "max_error": max(result.errors.values()), "errors": result.errors,
            "seconds": result.seconds, "evaluations": count[0], "steps": len(result.history)}


def load_rows(path: Path) -> dict[tuple, dict[str, Any]]:
    """Finished runs by key (:func:`run_key`); unreadable lines and rows without the key's fields are skipped
    with a warning (the file is only ever replaced whole, so such lines come from elsewhere)."""
    return {run_key(row): row for row in read_jsonl(path, run_key, JournalWarning)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per method: runs, success rate, median max error, median seconds, time ratio vs SESC, median evaluations."""
    out = {}
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        if mine:
            out[method] = {"runs": len(mine), "success": sum(r["converged"] for r in mine) / len(mine),
                           "median_max_error": statistics.median(r["max_error"] for r in mine),
                           "median_seconds": statistics.median(r["seconds"] for r in mine),
                           "median_evaluations": statistics.median(r["evaluations"] for r in mine)}
    if "sesc" in out:
        for stats in out.values():
            stats["time_ratio"] = stats["median_seconds"] / out["sesc"]["median_seconds"]
    return out


def table(summary: dict[str, dict[str, float]]) -> str:
    """The summary as a fixed-width table."""
    lines = [f"{'method':<7} {'runs':>5} {'success':>8} {'med max err':>12} {'med time':>10} {'x SESC':>8} "
             f"{'med evals':>10}"]
    for method, s in summary.items():
        ratio = f"{s['time_ratio']:.1f}" if "time_ratio" in s else "-"
        lines.append(f"{method:<7} {s['runs']:>5} {s['success']:>8.1%} {s['median_max_error']:>12.4f} "
                     f"{s['median_seconds'] * 1e3:>8.1f}ms {ratio:>8} {s['median_evaluations']:>10.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run (or resume) the comparison and print the table."""
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("--size", default="medium", choices=size_presets())
    parser.add_argument("--vectors", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--out", type=output_file_argument, default=".bench/calibrate_compare.json")
    args = parser.parse_args(argv)
    for name in ("vectors", "seeds", "budget"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.vectors * args.seeds > MAX_SEEDS:  # 10**10 vectors filled the memory drawing the Latin hypercube
        parser.error(f"--vectors x --seeds must be at most {MAX_SEEDS} (each is a calibration per method), got "
                     f"{args.vectors} x {args.seeds}")
    if args.budget > evolutionary.MAX_BUDGET:  # found by calibrate() only at the first baseline run, a traceback
        parser.error(f"--budget must be at most {evolutionary.MAX_BUDGET} (evaluations per run), got {args.budget}")

    journal = args.out.with_suffix(".jsonl")
    if journal == args.out:  # the summary, written last, replaced the journal: a rerun found no run to resume
        parser.error(f"--out must not end in .jsonl: the runs' journal is --out with the suffix .jsonl, here the same "
                     f"file, which the summary would overwrite (got {args.out})")
    try:  # before any work: a folder there was found after the warm-up and the first run
        output_file_argument(str(journal))
    except argparse.ArgumentTypeError as exc:
        parser.error(f"--out {args.out}: its journal cannot be written: {exc}")

    scenario = Scenario.preset(args.size)
    code = code_key(scenario)
    vectors = target_vectors(args.vectors)
    rows = load_rows(journal)
    plan = [(i, seed, method) for i in range(len(vectors)) for seed in range(args.seeds) for method in METHODS]
    keys = [run_key({"size": args.size, "targets": vectors[i], "seed": seed, "method": method, "budget": args.budget,
                     "code": code}) for i, seed, method in plan]
    pending = [job for job, key in zip(plan, keys) if key not in rows]
    if pending:
        try:
            for method in METHODS:  # untimed warm-up: imports of cma / pymoo, first-call caches
                calibrate(Scenario.preset("small"), method=method, seed=0,
                          **({} if method == "sesc" else {"budget": 20}))
        except MissingExtraError as exc:  # the calibration extra not installed: was a traceback
            parser.error(str(exc))
    for i, seed, method in tqdm(pending, desc=f"calibrate {args.size}", initial=len(plan) - len(pending),
                                total=len(plan)):
        row = {**run_one(scenario, args.size, i, vectors[i], seed, method, args.budget), "code": code}
        rows[run_key(row)] = row
        write_text_atomic(journal, "".join(json.dumps(r) + "\n" for r in rows.values()))

    mine = [rows[key] for key in keys]
    summary = summarise(mine)
    print(f"size={args.size} vectors={len(vectors)} seeds={args.seeds} budget={args.budget}")
    print(table(summary))
    config = {"size": args.size, "vectors": len(vectors), "seeds": args.seeds, "budget": args.budget,
              "grid_seed": GRID_SEED, "ranges": RANGES}
    write_text_atomic(args.out, json.dumps({"config": config, "target_vectors": vectors, "summary": summary,
                                            "rows": mine}, indent=1) + "\n")


if __name__ == "__main__":
    with file_errors_exit(), interrupted_exit("the runs finished so far are kept in the journal beside --out (default "
                                              ".bench/calibrate_compare.jsonl); rerun the same command to resume"):
        main()
