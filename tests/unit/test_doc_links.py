"""Every relative link of the README and the reference pages reaches a file (and its
heading, for a #anchor), and every repository file they name in backticks exists: the
README is a short page of pointers, so a moved or renamed page must not leave one dead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted({REPO / "README.md", REPO / "benchmarks" / "RESULTS.md",
                *REPO.glob("docs/*.md"), *REPO.glob("*/README.md")})
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# a repository file named in backticks: a top-level folder of the repository, then
# folders and a file name with one of these endings (not `toxiproxy/proxy.py` of a library)
NAMED_FILE = re.compile(r"^([\w.-]+)(?:/[\w.-]+)*/[\w.-]+\.(?:md|py|yaml|sh|toml|ini)$")
TOP = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)       # a link: its text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [t for t in LINK.findall(text)
            if not re.match(r"[a-z][a-z0-9+.-]*:", t)]   # http:, https:, mailto:


def dead_link(page: Path, target: str) -> str | None:
    """Why `target`, linked from `page`, does not resolve (None when it does)."""
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    if not dest.exists():
        return f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{target}: {dest.name} has no heading with anchor #{anchor}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    dead = [why for t in relative_links(page) if (why := dead_link(page, t))]
    assert not dead, f"{page.relative_to(REPO)}: " + "; ".join(dead)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_named_repository_file_exists(page):
    named = {m.group(1).split()[0] for m in CODE_SPAN.finditer(page.read_text())
             if m.group(1).split()}
    missing = [p for p in sorted(named)
               if (m := NAMED_FILE.match(p)) and m.group(1) in TOP
               and not any(part.isupper() for part in re.split(r"[/.-]", p))   # NAME, HDFS-N
               and not (REPO / p).exists() and not (page.parent / p).exists()]
    assert not missing, f"{page.relative_to(REPO)} names files that do not exist: {missing}"


def test_the_check_finds_a_dead_link_and_a_dead_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n## The `run` command\n## Title\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#the-run-command) [ok2](a.md#title-1) [x](gone.md) "
                    "[y](a.md#nowhere) [web](https://example.org/x) ![img](pic.png)\n"
                    "```\n[in a fence](fenced.md)\n```\n")
    links = relative_links(page)
    assert links == ["a.md#the-run-command", "a.md#title-1", "gone.md", "a.md#nowhere"]
    assert [t for t in links if dead_link(page, t)] == ["gone.md", "a.md#nowhere"]


def test_slug_is_githubs():
    assert slug("The command line") == "the-command-line"
    assert slug("Writing a scenario") == "writing-a-scenario"
    assert slug("`hdfs-chaos diff`: side by side") == "hdfs-chaos-diff-side-by-side"
    assert slug("B2, D2 & L3 (3.x)") == "b2-d2--l3-3x"
