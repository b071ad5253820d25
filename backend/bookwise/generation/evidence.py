"""The extractive answer's plan: which passages to quote, which sources to list, whether to decline.

Sources are renumbered in the order the answer quotes them, so the first quote is ``[1]``; the other
retrieved sections stay listed after them only when their best passage scores near the quoted ones
(a section far below is no evidence). A passage the reader was already shown in this conversation
is not quoted again: "how do I fix it?" should not repeat the previous answer.

Declining uses the passage evidence as well as retrieval's calibrated verdict: the book is taken to
answer when retrieval says so and the best passage holds at least some of the question's terms, or
when the best passage is a strong match on its own (the verdict misses some answerable questions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bookwise.generation.extractive import Quoted, choose
from bookwise.generation.prompts import Turn
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passage_rank import ScoredPassage

FAR_BELOW = 0.3  # a source whose best passage scores this far under the best one is not listed
MIN_COVERAGE = 0.2  # with retrieval's "sufficient": the best passage must hold this share of the terms
STRONG_COVERAGE = 0.75  # …or, against retrieval's "insufficient", this share
STRONG_DENSE = 0.55  # …with this cosine
_SPACE = re.compile(r"[\s>]+")


@dataclass(frozen=True)
class PassagePlan:
    sources: list[SectionResult]  # in the order shown; ``quoted`` numbers index this list
    quoted: list[Quoted]
    sufficient: bool
    best: ScoredPassage | None


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _shown_before(history: Sequence[Turn]) -> str:
    return " ".join(_flat(t.content) for t in history if t.role == "assistant")


def answers(best: ScoredPassage | None, *, retrieval_sufficient: bool) -> bool:
    if best is None:
        return False
    if retrieval_sufficient:
        return best.coverage >= MIN_COVERAGE
    return best.coverage >= STRONG_COVERAGE and best.dense >= STRONG_DENSE


def plan_passages(
    ranked: Sequence[ScoredPassage],
    sources: Sequence[SectionResult],
    history: Sequence[Turn],
    *,
    retrieval_sufficient: bool,
) -> PassagePlan:
    shown = _shown_before(history)
    fresh = [p for p in ranked if not shown or _flat(p.passage.text) not in shown]
    best = fresh[0] if fresh else None
    if not answers(best, retrieval_sufficient=retrieval_sufficient):
        return PassagePlan(list(sources), [], False, best)
    assert best is not None
    chosen = choose(fresh)
    order = list(dict.fromkeys(p.passage.section for p in chosen))
    best_of: dict[int, float] = {}
    for scored in ranked:
        best_of.setdefault(scored.passage.section, scored.score)
    order += [
        n
        for n in range(len(sources))
        if n not in order and best_of.get(n, float("-inf")) >= best.score - FAR_BELOW
    ]
    number = {section: i for i, section in enumerate(order, start=1)}
    quoted = [Quoted(number[p.passage.section], p.passage.text) for p in chosen]
    return PassagePlan([sources[n] for n in order], quoted, True, best)
