"""The observability-paradox experiment: one LLM at each observability level, and PPO on concise vs full observations.

``python -m scripts.observability agent.model=MODEL agent.base_url=URL [levels=[L1,L2,L3,oracle]]
[variants=[padded,priors]] [tiers=[easy,hard]] [seeds.count=5] [ppo.full=PATH.zip] [out=DIR]``
(Hydra, ``conf/observability.yaml``; the LLM settings are ``conf/agent/llm.yaml``, docs/llm.md).

For each tier it runs :func:`scripts.evaluate.run` on these entrants: the LLM agent at every level
of ``levels`` (label ``llm:<level>``) and every prompt variant of ``variants``
(``llm:<level>+<variant>``), the ``baselines`` rules, and PPO with the ``ppo.concise`` and
``ppo.full`` checkpoints (labels ``ppo:concise`` / ``ppo:full``; each checkpoint's observation space
must be the level it is labelled with). So rows land in the results store ``store`` as in
``scripts.evaluate`` (same keys and validation): an interrupted run resumes at the episodes
missing, and the LLM's response cache replays the decisions already paid for. Then it writes into ``out``:

- ``observability.md``: the mean objective with its bootstrap 95 % interval per agent and tier, the
  LLM's cost per level (requests, prompt and completion tokens per decision and per episode,
  fallbacks, cache hits, latency) and notes (a missing PPO checkpoint is said, never filled in);
- ``observability.csv``: the same numbers, one line per (agent, tier);
- ``observability-<objective>-<size>.png``: per tier the objective against the level (95 % CI bars;
  the rules and PPO as horizontal lines) and the prompt tokens per decision against the level.
"""

from __future__ import annotations

import csv
import io
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from dynasched_gym.agents.llm.prompts import LEVELS, VARIANT_LEVEL, agent_name
from dynasched_gym.checks import as_list, check_choices, check_integer
from dynasched_gym.generation import TIERS, size_presets
from dynasched_gym.instance import write_text_atomic
from dynasched_gym.results import aggregate, format_number
from dynasched_gym.viz._mpl import blank_figure, import_matplotlib, palette, save_figure
from scripts import evaluate
from scripts.interrupts import interrupted_exit
from scripts.overrides import (
    check_added_keys,
    checked_main,
    job_folder,
    mapping_setting,
    output_folder,
    setting_errors_exit,
    settings_checked,
)

#: PPO entrants: label -> the observability its checkpoint must have been trained on.
PPO_LEVELS = {"ppo:concise": "concise", "ppo:full": "full"}
#: The LLM settings the experiment sets per entrant (from levels= and variants=), at conf/agent/llm.yaml's defaults.
SWEPT = {"level": "L2", "variant": "none"}
#: The settings that list values.
LISTS = ("tiers", "sizes", "levels", "variants", "baselines")
TRAIN_FULL = ("python -m scripts.train env.tier=<tier> env.observability=full, then ppo.full=<run dir>/model.zip "
              "(or ppo.full={<tier>: <path>, ...})")
COST_FIELDS = ("episodes", "decisions", "requests_per_decision", "prompt_tokens_per_decision",
               "completion_tokens_per_decision", "prompt_chars_per_decision", "tokens_per_episode", "fallback_rate",
               "cache_hits", "latency_s")


@dataclass
class Report:
    """What a run produced: its rows, the aggregated entries, LLM cost per agent, notes and the files written."""

    rows: list[dict[str, Any]]
    entries: list[dict[str, Any]]
    cost: dict[str, dict[str, float]]
    notes: list[str]
    markdown: str
    files: list[Path]


def _llm_labels(cfg: DictConfig) -> list[str]:
    """The LLM entrants' labels: one per level of ``levels``, then one per prompt variant of ``variants``."""
    return [agent_name(lv) for lv in cfg.levels] + [agent_name(VARIANT_LEVEL[v], v) for v in cfg.variants]


def _model(cfg: DictConfig) -> str:
    return "no LLM" if OmegaConf.is_missing(cfg.agent, "model") else cfg.agent.model


def _checkpoint(value: Any, tier: str, key: str) -> str | None:
    """A PPO checkpoint setting ``key`` (``ppo.<level>``) for ``tier``: ``shipped`` / ``shipped:full`` (resolved by
    ``scripts.evaluate``, skipped with a note where none ships), a path (made absolute; a ValueError naming the key
    when the file does not exist), or a {tier: path} mapping (None: none)."""
    if isinstance(value, Mapping):
        unknown = sorted(map(str, set(value) - set(TIERS)))
        if unknown:  # a misspelt tier read as "no checkpoint for this tier"
            raise ValueError(f"{key}.{unknown[0]}: no such tier; a {{tier: path}} map takes {', '.join(TIERS)}")
        value, key = value.get(tier), f"{key}.{tier}"
    if value in (None, ""):
        return None
    return str(value) if evaluate.is_shipped(value) else evaluate.existing_checkpoint(value, key)


