"""Dispatching-rule agents: the jitted rules of :mod:`dynasched_gym.core.rules` as agents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from dynasched_gym.agents.base import Agent
from dynasched_gym.checks import check_bool, check_choice, is_integer
from dynasched_gym.core.rules import (
    COMPOSITE_RULES,
    EMERGENCY_FIRST,
    EMERGENCY_WEIGHT,
    JOB_RULES,
    MACHINE_RULES,
    check_seed,
    is_random_rule,
    job_priorities,
    parse_rule,
    random_index,
    rng_state,
    rule_name,
    seed_rng,
    select,
    set_rng_state,
)
from dynasched_gym.core.simulator import Simulator, rollout
from dynasched_gym.instance import Instance
from dynasched_gym.metrics import OBJECTIVE_METRICS
from dynasched_gym.validate import validate_schedule


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
        seed: seed of the agent's random stream (random ties and the ``RANDOM`` job rule), in ``[0, 2**32)``, set
            at every :meth:`reset`; other agents' draws between this agent's do not change it. ``DFJSP-Rules-v0``
            draws its RANDOM rule from its own stream (``env.reset(seed=...)``) and refuses another seed than 0.
    """

    def __init__(self, rule: str, emergency_first: bool = False, random_ties: bool = False, seed: int = 0) -> None:
        emergency_first = check_bool("emergency_first", emergency_first)  # as checked: np.True_ made a config that
        random_ties = check_bool("random_ties", random_ties)  # json.dumps refused
        self.job_rule, self.machine_rule = parse_rule(rule, emergency_first, random_ties)
        self.rule = rule_name(rule)
        self.emergency_first, self.random_ties, self.seed = emergency_first, random_ties, check_seed(seed)
        self.name = f"rule:{self.rule}" + (":emergency" if emergency_first else "")
        self._random = random_ties or is_random_rule(self.job_rule)
        self._stream: tuple[int, list[int]] | None = None  # this agent's draws, apart from any other's

    def reset(self, env: gym.Env) -> None:
        super().reset(env)
        if hasattr(self.env, "rules") and (self.emergency_first or self.random_ties):
            raise ValueError(f"{env.spec.id if env.spec else 'the rule-selection env'} plays its composite rules "
                             f"{COMPOSITE_RULES} as they are: emergency_first and random_ties cannot apply there; "
                             "play this agent on DynaSched/DFJSP-v0")
        if hasattr(self.env, "rules") and self._random and self.seed:  # seeds 1, 2, 3 played one episode
            raise ValueError(f"the rule-selection env draws its RANDOM rule from its own stream, seeded by "
                             f"env.reset(seed=...): the agent's seed={self.seed} cannot apply there; leave it 0, or "
                             "play this agent on DynaSched/DFJSP-v0")
        if self._random:
            seed_rng(self.seed)
            self._stream = rng_state()

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        env = self.env
        if hasattr(env, "rules"):  # rule-selection env
            if self.rule not in env.rules:
                raise ValueError(f"{self.rule} is not one of the env's composite rules {COMPOSITE_RULES}")
            return env.rules.index(self.rule)
        sim = env.simulator
        if self._stream is not None:  # the kernels' stream is shared: carry on from this agent's last draw
            set_rng_state(self._stream)
        job, machine = select(sim.static, sim.state, self.job_rule, self.machine_rule)
        action = slot_of(env, job, machine, self.job_rule)
        if self._stream is not None:
            self._stream = rng_state()
        return action

    def config(self) -> dict[str, Any]:
        return {"name": "rule", "rule": self.rule, "emergency_first": self.emergency_first,
                "random_ties": self.random_ties, "seed": self.seed}


def slot_of(env: gym.Env, job: int, machine: int, job_rule: int) -> int:
    """The action slot offering (job, machine); if none does, the offered pair ``job_rule`` ranks first (emergency
    jobs first when its flags say so), or for ``RANDOM`` a uniform offered pair. The rules' ``(-1, -1)``, nothing
    can start, plays slot 0."""
    if job < 0:
        # no decision: every job went before any could start (cancelled before its release), nothing is offered, and
        # the episode's one step ends it whatever the action; slot 0, as the random and LLM agents play there
        return 0
    jobs, machines = env.offered_pairs()
    return offered_slot(env.simulator, jobs, machines, job, machine, job_rule)


