"""Every ``python -m scripts.<name> ...`` and ``dynasched-gym ...`` command of README.md and docs/ still runs as
written, as far as its command line goes: a Hydra script's overrides pass the script's own checks (launcher, config
groups, keys) and compose, an argparse script parses its arguments, and the package's command has the subcommand,
the options and the choices used. Placeholders (``<tier>``, ``<checkpoint.zip>``, ``H``) are filled in first;
config files the docs show (a YAML block whose first line is ``# path.yaml``) are written where the command expects
them. Values are not checked here (the scripts' own tests do that), nor is anything run.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.override_parser.overrides_parser import OverridesParser

from dynasched_gym.cli import build_parser
from scripts.overrides import _job_overrides, check_command_line

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`]*?(?:python\s+-m\s+scripts\.|dynasched-gym\s)[^`]*)`")
#: the Hydra scripts and their primary configs (the others take argparse arguments)
HYDRA_CONFIGS = {"bench": "bench", "calibrate": "calibrate", "evaluate": "evaluate", "leaderboard": "leaderboard",
                 "observability": "observability", "train": "train/ppo"}
PLACEHOLDERS = [
    (re.compile(r"<0\\?\|1>"), "0"),
    (re.compile(r"<tier>"), "medium"),
    (re.compile(r"<[A-Z]>"), "1"),  # ppo_<N>_steps.zip
    (re.compile(r"<[^<>\s]*\.?zip>"), "agents/checkpoints/ppo-medium-small.zip"),
    (re.compile(r"<[a-z_]+>"), "0"),  # a number (<seed>, <start>), or in a path (<date>_<time>)
    (re.compile(r"\[(--[a-z-]+(?: [^\]\s]+)?)\]"), r"\1"),  # an optional argument: [--size large]
    (re.compile(r"\[([\w.]+=[^\]\s]*)\]"), r"\1"),  # an optional override: [env.forecast_auto_rules=4]
    (re.compile(r"(--[a-z-]+) [A-Z]\b"), r"\1 1"),  # a number's name: --horizon H
    (re.compile(r"(--[a-z-]+ \w+)(?:\|\w+)+"), r"\1"),  # alternatives: --by machine|job
]


def _commands(doc: Path) -> list[list[str]]:
    """The commands of ``doc`` (in its code blocks, continued lines joined, and inline code spans): each one's words
    from ``scripts.<name>`` or ``dynasched-gym`` on, placeholders filled in."""
    text = doc.read_text(encoding="utf-8")
    lines = [line for _, block in FENCE.findall(text) for line in block.replace("\\\n", " ").splitlines()]
    lines += [" ".join(span.split()) for span in INLINE.findall(FENCE.sub("", text))]
    commands = []
    for line in lines:
        for pattern, value in PLACEHOLDERS:
            line = pattern.sub(value, line)
        try:
            words = shlex.split(line.replace("\\|", "|"), comments=True)
        except ValueError:  # not a command: prose with an apostrophe
            continue
        start = next((i for i, word in enumerate(words) if word in ("python", "dynasched-gym")), None)
        if start is None or not all("=" in word for word in words[:start]):  # only environment variables before
            continue
        words = words[start:]
        if words[0] == "python":  # python -m scripts.<name>, not python -m scripts.<name> in prose
            if len(words) < 3 or words[1] != "-m" or not re.fullmatch(r"scripts\.[a-z_]+", words[2]):
                continue
            words = words[2:]
        commands.append(words)
    return commands


def _shown_files(doc: Path) -> dict[str, str]:
    """The config files ``doc`` shows: YAML blocks whose first line is ``# <relative path>.yaml``."""
    files = {}
    for language, block in FENCE.findall(doc.read_text(encoding="utf-8")):
        first = block.splitlines()[0] if block else ""
        if language == "yaml" and re.fullmatch(r"# [\w./-]+\.yaml", first):
            files[first[2:]] = block
    return files


CASES = [pytest.param(doc, words, id=f"{doc.name}:{' '.join(words)[:70]}") for doc in DOCS for words in _commands(doc)]


def test_the_docs_have_commands_of_every_script() -> None:
    """The extraction finds the commands (a change of format would leave this test checking nothing)."""
    programs = {words[0].removeprefix("scripts.") for _, words in (case.values for case in CASES)}
    assert set(HYDRA_CONFIGS) | {"compare_agents", "fjsp_table", "validate_ssi", "tier_acceptance",
                                 "calibrate_compare", "dynasched-gym"} <= programs
    assert len(CASES) >= 90


class _Parsed(Exception):
    """Raised by the patched ``parse_args`` once the arguments parsed."""


@pytest.mark.parametrize(("doc", "words"), CASES)
def test_a_documented_command_line_is_accepted(doc: Path, words: list[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in _shown_files(doc).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    program, *arguments = words
    if program == "dynasched-gym":  # its arguments name files: only the words are checked
        _check_cli_words(arguments)
        return
    script = program.removeprefix("scripts.")
    if script not in HYDRA_CONFIGS:
        parse_args = argparse.ArgumentParser.parse_args

        def parsed(parser: argparse.ArgumentParser, args: list[str] | None = None, namespace: object = None) -> None:
            parse_args(parser, args, namespace)
            raise _Parsed

        monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed)
        with pytest.raises(_Parsed):
            importlib.import_module(program).main(arguments)
        return
    multirun = "-m" in arguments
    overrides = [argument for argument in arguments if argument not in ("-m", "--help")]  # Hydra's, not overrides
    config = HYDRA_CONFIGS[script]
    check_command_line(overrides, multirun, None, config)  # as the script's checked_main
    first_job = _job_overrides(OverridesParser.create().parse_overrides(overrides))  # a sweep's first job
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        compose(config, overrides=first_job, return_hydra_config=True)


def _check_cli_words(arguments: list[str]) -> None:
    """``dynasched-gym <arguments>`` names a subcommand, and options of it, with a value among their choices."""
    subcommands = next(action for action in build_parser()._actions
                       if isinstance(action, argparse._SubParsersAction)).choices
    assert arguments[0] in subcommands, f"no subcommand {arguments[0]!r}: {sorted(subcommands)}"
    options = subcommands[arguments[0]]._option_string_actions
    for word, value in zip(arguments, [*arguments[1:], None]):
        if word.startswith("--"):
            assert word in options, f"{arguments[0]} has no option {word}: {sorted(options)}"
            choices = options[word].choices
            assert choices is None or value in choices, f"{word} {value}: not one of {choices}"
