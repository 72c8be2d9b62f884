"""References to the docs resolve: the relative links of README.md and docs/*.md (the file, and for an ``#anchor``
a heading with that GitHub slug), and in every tracked text file the citations of a docs section (a page, then the
section's title in quotes: a heading or a bold lead-in of that page; or ``step N`` of its numbered list), the
citations within a page ('see "Title"', '"Title" below') and the plain mentions of a docs page. The docs get
restructured for readability while the prose, docstrings, error messages and configs citing them stay as they were;
nothing else notices a title going away.

A failure names the citing file and line, the page and title cited, and the page's nearest heading or lead-in.
"""

from __future__ import annotations

import difflib
import functools
import re
import subprocess
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

FENCE = re.compile(r"\s*(```|~~~)")
HEADING = re.compile(r"#{1,6}\s+(.*?)[\s#]*$")
#: a bold lead-in: ``**Title.**`` or ``**Title**`` opening a line, a list item's or not
LEAD_IN = re.compile(r"\s*(?:[-*+]\s+|\d+\.\s+)?\*\*([^*]+?)\.?\*\*")
CODE_SPAN = re.compile(r"(`+).*?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
LINK_DEFINITION = re.compile(r"\s*\[[^\]]+\]:\s+<?([^\s<>]+)")
EXTERNAL = re.compile(r"[a-zA-Z][\w+.-]*:|//")  # http:, mailto:, protocol-relative
#: a page as the repository root names it: README.md or docs/<name>.md (not some other folder's docs/)
PAGE = r"(?<![\w./-])(?P<page>README|docs/[\w-]+)\.md"
#: "Title", 'Title' (inside a double-quoted string), or unquoted and capitalised as the last words of a parenthesis
TITLE = r"""(?:"(?P<dq>[^"\s][^"]*)"|'(?P<sq>[^'\s][^']*)'|(?P<unquoted>[A-Z][\w ]*)(?=\)))"""
CITATIONS = [
    re.compile(PAGE + r"(?:, |: | section | )" + TITLE),  # docs/agents.md, "PPO"
    re.compile(r'"(?P<dq>[^"\s][^"]*)"(?: section)? (?:of|in) ' + PAGE),  # the "PPO" section of docs/agents.md
    re.compile(PAGE + r", (?P<step>step \d+)\b"),  # docs/ssi.md, step 3: the formula's numbered steps
]
STEP = re.compile(r"\s*(\d+)\.\s")
#: a docs page's citations of its own sections: (see "Known limits"), ("Limits" below)
IN_PAGE = re.compile(r'\b[Ss]ee "(?P<dq>[^"\s][^"]*)"(?! (?:of|in) )|"(?P<dq2>[^"\s][^"]*)",? (?:below|above)\b')
MENTION = re.compile(r"(?<![\w./-])(docs/[\w-]+\.md)")
#: a line's indentation and comment marker (Python, YAML, a Makefile), left out where a wrapped citation is joined
CONTINUATION = re.compile(r"[ \t]*(?:#+:?[ \t]+)?")


def slug(heading: str) -> str:
    """GitHub's anchor of ``heading``: lower case, punctuation (Markdown's backticks and asterisks too) dropped,
    spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


@dataclass(frozen=True)
class Page:
    """What of a Markdown page a reference may name."""

    headings: tuple[str, ...]
    lead_ins: tuple[str, ...]
    steps: tuple[str, ...]  # "step 1" for an item of a numbered list
    anchors: frozenset[str]
    words: str  # the page's text, whitespace collapsed

    def names(self) -> list[str]:
        return [*self.headings, *self.lead_ins, *self.steps]

    def has_section(self, title: str) -> bool:
        """Whether ``title`` names a heading, a bold lead-in or a numbered step of the page.

        Two leniencies, both from how titles are quoted: a heading's qualifier after ": ", " (" or a code span may
        be left out (the prose cites "Sweeps", "Scale" and "Happenings at one time" for "Sweeps: joblib, Ray,
        Slurm", "Scale: a number of jobs or a horizon" and "Happenings at one time `t`, in this order"), and a quote
        starting in lower case is a phrase of the page's text ("at the end"), not a title, so it must occur in it
        word for word. Anything else must equal a heading or lead-in exactly, case included.
        """
        title = " ".join(title.split())
        names = self.names()
        if title in names or title in [name.replace("`", "") for name in names]:
            return True
        if title[0].islower():
            return title in self.words
        return any(re.match(re.escape(title) + r"(?:: | \(| `)", name) for name in names)

    def nearest(self, title: str) -> str:
        return _nearest(title, self.names())


def _nearest(name: str, names: list[str]) -> str:
    found = difflib.get_close_matches(name, names, n=1, cutoff=0.0)
    return f"nearest: {found[0]!r}" if found else "none to choose from"


def _missing_page(page: str, root: Path) -> str | None:
    """The problem of naming ``page`` (relative to ``root``), with the nearest existing docs page; None if it is."""
    if (root / page).is_file():
        return None
    pages = [path.relative_to(root).as_posix() for path in markdown_pages(root)]
    return f"no such page ({_nearest(page, pages)})"


def _prose_lines(text: str) -> list[str]:
    """The lines of Markdown ``text`` with those of fenced code blocks blanked (a ``# comment`` there is no
    heading, a ``[x](y)`` no link), so line numbers still count from the top."""
    lines, fence = [], None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            lines.append(line)
            continue
        lines.append("")
    return lines


@functools.cache
def read_page(path: Path) -> Page:
    """The headings, lead-ins and anchors of Markdown page ``path``."""
    text = path.read_text(encoding="utf-8")
    lines = _prose_lines(text)
    headings = tuple(match.group(1) for line in lines if (match := HEADING.match(line)))
    anchors, seen = set(), {}
    for heading in headings:  # GitHub numbers a repeated slug: x, x-1, x-2
        base = slug(heading)
        anchors.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    lead_ins = tuple(match.group(1) for line in lines if (match := LEAD_IN.match(line)))
    steps = tuple(dict.fromkeys(f"step {match.group(1)}" for line in lines if (match := STEP.match(line))))
    words = " ".join(text.replace("`", "").replace("**", "").split())
    return Page(headings, lead_ins, steps, frozenset(anchors), words)


@dataclass(frozen=True)
class Reference:
    where: str  # file:line
    page: str  # the page or file named, relative to the repository root
    title: str | None  # a heading, a lead-in, an anchor; None: the page alone
    problem: str | None


def _joined(lines: list[str]) -> tuple[str, list[int]]:
    """``lines`` as one text, each line's indentation, comment marker and trailing blanks dropped and the lines
    joined by a space, so a citation wrapped over two lines reads as one; and where each line starts in it."""
    parts, starts, offset = [], [], 0
    for line in lines:
        part = CONTINUATION.sub("", line, count=1).rstrip()
        starts.append(offset)
        parts.append(part)
        offset += len(part) + 1
    return " ".join(parts), starts


def _line(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset)


def _section_problem(page: str, title: str, root: Path) -> str | None:
    if problem := _missing_page(page, root):
        return problem
    sections = read_page(root / page)
    return None if sections.has_section(title) else f"no such heading, bold lead-in or step ({sections.nearest(title)})"


def link_references(doc: Path, root: Path) -> Iterator[Reference]:
    """The relative links of Markdown page ``doc``, each checked: the file exists, and with an ``#anchor`` the
    target page has a heading of that slug."""
    lines = [CODE_SPAN.sub("", line) for line in _prose_lines(doc.read_text(encoding="utf-8"))]
    text, starts = _joined(lines)
    targets = [(_line(starts, match.start()), match.group(1)) for match in LINK.finditer(text)]
    targets += [(number, match.group(1)) for number, line in enumerate(lines, 1)
                if (match := LINK_DEFINITION.match(line))]
    for number, target in targets:
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        where = f"{doc.relative_to(root)}:{number}"
        shown = resolved.relative_to(root) if resolved.is_relative_to(root) else resolved
        if not resolved.exists():
            problem = f"link target {target!r} does not exist"
        elif anchor and resolved.suffix == ".md":
            page = read_page(resolved)
            problem = None if anchor in page.anchors else (
                f"no heading with this anchor ({_nearest(anchor, sorted(page.anchors))})")
        else:
            problem = None
        yield Reference(where, str(shown), anchor or None, problem)


def citation_references(path: Path, root: Path) -> Iterator[Reference]:
    """The citations of a docs section in text file ``path`` (and for a docs page, of its own sections)."""
    text = path.read_text(encoding="utf-8")
    joined, starts = _joined(text.splitlines())
    relative = path.relative_to(root)
    for pattern in CITATIONS:
        for match in pattern.finditer(joined):
            title = next(match.group(group) for group in ("dq", "sq", "unquoted", "step")
                         if group in pattern.groupindex and match.group(group))
            page = f"{match.group('page')}.md"
            yield Reference(f"{relative}:{_line(starts, match.start())}", page, title,
                            _section_problem(page, title, root))
    if relative.parent == Path("docs") and path.suffix == ".md":
        prose, starts = _joined(_prose_lines(text))
        for match in IN_PAGE.finditer(prose):
            title = match.group("dq") or match.group("dq2")
            yield Reference(f"{relative}:{_line(starts, match.start())}", relative.as_posix(), title,
                            _section_problem(relative.as_posix(), title, root))


def mention_references(path: Path, root: Path) -> Iterator[Reference]:
    """The mentions of a docs page in text file ``path``: the page exists."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for page in MENTION.findall(line):
            yield Reference(f"{path.relative_to(root)}:{number}", page, None, _missing_page(page, root))


def markdown_pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@functools.cache
def text_files(root: Path) -> list[Path]:
    """The tracked files that are text (the binaries left out), but this module: its checks of the checker cite
    pages that exist only in their temporary folder."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: which files are tracked is unknown")
    files = []
    for name in filter(None, listed.stdout.split("\0")):
        path = root / name
        if path == Path(__file__).resolve():
            continue
        try:
            path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        files.append(path)
    return files


def _fail_on_problems(references: list[Reference], what: str) -> None:
    """Fail listing each reference of ``references`` with a problem: where, what it names, what to fix."""
    problems = [f"  {ref.where}: {ref.page}" + (f" {ref.title!r}" if ref.title else "") + f": {ref.problem}"
                for ref in references if ref.problem]
    if problems:
        pytest.fail(f"{what}:\n" + "\n".join(problems), pytrace=False)


def test_markdown_links_resolve() -> None:
    references = [ref for doc in markdown_pages(REPO) for ref in link_references(doc, REPO)]
    assert sum(ref.title is not None for ref in references) >= 4, "the docs' #anchor links are no longer found"
    _fail_on_problems(references, "links of README.md and docs/ that do not resolve")


def test_docs_section_citations_name_a_heading_of_the_page() -> None:
    references = [ref for path in text_files(REPO) for ref in citation_references(path, REPO)]
    assert len(references) >= 40, "the citations of docs sections are no longer found"
    _fail_on_problems(references, "citations of docs sections that do not resolve")


def test_docs_page_mentions_name_an_existing_page() -> None:
    references = [ref for path in text_files(REPO) for ref in mention_references(path, REPO)]
    assert len(references) >= 100, "the mentions of docs pages are no longer found"
    _fail_on_problems(references, "mentions of docs pages that do not exist")


@pytest.fixture
def docs_tree(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# A\n\n## Sweeps: joblib, Ray\n\n**Lead in.** text at the end\n\n```\n# Not a heading\n```\n\n"
        '[b](b.md) [b, x](b.md#x) [gone](gone.md) [self](#sweeps-joblib-ray) [bad](#sweeps) (see "Lead in")\n\n'
        "1. One.\n2. Two.\n",
        encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("# B\n\n## X\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# R\n", encoding="utf-8")
    return tmp_path.resolve()


def test_checker_reports_a_missing_link_target_and_a_stale_anchor(docs_tree: Path) -> None:
    references = list(link_references(docs_tree / "docs" / "a.md", docs_tree))
    assert [(ref.page, ref.title, ref.problem is None) for ref in references] == [
        ("docs/b.md", None, True), ("docs/b.md", "x", True), ("docs/gone.md", None, False),
        ("docs/a.md", "sweeps-joblib-ray", True), ("docs/a.md", "sweeps", False)]
    assert references[2].where == "docs/a.md:11" and "'gone.md' does not exist" in references[2].problem
    assert references[4].problem == "no heading with this anchor (nearest: 'sweeps-joblib-ray')"


def test_checker_reports_a_renamed_heading_with_the_nearest_one(docs_tree: Path) -> None:
    source = docs_tree / "cite.py"
    source.write_text('"""See docs/a.md, "Sweeps"; docs/a.md\n"Lead in";\n(docs/a.md, "at the end";\n'
                      '# docs/b.md, "Y") docs/a.md section "Not a heading" (docs/b.md, X) docs/b2.md;\n'
                      'the "X" section of docs/b.md; docs/a.md, step 2; docs/a.md, step 3."""\n',
                      encoding="utf-8")
    references = list(citation_references(source, docs_tree))
    assert [(ref.where, ref.page, ref.title, ref.problem is None) for ref in references] == [
        ("cite.py:1", "docs/a.md", "Sweeps", True), ("cite.py:1", "docs/a.md", "Lead in", True),
        ("cite.py:3", "docs/a.md", "at the end", True), ("cite.py:4", "docs/b.md", "Y", False),
        ("cite.py:4", "docs/a.md", "Not a heading", False), ("cite.py:4", "docs/b.md", "X", True),
        ("cite.py:5", "docs/b.md", "X", True), ("cite.py:5", "docs/a.md", "step 2", True),
        ("cite.py:5", "docs/a.md", "step 3", False)]
    assert references[3].problem == "no such heading, bold lead-in or step (nearest: 'X')"
    assert references[-1].problem == "no such heading, bold lead-in or step (nearest: 'step 2')"
    assert [ref.problem for ref in citation_references(docs_tree / "docs" / "a.md", docs_tree)] == [None]
    assert [(ref.page, ref.problem) for ref in mention_references(source, docs_tree) if ref.problem] == [
        ("docs/b2.md", "no such page (nearest: 'docs/b.md')")]
