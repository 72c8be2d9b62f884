"""Pinned play: what the rules, the lookahead and the observations give on two fixed instances.

A results store reuses a row whenever the agent's configuration hash matches, and that hash carries
``BEHAVIOUR_VERSION`` (dynasched_gym/results.py) so that rows played by an older behaviour are never
reused. A change that makes these values move therefore needs a ``BEHAVIOUR_VERSION`` bump; then write
the new pins with ``python tests/test_behaviour_pins.py`` (the file records the version it was written
for, so the bump cannot be forgotten).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import dynasched_gym  # noqa: F401  (registers the ids)
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.rules import rule_names
from dynasched_gym.core.simulator import rollout
from dynasched_gym.envs.wrappers import ForecastFeatures
from dynasched_gym.generation import tier_pool
from dynasched_gym.io import resolve_instance
from dynasched_gym.results import BEHAVIOUR_VERSION

PINS = Path(__file__).with_name("data") / "behaviour_pins.json"
#: The forecast features of the default training config (conf/env/dfjsp.yaml, forecast_features).
FORECAST_RULES = ("EDD:EET", "ATC:LWL")


def observed_behaviour() -> dict[str, list[float]]:
    """Makespan and total weighted tardiness of every deterministic rule (plain and emergency-first) on
    Brandimarte mk01 and the first easy and medium pool members, of the lookahead on the latter, and the sum of every
    observation array (full observations and the default forecast features) over an EDD:EET episode."""
    pool_member = tier_pool("medium", "small").instance(0)
    values: dict[str, list[float]] = {}

    def record(key: str, schedule) -> None:
        assert schedule.finished, key
        values[key] = [schedule.metrics["makespan"], schedule.metrics["total_weighted_tardiness"]]

    instances = (("mk01", resolve_instance("mk01")), ("easy pool seed 0", tier_pool("easy", "small").instance(0)),
                 ("medium pool seed 0", pool_member))
    for name, instance in instances:
        for rule in rule_names():
            record(f"{name} rule:{rule}", rollout(instance, rule=rule))
    env_kwargs = {"instance": pool_member, "objective": "weighted_tardiness"}
    record("medium pool seed 0 lookahead", run_episode(make("lookahead"), gym.make("DynaSched/DFJSP-v0",
                                                                                    **env_kwargs), seed=0))
    record("medium pool seed 0 rule:EDD:EET:emergency",
           run_episode(make("rule:EDD:EET", emergency_first=True), gym.make("DynaSched/DFJSP-v0", **env_kwargs),
                       seed=0))

    env = ForecastFeatures(gym.make("DynaSched/DFJSP-v0", observability="full", **env_kwargs), FORECAST_RULES)
    agent = make("rule:EDD:EET")
    observation, info = env.reset(seed=0)
    agent.reset(env)
    sums = {key: 0.0 for key in observation}
    rewards, done = 0.0, False
    while not done:
        for key, array in observation.items():
            sums[key] += float(np.asarray(array, dtype=np.float64).sum())
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        rewards, done = rewards + float(reward), terminated or truncated
    values.update({f"observation sum {key}": [total] for key, total in sums.items()})
    values["reward sum"] = [rewards]
    return values


def test_play_matches_the_pins_of_the_current_behaviour_version(tmp_path, monkeypatch):
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    pinned = json.loads(PINS.read_text(encoding="utf-8"))
    assert pinned["behaviour_version"] == BEHAVIOUR_VERSION, (
        f"{PINS.name} was written for BEHAVIOUR_VERSION {pinned['behaviour_version']}, the code has "
        f"{BEHAVIOUR_VERSION}: write the pins again (python tests/test_behaviour_pins.py)")
    observed = observed_behaviour()
    assert set(observed) == set(pinned["values"])
    moved = {key: (pinned["values"][key], value) for key, value in observed.items()
             if value != pytest.approx(pinned["values"][key], rel=1e-9, abs=1e-9)}
    assert not moved, (f"play changed (pinned, now): {moved}; if intended, bump BEHAVIOUR_VERSION in "
                       "dynasched_gym/results.py and write the pins again (python tests/test_behaviour_pins.py)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: python tests/test_behaviour_pins.py  (writes tests/data/behaviour_pins.json)")
    PINS.parent.mkdir(exist_ok=True)
    text = json.dumps({"behaviour_version": BEHAVIOUR_VERSION, "values": observed_behaviour()}, indent=1,
                      sort_keys=True)
    PINS.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {PINS}")