def offered_slot(sim: Simulator, jobs: np.ndarray, machines: np.ndarray, job: int, machine: int,
                 job_rule: int) -> int:
    """:func:`slot_of` on the offered pairs ``jobs``, ``machines`` (``env.offered_pairs()``) of ``sim`` now, ``job``
    >= 0: the LLM agent's table keeps this slot for each of its ranking rules."""
    hit = np.flatnonzero((jobs == job) & (machines == machine))
    if hit.size:
        return int(hit[0])
    offered = np.flatnonzero(jobs >= 0)
    if is_random_rule(job_rule):
        return int(offered[random_index(offered.size)])
    emergency_first = bool(job_rule & EMERGENCY_FIRST)
    weight = sim.state.job_weight
    # one kernel call for every offered job: a call per job cost ~11 us of argument unboxing each (and ATC's scale,
    # a pass over all jobs, each time); this fallback runs at most decisions of a long queue
    offered_jobs = jobs[offered]
    priority = np.empty(offered.size)
    job_priorities(sim.static, sim.state, offered_jobs, offered.size, job_rule, priority)
    keys = [(0 if emergency_first and weight[j] >= EMERGENCY_WEIGHT else 1, p)
            for j, p in zip(offered_jobs, priority.tolist())]
    return int(offered[min(range(len(keys)), key=keys.__getitem__)])


def rule_names() -> list[str]:
    """Every ``JOB:MACHINE`` rule name (deterministic rules only)."""
    return [f"{j}:{m}" for j in JOB_RULES if j != "RANDOM" for m in MACHINE_RULES]


def rule_objectives(instances: Sequence[Instance], objective: str = "weighted_tardiness", validate: bool = False,
                    progress: bool = False) -> dict[str, np.ndarray]:
    """The objective of every deterministic rule (:func:`rule_names`) on each instance, by in-kernel rollouts.

    With ``validate`` every schedule goes through the validator (about 20 times the rollout's cost)
    and an invalid one raises ``RuntimeError`` naming the rule and the instance.
    """
    check_choice("objective", objective, tuple(OBJECTIVE_METRICS))  # 'Makespan' was a bare KeyError
    key = OBJECTIVE_METRICS[objective]
    values = {}
    for rule in tqdm(rule_names(), desc="evaluate rules", unit="rule", disable=not progress):
        row = []
        for inst in instances:
            schedule = rollout(inst, rule=rule)
            if validate and not (report := validate_schedule(schedule)).ok:
                raise RuntimeError(f"rule {rule} produced an invalid schedule on {inst.name}: {report}")
            row.append(schedule.metrics[key])
        values[rule] = np.array(row)
    return values


def complementary_rules(values: dict[str, np.ndarray], count: int) -> list[str]:
    """``count`` rules of ``values`` (rule -> objective per instance, as from :func:`rule_objectives`), greedily.

    First the rule with the lowest mean; then, one at a time, the rule that most lowers the mean
    over the instances of the lowest objective among the rules chosen: a set one of which does well
    on each instance. Ties go to the earlier rule of ``values``; each rule is chosen at most once.
    """
    if not is_integer(count) or not 1 <= count <= len(values):  # True counted as 1
        raise ValueError(f"count must be in 1..{len(values)} (the number of rules), got {count!r}")
    names = list(values)
    table = np.array([values[name] for name in names], dtype=float)  # (rules, instances)
    if not np.isfinite(table).all():  # NaN won every argmin: a rule without a value was chosen first
        name = names[int(np.flatnonzero(~np.isfinite(table).all(axis=1))[0])]
        raise ValueError(f"complementary_rules needs a finite objective of every rule on every instance; {name}: "
                         f"{values[name]!r:.80}")
    lowest = np.full(table.shape[1], np.inf)
    chosen = []
    for _ in range(count):
        score = np.minimum(table, lowest).mean(axis=1)
        score[[names.index(name) for name in chosen]] = np.inf  # once no rule lowers it, all tie: the first was chosen
        pick = int(np.argmin(score))
        chosen.append(names[pick])
        lowest = np.minimum(lowest, table[pick])
    return chosen
