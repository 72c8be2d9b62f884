"""Brandimarte mk01-mk10 makespans: our rules and lookahead beside published figures.

Rules run in-kernel (:func:`dynasched_gym.rollout`; the rule agents play identically through
``DynaSched/FJSP-v0``); the lookahead agent plays through ``DynaSched/FJSP-v0``. Every schedule is
checked by the independent validator. The published columns are the PDR means of Wang et al.
(2023) result files, the greedy DAN figures (10x5 and 15x10, the best greedy DRL) and the best known
upper bounds, as collected in shared/reference/published-results.md section 3.

Our rules dispatch non-delay (only idle machines are candidates), so the EET and SPT machine rules
coincide here; the published PDRs may assign an operation to a busy machine (EET counts its wait).

Usage: ``python -m scripts.fjsp_table [--top-k 16] [--out .bench/fjsp_table.json]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import data, load_instance, rollout, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.cli import doc_summary, output_file_argument
from dynasched_gym.core import compile_note
from dynasched_gym.instance import write_text_atomic
from scripts.interrupts import interrupted_exit
from scripts.overrides import file_errors_exit

INSTANCES = tuple(f"mk{i:02d}" for i in range(1, 11))
RULES = ("FIFO:SPT", "FIFO:EET", "MOPNR:SPT", "MOPNR:EET", "SPT:SPT", "SPT:EET", "MWKR:SPT", "MWKR:EET")
#: Published means over mk01-mk10 (shared/reference/published-results.md section 3).
PUBLISHED = {"FIFO": 205.56, "MOR (MOPNR)": 200.36, "SPT": 237.52, "MWKR": 201.74,
             "DAN-G 10x5": 185.70, "DAN-G 15x10 (best DRL greedy)": 184.40, "best known UB": 172.1}


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the command line), play mk01-mk10, print the table and write its JSON."""
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("--top-k", type=int, default=16, help="lookahead candidates per decision")
    parser.add_argument("--out", type=output_file_argument, default=".bench/fjsp_table.json")
    args = parser.parse_args(argv)
    try:
        lookahead = make("lookahead", top_k=args.top_k)  # its check names the bound (10**20 failed after the rules)
    except (TypeError, ValueError) as exc:
        parser.error(f"--top-k: {exc}")

    if note := compile_note():
        print(note, file=sys.stderr)
    rows: dict[str, dict[str, float]] = {}
    invalid = 0
    seconds = {}
    for name in tqdm(INSTANCES, desc="mk01-mk10", unit="inst"):
        inst = load_instance(data.path(name))
        row = {}
        for rule in RULES:
            schedule = rollout(inst, rule=rule)
            invalid += not validate_schedule(schedule).ok
            row[rule] = schedule.metrics["makespan"]
        env = gym.make("DynaSched/FJSP-v0", instance=inst, max_candidates=512, objective="makespan")
        began = time.perf_counter()
        schedule = run_episode(lookahead, env, seed=0)
        seconds[name] = time.perf_counter() - began
        invalid += not validate_schedule(schedule).ok
        row["lookahead"] = schedule.metrics["makespan"]
        rows[name] = row

    columns = [*RULES, "lookahead"]
    print(f"\n{'':>6}" + "".join(f"{c:>11}" for c in columns))
    for name, row in rows.items():
        print(f"{name:>6}" + "".join(f"{row[c]:>11.0f}" for c in columns))
    means = {c: float(np.mean([rows[n][c] for n in INSTANCES])) for c in columns}
    print(f"{'mean':>6}" + "".join(f"{means[c]:>11.1f}" for c in columns))
    print("\npublished means (not measured here): " + ", ".join(f"{k} {v}" for k, v in PUBLISHED.items()))
    print(f"lookahead (top-{args.top_k}, rollouts MWKR/FIFO/SPT/EDD) mean {means['lookahead']:.1f} "
          f"(target <= 185); {sum(seconds.values()):.1f} s in all; invalid schedules: {invalid}")
    write_text_atomic(Path(args.out), json.dumps({"rows": rows, "means": means, "published": PUBLISHED,
                                                 "lookahead_seconds": seconds, "invalid": invalid}, indent=1))
    print(f"written to {args.out}")


if __name__ == "__main__":
    with file_errors_exit(), interrupted_exit("nothing was written (the table is written at its end)"):
        main()
