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


# A word as a name is spelled: letters and digits, with inner dots, dashes, pluses or hashes (Node.js, C++).
_NAME = re.compile(r"(?<![\w`])([A-Za-z][A-Za-z0-9+#.-]*[A-Za-z0-9+#])")
_SENTENCE_END = ".?!:"


def probed_words(query: str) -> list[str]:
    """The words of ``query`` to look up one by one in the book: its names (``named_words``) and its
    topic words (``topic_text``), each once, in the order asked."""
    topic = [t for t in _TOKEN.findall(topic_text(query)) if not t.isdigit() and len(t) > 1]
    return list(dict.fromkeys([*named_words(query), *topic]))


def named_words(query: str) -> list[str]:
    """The words of ``query`` spelled as names: with a capital inside (OpenAPI, WebP, S3) or
    capitalised away from a sentence's start (Firebase, Tailwind). "I" and a sentence's first word
    are not names; a question typed in lower case has none."""
    found: list[str] = []
    for match in _NAME.finditer(query):
        word = match.group(1)
        before = query[: match.start()].rstrip(" \"'(`")
        starts_sentence = not before or before[-1] in _SENTENCE_END
        inner_capital = any(c.isupper() for c in word[1:])
        if inner_capital or (word[0].isupper() and not starts_sentence):
            found.append(word)
    return list(dict.fromkeys(found))
