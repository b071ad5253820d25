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
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from bookwise.ingest.documents import EXERCISE_TYPES, is_exercise_heading
from bookwise.ingest.models import Document

PROPOSED = 8  # proposals checked per page (three at most are kept)
MAX_CHARS = 120  # a suggestion is a button label
NOUN_PHRASE_WORDS = 5
_SKIPPED_HEADING = re.compile(
    r"\b(?:exercises?|quiz|solutions?|answers?|worked example|example|summary|further reading|references|"
    r"next steps|before you start|prerequisites|see also|what's next|what you['’]ve learned|questions)\b",
    re.IGNORECASE,
)
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
    *"""above across against along among around before behind below beneath beside by during near off
    onto outside over past since through toward towards under until upon via within without""".split(),
)
_VERSUS = re.compile(r"\s+(?:versus|vs\.?)\s+", re.IGNORECASE)
_EXPLAIN_VERBS = ("explain", "describe", "understand")
_DEFINE_VERBS = ("define", "name", "recognize", "recognise", "identify")
# Verbs a documentation heading starts with when it names a task ("Create a doc", "Using plugins"):
# such a heading is asked as "How do I …?". A heading whose first word is not one of them is a
# noun phrase ("Guiding principles", "Learning resources"), whatever its ending.
_TASK_VERBS = frozenset(
    """access add adjust apply avoid build call change check choose clean combine compare compose compute
    configure connect convert correct create customize customise debug declare define delete deploy derive
    design disable dispatch display edit embed enable escape extend fetch filter find fix generate get
    handle hide host implement import improve inject insert install integrate isolate keep link load
    localize log make manage map measure migrate modernize move normalize normalise organize organise
    override pass populate prepare publish read record reduce refactor refresh register remove render
    replace request reuse rotate run scaffold search select send serve set share show simplify slow
    sort specify split start stop store structure style swizzle switch sync tag test track transform
    translate troubleshoot tune type update upgrade upload use validate wrap write""".split()
)
# Words a Title Case heading capitalises that the question writes in lower case.
_SMALL_WORDS = frozenset(
    """a an the and or but nor of to in on at by for with from into onto over under about as via per
    it its is are be not your you my our their this that these those how what when where why which who
    do does can should""".split()
)
# Task verbs that are nouns as often ("Store API", "Design decisions", "Update rate"): a heading starts
# with one as a task only when what follows it is plainly its object ("Design a normalized state").
_NOUN_TOO = frozenset(
    """access build call change check design display edit escape filter fix host import link load log
    map read record request run search set share show sort start stop store structure style switch tag
    test track tune type update use""".split()
)
_OBJECT_START = frozenset(
    "a an the your my our this these that those it them to with from into in on for up out".split()
)
_DETERMINERS = frozenset("a an the your my our this these those".split())
_NOT_VERBS = frozenset(
    """about above across after against along among around at before behind below beneath beside
    between beyond by during for from in inside into like near of off on onto out outside over past per
    since than through to toward towards under unlike until up upon via with within without welcome
    what when where which who why how a an the all both each every""".split()
)
_PERSON = {"your": "my", "you": "I", "yourself": "myself", "yours": "mine"}
_EDGE_SYMBOLS = re.compile(r"^[^\w\s\x00-\x7f]+\s*|\s*[^\w\s\x00-\x7f]+$")  # emoji: "📦 logger"
_CODE_OR_LINK = re.compile(r"`[^`]*`|\]\([^)]*\)|https?://\S+")
_LATER_WORD = re.compile(r"(?:(?<=\w )|(?<=\w, )|(?<=\w; ))([^\W\d_][\w'’-]*)")
_NOT_GERUNDS = frozenset("something nothing anything everything string during".split())
_GENERIC_PARTS = frozenset("introduction tutorial overview basics reference guide".split())
# A heading of only these words names a part every page may have ("Overview", "Caveats", "Rule details",
# "Help and discussion"): asked alone it says nothing of the page ("What are goals?"), so it is not offered.
_GENERIC_HEADING_NOUNS = frozenset(
    """overview introduction installation setup usage configuration features goals caveats arguments
    parameters returns thanks acknowledgements credits documentation tradeoffs trade-offs use-cases
    initialization details notes background motivation options examples resources contents differences
    suggestions help discussion limitations alternatives recommendations rules history purpose read""".split()
)
_GENERIC_HEADING_WORDS = _GENERIC_HEADING_NOUNS | frozenset(
    """use cases table more main new further additional other general basic initial key common supported
    known rule important and of""".split()
)
_DETERMINER_WORDS = "the|an?|this|that|each|every|its|their|your|our|my"
# Words after a noun that end its phrase ("the sidebar is", "a store with"): a noun before any other
# word may be that word's modifier ("the store setup").
_FUNCTION_WORDS = frozenset(
    """is are was were be been has have had can could will would should may might must does do did of in
    on at to for with from by as and or but that which who when where while if than so it""".split()
)
_COPULA = frozenset("is are was were become becomes".split())
_CODE_HEADING = re.compile(r"`[^`]+`")  # a heading that is one piece of code: "`bookwise ingest`"
_DASH = re.compile(r"\s+[-–—]\s+")
_CALL = re.compile(r"^(?:async\s+)?([A-Za-z_$][\w$.]*\([^)]*\))$")
_PART = re.compile(r",\s*part\s+\d+\b", re.IGNORECASE)


