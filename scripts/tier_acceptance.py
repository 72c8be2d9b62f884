"""How often do the tier priors hit their tier? The acceptance table of docs/generation.md, counted.

For each size preset, tier and seed 0..n-1 this replays the attempts at that tier pool member
(:func:`dynasched_gym.generation.tiers.attempts`: those :func:`~dynasched_gym.generation.tiers.generate_member`
makes, up to the first accepted one) and records how many attempts it took, whether one was accepted, the
accepted instance's SSI score, and why the others were rejected (the calibration did not converge, or the
score fell in another tier).

Printed and written as ``table.md`` (with ``summary.json`` and the rows, ``rows.jsonl``, under ``--out``): per
size and tier, the acceptance rate (accepted seeds / attempts) with the median SSI score of accepted instances,
and the rejected attempts by cause. Seeds default to 100 per tier for the small and medium presets and 40 for
large (``--seeds`` sets one count for all). Rows are appended as seeds
finish, so an interrupted run resumes where it stopped; a row is reused only for the pool it was counted for
(its cache key: preset, prior, generator and SSI versions, calibration), so rows of an older prior are
ignored (and kept).

Usage: ``python -m scripts.tier_acceptance [--sizes small,medium,large] [--tiers easy,medium,hard,extreme]
[--seeds N] [--workers 2] [--out .bench/tier_acceptance]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from concurrent.futures import as_completed
from typing import Any

import numpy as np
from tqdm import tqdm

from dynasched_gym.cli import doc_summary, output_folder_argument
from dynasched_gym.generation import MAX_SEEDS, TIERS
from dynasched_gym.generation.scenario import size_presets
from dynasched_gym.generation.tiers import attempts, key_inputs, pool_key
from dynasched_gym.instance import write_text_atomic
from dynasched_gym.results import read_jsonl
from scripts.interrupts import WorkerPool, interrupted_exit, stop_workers
from scripts.journal import JournalWarning, append_rows
from scripts.overrides import file_errors_exit
from scripts.peers._common import count

#: Seeds per tier of each size preset in the documented table (large is about three times slower a seed).
DEFAULT_SEEDS = {"small": 100, "medium": 100, "large": 40}
SIZES = tuple(DEFAULT_SEEDS)
#: The fields of a row (:func:`count_seed`); a journal line without all of them is skipped with a warning.
ROW_FIELDS = ("key", "size", "tier", "seed", "attempts", "accepted_score", "not_converged", "rejected_scores")


def count_seed(inputs: dict[str, Any], seed: int) -> dict[str, Any]:
    """The row of one pool member: its attempts until the first accepted one (all of them when none is)."""
    rejected_scores: list[float] = []
    not_converged = 0
    accepted_score = None
    for attempt in attempts(inputs, seed):
        if attempt.accepted:
            accepted_score = attempt.score
            break
        if attempt.converged:
            rejected_scores.append(attempt.score)
        else:
            not_converged += 1
    return {"key": pool_key(inputs), "size": inputs["size"], "tier": inputs["tier"], "seed": seed,
            "attempts": len(rejected_scores) + not_converged + (accepted_score is not None),
            "accepted_score": accepted_score, "not_converged": not_converged, "rejected_scores": rejected_scores}


def _comma_list(known: tuple[str, ...]) -> Any:
    """An argparse type: comma-separated names out of ``known``, in the order given, each once (a repeated or empty
    name was dropped without a word)."""
    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",")]
        for i, name in enumerate(names):
            if name not in known:
                which = f"{name!r} is none of them" if name else "an empty name"
                raise argparse.ArgumentTypeError(f"expected comma-separated names out of {', '.join(known)}, got "
                                                 f"{text!r} ({which})")
            if name in names[:i]:
                raise argparse.ArgumentTypeError(f"{name!r} is named twice in {text!r}: name each once")
        return names
    return parse


def _counted(pending: list[tuple[dict[str, Any], int]], workers: int) -> Iterator[dict[str, Any]]:
    """The rows of ``pending`` (key inputs, seed) as they finish, in ``workers`` processes when more than one; on
    an interrupt, the rows already finished come first, then the ``KeyboardInterrupt``."""
    if workers <= 1 or len(pending) <= 1:
        for inputs, seed in pending:
            yield count_seed(inputs, seed)
        return
    with WorkerPool(workers) as pool:  # workers deaf to Ctrl-C
        futures = [pool.submit(count_seed, inputs, seed) for inputs, seed in pending]
        handed = set()
        try:
            for future in as_completed(futures):
                handed.add(future)
                yield future.result()
        except KeyboardInterrupt:
            finished = [f.result() for f in futures if f not in handed and f.done() and not f.cancelled()
                        and f.exception() is None]
            stop_workers(pool)
            yield from finished
            raise
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Acceptance rate, median accepted score and rejections by cause of one (size, tier)."""
    tried = sum(r["attempts"] for r in rows)
    scores = [r["accepted_score"] for r in rows if r["accepted_score"] is not None]
    return {"seeds": len(rows), "accepted": len(scores), "attempts": tried, "rate": len(scores) / tried,
            "median_score": float(np.median(scores)) if scores else None,
            "rejected_other_tier": sum(len(r["rejected_scores"]) for r in rows),
            "rejected_not_converged": sum(r["not_converged"] for r in rows)}


