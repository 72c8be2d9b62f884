"""Agents for the DynaSched environments, installed as ``dynasched_gym.agents``.

One interface (:class:`Agent`: ``reset(env)``, ``act(observation, info)``) for dispatching rules,
the snapshot lookahead, PPO and LLM agents. :func:`make` builds any of them by name and
:func:`run_episode` plays one episode. Every agent and what it sees: docs/agents.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from dynasched_gym.agents.base import Agent, run_episode
from dynasched_gym.checks import check_arguments, check_bool, keyword_arguments
from dynasched_gym.errors import needs_extra


def _built(cls: type[Agent], *args: Any, **kwargs: Any) -> Agent:
    """``cls(*args, **kwargs)``; an unknown keyword argument (``make("lookahead", topk=8)``) is a TypeError naming the
    nearest of ``cls``'s and all of them."""
    check_arguments(cls.__name__, kwargs, keyword_arguments(cls), "docs/agents.md")
    return cls(*args, **kwargs)


def _rule(name: str, **kwargs: Any) -> Agent:
    from dynasched_gym.agents.rules import RuleAgent

    prefix, _, rule = name.partition(":")
    if "rule" in kwargs:  # Python's "got multiple values for argument 'rule'" named neither
        raise TypeError(f"agent {name!r} names its rule: give it as {prefix}:{kwargs['rule']}, not rule="
                        f"{kwargs['rule']!r}")
    return _built(RuleAgent, rule, **kwargs)


def _lookahead(name: str, **kwargs: Any) -> Agent:
    from dynasched_gym.agents.lookahead import LookaheadAgent

    clairvoyant = name == "lookahead-oracle"
    if check_bool("clairvoyant", kwargs.setdefault("clairvoyant", clairvoyant)) != clairvoyant:
        raise ValueError(f"agent {name!r} is {'' if clairvoyant else 'not '}clairvoyant, got clairvoyant="
                         f"{kwargs['clairvoyant']!r}: use {'lookahead' if clairvoyant else 'lookahead-oracle'!r}")
    return _built(LookaheadAgent, **kwargs)


def _random(name: str, **kwargs: Any) -> Agent:
    from dynasched_gym.agents.random import RandomAgent

    return _built(RandomAgent, **kwargs)


def _ppo(name: str, **kwargs: Any) -> Agent:
    with needs_extra("rl", "the PPO agent"):
        from dynasched_gym.agents.ppo import PPOAgent

    return _built(PPOAgent, **kwargs)


def _llm(name: str, **kwargs: Any) -> Agent:
    with needs_extra("llm", "the LLM agent"):
        from dynasched_gym.agents.llm import LLMAgent

    return _built(LLMAgent, **kwargs)


#: Name (or ``prefix:``) -> factory(name, **kwargs).
REGISTRY: dict[str, Callable[..., Agent]] = {
    "rule:": _rule,
    "pdr:": _rule,  # the reference package's name for the same rules
    "lookahead": _lookahead,
    "lookahead-oracle": _lookahead,
    "random": _random,
    "ppo": _ppo,
    "llm": _llm,
}


def make(name: str, **kwargs: Any) -> Agent:
    """Build an agent by name: ``"rule:MWKR:EET"`` (or ``"pdr:MWKR:EET"``), ``"lookahead"``,
    ``"lookahead-oracle"``, ``"random"``, ``"ppo"`` (``checkpoint=...``), ``"llm"`` (``model=..., base_url=...,
    level="L2", mode="direct", refinement="greedy"``, docs/llm.md); keyword arguments go to its class."""
    if not isinstance(name, str):
        raise TypeError(f"an agent name is a string such as 'rule:MWKR:EET' or 'lookahead', got {name!r}")
    for key, factory in REGISTRY.items():
        if name == key or (key.endswith(":") and name.startswith(key)):
            return factory(name, **kwargs)
    raise ValueError(f"unknown agent {name!r}; known: {', '.join(REGISTRY)}{_nearest(name)}")


def _nearest(name: str) -> str:
    """The hint for an unknown agent ``name``: the registered name or prefix it is a case or a typo away from."""
    if name.lower().replace("_", "-") in ("cpsat-oracle", "oracle"):  # a name of the leaderboard, no agent
        return (" (the clairvoyant CP-SAT reference plays no env and is no agent: "
                "dynasched_gym.oracle.solve_clairvoyant(instance, objective), or agent=cpsat_oracle in the scripts)")
    if name.lower() == "llm-scheduler":  # the reference package's (dsbx) name of its LLM dispatching agent
        return " (did you mean 'llm'?)"
    from dynasched_gym.core.rules import JOB_RULES, MACHINE_RULES, rule_name

    job, colon, machine = name.upper().partition(":")
    if job in JOB_RULES and (not colon or machine in MACHINE_RULES):  # a rule without its prefix: dsbx's "spt"
        return f" (did you mean 'rule:{rule_name(name)}'?)"
    head, colon, _ = name.lower().partition(":")
    close = difflib.get_close_matches(head + colon, list(REGISTRY), n=1)
    if not close:
        return ""
    if close[0].endswith(":"):  # rules:MWKR, RULE:MWKR:EET; rule alone names no rule
        return f" (did you mean {close[0] + (name[len(head) + 1:] or '<JOB>:<MACHINE>')!r}?)"
    return f" (did you mean {close[0]!r}?)"


__all__ = ["REGISTRY", "Agent", "make", "run_episode"]