@dataclass(frozen=True)
class Proposal:
    question: str
    check: bool = True  # searched at ingest; False: answered from the reader's page by construction

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PageWords:
    """What a page's prose (outside code) says about its words: which it capitalises mid-sentence
    (names: "Redux", "Kalman"), and its text, to see a heading used as a noun ("the tuning procedure")."""

    names: frozenset[str] = frozenset()
    prose: str = ""


def _name_like(word: str) -> bool:
    """An acronym, a code name or a word with inner capitals ("RTK", "DevTools", "i18n"): never
    lower-cased."""
    core = word.strip("()[],.:;!?\"'“”‘’")
    return (
        len(core) > 1
        and core.isupper()
        or any(c.isupper() for c in core[1:])
        or any(not c.isalpha() for c in core.replace("-", "").replace("'", "").replace("’", ""))
    )


def _lower_first(text: str) -> str:
    """ "The Kalman Filter" → "the Kalman Filter", "Pure pursuit" → "pure pursuit"; a title-case
    phrase, a name, an acronym or a possessive is kept as written."""
    first, _, rest = text.partition(" ")
    if first.lower() in _ARTICLES:
        return f"{first.lower()} {rest}".strip()
    plain_word = first.isalpha() and first[:1].isupper() and first[1:].islower()
    title_case = any(word[:1].isupper() for word in rest.split())
    return f"{first.lower()} {rest}".strip() if plain_word and not title_case else text


def _in_sentence_case(phrase: str, page: PageWords) -> str:
    """A heading's words as a sentence writes them: a Title Case heading's words lower-cased, a
    sentence-case heading's first word, except names (words its page capitalises mid-sentence, a
    possessive), acronyms and code ("Adding New Posts" → "adding new posts", "Pure pursuit" → "pure
    pursuit", "Kálmán's insight" kept)."""
    words = phrase.split()
    later = [w for w in words[1:] if w[:1].isalpha() and w.lower() not in _SMALL_WORDS]
    title = bool(later) and sum(w[:1].isupper() for w in later) * 2 > len(later)

    def cased(index: int, word: str) -> str:
        if _name_like(word) or not word[:1].isupper() or not (title or index == 0):
            return word
        bare = _possessed(word.lower().strip(",.:;()"))
        if bare in _SMALL_WORDS:
            return word.lower()
        if bare in page.names or re.search(r"\w['’]s$", word):
            return word  # a name: the page capitalises it mid-sentence, or it owns something
        return word.lower()

    return " ".join(cased(i, w) for i, w in enumerate(words))


def _base_verb(word: str) -> str | None:
    """The task verb a heading starts with, from its base form or its -ing form ("Using" → "use",
    "Setting" → "set", "Adding" → "add"); None when it is no task verb."""
    lowered = word.lower()
    if lowered in _TASK_VERBS:
        return lowered
    if not lowered.endswith("ing") or len(lowered) < 5:
        return None
    stem = lowered[:-3]
    for candidate in (stem, stem + "e", stem[:-1]):
        if candidate in _TASK_VERBS:
            return candidate
    return None


def _head_noun(phrase: str) -> str:
    """The last word before a preposition or a relative: "rules" of "Rules of reducers"."""
    head: list[str] = []
    for word in phrase.split():
        if word.lower() in _PREPOSITIONS or word.lower() in ("of", "that", "which"):
            break
        head.append(word)
    return head[-1] if head else ""


def _plural(phrase: str) -> bool:
    """A rough number for "What is/are …?": a list, or a plural head noun (the last word before a
    preposition or a relative: "Rules of reducers", "Sensors that measure the world", "Lifecycle APIs")."""
    if "," in phrase or " and " in phrase:
        return True
    head = _head_noun(phrase)
    if re.fullmatch(r"[A-Z]{2,}s", head):  # "APIs", "URLs"
        return True
    word = head.lower()
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "'s", "is", "us", "ics"))


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


def _imperative(words: list[str]) -> bool:
    """A heading whose first word is followed by an article or a possessive, and is no preposition,
    article or question word, and not plural or -ing/-ed/-ly: "Index your site", "Ask the book"."""
    first = words[0].lower()
    return (
        words[1].lower() in _DETERMINERS
        and first.isalpha()
        and first not in _NOT_VERBS
        and not first.endswith(("ing", "ed", "ly", "s"))
    )


