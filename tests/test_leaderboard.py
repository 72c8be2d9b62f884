"""scripts/leaderboard.py: evaluation of missing rows, tables, CSV, plots, labels of clairvoyant references."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_evaluate import RULES, _board_rows, _row, config

from dynasched_gym.results import aggregate, difficulty_trend
from scripts import leaderboard
from scripts.overrides import SettingError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pools")


def test_leaderboard_evaluates_missing_rows_writes_files_and_reuses_rows(
        pools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(pools))
    oracle = importlib.util.find_spec("ortools") is not None  # the CP-SAT reference too, when it can run
    cfg = config("leaderboard", "tiers=[easy,hard]", "seeds.count=3", "ppo=null", "workers=1", "progress=false",
                 f"store={tmp_path / 'store.jsonl'}", f"out={tmp_path / 'board'}",
                 *(["agent=[rules,lookahead,lookahead_oracle,cpsat_oracle]", "agent.cpsat_oracle.kwargs.time_limit=0.2"]
                   if oracle else ["agent=[rules,lookahead,lookahead_oracle]"]))
    board, failed, text = leaderboard.run(cfg)
    references = 2 if oracle else 1
    assert failed == [] and len(board) == 2 * (RULES + 1 + references)
    assert f"{2 * 3 * (RULES + 1 + references)} run now" in capsys.readouterr().out
    out = tmp_path / "board"
    assert sorted(p.name for p in out.iterdir()) == ["bars-weighted_tardiness-small.png", "leaderboard.csv",
                                                      "leaderboard.md", "ssi-weighted_tardiness-small.png"]
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "leaderboard.md").read_text() == text
    # the page shows its own plots (a plot of an earlier board left in out is not among them)
    assert re.findall(r"!\[[^]]*\]\(([^)]+)\)", text) == ["bars-weighted_tardiness-small.png",
                                                          "ssi-weighted_tardiness-small.png"]
    assert "### easy (3 instances" in text and "### hard (3 instances" in text
    assert "| ref | lookahead-oracle *(clairvoyant reference)* |" in text
    assert "(best rule)" in text and "| 1 |" in text
    with open(out / "leaderboard.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(board) and {r["tier"] for r in rows} == {"easy", "hard"}
    assert {r["agent"] for r in rows if r["clairvoyant"] == "True"} >= {"lookahead-oracle"}
    assert all(r["rank"] == "" for r in rows if r["clairvoyant"] == "True")
    again, _, _ = leaderboard.run(cfg)
    assert "0 run now" in capsys.readouterr().out
    assert [e["mean"] for e in again] == [e["mean"] for e in board]


def test_markdown_lists_failures_skips_and_the_difficulty_check() -> None:
    rows = _board_rows()
    board = aggregate(rows, resamples=200)
    text = leaderboard.markdown(board, {"makespan": "makespan"}, [r for r in rows if r["status"] != "ok"],
                                ["ppo on easy/small: no checkpoint"], resamples=200)
    assert "bootstrap 95 % CI (200 resamples)" in text and "10,000" not in text  # the count aggregate used
    assert "easy 0.5 < hard 1: **strictly increasing**" in text
    one_tier = aggregate([r for r in rows if r["tier"] == "easy"], resamples=200)
    assert "easy 0.5: n/a (one tier)" in leaderboard.markdown(one_tier, {}, [], [], resamples=200)  # was NOT
    swapped = aggregate([{**r, "tier": {"easy": "hard", "hard": "easy"}[r["tier"]]} for r in rows], resamples=200)
    assert "easy 1 >= hard 0.5: **NOT strictly increasing**" in leaderboard.markdown(swapped, {}, [], [], 200)
    assert "**1 FAILED EPISODE(S)**" in text and "FAILED [invalid] llm on easy/small seed 2" in text
    assert "Skipped: ppo on easy/small: no checkpoint." in text
    assert "| ref | oracle *(clairvoyant reference)* |" in text
    assert "| — | llm |" in text  # failed episodes: not ranked, and not a reference
    assert "### easy (3 instances" in text and "### hard (3 instances" in text


def test_a_tier_where_every_episode_failed_says_it_has_no_ssi_score() -> None:
    """It read "mean SSI nan", with NumPy's RuntimeWarning (mean of an empty slice)."""
    import warnings

    rows = [{**r, "status": "error", "objective_value": None, "normalised_weighted_tardiness": None}
            if r["tier"] == "hard" else r for r in _board_rows()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = leaderboard.markdown(aggregate(rows, resamples=200), {}, [], [], resamples=200)
    assert "### hard (3 instances, no SSI score (no episode ended ok))" in text
    assert "### easy (3 instances, mean SSI 10.0)" in text


def test_a_board_of_stored_rows_only_reads_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """With run_missing=false nothing is written to the store, so a read-only copy (a published one) must do: the
    store's folder had to be writable and a lock file was made beside it. The failed rows end the script with 1."""
    store = tmp_path / "published" / "store.jsonl"
    store.parent.mkdir()
    rows = _board_rows()
    rows.append({**rows[0], "agent": "broken", "agent_hash": "broken", "status": "error", "error": "boom",
                 "objective_value": None, "normalised_weighted_tardiness": None})  # an error fails the board too
    store.write_text("".join(json.dumps(row) + "\n" for row in rows))
    monkeypatch.setattr("dynasched_gym.instance.os.access",  # only the board's folder may be written
                        lambda path, mode: not str(path).startswith(str(store.parent)))
    overrides = ["run_missing=false", "all_rows=true", "tiers=[easy,hard]", "seeds.count=3", "ppo=null",
                 "progress=false", f"store={store}", f"out={tmp_path / 'board'}"]
    cfg = config("leaderboard", *overrides)
    assert leaderboard.check_settings(cfg) == tmp_path / "board"  # a sweep's check of a job: the store is only read
    _, failed, text = leaderboard.run(cfg)
    assert [r["status"] for r in failed] == ["invalid", "error"]
    assert "### easy (3 instances" in text and (tmp_path / "board" / "leaderboard.md").is_file()
    assert sorted(p.name for p in store.parent.iterdir()) == ["store.jsonl"]  # no lock file
    monkeypatch.setattr(sys, "argv", ["leaderboard", *overrides, f"hydra.run.dir={tmp_path / 'run'}"])
    with pytest.raises(SystemExit) as exited:  # the script: the board, then status 1 for the failed rows
        leaderboard.main()
    assert exited.value.code == 1 and "# Leaderboard" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_prints_the_board(pools: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scripts.leaderboard", "tiers=[medium]", "seeds.count=2", "agent=[rules,random]",
         "ppo=null", "workers=1", "progress=false", f"store={tmp_path / 'store.jsonl'}", f"out={tmp_path / 'out'}",
         f"hydra.run.dir={tmp_path / 'hydra'}"],
        cwd=REPO, env={**os.environ, "DYNASCHED_CACHE": str(pools)}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "# Leaderboard" in result.stdout and "### medium (2 instances" in result.stdout
    assert (tmp_path / "out" / "leaderboard.md").is_file()


def test_each_job_of_a_sweep_writes_its_own_board(pools: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job of ``-m objective=makespan,weighted_tardiness`` wrote into the one ``out``: the last job's
    leaderboard.md and .csv were all that was left (from different jobs, under a parallel launcher)."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(pools))
    out = tmp_path / "boards"
    monkeypatch.setattr(sys, "argv", ["leaderboard", "-m", "objective=makespan,weighted_tardiness", "tiers=[easy]",
                                      "seeds.count=2", "agent=[random]", "ppo=null", "workers=1", "progress=false",
                                      f"store={tmp_path / 'store.jsonl'}", f"out={out}",
                                      f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    leaderboard.main()
    assert sorted(p.name for p in out.iterdir()) == ["0", "1"]  # Hydra's job numbers, as the sweep's folders
    for job, objective in enumerate(("makespan", "weighted_tardiness")):
        assert f"objective={objective}" in (tmp_path / "sweep" / str(job) / ".hydra" / "overrides.yaml").read_text()
        page = (out / str(job) / "leaderboard.md").read_text()
        assert f"bars-{objective}-small.png" in page and (out / str(job) / "leaderboard.csv").is_file()


@pytest.mark.parametrize(("override", "error", "message"), [
    ("seeds.count=1.5", TypeError, "seeds.count must be an integer"),  # int() made it 1
    ("seeds.start=abc", TypeError, "seeds.start must be an integer"),
    ("workers=0", ValueError, "workers must be an integer >= 1, got 0"),
    ("validate=maybe", TypeError, "validate must be true or false, got 'maybe'"),  # bool('maybe') is true
    ("progress=abc", TypeError, "progress must be true or false"),
    ("run_missing=abc", TypeError, "run_missing must be true or false"),
    ("resamples=0", ValueError, "resamples must be an integer >= 1, got 0"),  # an IndexError after the evaluation
    ("resamples=2.7", TypeError, "resamples must be an integer"),
])
def test_bad_settings_are_refused_before_any_episode_naming_the_key(tmp_path: Path, override: str,
                                                                      error: type, message: str) -> None:
    store = tmp_path / "store.jsonl"
    cfg = config("leaderboard", "tiers=[easy]", "seeds.count=1", "agent=[rules]", "ppo=null", "workers=1",
                 "progress=false", f"store={store}", f"out={tmp_path / 'board'}", override)
    with pytest.raises(SettingError, match=re.escape(message)) as refused:
        leaderboard.run(cfg)
    assert isinstance(refused.value.__cause__, error)  # the check's own error, kept as the cause
    assert not store.exists() and not (tmp_path / "board").exists()


def test_an_output_folder_that_is_a_file_is_refused_before_any_episode(tmp_path: Path) -> None:
    (tmp_path / "board").write_text("a file")
    store = tmp_path / "store.jsonl"
    cfg = config("leaderboard", "tiers=[easy]", "seeds.count=1", "agent=[rules]", "ppo=null", "workers=1",
                 "progress=false", f"store={store}", f"out={tmp_path / 'board'}")
    with pytest.raises(SettingError, match="out must be a folder"):
        leaderboard.run(cfg)
    assert not store.exists()


def test_without_a_usable_matplotlib_the_board_stops_before_any_episode(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # the figures are drawn last: a missing matplotlib (or an unknown MPLBACKEND) surfaced after every episode
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # as if not installed
    store = tmp_path / "store.jsonl"
    cfg = config("leaderboard", "tiers=[easy]", "seeds.count=1", "agent=[rules]", "ppo=null", "workers=1",
                 "progress=false", f"store={store}", f"out={tmp_path / 'board'}")
    with pytest.raises(SettingError, match=re.escape("pip install 'dynasched-gym[viz]'")):
        leaderboard.run(cfg)
    assert not store.exists() and not (tmp_path / "board").exists()


def test_a_sample_without_spread_has_its_mean_as_its_interval(tmp_path: Path) -> None:
    """Six equal values 0.1: the resampled means (NumPy sums) were 0.09999999999999999 while the mean (an exact sum)
    was 0.10000000000000002, so the 95 % CI excluded the mean and the bar plot refused the negative error bar
    (ValueError: 'xerr' must not contain negative values), failing the board after every episode."""
    rule = next(r for r in _board_rows() if r["agent"] == "rule:A")
    rows = [{**rule, "seed": seed, "objective_value": 0.2, "normalised_weighted_tardiness": 0.1} for seed in range(6)]
    rows += [{**r, "agent": "oracle", "agent_hash": "oracle", "clairvoyant": True, "objective_value": 0.1}
             for r in rows]  # a regret of 0.1 on every instance
    board = aggregate(rows, resamples=200)
    assert len(board) == 2 and board[0]["episodes"] == 6
    for e in board:
        assert e["ci_low"] == e["mean"] == e["ci_high"]
        assert e["nwt_ci_low"] == e["nwt"] == e["nwt_ci_high"]
        assert e["regret_ci_low"] == e["regret"] == e["regret_ci_high"]
    leaderboard.write(board, rows, [], [], tmp_path, 200)
    assert (tmp_path / "bars-makespan-small.png").is_file()


def test_the_bars_list_the_board_top_down_and_hatch_the_clairvoyant_reference(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each panel reads as its table: the first entry on top (barh draws y = 0 at the bottom), the clairvoyant
    reference hatched and labelled."""
    figures = []
    monkeypatch.setattr(leaderboard, "save_figure", lambda fig, path: figures.append(fig) or path)
    board = aggregate(_board_rows(), resamples=50)
    leaderboard.plot_bars(board, "makespan", "small", tmp_path / "bars.png")
    ax = figures[0].axes[0]
    entries = [e for e in board if e["tier"] == "easy" and e["episodes"]]
    names = [e["agent"] + (" (clairvoyant)" if e["clairvoyant"] else "") for e in entries]
    assert [label.get_text() for label in ax.get_yticklabels()] == names[::-1]
    hatches = {label.get_text(): bar.get_hatch() for label, bar in zip(ax.get_yticklabels(), ax.patches)}
    assert hatches == {name: "//" if name.endswith("(clairvoyant)") else None for name in names}
    assert "oracle (clairvoyant)" in hatches


def test_the_ssi_plot_names_agents_as_the_board_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows were grouped by their stored name, the board's entries by configuration: two configurations of rule:A
    (rule:A@...) left the best rule out of the plot, two of lookahead were one series, and one configuration stored
    under two names (all_rows=true) was two."""
    from matplotlib.axes import Axes

    base = next(r for r in _board_rows() if r["agent"] == "rule:A" and r["tier"] == "easy")
    rows = [{**base, "agent": agent, "agent_hash": agent_hash, "seed": seed, "objective_value": value + seed}
            for agent, agent_hash, value in (("rule:A", "a1", 1.0), ("rule:A", "a2", 5.0), ("lookahead", "l1", 2.0),
                                             ("lookahead", "l2", 3.0))
            for seed in range(3)]
    rows += [{**base, "agent": "rnd" if seed else "random", "agent_hash": "r", "seed": seed} for seed in range(3)]
    board = aggregate(rows, resamples=50)
    assert {e["agent"] for e in board} == {"rule:A@a1", "rule:A@a2", "lookahead@l1", "lookahead@l2", "random"}
    series = []
    scatter = Axes.scatter
    monkeypatch.setattr(Axes, "scatter", lambda ax, x, y, **kw: series.append(kw["label"]) or scatter(ax, x, y, **kw))
    leaderboard.plot_ssi(rows, board, "makespan", "small", tmp_path / "ssi.png")
    assert sorted(series) == ["best rule of the tier (3)", "lookahead@l1 (3)", "lookahead@l2 (3)", "random (3)"]


def test_the_difficulty_check_is_not_passed_over_a_tier_without_a_best_rule() -> None:
    """Every rule failed an episode on medium, so medium has no best rule: the check compared easy with hard only and
    called the tiers strictly increasing."""
    rows = _board_rows()
    rows += [{**r, "tier": "medium", **({"status": "invalid", "objective_value": None,
                                          "normalised_weighted_tardiness": None}
                                         if r["agent"].startswith("rule:") and r["seed"] == 0 else {})}
             for r in rows if r["tier"] == "easy"]
    board = aggregate(rows, resamples=50)
    assert not any(e["best_rule"] for e in board if e["tier"] == "medium")
    trend = difficulty_trend(board)[("makespan", "small")]
    assert trend["increasing"] is None and trend["missing"] == ["medium"]
    text = leaderboard.markdown(board, {}, [], [], resamples=50)
    assert ("easy 0.5 < hard 1: n/a (no best rule on medium: no rule has a valid schedule on every instance there)"
            in text)


def test_a_tier_heading_counts_every_instance_of_its_rows() -> None:
    """The heading took the most instances any one agent had: two agents on disjoint seeds (all_rows=true over runs
    of other seed ranges) made 4 instances '2 instances'."""
    base = next(r for r in _board_rows() if r["agent"] == "rule:A" and r["tier"] == "easy")
    rows = [{**base, "agent": agent, "agent_hash": agent, "seed": seed} for agent, seeds in (("rule:A", (0, 1)),
                                                                                              ("rule:B", (2, 3)))
            for seed in seeds]
    text = leaderboard.markdown(aggregate(rows, resamples=50), {}, [], [], resamples=50)
    assert "### easy (4 instances, mean SSI 10.0)" in text


def test_an_ok_row_without_an_ssi_score_is_left_out_of_the_ssi_plot_only(tmp_path: Path) -> None:
    """Rows of one's own (or older ones) without ``ssi``: the board took them (its mean SSI skips them) and the plot
    then failed with a KeyError: 'ssi' after the tables were written."""
    rows = [{k: v for k, v in r.items() if k != "ssi" or r["agent"] != "lookahead"} for r in _board_rows()]
    board = aggregate(rows, resamples=50)
    leaderboard.write(board, rows, [], [], tmp_path, resamples=50)
    assert (tmp_path / "ssi-makespan-small.png").is_file()


def test_the_tables_show_each_statistic_in_its_column() -> None:
    rows = _board_rows()
    text = leaderboard.markdown(aggregate(rows, resamples=200), {}, [], [], resamples=200)
    # rank | agent | mean | CI | vs best rule | vs clairvoyant | regret [CI] | nwt | episodes | failed | ms / episode
    assert "| 1 | lookahead | 4 | [3, 5] | 0.8 | 2 | 2 [1, 3] | 0.4 | 3 | 0 | 10 |" in text
    assert "| — | llm | 0.5 | [0.5, 0.5] | 0.1 | 0.333 | -1 [-1.5, -0.5] | 0.05 | 2 | 1 | 10 |" in text
    assert ("| agent | easy | hard |\n|---|---:|---:|\n| lookahead | 0.4 | 0.8 |\n| rule:A | 0.5 | 1 |\n"
            "| rule:B | 0.8 | 1.6 |\n| llm | 0.05 | — |\n| oracle | 0.2 | 0.4 |\n") in text  # nwt, "—": not played
    assert "Agents whose own normalised weighted tardiness does not increase with the tier: none." in text
    fair = [r for r in rows if r["agent"] != "oracle"]  # no reference: no ratio to it, no regret
    text = leaderboard.markdown(aggregate(fair, resamples=200), {}, [], [], resamples=200)
    assert "| 1 | lookahead | 4 | [3, 5] | 0.8 | — | — | 0.4 | 3 | 0 | 10 |" in text


def test_an_agent_of_a_later_tier_only_has_its_row_in_the_cross_tier_table() -> None:
    rows = _board_rows()
    rows += [{**r, "agent": "newcomer", "agent_hash": "newcomer", "normalised_weighted_tardiness": 0.3}
             for r in rows if r["agent"] == "rule:B" and r["tier"] == "hard"]
    text = leaderboard.markdown(aggregate(rows, resamples=50), {}, [], [], resamples=50)
    assert "| newcomer | — | 0.3 |" in text


def test_equal_difficulty_on_two_tiers_reads_as_not_increasing() -> None:
    rows = [{**r, "normalised_weighted_tardiness": 0.5} for r in _board_rows() if r["agent"] == "rule:A"]
    text = leaderboard.markdown(aggregate(rows, resamples=50), {}, [], [], resamples=50)
    assert "easy 0.5 >= hard 0.5: **NOT strictly increasing**" in text
    assert "does not increase with the tier: rule:A." in text


def test_every_failed_episode_is_counted_and_listed() -> None:
    rows = _board_rows()
    failed = [r for r in rows if r["status"] != "ok"]
    failed.append({**failed[0], "agent": "lookahead", "seed": 7, "status": "error", "error": "boom"})
    text = leaderboard.markdown(aggregate(rows, resamples=50), {}, failed, [], resamples=50)
    assert "**2 FAILED EPISODE(S)**" in text
    assert "- FAILED [invalid] llm on easy/small seed 2 (makespan):" in text
    assert "- FAILED [error] lookahead on easy/small seed 7 (makespan): boom\n" in text


def test_the_written_board_shows_only_what_was_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The heading names the objective's metric from the rows; the CSV leaves a missing statistic empty (not "nan");
    the bars leave out an agent without a valid episode, the SSI plot every failed row, and it marks the clairvoyant
    references."""
    from matplotlib.axes import Axes

    rows = [{**r, "objective": "weighted_tardiness", "objective_metric": "total_weighted_tardiness"}
            for r in _board_rows()]
    rows += [{**r, "agent": "broken", "agent_hash": "broken", "status": "error", "objective_value": None,
              "normalised_weighted_tardiness": None} for r in rows if r["agent"] == "rule:B" and r["tier"] == "easy"]
    board = aggregate(rows, resamples=50)
    bars, points = [], []
    barh, scatter = Axes.barh, Axes.scatter
    monkeypatch.setattr(Axes, "barh", lambda ax, y, width, **kw: bars.append(len(y)) or barh(ax, y, width, **kw))
    monkeypatch.setattr(Axes, "scatter", lambda ax, x, y, **kw: points.append(kw["label"]) or scatter(ax, x, y, **kw))
    text = leaderboard.write(board, rows, [r for r in rows if r["status"] != "ok"], [], tmp_path, 50)
    assert "## Objective `weighted_tardiness` (`total_weighted_tardiness`, lower is better)" in text
    assert bars == [5, 4]  # easy: lookahead, rule:A, rule:B, llm, oracle (not broken); hard: no llm
    assert sorted(points) == ["best rule of the tier (6)", "llm (2)", "lookahead (6)", "oracle (clairvoyant) (6)"]
    with open(tmp_path / "leaderboard.csv", newline="") as fh:
        entries = {(r["tier"], r["agent"]): r for r in csv.DictReader(fh)}
    broken = entries[("easy", "broken")]
    assert (broken["mean"], broken["regret"], broken["vs_best_rule"], broken["rank"], broken["failed"]) == \
        ("", "", "", "", "3")
    assert entries[("easy", "rule:A")]["mean"] == "5.0"


def test_aggregate_refuses_a_key_given_twice() -> None:
    """Rows concatenated from two stores by hand held one episode twice: its value counted twice in the mean (45
    over "3 episodes" on 2 instances) and once, the last, in vs_best_rule."""
    rows = [_row(0), _row(1), _row(0, objective_value=100.0)]
    with pytest.raises(ValueError, match=r"^rows\[2\]: the key \{'agent_hash': 'h', 'tier': 'easy', 'size': 'small', "
                                         r"'seed': 0, 'objective': 'makespan'\} of rows\[0\] again"):
        aggregate(rows, resamples=10)
    assert [e["episodes"] for e in aggregate(rows[:2], resamples=10)] == [2]
