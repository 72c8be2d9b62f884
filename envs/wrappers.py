"""Wrappers of the DFJSP environments: a flat observation for MLP policies, and observability ablations.

Episode statistics need no wrapper of ours: Gymnasium's
:class:`~gymnasium.wrappers.RecordEpisodeStatistics` (single env) and
:class:`gymnasium.wrappers.vector.RecordEpisodeStatistics` (vector env) record returns and
lengths; the final step's ``info["metrics"]`` carries the schedule's metrics.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dynasched_gym.envs.dfjsp.features import BLOCKS, OBSERVABILITY, num_columns

FEATURE_KEYS = ("candidates", "machines", "global")


def flat_keys(keep_mask: bool) -> tuple[str, ...]:
    """The observation keys a flat observation concatenates, in order."""
    return (*FEATURE_KEYS, "action_mask") if keep_mask else FEATURE_KEYS


def flat_space(space: spaces.Dict, keep_mask: bool) -> spaces.Box:
    """The ``Box`` of flat observations of the ``Dict`` observation space ``space``."""
    lows, highs = [], []
    for key in flat_keys(keep_mask):
        sub = space[key]
        if isinstance(sub, spaces.MultiBinary):
            lows.append(np.zeros(sub.n, dtype=np.float32))
            highs.append(np.ones(sub.n, dtype=np.float32))
        else:
            lows.append(sub.low.ravel())
            highs.append(sub.high.ravel())
    return spaces.Box(np.concatenate(lows), np.concatenate(highs), dtype=np.float32)


def flatten(observation: dict[str, np.ndarray], keep_mask: bool, num_envs: int | None = None) -> np.ndarray:
    """Concatenate a ``Dict`` observation (or, with ``num_envs``, a batch of them) into float32 vectors."""
    if num_envs is None:
        return np.concatenate([observation[k].ravel() for k in flat_keys(keep_mask)], dtype=np.float32)
    return np.concatenate([observation[k].reshape(num_envs, -1) for k in flat_keys(keep_mask)], axis=1,
                          dtype=np.float32)


class _MaskedWrapper(gym.ObservationWrapper):
    """An observation wrapper that keeps the env's ``action_masks()`` (the sb3-contrib convention)."""

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool), from the wrapped env."""
        return self.env.get_wrapper_attr("action_masks")()


class FlattenDictObservation(_MaskedWrapper):
    """One float32 vector per observation, for MLP policies.

    The vector is ``candidates`` (row by row), ``machines`` (row by row), ``global`` and, with
    ``keep_mask=True`` (default), ``action_mask`` as 0/1 floats; with ``keep_mask=False`` the mask
    is dropped from the vector (padding slots still show ``valid = 0`` in ``candidates``) and stays
    available through :meth:`action_masks` for masked algorithms.

    Args:
        env: a DFJSP env (``Dict`` observation).
        keep_mask: append the action mask to the vector.
    """

    def __init__(self, env: gym.Env, keep_mask: bool = True) -> None:
        super().__init__(env)
        self.keep_mask = keep_mask
        self.observation_space = flat_space(env.observation_space, keep_mask)

    def observation(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        """The flat vector of ``observation``."""
        return flatten(observation, self.keep_mask)



class ObservabilityWrapper(_MaskedWrapper):
    """Zero the feature columns above an observability level (an ablation; the spaces do not change).

    Wrapping an ``oracle`` env with ``observability="full"`` shows a policy trained with oracle
    features what it would see without the future events, at the same observation shape.

    Args:
        env: a DFJSP env (``Dict`` observation).
        observability: ``concise`` or ``full`` (or ``oracle``, which changes nothing).
    """

    def __init__(self, env: gym.Env, observability: str) -> None:
        super().__init__(env)
        if observability not in OBSERVABILITY:
            raise ValueError(f"observability must be one of {OBSERVABILITY}, got {observability!r}")
        self.observability = observability
        level = OBSERVABILITY.index(observability)
        self._shown = {key: num_columns(BLOCKS[key], level) for key in FEATURE_KEYS}

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``observation`` with the hidden columns set to 0 (in place: the env returns fresh arrays)."""
        for key, shown in self._shown.items():
            observation[key][..., shown:] = 0.0
        return observation
