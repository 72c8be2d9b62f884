"""``python -m scripts.calibrate``: the four outputs, consistent with each other, written all or nothing."""

from __future__ import annotations

import errno
import importlib
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from dynasched_gym import load_instance
from dynasched_gym.generation import realised_metrics, ssi
from scripts.overrides import SettingError

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
    assert "calibrate sesc: 100%" in proc.stderr  # the progress bar
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


def test_a_key_beside_scenario_in_the_size_preset_is_refused(tmp_path: Path, script) -> None:
    """conf/size/<size>.yaml holds the scenario; a targets block one level too high (size.targets, not
    size.scenario.targets) was ignored, as Scenario.preset now refuses it too."""
    from omegaconf import OmegaConf, open_dict

    cfg = _config(tmp_path / "cal")
    with open_dict(cfg):
        cfg.size.targets = OmegaConf.create({"utilization": 0.5})
    with pytest.raises(script.SettingError, match=r"^size\.targets is no setting: a size preset file holds only "
                                                  r"scenario, got \{'utilization': 0\.5\}"):
        script.run(cfg)
    assert list(tmp_path.iterdir()) == []


#: Python that sends this process a Ctrl-C.
INTERRUPT = "os.kill(os.getpid(), signal.SIGINT)"


def _interrupted_main(tmp_path: Path, patch: str, *overrides: str) -> subprocess.CompletedProcess:
    """``python -m scripts.calibrate`` with ``overrides``, Hydra's run folder ``tmp_path/run``, launched from
    ``tmp_path``, its module ``c`` changed by the Python ``patch`` to interrupt it (status 130 asserted)."""
    code = ("import os, signal, sys, threading, time\nimport scripts.calibrate as c\n" + patch
            + f"sys.argv = ['calibrate', *{list(overrides)}, 'hydra.run.dir={tmp_path / 'run'}']\nc.main()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return proc


@pytest.mark.parametrize(("stage", "method", "settings"), [
    ("calibration", "nsga2", ["+options.budget=100000", "targets.arrival_scv=0.001"]),  # 1-2 minutes: stopped at 1 s
    ("writing", "sesc", []),
])
@pytest.mark.parametrize("default_out", [False, True])
def test_ctrl_c_leaves_no_output_and_says_so(tmp_path: Path, stage: str, method: str, settings: list[str],
                                            default_out: bool) -> None:
    """Ctrl-C during the calibration (its progress bar showing) or while its outputs are written: status 130, no
    traceback, and neither out nor its temporary sibling left behind, nor Hydra's run folder (its settings and an
    empty log), whether out was in it (the default) or not."""
    out = tmp_path / "o" / "cal"
    (tmp_path / "o").mkdir()
    patch = ("real = c.calibrate\n"
             "def calibrate(*args, **kwargs):\n"
             f"    threading.Timer(1.0, lambda: {INTERRUPT}).start()\n"
             "    return real(*args, **kwargs)\n"
             "c.calibrate = calibrate\n" if stage == "calibration" else
             f"c.plot_convergence = lambda *args: ({INTERRUPT}, time.sleep(60))\n")
    proc = _interrupted_main(tmp_path, patch, f"method={method}", *settings, *([] if default_out else [f"out={out}"]))
    assert proc.stderr.endswith("\ninterrupted: nothing was written (a calibration is written whole, at its end)\n")
    assert f"calibrate {method}: " in proc.stderr  # the progress bar
    assert [p.name for p in tmp_path.iterdir()] == ["o"] and list((tmp_path / "o").iterdir()) == []


def test_ctrl_c_right_after_the_outputs_are_in_place_says_they_are(tmp_path: Path) -> None:
    """An interrupt once the outputs were renamed onto out said "nothing was written" over a complete out."""
    out = tmp_path / "cal"
    patch = ("real = os.replace\ndef replace(src, dst):\n    real(src, dst)\n"
             f"    if str(dst) == {str(out)!r}:\n        {INTERRUPT}\n"  # not the atomic writes of the files in out
             "os.replace = replace\n")
    proc = _interrupted_main(tmp_path, patch, "+options.max_steps=0", f"out={out}")
    assert proc.stderr.endswith(f"\ninterrupted: {out} was written in full\n")
    assert sorted(p.name for p in out.iterdir()) == ["convergence.png", "dsbx", "instance.json", "report.md"]
    assert (tmp_path / "run" / ".hydra" / "config.yaml").is_file()  # the settings of the outputs, kept as by a run


@pytest.mark.parametrize("moment", ["made, not yet claimed", "claimed, before the calibration"])
def test_ctrl_c_as_out_is_claimed_leaves_no_out(tmp_path: Path, script, monkeypatch: pytest.MonkeyPatch,
                                                moment: str) -> None:
    """A Ctrl-C between out's mkdir and its claim left an empty out, which every later run refused; one as claim()
    returned left a claimed out, which the next run took over, warning of a run killed outright."""
    def interrupt() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # where the handler would have raised, leaving the rest undone

    if moment == "made, not yet claimed":  # locks_available() is asked once out is made
        locks_available = script.locks_available
        monkeypatch.setattr(script, "locks_available", lambda: (interrupt(), locks_available())[1])
    else:
        claim = script.claim
        monkeypatch.setattr(script, "claim", lambda out: (claim(out), interrupt())[0])
    out = tmp_path / "cal"
    with pytest.raises(KeyboardInterrupt):
        script.run(_config(out, "+options.max_steps=0"))
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    assert script.run(_config(out, "+options.max_steps=0")) == out


def test_refuses_an_existing_output_directory(tmp_path: Path, script) -> None:
    (tmp_path / "cal").mkdir()
    with pytest.raises(SettingError, match="cal exists"):
        script.run(_config(tmp_path / "cal"))
    assert list((tmp_path / "cal").iterdir()) == []


def test_of_two_runs_given_one_out_the_second_stops_before_its_calibration(tmp_path: Path, script,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # both checked that out did not exist, calibrated, and the second to finish failed renaming its temporary directory
    # onto the first one's out: a traceback, "OSError: [Errno 39] Directory not empty: '.../.cal.<hex>.tmp'"
    out, calibrate, second = tmp_path / "cal", script.calibrate, []

    def calibrate_while_another_run_starts(*args, **kwargs):
        monkeypatch.setattr(script, "calibrate", calibrate)  # the second run's own calibration, if it gets there
        with pytest.raises(SettingError, match="cal exists; choose another out="):
            script.run(_config(out, "seed=1"))
        second.append("refused")
        return calibrate(*args, **kwargs)

    monkeypatch.setattr(script, "calibrate", calibrate_while_another_run_starts)
    assert script.run(_config(out)) == out
    assert second == ["refused"]
    assert sorted(p.name for p in out.iterdir()) == ["convergence.png", "dsbx", "instance.json", "report.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["cal"]


def test_the_claim_of_a_run_killed_outright_is_taken_over_and_a_live_run_keeps_its_own(tmp_path: Path, script
                                                                                        ) -> None:
    # a run SIGKILLed during its calibration left out empty, and every later run refused it: "out=... exists"
    out = tmp_path / "cal"
    code = ("import time\nfrom hydra import compose, initialize_config_module\nimport scripts.calibrate as c\n"
            "c.calibrate = lambda *args, **kwargs: time.sleep(600)\n"
            "with initialize_config_module('dynasched_gym.conf', version_base='1.3'):\n"
            f"    cfg = compose('calibrate', overrides=['out={out}'])\nc.run(cfg)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    owner = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        claim = out / ".claim"
        deadline = time.monotonic() + 30
        while not (claim.exists() and claim.read_text(encoding="utf-8")):
            assert owner.poll() is None, owner.communicate()[1]
            assert time.monotonic() < deadline, f"no claim in {out} after 30 s"
            time.sleep(0.05)
        assert json.loads(claim.read_text(encoding="utf-8"))["pid"] == owner.pid
        with pytest.raises(SettingError, match=rf"cal exists; choose another out= \(the run of pid {owner.pid} on "
                                               r"host .* is writing it\)"):
            script.run(_config(out, "seed=1"))  # its owner is running: refused at once
    finally:
        owner.kill()
        owner.communicate(timeout=60)
    assert owner.returncode == -signal.SIGKILL and os.listdir(out) == [".claim"]
    with pytest.warns(RuntimeWarning, match=rf"out={re.escape(str(out))} was claimed by the run of pid {owner.pid} "
                                            r"on host .*, which was killed before it finished: taking it over"):
        assert script.run(_config(out, "seed=1")) == out
    assert sorted(p.name for p in out.iterdir()) == ["convergence.png", "dsbx", "instance.json", "report.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["cal"]


@pytest.mark.parametrize("host, extra", [("another-host", None), (None, "notes.txt")])
def test_a_free_claim_is_refused_from_another_host_or_beside_other_files(tmp_path: Path, script, host: str | None,
                                                                         extra: str | None) -> None:
    out = tmp_path / "cal"
    out.mkdir()
    claim = json.dumps({"pid": 1, "host": host or platform.node(), "started": "2026-12-05T00:00:00+00:00"})
    (out / ".claim").write_text(claim, encoding="utf-8")
    if extra:
        (out / extra).write_text("kept", encoding="utf-8")
    with pytest.raises(SettingError, match="cal exists; choose another out="):
        script.run(_config(out))
    assert sorted(os.listdir(out)) == sorted([".claim", *([extra] if extra else [])])
    assert (out / ".claim").read_text(encoding="utf-8") == claim


def test_without_flock_a_run_claims_out_and_a_later_run_never_takes_a_claim_over(tmp_path: Path, script,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    import fcntl

    def no_flock(*args, **kwargs):  # a file system without flock (Lustre without -o flock)
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    out = tmp_path / "cal"
    assert script.run(_config(out)) == out  # the claim is made unlocked, and removed at the end
    assert sorted(p.name for p in out.iterdir()) == ["convergence.png", "dsbx", "instance.json", "report.md"]
    left = tmp_path / "left"  # the claim of a run killed outright: on this file system nobody can tell
    left.mkdir()
    (left / ".claim").write_text(json.dumps({"pid": 1, "host": platform.node(), "started": "2026-12-05T00:00:00"}),
                                 encoding="utf-8")
    with pytest.raises(SettingError, match=r"left exists; choose another out= \(claimed by the run of pid 1 .*; if "
                                           r"that run is over, remove"):
        script.run(_config(left))
    assert os.listdir(left) == [".claim"]


def test_two_runs_started_at_once_with_the_default_out_write_their_own_folders(tmp_path: Path) -> None:
    # Hydra's run folder was named to the second: both runs calibrated into one out, and the second crashed renaming
    # its temporary folder onto it (OSError: Directory not empty); its settings also overwrote the first one's .hydra/
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    runs = [subprocess.Popen([sys.executable, "-m", "scripts.calibrate", "size=small", f"seed={seed}",
                              "+options.max_steps=0"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for seed in (1, 2)]
    for run in runs:
        _, stderr = run.communicate(timeout=120)
        assert run.returncode == 0, stderr
    reports = tmp_path.glob("outputs/calibrate/*/*/calibration/report.md")
    assert sorted(p.read_text(encoding="utf-8").split("\n", 1)[0] for p in reports) == \
        ["# Calibration report: small-seed1", "# Calibration report: small-seed2"]


@pytest.mark.parametrize("seed", ["1.7", "-1", "true"])
def test_seed_must_be_a_non_negative_integer(tmp_path: Path, script, monkeypatch: pytest.MonkeyPatch, seed: str
                                             ) -> None:
    monkeypatch.setattr(script, "calibrate", lambda *args, **kwargs: pytest.fail("calibrated with a bad seed"))
    cfg = _config(tmp_path / "cal", f"seed={seed}")
    with pytest.raises(SettingError, match=rf"seed must be an integer >= 0, got {cfg.seed!r}"):
        script.run(cfg)  # seed=1.7 was truncated to 1
    assert list(tmp_path.iterdir()) == []


def test_a_bad_scenario_field_names_its_place_below_size_scenario(tmp_path: Path, script) -> None:
    with pytest.raises(SettingError, match=r"^size\.scenario, field 'events': must be a mapping.*\(got None\)"):
        script.run(_config(tmp_path / "cal", "size.scenario.events=null"))  # was "<scenario>, field 'events'"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key", ["options", "targets", "size.scenario"])
@pytest.mark.parametrize(("value", "shown"), [("null", "None"), ("5", "5")])
def test_a_section_that_is_no_mapping_is_refused_naming_it(tmp_path: Path, script, key: str, value: str, shown: str
                                                         ) -> None:
    cfg = _config(tmp_path / "cal", f"{key}={value}")
    with pytest.raises(SettingError, match=rf"^{re.escape(key)} must be a mapping, got {shown}$"):
        script.run(cfg)  # was "Input cfg is not an OmegaConf config object (NoneType)", naming no setting
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("overrides", "message"), [
    (["targets.utilization=2"], r"^targets\.utilization must be a number in \[0\.001, 1\.0\), got 2$"),
    (["targets.arrival_scv=abc"], r"^targets\.arrival_scv must be a number in \[0\.0, 10\.0\], got 'abc'$"),
    # a target that puts a field of the scenario out of bounds: that field, below size.scenario
    (["size.scenario.scale.num_jobs=null", "+size.scenario.scale.horizon=30", "targets.utilization=0.01"],
     r"^size\.scenario, field 'scale\.horizon': plans 0 jobs"),
])
def test_a_bad_target_names_the_setting_it_was_given_as(tmp_path: Path, script, overrides: list[str], message: str
                                                       ) -> None:
    with pytest.raises(SettingError, match=message):  # was "<scenario>, field 'targets.utilization': ..."
        script.run(_config(tmp_path / "cal", *overrides))
    assert list(tmp_path.iterdir()) == []


def test_unexpressible_instance_is_written_without_rework_and_says_so(tmp_path: Path, script) -> None:
    out = script.run(_config(tmp_path / "cal", "size.scenario.events.rework=1.0"))
    assert any(e.type.name == "REWORK" for e in load_instance(out / "instance.json").events)
    assert not any(e.type.name == "REWORK" for e in load_instance(out / "dsbx").events)
    assert "dropped" in (out / "report.md").read_text(encoding="utf-8")


def test_a_calibration_that_did_not_converge_says_so_in_the_report(tmp_path: Path, script) -> None:
    out = script.run(_config(tmp_path / "cal", "+options.max_steps=0", "targets.utilization=0.6"))
    report = (out / "report.md").read_text("utf-8")
    assert "converged: **no** (a target outside its tolerance: see below)" in report  # said "every target within"
    assert "| **no** |" in report.split("## Targets vs realised")[1].split("##")[0]


def test_horizon_scale_from_the_command_line(tmp_path: Path, script) -> None:
    out = script.run(_config(tmp_path / "cal", "size=medium", "size.scenario.scale.num_jobs=null",
                             "+size.scenario.scale.horizon=1000"))
    inst = load_instance(out / "instance.json")
    last = float(inst.job_release.max())
    assert 900 < last < 1100  # the horizon, up to the draw's total work (docs/generation.md)
    assert f"Scale: horizon 1000 requested, the last release at {last:.6g}" in (out / "report.md").read_text("utf-8")


# ------------------------------------------------------------------------------ resumable benchmark scripts
def test_validate_ssi_refuses_a_file_as_its_folder_before_any_work(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from scripts import validate_ssi

    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as caught:  # was FileExistsError's traceback
        validate_ssi.main(["--out", str(tmp_path / "file"), "--instances", "2"])
    assert caught.value.code == 2 and "argument --out: cannot be a folder: File exists" in capsys.readouterr().err


@pytest.mark.parametrize(("script", "args", "message"), [
    ("validate_ssi", ["--instances", str(10**10)], "--instances must be in 2..1000000"),
    ("validate_ssi", ["--instances", "1"], "--instances must be in 2..1000000"),  # no rank correlation of one
    ("calibrate_compare", ["--vectors", str(10**10)], "--vectors x --seeds must be at most 1000000"),
    ("calibrate_compare", ["--vectors", "1000", "--seeds", "1001"], "got 1000 x 1001"),
    ("calibrate_compare", ["--vectors", "101", "--seeds", "9901"], "got 101 x 9901"),  # MAX_SEEDS + 1
    # refused by the first CMA-ES run, with a traceback, after the warm-up and the first SESC run
    ("calibrate_compare", ["--budget", str(10**9)], "--budget must be at most 100000 (evaluations per run), got 10"),
])
def test_benchmark_counts_beyond_max_seeds_are_refused_before_any_work(tmp_path: Path, script: str, args: list[str],
                                                                      message: str, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"scripts.{script}")
    out = tmp_path / ("ssi" if script == "validate_ssi" else "compare.json")

    def work_began(size: str) -> None:  # a count let through would fail here, not run a million calibrations
        raise AssertionError(f"the work began (Scenario.preset({size!r}))")

    monkeypatch.setattr(module, "Scenario", SimpleNamespace(preset=work_began))
    with pytest.raises(SystemExit) as caught:  # the Latin hypercube of 10**10 target vectors filled the memory
        module.main([*args, "--out", str(out)])
    assert caught.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


def test_validate_ssi_resumes_only_rows_of_its_own_design(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Rows are reused only for the target vector they were computed for (the Latin-hypercube targets depend on
    ``--instances``); the progress bar counts the whole design, from the rows reused; a partial last line is skipped
    and cut off."""
    from scripts import validate_ssi
    from scripts.journal import JournalWarning

    computed: list[tuple[int, dict]] = []
    stop_at: list[int] = []

    def fake(index: int, targets: dict) -> dict:
        if index in stop_at:
            raise KeyboardInterrupt  # the run is interrupted here
        computed.append((index, targets))
        return {"index": index, "size": validate_ssi.SIZES[index % 2], "targets": targets, "converged": True,
                "ssi": 10.0 * index, "tier": "easy", "components": {}, "difficulty": float(index)}

    monkeypatch.setattr(validate_ssi, "evaluate", fake)
    monkeypatch.setattr(validate_ssi, "_plot", lambda *args: None)
    out, rows = tmp_path / "ssi", tmp_path / "ssi" / "rows.jsonl"
    stop_at.append(2)
    with pytest.raises(KeyboardInterrupt):
        validate_ssi.main(["--instances", "3", "--out", str(out)])
    stop_at.clear()
    capsys.readouterr()
    validate_ssi.main(["--instances", "3", "--out", str(out)])  # resumes with the one instance left
    assert [i for i, _ in computed] == [0, 1, 2]
    err = capsys.readouterr().err
    assert "3 instances: 2 reused" in err and "2/3" in err and "3/3" in err and "1/1" not in err
    with open(rows, "a") as fh:  # a writer killed mid-row
        fh.write('{"index": 0, "size": "sm')
    computed.clear()
    with pytest.warns(JournalWarning, match="partial last line"):
        validate_ssi.main(["--instances", "2", "--out", str(out)])  # another design: nothing of it is stored
    assert computed == [(i, t) for i, t in enumerate(validate_ssi.target_vectors(2))]
    assert "ignoring 3 row(s) of another design" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["instances"] == 2
    assert len(rows.read_text().splitlines()) == 5 and rows.read_text().endswith("}\n")  # the partial line is gone
    computed.clear()
    validate_ssi.main(["--instances", "3", "--out", str(out)])  # both designs stay resumable
    assert computed == []
    monkeypatch.setattr(validate_ssi, "spearman", lambda a, b: float("nan"))  # e.g. every difficulty equal
    validate_ssi.main(["--instances", "3", "--out", str(out)])
    assert json.loads((out / "summary.json").read_text())["spearman"] is None  # was a bare NaN: not JSON


def test_validate_ssi_names_its_journal_when_its_folder_is_removed_mid_run(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows went on into the open handle of a removed rows.jsonl, lost without a word."""
    import shutil

    from scripts import validate_ssi

    out = tmp_path / "ssi"

    def fake(index: int, targets: dict) -> dict:
        if index == 1:
            shutil.rmtree(out)
        return {"index": index}

    monkeypatch.setattr(validate_ssi, "evaluate", fake)
    with pytest.raises(FileNotFoundError) as caught:
        validate_ssi.main(["--instances", "3", "--out", str(out)])
    assert caught.value.filename == str(out / "rows.jsonl")


def test_validate_ssi_reports_each_size_presets_spearman_and_log_residual(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """docs/ssi.md's per-size figures came from no command. The residual is log(difficulty / stress), the stress
    read back from the score (50: STRESS_HALF), over the instances where the difficulty is > 0."""
    from scripts import validate_ssi

    difficulty = {0: 0.3 * math.exp(-1.0), 1: 0.3, 2: 0.3 * math.exp(-2.0), 3: 0.0, 4: 0.3 * math.exp(-3.0)}
    score = {0: 50.0, 1: 50.0, 2: 60.0, 3: 40.0, 4: 70.0}

    def fake(index: int, targets: dict) -> dict:
        return {"index": index, "size": validate_ssi.SIZES[index % 2], "targets": targets, "converged": True,
                "ssi": score[index], "tier": "medium", "components": {}, "difficulty": difficulty[index]}

    monkeypatch.setattr(validate_ssi, "evaluate", fake)
    monkeypatch.setattr(validate_ssi, "_plot", lambda *args: None)
    validate_ssi.main(["--instances", "5", "--out", str(tmp_path)])
    sizes = json.loads((tmp_path / "summary.json").read_text())["sizes"]
    small_stress = [0.3, 0.3 * 1.5**2, 0.3 * (7 / 3) ** 2]
    small_residual = np.mean(np.log([difficulty[i] / stress for i, stress in zip((0, 2, 4), small_stress)]))
    assert sizes["small"] == {"instances": 3, "spearman": pytest.approx(-1.0),
                              "mean_log_residual": pytest.approx(small_residual), "residual_instances": 3}
    assert sizes["medium"] == {"instances": 2, "spearman": pytest.approx(1.0), "mean_log_residual": pytest.approx(0.0),
                               "residual_instances": 1}  # instance 3's difficulty 0 has no log
    assert f"   small    3    -1.000  {small_residual:.3f} (3)" in capsys.readouterr().out


def _fake_evaluations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make validate_ssi's evaluations instant fakes (SSI 10 x index, difficulty index) and draw no plot; the indices
    evaluated, in order."""
    from scripts import validate_ssi

    computed: list[int] = []

    def fake(index: int, targets: dict) -> dict:
        computed.append(index)
        return {"index": index, "size": validate_ssi.SIZES[index % 2], "targets": targets, "converged": True,
                "ssi": 10.0 * index, "tier": "easy", "components": {}, "difficulty": float(index)}

    monkeypatch.setattr(validate_ssi, "evaluate", fake)
    monkeypatch.setattr(validate_ssi, "_plot", lambda *args: None)
    return computed


def test_validate_ssi_computes_again_a_row_lacking_what_its_statistics_read(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A hand-edited row of this design (an ssi "high", no difficulty) was reused and the statistics failed with a
    KeyError or a TypeError; it is skipped with a warning naming its line, and its instance computed again (also one
    of an unknown tier, or a converged that is no bool)."""
    from scripts import validate_ssi
    from scripts.journal import JournalWarning

    computed = _fake_evaluations(monkeypatch)
    validate_ssi.main(["--instances", "5", "--out", str(tmp_path)])
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    rows[1]["ssi"] = "high"
    del rows[2]["difficulty"]
    rows[3]["tier"] = "harsh"
    rows[4]["converged"] = 1
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    computed.clear()
    with pytest.warns(JournalWarning) as caught:
        validate_ssi.main(["--instances", "5", "--out", str(tmp_path)])
    assert sorted(str(w.message).split("ignoring ")[1][:17] for w in caught) == [f"unreadable line {n}"
                                                                                 for n in range(2, 6)]
    assert computed == [1, 2, 3, 4] and json.loads((tmp_path / "summary.json").read_text())["instances"] == 5


def test_validate_ssi_draws_a_latin_hypercube_over_the_generators_range() -> None:
    """Each target is in its range, and each of the ``count`` equal strata of a range holds exactly one."""
    from scripts import validate_ssi

    vectors = validate_ssi.target_vectors(8)
    for name, (lo, hi) in validate_ssi.RANGES.items():
        strata = sorted(int((v[name] - lo) / (hi - lo) * 8) for v in vectors)
        assert strata == list(range(8)), name


def test_validate_ssi_spearman_averages_the_ranks_of_ties() -> None:
    from scripts import validate_ssi

    x, y = np.array([2.0, 3.0, 1.0, 0.0, 2.0]), np.array([1.0, 0.0, 3.0, 2.0, 4.0])
    assert validate_ssi.spearman(x, y) == pytest.approx(-0.46169025843831935)  # scipy.stats.spearmanr
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # undefined for a constant column: NaN without NumPy's warning
        assert math.isnan(validate_ssi.spearman(x, np.ones(5))) and math.isnan(validate_ssi.spearman(x[:1], y[:1]))


def test_validate_ssi_evaluates_its_index_on_the_alternating_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Instance ``index`` is calibrated on the size preset ``index`` picks, seeded with ``index``, and its row keeps
    whether the calibration converged."""
    from scripts import validate_ssi

    calls: list[tuple[Any, ...]] = []

    def calibrate(scenario: Any, targets: dict, seed: int) -> SimpleNamespace:
        calls.append((scenario, targets, seed))
        return SimpleNamespace(instance="inst", converged=False)

    monkeypatch.setattr(validate_ssi, "calibrate", calibrate)
    monkeypatch.setattr(validate_ssi, "ssi", lambda inst: SimpleNamespace(score=60.0, tier="hard", components={}))
    monkeypatch.setattr(validate_ssi, "empirical_difficulty", lambda inst: 0.5 if inst == "inst" else None)
    row = validate_ssi.evaluate(3, {"utilization": 0.5})
    assert row == {"index": 3, "size": "medium", "targets": {"utilization": 0.5}, "converged": False, "ssi": 60.0,
                   "tier": "hard", "components": {}, "difficulty": 0.5}
    assert calls == [(validate_ssi.Scenario.preset("medium"), {"utilization": 0.5}, 3)]


@pytest.mark.parametrize(("by_index", "figures"), [
    # easy's and medium's IQRs overlap (3 is not < 3); hard's and extreme's medians are equal
    ({0: ("easy", 0.0), 1: ("easy", 4.0), 2: ("medium", 2.0), 3: ("medium", 6.0), 4: ("hard", 10.0),
      5: ("hard", 11.0), 6: ("extreme", 10.0), 7: ("extreme", 11.0)},
     {"tiers": [["easy", 2.0, 1.0, 3.0], ["medium", 4.0, 3.0, 5.0], ["hard", 10.5, 10.25, 10.75],
                ["extreme", 10.5, 10.25, 10.75]], "medians_increasing": False, "iqrs_disjoint": False}),
    # no extreme instance: neither can be said of all tiers
    ({0: ("easy", 0.0), 1: ("easy", 1.0), 2: ("medium", 2.0), 3: ("medium", 3.0), 4: ("hard", 4.0), 5: ("hard", 5.0)},
     {"tiers": [["easy", 0.5, 0.25, 0.75], ["medium", 2.5, 2.25, 2.75], ["hard", 4.5, 4.25, 4.75]],
      "medians_increasing": False, "iqrs_disjoint": False}),
])
def test_validate_ssi_judges_the_tiers_by_median_and_inter_quartile_range(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_index: dict[int, tuple[str, float]],
        figures: dict[str, Any]) -> None:
    """Each tier's (median, q25, q75) of the empirical difficulty; medians strictly increasing and adjacent IQRs
    disjoint over all four tiers."""
    from scripts import validate_ssi

    def fake(index: int, targets: dict) -> dict:
        tier, difficulty = by_index[index]
        return {"index": index, "size": validate_ssi.SIZES[index % 2], "targets": targets, "converged": True,
                "ssi": 10.0 * index, "tier": tier, "components": {}, "difficulty": difficulty}

    monkeypatch.setattr(validate_ssi, "evaluate", fake)
    monkeypatch.setattr(validate_ssi, "_plot", lambda *args: None)
    validate_ssi.main(["--instances", str(len(by_index)), "--out", str(tmp_path)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {key: summary[key] for key in figures} == figures


def test_validate_ssi_lets_max_seeds_instances_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts import validate_ssi

    computed = _fake_evaluations(monkeypatch)
    monkeypatch.setattr(validate_ssi, "MAX_SEEDS", 3)
    validate_ssi.main(["--instances", "3", "--out", str(tmp_path)])
    assert computed == [0, 1, 2]


def test_validate_ssi_takes_the_log_residual_only_where_the_stress_is_finite_and_positive() -> None:
    """Scores 0 and 100 read back as stress 0 and infinity: no log of them (the mean was an infinity, not JSON)."""
    from scripts import validate_ssi

    table = [{"size": "small", "ssi": score, "difficulty": 0.6} for score in (0.0, 50.0, 100.0)]
    assert validate_ssi.size_statistics(table)["small"] == {"instances": 3, "spearman": None,
                                                            "mean_log_residual": pytest.approx(math.log(2.0)),
                                                            "residual_instances": 1}


def test_validate_ssi_reuses_a_row_only_at_an_index_of_its_design() -> None:
    """A hand-edited index (negative, a float, a string) or size makes a row another design's, not a crash or a
    reuse."""
    from scripts import validate_ssi

    vectors = validate_ssi.target_vectors(4)
    codes = {size: f"code of {size}" for size in validate_ssi.SIZES}
    rows = [{"index": i, "size": validate_ssi.SIZES[i % 2], "targets": vectors[i],
             "code": codes[validate_ssi.SIZES[i % 2]]} for i in range(4)]
    stored = [rows[0], {**rows[3], "index": -1}, {**rows[1], "index": 1.0}, {**rows[1], "index": "1"},
              {**rows[2], "size": "large"}, rows[3]]
    assert validate_ssi.design_rows(stored, vectors, codes) == ({0: rows[0], 3: rows[3]}, 4)


def _edit_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Edit every size preset (rework probability 0.5), as a change to conf/size/ would."""
    from dynasched_gym.generation import Scenario

    preset = Scenario.preset

    def edited(size: str) -> Scenario:
        scenario = preset(size)
        scenario.events.rework = 0.5
        return scenario

    monkeypatch.setattr(Scenario, "preset", edited)


def _fake_runs(calibrate_compare: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Make calibrate_compare's runs instant, converged fakes; the (vector, seed, method) of each run, as it runs."""
    calls: list[tuple] = []

    def fake_run(scenario, size, index, targets, seed, method, budget) -> dict:
        calls.append((index, seed, method))
        return {"size": size, "vector": index, "seed": seed, "method": method, "budget": budget, "targets": targets,
                "converged": True, "max_error": 0.01, "errors": {}, "seconds": 0.1, "evaluations": 5, "steps": 1}

    monkeypatch.setattr(calibrate_compare, "run_one", fake_run)
    monkeypatch.setattr(calibrate_compare, "calibrate", lambda *args, **kwargs: None)  # the untimed warm-up
    return calls


@pytest.mark.parametrize("change", ["generator_version", "preset"])
def test_calibrate_compare_reuses_no_run_of_another_generator_or_preset(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        change: str) -> None:
    """A run's errors, evaluations and time are those of the generator and preset it ran on: a run of an older
    GENERATOR_VERSION (its timing the point of a rerun) or an edited preset is run again, and kept."""
    from scripts import calibrate_compare

    calls = _fake_runs(calibrate_compare, monkeypatch)
    out = tmp_path / "cmp.json"
    args = ["--size", "small", "--vectors", "2", "--seeds", "1", "--budget", "20", "--out", str(out)]
    runs = 2 * len(calibrate_compare.METHODS)
    calibrate_compare.main(args)
    calibrate_compare.main(args)
    assert len(calls) == runs
    if change == "preset":
        _edit_presets(monkeypatch)
    else:
        monkeypatch.setattr(calibrate_compare, "GENERATOR_VERSION", "999")
    calls.clear()
    calibrate_compare.main(args)
    assert len(calls) == runs
    assert len(out.with_suffix(".jsonl").read_text().splitlines()) == 2 * runs  # the older runs are kept


def test_calibrate_compare_summarises_each_method_over_its_own_runs() -> None:
    """Success rate, medians and the time ratio to SESC of each method, from its own rows only."""
    from scripts.calibrate_compare import summarise, table

    def row(method: str, converged: bool, error: float, seconds: float, evaluations: int) -> dict[str, Any]:
        return {"method": method, "converged": converged, "max_error": error, "seconds": seconds,
                "evaluations": evaluations}

    rows = [row("sesc", True, 0.01, 0.2, 10), row("sesc", False, 0.3, 0.4, 30), row("sesc", True, 0.02, 0.3, 20),
            row("cmaes", False, 0.5, 1.2, 200)]
    summary = summarise(rows)
    assert summary == {
        "sesc": {"runs": 3, "success": pytest.approx(2 / 3), "median_max_error": 0.02, "median_seconds": 0.3,
                 "median_evaluations": 20, "time_ratio": 1.0},
        "cmaes": {"runs": 1, "success": 0.0, "median_max_error": 0.5, "median_seconds": 1.2,
                  "median_evaluations": 200, "time_ratio": pytest.approx(4.0)}}
    assert table(summary).splitlines()[1].split() == ["sesc", "3", "66.7%", "0.0200", "300.0ms", "1.0", "20"]


def test_calibrate_compare_runs_sesc_once_whatever_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESC takes no budget: a rerun with another ``--budget`` ran its runs again (the baselines' are new runs)."""
    from scripts import calibrate_compare

    calls = _fake_runs(calibrate_compare, monkeypatch)
    args = ["--size", "small", "--vectors", "2", "--seeds", "1", "--out", str(tmp_path / "cmp.json")]
    calibrate_compare.main([*args, "--budget", "20"])
    calls.clear()
    calibrate_compare.main([*args, "--budget", "40"])
    assert sorted(calls) == sorted((i, 0, method) for i in range(2) for method in calibrate_compare.METHODS
                                   if method != "sesc")
    rows = json.loads((tmp_path / "cmp.json").read_text())["rows"]
    assert len(rows) == 2 * len(calibrate_compare.METHODS)


@pytest.mark.parametrize("change", ["ssi_version", "generator_version", "portfolio", "preset"])
def test_validate_ssi_reuses_no_row_of_another_ssi_generator_or_preset(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str],
                                                                       change: str) -> None:
    """A row holds the SSI score and tier of its instance: one computed by an older SSI or generator, or on an
    edited size preset, is recomputed (and kept), not reported as this code's (make bench reran on the old rows)."""
    from scripts import validate_ssi

    computed = _fake_evaluations(monkeypatch)
    args = ["--instances", "3", "--out", str(tmp_path / "ssi")]
    validate_ssi.main(args)
    computed.clear()
    validate_ssi.main(args)
    assert computed == []
    if change == "preset":
        _edit_presets(monkeypatch)
    else:
        monkeypatch.setattr(validate_ssi, change.upper(), "999")
    capsys.readouterr()
    validate_ssi.main(args)
    assert computed == [0, 1, 2]
    assert "ignoring 3 row(s)" in capsys.readouterr().err


def test_calibrate_compare_refuses_an_out_that_is_its_journal_before_any_work(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch,
                                                                              capsys: pytest.CaptureFixture[str]
                                                                              ) -> None:
    """The journal is --out with the suffix .jsonl: with --out x.jsonl both were one file, the summary replaced the
    journal and a rerun ran every run again; a folder in the journal's place was found after the first run."""
    from scripts import calibrate_compare

    calls = _fake_runs(calibrate_compare, monkeypatch)
    (tmp_path / "folder.jsonl").mkdir()
    args = ["--size", "small", "--vectors", "2", "--seeds", "1", "--budget", "20", "--out"]
    for out, message in ((tmp_path / "cmp.jsonl", "--out must not end in .jsonl: "),
                         (tmp_path / "folder.json", "--out {out}: its journal cannot be written: {journal}: Is a "
                                                    "directory")):
        with pytest.raises(SystemExit) as caught:
            calibrate_compare.main([*args, str(out)])
        journal = out.with_suffix(".jsonl")
        assert caught.value.code == 2 and message.format(out=out, journal=journal) in capsys.readouterr().err
        assert calls == [] and not out.exists()
    calibrate_compare.main([*args, str(tmp_path / "cmp.json")])
    calls.clear()
    calibrate_compare.main([*args, str(tmp_path / "cmp.json")])
    assert calls == []  # resumed: every run kept


@pytest.mark.parametrize("package", ["cma", "pymoo"])
def test_calibrate_compare_without_an_optimiser_says_which_extra_to_install(tmp_path: Path, package: str,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from scripts import calibrate_compare

    for name in [package, *(name for name in sys.modules if name.startswith(f"{package}."))]:
        # as if not installed (was MissingExtraError's traceback); its submodules too, which an earlier test may
        # have imported, and which an import finds in sys.modules without its package
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "cmp.json"
    with pytest.raises(SystemExit) as caught:
        calibrate_compare.main(["--size", "small", "--vectors", "1", "--seeds", "1", "--budget", "5", "--out",
                                str(out)])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"needs the package '{package}" in err and "pip install 'dynasched-gym[calibration]'" in err
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


def test_calibrate_compare_resumes_only_runs_of_its_own_grid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts import calibrate_compare
    from scripts.journal import JournalWarning

    calls = _fake_runs(calibrate_compare, monkeypatch)
    out = tmp_path / "cmp.json"
    args = ["--size", "small", "--seeds", "1", "--budget", "20", "--out", str(out)]
    methods = len(calibrate_compare.METHODS)
    calibrate_compare.main(["--vectors", "3", *args])
    assert len(calls) == 3 * methods
    calls.clear()
    with open(out.with_suffix(".jsonl"), "a") as fh:
        fh.write('{"size": "small", "vec')
    with pytest.warns(JournalWarning, match="partial last line"):
        calibrate_compare.main(["--vectors", "2", *args])  # other Latin-hypercube points: nothing reused
    assert len(calls) == 2 * methods
    result = json.loads(out.read_text())
    assert [r["targets"] for r in result["rows"][::methods]] == calibrate_compare.target_vectors(2)
    calls.clear()
    calibrate_compare.main(["--vectors", "3", *args])  # the first grid's runs are still there
    assert calls == []
    with pytest.raises(SystemExit):
        calibrate_compare.main(["--vectors", "0", *args])


@pytest.mark.parametrize("script", ["scripts.calibrate_compare", "scripts.compare_agents", "scripts.fjsp_table",
                                    "scripts.validate_ssi"])
def test_argparse_scripts_run_without_docstrings(script: str) -> None:
    # python -OO strips docstrings, which the scripts' parsers take their descriptions from
    done = subprocess.run([sys.executable, "-OO", "-m", script, "--help"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_calibrate_without_a_usable_matplotlib_stops_before_its_calibration(tmp_path: Path, script,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # the convergence figure is drawn last: a missing matplotlib ended the whole calibration in a traceback
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # as if not installed
    monkeypatch.setattr(script, "calibrate", lambda *args, **kwargs: pytest.fail("calibrated"))
    with pytest.raises(SettingError, match=re.escape("pip install 'dynasched-gym[viz]'")):
        script.run(_config(tmp_path / "cal"))
    assert list(tmp_path.iterdir()) == []


def test_calibrate_with_an_unknown_mplbackend_names_it_before_its_calibration(tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "bogus", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "scripts.calibrate", f"out={tmp_path / 'cal'}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("error: environment variable MPLBACKEND: not a backend matplotlib knows: unset it or name "
                           "one, such as agg (got 'bogus')\n")
    assert list(tmp_path.iterdir()) == []


def test_validate_ssi_without_a_usable_matplotlib_stops_before_any_instance(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from scripts import validate_ssi

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(SystemExit) as caught:  # the figure is drawn after every instance is calibrated
        validate_ssi.main(["--out", str(tmp_path / "ssi"), "--instances", "2"])
    assert caught.value.code == 2 and "pip install 'dynasched-gym[viz]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("sweep", "message"), [
    (["seed=1,abc", "size=small"], "error: sweep job #1 (seed=abc size=small): seed must be an integer >= 0, got "
                                   "'abc'\n"),
    (["seed=1,2", "size=small", "out=cal"], "error: sweep jobs #0 and #1 (seed=2 size=small out=cal) would both write "
                                            "into out={out}; give each job its own, e.g. with ${{hydra:job.num}} "
                                            "in it\n"),
])
def test_a_sweep_is_refused_before_its_first_job(sweep: list[str], message: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``-m seed=1,abc``: job #0 calibrated and wrote its outputs before job #1 was refused; ``-m seed=1,2 out=cal``:
    job #0 wrote ``cal``, job #1 was refused after (``out=cal exists``). Both are refused before any job now."""
    script = importlib.import_module("scripts.calibrate")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["calibrate", "-m", *sweep])
    with pytest.raises(SystemExit) as exit_info:
        script.main()
    assert exit_info.value.code == 2 and list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == message.format(out=tmp_path / "cal")


def test_the_report_counts_an_error_equal_to_its_tolerance_as_within() -> None:
    """As SESC stops on it (sesc.within: error <= tolerance)."""
    import dataclasses

    from dynasched_gym.generation import Scenario, calibrate
    from dynasched_gym.generation.sesc import tolerance
    from scripts.calibrate import report

    scenario = Scenario.preset("small")
    result = calibrate(scenario, seed=0, max_steps=0)
    name = "utilization"
    result = dataclasses.replace(result, errors={**result.errors, name: tolerance(scenario.tolerances, name)})
    table = _report_table(report(scenario, 0, result, ssi(result.instance), []))
    assert table[name][-1] == "yes"


def test_a_claim_that_is_no_complete_owner_names_no_run() -> None:
    """A .claim of other JSON (a dict without pid, host and started) is described, not read as a run (a KeyError)."""
    from scripts.calibrate import _described, _owner_of

    assert [_owner_of(text) for text in ('{"pid": 1}', "[1]", "{")] == [None, None, None]
    assert _described('{"pid": 1}') == "another run (.claim: '{\"pid\": 1}')"
