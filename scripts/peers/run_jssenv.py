"""JSSEnv (pip ``jssenv``): the ``jss-v1`` job-shop env on an OR-library text instance, random valid actions.

Run by the peer interpreter (protocol: ``_common.py``). The env class is driven directly:
``gym.make("jss-v1")`` fails under Gymnasium 1.x because ``JssEnv.reset`` takes no ``seed``.
A step is one action: a job to start, or the no-op (wait) when the mask offers it; only job
actions schedule an operation.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from typing import Any

from scripts.peers._common import UniformPicker, main, play


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The measurements of JSSEnv's JssEnv on ``args.instance`` (see ``_common``)."""
    began = time.perf_counter()
    from JSSEnv.envs.jss_env import JssEnv

    import_s = time.perf_counter() - began

    class Driver:
        def __init__(self) -> None:
            self.env = JssEnv({"instance_path": args.instance})
            self.noop = self.env.jobs
            self.pick = UniformPicker(args.seed)

        def reset(self) -> None:
            obs = self.env.reset()
            self.obs = obs[0] if isinstance(obs, tuple) else obs

        def step(self) -> tuple[bool, int, int]:
            action = self.pick.valid(self.obs["action_mask"])
            self.obs, _, done, _, _ = self.env.step(action)
            return bool(done), 1, int(action != self.noop)

    return {"package": "JSSEnv", "version": importlib.metadata.version("JSSEnv"),
            "api": "JSSEnv.envs.jss_env.JssEnv (jss-v1) step", "import_s": import_s, **play(Driver, args)}


if __name__ == "__main__":
    main(measure, __doc__)
