"""Tables and lists of the docs that restate code or config facts match them: the env's arguments and their
defaults and choices, the composite rules, the rule tables, the lookahead defaults, the observation widths, the
tier priors, the SESC knob ranges and the SSI bands. The prose around them is read by people; these are the parts
that drift silently."""

from __future__ import annotations

import ast
import inspect
import re

import pytest
import yaml
from conftest import REPO

from dynasched_gym.agents.lookahead import DEFAULTS
from dynasched_gym.core.rules import COMPOSITE_RULES, JOB_RULES, MACHINE_RULES
from dynasched_gym.envs.dfjsp.env import RENDER_MODES, DFJSPEnv
from dynasched_gym.envs.dfjsp.features import BLOCKS, OBSERVABILITY, num_columns
from dynasched_gym.envs.dfjsp.types import INVALID_ACTION_POLICIES, MAX_CANDIDATES_LIMIT
from dynasched_gym.generation import TIER_BANDS, TIERS, Scenario, draft
from dynasched_gym.generation import sesc as sesc_module
from dynasched_gym.generation.realised import measure
from dynasched_gym.instance import BREAKDOWN_POLICIES
from dynasched_gym.metrics import OBJECTIVES

DOCS = REPO / "docs"
TICKED = re.compile(r"`([^`]*)`")


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _table(text: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``header`` (separator row left out)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def _choices(cell: str) -> tuple[str, ...]:
    """The alternatives of the first ``a \\| b \\| c`` code span of ``cell``."""
    span = next(span for span in TICKED.findall(cell) if "|" in span)
    return tuple(choice.strip() for choice in span.replace("\\|", "|").split("|"))


def test_env_arguments_table_is_the_signature_with_its_defaults_and_choices() -> None:
    rows = _table(_text("environments.md"), "| argument | default |")
    parameters = {name: p for name, p in inspect.signature(DFJSPEnv.__init__).parameters.items() if name != "self"}
    documented = [TICKED.match(name).group(1) for name, *_ in rows]
    assert documented == list(parameters), "docs/environments.md 'Arguments' lists other arguments than DFJSPEnv"
    cells = {name: (default, meaning) for name, (_, default, meaning) in zip(documented, rows, strict=True)}
    for name, parameter in parameters.items():
        shown = ast.literal_eval(TICKED.search(cells[name][0]).group(1))
        assert shown == parameter.default, f"{name}: documented default {shown!r}, code {parameter.default!r}"
    choices = {"tier": TIERS, "objective": OBJECTIVES, "observability": OBSERVABILITY, "render_mode": RENDER_MODES}
    for name, values in choices.items():
        assert _choices(cells[name][1]) == tuple(values), name
    assert f"1 to {MAX_CANDIDATES_LIMIT}" in cells["max_candidates"][1]
    for name, values in (("breakdown_policy", BREAKDOWN_POLICIES), ("invalid_action", INVALID_ACTION_POLICIES)):
        assert [v for v in TICKED.findall(cells[name][1]) if v in values] == list(values), name


@pytest.mark.parametrize("doc", ["environments.md", "agents.md"])
def test_composite_rules_as_listed(doc: str) -> None:
    text = " ".join(_text(doc).split())
    listed = re.search(r"COMPOSITE_RULES`\)?:? \(?`([^`]*)`", text)
    assert listed, f"docs/{doc} no longer lists COMPOSITE_RULES after naming it"
    assert tuple(rule.strip() for rule in listed.group(1).split(",")) == COMPOSITE_RULES
    if doc == "environments.md":  # the ids table states the rules env's action space
        assert f"`Discrete({len(COMPOSITE_RULES)})`" in text


def test_rule_tables_name_every_rule() -> None:
    text = _text("agents.md")
    job_rows = _table(text, "| job rule | priority value")
    job_rules = [TICKED.match(cell).group(1) for row in job_rows for cell in (row[0], row[3]) if cell]
    assert sorted(job_rules) == sorted(JOB_RULES)
    machine_rows = _table(text, "| machine rule | picks |")
    assert [TICKED.match(row[0]).group(1) for row in machine_rows] == list(MACHINE_RULES)


def test_lookahead_defaults_table() -> None:
    rows = _table(_text("agents.md"), "| objective | base rule | rollout rules |")
    documented = {}
    for objectives, base, rollouts in rows:
        for objective in objectives.split(","):
            documented[objective.strip()] = (TICKED.match(base).group(1),
                                             tuple(rule.strip() for rule in rollouts.split(",")))
    assert documented == DEFAULTS


def test_observation_widths_per_level() -> None:
    widths = [tuple(num_columns(BLOCKS[key], level) for key in ("candidates", "machines", "global"))
              for level in range(len(OBSERVABILITY))]
    stated = ", ".join(f"{c}, {m}, {g} (`{name}`)" for (c, m, g), name in zip(widths, OBSERVABILITY, strict=True))
    assert f"F_c, F_m, F_g = {stated}." in " ".join(_text("environments.md").split())
    c, m, g = widths[0]  # what the shipped (concise) policies see
    assert f"`candidates` (K, {c}), `machines` (M, {m}), `global` ({g},)" in " ".join(_text("agents.md").split())


def _range(text: str) -> list[float]:
    low, high = text.split("–")
    return [float(low), float(high)]


def test_tier_priors_table_is_conf_tier() -> None:
    rows = _table(_text("generation.md"), "| target | easy | medium | hard | extreme |")
    for target, *cells in rows:
        for tier, cell in zip(TIERS, cells, strict=True):
            config = yaml.safe_load((REPO / "conf" / "tier" / f"{tier}.yaml").read_text(encoding="utf-8"))
            base, _, per_size = cell.partition(" (")
            assert _range(base) == config["prior"][target], (tier, target)
            documented = {size: _range(value) for size, value in
                          (part.split() for part in per_size.rstrip(")").split(", ") if part)}
            configured = {size: ranges[target] for size, ranges in config.get("sizes", {}).items() if target in ranges}
            assert documented == configured, (tier, target)
    targets = yaml.safe_load((REPO / "conf" / "tier" / "easy.yaml").read_text(encoding="utf-8"))["prior"]
    assert [row[0] for row in rows] == list(targets)  # every prior target has its row


@pytest.mark.parametrize(("doc", "header"), [("generation.md", "| tier | SSI score |"), ("ssi.md", "| tier | score |")])
def test_tier_bands_table(doc: str, header: str) -> None:
    rows = _table(_text(doc), header)
    assert [row[0] for row in rows] == list(TIERS)
    for tier, band, *_ in rows:
        low, high = TIER_BANDS[tier]
        closed = tier == TIERS[-1]  # extreme's bound is past 100 only to take the score's rounding
        assert band == (f"[{low:g}, {100 if closed else high:g}{']' if closed else ')'}"), tier


def test_sesc_knob_table_gives_each_edit_its_bisection_range(monkeypatch) -> None:
    """docs/generation.md's knob table: a bisected target's range is the one its edit hands ``_solve``, and a closed
    form edit bisects nothing."""
    searched: dict[str, tuple[float, float]] = {}

    def solve(_d, _knob, metric: str, _target: float, lo: float, hi: float, _tol: float) -> bool:
        searched[metric] = (lo, hi)
        return False

    monkeypatch.setattr(sesc_module, "_solve", solve)
    windowed = Scenario.from_dict({**Scenario.preset("small").to_dict(), "bottleneck_windows": [
        {"group": "GroupA", "start": 0.2, "end": 0.4, "utilization": 0.9}]})
    d = draft(windowed, 0)
    metrics = measure(d.metric_inputs())
    rows = _table(_text("generation.md"), "| target | knob | edit |")
    for target, _knob, edit in rows:
        name = TICKED.match(target).group(1).replace("[i]", "[0]")
        sesc_module._edit(name)(d, metrics, metrics[name], 0.05)
        bisected = re.match(r"bisection in \[([\d.]+), ([\d.]+)\]", edit)
        assert searched.get(name) == (tuple(float(x) for x in bisected.groups()) if bisected else None), name
    assert [TICKED.match(row[0]).group(1) for row in rows] == [*sesc_module._EDITS, "bottleneck_window[i]"]
