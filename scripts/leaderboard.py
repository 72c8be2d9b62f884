"""The leaderboard: agents ranked per tier from the results store, with bootstrap confidence intervals.

``python -m scripts.leaderboard [any scripts.evaluate option] [out=DIR] [run_missing=true] [all_rows=false]``
(Hydra, ``conf/leaderboard.yaml``, which includes ``conf/evaluate.yaml``). First evaluates the episodes
of the configuration that the store lacks (``run_missing``; a second run reuses every row), then
aggregates the selected rows (:func:`dynasched_gym.results.aggregate`) and writes, atomically, into ``out`` (in a
sweep, ``-m``, each job into ``out/<job number>``):

- ``leaderboard.md``: per (objective, size, tier) the ranked table (mean, 95 % CI, objective relative
  to the best rule and to the clairvoyant reference, regret vs that reference, normalised weighted
  tardiness), a cross-tier table of normalised weighted tardiness, the tier-difficulty check and the plots;
- ``leaderboard.csv``: every entry with every statistic;
- ``bars-<objective>-<size>.png``: per tier, each agent's mean with its 95 % CI;
- ``ssi-<objective>-<size>.png``: SSI of each instance vs normalised weighted tardiness reached.

and prints the Markdown. Clairvoyant agents (``lookahead-oracle``, ``cpsat-oracle``) are labelled
"clairvoyant reference" and never ranked. Exits with status 1 when a selected row failed (invalid
schedule or error): those rows are listed, and excluded from every statistic.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import hydra
import numpy as np
from omegaconf import DictConfig

from dynasched_gym.checks import check_bool, check_integer
from dynasched_gym.instance import write_text_atomic
from dynasched_gym.results import ResultStore, aggregate, board_labels, difficulty_trend
from dynasched_gym.results import format_number as _num
from dynasched_gym.viz._mpl import blank_figure, import_matplotlib, palette, save_figure
from scripts import evaluate
from scripts.interrupts import interrupted_exit
from scripts.overrides import (
    SettingError,
    check_added_keys,
    checked_main,
    job_folder,
    output_file,
    output_folder,
    setting_errors_exit,
    settings_checked,
)

CLAIRVOYANT = "clairvoyant reference"
CSV_FIELDS = ("objective", "size", "tier", "rank", "agent", "clairvoyant", "best_rule", "episodes", "failed", "mean",
              "ci_low", "ci_high", "vs_best_rule", "vs_clairvoyant", "regret", "regret_ci_low", "regret_ci_high",
              "nwt", "nwt_ci_low", "nwt_ci_high", "instances_ssi", "ssi", "decisions", "wall_time", "tokens")

Entry = Mapping[str, Any]


def _label(e: Entry) -> str:
    return f"{e['agent']} *({CLAIRVOYANT})*" if e["clairvoyant"] else e["agent"] + (" (best rule)" if e["best_rule"]
                                                                                        else "")


def _groups(board: Sequence[Entry]) -> dict[tuple[str, str], dict[str, list[Entry]]]:
    """Entries by (objective, size), then tier, in board order."""
    out: dict[tuple[str, str], dict[str, list[Entry]]] = defaultdict(lambda: defaultdict(list))
    for e in board:
        out[(e["objective"], e["size"])][e["tier"]].append(e)
    return out


def plot_files(objective: str, size: str) -> tuple[str, str]:
    """The file names of the (objective, size) group's plots in ``out``: the bars and the SSI scatter."""
    return f"bars-{objective}-{size}.png", f"ssi-{objective}-{size}.png"


