"""Lookahead vs every dispatching rule on held-out instances of one tier.

For ``--seeds`` held-out pool seeds (10_000, 10_001, ...) of ``tier_pool(--tier, --size)``: every
deterministic ``JOB:MACHINE`` rule of the library runs in-kernel, the lookahead agent plays through
``DynaSched/DFJSP-v0``; the objective is ``--objective`` (default: total weighted tardiness). Every
schedule is validated. Prints the mean per agent and, for the lookahead minus the best rule, the
mean difference with a paired bootstrap 95 % confidence interval (10,000 resamples).

Usage: ``python -m scripts.compare_agents [--tier hard] [--size small] [--seeds 100]``
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import rollout, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.rules import rule_names
from dynasched_gym.generation import tier_pool
from dynasched_gym.metrics import OBJECTIVE_METRICS
from dynasched_gym.results import bootstrap_ci

HELD_OUT = 10_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", default="hard")
    parser.add_argument("--size", default="small")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--objective", default="weighted_tardiness", choices=sorted(OBJECTIVE_METRICS))
    parser.add_argument("--top-k", type=int, default=16)
    parser.add_argument("--rule", default=None, help="lookahead base rule (default: the agent's for the objective)")
    parser.add_argument("--rollout-rules", default=None, help="comma-separated job rules of the rollouts")
    args = parser.parse_args()
    key = OBJECTIVE_METRICS[args.objective]
    pool = tier_pool(args.tier, args.size)
    seeds = range(HELD_OUT, HELD_OUT + args.seeds)
    pool.prepare(seeds)
    rules = rule_names()
    values = {name: [] for name in [*rules, "lookahead"]}
    invalid = 0
    for seed in tqdm(seeds, desc=f"{args.tier}/{args.size}", unit="inst"):
        inst = pool.instance(seed)
        for rule in rules:
            schedule = rollout(inst, rule=rule)
            invalid += not validate_schedule(schedule).ok
            values[rule].append(schedule.metrics[key])
        env = gym.make("DynaSched/DFJSP-v0", instance=inst, objective=args.objective, max_candidates=512)
        options = {"top_k": args.top_k}
        if args.rule:
            options["rule"] = args.rule
        if args.rollout_rules:
            options["rollout_rules"] = args.rollout_rules.split(",")
        schedule = run_episode(make("lookahead", **options), env, seed=seed)
        invalid += not validate_schedule(schedule).ok
        values["lookahead"].append(schedule.metrics[key])
    means = {name: float(np.mean(v)) for name, v in values.items()}
    best = min(rules, key=means.get)
    diff = np.array(values["lookahead"]) - np.array(values[best])
    lo, hi = bootstrap_ci(diff)
    print(f"\n{args.tier} tier, {args.size}, {args.seeds} held-out seeds, mean {key} (invalid schedules: {invalid})")
    for name in sorted(means, key=means.get)[:8]:
        print(f"{name:>12} {means[name]:>12.2f}")
    print(f"lookahead - best rule ({best}): {diff.mean():.2f}, 95 % CI [{lo:.2f}, {hi:.2f}] "
          f"({100 * diff.mean() / means[best]:+.1f} %)")


if __name__ == "__main__":
    main()