def table(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Markdown: rate (median accepted score) per size and tier, then the rejected attempts by cause."""
    tiers = list(dict.fromkeys(t for by_tier in summary.values() for t in by_tier))
    head = f"| size | {' | '.join(tiers)} |\n|---|{'---|' * len(tiers)}\n"

    def cells(by_tier: dict[str, dict[str, Any]], cell: Any) -> str:
        return " | ".join(cell(by_tier[t]) if t in by_tier else "–" for t in tiers)

    def rate(s: dict[str, Any]) -> str:
        median = "–" if s["median_score"] is None else f"{s['median_score']:.1f}"
        return f"{s['rate']:.2f} ({median})"

    def rejected(s: dict[str, Any]) -> str:
        return f"{s['rejected_other_tier']} / {s['rejected_not_converged']}"

    rates = "".join(f"| {size} | {cells(by_tier, rate)} |\n" for size, by_tier in summary.items())
    causes = "".join(f"| {size} | {cells(by_tier, rejected)} |\n" for size, by_tier in summary.items())
    return (f"Acceptance rate (accepted seeds / attempts) and median SSI score of accepted instances:\n\n{head}{rates}"
            f"\nRejected attempts: SSI score in another tier / calibration not converged:\n\n{head}{causes}")


def main(argv: list[str] | None = None) -> None:
    """Count (or resume) the attempts of every (size, tier, seed), print and write the table."""
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("--sizes", type=_comma_list(tuple(size_presets())), default=list(SIZES))
    parser.add_argument("--tiers", type=_comma_list(TIERS), default=list(TIERS))
    parser.add_argument("--seeds", type=count(1), default=None,
                        help="seeds 0..N-1 per size and tier (default: " +
                             ", ".join(f"{z} {n}" for z, n in DEFAULT_SEEDS.items()) + ")")
    parser.add_argument("--workers", type=count(1), default=min(2, os.cpu_count() or 1))
    parser.add_argument("--out", type=output_folder_argument, default=".bench/tier_acceptance")
    args = parser.parse_args(argv)
    if args.seeds is not None and args.seeds > MAX_SEEDS:  # range(10**11) filled the memory listing the seeds
        parser.error(f"--seeds must be in 1..{MAX_SEEDS} (each is a pool member to calibrate), got {args.seeds}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    inputs = {(z, t): key_inputs(t, z) for z in args.sizes for t in args.tiers}
    keys = {pool_key(i): zt for zt, i in inputs.items()}
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    foreign = 0
    for row in read_jsonl(rows_path, lambda r: [r[k] for k in ROW_FIELDS], JournalWarning, repair=True):
        if keys.get(row["key"]) == (row["size"], row["tier"]):
            rows.setdefault((row["size"], row["tier"], row["seed"]), row)
        else:
            foreign += 1
    if foreign:
        print(f"{rows_path}: ignoring {foreign} row(s) of other pools (another size or tier, or an older prior, "
              "generator or SSI version)", file=sys.stderr)
    seeds = {z: range(args.seeds or DEFAULT_SEEDS.get(z, 100)) for z in args.sizes}
    wanted = [(z, t, s) for z in args.sizes for t in args.tiers for s in seeds[z]]
    pending = [(inputs[z, t], s) for z, t, s in wanted if (z, t, s) not in rows]
    print(f"{len(wanted)} pool members: {len(wanted) - len(pending)} reused from {rows_path}, {len(pending)} to "
          "count", file=sys.stderr)
    with tqdm(total=len(wanted), initial=len(wanted) - len(pending), desc="pool members", unit="seed") as bar:
        for row in _counted(pending, args.workers):
            rows[row["size"], row["tier"], row["seed"]] = row
            append_rows(rows_path, [row])
            bar.update()
    summary = {z: {t: summarise([rows[z, t, s] for s in seeds[z]]) for t in args.tiers} for z in args.sizes}
    text = table(summary)
    print("\n" + text)
    write_text_atomic(args.out / "table.md", text)
    write_text_atomic(args.out / "summary.json", json.dumps(summary, indent=1, allow_nan=False) + "\n")
    print(f"written to {args.out}/ (rows.jsonl, table.md, summary.json)")


if __name__ == "__main__":
    with file_errors_exit(), interrupted_exit("the seeds counted so far are kept in rows.jsonl under --out (default "
                                              ".bench/tier_acceptance); rerun the same command to resume"):
        main()
