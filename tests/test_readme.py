"""The README's Python examples run as written, so the first code a user copies works."""

from __future__ import annotations

import re

from conftest import REPO

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def run_python_blocks(blocks: list[str], source: str, namespace: dict) -> None:
    """Execute ``blocks`` in order in ``namespace``; a traceback names ``source`` and the block's number."""
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{source} python block {number}", "exec"), namespace)


def test_readme_python_examples_run_in_order(tmp_path, monkeypatch):
    blocks = PYTHON_BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 3, "the README's Quickstart lost its Python examples"
    monkeypatch.chdir(tmp_path)  # the examples write their schedule into the current folder
    namespace: dict = {"__name__": "__readme__"}
    run_python_blocks(blocks, "README.md", namespace)
    assert (tmp_path / "mk01-mwkr.json").is_file()
    assert namespace["schedule"].metrics["total_weighted_tardiness"] >= 0


def test_readme_documentation_lists_every_docs_page():
    """The README's Documentation section is how a reader finds a page (the scripts' fine print moved out of Set-up
    into docs/scripts.md): every page of docs/ is listed there (that every page named exists: test_docs_references)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    pages = {path.name for path in (REPO / "docs").glob("*.md")}
    assert pages <= set(re.findall(r"`docs/([\w-]+\.md)`", section)), "a docs/ page the README's Documentation lacks"
    assert "(docs/scripts.md)" in text.split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]  # Set-up links its details
