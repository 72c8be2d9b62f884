"""Dispatching-rule agents: the jitted rules of :mod:`dynasched_gym.core.rules` as agents."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from dynasched_gym.agents.base import Agent
from dynasched_gym.core.rules import (
    COMPOSITE_RULES,
    JOB_RULES,
    MACHINE_RULES,
    job_priority,
    parse_rule,
    seed_rng,
    select,
)


class RuleAgent(Agent):
    """Dispatch with a ``JOB:MACHINE`` rule (``rule:MWKR:EET``; the reference's ``pdr:MWKR:EET`` too).

    In ``DFJSP-v0`` it plays the slot holding the pair the rule picks (the same choice as the
    in-kernel rule, so its episodes equal :func:`dynasched_gym.rollout` whenever every startable
    pair is offered). In ``DFJSP-Rules-v0`` it plays the rule's index in ``COMPOSITE_RULES``.
    If the rule's pair is not among the offered slots (more startable pairs than ``max_candidates``),
    it plays the offered pair the job rule ranks first.

    Args:
        rule: ``"MWKR"``, ``"MWKR:LWL"``, ...
        emergency_first: jobs with an emergency weight first.
        random_ties: break ties at random, seeded by ``seed`` at every :meth:`reset`.
        seed: seed of the tie-breaking stream.
    """

    def __init__(self, rule: str, emergency_first: bool = False, random_ties: bool = False, seed: int = 0) -> None:
        self.job_rule, self.machine_rule = parse_rule(rule, emergency_first, random_ties)
        job, _, machine = rule.upper().partition(":")
        self.rule = f"{job}:{machine or 'EET'}"
        self.emergency_first, self.random_ties, self.seed = emergency_first, random_ties, seed
        self.name = f"rule:{self.rule}" + (":emergency" if emergency_first else "")

    def reset(self, env: gym.Env) -> None:
        super().reset(env)
        if self.random_ties:
            seed_rng(self.seed)

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        env = self.env
        if hasattr(env, "rules"):  # rule-selection env
            if self.rule not in env.rules:
                raise ValueError(f"{self.rule} is not one of the env's composite rules {COMPOSITE_RULES}")
            return env.rules.index(self.rule)
        sim = env.simulator
        job, machine = select(sim.static, sim.state, self.job_rule, self.machine_rule)
        return slot_of(env, job, machine, self.job_rule)

    def config(self) -> dict[str, Any]:
        return {"name": "rule", "rule": self.rule, "emergency_first": self.emergency_first,
                "random_ties": self.random_ties, "seed": self.seed}


def slot_of(env: gym.Env, job: int, machine: int, job_rule: int) -> int:
    """The action slot offering (job, machine); if none does, the offered pair ``job_rule`` ranks first."""
    jobs, machines = env.offered_pairs()
    hit = np.flatnonzero((jobs == job) & (machines == machine))
    if hit.size:
        return int(hit[0])
    sim = env.simulator
    offered = np.flatnonzero(jobs >= 0)
    keys = [job_priority(sim.static, sim.state, int(jobs[k]), job_rule) for k in offered]
    return int(offered[int(np.argmin(keys))])


def rule_names() -> list[str]:
    """Every ``JOB:MACHINE`` rule name (deterministic rules only)."""
    return [f"{j}:{m}" for j in JOB_RULES if j != "RANDOM" for m in MACHINE_RULES]
