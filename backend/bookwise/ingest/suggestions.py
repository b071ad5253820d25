"""Questions to suggest on a page, proposed from the page alone (no model): its learning
objectives, its title and headings, and its exercises.

They are proposals: ``retrieval.suggestions`` keeps a question only when retrieval ranks one of the
page's own sections first (``check``), so every suggestion is one the book answers from that page.
A question about the page itself ("What are the exercises on this page?") is answered from the
reader's page by the chat API, not searched, so it needs no check. Quiz pages are offered by their
questions, never by their answers; labs by what the reader will do.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from bookwise.ingest.models import Document

PROPOSED = 8  # proposals checked per page (three at most are kept)
MAX_CHARS = 120  # a suggestion is a button label
NOUN_PHRASE_WORDS = 5
_SKIPPED_HEADING = re.compile(
    r"\b(?:exercises?|quiz|solutions?|answers?|worked example|example|summary|further reading|references|"
    r"next steps|before you start|prerequisites|see also|what's next)\b",
    re.IGNORECASE,
)
_EXERCISE_HEADING = re.compile(r"\b(?:exercises?|quiz|problems|self-check|review questions)\b", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:the|a|an)\s", re.IGNORECASE)
_EXPLAIN_VERBS = ("explain", "describe", "understand")
_DEFINE_VERBS = ("define", "name", "recognize", "recognise", "identify")
EXERCISE_TYPES = ("quiz", "assessment", "exercise")


@dataclass(frozen=True)
class Proposal:
    question: str
    check: bool = True  # searched at ingest; False: answered from the reader's page by construction

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) == 1 else text


def _from_objective(objective: str) -> str:
    text = " ".join(objective.split()).rstrip(".")
    if text.endswith("?"):
        return text
    verb, _, rest = text.partition(" ")
    if not rest:
        return ""
    if verb.lower() in _EXPLAIN_VERBS:
        return f"Can you explain {rest}?"
    if verb.lower() in _DEFINE_VERBS:
        return f"What is {rest}?"
    return f"How do I {_lower_first(text)}?"


def _about(phrase: str) -> str:
    phrase = phrase.strip().rstrip(".")
    if phrase.endswith("?"):
        return phrase
    if ":" in phrase:
        before, _, after = phrase.partition(":")
        phrase = after.strip() if _ARTICLE.match(after.strip()) else before.strip()
    words = phrase.split()
    if not words:
        return ""
    if len(words) <= NOUN_PHRASE_WORDS and not words[0].lower().endswith("ing"):
        return f"What is {_lower_first(phrase) if _ARTICLE.match(phrase) else phrase}?"
    return f"What should I know about {_lower_first(phrase)}?"


def propose(document: Document) -> list[Proposal]:
    """The page's candidate questions, best first."""
    kind = document.content_type
    if kind in EXERCISE_TYPES:
        return [Proposal("What are the questions on this page?", check=False)]
    found: list[Proposal] = [Proposal(q) for q in map(_from_objective, document.learning_objectives) if q]
    if kind == "lab":
        found.append(Proposal("Summarize this lab", check=False))
    found.append(Proposal(_about(document.title)))
    headings = [s for s in document.sections if s.level == 2 and s.heading_text and s.blocks]
    found += [
        Proposal(_about(s.heading_text)) for s in headings if not _SKIPPED_HEADING.search(s.heading_text)
    ]
    if any(_EXERCISE_HEADING.search(s.heading_text) for s in document.sections if s.heading_text):
        found.append(Proposal("What are the exercises on this page?", check=False))
    unique: dict[str, Proposal] = {}
    for proposal in found:
        if proposal.question and len(proposal.question) <= MAX_CHARS:
            unique.setdefault(proposal.question.lower(), proposal)
    return list(unique.values())[:PROPOSED]
