"""The one agent interface, and playing an episode with it."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np

from dynasched_gym.errors import TruncatedEpisodeWarning, user_stacklevel
from dynasched_gym.schedule import Schedule


class Agent(ABC):
    """A scheduling policy for the DynaSched environments.

    :meth:`reset` binds the agent to an environment at the start of an episode (after
    ``env.reset``); :meth:`act` returns the action for an observation. Agents may read the
    environment's simulator through ``env.unwrapped`` (what is known now; never the future, except
    agents labelled clairvoyant) but never step it themselves.
    """

    #: Short name used in result rows and on the leaderboard.
    name: str = "agent"
    #: True for agents that see future events (references only, never ranked as fair agents).
    clairvoyant: bool = False

    @property
    def sampled_futures(self) -> int:
        """How many sampled futures (instances of pool seeds ``envs.futures.FUTURE_SEEDS``) the agent rolls out in
        per episode; 0: none. Tests on those seeds are refused (it could roll out in the instance it plays)."""
        return 0

    def reset(self, env: gym.Env) -> None:
        """Start an episode in ``env`` (called after ``env.reset``)."""
        from dynasched_gym.envs.dfjsp.vector import dfjsp_unwrapped  # here: importing the agents stays light

        self.env = dfjsp_unwrapped(env, type(self).__name__)

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # only reached before the first reset
            raise AttributeError(f"{type(self).__name__} has no env yet: call agent.reset(env) after env.reset() "
                                 "and before act() (run_episode does both)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def require_pair_env(self) -> None:
        """Refuse the rule-selection env ``DFJSP-Rules-v0``: this agent plays (operation, machine) pair slots."""
        if hasattr(self.env, "rules"):
            raise ValueError(f"{self.name} picks (operation, machine) pairs: play it on DynaSched/DFJSP-v0 or "
                             "FJSP-v0, not on the rule-selection env DFJSP-Rules-v0")

    @abstractmethod
    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """The action to play now."""

    def config(self) -> dict[str, Any]:
        """The settings that define this agent (hashed into result rows)."""
        return {"name": self.name}


def run_episode(agent: Agent, env: gym.Env, seed: int | None = None) -> Schedule:
    """Play one episode of ``env`` with ``agent`` and return its schedule.

    The DynaSched envs end every episode by ``terminated``; one a wrapper truncates (``TimeLimit``, as
    ``gym.make(..., max_episode_steps=N)`` adds) returns its unfinished schedule (``schedule.finished`` False),
    whose metrics count only the jobs completed by then (0 when none has), with a
    :class:`~dynasched_gym.errors.TruncatedEpisodeWarning` naming the step.
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be an Agent (dynasched_gym.agents.make('random'), ...), got "
                        f"{type(agent).__name__}: {agent!r:.80}")
    if not isinstance(env, gym.Env):  # a vector env failed on its first step with a message about action shapes
        raise TypeError(f"env must be a single DynaSched gymnasium env (gym.make(...), not gym.make_vec), got "
                        f"{type(env).__name__}: {env!r:.80}")
    observation, info = env.reset(seed=seed)
    agent.reset(env)
    done, steps = False, 0
    while not done:
        observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
        done, steps = terminated or truncated, steps + 1
    schedule = env.unwrapped.schedule()
    if not schedule.finished:  # the env itself ends an episode only when every job has
        open_jobs = int(np.count_nonzero(np.isnan(schedule.job_completion) & np.isnan(schedule.job_cancelled_at)))
        why = ("truncated: a TimeLimit, as gym.make(..., max_episode_steps=...) adds, or another wrapper" if truncated
               else "a wrapper ended it")
        warnings.warn(f"the episode ended after {steps} steps with {open_jobs} of {schedule.instance.num_jobs} jobs "
                      f"unfinished ({why}): the schedule is unfinished (schedule.finished is False) and its metrics "
                      "count only the jobs completed by then, no result of the episode", TruncatedEpisodeWarning,
                      stacklevel=user_stacklevel())
    return schedule
