"""Snapshot-lookahead agent: numba rollouts of the top-k pairs of a base rule (core/lookahead.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from dynasched_gym.agents.base import Agent
from dynasched_gym.agents.rules import slot_of
from dynasched_gym.checks import check_bool, check_choice, check_integer
from dynasched_gym.core.compiled import ScratchStates
from dynasched_gym.core.lookahead import lookahead_select, ranked_candidates
from dynasched_gym.core.rules import MACHINE_RULES, parse_deterministic_rule, parse_rule, rule_list, rule_name
from dynasched_gym.envs.futures import MAX_FUTURES, SampledFutures
from dynasched_gym.generation import TIERS, size_presets
from dynasched_gym.metrics import OBJECTIVES

#: The largest ``top_k`` and ``horizon``: the kernels take them as 64-bit integers (10**30 was an OverflowError at the
#: first decision), and a count this large already means every candidate, or the whole episode.
MAX_COUNT = 2**31 - 1

#: Default (base rule, rollout job rules) per objective: measured choices (docs/agents.md).
DEFAULTS = {
    "makespan": ("MWKR:EET", ("MWKR", "FIFO", "SPT", "EDD")),
    "tardiness": ("ATC:LWL", ("ATC", "EDD", "WSPT", "FIFO")),
    "weighted_tardiness": ("ATC:LWL", ("ATC", "EDD", "WSPT", "FIFO")),
    "flow_time": ("SPT:EET", ("SPT", "FIFO", "MWKR", "LWKR")),
}


def rule_codes(names: Sequence[str], machine_rule: str) -> np.ndarray:
    """(n, 2) int64 (job rule, machine rule) codes of ``names`` (``JOB:MACHINE``, or a job rule alone, which
    takes ``machine_rule``): the rows :func:`~dynasched_gym.core.lookahead.pair_value` rolls out."""
    return np.array([parse_deterministic_rule(r if ":" in r else f"{r}:{machine_rule}", "rollout and ranking rules")
                     for r in names], dtype=np.int64).reshape(-1, 2)


class LookaheadAgent(Agent):
    """At each decision, roll the ``top_k`` pairs of ``rule`` out (to the end, or a horizon) and play the best.

    Each candidate pair is started in a copy of the current state and rolled out under every rule of
    ``rollout_rules``; its value is the best objective reached (ties: lower mean completion time).
    The rollouts know only the present: future events and unreleased jobs are removed from the
    copy first. ``clairvoyant=True`` lets them see the whole future — a reference, labelled
    ``lookahead-oracle``, never a fair agent.

    Args:
        rule: base rule that ranks the candidate pairs; ``None``: :data:`DEFAULTS` for the objective.
        rollout_rules: rules of the rollouts: ``JOB:MACHINE``, or a job rule alone to use the base rule's
            machine rule; ``None``: :data:`DEFAULTS`.
        top_k: number of candidate pairs tried.
        objective: the objective the rollouts minimise; ``None``: the env's objective.
        clairvoyant: see the future in rollouts.
        horizon: stop each rollout after this many decisions (past the pair tried) and value it with
            the open jobs' optimistic completion estimates (``core.lookahead.rollout_value``);
            ``None``: roll out to the end.
        futures: roll out in this many *sampled* futures instead of an empty one: each episode draws
            that many instances of the tier pool ``future_tier``/``future_size``
            (:class:`~dynasched_gym.envs.futures.SampledFutures`), and a rollout plays the present
            followed by a sample's jobs arriving, and its events happening, after now; a pair is
            valued by its mean over the samples (the best rollout rule's). ``0``: no future (the
            default). Not combined with ``horizon`` or ``clairvoyant``.
        future_tier: tier of the generative model the futures come from; ``None``: the env's tier.
        future_size: its size preset; ``None``: the env's size.
        future_seed: picks which pool seeds each episode's futures are.
    """

    def __init__(self, rule: str | None = None, rollout_rules: Sequence[str] | None = None, top_k: int = 16,
                 objective: str | None = None, clairvoyant: bool = False, horizon: int | None = None,
                 futures: int = 0, future_tier: str | None = None, future_size: str | None = None,
                 future_seed: int = 0) -> None:
        top_k = check_integer("top_k", top_k, 1, MAX_COUNT)
        futures = check_integer("futures", futures, 0, MAX_FUTURES)
        future_seed = check_integer("future_seed", future_seed, 0)
        clairvoyant = check_bool("clairvoyant", clairvoyant)  # np.True_ made a config json.dumps refused
        if rule is not None and not isinstance(rule, str):
            raise TypeError(f"rule must be a JOB:MACHINE rule name or None (the objective's default), got "
                            f"{type(rule).__name__}: {rule!r:.80}")
        if rule is not None and not rule:
            raise ValueError(f"rule must be a JOB:MACHINE rule name or None (the objective's default), got {rule!r}")
        if rollout_rules is not None and not rule_list(rollout_rules):
            raise ValueError(f"rollout_rules must name at least one rule or be None (the objective's defaults), "
                             f"got {rollout_rules!r}")
        if horizon is not None:
            horizon = check_integer("horizon", horizon, 0, MAX_COUNT)
        if futures and (horizon is not None or clairvoyant):
            given = f"horizon={horizon}" if horizon is not None else "clairvoyant=True (the oracle)"
            raise ValueError(f"futures={futures} rolls out to the end in sampled futures: it cannot be combined "
                             f"with {given}")
        if not futures and (future_tier is not None or future_size is not None or future_seed):
            raise ValueError(f"future_tier={future_tier!r}, future_size={future_size!r} and future_seed={future_seed} "
                             "choose the sampled futures, and futures=0 samples none: set futures= too")
        if future_tier is not None:  # checked now, not in the first episode
            check_choice("future_tier", future_tier, TIERS)
        if future_size is not None:
            check_choice("future_size", future_size, size_presets())
        if objective is not None:
            check_choice("objective", objective, OBJECTIVES)
        rollout_names = None if rollout_rules is None else rule_list(rollout_rules)
        for name in [*([rule] if rule else []), *(rollout_names or [])]:  # fail now, not in the first episode
            parse_deterministic_rule(name, "the lookahead's rule and rollout_rules")
        # one spelling per rule, so that configs (and result rows) of the same agent hash alike
        self.rule = None if rule is None else rule_name(rule)
        self.rollout_names = None if rollout_names is None else tuple(rule_name(r, alone=True) for r in rollout_names)
        self.top_k = top_k
        self.objective = objective
        self.clairvoyant = clairvoyant
        self.horizon = horizon
        self.name = "lookahead-oracle" if clairvoyant else "lookahead"
        self.futures, self.future_seed = futures, future_seed
        self.future_tier, self.future_size = future_tier, future_size
        self._futures: SampledFutures | None = None
        self._scratch = ScratchStates()
        self._buffers: tuple[np.ndarray, ...] = (np.empty(0, np.int64),)  # ranked candidates, grown on demand

    @property
    def sampled_futures(self) -> int:
        """``futures``: the sampled futures each decision rolls out in."""
        return self.futures

    def reset(self, env: gym.Env) -> None:
        super().reset(env)
        self.require_pair_env()
        objective = self.objective or self.env.config.objective
        self._objective = OBJECTIVES.index(objective)
        rule, rollouts = DEFAULTS[objective]
        self.job_rule, self.machine_rule = parse_rule(self.rule or rule)
        self.rollout_rules = rule_codes(self.rollout_names or rollouts, MACHINE_RULES[self.machine_rule])
        if self.futures:
            tier, size = self.env.unwrapped.source.future_pool(self.future_tier, self.future_size)
            if self._futures is None or (self._futures.tier, self._futures.size) != (tier, size):
                self._futures = SampledFutures(self.futures, tier, size, self.future_seed)

    def _select_sampled(self, sim: Any) -> tuple[int, int]:
        """The top-k pair of the base rule with the lowest mean objective over the sampled futures."""
        count = min(ranked_candidates(sim.static, sim.state, self.job_rule, *self._buffers), self.top_k)
        if not count:  # nothing can start (no decision): the rules' (-1, -1), not a stale pair of the buffers
            return -1, -1
        pair_job, pair_machine = self._buffers[0], self._buffers[1]
        best = 0
        if count > 1:
            values = self._futures.pair_values(sim, pair_job, pair_machine, count, self.rollout_rules, self._objective)
            best = int(np.argmin(values.min(axis=1)))  # the first of equals: the base rule's order
        return int(pair_job[best]), int(pair_machine[best])

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        sim = self.env.simulator
        size = sim.instance.num_jobs * sim.instance.num_machines  # every (job, machine) pair at most
        if self._buffers[0].shape[0] < size:
            self._buffers = (np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size), np.empty(size))
        if self.futures:
            return slot_of(self.env, *self._select_sampled(sim), self.job_rule)
        job, machine = lookahead_select(sim.static, sim.state, self._scratch.get(sim.static), self.job_rule,
                                        self.rollout_rules, self.top_k, self._objective, self.clairvoyant,
                                        *self._buffers, -1 if self.horizon is None else self.horizon)
        return slot_of(self.env, job, machine, self.job_rule)

    def config(self) -> dict[str, Any]:
        rollouts = None if self.rollout_names is None else list(self.rollout_names)
        return {"name": self.name, "rule": self.rule, "rollout_rules": rollouts, "top_k": self.top_k,
                "objective": self.objective, "clairvoyant": self.clairvoyant,
                # only when set: full rollouts play exactly as before, so their stored results keep matching
                **({} if self.horizon is None else {"horizon": self.horizon}),
                **({} if not self.futures else {"futures": self.futures, "future_tier": self.future_tier,
                                                "future_size": self.future_size, "future_seed": self.future_seed})}

