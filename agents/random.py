"""The uniformly random valid-action agent (a floor for every leaderboard)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from dynasched_gym.agents.base import Agent
from dynasched_gym.checks import check_integer


class RandomAgent(Agent):
    """Plays a uniformly random valid action; reseeded with ``seed`` at every :meth:`reset`."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = check_integer("seed", seed, 0)

    def reset(self, env: gym.Env) -> None:
        super().reset(env)
        self._rng = np.random.default_rng(self.seed)

    def act(self, observation: dict[str, np.ndarray] | np.ndarray, info: dict[str, Any]) -> int:
        # a flattened observation (FlattenDictObservation) holds no mask by key: the env's is the same
        mask = observation["action_mask"] if isinstance(observation, dict) else self.env.action_masks()
        valid = np.flatnonzero(mask)
        # no valid action: an episode whose jobs all went before any decision ends at its first step, whatever it is
        return int(self._rng.choice(valid)) if valid.size else 0

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed}
