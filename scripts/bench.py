"""Simulator throughput on ta01, mk10 and the reference package's 243-job sample.

For each instance it measures, in one run:

- in-kernel rollouts: whole episodes under a jitted rule (reset included), decisions/s;
- the Python-level step loop: ``Simulator.candidates()`` + ``Simulator.step()`` with a uniformly
  random valid pair, decisions/s.

Each figure is the median over ``--repeats`` timed repeats after one warm-up (numba compile time
is excluded and reported separately). A decision schedules one operation (or one resumed part of
one), so decisions/s equals operations scheduled per second here. Results print as a table and
go to ``--out`` as JSON.

Usage: ``python -m scripts.bench [--repeats 5] [--seconds 0.5] [--out .bench/core.json]``
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from dynasched_gym import data, load_instance
from dynasched_gym.core import Simulator
from dynasched_gym.core.rules import parse_rule, run_episodes
from dynasched_gym.instance import write_text_atomic

INSTANCES = ("ta01", "mk10", "dsbx-medium")


def kernel_rate(sim: Simulator, rule: str, seconds: float) -> float:
    """Decisions per second of whole in-kernel episodes under ``rule``."""
    job_rule, machine_rule = parse_rule(rule)
    episodes = 1
    while True:  # grow the batch until one call lasts long enough to time reliably
        began = time.perf_counter()
        decisions = run_episodes(sim.static, sim.state, job_rule, machine_rule, episodes)
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return decisions / elapsed
        episodes *= 2 if elapsed < seconds / 4 else 1 + int(seconds / max(elapsed, 1e-9))


def step_loop_rate(sim: Simulator, seconds: float, rng: np.random.Generator) -> float:
    """Decisions per second of the Python-level candidates() + step() loop."""
    decisions = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        sim.reset()
        while not sim.done:
            jobs, machines, _ = sim.candidates()
            k = rng.integers(len(jobs))
            sim.step(jobs[k], machines[k])
            decisions += 1
    return decisions / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum duration of one timed repeat")
    parser.add_argument("--rule", default="SPT")
    parser.add_argument("--out", default=".bench/core.json")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    results = []
    began = time.perf_counter()
    Simulator(load_instance(data.path("ta01"))).reset()  # compile or load the cached kernels
    warmup = time.perf_counter() - began
    for name in tqdm(INSTANCES, desc="bench", unit="inst"):
        inst = load_instance(data.path(name))
        sim = Simulator(inst)
        sim.reset()
        kernel_rate(sim, args.rule, 0.01)  # warm-up
        kernel = [kernel_rate(sim, args.rule, args.seconds) for _ in range(args.repeats)]
        loop = [step_loop_rate(sim, args.seconds, rng) for _ in range(args.repeats)]
        sim.reset()
        sim.run(args.rule)
        results.append({
            "instance": name, "jobs": inst.num_jobs, "machines": inst.num_machines, "ops": inst.num_ops,
            "events": len(inst.events), "decisions_per_episode": sim.decisions,
            "kernel_decisions_per_s": statistics.median(kernel),
            "step_loop_decisions_per_s": statistics.median(loop),
        })

    print(f"\nfirst import + reset (numba cache load or compile): {warmup:.2f} s; rule {args.rule}; "
          f"medians of {args.repeats} repeats")
    print(f"{'instance':>12} {'jobs':>5} {'ops':>5} {'dec/ep':>7} {'in-kernel dec/s':>16} {'step loop dec/s':>16} "
          f"{'kernel/loop':>11}")
    for r in results:
        print(f"{r['instance']:>12} {r['jobs']:>5} {r['ops']:>5} {r['decisions_per_episode']:>7} "
              f"{r['kernel_decisions_per_s']:>16,.0f} {r['step_loop_decisions_per_s']:>16,.0f} "
              f"{r['kernel_decisions_per_s'] / r['step_loop_decisions_per_s']:>10.0f}x")
    reference = 15.0  # dsbx 0.4.0 on the 243-job sample, decisions/s (shared/reference/dsbx-notes.md section 14)
    sample = next(r for r in results if r["instance"] == "dsbx-medium")
    print(f"\n243-job sample vs the reference package's ~{reference:g} decisions/s (measured there, not in this run): "
          f"in-kernel {sample['kernel_decisions_per_s'] / reference:,.0f}x, "
          f"step loop {sample['step_loop_decisions_per_s'] / reference:,.0f}x")
    payload = {"machine": platform.platform(), "python": platform.python_version(), "rule": args.rule,
               "repeats": args.repeats, "warmup_seconds": warmup, "results": results}
    write_text_atomic(Path(args.out), json.dumps(payload, indent=1))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
