"""``python -m scripts.tier_acceptance``: the documented acceptance table, counted from the pools' own attempts."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from dynasched_gym.generation import TIER_BANDS, ssi, tier_pool
from dynasched_gym.generation.tiers import Attempt
from scripts import tier_acceptance
from scripts.journal import JournalWarning


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]


def test_rows_replay_the_attempts_of_the_pool_members(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each row's accepted score is the SSI of the pool's member for that seed, after attempts rejected for a
    score outside the tier or no convergence; the table's rate is accepted seeds / attempts."""
    out = tmp_path / "ta"
    tier_acceptance.main(["--sizes", "small", "--tiers", "medium", "--seeds", "4", "--workers", "2",
                          "--out", str(out)])
    rows = sorted(_rows(out), key=lambda r: r["seed"])
    assert [r["seed"] for r in rows] == [0, 1, 2, 3]
    pool = tier_pool("medium", "small", cache_dir=tmp_path / "cache")
    low, high = TIER_BANDS["medium"]
    for row in rows:
        assert row["accepted_score"] == ssi(pool.instance(row["seed"])).score
        assert row["attempts"] == 1 + row["not_converged"] + len(row["rejected_scores"])
        assert all(not low <= s < high for s in row["rejected_scores"])
    assert sum(r["attempts"] for r in rows) > 4  # a rejection is counted (seed 1 of this pool takes 2 attempts)
    assert rows == [tier_acceptance.count_seed(tier_acceptance.key_inputs("medium", "small"), s) for s in range(4)]
    summary = json.loads((out / "summary.json").read_text())["small"]["medium"]
    assert summary["rate"] == 4 / sum(r["attempts"] for r in rows)
    assert f"| small | {summary['rate']:.2f} ({summary['median_score']:.1f}) |" in (out / "table.md").read_text()
    assert (out / "table.md").read_text() in capsys.readouterr().out


