"""Calibrate one instance and write it with a report (Hydra entry point, ``conf/calibrate.yaml``).

``python -m scripts.calibrate [size=small|medium|large] [seed=0] [method=sesc|cmaes|nsga2]
[targets.utilization=0.6 ...] [+options.max_steps=40] [progress=true] [out=DIR]`` shows a progress bar over the SESC
steps or the evaluations (``progress=false``: none) and writes:

- ``DIR/instance.json``: the calibrated instance, native JSON;
- ``DIR/dsbx/``: the same instance in the reference package's directory format (items that format
  cannot express, such as REWORK events, are dropped and listed in the report);
- ``DIR/report.md``: targets vs realised metrics (relative errors, tolerances), convergence, SSI
  score, tier and components, calibration knobs, seconds;
- ``DIR/convergence.png``: per metric, relative error / tolerance at each step (log scale; <= 1
  is within tolerance).

DIR must not exist (default: ``calibration/`` in Hydra's run dir); it is claimed before the calibration (made, with
a ``.claim`` file naming the run), so that of two runs given one DIR the second stops at once. Everything is written
to a temporary sibling directory that is renamed onto DIR at the end, so a failed run leaves nothing behind, and the
claim of a run killed outright is taken over by the next run (:func:`claim`). Ctrl-C or SIGTERM ends a run with status
130, saying whether DIR was written.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import uuid
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from omegaconf import DictConfig, OmegaConf

from dynasched_gym.checks import check_bool
from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.generation import CalibrationResult, Scenario, SSIResult, Tolerances, calibrate, ssi
from dynasched_gym.generation.scenario import replace_targets
from dynasched_gym.generation.sesc import check_calibration, tolerance
from dynasched_gym.io import dsbx_dir
from dynasched_gym.paths import locks_available
from dynasched_gym.viz._mpl import blank_figure, import_matplotlib, save_figure
from scripts.interrupts import interrupted_exit, interrupts_held
from scripts.overrides import (
    SettingError,
    check_added_keys,
    checked_main,
    mapping_setting,
    output_folder,
    remove_empty_run_folder,
    setting_errors_exit,
    settings_checked,
)

#: Config mappings whose keys calibrate checks itself: calibrate()'s options, and the scenario (Scenario.from_dict
#: refuses an unknown field), where + adds the fields a preset leaves at their defaults (scale.horizon, ...).
FREE_FORM = ("options", "size.scenario")

#: The file in a claimed ``out`` that names the run writing it; the run holds an ``fcntl.flock`` on it until its
#: outputs replace ``out``, so that the kernel releases the claim of a run killed outright (SIGKILL, out of memory).
CLAIM = ".claim"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def report(scenario: Scenario, seed: int, result: CalibrationResult, index: SSIResult, dsbx_notes: list[str]) -> str:
    """The markdown report of one calibration (numbers to 6 significant digits)."""
    tol = scenario.tolerances
    rows = []
    for name, value in result.metrics.items():
        if name in result.targets:
            error, limit = result.errors[name], tolerance(tol, name)
            rows.append([name, f"{result.targets[name]:.6g}", f"{value:.6g}", f"{error:.3g}", f"{limit:.3g}",
                         "yes" if error <= limit else "**no**"])
        else:
            rows.append([name, "—", f"{value:.6g}", "—", "—", "—"])
    knob_rows = [[name, f"{value:.6g}" if isinstance(value, float) else str(value)]
                 for name, value in result.knobs.items()]
    lines = [
        f"# Calibration report: {result.instance.name}",
        "",
        f"Scenario preset `{scenario.name}`, seed {seed}, method `{result.method}`; "
        f"{result.instance.num_jobs} jobs, {result.instance.num_machines} machines, "
        f"{len(result.instance.events)} events."
        + ("" if scenario.scale.horizon is None else
           f" Scale: horizon {scenario.scale.horizon:g} requested, the last release at "
           f"{float(result.instance.job_release.max()):.6g} (calibration keeps the utilization exact)."),
        "",
        f"- converged: **{'yes' if result.converged else 'no'}** ("
        f"{'every target within its tolerance' if result.converged else 'a target outside its tolerance: see below'})",
        f"- SSI score: **{index.score:.2f}**, tier **{index.tier}** (stress {index.stress:.4g})",
        f"- calibration time: {result.seconds:.3f} s, {len(result.history)} history records",
        "",
        "## Targets vs realised (measured on the exported instance)",
        "",
        *_table(["metric", "target", "realised", "relative error", "tolerance", "within"], rows),
        "",
        "## SSI components",
        "",
        *_table(["component", "value"], [[k, f"{v:.4g}"] for k, v in index.components.items()]),
        "",
        "## Calibration knobs",
        "",
        *_table(["knob", "value"], knob_rows),
        "",
        "## Files",
        "",
        "- `instance.json`: native instance JSON",
        "- `dsbx/`: reference-package directory format",
        *(f"  - {note}" for note in dsbx_notes),
        "- `convergence.png`: relative error / tolerance per step",
        "",
        "![convergence](convergence.png)",
        "",
    ]
    return "\n".join(lines)


def plot_convergence(result: CalibrationResult, tolerances: Tolerances, path: Path) -> None:
    """Relative error / tolerance of every target at each history record (log y; 1 = tolerance); for SESC a
    dotted line marks the state kept, an earlier step than the last when SESC did not converge."""
    from matplotlib.ticker import MaxNLocator

    fig = blank_figure(None, 7.0, 4.0, 120)
    ax = fig.subplots()
    for name in result.targets:
        ratios = [max(rec["errors"][name] / tolerance(tolerances, name), 1e-4) for rec in result.history]
        ax.plot(range(len(ratios)), ratios, marker="o", label=name)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="tolerance")
    kept = [i for i, rec in enumerate(result.history) if rec.get("knobs") == result.knobs]
    if kept:
        ax.axvline(kept[-1], color="grey", linestyle=":", linewidth=1, label="state kept")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("SESC step" if result.method == "sesc" else "generation")
    ax.set_ylabel("relative error / tolerance (floor 1e-4)")
    ax.set_title(f"{result.instance.name} ({result.method})")
    ax.legend(fontsize=8)
    save_figure(fig, path)


def _save_dsbx(result: CalibrationResult, directory: Path) -> list[str]:
    """Write the dsbx directory; the notes for the report (dropped or lossy items, or why it is missing)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            dsbx_dir.save(result.instance, directory, drop_unsupported=True)
        except InstanceFormatError as exc:
            return [f"**not written**: the instance is not expressible in the dsbx format ({exc})"]
    return [str(w.message) for w in caught]


