"""Section → child chunks sized in the embedding model's tokens. A chunk never crosses a section.

Blocks are cut into pieces (list items, then sentences for prose; line groups for code; rows for
tables), then packed greedily up to the budget; consecutive chunks repeat up to ``overlap`` tokens
of trailing pieces (from the start of a list item, never its later sentences alone), and a trailing
piece smaller than ``min_tokens`` joins the previous chunk.

Cost is near-linear in the input: text is never re-tokenized as it grows one word or one line at a
time (that was quadratic in runs of spaces and long words); the longest run that fits is found by
galloping and bisecting, each check tokenizing at most ``MAX_CHARS_PER_TOKEN * budget`` characters.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from bookwise.ingest.blocks import LIST_ITEM_MARKER
from bookwise.ingest.markdown import code_spans
from bookwise.ingest.models import Block

TokenCounter = Callable[[str], int]

# A chunk is also bounded in characters, whatever its token count: a tokenizer may count a run of
# spaces as nothing and a 2 MB word as one unknown token. Prose and code read at 3-6 characters a token.
MAX_CHARS_PER_TOKEN = 16

_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\[`*_(\"'])")
# A long list is cut between items before sentences (a table of contents has no full stops, and was
# cut between words, mid-item).
_LIST_ITEM = re.compile(rf"\n(?={LIST_ITEM_MARKER})")
_STARTS_LIST = re.compile(LIST_ITEM_MARKER)


@dataclass(frozen=True)
class Piece:
    text: str
    tokens: int
    block: int  # index of the block it came from: pieces of one block join with " " or "\n"
    joiner: str  # how it joins the previous piece of the same block
    char_start: int
    char_end: int
    # Whether a chunk may open on this piece: not on a list item's second sentence, which reads as
    # a stray paragraph without its item's marker and glues to the items after it.
    opens: bool = True


@dataclass(frozen=True)
class ChunkText:
    text: str
    char_start: int
    char_end: int
    tokens: int


def _longest_fit(total: int, start: int, fits: Callable[[int], bool]) -> int:
    """The largest ``end`` (``start < end <= total``) with ``fits(end)``; ``start + 1`` if none.

    ``fits`` must be monotone (a run that does not fit does not fit longer): O(log n) checks.
    """
    low, step = start + 1, 1
    high = total + 1
    while low < total:
        probe = min(low + step, total)
        if not fits(probe):
            high = probe
            break
        low, step = probe, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _pack(
    units: list[str], joiner: str, budget: int, count: TokenCounter, wrap: Callable[[str], str]
) -> list[str]:
    """Greedy runs of ``units``: each ``wrap(joiner.join(run))`` is the longest within the budget in
    tokens and characters (a run of one unit may exceed both)."""
    max_chars = MAX_CHARS_PER_TOKEN * budget - len(wrap(""))  # a wrapped run fits the bound too
    ends = [0]  # ends[i]: length of joiner.join(units[:i]) + joiner, for the character bound
    for unit in units:
        ends.append(ends[-1] + len(unit) + len(joiner))
    out: list[str] = []
    start = 0
    while start < len(units):
        # The character bound first (no tokenizing): runs longer than this never fit.
        limit = max(start + 1, bisect.bisect_right(ends, ends[start] + len(joiner) + max_chars) - 1)

        def fits(end: int, start: int = start) -> bool:
            return count(wrap(joiner.join(units[start:end]))) <= budget

        end = _longest_fit(min(limit, len(units)), start, fits)
        out.append(wrap(joiner.join(units[start:end])))
        start = end
    return out


def _cut_characters(word: str, budget: int, count: TokenCounter) -> list[tuple[str, int]]:
    """A word over the budget (minified code, a data URI) cut into runs of characters that fit,
    with their token counts.

    A run is tried a little longer than the previous one and shrunk in proportion to its excess
    tokens (with a margin): about two counts per run, so the word is tokenized about twice in all.
    """
    max_chars = MAX_CHARS_PER_TOKEN * budget
    out: list[tuple[str, int]] = []
    start, size = 0, max_chars
    while start < len(word):
        end = min(len(word), start + size)
        while (tokens := count(word[start:end])) > budget and end - start > 1:
            shrunk = (end - start) * budget * 9 // (10 * tokens)
            end = start + max(1, min(end - start - 1, shrunk))
        out.append((word[start:end], tokens))
        size = min(max_chars, (end - start) * 11 // 10 + 1)
        start = end
    return out


def _tokens_within(text: str, budget: int, count: TokenCounter) -> int | None:
    """The token count of ``text`` if it fits the budget (never tokenizing an over-long text)."""
    if len(text) > MAX_CHARS_PER_TOKEN * budget:
        return None
    tokens = count(text)
    return tokens if tokens <= budget else None


def _split_words(text: str, budget: int, count: TokenCounter) -> list[tuple[str, int]]:
    """Runs of space-separated words within the budget (with their token counts); a word alone over
    it is cut by characters."""
    words = text.lstrip(" ").split(" ")  # leading spaces start no run: pieces join with a space
    if words == [""]:
        return []
    result: list[tuple[str, int]] = []
    for part in _pack(words, " ", budget, count, str):
        tokens = _tokens_within(part, budget, count)
        if tokens is None:
            result.extend(_cut_characters(part, budget, count))
        else:
            result.append((part, tokens))
    return result


def _code_groups(text: str, budget: int, count: TokenCounter) -> list[str]:
    """A code block over the budget as runs of lines, each closed into a valid fence."""
    lines = text.split("\n")
    fence_open, fence_close, body = lines[0], lines[-1], lines[1:-1]
    if not body:
        return [text]
    return _pack(body, "\n", budget, count, lambda code: f"{fence_open}\n{code}\n{fence_close}")


def _pieces(blocks: tuple[Block, ...], budget: int, count: TokenCounter) -> list[Piece]:
    pieces: list[Piece] = []
    for index, block in enumerate(blocks):
        if len(block.text) <= MAX_CHARS_PER_TOKEN * budget:
            tokens = count(block.text)
            if tokens <= budget:
                pieces.append(Piece(block.text, tokens, index, "", block.char_start, block.char_end))
                continue
        if block.kind == "code":
            parts = [(group, "\n") for group in _code_groups(block.text, budget, count)]
        elif block.kind == "table":
            parts = [(row, "\n") for row in block.text.split("\n")]
        else:
            parts = _prose_parts(block.text)
        is_list = block.kind == "prose" and _STARTS_LIST.match(block.text) is not None
        for part, joiner in parts:
            fitting = _tokens_within(part, budget, count)
            subs = [(part, fitting)] if fitting is not None else _split_words(part, budget, count)
            mid_item = is_list and joiner == " "
            for n, (sub, sub_tokens) in enumerate(subs):
                opens = not (n or mid_item)
                pieces.append(Piece(sub, sub_tokens, index, joiner, block.char_start, block.char_end, opens))
    return pieces


def _prose_parts(text: str) -> list[tuple[str, str]]:
    """A long paragraph's sentences, or a long list's items and their sentences, each with how it
    joins the part before it."""
    return [
        (sentence, " " if n else "\n")
        for item in _LIST_ITEM.split(text)
        for n, sentence in enumerate(_sentences(item))
    ]


def _sentences(text: str) -> list[str]:
    """``text`` cut after each sentence's end, except inside a code span: "(8 to 64 of
    `A-Z a-z 0-9 . _ -`) is for correlation only" was cut after its ". " and quoted from "_ -`)"."""
    spans = code_spans(text) if "`" in text else []
    opens = [start for start, _ in spans]

    def in_code(at: int) -> bool:
        n = bisect.bisect_right(opens, at) - 1  # the last span opening before ``at``
        return n >= 0 and at < spans[n][1]

    cuts = [m for m in _SENTENCE_END.finditer(text) if not in_code(m.start())]
    starts = [0, *(m.end() for m in cuts)]
    ends = [*(m.start() for m in cuts), len(text)]
    return [text[a:b] for a, b in zip(starts, ends, strict=True)]


