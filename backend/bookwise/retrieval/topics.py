"""What a question is about: its words minus the ones that only say what kind of answer is wanted.

"what's atan2 for" names a topic (atan2); "how do I fix it?", "why?" and "explain this" do not, so a
follow-up or a question about a selection has to borrow its topic from the conversation or the passage.
"""

from __future__ import annotations

import functools
import re

from bookwise.index.sparse import Bm25Encoder
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


# A run of a question's words names one thing when two or three of them stand together with no stop
# word, generic word, punctuation or hyphenated word between them: "model predictive controller",
# "particle filter". Longer runs are clauses ("wheel overshot wildly once"), not names.
# Words that join a clause rather than a name ("danger callout inside an info callout", "wind up").
_NOT_IN_NAMES = frozenset(
    "inside outside into onto through before after behind beside next without within once twice just only "
    "very really actually always never up down off out over under was were been being has have had will "
    "would could may might must shall not no".split()
)
_RUN_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:[-'’][A-Za-z0-9_]+)*|[^\sA-Za-z0-9_]")
PHRASE_WORDS = (2, 3)


def topic_phrases(query: str) -> list[tuple[str, ...]]:
    """The runs of ``query``'s topic words that may name one thing together, each as its words."""
    found: list[tuple[str, ...]] = []
    run: list[str] = []
    for token in [*_RUN_TOKEN.findall(query), "."]:
        lower = token.lower()
        plain = lower.isascii() and (lower.isalnum() or "_" in lower) and not lower.isdigit()
        if plain and len(lower) > 1 and lower not in STOP_WORDS | GENERIC | _NOT_IN_NAMES:
            run.append(token)
            continue
        if PHRASE_WORDS[0] <= len(run) <= PHRASE_WORDS[1]:
            found.append(tuple(run))
        run = []
    return list(dict.fromkeys(found))


_BM25 = Bm25Encoder()
_STEM_WORD = re.compile(r"[a-z0-9_]+")


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> int | None:
    ids = _BM25.query(word).indices
    return ids[0] if len(ids) == 1 else None


def stems(text: str) -> tuple[int, ...]:
    """The BM25 stems (as ids) of ``text``'s words in order, stop words left out: "particle filters"
    and "particle filter" are one run."""
    return tuple(
        i for w in _STEM_WORD.findall(text.lower()) if w not in STOP_WORDS and (i := _stem(w)) is not None
    )


# "What is odometry?", "What's a rigid transform?", "What does Ku mean?", "Define bias.": the question
# asks what something is; "the difference between bias and noise" asks it of two things.
_DEFINITION = re.compile(
    r"^(?:what|who)(?:'s|’s|\s+is|\s+are)\s+(?:an?\s+|the\s+)?(?P<is>[^?]+?)\s*\??$"
    r"|^what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<mean>[^?]+?)\s+mean\s*\??$"
    r"|^define\s+(?:an?\s+|the\s+)?(?P<define>[^?.]+?)\s*[.?]?$",
    re.IGNORECASE,
)
_DIFFERENCE = re.compile(
    r"\bdifference\s+between\s+(?:an?\s+|the\s+)?(?P<a>[\w`-]+(?:\s+[\w`-]+)?)\s+and\s+"
    r"(?:an?\s+|the\s+)?(?P<b>[\w`-]+)",
    re.IGNORECASE,
)
DEFINED_MAX_WORDS = 4  # "What is a step-by-step way to pick the gains…" asks for a method, not a definition


def defined_terms(question: str) -> list[str]:
    """The terms ``question`` asks the definition of: ["odometry"] for "What is odometry?"."""
    text = " ".join(question.split())
    difference = _DIFFERENCE.search(text)
    if difference is not None:
        found = [difference.group("a"), difference.group("b")]
    elif (asked := _DEFINITION.match(text)) is not None:
        found = [next(g for g in asked.groups() if g)]
    else:
        return []
    terms = [t.strip("` ") for t in found]
    return [t for t in terms if t and len(t.split()) <= DEFINED_MAX_WORDS and stems(t)]
