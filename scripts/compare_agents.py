"""One agent (the lookahead by default, or PPO) vs every dispatching rule on held-out instances of one tier.

For ``--seeds`` pool seeds from ``--start`` (default 10_000, held out from training) of
``tier_pool(--tier, --size)``: every deterministic ``JOB:MACHINE`` rule of the library runs
in-kernel, the agent plays through ``DynaSched/DFJSP-v0``; the objective is ``--objective``
(default: total weighted tardiness). Every schedule is validated (an invalid one stops the run).
Prints the mean per agent and, for the agent minus the best rule *on these instances* (a post-hoc
choice that favours the rules), the mean difference with a paired bootstrap 95 % confidence interval
(10,000 resamples) and on how many instances the agent is better / tied; the same against each ``--reference``
rule (one chosen beforehand, e.g. on validation seeds). With ``--subset-size N`` it
also draws 10,000 random N-seed subsets of these seeds and reports how often the agent's mean beats
the best rule chosen *on each subset*, and by how much that post-hoc choice flatters the rules (its
subset mean against the subset mean of the rule that is best on all the seeds): how demanding a
post-hoc comparison on N seeds is.

Every seed played (the rules' and the agent's objective values) is appended to a journal under ``--out``
(default ``.bench/compare_agents``), one file per agent configuration, tier, size and objective: an interrupted
run resumes with the seeds left, and a rerun with more seeds plays only the new ones.

Usage: ``python -m scripts.compare_agents [--tier hard] [--size small] [--seeds 100] [--start 10000]
[--agent lookahead [--horizon 20 | --futures 4 | --clairvoyant] | --agent ppo --checkpoint model.zip]
[--subset-size 50] [--reference RULE ...] [--out .bench/compare_agents]``

``--seeds`` must be >= 1, and the seeds must not overlap those of the sampled futures (``--futures``, or a PPO policy
that rolls its forecasts out in them); the lookahead's options (``--top-k``, ``--rule``, ``--rollout-rules``,
``--horizon``, ``--futures``, ``--clairvoyant``) are refused with ``--agent ppo``, and ``--checkpoint``
with ``--agent lookahead``.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym import validate_schedule
from dynasched_gym.agents import Agent, make, run_episode
from dynasched_gym.agents.rules import rule_names, rule_objectives
from dynasched_gym.cli import doc_summary, output_folder_argument
from dynasched_gym.core import compile_note
from dynasched_gym.envs.futures import check_outside_futures
from dynasched_gym.errors import MissingExtraError
from dynasched_gym.generation import MAX_SEEDS, TIERS, size_presets, tier_pool
from dynasched_gym.generation.tiers import key_inputs
from dynasched_gym.instance import Instance
from dynasched_gym.metrics import OBJECTIVE_METRICS
from dynasched_gym.results import BEHAVIOUR_VERSION, config_hash, paired_margin, read_jsonl
from scripts.interrupts import interrupted_exit
from scripts.journal import JournalWarning, append_rows
from scripts.overrides import file_errors_exit

HELD_OUT = 10_000
#: The lookahead agent's options: flag -> keyword argument of ``make("lookahead", ...)`` (None: not a keyword).
LOOKAHEAD_OPTIONS = {"--top-k": "top_k", "--rule": "rule", "--rollout-rules": "rollout_rules", "--horizon": "horizon",
                     "--futures": "futures", "--clairvoyant": None}
#: Seeds played between two appends to the journal (PPO plays them side by side in one vector env).
CHUNK = 16


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
    parser.add_argument("--reference", action="append", default=[], metavar="RULE",
                        help="also compare with this rule, e.g. the one chosen on validation seeds (repeatable)")
    parser.add_argument("--out", type=output_folder_argument, default=".bench/compare_agents",
                        help="folder of the journals of seeds played")
    args = parser.parse_args(argv)
    if not 1 <= args.seeds <= MAX_SEEDS:
        parser.error(f"--seeds must be in 1..{MAX_SEEDS} (each is an instance to generate), got {args.seeds}")
    if args.start < 0:
        parser.error(f"--start must be >= 0, got {args.start}")
    if not 0 <= args.subset_size <= args.seeds:
        parser.error(f"--subset-size must be in 0..--seeds ({args.seeds}), got {args.subset_size}")
    for rule in args.reference:
        if rule not in rule_names():
            close = difflib.get_close_matches(rule, rule_names(), n=1)
            parser.error(f"--reference {rule}: not a deterministic JOB:MACHINE rule of the library"
                         f"{f' (did you mean {close[0]}?)' if close else ''}")
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
            agent.check_pool(args.tier, args.size)  # another size's policy failed after the pool and the rules
        except (FileNotFoundError, ValueError) as exc:  # a missing or unloadable checkpoint: a usage error
            parser.error(f"--checkpoint {args.checkpoint}: {exc}")
        except MissingExtraError as exc:  # the rl extra not installed: was a traceback
            parser.error(f"--agent ppo: {exc}")
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
    if agent.sampled_futures:  # a sample could be the very instance tested
        try:
            seeds = range(args.start, args.start + args.seeds)
            check_outside_futures(f"--start {args.start} --seeds {args.seeds}", seeds,
                                  f"{agent.name} rolls out in {agent.sampled_futures} of them")
        except ValueError as exc:
            parser.error(str(exc))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    key = OBJECTIVE_METRICS[args.objective]
    seeds = range(args.start, args.start + args.seeds)
    rows = play_seeds(agent, args, seeds, out)
    rules = rule_names()  # every row holds them (_row_seed)
    values = {name: np.array([rows[seed]["rules"][name] for seed in seeds]) for name in rules}
    values[agent.name] = np.array([rows[seed]["agent"] for seed in seeds])
    means = {name: float(np.mean(v)) for name, v in values.items()}
    best = min(rules, key=means.get)
    margin = paired_margin(values[agent.name], values[best])
    print(f"\n{args.tier} tier, {args.size}, seeds {seeds.start}..{seeds.stop - 1}, mean {key} "
          "(every schedule validated)")
    for name in sorted(means, key=means.get)[:8]:
        print(f"{name:>12} {means[name]:>12.3f}")
    hindsight = float(np.min([values[rule] for rule in rules], axis=0).mean())
    print(f"(the best of the {len(rules)} rules chosen per instance, in hindsight: {hindsight:.3f})")
    print(_margin_line(f"{agent.name} - best rule ({best})", margin))
    for rule in dict.fromkeys(args.reference):
        print(_margin_line(f"{agent.name} - {rule} (--reference, mean {means[rule]:.3f})",
                           paired_margin(values[agent.name], values[rule])))
    if args.subset_size:
        table = np.array([values[rule] for rule in rules])
        wins, flattery = subset_comparison(np.array(values[agent.name]), table, rules.index(best), args.subset_size)
        print(f"on 10,000 random {args.subset_size}-seed subsets: {agent.name} beats the best rule chosen on the "
              f"subset in {100 * wins:.1f} %; that choice is on average {100 * flattery:.1f} % below {best} there")


def _margin_line(label: str, margin: dict[str, Any]) -> str:
    """``label: <mean difference>, 95 % CI [lo, hi] (relative %); better on <n>, tied on <n>`` of a
    :func:`~dynasched_gym.results.paired_margin`."""
    lo, hi = margin["ci95"]
    relative = "-" if margin["relative"] is None else f"{100 * margin['relative']:+.1f}"
    return (f"{label}: {margin['margin']:.3f}, 95 % CI [{lo:.3f}, {hi:.3f}] ({relative} %); better on "
            f"{margin['wins']}, tied on {margin['ties']}")


def journal_path(agent: Agent, args: argparse.Namespace, out: Path) -> Path:
    """The journal of ``agent`` on ``args``' tier, size and objective: named by a hash of everything its values
    depend on (the agent's configuration, the rules compared, the behaviour version, the tier pool's generation
    inputs)."""
    identity = {"agent": agent.config(), "rules": rule_names(), "behaviour": BEHAVIOUR_VERSION,
                "pool": key_inputs(args.tier, args.size), "objective": args.objective}
    return out / f"{args.tier}-{args.size}-{args.objective}-{agent.name}-{config_hash(identity)}.jsonl"


def _row_seed(row: dict[str, Any]) -> int:
    """The seed of a journal row that holds every value a comparison reads, a float for the agent and for each rule
    of :func:`rule_names` (a ValueError otherwise: the seed is played again)."""
    rules = row.get("rules")
    if not (isinstance(row.get("seed"), int) and isinstance(row.get("agent"), float) and isinstance(rules, dict)
            and list(rules) == rule_names() and all(isinstance(v, float) for v in rules.values())):
        raise ValueError("a row holds a seed and the float values of the agent and of every rule")
    return row["seed"]


def play_seeds(agent: Agent, args: argparse.Namespace, seeds: range, out: Path) -> dict[int, dict[str, Any]]:
    """The journal row of every seed (its rules' and the agent's objective values): those of the journal, and the
    others played now, in chunks of :data:`CHUNK` seeds, each chunk's rows appended once every schedule of it is
    validated (an invalid one stops the run with a RuntimeError)."""
    journal = journal_path(agent, args, out)
    rows = {}
    for row in read_jsonl(journal, _row_seed, JournalWarning, repair=True):
        if row["seed"] in seeds:
            rows.setdefault(row["seed"], row)
    pending = [seed for seed in seeds if seed not in rows]
    print(f"{len(seeds)} seeds: {len(seeds) - len(pending)} reused from {journal}, {len(pending)} to play",
          file=sys.stderr)
    if not pending:
        return rows
    if note := compile_note():
        print(note, file=sys.stderr)
    pool = tier_pool(args.tier, args.size)
    pool.prepare(pending)
    key = OBJECTIVE_METRICS[args.objective]
    with tqdm(total=len(seeds), initial=len(seeds) - len(pending), unit="inst",
              desc=f"{args.tier}/{args.size} rules and {agent.name}") as bar:
        for start in range(0, len(pending), CHUNK):
            chunk = pending[start:start + CHUNK]
            instances = [pool.instance(seed) for seed in chunk]
            rule_values = rule_objectives(instances, args.objective, validate=True)
            schedules = _play(agent, args, chunk, instances)
            for inst, schedule in zip(instances, schedules):
                if not (report := validate_schedule(schedule)).ok:
                    raise RuntimeError(f"{agent.name} produced an invalid schedule on {inst.name}: {report}")
            for k, (seed, schedule) in enumerate(zip(chunk, schedules)):
                rows[seed] = {"seed": seed, "agent": float(schedule.metrics[key]),
                              "rules": {name: float(v[k]) for name, v in rule_values.items()}}
            append_rows(journal, [rows[seed] for seed in chunk], sync=True)
            bar.update(len(chunk))
    return rows


def _play(agent: Agent, args: argparse.Namespace, seeds: Sequence[int], instances: list[Instance]) -> list[Any]:
    """The agent's schedules of ``instances`` (pool ``seeds``): PPO's side by side in a vector env, the lookahead's
    one by one, each in a ``DynaSched/DFJSP-v0`` that offers every pair."""
    if args.agent == "ppo":  # the policy scores a batch of observations per call
        return agent.play(instances, args.objective)
    return [run_episode(agent, gym.make("DynaSched/DFJSP-v0", instance=inst, tier=args.tier, size=args.size,
                                        objective=args.objective, max_candidates=inst.num_jobs * inst.num_machines),
                        seed=seed) for seed, inst in zip(seeds, instances)]


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
    with file_errors_exit(), interrupted_exit(f"the seeds of every finished chunk of {CHUNK} are kept in the journal "
                                              "under --out (default .bench/compare_agents), and the pool instances "
                                              "generated in the cache; rerun the same command to resume"):
        main()