def markdown(board: Sequence[Entry], metric: Mapping[str, str], failed: Sequence[Mapping[str, Any]],
             skipped: Sequence[str], resamples: int) -> str:
    """The leaderboard as Markdown (see the module docstring); ``resamples``: those of the board's bootstrap
    intervals (:func:`~dynasched_gym.results.aggregate`), stated under the tables."""
    lines = ["# Leaderboard", ""]
    trend = difficulty_trend(board)
    for (objective, size), tiers in _groups(board).items():
        info = trend[(objective, size)]
        levels = [f"{t} {_num(v)}" for t, v in zip(info["tiers"], info["best_rule_nwt"])]
        signs = ["<" if a < b else ">=" for a, b in itertools.pairwise(info["best_rule_nwt"])]
        verdict = {True: "**strictly increasing**", False: "**NOT strictly increasing**",
                   None: f"n/a (no best rule on {', '.join(info['missing'])}: no rule has a valid schedule on every "
                         "instance there)" if info["missing"] else "n/a (one tier)"}
        lines += [f"## Objective `{objective}` (`{metric.get(objective, objective)}`, lower is better), size `{size}`",
                  "", "Tier difficulty (best rule's mean normalised weighted tardiness, easy to extreme): "
                  + " ".join(x for pair in itertools.zip_longest(levels, signs) for x in pair if x is not None)
                  + f": {verdict[info['increasing']]}",
                  "", "Agents whose own normalised weighted tardiness does not increase with the tier: "
                  + (", ".join(info["agents"]) or "none") + ".", ""]
        for tier, entries in tiers.items():
            score = entries[0]["instances_ssi"]  # NaN: no ok row with a score
            ssi = "no SSI score (no episode ended ok)" if math.isnan(score) else f"mean SSI {score:.1f}"
            lines += [f"### {tier} ({entries[0]['instances']} instances, {ssi})", "",
                      "| rank | agent | mean | 95 % CI | vs best rule | vs clairvoyant | regret vs clairvoyant "
                      "[95 % CI] | norm. w. tardiness | episodes | failed | ms / episode |",
                      "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for e in entries:
                regret = "—" if math.isnan(e["regret"]) else \
                    f"{_num(e['regret'])} [{_num(e['regret_ci_low'])}, {_num(e['regret_ci_high'])}]"
                lines.append(
                    f"| {_rank(e)} | {_label(e)} | {_num(e['mean'])} | "
                    f"[{_num(e['ci_low'])}, {_num(e['ci_high'])}] | {_num(e['vs_best_rule'], 3)} | "
                    f"{_num(e['vs_clairvoyant'], 3)} | {regret} | {_num(e['nwt'], 3)} | {e['episodes']} | "
                    f"{e['failed']} | {_num(1000 * e['wall_time'], 3)} |")
            lines.append("")
        agents = list(dict.fromkeys(e["agent"] for entries in tiers.values() for e in entries))
        nwt = {(e["tier"], e["agent"]): e["nwt"] for entries in tiers.values() for e in entries}
        lines += ["### Normalised weighted tardiness across tiers (mean)", "",
                  "| agent | " + " | ".join(tiers) + " |", "|---|" + "---:|" * len(tiers)]
        lines += [f"| {a} | " + " | ".join(_num(nwt.get((t, a), math.nan), 3) for t in tiers) + " |" for a in agents]
        bars, scatter = plot_files(objective, size)
        lines += ["", f"![means with 95 % CIs]({bars}) ![SSI vs normalised weighted tardiness]({scatter})", ""]
    lines += ["Columns: *mean* objective over the instances with its percentile bootstrap 95 % CI "
              f"({resamples:,} resamples); *vs best rule*: mean / the best rule's mean (< 1 beats it); "
              "*vs clairvoyant*: mean / "
              f"the {CLAIRVOYANT}'s mean, the reference being per instance the best value any clairvoyant agent "
              "reached; *regret*: mean difference to that reference (paired bootstrap CI); *norm. w. tardiness*: "
              "total weighted tardiness / total weighted expected work (comparable across tiers); clairvoyant "
              "agents see future events and are not ranked (`ref`), nor are agents with failed or missing episodes "
              "(`—`: their mean covers fewer instances). Details: docs/leaderboard.md.", ""]
    if skipped:
        lines += ["Skipped: " + "; ".join(skipped) + ".", ""]
    if failed:
        lines += [f"**{len(failed)} FAILED EPISODE(S)** (excluded from every statistic):", ""]
        lines += [f"- {evaluate._report_failure(row)}" for row in failed] + [""]
    return "\n".join(lines)


def _rank(entry: Entry) -> str:
    """The rank column: the rank, ``ref`` for a clairvoyant reference, ``—`` for an agent with failed or missing
    episodes."""
    if entry["rank"] is not None:
        return str(entry["rank"])
    return "ref" if entry["clairvoyant"] else "—"


def csv_text(board: Sequence[Entry]) -> str:
    """Every entry as CSV (:data:`CSV_FIELDS`; NaN as empty)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for e in board:
        writer.writerow({k: "" if isinstance(v, float) and math.isnan(v) else v for k, v in e.items()})
    return out.getvalue()


def plot_bars(board: Sequence[Entry], objective: str, size: str, path: Path) -> Path:
    """One panel per tier: each agent's mean objective with its 95 % CI (clairvoyant references hatched)."""

    tiers = _groups(board)[(objective, size)]
    agents = sorted({e["agent"] for entries in tiers.values() for e in entries})
    colours = dict(zip(agents, palette(len(agents))))
    fig = blank_figure(None, 3.6 * len(tiers), 0.35 * len(agents) + 1.6, 110)
    axes = np.atleast_1d(fig.subplots(1, len(tiers), sharey=False))
    for ax, (tier, entries) in zip(axes, tiers.items()):
        entries = [e for e in entries if e["episodes"]][::-1]
        y = np.arange(len(entries))
        means = np.array([e["mean"] for e in entries])
        err = np.array([[e["mean"] - e["ci_low"], e["ci_high"] - e["mean"]] for e in entries]).T.reshape(2, -1)
        ax.barh(y, means, xerr=err, color=[colours[e["agent"]] for e in entries], capsize=2,
                hatch=[("//" if e["clairvoyant"] else None) for e in entries], edgecolor="black", linewidth=0.4)
        ax.set_yticks(y, [e["agent"] + (" (clairvoyant)" if e["clairvoyant"] else "") for e in entries], fontsize=7)
        ax.set_title(f"{tier}", fontsize=9)
        ax.set_xlabel(f"mean {objective} (95 % CI)", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"Leaderboard, size {size}: lower is better", fontsize=10)
    return save_figure(fig, path)


def plot_ssi(rows: Sequence[Mapping[str, Any]], board: Sequence[Entry], objective: str, size: str,
             path: Path) -> Path:
    """SSI of each instance vs the normalised weighted tardiness reached: every non-rule agent, the best
    rule of each tier and the clairvoyant references (symlog y: many easy instances reach 0); ``rows``: those
    ``board`` was aggregated from."""
    from matplotlib import colormaps

    best = {e["tier"] for e in board if e["objective"] == objective and e["size"] == size}
    best_rule = {e["tier"]: e["agent"] for e in board if e["objective"] == objective and e["size"] == size
                 and e["best_rule"]}
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r, agent in zip(rows, board_labels(rows)):  # the board's names: a row's own may differ (name@hash)
        if (r["objective"] != objective or r["size"] != size or r["status"] != "ok" or r["tier"] not in best
                or r.get("ssi") is None):  # a row of one's own may have no SSI score: no point to place
            continue
        if agent.startswith("rule:"):
            if best_rule.get(r["tier"]) != agent:
                continue
            name = "best rule of the tier"
        else:
            name = agent + (" (clairvoyant)" if r.get("clairvoyant") else "")
        series[name].append((r["ssi"], r["normalised_weighted_tardiness"]))
    fig = blank_figure(None, 8.0, 5.0, 110)
    ax = fig.subplots()
    for i, (name, points) in enumerate(sorted(series.items())):
        x, y = np.array(points).T
        cross = "clairvoyant" in name
        ax.scatter(x, y, s=10, alpha=0.6, color=colormaps["tab10"](i % 10), marker="x" if cross else "o",
                   label=f"{name} ({len(points)})", linewidths=0.8 if cross else 0)
    for edge in (25, 50, 75):
        ax.axvline(edge, color="grey", linewidth=0.6, linestyle="--")
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, 100)
    ax.set_xlabel("SSI score of the instance (tier bands at 25, 50, 75)")
    ax.set_ylabel("normalised weighted tardiness (symlog)")
    ax.set_title(f"SSI vs difficulty reached, size {size}, objective {objective}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def write(board: Sequence[Entry], rows: Sequence[Mapping[str, Any]], failed: Sequence[Mapping[str, Any]],
          skipped: Sequence[str], out: Path, resamples: int) -> str:
    """Write the Markdown, CSV and plots into ``out`` (each file atomically); the Markdown (``resamples``: those
    the board was aggregated with)."""
    metric = {r["objective"]: r.get("objective_metric", r["objective"]) for r in rows}
    text = markdown(board, metric, failed, skipped, resamples)
    write_text_atomic(out / "leaderboard.md", text)
    write_text_atomic(out / "leaderboard.csv", csv_text(board))
    for objective, size in _groups(board):
        bars, scatter = plot_files(objective, size)
        plot_bars(board, objective, size, out / bars)
        plot_ssi(rows, board, objective, size, out / scatter)
    return text


