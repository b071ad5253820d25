"""Heading ids exactly as Docusaurus' remark ``headings`` plugin assigns them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookwise.ingest.markdown import heading_plain_text
from bookwise.ingest.slugger import GithubSlugger

# The patterns below have no leading "\s*" (the text before a match is stripped anyway): searched
# from every position, it rescanned each run of spaces (quadratic).
# {/* #my-id */} at the end: the comment's first word must start with "#". The id is possessive:
# giving characters back to "[^*]*" can never help, and retrying every split was quadratic.
_COMMENT_ID = re.compile(r"\{/\*\s*#(?P<id>[^\s*]++)[^*]*\*/\}\s*$")
# Classic {#my-id}; the regex is Docusaurus' own (markdownHeadingIdUtils.ts).
_CLASSIC_ID = re.compile(r"\{#(?P<id>(?:.(?!\{#|\}))*.)\}$")


def _html_comment_tail(source: str) -> tuple[int, bool] | None:
    r"""Where a trailing ``<!-- … -->`` (and the spaces before it) starts, and whether spaces precede it.

    With Docusaurus' default mdx1Compat.comments, <!-- #id --> sets no id: the comment is dropped and
    the space before it stays in the slugged text ("Text <!-- #x -->" → "text-"). Verified on 3.10.2.
    The same as searching ``(\s*)<!--.*?-->\s*$`` (re.S), without retrying every opener (quadratic).
    """
    tail = source.rstrip()
    opener = source.find("<!--")
    if not tail.endswith("-->") or opener < 0 or opener + 4 > len(tail) - 3:
        return None
    start = opener
    while start and source[start - 1].isspace():
        start -= 1
    return start, start < opener


@dataclass(frozen=True)
class ParsedHeading:
    source: str  # as written, explicit id removed
    text: str  # plain text
    explicit_id: str | None


def parse_heading(raw: str) -> ParsedHeading:
    explicit: str | None = None
    source = raw
    trailing = ""
    if match := _COMMENT_ID.search(source):
        explicit = match.group("id")
        source = source[: match.start()]
    elif match := _CLASSIC_ID.search(source):
        explicit = match.group("id").strip()
        source = source[: match.start()]
    elif comment := _html_comment_tail(source):
        trailing = " " if comment[1] else ""
        source = source[: comment[0]]
    source = source.strip()
    return ParsedHeading(source=source, text=heading_plain_text(source) + trailing, explicit_id=explicit)


def heading_id(parsed: ParsedHeading, slugger: GithubSlugger, *, maintain_case: bool = False) -> str:
    """Explicit ids do not register in the slugger; generated ones do."""
    if parsed.explicit_id is not None:
        return parsed.explicit_id
    return slugger.slug(parsed.text, maintain_case=maintain_case)
