"""An answer cut into what the judge checks one by one: sentences, list items, table rows, code."""

from __future__ import annotations

import re

from bookwise.evaluation.answers.checks import FENCE

_SENTENCE_END = re.compile(r"[.!?][\"')\]”’*_]*(?:\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])*+(?=\s+[^a-z\s]|\s*$)")


def answer_sentences(answer: str) -> list[str]:
    """What the judge checks one by one: the answer's sentences, list items and table rows; a code
    block goes with the sentence before it (``Wrap it [1]:`` + the code), as it is that sentence's claim."""
    units: list[str] = []
    for block in _blocks(answer):
        if FENCE.match(block) and units:
            units[-1] = f"{units[-1]}\n{block}"
        elif FENCE.match(block):
            units.append(block)
        else:
            units.extend(_split_sentences(block))
    return units


_QUOTE_MARKS = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)+")
_ITEM_START = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s|^\s*\|")


def _blocks(answer: str) -> list[str]:
    """Paragraphs (hard-wrapped lines joined), list items and table rows, and whole fenced code
    blocks. Quote marks are dropped: a quoted sentence is a claim like any other."""
    blocks: list[str] = []
    paragraph: list[str] = []
    fence: list[str] | None = None

    def end_paragraph() -> None:
        if paragraph:
            blocks.append(" ".join(paragraph))
            paragraph.clear()

    for raw in answer.splitlines():
        line = _QUOTE_MARKS.sub("", raw)
        if fence is not None:
            fence.append(line)
            if FENCE.match(line):
                blocks.append("\n".join(fence))
                fence = None
        elif FENCE.match(line):
            end_paragraph()
            fence = [line]
        elif not line.strip() or _ITEM_START.match(line):
            end_paragraph()
            if line.strip():
                paragraph.append(line.strip())
        else:
            paragraph.append(line.strip())
    end_paragraph()
    if fence is not None:
        blocks.append("\n".join(fence))
    return blocks


def _split_sentences(line: str) -> list[str]:
    # A citation marker after the full stop still belongs to the sentence before it (the markers are
    # taken possessively: "One! [2] two" is not cut before "[2]" just because "two" is lowercase).
    cuts = [m.end() for m in _SENTENCE_END.finditer(line)]
    pieces = [line[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]
    return [p for p in pieces if p]
