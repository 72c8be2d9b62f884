"""The reference package ``dsbx`` 0.4.0: ``DynaSchedEnv`` on a generated instance directory, random legal actions.

Run by the peer interpreter (protocol: ``_common.py``). The directory (``events.jsonl``,
``static_jobs.json``, ``input_model.json`` or ``static_machines.json``) is loaded as ``dsbx-agent
run`` loads it (``dsbx.Sim.Loader.load_instance_from_events``), and the loop is that command's:
take a random legal action (``{job_id, machine_group, machine_candidates}``) when there is one,
else ``advance_if_idle()``. A step is one ``env.step`` (one dispatched operation); the advances
count in the time, not as steps. The trajectory is not recorded and loguru's sinks are removed, so
the figure is an upper bound of the package's loop (``dsbx-agent run`` records and logs).

dsbx can stop short of the end: a job that arrives with no operation, or routed through a group
with no machine, is never ready nor done, and once no event is left ``advance_if_idle()`` changes
nothing (dsbx logs "no candidate future times" to the removed sinks). That loop would then spin;
the runner fails instead, naming the time.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from pathlib import Path
from typing import Any

from scripts.peers._common import UniformPicker, main, play


class Driver:
    """Random legal actions on a reset-able ``DynaSchedEnv`` (``env``), advancing it while none is legal."""

    def __init__(self, env: Any, pick: UniformPicker) -> None:
        self.env = env
        self.pick = pick

    def reset(self) -> None:
        self.env.reset()

    def step(self) -> tuple[bool, int, int]:
        """Raises RuntimeError where an advance changes neither the clock nor the event counters (an advance that
        changes nothing changes nothing again: dsbx would never act nor end)."""
        before = None
        while True:
            legal = self.env.legal_actions()
            if legal:
                done = self.env.step(legal[self.pick(len(legal))])[2]
                return bool(done), 1, 1
            obs = self.env.advance_if_idle()
            if self.env.done():
                return True, 0, 0
            # an advance moves the clock, or applies the events due at the current time and counts them
            now = (obs["time"], obs["dynamic_summary"]["events"])
            if now == before:
                raise RuntimeError(f"dsbx made no progress at t={now[0]}: no legal action, not done, "
                                   "advance_if_idle() changed nothing")
            before = now


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The measurements of dsbx's single-agent env on ``args.instance`` (see ``_common``)."""
    began = time.perf_counter()
    from dsbx.Env.SingleAgent import DynaSchedEnv
    from dsbx.Sim.Loader import load_instance_from_events
    from loguru import logger

    import_s = time.perf_counter() - began
    logger.remove()

    def make() -> Driver:
        model, events = load_instance_from_events(Path(args.instance) / "events.jsonl")
        env = DynaSchedEnv(model, events=events, auto_generate_events=False, track_trajectory=False)
        return Driver(env, UniformPicker(args.seed))

    return {"package": "dsbx", "version": importlib.metadata.version("dsbx"),
            "api": "dsbx.Env.SingleAgent.DynaSchedEnv step / advance_if_idle", "import_s": import_s,
            **play(make, args, chunk_steps=1)}


if __name__ == "__main__":
    main(measure, __doc__)