def test_a_row_sorts_the_rejected_attempts_by_cause_up_to_the_first_accepted_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A score of a calibration that did not converge is no rejection for another tier; later attempts (the lazy
    replay would go on past the accepted one) are not counted."""
    made = [Attempt(0, None, False, 30.0, "medium", False), Attempt(1, None, True, 80.0, "hard", False),
            Attempt(2, None, False, 10.0, "easy", False), Attempt(3, None, True, 40.0, "medium", True),
            Attempt(4, None, True, 45.0, "medium", True)]
    monkeypatch.setattr(tier_acceptance, "attempts", lambda inputs, seed: iter(made))
    row = tier_acceptance.count_seed(tier_acceptance.key_inputs("medium", "small"), 7)
    assert (row["seed"], row["attempts"], row["accepted_score"]) == (7, 4, 40.0)
    assert (row["not_converged"], row["rejected_scores"]) == (2, [80.0])
    made[3:] = []  # none accepted: every attempt is a rejection
    row = tier_acceptance.count_seed(tier_acceptance.key_inputs("medium", "small"), 7)
    assert (row["attempts"], row["accepted_score"], row["not_converged"]) == (3, None, 2)


def _row(attempts: int, accepted: float | None, not_converged: int, rejected: list[float]) -> dict[str, Any]:
    return {"attempts": attempts, "accepted_score": accepted, "not_converged": not_converged,
            "rejected_scores": rejected}


def test_the_summary_and_table_count_seeds_attempts_and_rejections_by_cause() -> None:
    """The rate is accepted seeds (not seeds) / attempts, the median is of the accepted scores alone, and a tier
    with none accepted has no median."""
    rows = [_row(3, 20.0, 0, [70.0, 90.0]), _row(3, None, 2, [5.0]), _row(1, 30.0, 0, []), _row(3, 70.0, 2, [])]
    summary = tier_acceptance.summarise(rows)
    assert summary == {"seeds": 4, "accepted": 3, "attempts": 10, "rate": 0.3, "median_score": 30.0,
                       "rejected_other_tier": 3, "rejected_not_converged": 4}
    text = tier_acceptance.table({"small": {"easy": summary, "hard": tier_acceptance.summarise(rows[1:2])},
                                  "large": {"easy": summary}})
    assert text == ("Acceptance rate (accepted seeds / attempts) and median SSI score of accepted instances:\n\n"
                    "| size | easy | hard |\n|---|---|---|\n| small | 0.30 (30.0) | 0.00 (–) |\n"
                    "| large | 0.30 (30.0) | – |\n"
                    "\nRejected attempts: SSI score in another tier / calibration not converged:\n\n"
                    "| size | easy | hard |\n|---|---|---|\n| small | 3 / 4 | 1 / 2 |\n| large | 3 / 4 | – |\n")


class _Pool:
    """A pool whose first two tasks have finished when submitted and the others wait for the test."""

    def __init__(self, workers: int) -> None:
        self.futures: list[Future[Any]] = []

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Any, inputs: dict[str, Any], seed: int) -> Future[Any]:
        self.futures.append(Future())
        if seed < 2:
            self.futures[-1].set_result(fn(inputs, seed))
        return self.futures[-1]


def test_an_interrupt_hands_over_each_finished_row_once_then_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Ctrl-C the rows finished but not yet handed over come, each once, and none of a failed task; the
    workers are stopped."""
    pools: list[_Pool] = []
    stopped: list[_Pool] = []
    monkeypatch.setattr(tier_acceptance, "count_seed", _fake_row)
    monkeypatch.setattr(tier_acceptance, "WorkerPool", lambda workers: pools.append(_Pool(workers)) or pools[-1])
    monkeypatch.setattr(tier_acceptance, "stop_workers", stopped.append)
    inputs = tier_acceptance.key_inputs("easy", "small")
    rows = tier_acceptance._counted([(inputs, s) for s in range(4)], 2)
    handed = [next(rows)["seed"]]
    pools[0].futures[2].set_exception(ValueError("seed 2 failed"))  # seed 3 is still running
    try:
        handed.append(rows.throw(KeyboardInterrupt())["seed"])
    except KeyboardInterrupt:
        pytest.fail("the finished row was lost")
    with pytest.raises(KeyboardInterrupt):
        next(rows)
    assert sorted(handed) == [0, 1] and stopped == pools


def _fake_row(inputs: dict[str, Any], seed: int) -> dict[str, Any]:
    return {"key": tier_acceptance.pool_key(inputs), "size": inputs["size"], "tier": inputs["tier"], "seed": seed,
            "attempts": 2, "accepted_score": 10.0 + seed, "not_converged": 1, "rejected_scores": []}


def test_an_interrupted_run_resumes_and_rows_of_other_pools_are_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    counted: list[int] = []
    stop_at: list[int] = [2]

    def fake(inputs: dict[str, Any], seed: int) -> dict[str, Any]:
        if seed in stop_at:
            raise KeyboardInterrupt
        counted.append(seed)
        return _fake_row(inputs, seed)

    monkeypatch.setattr(tier_acceptance, "count_seed", fake)
    out = tmp_path / "ta"
    argv = ["--sizes", "small", "--tiers", "easy", "--seeds", "3", "--workers", "1", "--out", str(out)]
    with pytest.raises(KeyboardInterrupt):
        tier_acceptance.main(argv)
    assert [r["seed"] for r in _rows(out)] == [0, 1]  # kept as they finished
    stop_at.clear()
    with open(out / "rows.jsonl", "a") as fh:
        fh.write(json.dumps({**_fake_row(tier_acceptance.key_inputs("easy", "small"), 2), "key": "an older prior"})
                 + "\n")
        fh.write(json.dumps({**_fake_row(tier_acceptance.key_inputs("easy", "small"), 2), "tier": "hard"}) + "\n")
        fh.write('{"key": "abc", "si')  # a writer killed mid-row
    capsys.readouterr()
    with pytest.warns(JournalWarning, match="partial last line"):
        tier_acceptance.main(argv)
    assert counted == [0, 1, 2]
    err = capsys.readouterr().err
    assert "ignoring 2 row(s) of other pools" in err and "3 pool members: 2 reused" in err
    assert "2/3" in err and "3/3" in err  # the progress bar counts the rows reused
    summary = json.loads((out / "summary.json").read_text())["small"]["easy"]
    assert summary == {"seeds": 3, "accepted": 3, "attempts": 6, "rate": 0.5, "median_score": 11.0,
                       "rejected_other_tier": 0, "rejected_not_converged": 3}
    fewer = list(argv)
    fewer[fewer.index("--seeds") + 1] = "2"
    tier_acceptance.main(fewer)
    summary = json.loads((out / "summary.json").read_text())["small"]["easy"]
    assert counted == [0, 1, 2] and summary["seeds"] == 2  # seeds 0..1 alone, the stored seed 2 not among them
    counted.clear()
    tier_acceptance.main(["--sizes", "large", "--tiers", "easy", "--workers", "1", "--out", str(out)])
    assert counted == list(range(tier_acceptance.DEFAULT_SEEDS["large"]))  # the documented count per size