def _task(words: list[str], page: PageWords) -> str | None:
    """A heading that names a task ("Create a doc", "Using plugins", "Rotating and translating
    points") as "How do I …?"; None when its first word is no task verb, or reads as a noun here
    ("Store API", "Reading time": the page says "the reading time")."""
    verb = _base_verb(words[0]) if len(words) > 1 and not _name_like(words[0]) else None
    if verb is None and len(words) > 2 and _imperative(words):
        verb = words[0].lower()  # "Index your site": a word before its object's article is a verb
    if verb is None:
        return None
    gerund = words[0].lower().endswith("ing") and verb != words[0].lower()
    follows = words[1].lower()
    if not gerund and verb in _NOUN_TOO and follows not in _OBJECT_START:
        return None
    named = _name_like(words[1]) or _possessed(words[1].lower()) in page.names
    if gerund and len(words) == 2 and not _plural(words[1]) and not named:
        return None  # "Tuning procedure", "Reading time": as likely a thing as a task
    phrase = " ".join(words).lower()
    if re.search(rf"\b(?:the|a|an|this|its|their) {re.escape(phrase)}\b", page.prose):
        return None  # the page uses it as a noun
    rest = _in_sentence_case(" ".join(["x", *words[1:]]), page).split()[1:]
    if follows == "and" and len(rest) > 1:  # "Inserting and removing items"
        second = _base_verb(rest[1])
        if second is None:
            return None  # "Styling and layout": two nouns
        rest[1] = second
    if follows == "up" and verb == "set":  # "Setting up the store"
        verb, rest = "set up", rest[1:]
    if not rest:
        return None
    said = " ".join(_PERSON.get(w.lower(), w) for w in rest)
    return f"How do I {verb} {said}?"


def _about(phrase: str, page: PageWords = PageWords(), *, code: bool = False) -> str:
    """A heading or title as a question a reader would ask: a task ("Create a doc", "Using plugins")
    as "How do I …?", a function as "What does … do?", a question as itself, a noun phrase as "What
    is/are …?" in sentence case; "What does “…” cover?" when its grammar is unclear (a sentence)."""
    phrase = _EDGE_SYMBOLS.sub("", " ".join(phrase.split()).rstrip(".")).strip()
    if phrase.endswith("?"):
        return phrase if len(phrase.split()) > 1 else ""  # "Problems?" asks nothing
    phrase = _DASH.sub(": ", phrase)  # "i18n - Using Crowdin"
    if ":" in phrase and not _CALL.match(phrase):
        before, _, after = phrase.partition(":")
        after, before = after.strip(), before.strip()
        use_after = after.split()[:1] and (after.split()[0].lower() in _ARTICLES or len(before.split()) < 2)
        generic = after.lower() in _GENERIC_PARTS  # "i18n - Introduction" is about i18n
        phrase = after if use_after and not generic else before
    call = _CALL.match(phrase)
    if call:
        return f"What does {call.group(1)} do?"
    words = phrase.split()
    if not words:
        return ""
    first = words[0].lower()
    if _PART.search(phrase):
        return f"What does “{phrase}” cover?"
    if first in _QUESTION_WORDS:
        return f"Can you explain {_in_sentence_case(phrase, page)}?"
    versus = _VERSUS.split(phrase)
    if len(versus) == 2:
        return f"What is the difference between {_lower_first(versus[0])} and {versus[1]}?"
    if re.search(r"n['’]t\b", phrase) or _COPULA.intersection(w.lower() for w in words[1:]):
        # "Something else doesn't work", "The docs are tested", "Routes become HTML files": sentences
        return f"What does “{phrase}” cover?"
    task = _task(words, page)
    if task is not None:
        return task
    if len(words) <= NOUN_PHRASE_WORDS and first.endswith("ing") and first not in _NOT_GERUNDS:
        gerund = f"{first} {' '.join(words[1:])}".strip()  # a gerund is no name
        return f"What should I know about {_in_sentence_case(gerund, page)}?"
    if len(words) <= NOUN_PHRASE_WORDS and first not in _PREPOSITIONS:
        plural = _plural(phrase)
        said = _in_sentence_case(phrase, page)
        bare = plural or code  # `bookwise ingest` is a name
        return f"What {'are' if plural else 'is'} {said if bare else _with_article(said, page)}?"
    return f"What does “{phrase}” cover?"


