"""Docs are part of the product: every setting the manual names exists, and every relative link of the
README and the manual (docs/*.md) leads somewhere. That every setting and error code is documented is
guaranteed by generating their pages from the code (tests/test_reference.py checks they are current)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

from bookwise.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MANUAL = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target); the target ends at whitespace (a title may follow) or ")".
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(CODE_SPAN.sub("", line))
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub (github-slugger) gives a heading: its text lowercased, punctuation but
    `-` and `_` dropped, spaces as `-`. Code spans count by their text, links by their label."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match is None:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if SCHEME.match(target) or target.startswith("//"):
                continue  # absolute URLs: not this repository's files
            path, _, anchor = target.partition("#")
            dest = (page.parent / unquote(path)).resolve() if path else page
            if not dest.exists():
                broken.append(f"{target}: no such file")
            elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
                broken.append(f"{target}: no heading with this anchor in {dest.relative_to(root)}")
    return broken


def test_every_setting_the_manual_names_exists() -> None:
    # The test harness's own variables are named in the development guide; they are no settings.
    harness = {"BOOKWISE_CHROMIUM", "BOOKWISE_TEST_PROCESSES"}
    expected = {f"BOOKWISE_{name.upper()}" for name in Settings.model_fields} | harness
    for page in MANUAL:
        named = set(re.findall(r"`(BOOKWISE_[A-Z0-9_]+)[`=]", page.read_text(encoding="utf-8")))
        assert named - expected == set(), f"{page.relative_to(ROOT)} names settings that do not exist"


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    broken = {str(page.relative_to(ROOT)): broken_links(page) for page in MANUAL}
    assert {page: links for page, links in broken.items() if links} == {}


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    """The checker itself: a missing file, a renamed heading and a missing same-page heading are
    caught; code spans, fences and absolute URLs are not taken for links, and headings match by
    their GitHub slug."""
    other = "# Other\n\n## `bookwise serve`: the API\n\n## Rate limits: one or many\n"
    (tmp_path / "other.md").write_text(other)
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## Same page\n\n"
        "[ok](other.md#bookwise-serve-the-api) [ok](other.md#rate-limits-one-or-many) [ok](#same-page)\n"
        "![ok](other.md) [ok](https://example.org/x.md) `[not a link](nowhere.md)`\n\n"
        "```md\n[not a link](nowhere.md)\n```\n\n"
        "[gone](missing.md) [renamed](other.md#rate-limits) [here](#elsewhere)\n"
    )
    assert broken_links(page, root=tmp_path) == [
        "missing.md: no such file",
        "other.md#rate-limits: no heading with this anchor in other.md",
        "#elsewhere: no heading with this anchor in page.md",
    ]


def test_the_manuals_question_set_still_matches_its_pages() -> None:
    """eval/docs-site.questions.jsonl names sections of docs/*.md as its gold: a renamed heading or a
    reworded key fact would silently turn its figures into misses."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "eval" / "validate_questions.py"),
            str(ROOT / "eval" / "docs-site.questions.jsonl"),
            str(DOCS),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def owner_path_commands(page: Path) -> list[str]:
    """The fenced blocks between a page's owner-path markers: the commands an owner runs."""
    text = page.read_text(encoding="utf-8")
    block = text[text.index("<!-- owner-path -->") : text.index("<!-- /owner-path -->")]
    return re.findall(r"```[a-z]*\n(.*?)```", block, flags=re.DOTALL)


def test_getting_started_gives_the_owner_the_steps_the_readme_gives() -> None:
    """The README's steps are the ones the owner's-path test runs; the manual's copy must not drift."""
    readme = owner_path_commands(ROOT / "README.md")
    assert len(readme) >= 5
    assert owner_path_commands(DOCS / "getting-started.md") == readme
