"""Every ``python -m scripts.<name> ...`` command of README.md and docs/ still runs as written, as far as its
command line goes: a Hydra script's overrides pass the script's own checks (launcher, config groups, keys) and
compose, and an argparse script parses its arguments. Placeholders (``<tier>``, ``<checkpoint.zip>``, ``H``)
are filled in first; config files the docs show (a YAML block whose first line is ``# path.yaml``) are written
where the command expects them. Values are not checked here (the scripts' own tests do that), nor is anything run.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from scripts.overrides import check_config_groups, check_launcher, check_setting_keys

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`]*?python\s+-m\s+scripts\.[^`]*)`")
#: the Hydra scripts and their primary configs (the others take argparse arguments)
HYDRA_CONFIGS = {"bench": "bench", "calibrate": "calibrate", "evaluate": "evaluate", "leaderboard": "leaderboard",
                 "observability": "observability", "train": "train/ppo"}
PLACEHOLDERS = [
    (re.compile(r"<0\\?\|1>"), "0"),
    (re.compile(r"<tier>"), "medium"),
    (re.compile(r"<[A-Z]>"), "1"),  # ppo_<N>_steps.zip
    (re.compile(r"<[^<>\s]*\.zip>"), "agents/checkpoints/ppo-medium-small.zip"),
    (re.compile(r"<[a-z_]+>"), "0"),  # a number (<seed>, <start>), or in a path (<date>_<time>)
    (re.compile(r"\[(--[a-z-]+(?: [^\]\s]+)?)\]"), r"\1"),  # an optional argument: [--size large]
    (re.compile(r"\[([\w.]+=[^\]\s]*)\]"), r"\1"),  # an optional override: [env.forecast_auto_rules=4]
    (re.compile(r"(--[a-z-]+) [A-Z]\b"), r"\1 1"),  # a number's name: --horizon H
]


def _commands(doc: Path) -> list[str]:
    """The script commands of ``doc``: lines of its code blocks (continued lines joined) and inline code spans."""
    text = doc.read_text(encoding="utf-8")
    found = [line for _, block in FENCE.findall(text) for line in block.replace("\\\n", " ").splitlines()]
    found += [" ".join(span.split()) for span in INLINE.findall(FENCE.sub("", text))]
    commands = []
    for line in found:
        tokens = shlex.split(line.replace("\\|", "|"), comments=True) if "python -m scripts." in line else []
        start = next((i for i, token in enumerate(tokens) if token == "python"), None)
        # a command that starts with python, after environment variables (not one quoted in a comment)
        if start is not None and all("=" in token for token in tokens[:start]) and tokens[start + 1] == "-m":
            commands.append(line)
    return commands


def _filled(command: str) -> list[str]:
    """``command``'s arguments after ``python -m``, placeholders filled in."""
    for pattern, value in PLACEHOLDERS:
        command = pattern.sub(value, command)
    tokens = shlex.split(command.replace("\\|", "|"), comments=True)
    return tokens[tokens.index("python") + 2:]


def _shown_files(doc: Path) -> dict[str, str]:
    """The config files ``doc`` shows: YAML blocks whose first line is ``# <relative path>.yaml``."""
    files = {}
    for language, block in FENCE.findall(doc.read_text(encoding="utf-8")):
        first = block.splitlines()[0] if block else ""
        if language == "yaml" and re.fullmatch(r"# [\w./-]+\.yaml", first):
            files[first[2:]] = block
    return files


CASES = [pytest.param(doc, command, id=f"{doc.name}:{command[:70]}") for doc in DOCS for command in _commands(doc)
         if "scripts.<name>" not in command]


def test_the_docs_have_commands_of_every_script() -> None:
    """The extraction finds the commands (a change of format would leave this test checking nothing)."""
    modules = {_filled(command)[0].removeprefix("scripts.") for _, command in (case.values for case in CASES)}
    assert set(HYDRA_CONFIGS) | {"compare_agents", "fjsp_table", "validate_ssi", "tier_acceptance",
                                 "calibrate_compare"} <= modules
    assert len(CASES) >= 50


class _Parsed(Exception):
    """Raised by the patched ``parse_args`` once the arguments parsed."""


@pytest.mark.parametrize(("doc", "command"), CASES)
def test_a_documented_command_line_is_accepted(doc: Path, command: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in _shown_files(doc).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    module, *arguments = _filled(command)
    script = module.removeprefix("scripts.")
    if script not in HYDRA_CONFIGS:
        parse_args = argparse.ArgumentParser.parse_args

        def parsed(parser: argparse.ArgumentParser, args: list[str] | None = None, namespace: object = None) -> None:
            parse_args(parser, args, namespace)
            raise _Parsed

        monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed)
        with pytest.raises(_Parsed):
            importlib.import_module(module).main(arguments)
        return
    multirun = "-m" in arguments
    overrides = [argument for argument in arguments if argument != "-m"]
    config = HYDRA_CONFIGS[script]
    check_launcher(overrides, multirun)
    check_config_groups(overrides, None, config)
    check_setting_keys(overrides, None, config)
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        compose(config, overrides=_first_job(overrides), return_hydra_config=True)


def _first_job(overrides: list[str]) -> list[str]:
    """The overrides of a sweep's first job (each swept value's first)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return BasicSweeper.split_arguments(parsed, None)[0][0]