def _chars(piece: Piece) -> int:
    """The characters a piece adds to a chunk, with the joiner before it (at most a blank line): a
    list cut into many short items must not outgrow the character bound by its line breaks."""
    return len(piece.text) + 2


def _render(pieces: list[Piece]) -> str:
    out: list[str] = []
    for n, piece in enumerate(pieces):
        if n:
            out.append((piece.joiner or "\n") if piece.block == pieces[n - 1].block else "\n\n")
        out.append(piece.text)
    return "".join(out)


def _item_start(current: list[Piece], fresh: int) -> int:
    """Where the list item (or the sentence) that ``current`` ends inside starts, when the chunk keeps
    a piece of its own before it: the next chunk then opens on the item, not on its second sentence."""
    for k in range(len(current) - 1, len(current) - fresh, -1):
        if current[k].opens:
            return k
    return len(current)


def _overlap(head: list[Piece], ahead: list[Piece], overlap: int, budget: int, max_chars: int) -> list[Piece]:
    """The trailing pieces of ``head`` that the next chunk repeats: at most ``overlap`` tokens, room
    left for ``ahead``, and opening where a chunk may open."""
    ahead_tokens = sum(p.tokens for p in ahead)
    ahead_chars = sum(_chars(p) for p in ahead)
    carried: list[Piece] = []
    tokens = chars = 0
    for prev in reversed(head):
        tokens += prev.tokens
        chars += _chars(prev)
        if tokens > overlap or tokens + ahead_tokens > budget or chars + ahead_chars > max_chars:
            break
        carried.insert(0, prev)
    while carried and not carried[0].opens:
        carried.pop(0)
    return carried


