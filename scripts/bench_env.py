"""Throughput of the Gymnasium environments on ta01 and the embedded dsbx-medium instance.

For each instance it measures, in one run:

- the single env: Python-level ``env.step`` calls per second, through ``gym.make`` (with
  Gymnasium's order-enforcing and passive-checker wrappers) and on ``env.unwrapped``;
- the vector env (``gym.make_vec(..., vectorization_mode="vector_entry_point")``): transitions
  per second (sub-environment steps) at ``num_envs`` = 1, 16, 64, 256, with next-step autoreset.

The policy plays slot 0 (the longest-waiting offered pair) so that action choice costs nothing;
episodes reset when they end, inside the timed loop. Each figure is the median of ``--repeats``
timed repeats of at least ``--seconds`` each, after a warm-up (numba compile or cache load is
excluded and reported separately). The table gives ratios to the targets of issue #4 (80,000
single-env steps/s, 1,000,000 vector transitions/s at 256 envs) and to the single env. Results
print as a table and go to ``--out`` as JSON.

Usage: ``python -m scripts.bench_env [--repeats 5] [--seconds 0.5] [--out .bench/env.json]``
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym.instance import write_text_atomic

INSTANCES = ("ta01", "dsbx-medium")
NUM_ENVS = (1, 16, 64, 256)
ENV_ID = "DynaSched/DFJSP-v0"
SINGLE_TARGET = 80_000.0
VECTOR_TARGET = 1_000_000.0


def single_rate(env: gym.Env, seconds: float) -> float:
    """``env.step`` calls per second (resets included in the time, not counted as steps)."""
    env.reset(seed=0)
    steps = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        for _ in range(1000):
            if env.step(0)[2]:
                env.reset()
        steps += 1000
    return steps / (time.perf_counter() - began)


def vector_rate(venv: gym.vector.VectorEnv, seconds: float) -> float:
    """Sub-environment transitions per second."""
    venv.reset(seed=0)
    actions = np.zeros(venv.num_envs, dtype=np.int64)
    calls = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        for _ in range(50):
            venv.step(actions)
        calls += 50
    return calls * venv.num_envs / (time.perf_counter() - began)


def median_of(repeats: int, measure) -> float:
    return statistics.median(measure() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum duration of one timed repeat")
    parser.add_argument("--out", default=".bench/env.json")
    args = parser.parse_args()

    began = time.perf_counter()
    gym.make(ENV_ID, instance="ta01").reset(seed=0)
    warmup = time.perf_counter() - began
    results = []
    for name in INSTANCES:
        env = gym.make(ENV_ID, instance=name)
        single_rate(env, 0.05)  # warm-up
        row = {
            "instance": name,
            "jobs": env.unwrapped.instance.num_jobs,
            "ops": env.unwrapped.instance.num_ops,
            "single_make_steps_per_s": median_of(args.repeats, lambda e=env: single_rate(e, args.seconds)),
            "single_unwrapped_steps_per_s": median_of(args.repeats,
                                                      lambda e=env.unwrapped: single_rate(e, args.seconds)),
            "vector_transitions_per_s": {},
        }
        for n in NUM_ENVS:
            venv = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", instance=name)
            vector_rate(venv, 0.05)  # warm-up
            row["vector_transitions_per_s"][n] = median_of(args.repeats, lambda v=venv: vector_rate(v, args.seconds))
        results.append(row)

    print(f"\nfirst make + reset (imports, numba cache load or compile): {warmup:.2f} s; policy: slot 0; "
          f"medians of {args.repeats} repeats of >= {args.seconds} s")
    print(f"{'instance':>12} {'gym.make step/s':>16} {'/80k':>6} {'unwrapped step/s':>17} "
          + " ".join(f"{f'vec N={n} tr/s':>15}" for n in NUM_ENVS) + f" {'N=256 /1M':>10} {'N=256 /single':>14}")
    for r in results:
        vec = r["vector_transitions_per_s"]
        print(f"{r['instance']:>12} {r['single_make_steps_per_s']:>16,.0f} "
              f"{r['single_make_steps_per_s'] / SINGLE_TARGET:>6.2f} {r['single_unwrapped_steps_per_s']:>17,.0f} "
              + " ".join(f"{vec[n]:>15,.0f}" for n in NUM_ENVS)
              + f" {vec[256] / VECTOR_TARGET:>10.2f} {vec[256] / r['single_make_steps_per_s']:>13.1f}x")
    payload = {"machine": platform.platform(), "processor": platform.processor(), "python": platform.python_version(),
               "repeats": args.repeats, "seconds": args.seconds, "warmup_seconds": warmup, "policy": "slot 0",
               "targets": {"single_steps_per_s": SINGLE_TARGET, "vector_transitions_per_s_at_256": VECTOR_TARGET},
               "results": results}
    write_text_atomic(Path(args.out), json.dumps(payload, indent=1))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
