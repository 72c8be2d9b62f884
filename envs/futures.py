"""Futures sampled from a tier's generative model, for rollouts that should not face an empty future.

A rollout that forgets the future (``core.lookahead.forget_future``) plays as if no job will arrive
and no machine break down. :class:`SampledFutures` instead draws, per episode, a few instances of a
tier pool (at the reserved seeds :data:`FUTURE_SEEDS`) and rolls out the present grafted into each
(``core.lookahead.graft_future``): the real jobs as they are, the sample's later arrivals and events
after now. Nothing of the episode's own future is used. The lookahead agent (``futures=N``) and the
rollout forecast features (:class:`~dynasched_gym.envs.wrappers.ForecastFeatures`, ``futures=N``)
share it.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from dynasched_gym.checks import check_integer
from dynasched_gym.core.compiled import Static, allocate_state, compile_instance
from dynasched_gym.core.lookahead import sampled_pair_values, with_sampled_future
from dynasched_gym.core.simulator import Simulator

#: Pool seeds the futures are drawn from: disjoint from every seed range the training and evaluation
#: scripts use (training 0..999, validation 5 000.., test 10 000.., further 20 000..39 999).
FUTURE_SEEDS = range(900_000, 901_000)
#: The most futures an episode can sample: one per reserved seed, each drawn once.
MAX_FUTURES = len(FUTURE_SEEDS)


def check_outside_futures(name: str, seeds: range, sampled: str) -> None:
    """A ValueError naming ``name`` when the pool ``seeds`` an agent is tested (or validated) on overlap
    :data:`FUTURE_SEEDS`: an agent that rolls out in sampled futures (``sampled`` says which) could then roll out in
    the very instance it plays, seeing its real future."""
    if seeds and seeds.start < FUTURE_SEEDS.stop and FUTURE_SEEDS.start < seeds.stop:
        raise ValueError(f"{name}: pool seeds {seeds.start}..{seeds.stop - 1} overlap the seeds of the sampled "
                         f"futures {FUTURE_SEEDS.start}..{FUTURE_SEEDS.stop - 1} ({sampled}): the agent would roll out "
                         "in the instances it is tested on")


class SampledFutures:
    """``count`` futures per episode from the tier pool ``tier``/``size`` (``count`` >= 1).

    An episode's futures are chosen from its instance's name and ``seed``, so an instance gets the
    same futures in every run and in every process. ``slots`` envs can be served at once (index ``i``
    of :meth:`pair_values`), each keeping the futures of the instance it last saw.
    """

    def __init__(self, count: int, tier: str, size: str, seed: int = 0, slots: int = 1) -> None:
        from dynasched_gym.generation import tier_pool

        self.count, self.tier, self.size = check_integer("futures", count, 1, MAX_FUTURES), tier, size
        self.seed = check_integer("seed", seed, 0)  # checked now, not by numpy at the first decision
        self._held: list[tuple[Static, list[tuple[Any, ...]]] | None] = [None] * check_integer("slots", slots, 1)
        self._pool = tier_pool(tier, size)  # an unknown tier or size is refused now, not at the first reset

    def __repr__(self) -> str:
        return f"SampledFutures(count={self.count}, tier={self.tier!r}, size={self.size!r}, seed={self.seed})"

    def seeds(self, name: str) -> list[int]:
        """The pool seeds of the futures of the instance called ``name``."""
        rng = np.random.default_rng([self.seed, zlib.crc32(name.encode("utf-8"))])
        return [int(s) for s in rng.choice(np.asarray(FUTURE_SEEDS), size=self.count, replace=False)]

    def _futures(self, sim: Simulator, i: int) -> list[tuple[Any, ...]]:
        """(future static, graft state, scratch state) of each future of ``sim``'s instance."""
        held = self._held[i]
        if held is not None and held[0] is sim.static:
            return held[1]
        futures = []
        for seed in self.seeds(sim.instance.name):
            sample = self._pool.instance(seed)
            if sample.name == sim.instance.name:  # the scripts refuse these seeds; a Python loop played them
                raise ValueError(f"{sim.instance.name} is itself one of its sampled futures ({self._pool!r}, seed "
                                 f"{seed}): its rollouts would play its real future; play instances of pool seeds "
                                 f"outside {FUTURE_SEEDS.start}..{FUTURE_SEEDS.stop - 1}")
            try:
                future = with_sampled_future(sim.static, compile_instance(sample))
            except ValueError as exc:
                raise ValueError(f"{self._pool!r}, seed {seed}, cannot be a future of {sim.instance.name}: "
                                 f"{exc}") from None
            futures.append((future, allocate_state(future), allocate_state(future)))
        self._held[i] = (sim.static, futures)
        return futures

    def pair_values(self, sim: Simulator, pair_job: np.ndarray, pair_machine: np.ndarray, count: int,
                    rollout_rules: np.ndarray, objective: int, i: int = 0) -> np.ndarray:
        """(count, R): the mean over the futures of the objective when pair ``k`` starts now and rule ``r``
        finishes the schedule (``core.lookahead.sampled_pair_values``); ``sim`` is unchanged."""
        values = np.empty((count, rollout_rules.shape[0]))
        total = np.zeros_like(values)
        for future, grafted, scratch in self._futures(sim, i):
            sampled_pair_values(sim.static, sim.state, future, grafted, scratch, pair_job, pair_machine, count,
                                rollout_rules, objective, values)
            total += values
        return total / self.count