@settings_checked()
def board_settings(cfg: DictConfig) -> tuple[int, bool, bool, Path, Path]:
    """The board's own settings, checked before the evaluation (nothing written): ``resamples``, ``run_missing``,
    ``all_rows``, the :func:`~scripts.overrides.job_folder` and the store's path."""
    resamples = check_integer("resamples", cfg.resamples, 1)
    run_missing, all_rows = check_bool("run_missing", cfg.run_missing), check_bool("all_rows", cfg.all_rows)
    out = output_folder("out", job_folder(cfg.out))
    store_path = output_file("store", cfg.store, read_only=not run_missing)  # a published copy: only read
    import_matplotlib("matplotlib.figure")  # before the evaluation: the figures are drawn at its end
    return resamples, run_missing, all_rows, out, store_path


def check_settings(cfg: DictConfig) -> Path:
    """The checks :func:`run` makes of ``cfg`` before any episode (a ``-m`` sweep's jobs are checked so before the
    first job runs): :func:`board_settings`, then evaluate's (:func:`scripts.evaluate.check_settings`; with
    ``run_missing=false``, its plan); the job's own board folder."""
    _, run_missing, _, out, _ = board_settings(cfg)
    (evaluate.check_settings if run_missing else evaluate.plan)(cfg)
    return out


