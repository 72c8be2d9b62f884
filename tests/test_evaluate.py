"""scripts/evaluate.py and the results store: rows, validation, exactly-once appends, kill and resume, joblib sweeps."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import math
import multiprocessing
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from concurrent.futures import Future
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import pid_running
from hydra import compose, initialize_config_module
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import dynasched_gym
from dynasched_gym.agents.rules import rule_objectives
from dynasched_gym.io import resolve_instance
from dynasched_gym.metrics import METRIC_KEYS
from dynasched_gym.results import (
    KEY_FIELDS,
    ResultStore,
    StoreWarning,
    aggregate,
    bootstrap_ci,
    difficulty_trend,
    paired_margin,
    read_jsonl,
    row_key,
)
from scripts import evaluate, leaderboard
from scripts.journal import JournalWarning
from scripts.overrides import SWEEP_STOPPED, SettingError

REPO = Path(__file__).resolve().parents[1]
RULES = 9  # conf/agent/rules.yaml


def config(name: str, *overrides: str):
    """The composed Hydra config ``name`` with ``overrides``."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        return compose(config_name=name, overrides=list(overrides))


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pool cache for this module's runs (subprocesses get it through $DYNASCHED_CACHE)."""
    return tmp_path_factory.mktemp("pools")


@pytest.fixture
def cache(pools: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DYNASCHED_CACHE", str(pools))
    return pools


def _row(i: int, **fields) -> dict:
    return {"agent": "rule:SPT:EET", "agent_hash": "h", "tier": "easy", "size": "small", "seed": i,
            "objective": "makespan", "status": "ok", "objective_value": 10.0 + i, "normalised_weighted_tardiness": 0.5,
            **fields}


# ------------------------------------------------------------------------------------------- the store
def test_store_appends_each_key_once(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "sub" / "store.jsonl")
    assert store.rows() == [] and store.keys() == set()
    assert store.append(_row(1, v=1)) and store.append(_row(2, v=2))
    assert not store.append(_row(1, v=99))  # same key: kept once, the first
    other = ResultStore(store.path)  # another writer sees the rows on disk
    assert not other.append(_row(2, v=98))
    assert other.append(_row(3, v=3))
    assert [r["v"] for r in store.rows()] == [1, 2, 3]
    assert store.keys() == {("h", "easy", "small", s, "makespan") for s in (1, 2, 3)}
    assert KEY_FIELDS == ("agent_hash", "tier", "size", "seed", "objective")
    with pytest.raises(ValueError, match=r"field 'status' must be one of .*, got 'done'"):
        store.append(_row(4, status="done"))
    assert len(store.rows()) == 3


def test_a_store_opened_read_only_is_read_without_making_a_lock_file(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A published copy (a folder this process may not write) could not be read: the store demanded a writable
    file and made ``<store>.lock`` even to read."""
    writer = ResultStore(tmp_path / "published" / "store.jsonl")
    assert writer.append(_row(1)) and writer.append(_row(2))
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(writer.path.read_bytes())
    monkeypatch.setattr("dynasched_gym.instance.os.access", lambda path, mode: False)  # nothing may be written
    with pytest.raises(PermissionError, match="Cannot be written"):
        ResultStore(copy)
    store = ResultStore(copy, read_only=True)
    assert [r["seed"] for r in store.rows()] == [1, 2] and not copy.with_name("copy.jsonl.lock").exists()
    assert [r["seed"] for r in ResultStore(writer.path, read_only=True).rows()] == [1, 2]  # under the writers' lock
    with pytest.raises(PermissionError, match=r"copy\.jsonl: this ResultStore was opened read-only"):
        store.append(_row(3))
    with pytest.raises(IsADirectoryError):
        ResultStore(tmp_path, read_only=True)


def test_without_posix_locks_only_the_store_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a platform without fcntl (Windows) the module imports (the LLM client needs its hashes) and the store
    says why it cannot lock, before it writes anything."""
    code = ("import sys; sys.modules['fcntl'] = None; import dynasched_gym.results as r; "
            "print(r.config_hash({'a': 1}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and len(done.stdout.strip()) >= 8, done.stderr
    from dynasched_gym import paths

    monkeypatch.setattr(paths, "fcntl", None)
    store = ResultStore(tmp_path / "store.jsonl")
    with pytest.raises(OSError, match=r"store\.jsonl: the results store locks its file with POSIX fcntl\.flock"):
        store.append(_row(1))
    assert not store.path.exists()


def test_truncated_last_line_is_ignored_then_cut_off(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store.jsonl")
    store.append(_row(1))
    with open(store.path, "ab") as fh:  # a writer killed mid-row
        fh.write(json.dumps(_row(2))[:25].encode())
    with pytest.warns(StoreWarning, match="truncated last line"):
        assert [r["seed"] for r in ResultStore(store.path).rows()] == [1]
    with pytest.warns(StoreWarning, match="cutting off"):
        assert ResultStore(store.path).append(_row(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["seed"] for r in store.rows()] == [1, 2]
    assert store.path.read_text().count("\n") == 2


@pytest.mark.parametrize("text", [
    '{"format": "dynasched-schedule/1", "segments": []}',  # a schedule or instance JSON: all of it was cut off
    '{\n "format": "dynasched-instance/1"\n}',  # an indented JSON file: its closing brace was
    "# notes\nthe last line",  # a text file
])
def test_a_file_that_is_no_store_is_refused_not_cut_off(tmp_path: Path, text: str) -> None:
    """Given as the store (store=schedule.json), a file whose last line no killed writer left was cut off, as if a
    truncated row, by the first append (after the first episode): for a one-line JSON file, all of it."""
    path = tmp_path / "schedule.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"schedule\.json: not a JSONL file of rows: its last line is no row"):
        ResultStore(path)
    store = ResultStore(tmp_path / "store.jsonl")
    store.append(_row(1))
    with open(store.path, "a") as fh:  # written meanwhile by another hand
        fh.write(text)
    with pytest.raises(ValueError, match="not a JSONL file of rows"):
        store.append(_row(2))
    assert store.path.read_text().endswith(text)
    with pytest.raises(ValueError, match="not a JSONL file of rows"):  # a journal (scripts.compare_agents)
        read_jsonl(path, lambda row: row["seed"], StoreWarning, repair=True)
    assert path.read_text() == text
    with pytest.warns(StoreWarning):  # read only: left as it is
        assert ResultStore(path, read_only=True).rows() == []


def test_a_whole_last_row_without_its_newline_is_kept(tmp_path: Path) -> None:
    """Rows written by hand ("\\n".join, no final newline) are all read, and the next append keeps them."""
    path = tmp_path / "store.jsonl"
    path.write_text("\n".join(json.dumps(_row(s)) for s in (0, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["seed"] for r in ResultStore(path).rows()] == [0, 2]
        assert ResultStore(path).append(_row(1))
        assert [r["seed"] for r in ResultStore(path).rows()] == [0, 2, 1]
    assert path.read_text().count("\n") == 3


def test_a_warning_names_the_line_of_the_file_in_a_later_append(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store.jsonl")
    store.append(_row(0))
    store.append(_row(1))
    with open(store.path, "a") as fh:
        fh.write("garbage\n")
    with pytest.warns(StoreWarning, match="unreadable line 3 "):
        store.append(_row(2))


def test_a_store_reads_an_unreadable_line_once(tmp_path: Path) -> None:
    """Each append reads only what was appended since its last look: an unchanged file is not parsed again (its
    unreadable line warned of at every append, the whole store read for each row)."""
    path = tmp_path / "store.jsonl"
    path.write_text("garbage\n")
    store = ResultStore(path)
    with pytest.warns(StoreWarning, match="unreadable line 1 ") as caught:
        assert store.append(_row(0)) and store.append(_row(1)) and store.written() == {row_key(_row(s)) for s in (0, 1)}
    assert len(caught) == 1


def test_a_one_line_json_file_longer_than_a_read_block_is_refused_at_once(tmp_path: Path) -> None:
    """The store reads its last line from the end, block by block (64 KiB): a large schedule written on one line is
    read whole, seen to be a JSON document and no row, and refused before any episode (its first block alone looked
    like a row a killed writer left, and the first append refused it only after an episode was played)."""
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps({"format": "dynasched-schedule/1", "segments": [{"job": 0, "start": 0.0}] * 5000}))
    assert path.stat().st_size > 65536
    with pytest.raises(ValueError, match=r"schedule\.json: not a JSONL file of rows"):
        ResultStore(path)


def test_a_row_needs_no_more_than_the_board_reads(tmp_path: Path) -> None:
    """Token usage without a total (the board adds up totals, 0 where none) is stored and read back."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert store.append(_row(0, tokens={"prompt": 5}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["tokens"] for r in ResultStore(store.path).rows()] == [{"prompt": 5}]


def test_a_row_holding_nan_is_refused_as_no_strict_json(tmp_path: Path) -> None:
    """A NaN in any field is refused before anything is written: the store's lines stay strict JSON, which other
    readers (jq, JavaScript) parse."""
    store = ResultStore(tmp_path / "store.jsonl")
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        store.append(_row(0, metrics={"utilization": math.nan}))
    assert not store.path.exists() or store.path.read_text() == ""


def test_blank_lines_hold_no_row_and_are_skipped_without_a_warning(tmp_path: Path) -> None:
    """A blank line (an editor's, or between rows joined by hand) is no unreadable row: nothing to warn of."""
    path = tmp_path / "store.jsonl"
    path.write_text(json.dumps(_row(0)) + "\n\n" + json.dumps(_row(1)) + "\n \n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["seed"] for r in ResultStore(path).rows()] == [0, 1]
        assert ResultStore(path).append(_row(2)) and [r["seed"] for r in ResultStore(path).rows()] == [0, 1, 2]


def test_a_store_that_appended_nothing_has_written_nothing_and_makes_no_file(tmp_path: Path) -> None:
    """An evaluation interrupted before its first row asks what it stored: the answer makes no store or lock file."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert store.written() == set()
    assert list(tmp_path.iterdir()) == []


def test_unreadable_and_duplicate_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    path.write_text("\n".join([json.dumps(_row(1, v=1)), "not json", json.dumps({"no": "key"}),
                               json.dumps(_row(1, v=2)), json.dumps(_row(2))]) + "\n")
    with pytest.warns(StoreWarning) as caught:
        rows = ResultStore(path).rows()
    assert [(r["seed"], r.get("v")) for r in rows] == [(1, 1), (2, None)]
    assert len(caught) == 3
    assert "line 4 ignored (first kept)" in str(caught[2].message)  # the duplicate's line, to delete it by hand


@pytest.mark.parametrize(("change", "message"), [
    ({"status": None}, "field 'status' must be one of"),
    ({"agent": None}, "field 'agent' must be a string"),
    ({"seed": True}, "field 'seed' must be an integer"),
    ({"objective_value": "abc"}, "field 'objective_value' of an ok row must be a finite number, got 'abc'"),
    ({"objective_value": math.nan}, "field 'objective_value' of an ok row must be a finite number, got nan"),
    ({"normalised_weighted_tardiness": None}, "field 'normalised_weighted_tardiness'"),
    ({"clairvoyant": "yes"}, "field 'clairvoyant' must be true or false"),
    # fields the board reads: they crashed it ("could not convert string to float: 'high'"), naming no row or field
    ({"ssi": "high"}, "field 'ssi' of an ok row must be a finite number or null, got 'high'"),
    ({"wall_time": "slow"}, "field 'wall_time' of an ok row must be a finite number or null, got 'slow'"),
    ({"decisions": [58]}, "field 'decisions' of an ok row must be a finite number or null, got [58]"),
    ({"tokens": 5}, "field 'tokens' of an ok row must be null or a mapping whose 'total' is an integer, got 5"),
    ({"tokens": {"total": "9"}}, "field 'tokens' of an ok row must be null or a mapping whose 'total' is an integer"),
    ({"status": "invalid", "violations": [1]}, "field 'violations' must be a list of strings or null, got [1]"),
])
def test_a_row_lacking_what_the_leaderboard_reads_is_skipped_and_computed_again(tmp_path: Path, change: dict,
                                                                                 message: str) -> None:
    # such a row crashed the evaluation (KeyError) or the aggregation (a numpy TypeError), or NaN ranked silently
    path = tmp_path / "store.jsonl"
    path.write_text(json.dumps({**_row(1), **change}) + "\n" + json.dumps(_row(2)) + "\n")
    store = ResultStore(path)
    with pytest.warns(StoreWarning, match=re.escape(message)):
        assert [r["seed"] for r in store.rows()] == [2]
    with pytest.warns(StoreWarning, match=re.escape(message)):
        assert store.append(_row(1))  # its key is free: the row is computed again
    with pytest.warns(StoreWarning):
        assert sorted(r["seed"] for r in store.rows()) == [1, 2]


def test_written_counts_a_row_whose_append_a_ctrl_c_cut_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the line is on disk (here: during its fsync) makes append raise instead of returning True; the
    rows this store wrote are still counted exactly (not those another process appended)."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert store.append(_row(1)) and ResultStore(store.path).append(_row(2))  # row 2: another writer's
    fsync = os.fsync

    def interrupted(fd: int) -> None:
        fsync(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr("dynasched_gym.results.os.fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.append(_row(3))
    monkeypatch.setattr("dynasched_gym.results.os.fsync", fsync)
    assert {k[3] for k in store.written()} == {1, 3}
    assert not store.append(_row(3)) and {k[3] for k in store.written()} == {1, 3}
    assert store.path.read_text().count("\n") == 3


def test_a_store_that_read_earlier_rows_cuts_off_only_the_partial_line(tmp_path: Path) -> None:
    """The partial line of a killed writer lies past the rows this store object has read: it is cut off where it
    starts in the file, not at its offset in the bytes read since (which cut off every earlier row)."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert store.append(_row(1)) and store.append(_row(2))
    with open(store.path, "ab") as fh:  # another writer killed mid-row
        fh.write(json.dumps(_row(3))[:25].encode())
    with pytest.warns(StoreWarning, match="cutting off a truncated last line"):
        assert store.append(_row(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["seed"] for r in store.rows()] == [1, 2, 3]


def test_a_store_file_replaced_by_a_shorter_one_is_read_again(tmp_path: Path) -> None:
    """Rows deleted by hand (the file now shorter than what the store object had read): their keys are free again."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert all(store.append(_row(s)) for s in (1, 2, 3))
    store.path.write_text(json.dumps(_row(1)) + "\n")  # rows 2 and 3 deleted
    assert store.append(_row(2)) and not store.append(_row(1))
    assert [r["seed"] for r in store.rows()] == [1, 2]


def test_written_leaves_out_a_row_whose_line_an_interrupt_cut_short(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in the middle of the write: part of the line is in the file, cut off on the next look; the row is not
    stored, so written() must not count it."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert store.append(_row(1))

    class CutShort:  # the store's file, whose write stops after 10 bytes
        def __init__(self, fh) -> None:
            self._fh = fh

        def __enter__(self) -> CutShort:
            return self

        def __exit__(self, *exc) -> None:
            self._fh.close()

        def write(self, data: bytes) -> int:
            self._fh.write(data[:10])
            raise KeyboardInterrupt

        def __getattr__(self, name: str):
            return getattr(self._fh, name)

    real_open = open
    monkeypatch.setattr("dynasched_gym.results.open", lambda *a, **k: CutShort(real_open(*a, **k)), raising=False)
    with pytest.raises(KeyboardInterrupt):
        store.append(_row(2))
    monkeypatch.undo()
    with pytest.warns(StoreWarning, match="cutting off a truncated last line"):
        assert {k[3] for k in store.written()} == {1}
    assert store.append(_row(2)) and {k[3] for k in store.written()} == {1, 2}


def test_ctrl_c_message_counts_every_stored_row_and_the_rerun_resumes(cache: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Ctrl-C lands after the 5th row is written but before its append returned: the message says 5 (it said
    4), the store holds 5, and the rerun reuses those 5 and plays only the others."""
    cfg = config("evaluate", "tiers=easy", "seeds.count=1", "agent=[rules]", "ppo=null", "workers=1",
                 f"store={tmp_path / 'store.jsonl'}", "progress=false")
    fsync, calls = os.fsync, []

    def interrupted(fd: int) -> None:
        fsync(fd)
        calls.append(fd)
        if len(calls) == 5:
            raise KeyboardInterrupt

    monkeypatch.setattr("dynasched_gym.results.os.fsync", interrupted)
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted: 5 episode\(s\) of this run are stored"):
        evaluate.run(cfg)
    assert len(ResultStore(cfg.store).rows()) == 5
    monkeypatch.setattr("dynasched_gym.results.os.fsync", fsync)
    summary = evaluate.run(cfg)
    assert (summary.total, summary.reused, summary.ran) == (RULES, 5, RULES - 5)
    assert Path(cfg.store).read_text().count("\n") == RULES


def _append_many(path: str, seeds: list[int]) -> int:
    store = ResultStore(path)
    return sum(store.append(_row(s, pid=os.getpid())) for s in seeds)


def test_concurrent_appends_store_every_key_once(tmp_path: Path) -> None:
    path = str(tmp_path / "store.jsonl")
    shared = list(range(60))
    jobs = [shared[::-1], shared, shared[30:] + shared[:30], [*shared[::2], 100, 101]]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        written = pool.starmap(_append_many, [(path, seeds) for seeds in jobs])
    rows = ResultStore(path).rows()
    assert sum(written) == len(rows) == 62
    assert Counter(row_key(r) for r in rows).most_common(1)[0][1] == 1
    assert Path(path).read_text().count("\n") == 62


# ------------------------------------------------------------------------------------------- statistics
def test_bootstrap_ci() -> None:
    values = np.random.default_rng(1).normal(5.0, 2.0, 200)
    low, high = bootstrap_ci(values)
    assert low < values.mean() < high and high - low < 1.0
    assert bootstrap_ci(values) == (low, high)  # seeded
    assert bootstrap_ci([3.0, 3.0]) == (3.0, 3.0)
    assert all(math.isnan(x) for x in bootstrap_ci([]))


def test_bootstrap_ci_takes_the_2_5th_and_97_5th_percentiles_of_the_resampled_means() -> None:
    """Resampling [0, 0, 1], the mean is 1 with probability 1/27 (3.7 %) and 2/3 with 6/27: of 10,000 resampled
    means the 97.5th percentile is 1 (the 95th would be 2/3), the 2.5th is 0; so every value must be drawn."""
    assert bootstrap_ci([0.0, 0.0, 1.0]) == (0.0, 1.0)
    assert bootstrap_ci([1.0, 1.0, 0.0]) == (0.0, 1.0)  # mirrored: the 5th percentile would be 1/3


def test_format_number_shows_a_missing_value_as_a_dash() -> None:
    from dynasched_gym.results import format_number

    assert [format_number(x) for x in (None, math.nan, np.float64("nan"), np.float32("nan"))] == ["—"] * 4
    assert (format_number(1234.5678), format_number(0.5, 3), format_number(math.inf)) == ("1235", "0.5", "inf")


def test_paired_margin_is_the_one_used_by_the_scripts() -> None:
    from dynasched_gym.results import paired_margin
    from scripts.compare_agents import paired_margin as in_compare
    from scripts.train import paired_margin as in_train

    margin = paired_margin([1.0, 2.0, 3.0], [2.0, 2.0, 1.0])  # differences -1, 0, +2
    assert margin["margin"] == pytest.approx(1 / 3) and margin["relative"] == pytest.approx(0.2)
    assert (margin["wins"], margin["ties"]) == (1, 1)
    assert margin["ci95"] == list(bootstrap_ci([-1.0, 0.0, 2.0]))
    assert paired_margin([1.0], [0.0])["relative"] is None
    # paired: a constant difference has no spread, however much the instances vary (unpaired intervals would)
    assert paired_margin([2.0, 6.0, 10.0, 14.0], [1.0, 5.0, 9.0, 13.0])["ci95"] == [1.0, 1.0]
    assert in_compare is paired_margin and in_train is paired_margin  # one implementation


def test_subset_comparison_counts_wins_against_the_best_rule_of_each_subset():
    from scripts.compare_agents import subset_comparison

    rng = np.random.default_rng(0)
    dominant = rng.uniform(1.0, 2.0, 100)
    rules = np.stack([dominant, dominant + 1.0])  # rule 0 is best on every instance: no flattery
    assert subset_comparison(dominant - 0.5, rules, 0, 10, draws=500) == (1.0, 0.0)
    assert subset_comparison(dominant + 0.5, rules, 0, 10, draws=500)[0] == 0.0
    noisy = np.stack([dominant, rng.permutation(dominant)])  # equal means, each best on half the instances
    wins, flattery = subset_comparison(dominant - 0.01, noisy, 0, 10, draws=500)
    assert 0.0 < wins < 1.0  # better than rule 0 everywhere, yet rule 1 is lower on some subsets
    assert 0.0 < flattery < 0.5  # the subset's best rule looks better than rule 0 on its own subset


def test_subset_comparison_counts_no_tie_as_a_win_and_no_flattery_over_a_reference_of_zero() -> None:
    """Weighted tardiness is often 0 on easy tiers: an agent equal to the best rule does not beat it, and rules that
    all reach 0 flatter nothing (1 - 0 / 0 is taken as no gap)."""
    from scripts.compare_agents import subset_comparison

    values = np.random.default_rng(0).uniform(1.0, 2.0, 20)
    assert subset_comparison(values, np.stack([values, values + 1.0]), 0, 5, draws=500) == (0.0, 0.0)
    assert subset_comparison(values, np.zeros((2, 20)), 1, 5, draws=500) == (0.0, 0.0)


def test_compare_agents_reports_the_clairvoyant_reference_and_the_per_instance_best_rule(
        tmp_path, monkeypatch, capsys) -> None:
    from scripts import compare_agents

    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path))
    tables = []

    def spy(*args, **kwargs):
        tables.append(rule_objectives(*args, **kwargs))
        return tables[-1]

    monkeypatch.setattr(compare_agents, "rule_objectives", spy)
    compare_agents.main(["--tier", "medium", "--seeds", "3", "--start", "20000", "--clairvoyant", "--out",
                         str(tmp_path / "journals"), "--reference", "EDD:LIT"])
    out = capsys.readouterr().out
    table = out.split("(every schedule validated)\n")[1].split("\n(")[0]
    means = {name: float(value) for name, value in (line.split() for line in table.splitlines())}
    per_instance = float(out.split("chosen per instance, in hindsight: ")[1].split(")")[0])
    assert "lookahead-oracle" in means and "lookahead-oracle - best rule" in out
    assert "of the 52 rules chosen per instance" in out
    assert per_instance <= min(v for name, v in means.items() if name != "lookahead-oracle")
    rules = [v for name, v in tables[0].items() if name != "lookahead-oracle"]  # main adds the agent's row
    assert len(rules) == 52 and per_instance == pytest.approx(np.min(rules, axis=0).mean(), abs=5e-4)
    reference = float(np.mean(tables[0]["EDD:LIT"]))  # a rule chosen beforehand (e.g. on validation seeds)
    line = out.split(f"lookahead-oracle - EDD:LIT (--reference, mean {reference:.3f}): ")[1]
    assert float(line.split(",")[0]) == pytest.approx(means["lookahead-oracle"] - reference, abs=2e-3)


def test_compare_agents_resumes_from_its_journal(tmp_path, monkeypatch, capsys) -> None:
    """An interrupted comparison keeps the seeds played and resumes with the others; the result is the
    uninterrupted run's. A partial last line is played again."""
    from scripts import compare_agents

    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(compare_agents, "CHUNK", 1)
    args = ["--tier", "easy", "--seeds", "3", "--start", "20000", "--top-k", "2"]
    compare_agents.main([*args, "--out", str(tmp_path / "whole")])
    whole = capsys.readouterr().out
    played = []
    play = compare_agents._play

    def interrupted(agent, args, seeds, instances):
        if len(played) == 2:
            raise KeyboardInterrupt
        played.extend(seeds)
        return play(agent, args, seeds, instances)

    monkeypatch.setattr(compare_agents, "_play", interrupted)
    journals = tmp_path / "journals"
    with pytest.raises(KeyboardInterrupt):
        compare_agents.main([*args, "--out", str(journals)])
    (journal,) = journals.iterdir()
    assert [json.loads(line)["seed"] for line in journal.read_text().splitlines()] == [20000, 20001]
    with open(journal, "a") as fh:  # a writer killed mid-row
        fh.write('{"seed": 20002, "ag')
    capsys.readouterr()
    monkeypatch.setattr(compare_agents, "_play", play)
    with pytest.warns(JournalWarning, match="partial last line"):
        compare_agents.main([*args, "--out", str(journals)])
    captured = capsys.readouterr()
    assert captured.out == whole and "3 seeds: 2 reused from" in captured.err and "1 to play" in captured.err
    # the partial line was cut off before the append: else the row of 20002 went onto it, unreadable at the next run
    assert [json.loads(line)["seed"] for line in journal.read_text().splitlines()] == [20000, 20001, 20002]


def test_compare_agents_reports_the_paired_margin_to_the_rule_with_the_lowest_mean(tmp_path, monkeypatch,
                                                                                    capsys) -> None:
    """The reported numbers of a known table (play_seeds stubbed: no episode is played): the best rule is the one of
    the lowest mean (not rule 0), the margin is agent minus it with its paired interval, wins and ties as counted
    (the same against each --reference, once each), and on subsets of every seed the agent beats the best rule
    always and the post-hoc choice flatters nothing; --start 0 plays from pool seed 0."""
    from dynasched_gym.agents.rules import rule_names
    from scripts import compare_agents

    names = rule_names()
    best = names[5]
    table = {name: [20.0 + j] * 3 for j, name in enumerate(names)} | {best: [4.0, 5.0, 9.0]}  # mean 6, median 5
    agent = [5.0, 4.0, 5.0]  # minus the best rule: 1, -1, -4
    played = []

    def stub(agent_, args, seeds, out):
        played.append(seeds)
        return {seed: {"seed": seed, "agent": agent[i], "rules": {name: table[name][i] for name in names}}
                for i, seed in enumerate(seeds)}

    monkeypatch.setattr(compare_agents, "play_seeds", stub)
    compare_agents.main(["--seeds", "3", "--start", "20000", "--subset-size", "3", "--out", str(tmp_path),
                         "--reference", names[0], "--reference", best, "--reference", names[0]])
    out = capsys.readouterr().out
    assert played == [range(20000, 20003)]
    margin = paired_margin(agent, table[best])
    lo, hi = margin["ci95"]
    assert margin["margin"] == pytest.approx(-4 / 3) and lo < margin["margin"] < hi
    assert (f"lookahead - best rule ({best}): -1.333, 95 % CI [{lo:.3f}, {hi:.3f}] (-22.2 %); better on 2, tied "
            "on 0") in out
    # each --reference once, in the order given, with the same paired margin as the best rule's here
    assert out.count(f"lookahead - {names[0]} (--reference, mean 20.000): -15.333, ") == 1
    assert (f"lookahead - {best} (--reference, mean 6.000): -1.333, 95 % CI [{lo:.3f}, {hi:.3f}] (-22.2 %); better "
            "on 2, tied on 0") in out
    assert f"that choice is on average 0.0 % below {best} there" in out and "beats the best rule chosen on the " \
        "subset in 100.0 %" in out  # every 3-seed subset of 3 seeds is all of them
    compare_agents.main(["--seeds", "2", "--start", "0", "--out", str(tmp_path)])  # pool seed 0 is a seed
    assert played[-1] == range(0, 2)


def test_compare_agents_journals_every_seed_of_a_chunk_with_its_own_values(tmp_path, monkeypatch) -> None:
    """play_seeds with the playing stubbed (an instance is its seed): every seed of a chunk is appended with its own
    rules' and agent's values, a rerun with more seeds plays only the new ones, the journal is the agent
    configuration's and the pool's, a row without a float for every rule is played again, and every schedule is
    validated (an invalid one of the agent stops the run)."""
    import argparse
    from types import SimpleNamespace

    from dynasched_gym.agents import make
    from dynasched_gym.agents.rules import rule_names
    from scripts import compare_agents

    played: list[list[int]] = []

    def play(agent, args, seeds, instances):
        played.append(list(seeds))
        return [SimpleNamespace(metrics={"total_weighted_tardiness": inst.seed + 0.5}) for inst in instances]

    def rules(instances, objective, validate):
        assert validate, "the rules' schedules are validated too"
        return {name: np.array([inst.seed for inst in instances], dtype=float) for name in rule_names()}

    monkeypatch.setattr(compare_agents, "CHUNK", 2)
    monkeypatch.setattr(compare_agents, "tier_pool", lambda tier, size: SimpleNamespace(
        prepare=lambda seeds: None, instance=lambda seed: SimpleNamespace(seed=seed, name=f"seed{seed}")))
    monkeypatch.setattr(compare_agents, "rule_objectives", rules)
    monkeypatch.setattr(compare_agents, "validate_schedule", lambda schedule: SimpleNamespace(ok=True))
    monkeypatch.setattr(compare_agents, "_play", play)
    agent = make("lookahead", top_k=2)
    args = argparse.Namespace(tier="easy", size="small", objective="weighted_tardiness", agent="lookahead")
    compare_agents.play_seeds(agent, args, range(20000, 20005), tmp_path)
    assert played == [[20000, 20001], [20002, 20003], [20004]]
    journal = compare_agents.journal_path(agent, args, tmp_path)
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [row["seed"] for row in rows] == list(range(20000, 20005))
    assert all(row["agent"] == row["seed"] + 0.5 and set(row["rules"].values()) == {row["seed"]} for row in rows)
    again = compare_agents.play_seeds(agent, args, range(20000, 20007), tmp_path)
    assert played[3:] == [[20005, 20006]] and [again[seed] for seed in range(20000, 20005)] == rows
    # a row edited by hand to hold no float for a rule is skipped with a warning, and its seed played again
    edited = [dict(row, rules=dict(row["rules"], **{rule_names()[3]: None})) if row["seed"] == 20001 else row
              for row in rows]
    journal.write_text("".join(json.dumps(row) + "\n" for row in edited))
    with pytest.warns(JournalWarning, match=r"line 2\b"):
        compare_agents.play_seeds(agent, args, range(20000, 20002), tmp_path)
    assert played[4:] == [[20001]]
    # another configuration of the agent, or another generation of the pool, plays into a journal of its own
    assert compare_agents.journal_path(make("lookahead", top_k=4), args, tmp_path) != journal
    monkeypatch.setattr(compare_agents, "key_inputs", lambda tier, size: {"generator": "changed"})
    assert compare_agents.journal_path(agent, args, tmp_path) != journal
    monkeypatch.setattr(compare_agents, "validate_schedule", lambda schedule: SimpleNamespace(ok=False))
    with pytest.raises(RuntimeError, match="lookahead produced an invalid schedule on seed20000"):
        compare_agents.play_seeds(agent, args, range(20000, 20001), tmp_path)


def test_compare_agents_names_its_journal_when_its_folder_is_removed_mid_run(tmp_path, monkeypatch) -> None:
    """The seeds went on into the open handle of a removed journal, lost without a word, status 0."""
    import shutil

    from scripts import compare_agents

    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(compare_agents, "CHUNK", 1)
    out = tmp_path / "journals"
    play = compare_agents._play

    def removing(agent, args, seeds, instances):
        if seeds[0] == 20001:
            (journal,) = out.iterdir()
            shutil.rmtree(out)
            removed.append(journal)
        return play(agent, args, seeds, instances)

    removed: list[Path] = []
    monkeypatch.setattr(compare_agents, "_play", removing)
    with pytest.raises(FileNotFoundError) as caught:
        compare_agents.main(["--tier", "easy", "--seeds", "2", "--start", "20000", "--top-k", "2", "--out", str(out)])
    assert caught.value.filename == str(removed[0])


def _board_rows() -> list[dict]:
    rows = []
    values = {"rule:A": [4, 6, 5], "rule:B": [8, 8, 8], "lookahead": [3, 5, 4], "oracle": [1, 2, 3]}
    for t, tier in enumerate(("easy", "hard")):
        for agent, vals in values.items():
            for seed, v in enumerate(vals):
                rows.append({"agent": agent, "agent_hash": agent, "clairvoyant": agent == "oracle", "tier": tier,
                             "size": "small", "seed": seed, "objective": "makespan", "status": "ok",
                             "objective_value": float(v * (t + 1)), "normalised_weighted_tardiness": v * (t + 1) / 10,
                             "ssi": 10.0 + 50 * t, "decisions": 10, "wall_time": 0.01, "tokens": None})
    # an agent with the lowest mean over its valid episodes, but one invalid schedule: not ranked
    rows += [{**rows[0], "agent": "llm", "agent_hash": "llm", "seed": seed, "objective_value": 0.5,
              "normalised_weighted_tardiness": 0.05} for seed in (0, 1)]
    rows.append({**rows[0], "agent": "llm", "agent_hash": "llm", "seed": 2, "status": "invalid",
                 "objective_value": None, "normalised_weighted_tardiness": None})
    return rows


def test_ratios_to_a_reference_that_reached_zero_say_how_the_agent_compares() -> None:
    """The best rule at 0 (weighted tardiness on an easy tier): an agent at 4.2 showed "—", as if not comparable."""
    rows = [r for r in _board_rows() if r["tier"] == "easy" and r["agent"] in ("rule:A", "lookahead", "oracle")]
    rows = [{**r, "objective_value": 0.0 if r["agent"] in ("rule:A", "oracle") else r["objective_value"]}
            for r in rows]
    rows += [{**r, "agent": "tie", "agent_hash": "tie", "objective_value": 0.0} for r in rows if r["agent"] == "oracle"]
    board = {e["agent"]: e for e in aggregate(rows, resamples=200)}
    assert board["lookahead"]["vs_best_rule"] == math.inf and board["lookahead"]["vs_clairvoyant"] == math.inf
    assert board["tie"]["vs_best_rule"] == 1.0 and board["tie"]["vs_clairvoyant"] == 1.0


def test_aggregate_ranks_normalises_and_labels_references() -> None:
    board = aggregate(_board_rows(), resamples=2000)
    easy = {e["agent"]: e for e in board if e["tier"] == "easy"}
    assert [e["agent"] for e in board if e["tier"] == "easy"] == ["lookahead", "rule:A", "rule:B", "llm", "oracle"]
    assert [easy[a]["rank"] for a in ("lookahead", "rule:A", "rule:B", "llm", "oracle")] == [1, 2, 3, None, None]
    assert easy["rule:A"]["best_rule"] and not easy["rule:B"]["best_rule"]
    assert easy["llm"]["failed"] == 1 and easy["llm"]["episodes"] == 2 and easy["llm"]["mean"] == 0.5
    assert easy["lookahead"]["vs_best_rule"] == pytest.approx(12 / 15)
    assert easy["rule:B"]["vs_clairvoyant"] == pytest.approx(24 / 6)
    assert easy["rule:A"]["regret"] == pytest.approx(3.0)  # (3 + 4 + 2) / 3
    assert easy["rule:A"]["regret_ci_low"] <= 3.0 <= easy["rule:A"]["regret_ci_high"]
    assert easy["oracle"]["clairvoyant"] and easy["oracle"]["regret"] == 0.0
    assert easy["rule:B"]["ci_low"] == easy["rule:B"]["ci_high"] == 8.0
    trend = difficulty_trend(board)[("makespan", "small")]
    assert trend["tiers"] == ["easy", "hard"] and trend["increasing"] and trend["agents"] == []


def test_rank_ties_do_not_depend_on_the_order_of_the_rows() -> None:
    """Equal results stored in another order (e.g. after a resume) sum to the same mean and share a rank."""
    values = (0.1, 0.2, 0.3)
    rows = [{**_row(seed, agent=agent, agent_hash=agent, objective_value=v)}
            for agent, order in (("rule:A", values), ("rule:B", values[::-1]))
            for seed, v in zip(range(3) if agent == "rule:A" else range(2, -1, -1), order)]
    assert sum(values) != sum(values[::-1])  # floating-point sums in file order would differ
    board = aggregate(rows, resamples=100)
    assert [e["rank"] for e in board] == [1, 1] and board[0]["mean"] == board[1]["mean"]


def test_every_agent_of_a_tie_shares_its_rank_and_the_next_counts_those_ahead() -> None:
    """Competition ranking: three equal means behind a better agent all rank 2, and the next agent ranks 5."""
    means = {"rule:A": 1.0, "rule:B": 2.0, "rule:C": 2.0, "rule:D": 2.0, "rule:E": 3.0}
    rows = [_row(s, agent=a, agent_hash=a, objective_value=v) for a, v in means.items() for s in range(2)]
    assert [(e["agent"], e["rank"]) for e in aggregate(rows, resamples=10)] == [
        ("rule:A", 1), ("rule:B", 2), ("rule:C", 2), ("rule:D", 2), ("rule:E", 5)]


def test_a_reference_played_on_more_seeds_leaves_the_fair_agents_ranked() -> None:
    """A seed only the clairvoyant reference played is no instance the fair agents failed: they are ranked."""
    rows = [_row(s, agent=a, agent_hash=a, objective_value=v + s) for a, v in (("rule:A", 1.0), ("rule:B", 2.0))
            for s in range(2)]
    rows += [_row(s, agent="oracle", agent_hash="o", clairvoyant=True, objective_value=0.5) for s in range(3)]
    board = aggregate(rows, resamples=10)
    assert {e["agent"]: e["rank"] for e in board} == {"rule:A": 1, "rule:B": 2, "oracle": None}
    assert [e["agent"] for e in board if e["best_rule"]] == ["rule:A"]


def test_a_rule_that_failed_on_some_seeds_is_not_the_best_rule() -> None:
    """Its mean covers only the seeds it solved: rule:B's one valid seed (1.0) made it the best rule, and every
    vs_best_rule was read against it."""
    rows = [_row(s, agent="rule:A", agent_hash="A", objective_value=10.0 + s) for s in range(8)]
    rows += [_row(s, agent="rule:B", agent_hash="B", objective_value=1.0, status="ok" if s == 0 else "invalid")
             for s in range(8)]
    rows += [_row(s, agent="lookahead", agent_hash="L", objective_value=9.0 + s) for s in range(8)]
    board = {e["agent"]: e for e in aggregate(rows, resamples=100)}
    assert board["rule:A"]["best_rule"] and not board["rule:B"]["best_rule"]
    assert board["lookahead"]["rank"] == 1 and board["lookahead"]["vs_best_rule"] == pytest.approx(100 / 108)


def test_one_configuration_stored_under_two_names_is_one_entry() -> None:
    """Rows of one agent hash labelled differently in two runs (leaderboard run_missing=false, all_rows=true) were
    two unranked entries, each covering part of the seeds."""
    rows = [_row(s, agent="rnd" if s < 2 else "random", agent_hash="R", objective_value=5.0) for s in range(3)]
    board = aggregate(rows, resamples=100)
    assert [(e["agent"], e["episodes"], e["rank"]) for e in board] == [("rnd", 3, 1)]


def test_same_name_with_two_configurations_is_split() -> None:
    rows = [r for r in _board_rows() if r["status"] == "ok" and r["tier"] == "easy"]
    rows += [{**r, "agent_hash": "other", "objective_value": 1.0} for r in rows if r["agent"] == "lookahead"]
    agents = {e["agent"] for e in aggregate(rows, resamples=100)}
    assert {"lookahead@lookah", "lookahead@other"} <= agents and "lookahead" not in agents


def test_an_agent_without_a_valid_episode_compares_with_nothing_and_comes_last() -> None:
    """Its mean is NaN: its ratio to the best rule was inf (NaN over 0), and it was sorted among the agents with
    episodes by the order of the rows (NaN compares as neither lower nor higher)."""
    rows = [_row(s, agent="rule:A", agent_hash="A", objective_value=10.0) for s in range(3)]
    rows += [_row(s, agent="broken", agent_hash="X", status="error", objective_value=None,
                  normalised_weighted_tardiness=None) for s in range(3)]
    rows += [_row(s, agent="partial", agent_hash="P", objective_value=5.0, status="ok" if s else "invalid")
             for s in range(3)]
    board = aggregate(rows, resamples=50)
    assert [(e["agent"], e["rank"]) for e in board] == [("rule:A", 1), ("partial", None), ("broken", None)]
    broken = board[2]
    assert (broken["episodes"], broken["failed"], broken["tokens"]) == (0, 3, None)
    assert all(math.isnan(broken[k]) for k in ("mean", "ci_low", "vs_best_rule", "vs_clairvoyant", "regret", "nwt"))
    assert board[1]["vs_best_rule"] == 0.5  # over the seeds both have


def test_the_clairvoyant_reference_is_per_seed_the_best_clairvoyant_value() -> None:
    """Two clairvoyant agents: the reference takes the lower value on each seed; a seed that only the references
    played takes no rank from the fair agents (they are compared on the seeds they share)."""
    rows = [_row(s, agent="rule:A", agent_hash="A", objective_value=4.0) for s in range(2)]
    rows += [_row(s, agent="oracle-1", agent_hash="O1", clairvoyant=True, objective_value=v)
             for s, v in enumerate((1.0, 5.0))]
    rows += [_row(s, agent="oracle-2", agent_hash="O2", clairvoyant=True, objective_value=v)
             for s, v in enumerate((3.0, 2.0, 7.0))]
    board = {e["agent"]: e for e in aggregate(rows, resamples=50)}
    rule = board["rule:A"]
    assert rule["regret"] == 2.5 and rule["vs_clairvoyant"] == pytest.approx(8 / 3)  # against 1 and 2
    assert rule["rank"] == 1 and rule["best_rule"] and rule["instances"] == 3
    assert board["oracle-1"]["regret"] == 1.5 and board["oracle-2"]["regret"] == pytest.approx(2 / 3)
    assert board["oracle-1"]["rank"] is None and board["oracle-2"]["vs_best_rule"] == pytest.approx(5 / 8)


def test_the_regret_interval_pairs_each_seed_with_its_reference() -> None:
    """The agent is worse by exactly 1 on every seed: a paired interval has no spread (unpaired values, a wide one)."""
    rows = [_row(s, agent="rule:A", agent_hash="A", objective_value=10.0 * (s + 1)) for s in range(3)]
    rows += [_row(s, agent="oracle", agent_hash="O", clairvoyant=True, objective_value=10.0 * (s + 1) - 1.0)
             for s in range(3)]
    rule = next(e for e in aggregate(rows, resamples=200) if e["agent"] == "rule:A")
    assert rule["regret_ci_low"] == rule["regret"] == rule["regret_ci_high"] == 1.0


def test_the_boards_means_skip_what_was_not_measured_and_tokens_add_up() -> None:
    """``ssi``, ``decisions`` and ``wall_time`` may be null (not measured): the means leave them out rather than
    count them as 0; ``tokens`` is the total of the rows reporting them, None where none does."""
    rows = [_row(0, ssi=10.0, decisions=4, wall_time=0.5, tokens={"total": 5}),
            _row(1, ssi=None, decisions=None, wall_time=None, tokens=None),
            _row(2, ssi=40.0, decisions=8, wall_time=1.5, tokens={"total": 7})]
    rows += [_row(s, agent="lookahead", agent_hash="L", tokens=None) for s in range(3)]
    board = {e["agent"]: e for e in aggregate(rows, resamples=50)}
    entry = board["rule:SPT:EET"]
    assert (entry["ssi"], entry["decisions"], entry["wall_time"], entry["tokens"]) == (25.0, 6.0, 1.0, 12)
    assert board["lookahead"]["tokens"] is None and math.isnan(board["lookahead"]["ssi"])


def test_the_groups_mean_ssi_weights_each_instance_once() -> None:
    """Two agents that failed on different instances: the group's score is the mean over its three instances
    (20), not the mean of the agents' means ((15 + 20) / 2 = 17.5)."""
    scores = {0: 10.0, 1: 20.0, 2: 30.0}
    rows = [_row(s, ssi=scores[s], status="ok" if s != 2 else "error") for s in range(3)]
    rows += [_row(s, agent="lookahead", agent_hash="L", ssi=scores[s], status="ok" if s != 1 else "error")
             for s in range(3)]
    board = {e["agent"]: e for e in aggregate(rows, resamples=50)}
    assert (board["rule:SPT:EET"]["ssi"], board["lookahead"]["ssi"]) == (15.0, 20.0)
    assert board["rule:SPT:EET"]["instances_ssi"] == board["lookahead"]["instances_ssi"] == 20.0


def test_the_board_lists_tiers_from_easy_to_extreme() -> None:
    """Tiers in difficulty order (not by name, which puts extreme second), unknown ones last by name."""
    rows = [_row(s, tier=tier) for tier in ("medium", "extreme", "zz", "hard", "custom", "easy") for s in range(2)]
    board = aggregate(rows, resamples=50)
    assert [e["tier"] for e in board] == ["easy", "medium", "hard", "extreme", "custom", "zz"]
    assert difficulty_trend(board)[("makespan", "small")]["tiers"] == ["easy", "medium", "hard", "extreme",
                                                                       "custom", "zz"]


def test_equal_difficulty_on_two_tiers_is_not_strictly_increasing() -> None:
    rows = [_row(s, tier=tier) for tier in ("easy", "hard") for s in range(2)]  # nwt 0.5 on both
    trend = difficulty_trend(aggregate(rows, resamples=50))[("makespan", "small")]
    assert trend["increasing"] is False and trend["agents"] == ["rule:SPT:EET"]


def test_an_agent_without_a_valid_episode_on_a_tier_is_judged_on_its_other_tiers() -> None:
    """Its NaN there compared as not increasing: an agent that failed on medium was listed as easier on hard."""
    rows = [_row(s, tier=tier, normalised_weighted_tardiness=nwt)
            for tier, nwt in (("easy", 0.1), ("medium", 0.2), ("hard", 0.3)) for s in range(2)]
    rows += [_row(s, agent="x", agent_hash="x", tier="easy", normalised_weighted_tardiness=0.05) for s in range(2)]
    rows += [_row(s, agent="x", agent_hash="x", tier="medium", status="error", objective_value=None,
                  normalised_weighted_tardiness=None) for s in range(2)]
    rows += [_row(s, agent="x", agent_hash="x", tier="hard", normalised_weighted_tardiness=nwt)
             for s, nwt in ((0, 0.5), (1, 0.5))]
    board = aggregate(rows, resamples=50)
    assert math.isnan(next(e["nwt"] for e in board if e["agent"] == "x" and e["tier"] == "medium"))
    assert difficulty_trend(board)[("makespan", "small")]["agents"] == []
    rows[-1]["normalised_weighted_tardiness"] = rows[-2]["normalised_weighted_tardiness"] = 0.01  # below its easy
    assert difficulty_trend(aggregate(rows, resamples=50))[("makespan", "small")]["agents"] == ["x"]


@settings(max_examples=15, deadline=None)
@given(st.permutations(range(len(_board_rows()))))
def test_the_board_does_not_depend_on_the_order_of_the_rows(order: list[int]) -> None:
    """Every statistic, the bootstrap intervals included (they resample the values in seed order), is the same
    whatever the order of the rows in the store (e.g. after a resume, or with parallel workers)."""
    rows = _board_rows()

    def comparable(board: list[dict]) -> list[dict]:
        return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in e.items()} for e in board]

    assert comparable(aggregate([rows[i] for i in order], resamples=50)) == comparable(aggregate(rows, resamples=50))


def test_aggregate_names_the_row_and_the_field_it_lacks() -> None:
    """aggregate([{}]) raised a bare KeyError: 'objective', naming neither the row nor what a row holds."""
    good = _row(0)
    for rows, message in (([{}], r"^rows\[0\]: field 'agent' must be a string, got '<missing>'$"),
                          ([good, {k: v for k, v in good.items() if k != "seed"}],
                           r"^rows\[1\]: field 'seed' must be an integer >= 0, got '<missing>'$"),
                          ([{**good, "normalised_weighted_tardiness": None}],
                           r"^rows\[0\]: field 'normalised_weighted_tardiness' of an ok row must be a finite")):
        with pytest.raises(ValueError, match=message):
            aggregate(rows, resamples=10)
    with pytest.raises(TypeError, match=r"^rows\[0\] must be a result row \(a mapping\), got list: \[1\]$"):
        aggregate([[1]], resamples=10)
    assert [e["episodes"] for e in aggregate([good], resamples=10)] == [1]


# ------------------------------------------------------------------------------------------- evaluation
def test_rows_are_complete_validated_and_reused(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dynasched_gym.generation import tier_pool

    cfg = config("evaluate", "tiers=easy", "seeds.count=2", "agent=[rules,random]", "ppo=null", "workers=1",
                 f"store={tmp_path / 'store.jsonl'}", "progress=false")
    summary = evaluate.run(cfg)
    assert (summary.total, summary.reused, summary.ran, summary.failed) == (2 * (RULES + 1), 0, 2 * (RULES + 1), [])
    rows = summary.rows
    for row in rows:
        assert row["status"] == "ok" and row["format"] == "dynasched-result/1"
        assert all(isinstance(row[k], (int, float)) for k in METRIC_KEYS)
        assert row["objective_value"] == row["total_weighted_tardiness"]
        assert row["decisions"] > 0 and row["wall_time"] > 0 and 0 <= row["ssi"] < 25
        assert row["decisions_per_second"] == row["decisions"] / row["wall_time"]
        assert row["instance"] == f"easy-small-seed{row['seed']}" and len(row["instance_sha256"]) == 64
        assert row["normalised_weighted_tardiness"] >= 0 and not row["clairvoyant"]
    for row in rows:  # the env path plays exactly the in-kernel rule
        if row["agent"].startswith("rule:"):
            inst = tier_pool("easy", "small").instance(row["seed"])
            assert dynasched_gym.rollout(inst, rule=row["agent"][5:]).metrics == {k: row[k] for k in METRIC_KEYS}
    # a stored episode is not played again (the store would refuse its row: only the time would be lost)
    monkeypatch.setattr(evaluate, "play_episode", lambda *args: pytest.fail(f"played again: {args[:4]}"))
    again = evaluate.run(cfg)
    assert (again.reused, again.ran) == (2 * (RULES + 1), 0)
    assert len(ResultStore(cfg.store).rows()) == 2 * (RULES + 1)


def test_max_candidates_all_offers_one_slot_per_job_and_machine(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``max_candidates: all`` (the rules', lookahead's and random's env) is each instance's jobs x machines: fewer
    slots hide startable pairs from the agent."""
    import gymnasium

    from dynasched_gym.generation import tier_pool

    made: list[dict] = []
    make = gymnasium.make
    monkeypatch.setattr(gymnasium, "make", lambda env_id, **kwargs: made.append(kwargs) or make(env_id, **kwargs))
    inst = tier_pool("easy", "small").instance(10_000)
    evaluate.AgentPlayer("random", {}, {"max_candidates": "all"}).play(inst, "makespan", 10_000, ("easy", "small"))
    assert made and {kwargs["max_candidates"] for kwargs in made} == {inst.num_jobs * inst.num_machines}
    # the instance's own pool (its sampled futures), and an invalid action fails the episode
    assert {(kw["tier"], kw["size"], kw["invalid_action"]) for kw in made} == {("easy", "small", "raise")}


@pytest.mark.parametrize("store", ["/dev/null", "null", "{tmp}", "''"])
def test_a_store_that_is_no_regular_file_is_refused_before_any_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       store: str) -> None:
    """store=/dev/null played every episode, then failed to fsync its first row (and left /dev/null.lock); null
    was the file "None"."""
    monkeypatch.setattr(evaluate, "plan", lambda cfg: pytest.fail("planned with a bad store"))
    for script in (evaluate, leaderboard):
        overrides = [f"store={store.format(tmp=tmp_path)}"] + ([f"out={tmp_path / 'board'}"] if script is leaderboard
                                                               else [])
        cfg = config(script.__name__.rpartition(".")[2], "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null",
                     *overrides)
        with pytest.raises(SettingError, match=r"^store must be a (regular file|file)"):
            script.run(cfg)
    with pytest.raises(OSError, match="Not a regular file"):
        ResultStore("/dev/null")


def test_reused_rows_take_this_runs_label_and_a_repeated_configuration_is_noted(cache: Path, tmp_path: Path) -> None:
    base = ("evaluate", "tiers=easy", "seeds.count=2", "agent=[random]", "ppo=null", "workers=1",
            f"store={tmp_path / 'store.jsonl'}", "progress=false")
    assert {r["agent"] for r in evaluate.run(config(*base)).rows} == {"random"}
    one = evaluate.run(config(*(o for o in base if o != "seeds.count=2"), "seeds.count=1"))
    assert (one.total, one.reused, one.ran) == (1, 1, 0)  # the store's other seed is no episode of this run
    cfg = config(*base)
    OmegaConf.update(cfg, "agent.random.label", "my random", force_add=True)
    summary = evaluate.run(cfg)
    assert summary.reused == 2 and summary.ran == 0 and {r["agent"] for r in summary.rows} == {"my random"}
    OmegaConf.update(cfg, "agent.again", {"names": ["random"], "kwargs": {"seed": 0}, "env": {"max_candidates": "all"}},
                     force_add=True)
    the_plan = evaluate.plan(cfg)
    assert len(the_plan.episodes) == 2
    agent_hash = the_plan.episodes[0][0].agent_hash
    assert the_plan.skipped == [f"random on easy/small: the same configuration (hash {agent_hash}) as my random, "
                                "evaluated once as that"]


def test_an_agents_env_settings_enter_its_configuration_hash() -> None:
    """Rows are reused by configuration hash: an agent played with fewer candidate slots is another configuration,
    whose episodes are played, not taken from the store."""
    cfg = config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null", "workers=1")
    every_pair = evaluate.plan(cfg).episodes[0][0]
    OmegaConf.update(cfg, "agent.random.env.max_candidates", 4)
    assert every_pair.config["env"] == {"max_candidates": "all"}
    assert evaluate.plan(cfg).episodes[0][0].agent_hash != every_pair.agent_hash


def test_an_agent_playing_in_an_oracle_env_is_a_clairvoyant_reference() -> None:
    """env observability=oracle shows the agent future events (docs/environments.md), yet its rows said clairvoyant:
    false and the board ranked it among the fair agents."""
    cfg = config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null", "workers=1")
    assert not evaluate.plan(cfg).episodes[0][0].clairvoyant
    OmegaConf.update(cfg, "agent.random.env.observability", "oracle", force_add=True)
    plan = evaluate.plan(cfg)
    assert plan.episodes[0][0].clairvoyant
    entrant, tier, size, seed = plan.episodes[0]
    stored = {"agent": "old-label", "agent_hash": entrant.agent_hash, "tier": tier, "size": size, "seed": seed,
              "objective": plan.objective, "clairvoyant": False}  # a row stored before the flag was set
    assert plan.labelled([stored]) == [{**stored, "agent": entrant.agent, "clairvoyant": True}]


def test_invalid_schedules_and_errors_are_failed_rows(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    play = evaluate.AgentPlayer.play

    def broken(self, instance, objective, seed, pool):
        if self.name == "random":
            raise RuntimeError("agent crashed")
        schedule, extra = play(self, instance, objective, seed, pool)
        return dataclasses.replace(schedule, segment_end=schedule.segment_end + 1.0), extra

    monkeypatch.setattr(evaluate.AgentPlayer, "play", broken)
    cfg = config("evaluate", "tiers=easy", "seeds.count=1", "agent=[lookahead,random]", "ppo=null", "workers=1",
                 f"store={tmp_path / 'store.jsonl'}", "progress=false")
    summary = evaluate.run(cfg)
    status = {r["agent"]: r for r in summary.rows}
    assert status["lookahead"]["status"] == "invalid" and status["lookahead"]["violations"]
    assert status["random"]["status"] == "error" and "agent crashed" in status["random"]["error"]
    for row in summary.rows:
        assert row["objective_value"] is None and all(row[k] is None for k in METRIC_KEYS)
    assert len(summary.failed) == 2
    assert capsys.readouterr().err.count("FAILED") == 2


def _run_cli(args: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.evaluate", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, **kwargs)


def _compiled_first(args: list[str], env: dict[str, str], tmp_path: Path) -> None:
    """Play the first seed of ``args`` into a scratch store, so that the kernels are compiled (or loaded) before a
    test times the evaluation: on an empty numba cache, beside another worker compiling, the compile alone passed
    a 240 s deadline."""
    warm = [a for a in args if not a.startswith(("seeds.count=", "store=", "hydra.run.dir="))]
    done = _run_cli([*warm, "seeds.count=1", f"store={tmp_path / 'warm.jsonl'}",
                     "hydra.run.dir=" + str(tmp_path / "warm")], env)
    assert done.returncode == 0, done.stderr[-3000:]


def _comparable(rows: list[dict]) -> dict:
    fields = ("agent", "instance_sha256", "ssi", "status", "objective_value", "normalised_weighted_tardiness",
              "decisions", *METRIC_KEYS)
    return {row_key(r): tuple(r[f] for f in fields) for r in rows}


class _InterruptedWait(Future):
    """A task still running when Ctrl-C arrives: waiting for it raises KeyboardInterrupt."""

    def result(self, timeout=None):
        raise KeyboardInterrupt


class _FakePool:
    """Stands in for the worker processes: task ``i``'s future is ``futures[i]``."""

    def __init__(self, futures: list[Future]) -> None:
        self.futures, self.shutdowns = iter(futures), []

    def __call__(self, *args, **kwargs) -> _FakePool:
        return self

    def __enter__(self) -> _FakePool:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, *args) -> Future:
        return next(self.futures)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.shutdowns.append(cancel_futures)


def _done(rows: list[dict]) -> Future:
    future: Future = Future()
    future.set_result(rows)
    return future


def test_ctrl_c_with_workers_keeps_the_rows_of_every_finished_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks finish out of order in the workers: Ctrl-C while waiting for the first one still hands over the
    rows of the later tasks already done (not those that failed or did not finish), then re-raises."""
    failed: Future = Future()
    failed.set_exception(KeyboardInterrupt())  # a worker interrupted in its task
    pool = _FakePool([_done([{"seed": 0}]), _InterruptedWait(), _done([{"seed": 2}, {"seed": 3}]), failed,
                      Future(), _done([{"seed": 5}])])
    monkeypatch.setattr(evaluate, "WorkerPool", pool)
    rows = []
    with pytest.raises(KeyboardInterrupt):
        for row in evaluate._run_tasks([[]] * 6, "makespan", True, workers=2):
            rows.append(row)
    assert rows == [{"seed": 0}, {"seed": 2}, {"seed": 3}, {"seed": 5}]
    assert pool.shutdowns == [True]


@pytest.mark.parametrize("written", [True, False])
def test_ctrl_c_while_a_row_is_stored_still_keeps_the_rows_of_every_finished_task(monkeypatch,
                                                                                  written: bool) -> None:
    """The interrupt lands in the main process's storing (not in the wait for a task): the row being stored
    (whether its append got to write it or not), the rest of its task and the later tasks already finished are kept,
    each once, then the interrupt propagates."""
    pool = _FakePool([_done([{"seed": 0}, {"seed": 1}]), Future(), _done([{"seed": 2}]), _done([{"seed": 3}])])
    monkeypatch.setattr(evaluate, "WorkerPool", pool)
    kept: list[dict] = []
    calls = []

    def keep(row: dict) -> None:
        calls.append(row)
        if len(calls) == 1 and not written:
            raise KeyboardInterrupt  # Ctrl-C while the first row is being stored, before it is written
        if row not in kept:
            kept.append(row)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Ctrl-C while the first row is being stored, once it is written

    with pytest.raises(KeyboardInterrupt):
        evaluate.keep_all(evaluate._run_tasks([[]] * 4, "makespan", True, workers=2), keep)
    assert kept == [{"seed": 0}, {"seed": 1}, {"seed": 2}, {"seed": 3}]  # all but the unfinished task 1's
    assert pool.shutdowns == [True]


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt during the test, whatever an earlier test in this process left installed."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _slow_task(jobs, objective, validate):
    if jobs[0] == "slow":
        time.sleep(20)
    return [{"seed": jobs[0]}]


def test_ctrl_c_with_workers_ends_them_at_once_keeping_the_finished_tasks(monkeypatch: pytest.MonkeyPatch,
                                                                         ctrl_c_raises: None) -> None:
    """Ctrl-C to the main process alone (kill -INT, timeout -s INT) while workers play long episodes: the run stops at
    once with the rows of the finished tasks and no worker left (it waited for every running and queued episode,
    then discarded them; after a second Ctrl-C it hung at exit, the workers waiting for tasks)."""
    monkeypatch.setattr(evaluate, "_play_instance", _slow_task)  # forked workers see it
    fork = multiprocessing.get_context("fork")
    monkeypatch.setattr(evaluate.multiprocessing, "get_context", lambda method: fork)
    created = []
    executor = evaluate.WorkerPool

    def pool(*args, **kwargs):
        created.append(executor(*args, **kwargs))
        return created[-1]

    monkeypatch.setattr(evaluate, "WorkerPool", pool)
    rows, began = [], time.monotonic()
    earlier = set(multiprocessing.active_children())  # an earlier test's pool may still be winding down

    def keep(row: dict) -> None:
        if row in rows:
            return
        rows.append(row)
        if row["seed"] == 0:
            time.sleep(1.0)  # task 2 finishes meanwhile
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # Ctrl-C, to the main process only
            time.sleep(1.0)

    tasks = evaluate._run_tasks([[0], ["slow"], [2], ["slow"], ["slow"]], "makespan", True, workers=2)
    with pytest.raises(KeyboardInterrupt):
        evaluate.keep_all(tasks, keep)
    tasks.close()  # as when the interrupted run lets go of it (the pool's `with` ends)
    assert rows == [{"seed": 0}, {"seed": 2}]
    processes = [p for p in set(multiprocessing.active_children()) - earlier if p.name.startswith("ForkProcess")]
    assert processes or created[0]._processes is None  # the workers (ended by 3.14's terminate_workers)
    for process in processes:  # Python waits for them at exit: they must end now, not after their 20 s episodes
        process.join(5)
        assert not (process.is_alive() and pid_running(process.pid))
    assert time.monotonic() - began < 15


@pytest.mark.slow
def test_killed_evaluation_resumes_without_loss_or_duplicates(cache: Path, tmp_path: Path) -> None:
    from dynasched_gym.generation import tier_pool

    tier_pool("hard", "small").prepare(range(10_000, 10_008), progress=False)
    env = {**os.environ, "DYNASCHED_CACHE": str(cache)}
    args = ["tiers=hard", "seeds.count=8", "agent=[rules,lookahead,lookahead_oracle]", "ppo=null", "progress=false",
            "hydra.run.dir=" + str(tmp_path / "hydra")]
    total = 8 * (RULES + 2)
    store = tmp_path / "killed.jsonl"
    _compiled_first([*args, "workers=1"], env, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "scripts.evaluate", *args, "workers=1", f"store={store}"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if store.exists() and store.read_bytes().count(b"\n") >= 5:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL, "the evaluation finished before it could be killed"
    kept = store.read_bytes().count(b"\n")
    assert 5 <= kept < total
    resumed = _run_cli([*args, "workers=1", f"store={store}"], env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{total} episodes: {kept} reused from the store, {total - kept} run now, 0 failed" in resumed.stdout
    clean = _run_cli([*args, "workers=2", f"store={tmp_path / 'clean.jsonl'}"], env)
    assert clean.returncode == 0, clean.stderr[-3000:]
    lines = [json.loads(line) for line in store.read_text().splitlines() if line.strip()]
    assert len(lines) == total and len({row_key(r) for r in lines}) == total  # every key exactly once
    assert _comparable(lines) == _comparable(ResultStore(tmp_path / "clean.jsonl").rows())


@pytest.mark.slow
def test_sigterm_stops_the_evaluation_as_ctrl_c_does(cache: Path, tmp_path: Path) -> None:
    """A scheduler's or ``kill``'s SIGTERM: the rows played are kept and counted, no ``.tmp`` file is left, exit
    status 130 without a traceback, and the rerun resumes (SIGTERM killed the process outright before)."""
    from dynasched_gym.generation import tier_pool

    tier_pool("hard", "small").prepare(range(10_000, 10_006), progress=False)
    env = {**os.environ, "DYNASCHED_CACHE": str(cache)}
    store = tmp_path / "out" / "store.jsonl"
    args = ["tiers=hard", "seeds.count=6", "agent=[lookahead]", "ppo=null", "progress=false", "workers=1",
            f"store={store}", "hydra.run.dir=" + str(tmp_path / "hydra")]
    _compiled_first(args, env, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "scripts.evaluate", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if store.exists() and store.read_bytes().count(b"\n") >= 2:
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.005)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, f"the evaluation finished before it could be stopped, or: {err[-3000:]}"
    kept = store.read_bytes().count(b"\n")
    assert f"interrupted: {kept} episode(s) of this run are stored in {store}" in err and "Traceback" not in err
    assert not [p for p in [*tmp_path.rglob("*"), *cache.rglob("*")] if p.name.endswith(".tmp")]
    resumed = _run_cli(["progress=true" if a == "progress=false" else a for a in args], env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"6 episodes: {kept} reused from the store, {6 - kept} run now, 0 failed" in resumed.stdout
    assert f"| {kept}/6 [" in resumed.stderr and "| 6/6 [" in resumed.stderr  # the bar counts the reused episodes


def _spawned_workers(pid: int) -> list[int]:
    """The worker processes that multiprocessing spawned for process ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent == pid and b"--multiprocessing-fork" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):  # ended meanwhile
                continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds the worker processes in /proc (Linux)")
def test_ctrl_c_to_the_process_group_with_workers_prints_only_the_message_and_resumes(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the workers too (SIGINT to the foreground process group): each printed its own
    KeyboardInterrupt traceback (from ``spawn_main`` while it imported the script, or from its wait for a task) around
    the one-line message. Now: status 130, the message alone, only complete rows stored, and the rerun completes."""
    env = {**os.environ, "DYNASCHED_CACHE": str(tmp_path / "pools")}  # a new pool: the first Ctrl-C lands in prepare
    store = tmp_path / "store.jsonl"
    # the CP-SAT reference keeps each instance's task going for a few tenths of a second after the rules' rows: with
    # the rules alone every episode was often done before the Ctrl-C landed
    args = ["tiers=easy", "seeds.count=4", "agent=[rules,cpsat_oracle]", "ppo=null", "progress=false", "workers=2",
            f"store={store}", "hydra.run.dir=" + str(tmp_path / "hydra")]
    total = 4 * (RULES + 1)

    def ctrl_c(when) -> str:  # starts the evaluation as a terminal does, presses Ctrl-C once when(proc) is true
        proc = subprocess.Popen([sys.executable, "-m", "scripts.evaluate", *args], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline and not when(proc):
                time.sleep(0.005)
            os.killpg(proc.pid, signal.SIGINT)
            err = proc.communicate(timeout=60)[1]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == 130, f"finished before the Ctrl-C, or died by a signal: {err[-3000:]}"
        assert err.strip().count("\n") == 0 and "Traceback" not in err, err[-3000:]  # the message, nothing else
        return err.strip()

    started: list[float] = []

    def workers_importing(proc: subprocess.Popen) -> bool:  # ~0.5 s of imports after they appear
        if not started and _spawned_workers(proc.pid):
            started.append(time.monotonic())
        return bool(started) and time.monotonic() - started[0] > 0.2

    assert ctrl_c(workers_importing) == f"interrupted: {evaluate.RESUME_NOTE}"  # during the pool's generation
    assert not store.exists() or not store.read_bytes()
    from dynasched_gym.generation import tier_pool

    # the rest of the pool made here, so that the next run starts its episodes' workers sooner
    tier_pool("easy", "small", cache_dir=tmp_path / "pools", workers=1).prepare(range(10_000, 10_004), progress=False)
    err = ctrl_c(lambda proc: store.exists() and store.read_bytes().count(b"\n") >= 1)  # workers playing episodes
    kept = store.read_bytes().count(b"\n")
    assert err.startswith(f"interrupted: {kept} episode(s) of this run are stored in {store}") and kept < total
    assert store.read_bytes().endswith(b"\n") and all(json.loads(line) for line in store.read_text().splitlines())
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    resumed = _run_cli(["workers=1" if a == "workers=2" else a for a in args], env)  # in one process: sooner
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{total} episodes: {kept} reused from the store, {total - kept} run now, 0 failed" in resumed.stdout
    rows = ResultStore(store).rows()
    assert len(rows) == len({row_key(r) for r in rows}) == total


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is None,
                    reason="hydra-joblib-launcher is not installed (pip install 'dynasched-gym[dist]')")
def test_joblib_sweep_stores_overlapping_jobs_once(cache: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    # jobs 0/1 and 2/3 overlap on seeds 10000..10001: each key must land once
    result = _run_cli(["-m", "launcher=joblib", "tiers=easy,medium", "seeds.count=2,3", "agent=rules", "ppo=null",
                       "progress=false", f"store={store}", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                      {**os.environ, "DYNASCHED_CACHE": str(cache)})
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in store.read_text().splitlines()]
    assert len(rows) == len({row_key(r) for r in rows}) == 2 * 3 * RULES
    assert {r["tier"] for r in rows} == {"easy", "medium"}


@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is None,
                    reason="hydra-joblib-launcher is not installed (pip install 'dynasched-gym[dist]')")
def test_ctrl_c_in_a_parallel_sweeps_launcher_ends_it_with_a_line(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group: each job of ``-m launcher=joblib`` said what it kept, but the launching
    process, waiting in joblib, ended in a KeyboardInterrupt traceback, status 1. The interrupt comes here inside
    joblib's wait, as Ctrl-C would."""
    code = ("import sys, joblib\n"
            "def stopped(self, iterable): raise KeyboardInterrupt\n"
            "joblib.Parallel.__call__ = stopped\n"
            "from scripts.evaluate import main\n"
            f"sys.argv = ['evaluate', '-m', 'launcher=joblib', 'tiers=easy,hard', 'seeds.count=1', 'agent=[random]', "
            f"'ppo=null', 'store={tmp_path / 'r.jsonl'}', 'hydra.sweep.dir={tmp_path / 'sweep'}']\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().endswith(f"interrupted: {SWEEP_STOPPED}")


def test_shipped_ppo_plays_its_tier_with_its_training_env(cache: Path, tmp_path: Path) -> None:
    checkpoint = REPO / "agents" / "checkpoints" / "ppo-easy-small.zip"
    if importlib.util.find_spec("sb3_contrib") is None or not checkpoint.is_file():
        pytest.skip("no shipped PPO checkpoint for easy/small (or sb3-contrib missing)")
    cfg = config("evaluate", "tiers=[easy,medium]", "seeds.count=1", "agent=[random]", "ppo=shipped", "workers=1",
                 f"store={tmp_path / 'store.jsonl'}", "progress=false")
    summary = evaluate.run(cfg)
    ppo = [r for r in summary.rows if r["agent"] == "ppo"]
    assert ppo and all(r["status"] == "ok" for r in ppo) and "easy" in {r["tier"] for r in ppo}
    config_ = ppo[0]["agent_config"]
    assert "checkpoint" not in config_["agent"] and len(config_["agent"]["sha256"]) == 64
    assert set(config_["env"]) == {"max_candidates", "observability", "time_scale", "ops_scale"}
    missing = {"medium"} - {r["tier"] for r in ppo}
    assert all(any(f"ppo on {t}/small" in note for note in summary.skipped) for t in missing)


@pytest.mark.parametrize(("override", "message"), [
    # each failed every episode instead, an error row stored for good under the bad setting
    ("agent.cpsat_oracle.kwargs.time_limit=-1",
     r"^agent\.cpsat_oracle \(name 'cpsat-oracle', kwargs \{'time_limit': -1, 'workers': 1\}\): time_limit must be a "
     r"finite number > 0, got -1$"),
    ("agent.cpsat_oracle.kwargs.workers=0", r"^agent\.cpsat_oracle .*: workers must be an integer >= 1, got 0$"),
    ("+agent.cpsat_oracle.kwargs.hint=x", r"^agent\.cpsat_oracle .*: solve_clairvoyant takes no option 'hint' here; "
                                          r"its options are time_limit, workers, seed"),
    # the oracle plays no env: this was ignored without a word (and the rows stored under it)
    ("+agent.cpsat_oracle.env.max_candidates=3", r"^agent\.cpsat_oracle\.env=\{'max_candidates': 3\}: cpsat-oracle "
                                                 r"solves the instance and plays no env"),
])
def test_the_cpsat_references_settings_are_checked_before_any_episode(override: str, message: str) -> None:
    if importlib.util.find_spec("ortools") is None:
        pytest.skip("ortools is not installed (pip install 'dynasched-gym[oracle]')")
    with pytest.raises(SettingError, match=message):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[cpsat_oracle]", "ppo=null", override))


def test_missing_extras_skip_agents_but_broken_modules_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluate._player.cache_clear()
    monkeypatch.setitem(sys.modules, "dynasched_gym.oracle", None)  # as if the oracle (or ortools) were missing
    plan = evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random,cpsat_oracle]", "ppo=null"))
    assert [e[0].agent for e in plan.episodes] == ["random"]
    assert plan.skipped and plan.skipped[0].startswith("cpsat-oracle on easy/small")

    def broken(*args, **kwargs):
        raise ImportError("cannot import name 'X' from 'dynasched_gym.core.lookahead'")

    monkeypatch.setattr(evaluate.AgentPlayer, "__init__", broken)
    evaluate._player.cache_clear()
    with pytest.raises(ImportError, match="cannot import name"):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[lookahead]", "ppo=null"))
    evaluate._player.cache_clear()


def test_a_policy_is_only_ranked_on_the_objective_it_was_trained_for() -> None:
    evaluate._player.cache_clear()
    plan = evaluate.plan(config("evaluate", "tiers=hard", "seeds.count=1", "agent=[random]", "ppo=shipped",
                                "objective=makespan"))
    assert [e[0].agent for e in plan.episodes] == ["random"]
    assert plan.skipped == ["ppo on hard/small: trained for weighted_tardiness, "
                            "this evaluation's objective is makespan"]
    evaluate._player.cache_clear()
    plan = evaluate.plan(config("evaluate", "tiers=hard", "seeds.count=1", "agent=[random]", "ppo=shipped",
                                "objective=weighted_tardiness"))
    assert sorted(e[0].agent for e in plan.episodes) == ["ppo", "random"]
    evaluate._player.cache_clear()


@pytest.mark.parametrize(("override", "message"), [("objective=bar", "objective must be one of"),
                                                   ("seeds.count=0", "seeds.count must be an integer >= 1"),
                                                   ("seeds.start=-2", "seeds.start must be an integer >= 0")])
def test_bad_objective_or_seeds_are_refused_before_any_episode(override: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate.plan(config("evaluate", "tiers=easy", "agent=[random]", "ppo=null", override))


# ------------------------------------------------------------------------------------------- LLM endpoint errors
def _llm_config(tmp_path: Path, base_url: str, *overrides: str):
    """scripts.evaluate with the random agent and an LLM agent (docs/llm.md's group syntax) on one easy seed."""
    return config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null", "workers=1",
                  "progress=false", f"store={tmp_path / 'store.jsonl'}", "+agent@agent.llm.kwargs=llm",
                  "+agent.llm.names=[llm]", "+agent.llm.env={max_candidates: all}", "agent.llm.kwargs.model=test-model",
                  f"agent.llm.kwargs.base_url={base_url}", "agent.llm.kwargs.cache=false",
                  "agent.llm.kwargs.max_retries=0", "agent.llm.kwargs.timeout=2.0", *overrides)


def test_an_episode_with_failed_requests_is_not_stored_and_a_rerun_retries_it(cache: Path, tmp_path: Path,
                                                                              server) -> None:
    from test_llm_client import first_id

    def first_fails(body: dict) -> dict:
        return {"status": 500} if server.requests == 1 else first_id(body)

    server.responder = first_fails  # one decision falls back to the rule because its request failed
    cfg = _llm_config(tmp_path, server.url)
    evaluate._player.cache_clear()
    summary = evaluate.run(cfg)
    llm = [r for r in summary.rows if r["agent"] == "llm:L2"]
    assert len(llm) == 1 and llm[0]["status"] == "error" and llm[0]["retry"]
    assert "1 of" in llm[0]["error"] and llm[0]["objective_value"] is None
    assert summary.failed == llm and summary.retry == llm and summary.ran == 1  # the random agent's row
    assert "1 failed (1 not stored: a rerun retries them)" in str(summary)
    assert [r["agent"] for r in ResultStore(cfg.store).rows()] == ["random"]
    again = evaluate.run(cfg)  # the endpoint answers now: the episode is played again and stored
    assert (again.reused, again.ran, again.failed) == (1, 1, [])
    stored = {r["agent"]: r for r in ResultStore(cfg.store).rows()}
    assert stored["llm:L2"]["status"] == "ok" and stored["llm:L2"]["usage"]["fallbacks"] == 0
    evaluate._player.cache_clear()


def test_an_episode_whose_reflection_request_failed_is_not_stored(cache: Path, tmp_path: Path, server) -> None:
    """A failed reflection round keeps the first answer, so no decision falls back (fallback_error 0), yet the
    decision is not the one the agent makes with a working endpoint: the row was stored as ok (docs/llm.md: stored
    ok rows never hold a decision that the endpoint failed to make)."""
    from test_llm_client import first_id

    def reflection_fails(body: dict) -> dict:
        return {"status": 500} if server.requests == 2 else first_id(body)

    server.responder = reflection_fails  # the first decision's reflection round fails after its retries
    cfg = _llm_config(tmp_path, server.url, "agent.llm.kwargs.refinement=reflection")
    evaluate._player.cache_clear()
    summary = evaluate.run(cfg)
    llm = [r for r in summary.rows if r["agent"] == "llm:L2"]
    assert len(llm) == 1 and llm[0]["usage"]["errors"] == 1 and llm[0]["usage"]["fallback_error"] == 0
    assert llm[0]["status"] == "error" and llm[0]["retry"] and "1 request(s)" in llm[0]["error"]
    assert [r["agent"] for r in ResultStore(cfg.store).rows()] == ["random"]
    evaluate._player.cache_clear()


def test_an_llm_rows_tokens_are_its_own_episodes(cache: Path, tmp_path: Path, server) -> None:
    """The player's agent serves every seed: each row counts the tokens of its episode, not the agent's running
    total (the test server reports 50 prompt tokens a request)."""
    evaluate._player.cache_clear()
    rows = [r for r in evaluate.run(_llm_config(tmp_path, server.url, "seeds.count=2")).rows if r["agent"] == "llm:L2"]
    assert [r["tokens"]["prompt"] for r in rows] == [50 * r["usage"]["requests"] for r in rows]
    assert len(rows) == 2 and all(r["usage"]["requests"] > 0 for r in rows)
    evaluate._player.cache_clear()


def test_an_unreachable_llm_endpoint_stops_the_evaluation(cache: Path, tmp_path: Path) -> None:
    cfg = _llm_config(tmp_path, "http://127.0.0.1:9/v1", "agent.llm.kwargs.timeout=0.5")
    evaluate._player.cache_clear()
    with pytest.raises(evaluate.EvaluationStopped, match=r"(?s)LLMUnavailableError: the LLM endpoint "
                       r"http://127\.0\.0\.1:9/v1 failed 3 decisions in a row.*rerun the same command") as caught:
        evaluate.run(cfg)
    assert caught.value.code == str(caught.value)  # exits with status 1 and the message, no traceback
    assert all(r["agent"] != "llm:L2" for r in ResultStore(cfg.store).rows())  # nothing stored for it
    evaluate._player.cache_clear()


# ------------------------------------------------------------------------------------------- Ctrl-C in CP-SAT
def test_ctrl_c_during_a_cpsat_solve_raises_keyboard_interrupt_at_once(monkeypatch: pytest.MonkeyPatch,
                                                                      ctrl_c_raises: None) -> None:
    """CP-SAT would take SIGINT for itself and return a cut-short schedule stored as ``ok``; the player stops."""
    if importlib.util.find_spec("ortools") is None:
        pytest.skip("ortools is not installed (pip install 'dynasched-gym[oracle]')")
    import threading

    from ortools.sat.python import cp_model

    from dynasched_gym.io import resolve_instance

    real, solving, done = cp_model.CpSolver.solve, threading.Event(), threading.Event()

    began: list[float] = []

    def observed(solver, *args, **kwargs):
        began.append(time.perf_counter())
        solving.set()
        try:
            return real(solver, *args, **kwargs)
        finally:
            done.set()

    def ctrl_c() -> None:
        if solving.wait(600):  # building the model can take long on a loaded machine
            time.sleep(0.3)
            if not done.is_set():
                os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(cp_model.CpSolver, "solve", observed)
    player = evaluate.OraclePlayer("cpsat-oracle", {"time_limit": 60.0, "workers": 1}, {})
    sender = threading.Thread(target=ctrl_c, daemon=True)
    with pytest.raises(KeyboardInterrupt):  # mk06 (makespan) is far from proven optimal within a minute
        sender.start()
        player.play(resolve_instance("mk06"), "makespan", 0, ("medium", "small"))
    sender.join()
    assert done.is_set() and time.perf_counter() - began[0] < 15  # the search stopped, long before its time limit


# ------------------------------------------------------------------------------------------- PPO checkpoints
def test_an_explicit_checkpoint_that_does_not_exist_is_an_error_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"^ppo=/nope/model\.zip: no such checkpoint file"):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=/nope/model.zip"))
    with pytest.raises(ValueError, match=r"^agent\.mine\.kwargs\.checkpoint=nope\.zip: no such checkpoint file"):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null",
                             "+agent.mine.names=[ppo]", "+agent.mine.kwargs.checkpoint=nope.zip"))
    shipped = evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=shipped:full"))
    assert [e[0].agent for e in shipped.episodes] == ["random"]  # no shipped full checkpoint for easy: skipped
    assert any(note.startswith("ppo on easy/small") for note in shipped.skipped)


@pytest.mark.parametrize(("value", "meant"), [("shiped", "shipped"), ("Shipped:full", "shipped:full")])
def test_a_misspelt_shipped_is_an_error_suggesting_shipped(value: str, meant: str) -> None:
    """``ppo=shiped`` read as a path said only 'no such checkpoint file', not what the user meant."""
    hint = rf"^ppo={value}: no such checkpoint file \(.*\) \(did you mean {meant}\?\)$"
    with pytest.raises(ValueError, match=hint):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", f"ppo={value}"))
    with pytest.raises(ValueError, match=r"no such checkpoint file \([^)]*\)$"):  # a path is not taken for one
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=nope/shiped"))


def test_a_checkpoint_folder_is_an_error_listing_its_models(tmp_path: Path) -> None:
    """``ppo=<a training run's folder>`` said only 'no such checkpoint file'; now which models the folder holds."""
    (tmp_path / "model.zip").write_bytes(b"")
    (tmp_path / "best.zip").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"^ppo={tmp_path}: no such checkpoint file \(.*\): a folder; name a model "
                                         r"\.zip in it \(best\.zip, model\.zip; scripts\.train's tested policy is "
                                         r"model\.zip\)$"):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", f"ppo={tmp_path}"))
    (tmp_path / "model.zip").unlink()
    (tmp_path / "best.zip").unlink()
    with pytest.raises(ValueError, match=r": a folder, with no model \.zip in it$"):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", f"ppo={tmp_path}"))


def test_one_checkpoint_setting_names_a_model_per_tier_of_a_training_sweep(tmp_path: Path) -> None:
    """``{tier}`` and ``{size}`` in a checkpoint path, and a glob pattern matching exactly one file: a sweep's
    per-tier models enter as one setting, each playing its own tier (one path played every tier's model on all)."""
    shipped = Path(__file__).resolve().parents[1] / "agents" / "checkpoints"
    for number, tier in enumerate(("easy", "medium")):
        (tmp_path / f"{number}-{tier}-small").mkdir()
        for suffix in ("zip", "yaml"):  # the yaml: its training config, as a training run writes beside its model
            shutil.copy(shipped / f"ppo-{tier}-small.{suffix}", tmp_path / f"{number}-{tier}-small" / f"model.{suffix}")
    pattern = f"{tmp_path}/*-{{tier}}-{{size}}/model.zip"
    plan = evaluate.plan(config("evaluate", "tiers=[easy,medium]", "seeds.count=1", "agent=[]", f"ppo='{pattern}'"))
    played = {tier: entrant.config["agent"]["sha256"] for entrant, tier, _, _ in plan.episodes}
    assert played == {tier: hashlib.sha256((shipped / f"ppo-{tier}-small.zip").read_bytes()).hexdigest()
                      for tier in ("easy", "medium")}
    with pytest.raises(ValueError, match=r"^ppo=.*/\*/model\.zip: the pattern must match exactly one checkpoint "
                                         r"file, it matches 2 files \(.*0-easy-small/model\.zip, .*1-medium"):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[]", f"ppo={tmp_path}/*/model.zip"))
    with pytest.raises(ValueError, match=r"^ppo=.*/\*-hard-small/model\.zip: the pattern must match exactly one "
                                         r"checkpoint file, it matches none"):
        evaluate.plan(config("evaluate", "tiers=hard", "seeds.count=1", "agent=[]", f"ppo='{pattern}'"))


def test_a_finished_evaluation_says_how_to_rank_what_it_stored(tmp_path: Path) -> None:
    """It ended with the store's path and the counts: the printed leaderboard command takes the run's overrides as
    they are (quoting included) and selects the same episodes, playing none. A job of ``-m launcher=joblib`` printed
    its launcher too, and the command was refused when copied (a launcher outside a sweep)."""
    from scripts.overrides import check_command_line

    overrides = ["tiers=[easy]", "seeds.count=2", "agent=[rules]", "ppo=null", f"store={tmp_path / 'my store.jsonl'}"]
    words = shlex.split(evaluate.board_command(["launcher=joblib", *overrides]).removeprefix("rank them: "))
    assert words[:3] == ["python", "-m", "scripts.leaderboard"] and words[-1] == "run_missing=false"
    check_command_line(words[3:], False, None, "leaderboard")
    board = config("leaderboard", *words[3:])
    assert evaluate.plan(board).keys() == evaluate.plan(config("evaluate", *overrides)).keys()
    assert board.store == str(tmp_path / "my store.jsonl") and board.run_missing is False


def test_the_ppo_setting_is_evaluated_beside_an_agent_entry_of_ppo() -> None:
    """An agent entry named ppo made the top-level ppo setting be ignored without a word."""
    shipped = Path(__file__).resolve().parents[1] / "agents" / "checkpoints"

    def planned(checkpoint: str) -> tuple[list[str], list[str]]:
        plan = evaluate.plan(config("evaluate", "tiers=medium", "seeds.count=1", "agent=[]",
                                    f"ppo={shipped / checkpoint}", "+agent.mine.names=[ppo]", "+agent.mine.label=mine",
                                    f"+agent.mine.kwargs.checkpoint={shipped / 'ppo-medium-small-full.zip'}"))
        return [e[0].agent for e in plan.episodes], plan.skipped

    agents, skipped = planned("ppo-medium-small.zip")
    assert agents == ["mine", "ppo"] and skipped == []
    agents, skipped = planned("ppo-medium-small-full.zip")  # the same configuration: once
    assert agents == ["mine"] and skipped[0].startswith("ppo on medium/small: the same configuration")


@pytest.mark.parametrize(("override", "message"), [
    ("agent.lookahead.kwargs.top_k=0", r"^agent\.lookahead \(name 'lookahead', kwargs \{'top_k': 0, .*\}\): top_k"),
    # json's "Out of range float values are not JSON compliant", naming no key, was the whole message
    ("agent.lookahead.kwargs.top_k=nan", r"^agent\.lookahead \(name 'lookahead', kwargs \{'top_k': nan, .*\}\): "
                                         r"settings must be finite numbers, not NaN or infinity$"),
    ("+agent.random.env.reward_scale=inf", r"^agent\.random\.env=\{.*'reward_scale': inf\}: settings must be finite"),
    ("agent.random.names=[randm]", r"^agent\.random \(name 'randm', kwargs \{.*\}\): unknown agent 'randm'"),
    ("tiers=[hardd]", r"^tiers\[0\] must be one of .*, got 'hardd' \(did you mean 'hard'\?\)$"),
    ("tiers=hardd", r"^tiers must be one of .*, got 'hardd' \(did you mean 'hard'\?\)$"),  # one value given alone
    (f"seeds.count={10**30}", r"^seeds\.count must be at most 1000000, got 10+$"),  # filled the memory
    ("sizes=[small,huge]", r"^sizes\[1\] must be one of .*, got 'huge'$"),
])
def test_agent_names_arguments_and_tiers_are_refused_naming_their_key(override: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random,lookahead]", "ppo=null",
                             override))


@pytest.mark.parametrize(("override", "message"), [
    ("agent.rules.env.max_candidates=-1", r"^agent\.rules\.env=\{'max_candidates': -1\}: max_candidates must be"),
    ("+agent.rules.env.foo=1", r"^agent\.rules\.env=\{.*'foo': 1\}: DFJSPEnv got an unknown argument 'foo'; its "
     r"arguments are tier, "),
])
def test_an_agents_env_settings_are_refused_before_any_episode_naming_the_key(override: str, message: str) -> None:
    """They were checked in each episode: 27 failed rows were stored, each naming the env argument only."""
    with pytest.raises(ValueError, match=message):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[rules]", "ppo=null", override))


@pytest.mark.parametrize(("override", "message"), [
    ("+agent.random.kwarg.seed=3", r"^agent\.random: no such key\(s\) kwarg; an agent entry has names, _target_,"),
    ("+agent.random._target_=x.Y", r"^agent\.random: give names .* or _target_ .*, one of them"),
    ("+agent.random.env.objective=makespan", r"^agent\.random\.env: objective set by the evaluation itself"),
    ("+agent.random.env.invalid_action=replace", r"^agent\.random\.env: invalid_action set by the evaluation"),
])
def test_an_agent_entry_with_a_misspelt_key_or_an_env_setting_of_the_evaluation_is_refused(override: str,
                                                                                         message: str) -> None:
    """A misspelt key was ignored (the agent played its defaults); env.objective failed every episode."""
    with pytest.raises(ValueError, match=message):
        evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null", override))


USER_AGENTS = """
import numpy as np
from dynasched_gym.agents import Agent


class LastSlot(Agent):  # neither a name nor a config() of its own
    def __init__(self, offset=0):
        self.offset = offset

    def act(self, observation, info):
        valid = np.flatnonzero(observation["action_mask"])
        return int(valid[max(0, len(valid) - 1 - self.offset)])


class SeededOnce(Agent):  # its stream runs on from episode to episode when the same object plays them
    name = "seeded-once"

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def act(self, observation, info):
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))


class OutOfRange(Agent):
    def act(self, observation, info):
        return 10_000


class NotAnAgent:
    pass
"""


def _user_plan(tmp_path: Path, target: str, *overrides: str, kwargs: dict | None = None):
    cfg = config("evaluate", "tiers=easy", "agent=[]", "ppo=null", "workers=1", "progress=false",
                 f"store={tmp_path / 'store.jsonl'}", *overrides)
    OmegaConf.update(cfg, "agent.mine", {"_target_": target, "kwargs": kwargs or {}, "env": {"max_candidates": "all"}},
                     force_add=True)
    return cfg


def test_a_user_agent_class_is_evaluated_by_target_with_its_arguments_and_code_in_the_hash(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent without config() of its own shared one hash for every argument (offset 3 reused offset 0's rows)."""
    (tmp_path / "user_agents_a.py").write_text(USER_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    first = evaluate.run(_user_plan(tmp_path, "user_agents_a.LastSlot", "seeds.count=2"))
    assert first.ran == 2 and not first.failed and {r["agent"] for r in first.rows} == {"LastSlot"}
    assert first.rows[0]["agent_config"]["target"] == "user_agents_a.LastSlot"
    assert evaluate.run(_user_plan(tmp_path, "user_agents_a.LastSlot", "seeds.count=2")).reused == 2
    other = evaluate.run(_user_plan(tmp_path, "user_agents_a.LastSlot", "seeds.count=2", kwargs={"offset": 3}))
    assert other.ran == 2 and other.rows[0]["agent_hash"] != first.rows[0]["agent_hash"]
    (tmp_path / "user_agents_a.py").write_text(USER_AGENTS + "# changed\n")
    evaluate._player.cache_clear()  # as a new run: the module is imported again
    monkeypatch.delitem(sys.modules, "user_agents_a")
    assert evaluate.run(_user_plan(tmp_path, "user_agents_a.LastSlot", "seeds.count=2")).ran == 2


def test_a_user_agent_is_built_anew_for_every_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One object played the warm-up and every episode: a seed's row depended on the episodes played before it."""
    (tmp_path / "user_agents_b.py").write_text(USER_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    player = evaluate.AgentPlayer(None, {}, {"max_candidates": "all"}, target="user_agents_b.SeededOnce")
    inst = resolve_instance("mk01")
    played = [player.play(inst, "makespan", 0, ("medium", "small"))[0].metrics["makespan"] for _ in range(3)]
    assert played[0] == played[1] == played[2]


def test_an_invalid_action_fails_the_episode(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The env's default replaced it by slot 0: an agent playing only invalid actions was ranked as FIFO."""
    (tmp_path / "user_agents_c.py").write_text(USER_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    summary = evaluate.run(_user_plan(tmp_path, "user_agents_c.OutOfRange", "seeds.count=1"))
    assert [r["status"] for r in summary.rows] == ["error"]
    assert summary.rows[0]["error"].startswith("InvalidActionError") and summary.rows[0]["objective_value"] is None


@pytest.mark.parametrize(("target", "message"), [
    ("user_agents_d.NotAnAgent", r"_target_='user_agents_d.NotAnAgent' is no subclass of dynasched_gym.agents.Agent"),
    ("user_agents_d.Missing", r"module 'user_agents_d' has no 'Missing'"),
    ("no_such_module_here.Agent", r"cannot import 'no_such_module_here' .*PYTHONPATH"),
    ("NoModule", r"give the class as module.Class"),
])
def test_a_target_that_is_no_agent_class_is_refused_naming_the_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     target: str, message: str) -> None:
    (tmp_path / "user_agents_d.py").write_text(USER_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=rf"^agent\.mine \(_target_ '{target}', kwargs \{{\}}\): .*{message}"):
        evaluate.plan(_user_plan(tmp_path, target, "seeds.count=1"))


def test_the_behaviour_version_enters_every_agent_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows played before a behaviour change (same configuration, other play) must not be reused."""
    def hashes() -> set[str]:
        plan = evaluate.plan(config("evaluate", "tiers=easy", "seeds.count=1", "agent=[random,cpsat_oracle]",
                                    "ppo=null"))
        assert all(e[0].config["behaviour"] == evaluate.BEHAVIOUR_VERSION for e in plan.episodes)
        return {e[0].agent_hash for e in plan.episodes}

    before = hashes()
    monkeypatch.setattr(evaluate, "BEHAVIOUR_VERSION", evaluate.BEHAVIOUR_VERSION + 1)
    after = hashes()
    assert len(before) == len(after) == 2 and not before & after


def test_a_ppo_entry_with_env_settings_keeps_the_policys_other_settings() -> None:
    """An entry's ``env`` replaces only what it sets: the policy's units and observability stay."""
    checkpoint = REPO / "agents" / "checkpoints" / "ppo-easy-small.zip"
    if importlib.util.find_spec("sb3_contrib") is None or not checkpoint.is_file():
        pytest.skip("no shipped PPO checkpoint for easy/small (or sb3-contrib missing)")
    player = evaluate.AgentPlayer("ppo", {"checkpoint": str(checkpoint)}, {"time_scale": 5.0})
    own = player.agent.env_settings()
    assert player.env == {**own, "time_scale": 5.0} and player.env["ops_scale"] == own["ops_scale"]


def test_observability_names_the_ppo_key_of_a_missing_checkpoint(tmp_path: Path) -> None:
    from scripts import observability

    base = ["tiers=[easy]", "seeds.count=1", "levels=[]", "variants=[]", "baselines=[]", "ppo.concise=null",
            f"store={tmp_path / 'store.jsonl'}", f"out={tmp_path / 'out'}", "progress=false"]
    with pytest.raises(ValueError, match=r"^ppo\.full=/nope/full\.zip: no such checkpoint file"):
        observability.run(config("observability", *base, "ppo.full=/nope/full.zip"))
    with pytest.raises(ValueError, match=r"^ppo\.full\.easy=/nope/full\.zip: no such checkpoint file"):
        observability.run(config("observability", *base, "ppo.full={easy: /nope/full.zip}"))
    assert not (tmp_path / "store.jsonl").exists()


# ------------------------------------------------------------------------------------------- compare_agents options
@pytest.mark.parametrize(("args", "message"), [
    (["--seeds", "0"], "--seeds must be in 1..1000000 (each is an instance to generate), got 0"),
    (["--seeds", str(10**30)], "--seeds must be in 1..1000000"),  # filled the memory
    (["--agent", "ppo", "--checkpoint", "m.zip", "--horizon", "5", "--top-k", "16"],
     "lookahead option(s) --top-k, --horizon given with --agent ppo"),
    (["--agent", "ppo", "--checkpoint", "m.zip", "--clairvoyant"], "option(s) --clairvoyant given with --agent ppo"),
    (["--agent", "ppo", "--checkpoint", "m.zip", "--futures", "0"], "option(s) --futures given with --agent ppo"),
    (["--agent", "ppo", "--checkpoint", "m.zip", "--rule", "EDD", "--rollout-rules", "SPT"],
     "option(s) --rule, --rollout-rules given"),
    (["--checkpoint", "m.zip"], "--checkpoint m.zip given with --agent lookahead"),
    (["--tier", "bogus"], "invalid choice: 'bogus'"),  # these four were tracebacks, some after all the rollouts
    (["--start", "-5"], "--start must be >= 0, got -5"),
    (["--subset-size", "-3"], "--subset-size must be in 0..--seeds (100), got -3"),
    (["--agent", "ppo", "--checkpoint", "/nope/m.zip"], "--checkpoint /nope/m.zip: PPO checkpoint"),
    (["--top-k", "0"], "top_k must be an integer >= 1, got 0"),
    (["--reference", "EDD:LTI"], "--reference EDD:LTI: not a deterministic JOB:MACHINE rule of the library (did you "
     "mean EDD:LIT?)"),
    # the agent would roll out in the very instances it is tested on (train.py refuses the same overlap)
    (["--start", "899990", "--seeds", "20", "--futures", "2"], "--start 899990 --seeds 20: pool seeds "
     "899990..900009 overlap the seeds of the sampled futures 900000..900999 (lookahead rolls out in 2 of them)"),
    (["--out", __file__], "argument --out: cannot be a folder: File exists"),  # before any seed is played
    (["--out", f"{__file__}/sub"], "argument --out: cannot be a folder: Not a directory"),
])
def test_compare_agents_refuses_zero_seeds_and_options_of_the_other_agent(
        args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from scripts import compare_agents

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as caught:
        compare_agents.main(args)
    assert caught.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / ".bench").exists()  # the default --out is made only once every option is accepted


def test_compare_agents_without_the_rl_extra_says_which_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from dynasched_gym.agents.ppo import shipped_checkpoint
    from scripts import compare_agents

    checkpoint = shipped_checkpoint("medium")
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # as if not installed: was MissingExtraError's traceback
    monkeypatch.delitem(sys.modules, "dynasched_gym.agents.ppo")  # imported again, as in a fresh process
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as caught:
        compare_agents.main(["--agent", "ppo", "--checkpoint", str(checkpoint), "--tier", "medium"])
    assert caught.value.code == 2 and "pip install 'dynasched-gym[rl]'" in capsys.readouterr().err
    assert not (tmp_path / ".bench").exists()


def test_a_policy_of_another_size_is_refused_before_any_episode(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The small policy on large instances: evaluate stored a final error row per seed, compare_agents failed with a
    traceback after the pool and every rule."""
    from dynasched_gym.agents.ppo import shipped_checkpoint
    from scripts import compare_agents

    checkpoint = shipped_checkpoint("medium")
    with pytest.raises(SettingError, match=r"^ppo=.*ppo-medium-small.zip on medium/large: the env's observation "
                                           r"space .* is not the policy's"):
        evaluate.plan(config("evaluate", "agent=[random]", f"ppo={checkpoint}", "tiers=[medium]", "sizes=[large]"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as caught:
        compare_agents.main(["--agent", "ppo", "--checkpoint", str(checkpoint), "--tier", "medium", "--size", "large"])
    assert caught.value.code == 2 and "is not the policy's" in capsys.readouterr().err
    assert not (tmp_path / ".bench").exists()


OUT_IN_THE_WAY = [
    (["--out", "{file}/x.json"], "file: Not a directory"),  # found before the table is computed, not after
    (["--out", "{folder}"], "Is a directory"),
    (["--out", "{fifo}"], "fifo: Not a regular file"),  # the rename replaced it (a device such as /dev/null too)
]


@pytest.mark.parametrize(("script", "args", "message"), [
    ("fjsp_table", ["--top-k", "0"], "--top-k: top_k must be an integer >= 1, got 0"),
    ("fjsp_table", ["--top-k", str(10**20)], "--top-k: top_k must be at most 2147483647"),  # after the rules
    ("calibrate_compare", ["--vectors", "0"], "--vectors must be >= 1, got 0"),
    ("calibrate_compare", ["--size", "huge"], "argument --size: invalid choice: 'huge'"),  # was a traceback
    *[(script, args, message) for script in ("fjsp_table", "calibrate_compare") for args, message in OUT_IN_THE_WAY],
])
def test_table_scripts_refuse_bad_options_before_playing(tmp_path: Path, script: str, args: list[str], message: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"scripts.{script}")
    (tmp_path / "file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    args = [a.format(file=tmp_path / "file", folder=tmp_path, fifo=tmp_path / "fifo") for a in args]
    with pytest.raises(SystemExit) as caught:
        module.main(args)
    assert caught.value.code == 2 and message in capsys.readouterr().err


def test_fjsp_table_prints_and_writes_each_instances_makespans_and_their_means(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The rules' and the lookahead's makespans, their means and the count of schedules the validator refuses, in
    .bench/fjsp_table.json by default; three instances and a top-2 lookahead keep it short."""
    from types import SimpleNamespace

    import gymnasium as gym

    from dynasched_gym import data, load_instance, rollout
    from dynasched_gym.agents import make, run_episode
    from scripts import fjsp_table

    names, asked = ("mk01", "mk02", "mk03"), []

    def short_lookahead(name: str, top_k: int) -> Any:
        asked.append(top_k)
        return make(name, top_k=2)

    monkeypatch.setattr(fjsp_table, "INSTANCES", names)
    monkeypatch.setattr(fjsp_table, "make", short_lookahead)
    monkeypatch.chdir(tmp_path)
    fjsp_table.main([])
    table = json.loads((tmp_path / ".bench" / "fjsp_table.json").read_text())
    rows = {}
    for name in names:
        inst = load_instance(data.path(name))
        env = gym.make("DynaSched/FJSP-v0", instance=inst, max_candidates=512, objective="makespan")
        rows[name] = {**{rule: rollout(inst, rule).metrics["makespan"] for rule in fjsp_table.RULES},
                      "lookahead": run_episode(make("lookahead", top_k=2), env, seed=0).metrics["makespan"]}
    means = {column: float(np.mean([rows[name][column] for name in names])) for column in rows["mk01"]}
    assert asked == [16] and table["invalid"] == 0 and table["published"] == fjsp_table.PUBLISHED
    assert table["rows"] == rows and table["means"] == means
    out = capsys.readouterr().out.splitlines()
    assert "  mean" + "".join(f"{means[column]:>11.1f}" for column in means) in out
    assert f"lookahead (top-16, rollouts MWKR/FIFO/SPT/EDD) mean {means['lookahead']:.1f} " in out[-2]
    assert out[-1] == "written to .bench/fjsp_table.json"
    monkeypatch.setattr(fjsp_table, "validate_schedule", lambda schedule: SimpleNamespace(ok=False))
    monkeypatch.setattr(fjsp_table, "INSTANCES", names[:1])
    fjsp_table.main(["--out", str(tmp_path / "t.json")])
    assert json.loads((tmp_path / "t.json").read_text())["invalid"] == len(fjsp_table.RULES) + 1


def test_the_command_lines_out_is_checked_before_the_work(capsys: pytest.CaptureFixture[str]) -> None:
    from dynasched_gym.cli import main as cli
    from scripts import bench

    with pytest.raises(SystemExit) as caught:
        cli(["rollout", "mk01", "--out", "/dev/null"])  # was computed, then refused (an earlier version replaced it)
    assert caught.value.code == 2 and "/dev/null: Not a regular file" in capsys.readouterr().err
    with pytest.raises(SettingError, match=r"^out must be a regular file path, got /dev/null"):
        bench.settings(config("bench", "out=/dev/null"))


def test_the_command_line_stops_on_ctrl_c_without_a_traceback(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """dynasched-gym compare printed a KeyboardInterrupt traceback of wherever the rollouts were."""
    from dynasched_gym import cli as command_line

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(command_line, "resolve_instance", interrupted)
    assert command_line.main(["compare", "mk01"]) == 130
    assert capsys.readouterr().err.strip().endswith("interrupted")


def test_an_output_path_that_cannot_be_written_is_refused_before_the_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A read-only folder (a permission, a read-only mount) was found after the work: the whole leaderboard ran,
    then a traceback. os.access stands in for the mount, which tests running as root cannot make."""
    from dynasched_gym.cli import main as cli
    from dynasched_gym.instance import writable_file, writable_folder
    from scripts.overrides import output_folder

    read_only = tmp_path / "ro"
    read_only.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != read_only)
    with pytest.raises(PermissionError, match="Cannot be written") as caught:
        writable_folder(read_only / "board" / "deep")
    assert caught.value.filename == str(read_only)
    (read_only / "store.jsonl").write_text("")
    with pytest.raises(PermissionError):
        writable_file(read_only / "store.jsonl")
    assert writable_folder(tmp_path / "rw") == tmp_path / "rw"
    with pytest.raises(SettingError, match=r"^out must be a writable folder path, got .*ro/board"):
        output_folder("out", str(read_only / "board"))
    with pytest.raises(SystemExit) as exited:
        cli(["rollout", "mk01", "--out", str(read_only / "s.json")])
    assert exited.value.code == 2 and "Cannot be written" in capsys.readouterr().err


def test_stored_rows_that_do_not_hold_for_this_run_are_refused_not_reused(cache: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    base = ("tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null", "workers=1", "progress=false",
            f"store={store}")
    assert evaluate.run(config("evaluate", *base, "validate=false")).ran == 1
    with pytest.raises(SettingError, match="was stored with validate=false"):  # reused as if validated; a usage error
        evaluate.run(config("evaluate", *base))
    row = json.loads(store.read_text())
    store.write_text(json.dumps({**row, "validated": True, "instance_sha256": "0" * 64}) + "\n")
    with pytest.raises(SettingError, match="played another instance than the pool gives now"):  # a generator change
        evaluate.run(config("evaluate", *base))
    with pytest.raises(SettingError, match="played another instance"):  # the board reads stored rows the same way
        leaderboard.run(config("leaderboard", *base, "run_missing=false", f"out={tmp_path / 'board'}"))
    store.write_text(json.dumps({**row, "validated": True}) + "\n")
    assert evaluate.run(config("evaluate", *base)).reused == 1


def test_a_row_another_run_stored_meanwhile_unvalidated_is_refused_at_the_end(cache: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A validate=false run storing an episode while this run played it: the store kept that row, which this
    run's summary then counted as validated."""
    store = tmp_path / "store.jsonl"
    base = ("tiers=easy", "seeds.count=1", "agent=[random]", "ppo=null", "workers=1", "progress=false",
            f"store={store}")
    play = evaluate.play_episode

    def concurrent(*args: Any) -> dict[str, Any]:
        ResultStore(store).append(play(*args[:-1], False))  # the other run, validate=false, finishes first
        return play(*args)

    monkeypatch.setattr(evaluate, "play_episode", concurrent)
    with pytest.raises(SettingError, match="was stored with validate=false"):
        evaluate.run(config("evaluate", *base))
    assert [json.loads(line)["validated"] for line in store.read_text().splitlines()] == [False]


def test_a_board_of_stored_rows_says_how_many_configured_episodes_the_store_lacks(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run_missing=false used to aggregate a partial store without a word beside the board; the agents the plan
    skipped are still named beside it."""
    base = ("tiers=easy", "agent=[random]", "ppo=null", "workers=1", "progress=false", f"store={tmp_path / 's.jsonl'}")
    assert evaluate.run(config("evaluate", *base, "seeds.count=1")).ran == 1
    evaluate._player.cache_clear()
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "dynasched_gym.oracle", None)  # as if the oracle (or ortools) were missing
        _, _, text = leaderboard.run(config("leaderboard", *base, "seeds.count=3", "run_missing=false",
                                            "agent=[random,cpsat_oracle]", f"out={tmp_path / 'board'}"))
    evaluate._player.cache_clear()
    assert "Skipped: cpsat-oracle on easy/small" in text
    assert "; 2 of the 3 configured episodes, not in the store (run_missing=false; the first: random on " \
           "easy/small, seed 10001)." in text
    _, _, text = leaderboard.run(config("leaderboard", *base, "seeds.count=1", "run_missing=false",
                                        f"out={tmp_path / 'board'}"))
    assert "Skipped" not in text


def test_a_lookahead_with_sampled_futures_draws_them_from_the_instances_own_pool(cache: Path) -> None:
    """The env was made without the tier: every tier's futures came from the medium pool."""
    from dynasched_gym.generation import tier_pool

    player = evaluate.AgentPlayer("lookahead", {"futures": 1, "top_k": 2}, {})
    schedule, _ = player.play(tier_pool("easy", "small").instance(10000), "weighted_tardiness", 0, ("easy", "small"))
    assert schedule.finished
    assert (player.agent._futures.tier, player.agent._futures.size) == ("easy", "small")


def test_paired_statistics_need_pairs_and_resamples() -> None:
    """paired_margin([1, 2], [1]) broadcast into a margin over no pairs; resamples=0 failed with an IndexError."""
    with pytest.raises(ValueError, match=r"one value per instance each, paired: got shapes \(2,\) and \(1,\)"):
        paired_margin([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=r"one value per instance each, paired: got shapes \(1, 2\) and \(1, 2\)"):
        paired_margin([[1.0, 2.0]], [[1.0, 1.0]])  # a table, not one value per instance
    with pytest.raises(ValueError, match="hold no instance"):  # NaNs with NumPy's empty-slice warnings
        paired_margin([], [])
    for bad, error in ((0, ValueError), (-5, ValueError), (2.5, TypeError)):
        with pytest.raises(error, match=f"resamples must be an integer >= 1, got {bad}"):
            bootstrap_ci([1.0, 2.0, 3.0], resamples=bad)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
        bootstrap_ci([1.0, 2.0], seed=-1)
    assert paired_margin([1.0, 2.0], [2.0, 2.0])["wins"] == 1
    assert paired_margin([1.0, 0.0], [0.0, 0.0])["relative"] is None  # no margin relative to a reference of 0


def test_the_store_names_a_path_of_the_wrong_type() -> None:
    """ResultStore(None) failed in pathlib: "expected str, bytes or os.PathLike object, not NoneType"."""
    with pytest.raises(TypeError, match=r"^path must be a path \(str or os.PathLike\), got NoneType: None$"):
        ResultStore(None)


def test_the_store_refuses_a_row_it_would_skip_on_reading(tmp_path: Path) -> None:
    """A row without agent_hash failed with a KeyError; one whose objective value was a string was written and then
    skipped by every read (computed again on every run)."""
    store = ResultStore(tmp_path / "store.jsonl")
    with pytest.raises(ValueError, match="field 'agent_hash' must be a string, got '<missing>'"):
        store.append({k: v for k, v in _row(0).items() if k != "agent_hash"})
    with pytest.raises(ValueError, match=r"^field 'objective_value' of an ok row must be a finite number, got nan$"):
        store.append(_row(0, objective_value=math.nan))  # named, not JSON's "Out of range float values"
    with pytest.raises(ValueError, match="field 'objective_value' of an ok row must be a finite number, got '1'"):
        store.append(_row(0, objective_value="1"))
    with pytest.raises(TypeError, match="a row is a mapping of fields, got list"):
        store.append([1])
    assert not store.path.exists() or store.rows() == []


def test_a_row_is_stored_as_it_is_read_back(tmp_path: Path) -> None:
    """NumPy scalars (a user's own metrics) were written as their text, "3" and "1.5": append said it stored the row,
    and every read then skipped it (computed again on every run); a value JSON holds only as text is refused."""
    store = ResultStore(tmp_path / "store.jsonl")
    assert store.append(_row(3, seed=np.int64(3), objective_value=np.float32(1.5), ssi=np.float64(7.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [row] = ResultStore(store.path).rows()
    assert (row["seed"], row["objective_value"], row["ssi"]) == (3, 1.5, 7.0)
    assert not store.append(_row(3))
    with pytest.raises(ValueError, match=r"field 'objective_value' of an ok row must be a finite number, got '3/2' "
                                         r"\(as stored: JSON holds that value only as its text\)"):
        store.append(_row(4, objective_value=Fraction(3, 2)))
    assert store.path.read_text().count("\n") == 1