def _with_article(said: str, page: PageWords) -> str:
    """A singular noun phrase as "What is …?" asks it: with the article its page gives it most ("the
    rate limiter"), else, where the page never writes the phrase as a noun, with "the" when the page
    gives its head noun one ("the default sidebar": "the sidebar"); a name ("Redux Toolkit",
    "plugin-debug") or a phrase the page writes bare ("PID control") as it is."""
    words = said.split()
    if len(words) < 2 or words[0].lower() in _DETERMINERS or re.search(r"\w['’]s\b", said):
        return said  # one word ("State", "Navbar") reads either way; "Kálmán's insight" owns its determiner
    head = _head_noun(said)
    if not head or _name_like(head) or all(w[:1].isupper() or _name_like(w) for w in words):
        return said  # a name: "Redux Toolkit", "TodoMVC", "lifecycle APIs"
    if head.lower().endswith("ics"):
        return said  # "differential drive kinematics", "robotics": a field, never "the"
    article = _article_used(said.lower(), page.prose)
    if article is None:  # the phrase not found as a noun: its head noun's use says if it is countable
        article = _article_used(head.lower(), page.prose) and "the"
    if article in ("a", "an"):  # "a YAML authors file" gave "authors file" its "a"
        article = "an" if said[:1].lower() in "aeiou" else "a"
    return f"{article} {said}" if article else said


def _article_used(phrase: str, prose: str) -> str | None:
    """The article ``prose`` gives ``phrase`` where it ends a noun ("the rate limiter is", not "the
    pure pursuit law"): "the", "a" or "an" when most such uses take one, "" when most are bare, None
    when there is no such use."""
    articles: Counter[str] = Counter()
    uses = 0
    # A determiner counts up to two words before: "the default sidebar" gives "sidebar" its article.
    before = rf"(?:\b({_DETERMINER_WORDS})\s+(?:[a-z][\w-]*\s+){{0,2}}?)?"
    for match in re.finditer(rf"{before}\b{re.escape(phrase)}\b(?:\s+([a-z][\w-]*))?", prose):
        after = match.group(2)
        if after and after not in _FUNCTION_WORDS:
            continue  # a modifier of the next word: "the pure pursuit law"
        uses += 1
        if match.group(1):
            articles[match.group(1) if match.group(1) in _ARTICLES else "the"] += 1
    if not uses:
        return None
    return articles.most_common(1)[0][0] if sum(articles.values()) * 2 >= uses else ""


def _generic(heading: str, title: str) -> bool:
    """Whether a heading names only a part any page may have ("Overview", "Caveats", "Rule details"),
    maybe with its page's subject ("Crowdin overview" on the page "i18n - Using Crowdin")."""
    words = re.findall(r"[\w'’-]+", heading.lower())
    subject = set(re.findall(r"[\w'’-]+", title.lower()))
    return any(w in _GENERIC_HEADING_NOUNS for w in words) and all(
        w in _GENERIC_HEADING_WORDS or w in subject for w in words
    )


def page_words(document: Document) -> PageWords:
    prose = " ".join(b.text for s in document.sections for b in s.blocks if b.kind == "prose")
    prose = " ".join(_CODE_OR_LINK.sub(" ", prose).split())
    # A word after another word (not a sentence's first), by how the page writes it.
    later = Counter(_possessed(m) for m in _LATER_WORD.findall(prose))
    names = frozenset(w.lower() for w in later if w[:1].isupper() and later[w] > later[w.lower()])
    return PageWords(names, prose.lower())


def _possessed(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


def propose(document: Document) -> list[Proposal]:
    """The page's candidate questions, best first."""
    kind = document.content_type
    if kind in EXERCISE_TYPES:
        return [Proposal("What are the questions on this page?", check=False)]
    found: list[Proposal] = [Proposal(q) for q in map(_from_objective, document.learning_objectives) if q]
    if kind == "lab":
        found.append(Proposal("Summarize this lab", check=False))
    page = page_words(document)
    if len(document.title.split()) > 1:  # "Welcome", "Introduction": no question in them
        found.append(Proposal(_about(document.title, page)))
    headings = [s for s in document.sections if s.level == 2 and s.heading_text and s.blocks]
    found += [
        Proposal(_about(s.heading_text, page, code=bool(_CODE_HEADING.fullmatch(s.heading.strip()))))
        for s in headings
        if not _SKIPPED_HEADING.search(s.heading_text) and not _generic(s.heading_text, document.title)
    ]
    if any(is_exercise_heading(s.heading_text) for s in document.sections if s.heading_text):
        found.append(Proposal("What are the exercises on this page?", check=False))
    unique: dict[str, Proposal] = {}
    for proposal in found:
        if proposal.question and len(proposal.question) <= MAX_CHARS:
            unique.setdefault(proposal.question.lower(), proposal)
    # The cap is on questions to search; one about the page itself is never cut by it.
    searched = [p for p in unique.values() if p.check][:PROPOSED]
    return [p for p in unique.values() if not p.check or p in searched]
