"""Does the SSI predict empirical difficulty? Generate many calibrated instances and compare.

Instances: ``--instances`` target vectors drawn by Latin hypercube sampling over the generator's
range (utilization 0.2-0.95, due_date_tightness 1-8, arrival_scv 0.2-3, processing_scv 0.1-2,
disturbance 0-0.2), alternating the ``small`` and ``medium`` presets, each calibrated with SESC.
For each: the SSI (no simulation) and the empirical difficulty (mean normalised weighted
tardiness over the rule portfolio, :mod:`dynasched_gym.generation.difficulty`).

Reports Spearman's rank correlation, per-tier median and inter-quartile range of the empirical
difficulty, whether medians strictly increase and adjacent IQRs are disjoint, per size preset the Spearman and the
mean log ratio of the difficulty to the SSI's estimate of it, and writes a scatter
plot and the rows (JSONL) under ``--out``. Finished rows are appended as they complete, so an
interrupted run resumes where it stopped. A row is reused only for the design it was computed for: its
index, size and target vector must be this run's (the Latin-hypercube targets depend on
``--instances``), and so must its code (:func:`code_key`: the size preset, generator and SSI versions and rule
portfolio), so rows of another ``--instances``, or computed by an older SSI, in the same file are ignored (and
kept); a partial last line (a killed writer) is skipped with a warning and cut off.

Usage: ``python -m scripts.validate_ssi [--instances 320] [--out .bench/ssi]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from dynasched_gym.checks import is_finite_real
from dynasched_gym.cli import doc_summary, output_folder_argument
from dynasched_gym.errors import InstanceFormatError, MissingExtraError
from dynasched_gym.generation import GENERATOR_VERSION, MAX_SEEDS, SSI_VERSION, TIERS, Scenario, calibrate, ssi
from dynasched_gym.generation.difficulty import PORTFOLIO, empirical_difficulty
from dynasched_gym.generation.stress_index import score_stress
from dynasched_gym.instance import write_text_atomic
from dynasched_gym.results import config_hash, read_jsonl
from dynasched_gym.viz._mpl import blank_figure, import_matplotlib, save_figure
from scripts.interrupts import interrupted_exit
from scripts.journal import JournalWarning, append_rows
from scripts.overrides import file_errors_exit

RANGES = {
    "utilization": (0.2, 0.95),
    "due_date_tightness": (1.0, 8.0),
    "arrival_scv": (0.2, 3.0),
    "processing_scv": (0.1, 2.0),
    "disturbance": (0.0, 0.2),
}
SIZES = ("small", "medium")


def target_vectors(count: int, seed: int = 2026) -> list[dict[str, float]]:
    """``count`` Latin-hypercube target vectors over :data:`RANGES` (deterministic)."""
    rng = np.random.default_rng(seed)
    columns = {}
    for name, (lo, hi) in RANGES.items():
        strata = (rng.permutation(count) + rng.random(count)) / count
        columns[name] = lo + strata * (hi - lo)
    return [{name: float(columns[name][i]) for name in RANGES} for i in range(count)]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN for fewer than two values or a constant column."""

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for value in np.unique(v):
            tied = v == value
            r[tied] = r[tied].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    if len(x) < 2 or np.ptp(rx) == 0 or np.ptp(ry) == 0:  # undefined (NumPy warns and gives NaN)
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def evaluate(index: int, targets: dict[str, float]) -> dict:
    """One row: targets, SSI and empirical difficulty of one calibrated instance."""
    size = SIZES[index % len(SIZES)]
    result = calibrate(Scenario.preset(size), targets=targets, seed=index)
    index_ = ssi(result.instance)
    return {"index": index, "size": size, "targets": targets, "converged": result.converged,
            "ssi": index_.score, "tier": index_.tier, "components": index_.components,
            "difficulty": empirical_difficulty(result.instance)}


