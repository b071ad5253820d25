"""Scanned items → the heading tree as flat sections, each with its anchor and breadcrumb.

A section is a heading plus the content up to the next heading of any level (the corpora's
definition); the text before the first heading is the intro section (heading "", level 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bookwise.ingest.headings import ParsedHeading, heading_id, parse_heading
from bookwise.ingest.mdx import HeadingItem, IncludeItem, Item, TextItem, has_image, has_math
from bookwise.ingest.models import Block, Section, SectionFlags
from bookwise.ingest.slugger import GithubSlugger, slugify

# Loads a partial by import path and returns its scanned items, or None if it cannot be found.
IncludeLoader = Callable[[str], list[Item] | None]
MAX_INCLUDE_DEPTH = 4


@dataclass(frozen=True)
class ResolvedHeading:
    level: int
    parsed: ParsedHeading
    anchor: str
    start: int
    end: int


Resolved = ResolvedHeading | TextItem


def resolve(items: list[Item], load: IncludeLoader, depth: int = 0) -> list[Resolved]:
    """Assign heading ids with one slugger per file; inline partials (each with its own slugger)."""
    slugger = GithubSlugger()
    out: list[Resolved] = []
    for item in items:
        if isinstance(item, HeadingItem):
            parsed = parse_heading(item.raw)
            anchor = heading_id(parsed, slugger)
            out.append(ResolvedHeading(item.level, parsed, anchor, item.start, item.end))
        elif isinstance(item, IncludeItem):
            included = load(item.target) if depth < MAX_INCLUDE_DEPTH else None
            for sub in resolve(included, load, depth + 1) if included else []:
                # Offsets of inlined text point at the include tag in the including file.
                if isinstance(sub, ResolvedHeading):
                    out.append(ResolvedHeading(sub.level, sub.parsed, sub.anchor, item.start, item.end))
                else:
                    out.append(TextItem(sub.text, item.start, item.end, sub.kind))
        else:
            out.append(item)
    return out


def _blocks(items: list[TextItem]) -> tuple[Block, ...]:
    return tuple(
        Block(it.text, it.start, it.end, it.kind) for it in items if it.kind != "blank" and it.text.strip()
    )


def _flags(blocks: tuple[Block, ...]) -> SectionFlags:
    prose = "\n".join(b.text for b in blocks if b.kind != "code")
    return SectionFlags(
        has_code=any(b.kind == "code" for b in blocks),
        has_table=any(b.kind == "table" for b in blocks),
        has_math=has_math(prose) or any(b.text.startswith(("```math", "```latex")) for b in blocks),
        has_admonition=any(b.kind == "admonition" for b in blocks),
        has_image=has_image(prose),
    )


def build_sections(
    resolved: list[Resolved], title: str, body_start: int, body_end: int
) -> tuple[Section, ...]:
    sections: list[Section] = []
    keys: set[str] = set()
    stack: list[tuple[int, str]] = []  # (level, heading text) of open ancestors
    current: ResolvedHeading | None = None
    content: list[TextItem] = []
    section_start = body_start

    def close(end: int) -> None:
        blocks = _blocks(content)
        crumbs: tuple[str, ...]
        if current is None:
            if not blocks:
                return
            key, heading, text, level, anchor, crumbs = "_intro", "", "", 1, "", (title,)
        else:
            heading, text, level = current.parsed.source, current.parsed.text, current.level
            # The theme renders no id on the page's H1: a level-1 section is cited by the page URL.
            anchor = "" if level == 1 else current.anchor
            key = current.anchor if level > 1 else f"_h1:{slugify(text)}"
            ancestors = tuple(t for lvl, t in stack if lvl < level)
            crumbs = (title, *(t for t in ancestors if t != title))
        unique, n = key, 1
        while unique in keys:
            unique, n = f"{key}~{n}", n + 1
        keys.add(unique)
        sections.append(
            Section(unique, heading, text, level, anchor, crumbs, section_start, end, blocks, _flags(blocks))
        )

    for item in resolved:
        if isinstance(item, ResolvedHeading):
            close(item.start)
            if current is not None:
                stack = [(lvl, t) for lvl, t in stack if lvl < current.level] + [
                    (current.level, current.parsed.text)
                ]
            current, content, section_start = item, [], item.start
        else:
            content.append(item)
    close(body_end)
    return tuple(sections)