def entrants(cfg: DictConfig, tier: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The ``scripts.evaluate`` agent groups of one tier (label -> group) and notes on what is left out."""
    if (cfg.levels or cfg.variants) and OmegaConf.is_missing(cfg.agent, "model"):
        raise ValueError("agent.model is required: e.g. agent.model=Qwen/Qwen2.5-7B-Instruct "
                         "agent.base_url=http://localhost:8000/v1 (or levels=[] variants=[] for PPO alone)")
    llm = OmegaConf.to_container(cfg.agent, resolve=True)
    for key, swept in SWEPT.items():  # set per entrant below: another value would be overwritten unseen
        if llm.get(key) != swept:
            raise ValueError(f"agent.{key}={llm.get(key)}: the experiment sets each LLM's level from levels= and its "
                             f"prompt variant from variants=; leave agent.{key} at {swept}")
    env = OmegaConf.to_container(cfg.env, resolve=True)
    groups: dict[str, dict[str, Any]] = {}
    # each group names the config keys its errors are reported under (scripts.evaluate.agent_specs)
    for level in cfg.levels:
        groups[agent_name(level)] = {"names": ["llm"], "kwargs": {**llm, "level": level, "variant": "none"},
                                     "env": env, "where": "agent", "env_key": "env"}
    for variant in cfg.variants:
        level = VARIANT_LEVEL[variant]
        groups[agent_name(level, variant)] = {"names": ["llm"], "kwargs": {**llm, "level": level, "variant": variant},
                                              "env": env, "where": "agent", "env_key": "env"}
    for rule in cfg.baselines:
        groups[rule] = {"names": [rule], "kwargs": {}, "env": env, "where": "baselines", "env_key": "env"}
    notes = []
    unknown = sorted(map(str, set(cfg.ppo) - set(PPO_LEVELS.values())))
    if unknown:  # a misspelt level ran without that policy, reported as "no checkpoint given"
        raise ValueError(f"ppo.{unknown[0]}: no such setting; ppo has {', '.join(PPO_LEVELS.values())}")
    for label, level in PPO_LEVELS.items():
        checkpoint = _checkpoint(cfg.ppo.get(level), tier, f"ppo.{level}")
        if checkpoint is None:
            notes.append(f"{label} on {tier}: not run, no checkpoint given (ppo.{level}=null); no numbers are "
                         f"reported for it." + (f" Train one with {TRAIN_FULL}." if level == "full" else ""))
            continue
        groups[label] = {"names": ["ppo"], "kwargs": {"checkpoint": checkpoint}, "env": {}, "where": f"ppo.{level}",
                         "key": f"ppo.{level}", "env_key": f"ppo.{level}"}
    for label, group in groups.items():
        group["label"] = label
    return groups, notes


def evaluation_config(cfg: DictConfig, tier: str, groups: Mapping[str, Any]) -> DictConfig:
    """The ``scripts.evaluate`` configuration of one tier."""
    return OmegaConf.create({
        "agent": {f"g{i}": group for i, group in enumerate(groups.values())}, "ppo": None, "tiers": [tier],
        "sizes": cfg.sizes, "seeds": OmegaConf.to_container(cfg.seeds), "objective": cfg.objective,
        "store": cfg.store, "workers": cfg.workers, "validate": cfg.validate, "progress": cfg.progress})


def _check_ppo(cfg: DictConfig, tier: str, groups: Mapping[str, Any]) -> None:
    """Each PPO checkpoint must have the observation space its label says (a mislabelled one is an error).

    Each is planned alone: ``scripts.evaluate`` keeps one entrant per configuration, so the same
    checkpoint given as both ``concise`` and ``full`` would otherwise pass as ``concise`` only.
    """
    for label, want in PPO_LEVELS.items():
        if label not in groups:
            continue
        for entrant, _, size, _ in evaluate.plan(evaluation_config(cfg, tier, {label: groups[label]})).episodes:
            got = entrant.config.get("env", {}).get("observability")
            if got != want:
                raise ValueError(f"ppo.{want} for {tier}/{size} ({groups[label]['kwargs']['checkpoint']}) was trained "
                                 f"on {got!r} observations, not {want!r}")


def llm_cost(rows: Sequence[Mapping[str, Any]], by: Sequence[str] = ("agent",)) -> dict[Any, dict[str, float]]:
    """Per group of rows with usage counters (LLM agents; ``by``: the row fields of the group key, one field: the
    value itself), over the ``ok`` rows: the cost figures of :data:`COST_FIELDS`, per decision except
    ``fallback_rate``, the share of the decisions that asked the model (more than one pair) played by the fallback."""
    totals: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        usage = row.get("usage")
        if row["status"] != "ok" or not usage:
            continue
        t = totals[row[by[0]] if len(by) == 1 else tuple(row[f] for f in by)]
        t["episodes"] += 1
        for key in ("decisions", "single_candidate", "requests", "prompt_tokens", "completion_tokens", "total_tokens",
                    "prompt_chars", "fallbacks", "cache_hits", "latency_s"):
            t[key] += usage.get(key, 0)
    cost = {}
    for agent, t in totals.items():
        d = max(t["decisions"], 1)
        cost[agent] = {"episodes": t["episodes"], "decisions": t["decisions"],
                       "requests_per_decision": t["requests"] / d,
                       "prompt_tokens_per_decision": t["prompt_tokens"] / d,
                       "completion_tokens_per_decision": t["completion_tokens"] / d,
                       "prompt_chars_per_decision": t["prompt_chars"] / d,
                       "tokens_per_episode": t["total_tokens"] / t["episodes"],
                       # a decision with one pair neither asks the model nor falls back: it would dilute the rate
                       "fallback_rate": t["fallbacks"] / max(t["decisions"] - t["single_candidate"], 1),
                       "cache_hits": t["cache_hits"], "latency_s": t["latency_s"] / d}
    return cost


def _order(labels: Sequence[str], cfg: DictConfig) -> list[str]:
    """Agents in table order: the LLM by level, its variants, the rules, PPO; anything else after."""
    first = [*_llm_labels(cfg), *cfg.baselines, *PPO_LEVELS]
    return [a for a in first if a in labels] + sorted(set(labels) - set(first))


def markdown(cfg: DictConfig, entries: Sequence[Mapping[str, Any]], cost: Mapping[str, Mapping[str, float]],
             notes: Sequence[str], skipped: Sequence[str]) -> str:
    """The report: objective per agent and tier, the LLM's cost per level, notes."""
    seeds = f"{cfg.seeds.start}..{cfg.seeds.start + cfg.seeds.count - 1}"
    lines = [f"# Observability experiment: {_model(cfg)}", "",
             f"Objective `{cfg.objective}` (lower is better), pool seeds {seeds}, mode `{cfg.agent.mode}`, refinement "
             f"`{cfg.agent.refinement}`. Mean over episodes [bootstrap 95 % CI]; `llm:oracle` sees the future (a "
             "clairvoyant ablation, not a fair agent).", ""]
    for size in cfg.sizes:
        mine = [e for e in entries if e["size"] == size]
        tiers = [t for t in cfg.tiers if any(e["tier"] == t for e in mine)]
        lines += [f"## Size {size}", "", "| agent | " + " | ".join(tiers) + " |", "|---" * (len(tiers) + 1) + "|"]
        by = {(e["agent"], e["tier"]): e for e in mine}
        for agent in _order([*{e["agent"] for e in mine}, *PPO_LEVELS], cfg):  # a PPO not run says so
            cells = []
            for tier in tiers:
                e = by.get((agent, tier))
                cells.append("not run" if e is None or not e["episodes"] else
                             f"{format_number(e['mean'])} [{format_number(e['ci_low'])}, {format_number(e['ci_high'])}]"
                             + (f" ({e['failed']} failed)" if e["failed"] else ""))
            lines.append(f"| {agent} | " + " | ".join(cells) + " |")
        lines.append("")
    if cost:
        lines += ["## LLM cost per decision (all tiers and sizes)", "",
                  "| agent | episodes | decisions | requests | prompt tokens | completion tokens | prompt chars | "
                  "tokens / episode | fallbacks | cache hits | latency s |", "|---" * 11 + "|"]
        for agent in _order(list(cost), cfg):
            c = cost[agent]
            lines.append(f"| {agent} | {c['episodes']:.0f} | {c['decisions']:.0f} | {c['requests_per_decision']:.2f} | "
                         f"{c['prompt_tokens_per_decision']:.0f} | {c['completion_tokens_per_decision']:.1f} | "
                         f"{c['prompt_chars_per_decision']:.0f} | {c['tokens_per_episode']:.0f} | "
                         f"{100 * c['fallback_rate']:.1f} % | {c['cache_hits']:.0f} | {c['latency_s']:.3f} |")
        lines.append("")
    if notes or skipped:
        lines += ["## Notes", ""] + [f"- {n}" for n in [*notes, *(f"skipped: {s}" for s in skipped)]] + [""]
    return "\n".join(lines)


def csv_text(entries: Sequence[Mapping[str, Any]], cost: Mapping[tuple[str, str, str], Mapping[str, float]]) -> str:
    """One line per (size, tier, agent): the objective statistics and, for LLM agents, the cost figures of that
    (size, tier, agent) (``cost``: :func:`llm_cost` by ``("size", "tier", "agent")``)."""
    out = io.StringIO()
    fields = ("size", "tier", "agent", "episodes", "failed", "mean", "ci_low", "ci_high")
    writer = csv.writer(out)
    writer.writerow([*fields, *(f"llm_{f}" for f in COST_FIELDS)])
    for e in entries:
        c = cost.get((e["size"], e["tier"], e["agent"]), {})
        writer.writerow([e[f] for f in fields] + [c.get(f, "") for f in COST_FIELDS])
    return out.getvalue()


def plot(cfg: DictConfig, entries: Sequence[Mapping[str, Any]], cost: Mapping[str, Mapping[str, float]], size: str,
         path: Path) -> Path:
    """Per tier: objective vs level (95 % CI), rules and PPO as lines; last panel: prompt tokens per decision
    (``cost``: :func:`llm_cost` of this size's rows)."""

    levels = list(cfg.levels)
    tiers = [t for t in cfg.tiers if any(e["tier"] == t and e["size"] == size for e in entries)]
    by = {(e["agent"], e["tier"]): e for e in entries if e["size"] == size and e["episodes"]}
    references = [a for a in [*cfg.baselines, *PPO_LEVELS] if any((a, t) in by for t in tiers)]
    variants = [f"+{v}" for v in cfg.variants]
    hues = palette(2 * (len(references) + len(variants)) + 2)[2::2]  # every other colour after the LLM's: distinct
    colours = dict(zip([*references, *variants], hues))
    fig = blank_figure(None, 3.2 * (len(tiers) + 1), 3.4, 110)
    axes = np.atleast_1d(fig.subplots(1, len(tiers) + 1))
    x = np.arange(len(levels))
    for ax, tier in zip(axes, tiers):
        points = [(i, by[(agent_name(lv), tier)]) for i, lv in enumerate(levels) if (agent_name(lv), tier) in by]
        if points:
            xs = [i for i, _ in points]
            means = np.array([e["mean"] for _, e in points])
            err = np.array([[e["mean"] - e["ci_low"], e["ci_high"] - e["mean"]] for _, e in points]).T
            ax.errorbar(xs, means, yerr=err, marker="o", capsize=3, color=palette(1)[0], label="LLM")
        for k, variant in enumerate(cfg.variants):  # beside its level, offset to stay visible
            e = by.get((agent_name(VARIANT_LEVEL[variant], variant), tier))
            if e is not None and VARIANT_LEVEL[variant] in levels:
                ax.errorbar(levels.index(VARIANT_LEVEL[variant]) + 0.12 * (k + 1), e["mean"], marker="D", capsize=2,
                            yerr=[[e["mean"] - e["ci_low"]], [e["ci_high"] - e["mean"]]], linestyle="none",
                            color=colours[f"+{variant}"], label=f"+{variant}")
        for agent in references:
            if (agent, tier) in by:
                ax.axhline(by[(agent, tier)]["mean"], linestyle="--", linewidth=1, color=colours[agent], label=agent)
        ax.set_xticks(x, levels, fontsize=8)
        ax.set_title(tier, fontsize=9)
        ax.set_ylabel(f"mean {cfg.objective}", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3)
    if tiers:
        axes[0].legend(fontsize=6)
    labels = _llm_labels(cfg)
    tokens = [cost.get(label, {}).get("prompt_tokens_per_decision", 0.0) for label in labels]
    axes[-1].bar(np.arange(len(labels)), tokens, color=palette(1)[0])
    axes[-1].set_xticks(np.arange(len(labels)), [label.removeprefix("llm:") for label in labels], fontsize=7,
                        rotation=30)
    axes[-1].set_title("prompt tokens / decision", fontsize=9)
    axes[-1].tick_params(axis="y", labelsize=7)
    fig.suptitle(f"{_model(cfg)}: objective vs observability level (size {size}; lower is better)", fontsize=10)
    return save_figure(fig, path)


@settings_checked()
def run_settings(cfg: DictConfig) -> tuple[int, Path, list[str], dict[str, tuple[int, DictConfig]]]:
    """Every tier's settings, checked before the first evaluation, writing nothing (a ``-m`` sweep's jobs are checked
    so before the first job runs): ``resamples``, the report's folder (:func:`~scripts.overrides.job_folder`), the
    notes on the entrants, and per tier its number of agents and its ``scripts.evaluate`` configuration. ``cfg``'s
    lists are made lists (``tiers=easy``: one tier)."""
    notes: list[str] = []
    configs: dict[str, tuple[int, DictConfig]] = {}  # tier -> (agents, its scripts.evaluate configuration)
    resamples = check_integer("resamples", cfg.resamples, 1)
    mapping_setting(cfg, "seeds")  # read as mappings below; null failed naming neither
    mapping_setting(cfg, "ppo", " (ppo.concise=null ppo.full=null: no PPO)")
    out = output_folder("out", job_folder(cfg.out))
    import_matplotlib("matplotlib.figure")  # before the evaluation: the figures are drawn at its end
    choices = {"tiers": TIERS, "sizes": size_presets(), "levels": LEVELS, "variants": tuple(VARIANT_LEVEL)}
    for key in LISTS:  # one value given alone (tiers=easy) is a list of one, not of its letters
        cfg[key] = check_choices(key, cfg[key], choices[key]) if key in choices else as_list(cfg[key])
    for key in ("tiers", "sizes"):  # as scripts.evaluate's: tiers=[] evaluated nothing, an empty report, status 0
        if not cfg[key]:
            raise ValueError(f"{key} must name at least one of {tuple(choices[key])}, got []")
    for tier in cfg.tiers:
        groups, tier_notes = entrants(cfg, tier)
        notes += tier_notes
        _check_ppo(cfg, tier, groups)
        configs[tier] = len(groups), evaluation_config(cfg, tier, groups)
    return resamples, out, notes, configs


def check_job(cfg: DictConfig) -> Path:
    """:func:`run_settings` and each tier's evaluation's (:func:`scripts.evaluate.check_settings`: no agent makes a
    request before it plays), for a job of a ``-m`` sweep; the job's report folder."""
    _, out, _, configs = run_settings(cfg)
    for _, ecfg in configs.values():
        evaluate.check_settings(ecfg)
    return out


def run(cfg: DictConfig) -> Report:
    """Run (or resume) the experiment of ``cfg`` and write its report into ``cfg.out`` (a sweep job's into
    ``cfg.out/<job number>``: :func:`~scripts.overrides.job_folder`)."""
    resamples, out, notes, configs = run_settings(cfg)
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for tier, (agents, ecfg) in configs.items():
        print(f"tier {tier}: {agents} agents x {len(cfg.sizes)} size(s) x {cfg.seeds.count} seeds", file=sys.stderr)
        summary = evaluate.run(ecfg)
        print(summary, file=sys.stderr)
        rows += summary.rows
        skipped += summary.skipped
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    entries = aggregate(rows, resamples=resamples) if rows else []
    cost = llm_cost(rows)
    text = markdown(cfg, entries, cost, notes, skipped)
    files = [out / "observability.md", out / "observability.csv"]
    write_text_atomic(files[0], text)
    write_text_atomic(files[1], csv_text(entries, llm_cost(rows, by=("size", "tier", "agent"))))
    for size in cfg.sizes:
        if any(e["size"] == size for e in entries):
            mine = llm_cost([r for r in rows if r["size"] == size])  # prompts grow with the jobs: not all sizes'
            files.append(plot(cfg, entries, mine, size, out / f"observability-{cfg.objective}-{size}.png"))
    return Report(rows, entries, cost, notes, text, files)


@checked_main("observability", check_job)
def main(cfg: DictConfig) -> None:
    """Hydra entry point; exits with status 1 when a row failed (listed on stderr) or the evaluation stopped
    (:class:`scripts.evaluate.EvaluationStopped`, e.g. the LLM endpoint is unreachable: the message says why), with
    status 130 on Ctrl-C or SIGTERM (the message says how to resume), and with status 2 on a bad setting."""
    with setting_errors_exit(), interrupted_exit(evaluate.RESUME_NOTE):
        check_added_keys(cfg, free=("agent", "env", "ppo"))
        report = run(cfg)
    print(report.markdown)
    print("wrote " + ", ".join(str(f) for f in report.files))
    failed = [r for r in report.rows if r["status"] != "ok"]
    evaluate.report_failures(failed)
    if failed:
        sys.exit(1)


if __name__ == "__main__":  # run the importable module's main: worker processes unpickle its functions by name
    from scripts.observability import main as entry

    entry()
