"""What a question is about: its words minus the ones that only say what kind of answer is wanted.

"what's atan2 for" names a topic (atan2); "how do I fix it?", "why?" and "explain this" do not, so a
follow-up or a question about a selection has to borrow its topic from the conversation or the passage.
"""

from __future__ import annotations

import re

from bookwise.retrieval.snippets import STOP_WORDS, words

# Words that ask for a kind of answer, or point back, without naming anything in the book.
GENERIC = frozenset(
    "explain explanation mean means meaning summarize summarise summary simplify clarify elaborate "
    "describe tell rephrase paraphrase passage selection selected text paragraph sentence part simply "
    "simple simpler words plain example examples more else also about again instead fix fixed work works "
    "working use used using need needed happen happens happened wrong right better best way ways mean "
    "other another one ones first second third last former latter previous earlier above same thing things "
    "them they their these those there its it's here please thanks ok okay so then but also and why "
    "whats what's vs versus compare compared comparison difference differences between".split()
)


def topic_words(text: str) -> set[str]:
    return words(text) - GENERIC


def names_a_topic(question: str) -> bool:
    return bool(topic_words(question))


_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def topic_text(query: str) -> str:
    """The query without its stop and generic words; single letters stay ("R", "Q" are symbols)."""
    kept = [t for t in _TOKEN.findall(query) if t.lower() not in GENERIC and t.lower() not in STOP_WORDS]
    return " ".join(kept) or query
