"""The citations block: one verbatim passage per cited source, unless the answer already quotes it.

A quote is a whole passage of the source (a paragraph, a list with its lead-in, a code block with its
introduction: see ``retrieval.passages``), the one that shares most words with what the answer says
with that source's citation. It is Markdown, rendered as such by the widget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bookwise.generation.citations import strip_markers
from bookwise.generation.events import Quote
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passages import passages_of
from bookwise.retrieval.snippets import flat, words


def _claims(answer: str, n: int) -> str:
    """The answer's sentences that cite source ``n``: what its quote should support."""
    return " ".join(s for s in re.split(r"(?<=[.!?])\s+|\n+", answer) if f"[{n}]" in s)


def quotes_for(answer: str, sources: Sequence[SectionResult], used: Sequence[int]) -> list[Quote]:
    """For each cited source, its passage closest to what the answer says with that citation."""
    answer_text = flat(strip_markers(answer))
    found = []
    for n in used:
        if not 1 <= n <= len(sources):
            continue
        claim = words(_claims(answer, n))
        candidates = [p.text for p in passages_of(sources[n - 1].text)]
        if not candidates:
            continue
        best = max(candidates, key=lambda text: (len(words(text) & claim), -candidates.index(text)))
        if flat(best) in answer_text:  # already quoted in the answer: no double citation
            continue
        found.append(Quote(n=n, text=best, url=sources[n - 1].url))
    return found
