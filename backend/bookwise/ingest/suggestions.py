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

from bookwise.ingest.documents import EXERCISE_TYPES
from bookwise.ingest.models import Document

PROPOSED = 8  # proposals checked per page (three at most are kept)
MAX_CHARS = 120  # a suggestion is a button label
NOUN_PHRASE_WORDS = 5
_SKIPPED_HEADING = re.compile(
    r"\b(?:exercises?|quiz|solutions?|answers?|worked example|example|summary|further reading|references|"
    r"next steps|before you start|prerequisites|see also|what's next|questions)\b",
    re.IGNORECASE,
)
_EXERCISE_HEADING = re.compile(r"\b(?:exercises?|quiz|problems|self-check|review questions)\b", re.IGNORECASE)
_ARTICLES = ("the", "a", "an")
_QUESTION_WORDS = ("how", "why", "what", "when", "where", "which", "who")
_PREPOSITIONS = (
    "from",
    "beyond",
    "to",
    "with",
    "into",
    "on",
    "in",
    "for",
    "about",
    "between",
    "inside",
    "after",
)
_VERSUS = re.compile(r"\s+(?:versus|vs\.?)\s+", re.IGNORECASE)
_EXPLAIN_VERBS = ("explain", "describe", "understand")
_DEFINE_VERBS = ("define", "name", "recognize", "recognise", "identify")


@dataclass(frozen=True)
class Proposal:
    question: str
    check: bool = True  # searched at ingest; False: answered from the reader's page by construction

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _lower_first(text: str) -> str:
    """ "The Kalman Filter" → "the Kalman Filter", "Pure pursuit" → "pure pursuit"; a title-case
    phrase, a name, an acronym or a possessive is kept as written."""
    first, _, rest = text.partition(" ")
    if first.lower() in _ARTICLES:
        return f"{first.lower()} {rest}".strip()
    plain_word = first.isalpha() and first[:1].isupper() and first[1:].islower()
    title_case = any(word[:1].isupper() for word in rest.split())
    return f"{first.lower()} {rest}".strip() if plain_word and not title_case else text


def _plural(phrase: str) -> bool:
    """A rough number for "What is/are …?": a list, or a plural noun among the first words."""
    if "," in phrase or " and " in phrase:
        return True
    words = [w for w in phrase.split() if w.lower() not in _ARTICLES][:3]
    return any(
        len(w) > 3 and w.lower().endswith("s") and not w.lower().endswith(("ss", "'s", "is", "us"))
        for w in words
    )


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
    return f"How do I {verb.lower() if verb[1:].islower() else verb} {rest}?"  # a verb, never a name


def _about(phrase: str) -> str:
    """A heading or title as a question a reader would ask; "What does “…” cover?" when its
    grammar is unclear (a gerund, a preposition)."""
    phrase = " ".join(phrase.split()).rstrip(".")
    if phrase.endswith("?"):
        return phrase
    if ":" in phrase:
        before, _, after = phrase.partition(":")
        after, before = after.strip(), before.strip()
        use_after = after.split()[:1] and (after.split()[0].lower() in _ARTICLES or len(before.split()) < 2)
        phrase = after if use_after else before
    words = phrase.split()
    if not words:
        return ""
    first = words[0].lower()
    if first in _QUESTION_WORDS:
        return f"Can you explain {_lower_first(phrase)}?"
    versus = _VERSUS.split(phrase)
    if len(versus) == 2:
        return f"What is the difference between {_lower_first(versus[0])} and {versus[1]}?"
    if len(words) <= NOUN_PHRASE_WORDS and not first.endswith("ing") and first not in _PREPOSITIONS:
        return f"What {'are' if _plural(phrase) else 'is'} {_lower_first(phrase)}?"
    return f"What does “{phrase}” cover?"


def propose(document: Document) -> list[Proposal]:
    """The page's candidate questions, best first."""
    kind = document.content_type
    if kind in EXERCISE_TYPES:
        return [Proposal("What are the questions on this page?", check=False)]
    found: list[Proposal] = [Proposal(q) for q in map(_from_objective, document.learning_objectives) if q]
    if kind == "lab":
        found.append(Proposal("Summarize this lab", check=False))
    if len(document.title.split()) > 1:  # "Welcome", "Introduction": no question in them
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
    # The cap is on questions to search; one about the page itself is never cut by it.
    searched = [p for p in unique.values() if p.check][:PROPOSED]
    return [p for p in unique.values() if not p.check or p in searched]
