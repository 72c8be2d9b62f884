"""A ``+`` override that adds a setting no script reads is refused, naming it (scripts/overrides.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from scripts.overrides import added_keys


def test_added_keys_are_the_topmost_keys_missing_from_the_base() -> None:
    base = {"seeds": {"start": 0, "count": 1}, "agent": {"rules": {"names": ["rule:SPT:EET"], "kwargs": {}}}}
    config = {"seeds": {"start": 0, "count": 1, "cout": 5}, "tier": {"name": "hard", "priors": {"a": 1}},
              "agent": {"rules": {"names": ["rule:SPT:EET"], "kwargs": {"seed": 3}, "kwarg": {"seed": 3}}}}
    assert added_keys(config, base) == ["seeds.cout", "tier", "agent.rules.kwargs.seed", "agent.rules.kwarg"]
    assert added_keys(config, base, free=("agent.*.kwargs",)) == ["seeds.cout", "tier", "agent.rules.kwarg"]
    assert added_keys(config, base, free=("agent",)) == ["seeds.cout", "tier"]
    assert added_keys(base, base) == []


@pytest.mark.parametrize(("script", "overrides", "message"), [
    ("evaluate", ["+tier=hard"], "no such setting: tier (did you mean tiers?)"),
    ("evaluate", ["+seeds.cout=5", "+objectve=makespan"],
     "no such settings: seeds.cout (did you mean seeds.count?); objectve (did you mean objective?)"),
    ("leaderboard", ["+foo=1"], "no such setting: foo (known: agent, all_rows,"),
    ("calibrate", ["+seeed=3", "+options.max_steps=2"], "no such setting: seeed (did you mean seed?)"),
    ("bench", ["+quik=true"], "no such setting: quik (did you mean quick?)"),
    ("observability", ["+levls=[L1]", "agent.model=m"], "no such setting: levls (did you mean levels?)"),
    ("train", ["+train.learning_rat=1.0"], "no such setting: train.learning_rat (did you mean train.learning_rate?)"),
])
def test_each_script_refuses_an_added_key_it_would_not_read(script: str, overrides: list[str], message: str,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"scripts.{script}")
    monkeypatch.setattr(sys, "argv", [script, *overrides, f"hydra.run.dir={tmp_path}"])
    with pytest.raises(SystemExit) as exit_info:
        module.main()
    assert exit_info.value.code == 1
    assert message in capsys.readouterr().err


def test_an_argument_added_to_an_agent_reaches_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An agent entry's kwargs are the agent's to check: ``+`` may add one, and a wrong one is named there."""
    from scripts import evaluate

    monkeypatch.setattr(sys, "argv", ["evaluate", "agent=[random]", "tiers=[easy]", "ppo=null",
                                      "+agent.random.kwargs.foo=3", f"store={tmp_path / 'store.jsonl'}",
                                      f"hydra.run.dir={tmp_path}"])
    with pytest.raises(SystemExit):
        evaluate.main()
    assert "agent.random (name 'random', kwargs {'seed': 0, 'foo': 3}): RandomAgent.__init__() got an unexpected" \
        in capsys.readouterr().err
