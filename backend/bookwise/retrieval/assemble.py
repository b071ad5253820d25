"""Small-to-big: the chunks of one section back into readable text, in reading order, within a budget.

Consecutive chunks of a section repeat a few sentences (the chunker's overlap); joining them drops
the repetition. When the whole section does not fit the budget, the chunks that matched the query
are kept first, then their neighbours, nearest first; runs that are not adjacent are joined by an
ellipsis so the reader (and the model) can see that text was left out. A run that starts inside a
table the chunker split by rows gets that table's header back: rows without it are no Markdown table.
A block the chunker cut without overlap is one block again where its chunks are joined: a code block
split into line groups (each closed into its own fence; three fences of one function read as three
snippets), a table split by rows (a blank line would start a second table without a header), a
list or a paragraph. A short block repeated whole (an admonition's "**Tip**") is overlap too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bookwise.ingest.payload import ChunkPayload
from bookwise.retrieval.passages import LIST_ITEM

GAP = "\n\n…\n\n"
_MIN_OVERLAP = 8  # characters; shorter coincidences ("." or "a ") are not the chunker's overlap
# A Markdown table's delimiter row (`| --- | :-: |`): what makes the rows above it a header.
DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_FENCE_CLOSE = re.compile(r"\n(`{3,}|~{3,})\s*$")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(?![`~])")


@dataclass(frozen=True)
class SectionChunk:
    index: int  # position in the section (``section_chunk_index``)
    text: str
    content_hash: str = ""
    # The source span of the blocks the chunk's first and last pieces come from: a chunk that starts
    # before the previous one ends continues its last block.
    char_start: int = -1
    char_end: int = -1

    @classmethod
    def from_payload(cls, payload: ChunkPayload) -> SectionChunk:
        return cls(
            payload.section_chunk_index,
            payload.text,
            payload.content_hash,
            payload.char_start,
            payload.char_end,
        )

    def continues(self, previous: SectionChunk) -> bool:
        """Whether this chunk starts inside the block ``previous`` ends with."""
        return 0 <= self.char_start < previous.char_end


@dataclass(frozen=True)
class AssembledSection:
    text: str
    chunk_indices: tuple[int, ...]
    tokens: int
    truncated: bool  # some chunks of the section were left out for the budget


def join_overlapping(previous: str, following: str, *, continued: bool = False) -> str:
    """``previous`` then ``following`` without the text ``following`` repeats from ``previous``'s end;
    when it repeats nothing but ``continued`` the block ``previous`` ends with, as that one block."""
    joined = _join_at_overlap(previous, following)
    if joined is not None:
        return joined
    return _join_continued(previous, following) if continued else f"{previous}\n\n{following}"


def _join_at_overlap(previous: str, following: str) -> str | None:
    """``previous`` then ``following`` less what it repeats of ``previous``'s end; None when it
    repeats nothing (the two are not the chunker's overlapping neighbours)."""
    if not following:
        return previous
    # A block repeated whole, however short ("**Tip**", a tab's "Same: "): the chunker carried the
    # label of an admonition or tab whose body opens the next chunk.
    last_block = previous.rpartition("\n\n")[2]
    if last_block.strip() and following.startswith(f"{last_block}\n\n"):
        return previous + following[len(last_block) :]
    # The longest suffix of ``previous`` that starts ``following``: try the earliest start first.
    position = previous.find(following[0], max(0, len(previous) - len(following)))
    while position != -1 and len(previous) - position >= _MIN_OVERLAP:
        if following.startswith(previous[position:]):
            return previous + following[len(previous) - position :]
        position = previous.find(following[0], position + 1)
    return None


def _join_continued(previous: str, following: str) -> str:
    """``following`` continues the block ``previous`` ends with, the chunker having cut it without
    repeating anything: one code fence, one table, one list, one paragraph again."""
    code = _join_split_code(previous, following)
    if code is not None:
        return code
    if (_is_row(following) and _is_row(previous.rpartition("\n")[2])) or LIST_ITEM.match(following):
        return f"{previous}\n{following}"
    return f"{previous} {following}"  # the next sentence of the paragraph or item


def _join_split_code(previous: str, following: str) -> str | None:
    """``previous`` ending in a code fence and ``following`` opening the same fence again (the
    chunker closed each line group of one block into its own fence) as one block; None otherwise."""
    opener, _, rest = following.partition("\n")
    close = _FENCE_CLOSE.search(previous)
    marker = _FENCE_OPEN.match(opener)
    if not close or not marker or not rest or marker.group(1) != close.group(1):
        return None
    if f"\n{opener}\n" not in f"\n{previous}":
        return None  # the block ``previous`` ends was not opened with this fence
    return previous[: close.start()] + "\n" + rest


def _is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def table_header(earlier: list[str], text: str) -> str:
    """The header and delimiter rows of the table ``text`` starts inside, found in the ``earlier``
    chunks of its section (nearest last), or "" when ``text`` does not continue a table."""
    lines = text.split("\n")
    if not _is_row(lines[0]) or (len(lines) > 1 and DELIMITER_ROW.match(lines[1])):
        return ""  # not a table, or a table with its own header
    above: list[str] = []
    for chunk in reversed(earlier):
        chunk_lines = chunk.split("\n")
        start = len(chunk_lines)
        while start > 0 and _is_row(chunk_lines[start - 1]):
            start -= 1
        above = chunk_lines[start:] + above
        if start > 0:  # the table starts in this chunk
            break
    if len(above) >= 2 and DELIMITER_ROW.match(above[1]):
        return "\n".join(above[:2])
    return ""


def _unique_in_order(chunks: Iterable[SectionChunk]) -> list[SectionChunk]:
    by_index: dict[int, SectionChunk] = {}
    for chunk in chunks:
        by_index.setdefault(chunk.index, chunk)
    ordered, seen_content = [], set()
    for index in sorted(by_index):
        chunk = by_index[index]
        # The same chunk text twice in one section (a repeated partial, a copied example) reads once.
        key = chunk.content_hash or chunk.text
        if key in seen_content:
            continue
        seen_content.add(key)
        ordered.append(chunk)
    return ordered


def _priority(positions: list[int], hit_positions: list[int]) -> list[int]:
    """Hits in score order, then the other chunks by distance to the nearest hit (later one first)."""
    if not hit_positions:
        hit_positions = [0]
    rest = [p for p in positions if p not in hit_positions]
    rest.sort(key=lambda p: (min(abs(p - h) for h in hit_positions), p < min(hit_positions)))
    return [*hit_positions, *rest]


def assemble(
    chunks: Iterable[SectionChunk],
    hits: list[int],
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> AssembledSection:
    """Assemble one section from its chunks; ``hits`` are the matching chunks' indices, best first."""
    ordered = _unique_in_order(chunks)
    if not ordered:
        return AssembledSection("", (), 0, False)
    position_of = {c.index: p for p, c in enumerate(ordered)}
    hit_positions = list(dict.fromkeys(position_of[h] for h in hits if h in position_of))
    costs = [count_tokens(c.text) for c in ordered]
    chosen: set[int] = set()
    used = 0
    for position in _priority(list(range(len(ordered))), hit_positions):
        if chosen and used + costs[position] > budget_tokens:
            continue
        chosen.add(position)
        used += costs[position]
    return AssembledSection(
        text=_render(ordered, chosen),
        chunk_indices=tuple(ordered[p].index for p in sorted(chosen)),
        tokens=used,
        truncated=len(chosen) < len(ordered),
    )


def _render(ordered: list[SectionChunk], chosen: Iterable[int]) -> str:
    """The text of the ``chosen`` positions of ``ordered``: runs joined at their overlap, gaps marked."""
    positions = sorted(chosen)
    text = ""
    previous = -2
    for position in positions:
        piece = ordered[position].text
        if position != previous + 1:
            header = table_header([c.text for c in ordered[:position]], piece)
            piece = f"{header}\n{piece}" if header else piece
        if not text:
            text = piece
        elif position == previous + 1:
            text = join_overlapping(text, piece, continued=ordered[position].continues(ordered[previous]))
        else:
            text = text + GAP + piece
        previous = position
    if positions[0] > 0:
        text = "…\n\n" + text
    if positions[-1] < len(ordered) - 1:
        text = text + "\n\n…"
    return text


def windows(
    chunks: Iterable[SectionChunk], *, budget_tokens: int, count_tokens: Callable[[str], int]
) -> list[str]:
    """Every text ``assemble`` can make of one section, one run of consecutive chunks at a time.

    A section within the budget is always assembled whole. A longer one is assembled around the
    chunks a query hit: runs of neighbours (each within the budget, or one chunk alone) joined by
    gaps, each run framed by the ellipses that mark what was left out. A run reads the same in any
    window it is part of, so the runs' passages are the passages of every window.
    """
    ordered = _unique_in_order(chunks)
    costs = [count_tokens(c.text) for c in ordered]
    if sum(costs) <= budget_tokens:
        return [_render(ordered, range(len(ordered)))] if ordered else []
    texts = []
    for start in range(len(ordered)):
        used = 0
        for end in range(start, len(ordered)):
            used += costs[end]
            if end > start and used > budget_tokens:
                break
            texts.append(_render(ordered, range(start, end + 1)))
    return texts