def run(cfg: DictConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Evaluate what is missing (``cfg.run_missing``), aggregate, write into
    :func:`~scripts.overrides.job_folder`; (board, failed rows, markdown)."""
    resamples, run_missing, all_rows, out, store_path = board_settings(cfg)
    if run_missing:
        summary = evaluate.run(cfg)
        print(summary)
        rows, skipped = summary.rows, summary.skipped
    else:
        plan = evaluate.plan(cfg)
        if not store_path.exists():  # a misspelt path ended "no rows to aggregate", status 1
            raise SettingError(f"store={cfg.store}: no such file ({store_path}); with run_missing=false the board "
                               "only reads the store")
        store = ResultStore(store_path, read_only=True)
        rows = plan.labelled(store.rows())
        evaluate.check_reused(rows, check_bool("validate", cfg.validate), store.path)
        skipped = plan.skipped
        if missing := plan.missing(rows):  # the board covers fewer instances than configured: say so beside it
            entrant, tier, size, seed = missing[0]
            skipped = [*skipped, f"{len(missing)} of the {len(plan.episodes)} configured episodes, not in the store "
                                 f"(run_missing=false; the first: {entrant.agent} on {tier}/{size}, seed {seed})"]
    if all_rows:
        rows = ResultStore(store_path, read_only=not run_missing).rows()
    if not rows:
        raise SystemExit("no rows to aggregate: run with run_missing=true, or check the store and the selection")
    board = aggregate(rows, resamples=resamples)
    failed = [r for r in rows if r["status"] != "ok"]
    text = write(board, rows, failed, skipped, out, resamples)
    return board, failed, text


@checked_main("leaderboard", check_settings)
def main(cfg: DictConfig) -> None:
    """Hydra entry point; exits with status 1 when a selected row failed, 130 on Ctrl-C or SIGTERM (the message
    says how to resume), 2 on a bad setting."""
    with setting_errors_exit(), interrupted_exit(evaluate.RESUME_NOTE):
        check_added_keys(cfg, free=evaluate.FREE_FORM)
        _, failed, text = run(cfg)
    print(text)
    print(f"wrote {hydra.utils.to_absolute_path(job_folder(cfg.out))}/leaderboard.md, .csv and plots")
    if failed:
        evaluate.report_failures(failed)
        sys.exit(1)


if __name__ == "__main__":  # run the importable module's main: launcher workers unpickle its functions by name
    from scripts.leaderboard import main as entry

    entry()