def _owner() -> str:
    """This run, as its claim names it."""
    return json.dumps({"pid": os.getpid(), "host": platform.node(),
                       "started": datetime.now(timezone.utc).isoformat(timespec="seconds")})


def _owner_of(text: str) -> dict[str, Any] | None:
    """The run a claim's text names; None for a claim being written or not this module's."""
    try:
        owner = json.loads(text)
    except ValueError:
        return None
    return owner if isinstance(owner, dict) and {"pid", "host", "started"} <= owner.keys() else None


def _described(text: str) -> str:
    """The run a claim's text names, for a message."""
    owner = _owner_of(text)
    if owner is None:
        return f"another run ({CLAIM}: {text[:80]!r})"
    return f"the run of pid {owner['pid']} on host {owner['host']} started at {owner['started']}"


def claim(out: Path) -> IO[str] | None:
    """Make the folder ``out`` this run's before any work; a :class:`ValueError` where it exists.

    ``out`` is made (with ``mkdir``: of two runs, one makes it), and in it ``.claim``, naming this run and locked by
    it. A later run given the same ``out`` refuses it while that lock is held, and takes it over, with a warning
    naming the folder, once it is free: the run was killed outright (SIGKILL, out of memory, a crash) on this host (a
    run on another host may hold a lock that this host's file system does not show) and left nothing else in ``out``.
    An ``out`` without a claim (made by hand, by an older version, or where ``fcntl`` is missing: Windows) is refused,
    and so is every claimed ``out`` on a file system without ``flock``, where a claim is written but not locked.
    Returns the open claim, to be closed once ``out`` is replaced or removed; None where there are no locks.
    """
    refused = f"out={out} exists; choose another out="
    try:
        out.mkdir()
    except FileExistsError:
        if not locks_available():
            raise ValueError(refused) from None
        return _take_over(out, refused)
    if not locks_available():
        return None
    import fcntl

    try:
        file = open(out / CLAIM, "x", encoding="utf-8")
        try:
            with contextlib.suppress(OSError):  # a file system without flock: the claim names the run, unlocked
                fcntl.flock(file, fcntl.LOCK_EX)  # waits only for a run that found it empty, which refuses it at once
            file.write(_owner())
            file.flush()
        except BaseException:
            file.close()
            raise
    except BaseException:
        abandon(out)
        raise
    return file