def test_a_seed_count_of_max_seeds_is_let_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tier_acceptance, "MAX_SEEDS", 2)
    monkeypatch.setattr(tier_acceptance, "count_seed", _fake_row)
    tier_acceptance.main(["--sizes", "small", "--tiers", "easy", "--seeds", "2", "--workers", "1", "--out",
                          str(tmp_path)])
    assert [r["seed"] for r in _rows(tmp_path)] == [0, 1]


def test_a_journal_whose_folder_is_removed_mid_run_is_an_error_naming_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows went on into the open handle of a removed rows.jsonl, lost without a word."""
    import shutil

    out = tmp_path / "ta"

    def fake(inputs: dict[str, Any], seed: int) -> dict[str, Any]:
        if seed == 1:
            shutil.rmtree(out)
        return _fake_row(inputs, seed)

    monkeypatch.setattr(tier_acceptance, "count_seed", fake)
    with pytest.raises(FileNotFoundError) as caught:
        tier_acceptance.main(["--sizes", "small", "--tiers", "easy", "--seeds", "3", "--workers", "1", "--out",
                              str(out)])
    assert caught.value.filename == str(out / "rows.jsonl")


@pytest.mark.parametrize(("argv", "message"), [
    (["--tiers", "easy,nope"], "argument --tiers: expected comma-separated names out of easy, medium, hard, extreme"),
    (["--sizes", ""], "argument --sizes: expected comma-separated names out of"),
    # a repeated or empty name was dropped without a word
    (["--tiers", "easy,hard,easy"], "argument --tiers: 'easy' is named twice in 'easy,hard,easy': name each once"),
    (["--sizes", "small, small"], "argument --sizes: 'small' is named twice in 'small, small': name each once"),
    (["--tiers", "easy,,hard"], "got 'easy,,hard' (an empty name)"),
    (["--sizes", "small,"], "got 'small,' (an empty name)"),
    (["--tiers", "easy,nope"], "got 'easy,nope' ('nope' is none of them)"),
    (["--seeds", "0"], "argument --seeds: must be an integer >= 1, got '0'"),
    (["--workers", "two"], "argument --workers: must be an integer >= 1, got 'two'"),
])
def test_bad_arguments_are_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as caught:
        tier_acceptance.main([*argv, "--out", str(tmp_path / "ta")])
    assert caught.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "ta" / "rows.jsonl").exists()


def test_a_seed_count_beyond_max_seeds_is_refused_before_any_work(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:  # 10**11 seeds filled the memory listing them
        tier_acceptance.main(["--sizes", "small", "--tiers", "easy", "--seeds", str(10**11), "--out",
                              str(tmp_path / "ta")])
    assert caught.value.code == 2 and f"--seeds must be in 1..1000000 (each is a pool member to calibrate), got " \
        f"{10**11}" in capsys.readouterr().err
    assert not (tmp_path / "ta").exists()
