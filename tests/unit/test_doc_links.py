"""Every link in README.md and docs/*.md leads somewhere: a relative link names a file of the
repository, and a `#anchor` names a heading of its page, spelled as GitHub spells it (lower
case, punctuation dropped, spaces as hyphens, a repeated heading numbered). A page is read the
way GitHub renders it: nothing inside a fenced code block or an inline code span is a link or a
heading."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# An inline link's target: `](target)` or `](target "title")`, whatever the link's text.
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
# A reference definition: `[name]: target`.
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of a page outside its fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is not None:
            mark = opening.group(1) if opening else ""
            if mark[:1] == fence[0] and len(mark) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: the text as rendered (code marks and emphasis gone), lower
    case, every character but letters, digits, `_`, `-` and spaces dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"[`*]", "", text).lower()
    kept = "".join(
        c
        for c in text
        if c in " -_" or unicodedata.category(c)[0] in "LN" or unicodedata.category(c) == "Mn"
    )
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a page's headings, a repeated one numbered as GitHub numbers it."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    # A heading keeps the words of its code spans: GitHub's anchor keeps them.
    for _, line in outside_fences(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link of the page, in the order they appear."""
    found = []
    for number, line in outside_fences(page.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub("", line)
        found.extend((number, match.group(1)) for match in INLINE_LINK.finditer(line))
        reference = REFERENCE.match(line)
        if reference:
            found.append((number, reference.group(1)))
    return found


def broken_links(page: Path, root: Path) -> list[str]:
    """What is wrong with each link of `page` whose file or heading does not exist."""
    problems = []
    for number, target in links(page):
        if not target or EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{number}: ({target})"
        if not destination.exists():
            problems.append(f"{where} names a file that does not exist")
            continue
        if not destination.resolve().is_relative_to(root):
            problems.append(f"{where} leaves the repository")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{where} names no heading of {destination.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES])
def test_every_link_of_the_page_leads_to_a_file_and_a_heading_that_exist(page: Path) -> None:
    assert broken_links(page, REPO_ROOT) == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Its environment: `setup` and `path`", "its-environment-setup-and-path"),
        ("pass^k: every one of k runs succeeds", "passk-every-one-of-k-runs-succeeds"),
        ("A/A calibration: `[protocol] aa = true`", "aa-calibration-protocol-aa--true"),
        ("On the processor's cores (2026-12-07)", "on-the-processors-cores-2026-12-07"),
        ("Several tasks: `[tasks.<name>]`", "several-tasks-tasksname"),
        (
            "`tests`: a report the code under test cannot write",
            "tests-a-report-the-code-under-test-cannot-write",
        ),
        (
            "Power (4000 experiments; the fixed rule 1000)",
            "power-4000-experiments-the-fixed-rule-1000",
        ),
    ],
)
def test_a_heading_s_anchor_is_the_one_github_gives_it(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_missing_file_a_missing_heading_and_a_repeated_heading_are_told_apart(
    tmp_path: Path,
) -> None:
    (tmp_path / "other.md").write_text("# Other\n## Twice\n## Twice\n```\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n"
        "[ok](other.md) [ok](other.md#twice-1) [ok](#page) [web](https://example.org/x)\n"
        "[`code` text](other.md#other)\n"
        "[gone](missing.md)\n"
        "[no heading](other.md#not-a-heading)\n"
        "[third](other.md#twice-2)\n"
        "`[in code](missing.md)`\n"
        "```\n[in a fence](missing.md)\n```\n"
        "[ref]: nowhere.md\n"
    )
    problems = broken_links(page, tmp_path)
    assert [p.split(": (")[1].split(")")[0] for p in problems] == [
        "missing.md",
        "other.md#not-a-heading",
        "other.md#twice-2",
        "nowhere.md",
    ]


NAMED_PAGE = re.compile(r"\bdocs/[A-Za-z0-9_.-]+\.md\b")


def named_pages() -> list[tuple[str, str]]:
    """(where, page) of every `docs/<page>.md` a page or a module names in its words."""
    sources = [*PAGES, *sorted((REPO_ROOT / "src").rglob("*.py"))]
    found = []
    for source in sources:
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
            for match in NAMED_PAGE.finditer(line):
                found.append((f"{source.relative_to(REPO_ROOT)}:{number}", match.group(0)))
    return found


def test_every_docs_page_named_in_the_docs_or_the_code_exists() -> None:
    assert named_pages(), "the pattern finds the pages the docs name"
    missing = [
        f"{where}: {page}" for where, page in named_pages() if not (REPO_ROOT / page).is_file()
    ]
    assert missing == []


def test_no_file_cites_a_design_document_outside_the_repository() -> None:
    """A reader has only the repository: a contract is cited by its docs page, never by a
    section of a design document kept elsewhere."""
    citation = re.compile("DESIGN" + r"(\.md|\s*§)")
    folders = ["src", "tests", "docs", "benchmarks", "rules", "scripts", "scenarios", "config"]
    sources = [REPO_ROOT / "README.md", REPO_ROOT / "Snakefile"]
    for folder in folders:
        sources += [p for p in (REPO_ROOT / folder).rglob("*") if p.is_file()]
    assert len(sources) > 100, "the folders are where they were"
    cited = []
    for source in sources:
        if source.suffix not in {".py", ".md", ".smk", ".toml", ".yaml", ".txt", ""}:
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        cited += [f"{source.relative_to(REPO_ROOT)}: {m.group(0)}" for m in citation.finditer(text)]
    assert cited == []
