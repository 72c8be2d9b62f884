"""The ```python blocks of docs/*.md run, so the examples a reader copies work (README.md's: test_readme.py).

Each file's blocks run in order in one namespace, as a script does (``__name__ == "__main__"``), in a fresh folder,
with private pool and LLM response caches; the claims their comments make are checked where that is cheap
(CHECKS). Every block runs: one too slow as written, or one that needs a model server, runs with the textual
substitutions of SUBSTITUTIONS, each of which must still match its doc.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from test_llm_client import ChatServer
from test_readme import PYTHON_BLOCK, run_python_blocks

from dynasched_gym import validate_schedule

DOCS = {path.name: path for path in sorted((REPO / "docs").glob("*.md"))
        if PYTHON_BLOCK.search(path.read_text(encoding="utf-8"))}

#: (doc, text found once in its blocks, what the test runs instead, why)
SUBSTITUTIONS = [
    ("environments.md", 'MaskablePPO("MlpPolicy", venv).learn(100_000)',
     'MaskablePPO("MlpPolicy", venv, n_steps=8, batch_size=64, n_epochs=1).learn(64)',
     "100,000 steps take minutes: one rollout of 8 steps per sub-env and one epoch still train through the adapter"),
    ("generation.md", "pool.prepare(range(1000))", "pool.prepare(range(2))",
     "a thousand instances take a minute of two cores: two still go through the spawned workers"),
    ("oracle.md", "time_limit=10.0", "time_limit=120.0",
     "the limit is wall time, and the test shares the cores with the suite's other worker (it failed once under load"
     " with helpers running beside make test, where it takes 5 s alone): the check still wants status optimal"),
    ("llm.md", 'base_url="http://localhost:8000/v1"', "base_url=chat_server_url",
     "no model server here: conftest's scripted one (its url is chat_server_url), answering each table's first id"),
]


def _environments(namespace: dict[str, Any], folder: Path) -> None:
    objective = namespace["env"].unwrapped.schedule().metrics["total_weighted_tardiness"]
    assert -namespace["episode_return"] == pytest.approx(objective)  # "equal (up to rounding)"
    assert (folder / "episode.json").is_file()
    assert namespace["rewards"].shape == (256,)
    assert namespace["model"].num_timesteps >= 64
    namespace["masker"].reset(seed=0)
    assert namespace["masker"].action_masks().tolist() == namespace["mk01"].unwrapped.action_masks().tolist()
    assert namespace["normalized"].norm_obs_keys == ["candidates", "machines", "global"]


def _generation(namespace: dict[str, Any], folder: Path) -> None:
    pool = namespace["pool"]
    assert sorted(path.name for path in pool.directory.glob("seed-*.json")) == [
        "seed-0.json", "seed-1.json", "seed-42.json"]
    assert namespace["inst"].name == "hard-medium-seed42"


def _llm(namespace: dict[str, Any], folder: Path) -> None:
    usage = namespace["agent"].episode_usage
    assert usage["requests"] > 0 and usage["fallbacks"] == 0  # the server answered every decision asked
    assert validate_schedule(namespace["schedule"]).ok


def _oracle(namespace: dict[str, Any], folder: Path) -> None:
    result = namespace["result"]
    assert (result.objective, result.bound, result.status) == (40.0, 40.0, "optimal")
    assert validate_schedule(result.schedule).ok


def _visualization(namespace: dict[str, Any], folder: Path) -> None:
    from matplotlib.figure import Figure

    assert isinstance(namespace["fig"], Figure)
    assert (folder / "gantt.html").is_file() and (folder / "timeline.png").is_file()
    assert namespace["t"][0] == 0


#: what each doc's blocks are said to do, checked on the namespace they leave and their folder
CHECKS: dict[str, Callable[[dict[str, Any], Path], None]] = {
    "environments.md": _environments, "generation.md": _generation, "llm.md": _llm, "oracle.md": _oracle,
    "visualization.md": _visualization}


def test_substitutions_and_checks_name_docs_with_python_blocks() -> None:
    assert {doc for doc, *_ in SUBSTITUTIONS} | CHECKS.keys() <= DOCS.keys()


@pytest.mark.parametrize("name", DOCS)
def test_doc_python_blocks_run_in_order(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        server: ChatServer) -> None:
    blocks = PYTHON_BLOCK.findall(DOCS[name].read_text(encoding="utf-8"))
    for doc, text, replacement, _why in SUBSTITUTIONS:
        if doc == name:
            assert sum(block.count(text) for block in blocks) == 1, f"{name} no longer has {text!r} once"
            blocks = [block.replace(text, replacement) for block in blocks]
    monkeypatch.chdir(tmp_path)  # the examples write files into the current folder
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "pools"))
    monkeypatch.setenv("DYNASCHED_LLM_CACHE", str(tmp_path / "llm"))
    namespace: dict[str, Any] = {"__name__": "__main__", "chat_server_url": server.url}
    run_python_blocks(blocks, f"docs/{name}", namespace)
    if name in CHECKS:
        CHECKS[name](namespace, tmp_path)
