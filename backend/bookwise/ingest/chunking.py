"""Section → child chunks sized in the embedding model's tokens. A chunk never crosses a section.

Blocks are cut into pieces (sentences for prose, line groups for code, rows for tables), then packed
greedily up to the budget; consecutive chunks repeat up to ``overlap`` tokens of trailing pieces,
and a trailing piece smaller than ``min_tokens`` joins the previous chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bookwise.ingest.models import Block

TokenCounter = Callable[[str], int]

_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\[`*_(\"'])")


@dataclass(frozen=True)
class Piece:
    text: str
    tokens: int
    block: int  # index of the block it came from: pieces of one block join with " " or "\n"
    joiner: str  # how it joins the previous piece of the same block
    char_start: int
    char_end: int


@dataclass(frozen=True)
class ChunkText:
    text: str
    char_start: int
    char_end: int
    tokens: int


def _split_words(text: str, budget: int, count: TokenCounter) -> list[str]:
    words, out, current = text.split(" "), [], ""
    for word in words:
        candidate = f"{current} {word}" if current else word
        if current and count(candidate) > budget:
            out.append(current)
            current = word
        else:
            current = candidate
    if current:
        out.append(current)
    # A single "word" longer than the budget (minified code, a data URI) is cut by characters.
    result: list[str] = []
    for part in out:
        while count(part) > budget and len(part) > 1:
            cut = max(1, len(part) * budget // max(count(part), 1))
            result.append(part[:cut])
            part = part[cut:]
        result.append(part)
    return result


def _pieces(blocks: tuple[Block, ...], budget: int, count: TokenCounter) -> list[Piece]:
    pieces: list[Piece] = []
    for index, block in enumerate(blocks):
        tokens = count(block.text)
        if tokens <= budget:
            pieces.append(Piece(block.text, tokens, index, "", block.char_start, block.char_end))
            continue
        if block.kind == "code":
            lines = block.text.split("\n")
            fence_open, fence_close, body = lines[0], lines[-1], lines[1:-1]
            groups: list[str] = []
            current: list[str] = []
            for line in body:
                candidate = "\n".join([fence_open, *current, line, fence_close])
                if current and count(candidate) > budget:
                    groups.append("\n".join([fence_open, *current, fence_close]))
                    current = []
                current.append(line)
            if current:
                groups.append("\n".join([fence_open, *current, fence_close]))
            parts, joiner = groups, "\n"
        elif block.kind == "table":
            parts, joiner = block.text.split("\n"), "\n"
        else:
            parts, joiner = _SENTENCE_END.split(block.text), " "
        for part in parts:
            subparts = [part] if count(part) <= budget else _split_words(part, budget, count)
            for sub in subparts:
                pieces.append(Piece(sub, count(sub), index, joiner, block.char_start, block.char_end))
    return pieces


def _render(pieces: list[Piece]) -> str:
    out = ""
    for n, piece in enumerate(pieces):
        if n == 0:
            out = piece.text
        elif piece.block == pieces[n - 1].block:
            out += (piece.joiner or "\n") + piece.text
        else:
            out += "\n\n" + piece.text
    return out


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
    pieces = _pieces(blocks, budget, count)
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    current_tokens = 0
    fresh = 0  # pieces in ``current`` that are not overlap from the previous chunk
    for piece in pieces:
        if current and fresh and current_tokens + piece.tokens > budget:
            groups.append(current)
            carried: list[Piece] = []
            carried_tokens = 0
            for prev in reversed(current):
                if (
                    carried_tokens + prev.tokens > overlap
                    or prev.tokens + piece.tokens > budget - carried_tokens
                ):
                    break
                carried.insert(0, prev)
                carried_tokens += prev.tokens
            current, current_tokens, fresh = carried, carried_tokens, 0
        current.append(piece)
        current_tokens += piece.tokens
        fresh += 1
    if current and fresh:
        tail_tokens = sum(p.tokens for p in current[len(current) - fresh :])
        if groups and tail_tokens < min_tokens:
            previous_tokens = sum(p.tokens for p in groups[-1])
            if previous_tokens + tail_tokens <= hard_limit:
                groups[-1] = groups[-1] + current[len(current) - fresh :]
                current = []
        if current:
            groups.append(current)
    return [ChunkText(_render(g), g[0].char_start, g[-1].char_end, sum(p.tokens for p in g)) for g in groups]
