"""Heading ids exactly as Docusaurus' remark ``headings`` plugin assigns them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookwise.ingest.markdown import heading_plain_text
from bookwise.ingest.slugger import GithubSlugger

# {/* #my-id */} at the end: the comment's first word must start with "#".
_COMMENT_ID = re.compile(r"\s*\{/\*\s*#(?P<id>[^\s*]+)[^*]*\*/\}\s*$")
# With Docusaurus' default mdx1Compat.comments, <!-- #id --> sets no id: the comment is dropped and
# the space before it stays in the slugged text ("Text <!-- #x -->" → "text-"). Verified on 3.10.2.
_HTML_COMMENT_TAIL = re.compile(r"(\s*)<!--.*?-->\s*$", re.S)
# Classic {#my-id}; the regex is Docusaurus' own (markdownHeadingIdUtils.ts).
_CLASSIC_ID = re.compile(r"\s*\{#(?P<id>(?:.(?!\{#|\}))*.)\}$")


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
    elif match := _HTML_COMMENT_TAIL.search(source):
        trailing = " " if match.group(1) else ""
        source = source[: match.start()]
    source = source.strip()
    return ParsedHeading(source=source, text=heading_plain_text(source) + trailing, explicit_id=explicit)


def heading_id(parsed: ParsedHeading, slugger: GithubSlugger, *, maintain_case: bool = False) -> str:
    """Explicit ids do not register in the slugger; generated ones do."""
    if parsed.explicit_id is not None:
        return parsed.explicit_id
    return slugger.slug(parsed.text, maintain_case=maintain_case)