def chunk_blocks(
    blocks: tuple[Block, ...],
    *,
    budget: int,
    overlap: int,
    min_tokens: int,
    hard_limit: int,
    count: TokenCounter,
) -> list[ChunkText]:
    """Chunks of at most ``budget`` tokens (``hard_limit`` when a tiny tail is merged)."""
    max_chars = MAX_CHARS_PER_TOKEN * budget
    pieces = _pieces(blocks, budget, count)
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    current_tokens = current_chars = 0
    fresh = 0  # pieces in ``current`` that are not overlap from the previous chunk
    for piece in pieces:
        over = current_tokens + piece.tokens > budget or current_chars + _chars(piece) > max_chars
        if current and fresh and over:
            cut = len(current) if piece.opens else _item_start(current, fresh)
            if sum(p.tokens for p in current[cut:]) + piece.tokens > budget or (
                sum(_chars(p) for p in current[cut:]) + _chars(piece) > max_chars
            ):
                cut = len(current)  # the item is too long for one chunk: it is cut where it overflows
            head, moved = current[:cut], current[cut:]
            groups.append(head)
            current = _overlap(head, [*moved, piece], overlap, budget, max_chars) + moved
            current_tokens = sum(p.tokens for p in current)
            current_chars = sum(_chars(p) for p in current)
            fresh = len(moved)
        current.append(piece)
        current_tokens += piece.tokens
        current_chars += _chars(piece)
        fresh += 1
    if current and fresh:
        tail = current[len(current) - fresh :]
        tail_tokens = sum(p.tokens for p in tail)
        if groups and tail_tokens < min_tokens:
            previous_tokens = sum(p.tokens for p in groups[-1])
            previous_chars = sum(_chars(p) for p in groups[-1])
            if (
                previous_tokens + tail_tokens <= hard_limit
                and previous_chars + sum(_chars(p) for p in tail) <= MAX_CHARS_PER_TOKEN * hard_limit
            ):
                groups[-1] = groups[-1] + tail
                current = []
        if current:
            groups.append(current)
    return [ChunkText(_render(g), g[0].char_start, g[-1].char_end, sum(p.tokens for p in g)) for g in groups]
