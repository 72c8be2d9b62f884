"""One agent (the lookahead by default, or PPO) vs every dispatching rule on held-out instances of one tier.

For ``--seeds`` pool seeds from ``--start`` (default 10_000, held out from training) of
``tier_pool(--tier, --size)``: every deterministic ``JOB:MACHINE`` rule of the library runs
in-kernel, the agent plays through ``DynaSched/DFJSP-v0``; the objective is ``--objective``
(default: total weighted tardiness). Every schedule is validated (an invalid one stops the run).
Prints the mean per agent and, for the agent minus the best rule *on these instances* (a post-hoc
choice that favours the rules), the mean difference with a paired bootstrap 95 % confidence interval
(10,000 resamples) and on how many instances the agent is better / tied. With ``--subset-size N`` it
also draws 10,000 random N-seed subsets of these seeds and reports how often the agent's mean beats
the best rule chosen *on each subset*, and by how much that post-hoc choice flatters the rules (its
subset mean against the subset mean of the rule that is best on all the seeds): how demanding a
post-hoc comparison on N seeds is.

Usage: ``python -m scripts.compare_agents [--tier hard] [--size small] [--seeds 100] [--start 10000]
[--agent lookahead [--horizon 20 | --futures 4 | --clairvoyant] | --agent ppo --checkpoint model.zip]
[--subset-size 50]``

``--seeds`` must be >= 1; the lookahead's options (``--top-k``, ``--rule``, ``--rollout-rules``,
``--horizon``, ``--futures``, ``--clairvoyant``) are refused with ``--agent ppo``, and ``--checkpoint``
with ``--agent lookahead``.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.rules import rule_objectives
from dynasched_gym.cli import doc_summary
from dynasched_gym.generation import TIERS, size_presets, tier_pool
from dynasched_gym.metrics import OBJECTIVE_METRICS
from dynasched_gym.results import paired_margin
from scripts.interrupts import interrupted_exit

HELD_OUT = 10_000
#: The lookahead agent's options: flag -> keyword argument of ``make("lookahead", ...)`` (None: not a keyword).
LOOKAHEAD_OPTIONS = {"--top-k": "top_k", "--rule": "rule", "--rollout-rules": "rollout_rules", "--horizon": "horizon",
                     "--futures": "futures", "--clairvoyant": None}


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the command line), play, print the comparison."""
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("--tier", default="hard", choices=TIERS)
    parser.add_argument("--size", default="small", choices=size_presets())
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--start", type=int, default=HELD_OUT, help="first pool seed")
    parser.add_argument("--objective", default="weighted_tardiness", choices=sorted(OBJECTIVE_METRICS))
    parser.add_argument("--agent", default="lookahead", choices=["lookahead", "ppo"])
    parser.add_argument("--checkpoint", default=None, help="ppo: the model .zip")
    parser.add_argument("--top-k", type=int, default=None, help="lookahead: pairs tried per decision (default: 16)")
    parser.add_argument("--rule", default=None, help="lookahead base rule (default: the agent's for the objective)")
    parser.add_argument("--rollout-rules", default=None, help="lookahead: comma-separated rules of the rollouts")
    parser.add_argument("--horizon", type=int, default=None, help="lookahead: decisions per rollout (default: all)")
    parser.add_argument("--futures", type=int, default=None,
                        help="lookahead: roll out in this many sampled futures of the tier's pool (default: none)")
    parser.add_argument("--clairvoyant", action="store_true",
                        help="lookahead: the clairvoyant reference (lookahead-oracle), its rollouts see the future")
    parser.add_argument("--subset-size", type=int, default=0, help="also compare on random subsets of this size")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.start < 0:
        parser.error(f"--start must be >= 0, got {args.start}")
    if not 0 <= args.subset_size <= args.seeds:
        parser.error(f"--subset-size must be in 0..--seeds ({args.seeds}), got {args.subset_size}")
    given = {flag: getattr(args, flag[2:].replace("-", "_")) for flag in LOOKAHEAD_OPTIONS}
    given = {flag: value for flag, value in given.items() if value is not None and value is not False}
    if args.agent == "ppo":
        if given:
            parser.error(f"lookahead option(s) {', '.join(given)} given with --agent ppo (they apply to --agent "
                         "lookahead only)")
        if not args.checkpoint:
            parser.error("--agent ppo needs --checkpoint")
        try:
            agent = make("ppo", checkpoint=args.checkpoint)
        except (FileNotFoundError, ValueError) as exc:  # a missing or unloadable checkpoint: a usage error
            parser.error(f"--checkpoint {args.checkpoint}: {exc}")
    else:
        if args.checkpoint:
            parser.error(f"--checkpoint {args.checkpoint} given with --agent lookahead (it applies to --agent ppo "
                         "only)")
        options = {LOOKAHEAD_OPTIONS[flag]: value for flag, value in given.items() if LOOKAHEAD_OPTIONS[flag]}
        if args.rollout_rules:
            options["rollout_rules"] = args.rollout_rules.split(",")
        try:
            agent = make("lookahead-oracle" if args.clairvoyant else "lookahead", **options)
        except (TypeError, ValueError) as exc:  # e.g. --top-k 0 or an unknown --rule
            parser.error(str(exc))
    key = OBJECTIVE_METRICS[args.objective]
    pool = tier_pool(args.tier, args.size)
    seeds = range(args.start, args.start + args.seeds)
    pool.prepare(seeds)
    instances = [pool.instance(seed) for seed in seeds]
    values = rule_objectives(instances, args.objective, validate=True, progress=True)
    rules = list(values)
    if args.agent == "ppo":  # episodes side by side in a vector env, the policy scoring a batch per call
        schedules = agent.play(instances, args.objective, progress=True)
    else:
        schedules = [run_episode(agent, gym.make("DynaSched/DFJSP-v0", instance=inst, tier=args.tier, size=args.size,
                                                 objective=args.objective,
                                                 max_candidates=inst.num_jobs * inst.num_machines), seed=seed)
                     for seed, inst in zip(tqdm(seeds, desc=f"{args.tier}/{args.size} {agent.name}", unit="inst"),
                                           instances)]
    for inst, schedule in zip(instances, schedules):
        if not (report := validate_schedule(schedule)).ok:
            raise RuntimeError(f"{agent.name} produced an invalid schedule on {inst.name}: {report}")
    values[agent.name] = np.array([schedule.metrics[key] for schedule in schedules])
    means = {name: float(np.mean(v)) for name, v in values.items()}
    best = min(rules, key=means.get)
    margin = paired_margin(values[agent.name], values[best])
    lo, hi = margin["ci95"]
    print(f"\n{args.tier} tier, {args.size}, seeds {seeds.start}..{seeds.stop - 1}, mean {key} "
          "(every schedule validated)")
    for name in sorted(means, key=means.get)[:8]:
        print(f"{name:>12} {means[name]:>12.3f}")
    hindsight = float(np.min([values[rule] for rule in rules], axis=0).mean())
    print(f"(the best of the {len(rules)} rules chosen per instance, in hindsight: {hindsight:.3f})")
    relative = "-" if margin["relative"] is None else f"{100 * margin['relative']:+.1f}"
    print(f"{agent.name} - best rule ({best}): {margin['margin']:.3f}, 95 % CI [{lo:.3f}, {hi:.3f}] "
          f"({relative} %); better on {margin['wins']}, tied on {margin['ties']}")
    if args.subset_size:
        table = np.array([values[rule] for rule in rules])
        wins, flattery = subset_comparison(np.array(values[agent.name]), table, rules.index(best), args.subset_size)
        print(f"on 10,000 random {args.subset_size}-seed subsets: {agent.name} beats the best rule chosen on the "
              f"subset in {100 * wins:.1f} %; that choice is on average {100 * flattery:.1f} % below {best} there")


def subset_comparison(agent: np.ndarray, rules: np.ndarray, overall_best: int, size: int,
                      draws: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """On random ``size``-subsets of the instances: (share where ``agent``'s mean is below every rule's mean,
    mean relative gap between the subset's best rule and rule ``overall_best`` on the subset)."""
    rng = np.random.default_rng(seed)
    wins, gaps = [], []
    for chunk in np.array_split(np.arange(draws), max(draws // 500, 1)):
        subsets = np.array([rng.choice(agent.size, size, replace=False) for _ in chunk])
        rule_means = rules[:, subsets].mean(axis=2)  # (rules, chunk)
        lowest = rule_means.min(axis=0)
        wins.append(agent[subsets].mean(axis=1) < lowest)
        reference = rule_means[overall_best]
        gaps.append(np.where(reference > 0, 1.0 - lowest / np.where(reference > 0, reference, 1.0), 0.0))
    return float(np.concatenate(wins).mean()), float(np.concatenate(gaps).mean())


if __name__ == "__main__":
    with interrupted_exit("nothing was written; the pool instances generated so far are kept"):
        main()
