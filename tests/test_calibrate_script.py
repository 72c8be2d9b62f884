"""``python -m scripts.calibrate``: the four outputs, consistent with each other, written all or nothing."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from dynasched_gym import load_instance
from dynasched_gym.generation import realised_metrics, ssi

REPO = Path(__file__).resolve().parents[1]


def _report_table(report: str) -> dict[str, list[str]]:
    """Rows of the 'Targets vs realised' table: metric -> cells."""
    section = report.split("## Targets vs realised", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows[1:]}


def test_end_to_end_writes_consistent_outputs(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    proc = subprocess.run(
        [sys.executable, "-m", "scripts.calibrate", "size=small", "seed=3", "targets.utilization=0.5",
         "targets.due_date_tightness=3.0", f"out={out}", f"hydra.run.dir={tmp_path / 'hydra'}"],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["convergence.png", "dsbx", "instance.json", "report.md"]
    assert (out / "convergence.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    inst = load_instance(out / "instance.json")
    assert load_instance(out / "dsbx").num_jobs == inst.num_jobs

    report = (out / "report.md").read_text(encoding="utf-8")
    table = _report_table(report)
    metrics = realised_metrics(inst)
    assert set(table) == set(metrics)
    for name, value in metrics.items():
        assert table[name][1] == f"{value:.6g}", name
    assert table["utilization"][0] == "0.5" and table["due_date_tightness"][0] == "3"
    index = ssi(inst)
    assert f"SSI score: **{index.score:.2f}**, tier **{index.tier}**" in report
    converged = re.search(r"converged: \*\*(yes|no)\*\*", report).group(1)
    assert converged == ("yes" if all(row[4] == "yes" for row in table.values() if row[4] != "—") else "no")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary directory left


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    return importlib.import_module("scripts.calibrate")


def _config(out: Path, *overrides: str):
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        return compose("calibrate", overrides=[f"out={out}", *overrides])


def test_failure_leaves_nothing_behind(tmp_path: Path, script, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_plot(*args, **kwargs):
        raise RuntimeError("plot failed")

    monkeypatch.setattr(script, "plot_convergence", broken_plot)
    with pytest.raises(RuntimeError, match="plot failed"):
        script.run(_config(tmp_path / "cal"))
    assert list(tmp_path.iterdir()) == []


def test_refuses_an_existing_output_directory(tmp_path: Path, script) -> None:
    (tmp_path / "cal").mkdir()
    with pytest.raises(FileExistsError, match="cal exists"):
        script.run(_config(tmp_path / "cal"))
    assert list((tmp_path / "cal").iterdir()) == []


def test_unexpressible_instance_is_written_without_rework_and_says_so(tmp_path: Path, script) -> None:
    out = script.run(_config(tmp_path / "cal", "size.scenario.events.rework=1.0"))
    assert any(e.type.name == "REWORK" for e in load_instance(out / "instance.json").events)
    assert not any(e.type.name == "REWORK" for e in load_instance(out / "dsbx").events)
    assert "dropped" in (out / "report.md").read_text(encoding="utf-8")