def _take_over(out: Path, refused: str) -> IO[str]:
    """The claim of ``out`` taken over from a run that was killed, locked and naming this run; else a ValueError."""
    import fcntl

    path = out / CLAIM
    try:
        file = open(path, "r+", encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise ValueError(refused) from None
    try:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            raise ValueError(f"{refused} ({_described(file.read())} is writing it)") from None
        except OSError:  # no flock on this file system (Lustre without -o flock): whether the run is over is unknown
            locked = False
        text = file.read()
        try:  # the claim still in place: its run did not finish or fail (and remove it) after this run opened it
            current = os.listdir(out) == [CLAIM] and os.stat(path).st_ino == os.fstat(file.fileno()).st_ino
        except FileNotFoundError:
            current = False
        if not current:
            raise ValueError(refused)
        owner = _owner_of(text)
        if not locked or owner is None or owner["host"] != platform.node():
            raise ValueError(f"{refused} (claimed by {_described(text)}; if that run is over, remove {out})")
        warnings.warn(f"out={out} was claimed by {_described(text)}, which was killed before it finished: taking it "
                      "over", RuntimeWarning, stacklevel=3)
        file.seek(0)
        file.truncate()
        file.write(_owner())
        file.flush()
    except BaseException:
        file.close()
        raise
    return file


def release(out: Path) -> None:
    """Remove the claim from ``out``, which the run's outputs then replace (the claim's lock is held until then)."""
    with contextlib.suppress(FileNotFoundError):
        (out / CLAIM).unlink()


def abandon(out: Path) -> None:
    """Remove the claim and the claimed ``out`` of a run that failed, unless something else was put into it."""
    release(out)
    with contextlib.suppress(OSError):
        out.rmdir()


@settings_checked()
def run_settings(cfg: DictConfig) -> tuple[Path, dict[str, Any], int, bool, Scenario]:
    """The run's ``out`` folder, solver ``options``, ``seed``, ``progress`` and scenario (the size preset under the
    ``targets``), checked before any work and writing nothing (a ``-m`` sweep's jobs are checked so before the first
    job runs)."""
    out = output_folder("out", cfg.out)
    options = mapping_setting(cfg, "options")
    seed = check_calibration(cfg.method, cfg.seed, **options)
    progress = check_bool("progress", cfg.progress)
    import_matplotlib("matplotlib.figure")  # before the calibration: its convergence figure is drawn at the end
    extra = sorted(set(mapping_setting(cfg, "size")) - {"scenario"})
    if extra:  # a key of conf/size/<size>.yaml beside scenario (targets one level too high) was ignored
        raise SettingError(f"size.{extra[0]} is no setting: a size preset file holds only scenario, got "
                           f"{OmegaConf.select(cfg, f'size.{extra[0]}')!r:.80}")
    try:
        scenario = Scenario.from_dict(mapping_setting(cfg, "size.scenario"))
    except InstanceFormatError as exc:
        raise exc.located("size.scenario") from None  # its fields are paths below size.scenario
    targets = {k: v for k, v in mapping_setting(cfg, "targets").items() if v is not None}
    try:
        scenario = replace_targets(scenario, **targets)
    except InstanceFormatError as exc:  # named as the user gave it, not as a field of an unnamed "<scenario>"
        if exc.field in {f"targets.{name}" for name in targets}:
            raise SettingError(f"{exc.field} {exc.reason}, got {exc.value!r:.80}") from None
        raise exc.located("size.scenario") from None  # a field of size.scenario, out of bounds under new targets
    return out, options, seed, progress, scenario


def check_job(cfg: DictConfig) -> Path:
    """:func:`run_settings`, for a job of a ``-m`` sweep; the folder it writes (``out``), which no other job may
    share."""
    return run_settings(cfg)[0]


def run(cfg: DictConfig, written: Callable[[Path], Any] = lambda out: None) -> Path:
    """Calibrate as configured and write the outputs atomically into ``cfg.out``; returns that directory.

    ``seed`` must be an integer >= 0 (``seed=1.7`` is refused, not truncated). ``written`` is called with that
    directory as the outputs are renamed onto it, with no interrupt in between: what an interrupt left is then known.
    """
    out, options, seed, progress, scenario = run_settings(cfg)
    with settings_checked():
        out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")  # renamed onto the claimed out when complete
    owned, claimed = None, False
    try:
        # out made and claimed, and known here to be, or none of it: a Ctrl-C between its mkdir and its claim left an
        # empty out that every later run refused, one as claim() returned a claimed out that the next run took over
        with settings_checked(), interrupts_held():
            owned = claim(out)  # before the work: of two runs given one out, the second stops here, not after its own
            claimed = True
        result = calibrate(scenario, method=cfg.method, seed=seed, progress=progress, **options)
        tmp.mkdir()
        (tmp / "instance.json").write_text(result.instance.to_json(), encoding="utf-8")
        notes = _save_dsbx(result, tmp / "dsbx")
        (tmp / "report.md").write_text(report(scenario, seed, result, ssi(result.instance), notes), encoding="utf-8")
        plot_convergence(result, scenario.tolerances, tmp / "convergence.png")
        with interrupts_held():  # the caller is told of the outputs with no interrupt between them and the rename
            release(out)
            os.replace(tmp, out)  # a rename replaces an empty directory (Linux, macOS)
            written(out)
    except BaseException:
        if claimed:  # else out is not this run's to remove; once renamed onto, this finds nothing to remove
            with interrupts_held():  # a Ctrl-C now would leave the claim or half of tmp
                shutil.rmtree(tmp, ignore_errors=True)
                abandon(out)
        raise
    finally:
        if owned is not None:
            owned.close()  # the lock, held until out is replaced or removed
    return out


@checked_main("calibrate", check_job)
def main(cfg: DictConfig) -> None:
    """Hydra entry point; exits with status 2 on a bad setting, 130 on Ctrl-C or SIGTERM, saying whether the outputs
    were written; where they were not, the run folder goes too if it holds only Hydra's files."""
    written: list[Path] = []
    with setting_errors_exit(), interrupted_exit("nothing was written (a calibration is written whole, at its end)"):
        try:
            check_added_keys(cfg, free=FREE_FORM)
            run(cfg, written.append)
            print(f"wrote {written[0]}")
        except KeyboardInterrupt:
            if written:  # interrupted after the rename: the outputs are complete
                raise KeyboardInterrupt(f"interrupted: {written[0]} was written in full") from None
            remove_empty_run_folder()  # as a bad setting does: .hydra/ and an empty log, the settings of nothing
            raise


if __name__ == "__main__":
    main()
