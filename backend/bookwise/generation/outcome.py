"""Whether a model's answer declined, decided from what it did rather than from its wording.

The prompts ask the model to cite every statement drawn from the material (``[1]``, ``[2]``…) and to
say plainly, without a citation, when the material does not answer. So an answer that cites nothing
declined, in whatever words or language it said so. A long answer that cites nothing but repeats
the material's own words is taken as an answer that forgot its citations, not as a refusal.
"""

from __future__ import annotations

from collections.abc import Sequence

from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.snippets import words

UNCITED_ANSWER_WORDS = 40  # an uncited reply this long may still be an answer…
UNCITED_ANSWER_OVERLAP = 0.6  # …if this share of its words come from the material


def declines(answer: str, cited: Sequence[int], sources: Sequence[SectionResult]) -> bool:
    if cited:
        return False
    if len(answer.split()) < UNCITED_ANSWER_WORDS:
        return True
    said = words(answer)
    material = set().union(*(words(s.text) for s in sources)) if sources else set()
    return not said or len(said & material) / len(said) < UNCITED_ANSWER_OVERLAP
