"""The answer without a language model: the book's own sentences that best match the question.

Sentences of the retrieved sections are scored by the question words they share, rarer words (across
the candidate sentences) counting more, with a small preference for better-ranked sections. The best
few are quoted verbatim, each with its ``[n]`` citation, under a line that says this is an
extractive answer: nothing is paraphrased, so nothing can be made up.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.snippets import sentences, words

EXTRACTIVE_LABEL = (
    "*Extractive answer: no language model is configured, so these are the passages of the book "
    "that best match your question.*"
)
NOT_COVERED = "The book does not seem to cover this. The closest sections are listed in the sources."
MIN_WORDS = 4  # shorter fragments (headings, labels) make poor answers
RANK_DECAY = 0.15  # each step down the source list costs this share of a sentence's score
# A Markdown link or image in the source: only its text is quoted. Its target is a source file path
# (`../01-basics/setup.mdx`), which is no URL on the site, and an image would load from anywhere.
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


@dataclass(frozen=True)
class Passage:
    source: int  # 1-based number of the section in the sources list
    text: str
    score: float


def quotable_sentences(text: str) -> list[str]:
    """A section's sentences that can stand alone as a quote (no fragments, no "…" cut marks)."""
    plain = (_LINK.sub(r"\1", s) for s in sentences(text))
    return [s for s in plain if len(s.split()) >= MIN_WORDS and s != "…"]


def best_passages(question: str, sections: Sequence[SectionResult], limit: int = 3) -> list[Passage]:
    wanted = words(question)
    candidates = [
        (n, sentence, words(sentence))
        for n, section in enumerate(sections, start=1)
        for sentence in quotable_sentences(section.text)
    ]
    if not wanted or not candidates:
        return []
    frequency = Counter(word for _, _, found in candidates for word in found & wanted)
    total = len(candidates)
    scored = []
    for n, sentence, found in candidates:
        shared = found & wanted
        if not shared:
            continue
        weight = sum(math.log(1 + total / frequency[w]) for w in shared)
        scored.append(Passage(n, sentence, weight * (1 - RANK_DECAY) ** (n - 1)))
    scored.sort(key=lambda p: -p.score)
    chosen: list[Passage] = []
    for passage in scored:
        if all(passage.text != c.text for c in chosen):
            chosen.append(passage)
        if len(chosen) == limit:
            break
    return chosen


def extractive_answer(question: str, sections: Sequence[SectionResult], *, sufficient: bool) -> str:
    """Markdown: the label, then each passage as a quote with its citation."""
    passages = best_passages(question, sections) if sufficient else []
    if not passages:
        return NOT_COVERED
    quotes = "\n\n".join(f"> {p.text} [{p.source}]" for p in passages)
    return f"{EXTRACTIVE_LABEL}\n\n{quotes}"


SELECTION_LABEL = (
    "*Extractive answer: no language model is configured, so these are the sentences of your "
    "selection that bear on the question.*"
)
# Words of requests about the passage itself ("explain this", "what does it mean?"): they ask for
# the whole selection rather than for something in it.
GENERIC_ASK = frozenset(
    "explain explanation mean means meaning summarize summarise summary simplify clarify elaborate "
    "describe tell rephrase paraphrase passage selection selected text paragraph sentence part".split()
)
SELECTION_QUOTED = 3


def selection_answer(question: str, selection: SectionResult) -> str | None:
    """The selection's own sentences that answer; None when the selection does not bear on it."""
    if words(question) - GENERIC_ASK:
        quoted = [p.text for p in best_passages(question, [selection], limit=SELECTION_QUOTED)]
        if not quoted:
            return None
    else:
        quoted = quotable_sentences(selection.text)[:SELECTION_QUOTED] or [" ".join(selection.text.split())]
    return SELECTION_LABEL + "\n\n" + "\n\n".join(f"> {text} [1]" for text in quoted)