def size_statistics(table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per size preset: its instances, Spearman(SSI, empirical difficulty), and the mean of log(difficulty /
    stress) over its instances where both are > 0 (stress: the SSI's estimate of the difficulty, from the score;
    below 0 where the SSI overestimates); None where undefined (a constant column, no such instance)."""
    figures = {}
    for size in dict.fromkeys(r["size"] for r in table):
        rows = [r for r in table if r["size"] == size]
        score = np.array([r["ssi"] for r in rows])
        difficulty = np.array([r["difficulty"] for r in rows])
        stress = score_stress(score)
        both = (difficulty > 0) & (stress > 0) & np.isfinite(stress)
        rho = spearman(score, difficulty)
        figures[size] = {"instances": len(rows), "spearman": float(rho) if np.isfinite(rho) else None,
                         "mean_log_residual": float(np.mean(np.log(difficulty[both] / stress[both])))
                         if both.any() else None, "residual_instances": int(both.sum())}
    return figures


def _number(value: float | None) -> str:
    """``value`` to three decimals, ``-`` for None."""
    return "-" if value is None else f"{value:.3f}"


def code_key(size: str) -> str:
    """The hash of what a row of size preset ``size`` depends on besides its target vector: the preset's scenario,
    the generator and SSI versions and the rule portfolio (a row of an older SSI, reused, reported its score as this
    code's)."""
    return config_hash({"scenario": Scenario.preset(size).to_dict(), "generator_version": GENERATOR_VERSION,
                        "ssi_version": SSI_VERSION, "portfolio": list(PORTFOLIO)})


def _statistics_read(row: dict[str, Any]) -> None:
    """Raise a ValueError unless ``row`` holds what the statistics read (``ssi`` and ``difficulty`` finite
    numbers, ``tier`` one of TIERS, ``converged`` a bool): such a line is skipped with a warning naming it, and its
    instance computed again."""
    if not (is_finite_real(row.get("ssi")) and is_finite_real(row.get("difficulty")) and row.get("tier") in TIERS
            and isinstance(row.get("converged"), bool)):
        raise ValueError("a row holds finite numbers ssi and difficulty, a tier and a bool converged")


def design_rows(stored: list[dict[str, Any]], vectors: list[dict[str, float]], codes: dict[str, str]
                ) -> tuple[dict[int, dict], int]:
    """The stored rows of this design by index (index, size, target vector and code, ``codes[size]``, all match),
    and how many rows belong to another design."""
    rows, foreign = {}, 0
    for row in stored:
        i = row.get("index")
        if isinstance(i, int) and 0 <= i < len(vectors) and row.get("size") == SIZES[i % len(SIZES)] \
                and row.get("targets") == vectors[i] and row.get("code") == codes[row["size"]]:
            rows.setdefault(i, row)
        else:
            foreign += 1
    return rows, foreign


def main(argv: list[str] | None = None) -> None:
    """Compute (or resume) the rows of ``--instances`` target vectors, print and write the statistics."""
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("--instances", type=int, default=320)
    parser.add_argument("--out", type=output_folder_argument, default=".bench/ssi")
    args = parser.parse_args(argv)
    if not 2 <= args.instances <= MAX_SEEDS:  # 10**10 filled the memory drawing the Latin hypercube
        parser.error(f"--instances must be in 2..{MAX_SEEDS} (a rank correlation needs two points; each is an "
                     f"instance to calibrate), got {args.instances}")
    try:  # before the instances: the figure is drawn at the end
        import_matplotlib("matplotlib.figure")
    except (InstanceFormatError, MissingExtraError) as exc:
        parser.error(str(exc))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    vectors = target_vectors(args.instances)
    codes = {size: code_key(size) for size in SIZES}
    rows, foreign = design_rows(read_jsonl(rows_path, _statistics_read, JournalWarning, repair=True), vectors, codes)
    if foreign:
        print(f"{rows_path}: ignoring {foreign} row(s) of another design (another --instances: other "
              "Latin-hypercube targets; or another size preset, generator or SSI version)", file=sys.stderr)
    pending = [i for i in range(args.instances) if i not in rows]
    print(f"{args.instances} instances: {args.instances - len(pending)} reused from {rows_path}, "
          f"{len(pending)} to compute", file=sys.stderr)
    for i in tqdm(pending, desc="instances", unit="instance", initial=args.instances - len(pending),
                  total=args.instances):
        rows[i] = {**evaluate(i, vectors[i]), "code": codes[SIZES[i % len(SIZES)]]}
        append_rows(rows_path, [rows[i]])
    table = [rows[i] for i in range(args.instances)]
    score = np.array([r["ssi"] for r in table])
    difficulty = np.array([r["difficulty"] for r in table])
    rho = spearman(score, difficulty)
    print(f"\n{len(table)} instances; rule portfolio {', '.join(PORTFOLIO)}; "
          f"{sum(r['converged'] for r in table)} calibrated within tolerance")
    print(f"Spearman(SSI, empirical difficulty) = {rho:.3f}   (target >= 0.85)")
    print(f"{'tier':>8} {'n':>4} {'median':>9} {'q25':>9} {'q75':>9}")
    stats = []
    for tier in TIERS:
        d = difficulty[[r["tier"] == tier for r in table]]
        if d.size:
            q25, med, q75 = np.percentile(d, [25, 50, 75])
            stats.append((tier, med, q25, q75))
            print(f"{tier:>8} {d.size:>4} {med:>9.3f} {q25:>9.3f} {q75:>9.3f}")
        else:
            print(f"{tier:>8} {0:>4}")
    increasing = all(a[1] < b[1] for a, b in itertools.pairwise(stats)) and len(stats) == len(TIERS)
    disjoint = all(a[3] < b[2] for a, b in itertools.pairwise(stats)) and len(stats) == len(TIERS)
    print(f"tier medians strictly increasing: {increasing}; adjacent IQRs disjoint: {disjoint}")
    sizes = size_statistics(table)
    print(f"{'size':>8} {'n':>4} {'Spearman':>9}  mean log(difficulty / SSI stress), over n with both > 0")
    for size, figures in sizes.items():
        residual = figures["mean_log_residual"]
        print(f"{size:>8} {figures['instances']:>4} {_number(figures['spearman']):>9}  "
              f"{_number(residual)} ({figures['residual_instances']})")
    _plot(score, difficulty, [r["tier"] for r in table], rho, out / "ssi_vs_difficulty.png")
    summary = {"instances": len(table), "spearman": rho if np.isfinite(rho) else None,  # NaN: a constant column
               "tiers": stats, "medians_increasing": increasing, "iqrs_disjoint": disjoint, "sizes": sizes}
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=1, allow_nan=False, default=float))
    print(f"written to {out}/ (rows.jsonl, summary.json, ssi_vs_difficulty.png)")


def _plot(score: np.ndarray, difficulty: np.ndarray, tiers: list[str], rho: float, path: Path) -> None:
    fig = blank_figure(None, 6.0, 4.0, 120)
    ax = fig.subplots()
    for tier in TIERS:
        mask = np.array([t == tier for t in tiers])
        ax.scatter(score[mask], difficulty[mask] + 1e-4, s=10, label=tier)
    ax.set_yscale("log")
    ax.set_xlabel("SSI score")
    ax.set_ylabel("empirical difficulty (normalised weighted tardiness)")
    ax.set_title(f"SSI vs empirical difficulty (Spearman {rho:.2f})")
    ax.legend()
    save_figure(fig, path)


if __name__ == "__main__":
    with file_errors_exit(), interrupted_exit("the rows computed so far are kept in rows.jsonl under --out (default "
                                              ".bench/ssi); rerun the same command to resume"):
        main()
