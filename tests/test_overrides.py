"""A ``+`` override that adds a setting no script reads is refused, naming it (scripts/overrides.py)."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hydra import compose, initialize_config_module
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from test_evaluate import config

from dynasched_gym.errors import MissingExtraError
from scripts.overrides import (
    HYDRA_LAUNCHER_PLUGINS,
    LAUNCHER_PLUGINS,
    SettingError,
    added_keys,
    base_overrides,
    check_config_groups,
    check_launcher,
    output_file,
    output_folder,
    remove_empty_run_folder,
)


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
    assert f"error: {script if script != 'train' else 'train/ppo'}: {message}" in \
        _usage_error(script, overrides, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("search_path", ["hydra.searchpath=[file://{conf}]", "hydra.searchpath=[pkg://my_conf]",
                                         "--config-dir={conf}"])
def test_an_added_key_is_checked_against_config_groups_of_the_runs_search_path(
        search_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/leaderboard.md's own agent (hydra.searchpath) with a + override failed in Hydra: "Could not load
    'agent/last_slot'", a traceback and an empty run folder, since the check composed without the search path. The
    check of config group options looks there too, and names the agent it finds among the options."""
    (tmp_path / "my_conf" / "agent").mkdir(parents=True)
    (tmp_path / "my_conf" / "__init__.py").write_text("")
    (tmp_path / "my_conf" / "agent" / "last_slot.yaml").write_text(
        "last_slot:\n  _target_: dynasched_gym.agents.random.RandomAgent\n  kwargs: {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    search_path = search_path.format(conf=tmp_path / "my_conf")
    err = _usage_error("evaluate", [search_path, "agent=[last_slot]", "+agent.last_slot.labl=mine"], tmp_path,
                       monkeypatch, capsys)
    assert "error: agent.last_slot: no such key(s) labl; an agent entry has" in err, err
    err = _usage_error("evaluate", [search_path, "agent=[last_slot,lst_slot]"], tmp_path, monkeypatch, capsys)
    assert err == ("error: agent=[last_slot,lst_slot]: no such agent config 'lst_slot'; choose one of cpsat_oracle, "
                   "last_slot, llm, lookahead, lookahead_oracle, random, rules\n")


@pytest.mark.parametrize(("script", "overrides", "message"), [
    ("calibrate", ["size=huge"], "size=huge: no such size config; choose one of large, medium, small"),
    ("calibrate", ["size=3"], "size=3: no such size config; choose one of large, medium, small"),
    ("evaluate", ["agent=[rules,nosuch]"], "agent=[rules,nosuch]: no such agent config 'nosuch'; choose one of "
     "cpsat_oracle, llm, lookahead, lookahead_oracle, random, rules"),
    ("leaderboard", ["+agent@agent.mine=rule"], "+agent@agent.mine=rule: no such agent config; choose one of"),
    ("train", ["env=dfjps"], "env=dfjps: no such env config; choose one of dfjsp"),
    ("observability", ["agent=lm"], "agent=lm: no such agent config; choose one of cpsat_oracle, llm,"),
    ("bench", ["+size=huge"], "+size=huge: no such size config; choose one of large, medium, small"),
    ("evaluate", ["+tier=nightmare"], "+tier=nightmare: no such tier config; choose one of easy, extreme, hard, "
     "medium"),
    # a sweep: Hydra refused it too, but left the sweep folder with its multirun.yaml
    ("calibrate", ["-m", "size=small,huge"], "size=small,huge: no such size config 'huge'; choose one of large,"),
    ("evaluate", ["-m", "agent=[rules],[nosuch]"], "agent=[rules],[nosuch]: no such agent config 'nosuch'; choose"),
    ("train", ["-m", "env=choice(dfjsp,nosuch)"], "env=choice(dfjsp,nosuch): no such env config 'nosuch'; choose"),
    ("evaluate", ["-m", "hydra/launcher=nosuch"], "hydra/launcher=nosuch: no such hydra/launcher config; choose one "
     "of basic, "),  # Hydra's own group, nested; its options depend on the launcher plugins installed
    ("bench", ["hydra/job_logging=quiet"], "hydra/job_logging=quiet: no such hydra/job_logging config; choose one of"),
    # Hydra takes no null for a config group (a ValueError traceback), be it optional (launcher) or not (size)
    ("calibrate", ["size=null"], "size=null: a config group takes one of its configs, not null (leave size out for "
     "the script's default); choose one of large, medium, small"),
    ("evaluate", ["launcher=null"], "launcher=null: a config group takes one of its configs, not null (leave launcher "
     "out for the script's default); choose one of joblib, ray, slurm"),
    ("train", ["-m", "launcher=null"], "launcher=null: a config group takes one of its configs, not null"),
    ("train", ["env=null"], "env=null: a config group takes one of its configs, not null"),
])
def test_each_script_refuses_a_config_group_option_that_does_not_exist(script: str, overrides: list[str],
                                                                      message: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Hydra refused these with its own multi-line "Could not find 'size/huge'" (or a ValueError traceback for
    null), exit status 1, leaving a sweep's folder behind: one line, status 2, no run or sweep folder."""
    if "-m" in overrides:
        overrides = [*overrides, f"hydra.sweep.dir={tmp_path / 'run'}"]
    err = _usage_error(script, overrides, tmp_path, monkeypatch, capsys)
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err


@pytest.mark.parametrize(("script", "overrides", "message"), [
    # Hydra: "Could not override 'tier'. No match in the defaults list. To append to your default list use +tier=hard"
    ("train", ["tier=hard"], "tier=hard: train/ppo selects no tier config; its config groups are env, launcher"),
    ("evaluate", ["tier=nightmare"], "tier=nightmare: evaluate selects no tier config; its config groups are agent, "
     "launcher"),  # was "no such tier config", and tier=hard then failed in Hydra
    ("leaderboard", ["tier=hard"], "tier=hard: leaderboard selects no tier config; its config groups are agent, "
     "launcher"),  # its groups come from conf/evaluate.yaml, which its config includes
    ("bench", ["tier=easy"], "tier=easy: bench selects no tier config; it has no config groups"),
    ("calibrate", ["size=medium", "env=dfjsp"], "env=dfjsp: calibrate selects no env config; its config groups are "
     "size"),
    ("train", ["train=ppo2"], "train=ppo2: train/ppo selects no train config; its config groups are env, launcher"),
    ("train", ["-m", "tier=easy,hard"], "tier=easy,hard: train/ppo selects no tier config; its config groups are env, "
     "launcher"),  # Hydra failed in the sweep's first job, leaving the sweep folder
    # Hydra: "Could not delete 'tier'. No match in the defaults list"
    ("train", ["~tier"], "~tier: train/ppo selects no tier config; its config groups are env, launcher"),
    ("evaluate", ["~launcher=joblib"], "~launcher=joblib: evaluate selects no launcher config (launcher is null)"),
    # a config the script reads: a traceback once train read cfg.env, "size.scenario must be a mapping" in calibrate
    ("train", ["~env"], "~env: train/ppo reads its env config (dfjsp), which cannot be deleted (leave env out for the "
     "script's default); choose one of dfjsp"),
    ("calibrate", ["~size"], "~size: calibrate reads its size config (small), which cannot be deleted (leave size out "
     "for the script's default); choose one of large, medium, small"),
    ("calibrate", ["-m", "~size=small", "seed=0,1"], "~size=small: calibrate reads its size config (small), which "),
    ("observability", ["~agent"], "~agent: observability reads its agent config (llm), which cannot be deleted"),
    # a list of configs, which Hydra does not delete ("Could not delete 'agent'")
    ("evaluate", ["~agent"], "~agent: evaluate reads its agent configs (rules, lookahead, lookahead_oracle, random, "
     "cpsat_oracle), which cannot be deleted"),
])
def test_each_script_refuses_a_config_group_its_config_does_not_select_or_needs(script: str, overrides: list[str],
                                                                               message: str, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch,
                                                                               capsys: pytest.CaptureFixture[str]
                                                                               ) -> None:
    """Hydra reported these with its multi-line "Could not override" or "Could not delete", exit status 1, or the
    script failed on the config it lacked: one line naming the group and what the script takes, status 2."""
    if "-m" in overrides:
        overrides = [*overrides, f"hydra.sweep.dir={tmp_path / 'run'}"]
    err = _usage_error(script, overrides, tmp_path, monkeypatch, capsys)
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err


@pytest.mark.parametrize(("script", "overrides", "message"), [
    ("evaluate", ["seed.count=3"], "evaluate: no such setting: seed.count (did you mean seeds.count?); set an "
     "existing one (a + override adds a key only where the script takes free-form settings"),
    ("train", ["total_timesteps=1000"], "train/ppo: no such setting: total_timesteps (did you mean "
     "train.total_timesteps?)"),
    ("train", ["env.teir=hard", "train.timesteps=10"], "train/ppo: no such settings: env.teir (did you mean "
     "env.tier?); train.timesteps (did you mean train.total_timesteps?)"),
    ("train", ["train.imitation.foo=1"], "train/ppo: no such setting: train.imitation.foo (known: batch_size, "
     "episodes, epochs, learning_rate, rule)"),
    # Hydra looked the group up in train/ppo's folder: "In 'train/ppo': Could not find 'train/tier/hard'"
    ("train", ["+tier=hard"], "train/ppo: no such setting: tier (did you mean env.tier?)"),
    ("evaluate", ["agent.rules.kwargs.seed=3"], "evaluate: no such setting: agent.rules.kwargs.seed "
     "(agent.rules.kwargs is empty)"),
    # a mapping value, which Hydra merges into the key's: "Could not override 'agent.rules.kwargs'", status 1
    ("evaluate", ["agent.rules.kwargs={emergency_first:true}"], "evaluate: no such setting: "
     "agent.rules.kwargs.emergency_first (agent.rules.kwargs is empty)"),
    ("evaluate", ["seeds={start:10000,cout:2,x:{y:1}}"], "evaluate: no such settings: seeds.cout (did you mean "
     "seeds.count?); seeds.x (known: count, start); set an existing one"),
    ("calibrate", ["targets.utilisation=0.6"], "calibrate: no such setting: targets.utilisation (did you mean "
     "targets.utilization?)"),
    ("evaluate", ["-m", "seed.count=1,2"], "evaluate: no such setting: seed.count (did you mean seeds.count?)"),
    # a dict is merged into the mapping there: Hydra said "Key 'cnt' is not in struct", status 1
    ("evaluate", ["seeds={start:1,cnt:5}"], "evaluate: no such setting: seeds.cnt (did you mean seeds.count?)"),
    ("calibrate", ["targets={utilization:0.6,load:{cv:1}}"], "calibrate: no such setting: targets.load (did you "
     "mean targets.load_cv?)"),
])
def test_each_script_refuses_a_key_its_config_lacks_naming_the_nearest(script: str, overrides: list[str],
                                                                      message: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Hydra said "Could not override 'seed.count'. To append to your config use +seed.count=3", exit status 1, and
    that + was then refused as a key the script does not read: one line naming the nearest setting, status 2."""
    if "-m" in overrides:
        overrides = [*overrides, f"hydra.sweep.dir={tmp_path / 'run'}"]
    err = _usage_error(script, overrides, tmp_path, monkeypatch, capsys)
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err


def test_deleting_a_group_left_null_or_one_of_hydras_own_is_not_refused(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``~launcher`` changes nothing (no launcher is the default), and Hydra's own groups are Hydra's to check: some
    deletions work there (``~hydra/output``), others not (``~hydra/job_logging``)."""
    assert list(_reaches_run("evaluate", ["~launcher", "agent=[rules]"], tmp_path, monkeypatch).agent) == ["rules"]
    check_config_groups(["~launcher", "~hydra/output", "~hydra/job_logging"], config_name="train/ppo")


def test_without_hydras_private_defaults_list_the_selection_check_leaves_it_to_hydra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads Hydra 1.3's private defaults list; a Hydra without it must not break every script."""
    import hydra._internal.defaults_list as defaults_list

    with pytest.raises(SettingError, match="selects no tier config"):
        check_config_groups(["tier=hard"], config_name="train/ppo")
    monkeypatch.delattr(defaults_list, "_create_defaults_list")
    check_config_groups(["tier=hard"], config_name="train/ppo")
    with pytest.raises(SettingError, match="no such size config"):  # the group options are still checked
        check_config_groups(["size=huge"], config_name="calibrate")


def _usage_error(script: str, overrides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``script`` with ``overrides``, check it exits with status 2 leaving no run folder; its stderr."""
    module = importlib.import_module(f"scripts.{script}")
    monkeypatch.setattr(sys, "argv", [script, *overrides, f"hydra.run.dir={tmp_path / 'run'}"])
    with pytest.raises(SystemExit) as exit_info:
        module.main()
    assert exit_info.value.code == 2
    assert not (tmp_path / "run").exists(), list((tmp_path / "run").rglob("*"))
    err = capsys.readouterr().err
    assert "Traceback" not in err and "HYDRA_FULL_ERROR" not in err
    return err


@pytest.mark.parametrize(("script", "overrides", "message"), [
    ("evaluate", ["seeds.count=abc"], "seeds.count must be an integer >= 1, got 'abc'"),
    ("evaluate", ["tiers=[nightmare]"], "tiers[0] must be one of ('easy', 'medium', 'hard', 'extreme'), got 'night"),
    ("evaluate", ["workers=-3"], "workers must be an integer >= 1, got -3"),
    # the lookahead would roll out in the very instances it is tested on (train and compare_agents refuse it too)
    ("evaluate", ["agent=[lookahead]", "agent.lookahead.kwargs.futures=2", "ppo=null", "seeds.start=899999",
                  "tiers=[easy]"], "seeds.start=899999 seeds.count=150: pool seeds 899999..900148 overlap the seeds "
     "of the sampled futures 900000..900999 (lookahead rolls out in 2 of them)"),
    ("evaluate", ["tiers=[]"], "tiers must name at least one of ('easy', 'medium', 'hard', 'extreme'), got []"),
    ("leaderboard", ["sizes=[]", "run_missing=false"], "sizes must name at least one of"),
    ("evaluate", ["agent=[]", "ppo=null"], "no agent selected: agent lists no agent and ppo is null"),
    ("evaluate", ["agent=[rules]", "agent.rules.names=[]", "ppo=null"], "no agent selected"),
    ("evaluate", ["ppo=shipped:partial"], "ppo=shipped:partial: observability must be one of"),  # was skipped
    ("leaderboard", ["resamples=0"], "resamples must be an integer >= 1, got 0"),
    # "no rows to aggregate: run with run_missing=true, or check the store and the selection", status 1
    ("leaderboard", ["run_missing=false", "store=/no/such/results.jsonl"], "store=/no/such/results.jsonl: no such "
     "file (/no/such/results.jsonl); with run_missing=false the board only reads the store"),
    ("leaderboard", ["objective=speed", "run_missing=false"], "objective must be one of"),
    ("calibrate", ["method=annealing"], "method must be one of ('sesc', 'cmaes', 'nsga2'), got 'annealing'"),
    ("calibrate", ["out=1.5"], "out must be a folder path, got float: 1.5"),  # named no key
    # the launch folder: "out=<it> exists; choose another out=", and train wrote its run into it
    ("calibrate", ["out="], "out must be a folder path, got ''"),
    ("train", ["out=' '"], "out must be a folder path, got ' '"),
    ("train", ["out=null"], "out must be a folder path, got NoneType: None"),  # was a TypeError traceback
    ("leaderboard", [f"out={__file__}/board"], "test_overrides.py: Not a directory, so"),  # after every episode
    ("calibrate", [f"out={__file__}"], "test_overrides.py: File exists: give a folder path)"),
    ("calibrate", ["+options.max_steps=-1"], "max_steps must be an integer >= 0, got -1"),
    ("calibrate", ["+options.max_steps=1000000000"], "max_steps must be at most 1000, got 1000000000"),
    ("calibrate", ["method=cmaes", "+options.budget=1000000"], "budget must be at most 100000, got 1000000"),
    ("calibrate", ["targets.utilization=7"], "targets.utilization"),
    ("bench", ["only=[kernal]"], "only[0] must be one of"),
    # every peer's figure was "cannot run ...", once every other section had been measured
    ("bench", ["peer_python=/no/such/python"], "peer_python=/no/such/python: no such file"),
    ("observability", ["levels=[L9]", "agent.model=m"], "levels[0] must be one of"),
    ("observability", ["levels=L9", "agent.model=m"], "levels must be one of"),
    ("observability", ["tiers=[easy,hardd]", "agent.model=m"], "tiers[1] must be one of"),  # said tiers[0]
    # each ran without that policy, reported as "no checkpoint given"
    ("observability", ["levels=[]", "variants=[]", "+ppo.ful=x.zip"], "ppo.ful: no such setting; ppo has concise, "),
    ("observability", ["levels=[]", "variants=[]", "ppo.concise={hardd: x.zip}"], "ppo.concise.hardd: no such tier"),
    ("train", ["train.gamma=1.5"], "train.gamma must be"),
    # each played every episode (measured every section) twice
    ("evaluate", ["tiers=[easy,hard,easy]"], "tiers[2] repeats 'easy' (tiers[0]): name each once"),
    ("leaderboard", ["sizes=[small,small]", "run_missing=false"], "sizes[1] repeats 'small' (sizes[0])"),
    ("bench", ["only=[kernel,kernel]"], "only[1] repeats 'kernel' (only[0])"),
    ("observability", ["levels=[L1,L1]", "agent.model=m"], "levels[1] repeats 'L1' (levels[0])"),
    # a value where the config holds settings: Hydra took it, and reading seeds.start from 5 was a traceback
    ("evaluate", ["seeds=5"], "seeds=5: seeds holds settings (start, count), not a value; set one by name, e.g. "
     "seeds.start=..."),
    ("leaderboard", ["seeds=[1,2]"], "seeds=[1,2]: seeds holds settings (start, count), not a value"),
    ("evaluate", ["-m", "seeds=5,6"], "seeds=5,6: seeds holds settings (start, count)"),
    ("train", ["train.eval_seeds=50"], "train.eval_seeds=50: train.eval_seeds holds settings (start, count)"),  # said
    # train.eval_seeds.start was None
    ("evaluate", ["agent.rules.env=all"], "agent.rules.env=all: agent.rules.env holds settings (max_candidates)"),
    ("evaluate", ["agent.rules.kwargs=5"], "agent.rules.kwargs holds settings (none yet), not a value; add one by "
     "name, +agent.rules.kwargs.<name>=..."),  # error: 'int' object is not iterable
    ("observability", ["seeds=3", "agent.model=m"], "seeds=3: seeds holds settings (start, count)"),
    # null, left to the script: an AttributeError traceback, or OmegaConf's error naming no setting
    ("evaluate", ["seeds=null"], "seeds must be a mapping, got None"),
    ("observability", ["seeds=null", "agent.model=m"], "seeds must be a mapping, got None"),
    ("observability", ["ppo=null", "agent.model=m"], "ppo must be a mapping (ppo.concise=null ppo.full=null: no "
     "PPO), got None"),  # 'NoneType' object is not iterable
])
def test_each_script_refuses_a_bad_value_with_a_usage_error(script: str, overrides: list[str], message: str,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """One line, ``error: <key> ... <value>``, exit status 2, no traceback and no empty run folder left behind."""
    err = _usage_error(script, overrides, tmp_path, monkeypatch, capsys)
    assert err.startswith("error: ") and message in err, err


def test_a_store_that_is_no_store_is_a_usage_error_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """store=schedule.json (one line, no newline) was cut to nothing by the first episode's append."""
    store = tmp_path / "schedule.json"
    store.write_text('{"format": "dynasched-schedule/1"}')
    err = _usage_error("evaluate", ["agent=[rules]", "ppo=null", "tiers=[easy]", "seeds.count=1", f"store={store}"],
                       tmp_path, monkeypatch, capsys)
    assert err.startswith(f"error: {store}: not a JSONL file of rows") and err.count("\n") == 1, err
    assert store.read_text() == '{"format": "dynasched-schedule/1"}'


def test_a_bad_setting_of_the_cpsat_reference_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """It failed every episode instead (exit status 1), each an error row stored for good under the bad setting."""
    if importlib.util.find_spec("ortools") is None:
        pytest.skip("ortools is not installed (pip install 'dynasched-gym[oracle]')")
    store = tmp_path / "results.jsonl"
    err = _usage_error("evaluate", ["agent=[cpsat_oracle]", "ppo=null", "tiers=[easy]", "seeds.count=1",
                                    "agent.cpsat_oracle.kwargs.time_limit=0", f"store={store}"],
                       tmp_path, monkeypatch, capsys)
    assert err.startswith("error: agent.cpsat_oracle ") and "time_limit must be a finite number > 0, got 0" in err
    assert not store.exists()


def test_a_bad_value_in_a_later_tier_stops_before_the_first_tier_is_played(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The observability experiment checks every tier's entrants before it evaluates the first."""
    from scripts import observability

    monkeypatch.setattr(observability.evaluate, "run", lambda cfg: pytest.fail("evaluated before every check"))
    cfg = config("observability", "tiers=[easy,hard]", "levels=[]", "variants=[]", "baselines=[]",
                 f"ppo.concise={{easy: null, hard: {tmp_path / 'missing.zip'}}}", f"out={tmp_path / 'out'}")
    with pytest.raises(SettingError, match=r"ppo\.concise\.hard"):
        observability.run(cfg)


def test_hydra_full_error_shows_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The error is raised, for the whole traceback, and the run folder goes as without HYDRA_FULL_ERROR (it was
    raised before the folder was removed, leaving ``.hydra/`` and an empty log under outputs/ for every try)."""
    from scripts import evaluate

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    monkeypatch.chdir(tmp_path)  # the run folder: outputs/evaluate/<date>/<time>/ below it
    monkeypatch.setattr(sys, "argv", ["evaluate", "workers=-3"])
    with pytest.raises(SettingError, match="workers must be"):
        evaluate.main()
    assert list(tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))


def test_a_folder_removed_mid_run_is_an_error_naming_it_without_a_traceback(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """calibrate's out folder removed while it calibrated: a FileNotFoundError traceback where it wrote, status 1,
    and the run folder left with Hydra's files. Now one line naming the path, status 1, no run folder; with
    HYDRA_FULL_ERROR=1 the error itself."""
    import shutil

    from scripts import calibrate

    real = calibrate.calibrate

    def removing(*args: Any, **kwargs: Any) -> Any:
        shutil.rmtree(tmp_path / "cal")
        return real(*args, **kwargs)

    monkeypatch.setattr(calibrate, "calibrate", removing)
    argv = ["calibrate", f"out={tmp_path / 'cal' / 'out'}", "+options.max_steps=0", "progress=false",
            f"hydra.run.dir={tmp_path / 'run'}"]
    monkeypatch.setattr(sys, "argv", argv)
    (tmp_path / "cal").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        calibrate.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and err.startswith(f"error: {tmp_path / 'cal'}/.out.") and err.endswith(
        ".tmp: No such file or directory\n"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    (tmp_path / "cal").mkdir()
    with pytest.raises(FileNotFoundError):
        calibrate.main()


@pytest.mark.parametrize("script", ["calibrate_compare", "compare_agents", "fjsp_table", "tier_acceptance",
                                    "validate_ssi"])
def test_an_argparse_script_ends_an_os_error_of_a_file_in_one_line(script: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The argparse scripts' output folder removed mid-run (a full disk, a read-only file) was the OSError's
    traceback; now one line naming the path, status 1, as for the Hydra scripts."""
    import argparse
    import errno
    import runpy

    gone = tmp_path / "out" / "rows.jsonl"

    def removed(*args: Any, **kwargs: Any) -> Any:  # wherever the script is: its error handling is the whole script's
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(gone))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", removed)
    monkeypatch.setattr(sys, "argv", [script])
    monkeypatch.delitem(sys.modules, f"scripts.{script}", raising=False)  # run afresh as __main__, without a warning
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module(f"scripts.{script}", run_name="__main__")
    assert exit_info.value.code == 1 and capsys.readouterr().err == f"error: {gone}: No such file or directory\n"


def test_an_os_error_naming_no_file_is_raised_without_the_cleanup(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """An OSError of no file (a failure to trace, such as a dead pipe) is no "error: None: ..." line."""
    import errno

    from scripts.overrides import file_errors_exit

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    cleaned: list[bool] = []
    with pytest.raises(OSError, match="Broken pipe"), file_errors_exit(lambda: cleaned.append(True)):
        raise OSError(errno.EPIPE, "Broken pipe")
    assert cleaned == [] and capsys.readouterr().err == ""


def test_a_run_folder_with_output_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a folder holding nothing but Hydra's own files (and empty ones) is removed."""
    from hydra.core.hydra_config import HydraConfig

    run = tmp_path / "outputs" / "day" / "time"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("a: 1")
    (run / "job.log").write_text("")
    monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
    runtime = SimpleNamespace(output_dir=str(run), cwd=str(tmp_path))
    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: SimpleNamespace(runtime=runtime, mode=RunMode.RUN)))
    (run / "model.zip").write_bytes(b"x")
    remove_empty_run_folder()
    assert (run / "model.zip").exists()
    (run / "model.zip").unlink()
    (tmp_path / "outputs" / "other").mkdir()
    remove_empty_run_folder()
    assert not (tmp_path / "outputs" / "day").exists() and (tmp_path / "outputs" / "other").exists()


def test_a_run_folder_that_is_the_launch_directory_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hydra.run.dir=. from a folder holding only Hydra's files: the folder the user launched from stays."""
    from hydra.core.hydra_config import HydraConfig

    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text("a: 1")
    runtime = SimpleNamespace(output_dir=str(tmp_path), cwd=str(tmp_path))
    monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: SimpleNamespace(runtime=runtime, mode=RunMode.RUN)))
    remove_empty_run_folder()
    assert (tmp_path / ".hydra" / "config.yaml").is_file()


def test_a_jobs_command_run_alone_drops_the_launcher_in_either_form() -> None:
    from scripts.overrides import single_run_overrides

    assert single_run_overrides(["seed=1", "launcher=joblib", "hydra/launcher=joblib", "tiers=[easy,hard]"]) == [
        "seed=1", "tiers=[easy,hard]"]


def test_a_sweep_folder_that_is_the_launch_directory_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-m hydra.sweep.dir=. from a folder holding nothing else: the folder the user launched from stays."""
    from hydra.core.hydra_config import HydraConfig

    (tmp_path / "multirun.yaml").write_text("x: 1")
    (tmp_path / "0" / ".hydra").mkdir(parents=True)
    runtime = SimpleNamespace(output_dir=str(tmp_path / "0"), cwd=str(tmp_path))
    fake = SimpleNamespace(runtime=runtime, mode=RunMode.MULTIRUN,
                           launcher={"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"})
    monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: fake))
    remove_empty_run_folder()
    assert not (tmp_path / "0").exists() and (tmp_path / "multirun.yaml").exists()


def test_a_sweep_with_a_bad_value_is_refused_before_any_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``-m`` with a bad value in any job: refused before the first job runs, naming the job, leaving no sweep
    folder. A bad value of a later job was found only when that job ran: the jobs before it had run (a training
    sweep's earlier tiers: hours), and the sweep stopped there."""
    from scripts import evaluate

    sweep, store = tmp_path / "sweep", tmp_path / "r.jsonl"
    common = ["ppo=null", "agent=[random]", "seeds.count=1", "progress=false", f"store={store}",
              f"hydra.sweep.dir={sweep}"]
    for tiers in ("tiers=nightmare,easy", "tiers=easy,nightmare"):
        monkeypatch.setattr(sys, "argv", ["evaluate", "-m", tiers, *common])
        with pytest.raises(SystemExit) as exit_info:
            evaluate.main()
        assert exit_info.value.code == 2 and not sweep.exists(), list(sweep.rglob("*"))
        assert not store.exists()
    err = capsys.readouterr().err
    assert "error: sweep job #0 (tiers=nightmare " in err and "error: sweep job #1 (tiers=nightmare " in err
    assert "tiers must be one of" in err


@pytest.mark.parametrize("mode", [["--cfg", "job"], ["--info"]])
def test_a_sweep_with_cfg_or_info_is_refused_in_one_line(mode: list[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``-m tiers=easy,hard --cfg job`` (to see a sweep's configs): Hydra raised a ValueError traceback."""
    from scripts import evaluate

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["evaluate", "-m", "tiers=easy,hard", *mode])
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main()
    assert exit_info.value.code == 2 and not (tmp_path / "outputs").exists()
    assert capsys.readouterr().err == (f"error: --multirun and {mode[0]}: Hydra takes one of --run, --multirun, --cfg, "
                                       "--info and --shell-completion at a time (a sweep job's config: --cfg job with "
                                       "that job's values, without -m)\n")


class _OneSecond(datetime):
    """The clock of Hydra's ``now`` resolver: each reading a microsecond after the last, all in one second."""

    ticks = itertools.count()

    @classmethod
    def now(cls, tz: object = None) -> datetime:
        return datetime(2026, 12, 5, 13, 17, 31, next(cls.ticks))


@pytest.mark.parametrize(("name", "folder"), [
    ("evaluate", "run"), ("evaluate", "sweep"), ("leaderboard", "run"), ("leaderboard", "sweep"),
    ("observability", "run"), ("observability", "sweep"), ("bench", "run"), ("bench", "sweep"), ("calibrate", "run"),
    ("calibrate", "sweep"), ("train/ppo", "run"), ("train/ppo", "sweep"),
])
def test_runs_started_in_one_second_get_their_own_folders(name: str, folder: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The run and sweep folders were named to the second (all but calibrate's run folder): two runs started in one
    second shared one, the second overwriting the first one's ``.hydra/`` settings and writing into its log."""
    import hydra.core.utils

    monkeypatch.setattr(hydra.core.utils, "datetime", _OneSecond)
    folders = set()
    for _ in range(2):
        with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
            folders.add(compose(name, return_hydra_config=True).hydra[folder].dir)
    assert len(folders) == 2, folders


@pytest.mark.parametrize("name", ["evaluate", "leaderboard", "observability", "bench", "calibrate", "train/ppo"])
def test_the_log_file_is_made_only_when_something_is_logged(name: str) -> None:
    """The scripts print rather than log: every run folder held an empty ``<script>.log``."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        logging = compose(name, return_hydra_config=True).hydra.job_logging
    assert logging.handlers.file["class"] == "dynasched_gym.paths.OnDemandFileHandler"
    assert "file" in logging.root.handlers


def test_the_log_file_and_its_folder_are_made_at_the_first_record(tmp_path: Path) -> None:
    """A delayed FileHandler whose run folder was removed meanwhile (an empty one) failed at its first record (a
    later library log line in the same process)."""
    import logging

    from dynasched_gym.paths import OnDemandFileHandler

    handler = OnDemandFileHandler(tmp_path / "run" / "job.log")
    try:
        assert not (tmp_path / "run").exists()
        handler.emit(logging.LogRecord("x", logging.WARNING, __file__, 1, "late", None, None))
        assert (tmp_path / "run" / "job.log").read_text() == "late\n"
    finally:
        handler.close()


def test_bench_leaves_no_empty_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench writes its results to ``out`` and no ``.hydra/``: its run folder was left holding an empty log."""
    from scripts import bench

    monkeypatch.setattr(bench, "run", lambda args, results, tmp: None)
    out, run = tmp_path / "b.json", tmp_path / "hydra" / "run"
    monkeypatch.setattr(sys, "argv", ["bench", "only=[kernel]", "instances=[ta01]", f"out={out}",
                                      f"hydra.run.dir={run}"])
    monkeypatch.chdir(tmp_path)
    bench.main()
    assert out.is_file() and not (tmp_path / "hydra").exists(), list(tmp_path.rglob("*"))


def _without_launcher_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every launcher plugin of the project unimportable, as where the dist extra is not installed."""
    for package in LAUNCHER_PLUGINS.values():
        monkeypatch.setitem(sys.modules, f"hydra_plugins.{package.replace('-', '_')}", None)


@pytest.mark.parametrize(("script", "override"), [
    ("evaluate", "launcher=slurm"), ("leaderboard", "launcher=slurm"), ("train", "launcher=slurm"),
    # configs without a launcher group, where Hydra says to add one with +
    ("observability", "+launcher=slurm"), ("calibrate", "+launcher=slurm"), ("bench", "+launcher=slurm"),
    # Hydra's own launcher group, in every config
    ("evaluate", "hydra/launcher=submitit_slurm"), ("bench", "hydra/launcher=submitit_slurm"),
])
def test_a_launcher_whose_plugin_is_missing_is_refused_naming_the_extra(script: str, override: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``-m launcher=slurm`` (or ``-m hydra/launcher=submitit_slurm``) without hydra-submitit-launcher failed in Hydra,
    exit status 1: "Could not find 'hydra/launcher/submitit_slurm'", and a hint at HYDRA_FULL_ERROR, not the extra
    that installs it."""
    _without_launcher_plugins(monkeypatch)
    err = _usage_error(script, ["-m", override, f"hydra.sweep.dir={tmp_path / 'run'}"], tmp_path, monkeypatch,
                       capsys)
    assert err == (f"error: {override.lstrip('+')} needs the package 'hydra-submitit-launcher', which is not "
                   "installed: pip install 'dynasched-gym[dist]'\n")
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(MissingExtraError, match="hydra-submitit-launcher"):
        importlib.import_module(f"scripts.{script}").main()


@pytest.mark.parametrize(("script", "override"), [
    ("evaluate", "launcher=joblib"), ("train", "launcher=ray"), ("calibrate", "hydra/launcher=joblib"),
    ("leaderboard", "launcher=joblib,ray"),
])
def test_a_launcher_without_a_sweep_is_refused(script: str, override: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``launcher=joblib`` without ``-m``: Hydra ignored the launcher and ran the whole default job in this process,
    with the launcher config's ``workers=1`` (evaluate: 8,400 episodes on one core)."""
    err = _usage_error(script, [override], tmp_path, monkeypatch, capsys)
    assert err == (f"error: {override} picks the launcher of -m sweeps, and this is no sweep: add -m (without it, "
                   "Hydra would ignore the launcher and run the job here)\n")
    check_launcher(["launcher=null", "~launcher", "tiers=easy"], multirun=False)


def test_each_launcher_is_checked_also_among_swept_values(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_launcher_plugins(monkeypatch)
    for name, package in LAUNCHER_PLUGINS.items():
        with pytest.raises(MissingExtraError, match=rf"launcher={name} needs the package '{package}'.*\[dist\]"):
            check_launcher(["tiers=easy,hard", f"+launcher={name}"])
    for name, package in HYDRA_LAUNCHER_PLUGINS.items():
        with pytest.raises(MissingExtraError, match=rf"^hydra/launcher={name} needs the package '{package}'"):
            check_launcher(["tiers=easy,hard", f"hydra/launcher={name}"])
    with pytest.raises(MissingExtraError, match="launcher=ray"):
        check_launcher(["launcher=mine,ray"])
    # no launcher of the dist extra, none at all, or an override Hydra itself refuses: left to Hydra
    check_launcher(["launcher=mine", "launcher=null", "~launcher", "hydra/launcher=basic", "~hydra/launcher",
                    "launcher=submitit_slurm", "hydra/launcher=slurm", "tiers=[easy]"])
    check_launcher(["launcher=ray", "tiers=[easy"])


class _Reached(Exception):
    """Raised in place of a script's run: the settings passed every check."""


def _reaches_run(script: str, overrides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DictConfig:
    """The config ``script`` hands its ``run`` once its checks pass (they must)."""
    module = importlib.import_module(f"scripts.{script}")
    seen = []

    def run(cfg: DictConfig, *callbacks: Any) -> None:  # calibrate's run takes one, told of the outputs
        seen.append(cfg)
        raise _Reached

    monkeypatch.setattr(module, "run", run)
    monkeypatch.setattr(sys, "argv", [script, *overrides, f"hydra.run.dir={tmp_path / 'run'}"])
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")  # Hydra raises the script's exception instead of exiting with 1
    with pytest.raises(_Reached):
        module.main()
    return seen[0]


def test_bench_takes_the_tier_of_its_pool_instances_from_the_command_line(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """bench's setting was ``tier``, which Hydra took on the command line for the config group conf/tier/: ``tier=easy``
    failed with "Could not override 'tier'", and no override could set it."""
    from scripts import bench

    seen = []

    def run(args: Any, results: Any, tmp: Any) -> None:
        seen.append(args)
        raise _Reached

    monkeypatch.setattr(bench, "run", run)
    monkeypatch.setattr(sys, "argv", ["bench", "pool_tier=easy", "pool_seed=3", f"out={tmp_path / 'b.json'}",
                                      f"hydra.run.dir={tmp_path / 'run'}"])
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(_Reached):
        bench.main()
    assert (seen[0].pool_tier, seen[0].pool_seed) == ("easy", 3)


def test_an_override_under_a_key_a_plus_override_adds_is_accepted(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/llm.md's command: ``agent.llm.kwargs.model=...`` sets a key that ``+agent@agent.llm.kwargs=llm`` adds.
    The check composed the config without the + overrides but with that one, and Hydra refused it."""
    cfg = _reaches_run("evaluate", ["agent=[rules]", "+agent@agent.llm.kwargs=llm", "+agent.llm.names=[llm]",
                                    "+agent.llm.env={max_candidates: all}", "agent.llm.kwargs.model=qwen2.5:7b",
                                    "agent.llm.kwargs.base_url=http://localhost:11434/v1"], tmp_path, monkeypatch)
    assert cfg.agent.llm.kwargs.model == "qwen2.5:7b" and list(cfg.agent.llm.names) == ["llm"]
    assert base_overrides(["agent=[rules]", "+agent@agent.llm.kwargs=llm", "agent.llm.kwargs.model=m", "++x.y=1",
                           "x.y.z=2", "agent.llmx=3", "tiers=[easy]"]) == ["agent=[rules]", "agent.llmx=3",
                                                                          "tiers=[easy]"]


def test_calibrate_takes_the_scenario_fields_a_preset_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """docs/generation.md's horizon and bottleneck-window commands were refused as settings calibrate would not read;
    the scenario checks its own fields, so a misspelt one is still refused, naming it."""
    cfg = _reaches_run("calibrate", ["size=medium", "size.scenario.scale.num_jobs=null",
                                     "+size.scenario.scale.horizon=1000"], tmp_path, monkeypatch)
    assert cfg.size.scenario.scale.horizon == 1000
    cfg = _reaches_run("calibrate", ["size=medium", "+size.scenario.bottleneck_windows=[{group: GroupA, start: 0.2, "
                                     "end: 0.4, utilization: 0.9}]"], tmp_path, monkeypatch)
    assert cfg.size.scenario.bottleneck_windows[0].group == "GroupA"
    monkeypatch.undo()
    err = _usage_error("calibrate", ["+size.scenario.scale.horizn=1000"], tmp_path, monkeypatch, capsys)
    assert "scale.horizn" in err and "unknown field" in err


def test_an_argument_added_to_an_agent_reaches_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An agent entry's kwargs are the agent's to check: ``+`` may add one, and a wrong one is named there."""
    from scripts import evaluate

    monkeypatch.setattr(sys, "argv", ["evaluate", "agent=[random]", "tiers=[easy]", "ppo=null",
                                      "+agent.random.kwargs.foo=3", f"store={tmp_path / 'store.jsonl'}",
                                      f"hydra.run.dir={tmp_path}"])
    with pytest.raises(SystemExit):
        evaluate.main()
    assert "agent.random (name 'random', kwargs {'seed': 0, 'foo': 3}): RandomAgent got an unknown argument 'foo'" \
        in capsys.readouterr().err


@pytest.mark.parametrize("name", ["evaluate", "leaderboard", "observability", "bench", "calibrate", "train/ppo"])
def test_every_script_has_the_script_help(name: str) -> None:
    """Hydra's default help called each script "<name> is powered by Hydra" and said nothing of what it does."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        help_config = compose(name, return_hydra_config=True).hydra.help
    assert help_config.header == "" and help_config.template.startswith("== Config groups (group=option) ==")


def test_script_help_says_what_the_script_does_and_stops_quietly_when_its_reader_is_gone() -> None:
    """``--help`` starts with the script's summary (its docstring's first paragraph); ``--help | head`` ended in a
    BrokenPipeError traceback of Hydra's print: now status 141 (SIGPIPE's), nothing on stderr."""
    repo = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "scripts.calibrate", "--help"]
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Calibrate one instance and write it with a report (Hydra entry point, "
                                  "conf/calibrate.yaml).\n\n== Config groups (group=option) ==\n")
    assert "powered by Hydra" not in done.stdout and "--hydra-help" in done.stdout
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        gone = subprocess.run(command, cwd=repo, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert gone.returncode == 141 and gone.stderr == "", (gone.returncode, gone.stderr[-3000:])


def _sweep_jobs(overrides: list[str], config_name: str = "calibrate", config_dir: str | None = None,
                task_name: str = "calibrate") -> list[DictConfig]:
    """The job configs that :func:`~scripts.overrides.check_sweep_jobs` checks for ``-m <overrides>``, each job's own
    folder its ``out``."""
    from scripts.overrides import check_sweep_jobs

    seen: list[DictConfig] = []

    def check(cfg: DictConfig) -> Path | None:
        seen.append(cfg)
        return Path(cfg.out) if "out" in cfg else None

    check_sweep_jobs(overrides, config_dir, config_name, task_name, check)
    return seen


def test_the_sweep_pre_check_reads_the_sweep_folder_that_all_jobs_share() -> None:
    """-m seed=0,1 out=${hydra:sweep.dir}/cal: both jobs write into the one sweep folder (Hydra resolves its
    ${now:...} once for the sweep), yet the pre-check composed each job afresh, a microsecond apart, and let the
    sweep run (the second job then found the first's out)."""
    with pytest.raises(SettingError, match=r"sweep jobs #0 and #1 .* would both write into out=.*/cal;"):
        _sweep_jobs(["seed=0,1", "out=${hydra:sweep.dir}/cal"])


def test_the_sweep_pre_check_expands_the_sweeper_params_of_a_config(tmp_path: Path) -> None:
    """hydra.sweeper.params of a config (Hydra's BasicSweeper sweeps them before the command line's): the pre-check
    saw one job with the config's defaults, and a bad value of a later job was met only when that job ran."""
    (tmp_path / "mine.yaml").write_text("defaults:\n  - calibrate\n  - _self_\nhydra:\n  sweeper:\n    params:\n"
                                        "      seed: 3,4\n", encoding="utf-8")
    jobs = _sweep_jobs(["method=sesc"], "mine", str(tmp_path))
    assert [job.seed for job in jobs] == [3, 4]


def test_the_sweep_pre_check_expands_a_glob_over_a_config_group() -> None:
    """-m 'agent=glob(r*)': Hydra sweeps over the agent configs the glob matches; the pre-check, parsing without
    Hydra's config loader, could not expand it and checked no job."""
    jobs = _sweep_jobs(["agent=glob(r*)", "ppo=null"], "evaluate", task_name="evaluate")
    assert sorted(next(iter(job.agent)) for job in jobs) == ["random", "rules"]


def test_the_sweep_pre_check_compares_the_jobs_folders_resolved(tmp_path: Path) -> None:
    """out=runs/x for one job and runs/../runs/x for the other: the same folder, read as two."""
    with pytest.raises(SettingError, match=r"sweep jobs #0 and #1 .* would both write into out="):
        _sweep_jobs([f"out={tmp_path}/runs/x,{tmp_path}/runs/../runs/x"])


def test_the_sweep_pre_check_leaves_a_sweep_hydra_cannot_compose_to_hydra() -> None:
    """-m 'hydra.sweeper.params={seed:"0,1"}' (omegaconf cannot merge a dict into the None default): the pre-check
    raised omegaconf's AttributeError traceback itself; Hydra reports it when it composes the sweep."""
    assert _sweep_jobs(['hydra.sweeper.params={seed:"0,1"}']) == []


def test_the_sweep_pre_check_names_the_job_as_hydra_does(tmp_path: Path) -> None:
    """Under ``python -m scripts.calibrate`` the task function's module is __main__, which the pre-check took for
    the job's name (${hydra:job.name}): out=x/${hydra:job.name} was checked as x/__main__, where the jobs write
    x/calibrate."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    result = subprocess.run([sys.executable, "-m", "scripts.calibrate", "-m", "seed=0,1",
                             f"out={tmp_path}/${{hydra:job.name}}", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert f"would both write into out={tmp_path}/calibrate;" in result.stderr, result.stderr


def test_an_interval_sweep_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """-m seeds.start='interval(0,1)', which Hydra's basic sweeper cannot expand: Hydra's traceback, status 1."""
    err = _usage_error("evaluate", ["-m", "seeds.start=interval(0,1)", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                       tmp_path, monkeypatch, capsys)
    assert err == ("error: seeds.start=interval(0,1): Hydra's basic sweeper cannot sweep an interval (a sampling "
                   "sweeper's); list the values, e.g. key=1,2,3, or give range(start,stop,step)\n")
    assert not (tmp_path / "sweep").exists()


def test_the_later_jobs_of_a_stopped_sweep_are_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands of the jobs a stopped sweep left out: its config's hydra.sweeper.params were left out (job #0
    of params seed: 0,1 and tiers=easy,hard was followed by "tiers=hard" alone, where Hydra runs seed=0 tiers=hard,
    then seed=1 ...), and ${hydra:job.num} was resolved as the stopped job's (job #1 was told out=runs/0, job #0's)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import setup_globals

    from scripts.overrides import later_sweep_jobs

    (tmp_path / "multirun.yaml").write_text(
        "hydra:\n  sweeper: {params: {seed: '0,1'}}\n"
        "  overrides: {task: ['tiers=easy,hard', 'out=runs/${hydra:job.num}']}\n", encoding="utf-8")
    fake = OmegaConf.create({"mode": RunMode.MULTIRUN, "job": {"num": 0}, "sweep": {"dir": str(tmp_path)},
                             "runtime": {"cwd": str(tmp_path)},
                             "launcher": {"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"}})
    setup_globals()
    monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: fake))
    later = later_sweep_jobs("scripts.train")
    assert later is not None and later.splitlines()[1:] == [
        r"  python -m scripts.train seed=0 tiers=hard 'out=runs/$\{hydra\:job.num\}'",
        r"  python -m scripts.train seed=1 tiers=easy 'out=runs/$\{hydra\:job.num\}'",
        r"  python -m scripts.train seed=1 tiers=hard 'out=runs/$\{hydra\:job.num\}'"]


def test_a_boolean_is_no_path() -> None:
    """``out=true`` would be a folder named True, where a path was meant."""
    for setting, kind in ((output_folder, "folder"), (output_file, "file")):
        with pytest.raises(SettingError, match=f"^out must be a {kind} path, got bool: True$"):
            setting("out", True)
