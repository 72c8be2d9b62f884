"""dynasched-gym itself through the runners' protocol: the cold-start and memory figures of scripts/bench.py.

``--num-envs N`` with N > 1 plays ``gym.make_vec(..., vectorization_mode="vector_entry_point")``
with N sub-environments instead of ``gym.make``; one vector step is N steps, and the first
"episode" lasts until every sub-environment has finished one. numba's cache is wherever
``$NUMBA_CACHE_DIR`` says (dynasched_gym/core/_numba_cache.py). The drivers below are also the ones
scripts/bench.py times in-process.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from typing import Any

import numpy as np

from scripts.peers._common import UniformPicker, count, main, play

ENV_ID = "DynaSched/DFJSP-v0"


class EnvDriver:
    """A single env with uniformly random valid actions; each step schedules one operation."""

    def __init__(self, env: Any, seed: int = 0) -> None:
        self.env = env
        self.pick = UniformPicker(seed)
        self._seed: int | None = seed
        self.obs: dict[str, np.ndarray] = {}

    def reset(self) -> None:
        self.obs = self.env.reset(seed=self._seed)[0]
        self._seed = None

    def step(self) -> tuple[bool, int, int]:
        self.obs, _, terminated, truncated, _ = self.env.step(self.pick.valid(self.obs["action_mask"]))
        return terminated or truncated, 1, 1


class VectorDriver:
    """A vector env (next-step autoreset) with uniformly random valid actions in every sub-environment.

    A step is ``num_envs`` transitions; the transitions that autoreset a sub-environment schedule
    nothing and are left out of the operations. "Done" once every sub-environment finished an episode.
    """

    def __init__(self, venv: Any, seed: int = 0) -> None:
        self.venv = venv
        self.pick = UniformPicker(seed)
        self._seed: int | None = seed
        self.obs: dict[str, np.ndarray] = {}
        self._resetting = np.zeros(venv.num_envs, dtype=bool)
        self._finished = np.zeros(venv.num_envs, dtype=bool)

    def reset(self) -> None:
        self.obs = self.venv.reset(seed=self._seed)[0]
        self._seed = None
        self._resetting[:] = False
        self._finished[:] = False

    def step(self) -> tuple[bool, int, int]:
        n = self.venv.num_envs
        ops = n - int(np.count_nonzero(self._resetting))
        self.obs, _, terminated, truncated, _ = self.venv.step(self.pick.valid_rows(self.obs["action_mask"]))
        self._resetting = terminated | truncated
        self._finished |= self._resetting
        return bool(self._finished.all()), n, ops


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The measurements of our env (single or vector, ``--num-envs``) on ``args.instance`` (see ``_common``)."""
    began = time.perf_counter()
    import gymnasium as gym

    import dynasched_gym.envs.dfjsp.env  # noqa: F401  (the env module, as the peers' runners import theirs)

    import_s = time.perf_counter() - began
    n = args.num_envs

    def make() -> EnvDriver | VectorDriver:
        if n > 1:
            return VectorDriver(gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point",
                                             instance=args.instance), args.seed)
        return EnvDriver(gym.make(ENV_ID, instance=args.instance), args.seed)

    api = f"gym.make_vec({ENV_ID!r}, num_envs={n}) step" if n > 1 else f"gym.make({ENV_ID!r}) step"
    return {"package": "dynasched-gym", "version": importlib.metadata.version("dynasched-gym"), "api": api,
            "num_envs": n, "import_s": import_s, **play(make, args)}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--num-envs", type=count(1), default=1, help="> 1: a vector env of this many sub-environments")


if __name__ == "__main__":
    main(measure, __doc__, _configure)
