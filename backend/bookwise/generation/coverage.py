"""Whether the book answers a query without a model: the one decision the chat's extractive answer
and the MCP ``search`` tool's ``covered`` share, so an agent is never told "covered" for a question
the chat declines."""

from __future__ import annotations

import functools
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from bookwise.generation.evidence import EMPHASIS, PassagePlan, defines, plan_passages
from bookwise.generation.prompts import Turn
from bookwise.generation.study import without_solutions
from bookwise.lru import Lru
from bookwise.retrieval.models import RetrievalResult, SectionResult
from bookwise.retrieval.passages import passages_of
from bookwise.retrieval.retriever import KEY_WORD_COSINE, Retriever, page_paths
from bookwise.retrieval.topics import (
    GREEK,
    PHRASE_WORDS,
    defined_terms,
    letters_named,
    names_a_numbered_part,
    stems,
    topic_phrases,
    topic_words,
    with_parts_named,
    without_role,
)

# A phrase of the question (``topic_phrases``) is what it asks about when the phrase alone embeds this
# close to the question: the bar retrieval uses for a single word the book never contains.
PHRASE_COSINE = KEY_WORD_COSINE
# The book names a phrase "in passing" when it occurs in at most this many of its sentences and in no
# title, heading or page description: "unscented Kalman filters and particle filters are the usual
# next step" is the one sentence of the example book on particle filters, and it explains nothing.
PASSING_SENTENCES = 1
# A phrase the book never names answers only from a passage that is about it: on our sets the best
# passage of an answerable question sat from 0.35 to its phrase ("sensor reading", "average
# direction"), that of a question about what the book never names below 0.34 ("model predictive
# controller" 0.32 to the PID lab's wheel, "changelog page" 0.20).
PHRASE_PASSAGE_COSINE = 0.35
# A phrase the book never names declines only a question about that thing: besides the phrase's words
# it asks at most this many others (what to do with it: "tune" a model predictive controller). A
# question that asks about more ("put a tip box inside a warning box in Markdown") is retrieval's to
# judge: measured, readers paraphrase what the book names otherwise ("admonition"), and their other
# words find it.
WORDS_BESIDE_PHRASE = 1
# "odometery" is the example book's "odometry": a reader's typo is not something the book never mentions.
MISSPELLING_MIN_LETTERS = 5  # "poem", "gzip", "SLAM" are never taken for misspellings
MISSPELLING_SUBSTITUTE_FROM = 7  # "retry" is not "retro"
DEFINING_SEARCH = 5  # sections searched for the term a "what is" question asks about
HEADED_SEARCH = 8  # sections headed by the term, looked up besides
DEFINERS_ADDED = 2  # sections that define the term added to the search's, at most
DEFINING_CACHE = 1024  # terms whose defining sections are kept, per retriever
_SENTENCE = re.compile(r"(?<=[.!?:;,])\s+|\n+|[()\[\]|]")
# British spellings as American ones: one word either way, which a reader writes as they were taught.
_AMERICAN = (
    (re.compile(r"(?<=\w\wo)u(?=r)"), ""),  # colour, behaviour (not "four": two letters before "our")
    (re.compile(r"(?<=\w\w[iy])s(?=(?:e|es|ed|ing|ation|ations|er|ers)$)"), "z"),  # customise, analyse
    (re.compile(r"(?<=\w\w[^aeiou])re(?=s?$)"), "er"),  # centre
    (re.compile(r"(?<=\w[aeiou])ll(?=(?:ed|ing|er|ers)$)"), "l"),  # cancelled, labelled
)
_WORD = re.compile(r"[a-z0-9_]+")
_QUOTED_TERM = re.compile(r"[\"“]([A-Za-z][A-Za-z -]{0,38}[A-Za-z])[\"”]")  # a "term", not "a sentence."
# A sentence that says what something is: "Docusaurus is a static-site generator", "🧐 An **action** is
# a plain object"; the name, of up to four words, at the sentence's start. Found from the verb back:
# one pass over the text for "is a", then the few words before it (a scan of every sentence start
# doubled the time to read the book's phrases).
_IS_A = re.compile(r"\s(?:is|are)\s+(?:a|an|the)\s")
_NAME_BEFORE = re.compile(
    r"(?:[.!?]\s|\n)[^\w\n`]*(?:(?:The|A|An)\s+)?[*_`]*((?:[A-Za-z][\w+-]*(?:\.[\w+-]+)*\s?){1,4}?)[*_`]*$"
)
NAME_BEFORE_CHARS = 80  # looked back from "is a" for the sentence's start
# "this" and "that" also stand alone before a verb ("that produces"): only articles and possessives here.
_AFTER_DETERMINER = re.compile(r"\b(?:a|an|the|each|every|its|their|our|your|my)\s+([a-z0-9_]+)")


def says_what(text: str) -> list[str]:
    """The names ``text`` says what they are, each at a sentence's start: ["Docusaurus"] for "🧐
    Docusaurus is a **static-site generator**. It builds …"."""
    found = []
    for verb in _IS_A.finditer(text):
        start = max(0, verb.start() - NAME_BEFORE_CHARS)
        head = ("\n" if start == 0 else "") + text[start : verb.start()]
        if (name := _NAME_BEFORE.search(head)) is not None:
            found.append(name.group(1))
    return found


@dataclass(frozen=True)
class BookPhrases:
    """Which runs of words the book holds: stems of adjacent words (stop words skipped), per sentence."""

    pairs: frozenset[tuple[int, int]]
    vocabulary: frozenset[str]
    sentences: tuple[tuple[int, ...], ...]
    labels: tuple[tuple[int, ...], ...]  # page titles, descriptions, headings, emphasized terms
    pages: Mapping[str, frozenset[int]]  # each page's title and description, by its doc_path
    known: frozenset[int]  # every stem of the book's text
    nominal: frozenset[str] = frozenset()  # the words that follow a determiner somewhere in the book
    letters: frozenset[str] = frozenset()  # the Greek letters its formulas use (κ, θ, Δ)
    # The sections headed by each run of stems ("Reducers", "Glossary › Reducer"), as (page URL,
    # anchor), a page's title standing for its opening: where a "what is" question's term is defined.
    headed: Mapping[tuple[int, ...], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # The sections with a sentence that says what a run of stems is ("Docusaurus is a static-site
    # generator"), pages' openings first: a term every page names is defined in one of them.
    defined: Mapping[tuple[int, ...], tuple[tuple[str, str], ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, texts: Iterable[str], labels: Iterable[str], pages: Mapping[str, str] | None = None
    ) -> BookPhrases:
        texts = list(texts)
        unique = {part.strip().lower() for text in texts for part in _SENTENCE.split(text) if part.strip()}
        vocabulary = {word for sentence in unique for word in _WORD.findall(sentence)}
        sentences = tuple(stems(sentence) for sentence in sorted(unique))
        pairs = frozenset(pair for s in sentences for pair in zip(s, s[1:], strict=False))
        named = tuple(stems(label.lower()) for label in dict.fromkeys(labels) if label)
        about = {path: frozenset(stems(text.lower())) for path, text in (pages or {}).items()}
        known = frozenset(i for sentence in sentences for i in sentence)
        nominal = frozenset(m.group(1) for sentence in unique for m in _AFTER_DETERMINER.finditer(sentence))
        letters = frozenset(c for text in texts for c in text if c in GREEK)
        return cls(pairs, frozenset(vocabulary), sentences, named, about, known, nominal, letters)

    def writes(self, word_or_letter: str) -> bool:
        """Whether the book writes this word or Greek letter anywhere."""
        return word_or_letter in (self.letters if len(word_or_letter) == 1 else self.vocabulary)

    def spelled_as(self, word: str) -> str | None:
        """The book's word that ``word`` misspells, if one does: a letter too many or too few, two
        neighbours swapped, or (in a word of ``MISSPELLING_SUBSTITUTE_FROM`` letters or more) one
        letter wrong; never the first letter. Only plain lower-case words of ``MISSPELLING_MIN_LETTERS``
        letters or more: a name ("Preact") is not a misspelling of a word ("react")."""
        w = word  # short: the forms below index it letter by letter
        if w != w.lower() or not w.isalpha() or len(w) < MISSPELLING_MIN_LETTERS:
            return None
        letters = "abcdefghijklmnopqrstuvwxyz"
        forms = [w[:i] + w[i + 1 :] for i in range(1, len(w))]  # one letter too many
        forms += [w[:i] + w[i + 1] + w[i] + w[i + 2 :] for i in range(1, len(w) - 1)]  # swapped
        forms += [w[:i] + c + w[i:] for i in range(1, len(w) + 1) for c in letters]  # one too few
        if len(w) >= MISSPELLING_SUBSTITUTE_FROM:
            forms += [w[:i] + c + w[i + 1 :] for i in range(1, len(w)) for c in letters if c != w[i]]
        return next((form for form in forms if form in self.vocabulary), None)

    def verb_only(self, word: str) -> bool:
        """Whether the book uses ``word`` only as a verb: inflected with -ed or -ing ("produced",
        "producing") and never after a determiner ("the produce")."""
        w = word.lower()
        if w in self.nominal:
            return False
        stem = w[:-1] if w.endswith("e") else w
        forms = {f"{w}d" if w.endswith("e") else f"{w}ed", f"{stem}ing", f"{w}{w[-1]}ed", f"{w}{w[-1]}ing"}
        return not forms.isdisjoint(self.vocabulary)

    def noun_phrase(self, phrase: tuple[str, ...]) -> tuple[str, ...]:
        """``phrase`` up to its first word after the first that the book uses only as a verb: "release
        produce" is a noun and its verb, not a name."""
        for i, word in enumerate(phrase[1:], start=1):
            if self.verb_only(word):
                return phrase[:i]
        return phrase

    def holds(self, phrase: Sequence[str]) -> bool:
        """Whether any two neighbours of ``phrase`` stand together in the book ("windup" for "wind up")."""
        words = [w.lower() for w in phrase]
        ids = stems(" ".join(words))
        if len(ids) != len(words):
            return True  # a word BM25 drops: no claim about it
        together = zip(ids, ids[1:], words, words[1:], strict=False)
        return any((a, b) in self.pairs or left + right in self.vocabulary for a, b, left, right in together)

    def mentions(self, phrase: Sequence[str]) -> tuple[int, bool]:
        """In how many sentences the whole ``phrase`` occurs, and whether a title or heading names it,
        its words in any order: "Lab: Tuning a PID Loop" names the tuning lab."""
        ids = stems(" ".join(w.lower() for w in phrase))
        labelled = any(set(ids) <= set(label) for label in self.labels)
        return sum(_contains(s, ids) for s in self.sentences), labelled

    def opens_a_sentence(self, phrase: Sequence[str]) -> bool:
        """Whether a sentence of the book opens with ``phrase``, its subject ("A quadrature encoder with
        256 lines produces 1024 counts…"), not a name among others ("…particle filters are the usual
        next step")."""
        ids = stems(" ".join(w.lower() for w in phrase))
        return bool(ids) and any(s[: len(ids)] == ids for s in self.sentences)


def _contains(sequence: tuple[int, ...], run: Sequence[int]) -> bool:
    n = len(run)
    return any(sequence[i : i + n] == tuple(run) for i in range(len(sequence) - n + 1))


_books: weakref.WeakKeyDictionary[Retriever, tuple[str, BookPhrases]] = weakref.WeakKeyDictionary()
_books_lock = threading.Lock()


def book_phrases(retriever: Retriever) -> BookPhrases:
    """The loaded generation's ``BookPhrases``, built once per generation."""
    version = retriever.index_version
    with _books_lock:
        known = _books.get(retriever)
        if known is not None and known[0] == version:
            return known[1]
    chunks = retriever.chunk_payloads()
    labels = [label for c in chunks for label in (c.title, c.description, c.heading_text)]
    # A term the book introduces in bold or italics ("This is a **rigid transform**: …") or in quotes
    # ("… does not produce a spike (a "derivative kick")") is named.
    labels += [a or b for c in chunks for a, b in EMPHASIS.findall(c.text)]
    labels += [term for c in chunks for term in _QUOTED_TERM.findall(c.text) if len(term.split()) <= 4]
    pages = {c.doc_path: f"{c.title} {c.description}" for c in chunks}
    headed: dict[tuple[int, ...], list[tuple[str, str]]] = {}
    defined: dict[tuple[int, ...], list[tuple[str, str]]] = {}
    for c in chunks:
        place = (c.page_url, c.anchor)
        heading = c.heading_text if c.anchor else c.title
        if (key := stems(heading.lower())) and place not in headed.setdefault(key, []):
            headed[key].append(place)
        for term in says_what(c.text):
            if (key := stems(term.lower())) and place not in defined.setdefault(key, []):
                defined[key].append(place)
    built = replace(
        BookPhrases.of([f"{c.heading_text}\n{c.text}" for c in chunks], labels, pages),
        headed={key: tuple(places) for key, places in headed.items()},
        defined={key: tuple(sorted(places, key=lambda p: bool(p[1]))) for key, places in defined.items()},
    )
    with _books_lock:
        _books[retriever] = (version, built)
    return built


async def book_phrases_ready(retriever: Retriever) -> None:
    """Reads the book's phrases (``book_phrases``) in a worker thread, if not read for this generation:
    about a second of CPU on redux, which a first question's retrieval deadline should not carry."""
    await retriever.arun(functools.partial(book_phrases, retriever))


def _cosines(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The cosine of each vector after the first to the first."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    norms = np.where(norms > 0, norms, 1.0)
    return [float(v) for v in (matrix[1:] @ matrix[0]) / (norms[1:] * norms[0])]


def unnamed_topics(
    retriever: Retriever,
    query: str,
    best_text: str,
    sources: Sequence[SectionResult],
    unknown_names: Sequence[str] = (),
    absent_words: Sequence[str] = (),
) -> tuple[list[str], bool]:
    """What ``query`` asks about that the book never names as a phrase, though each word occurs alone
    ("model predictive controller") or the phrase holds a name the book never contains
    (``unknown_names``: "Firebase Hosting"), unless a section found holds every word of it (with its heading
    and its page's title and description) or the best passage, ``best_text``, embeds close to it; and
    whether the book names something the query asks about only in passing ("particle filter")."""
    phrases = topic_phrases(query)
    if not phrases:
        return [], False
    book = book_phrases(retriever)
    phrases = [
        p
        for p in dict.fromkeys(without_role(book.noun_phrase(p)) for p in phrases)
        if len(p) >= PHRASE_WORDS[0]
    ]
    # Each word of the phrase occurs in the book: a word it never contains is retrieval's to judge
    # (``asks_unknown``); measured, "gutter numbers shown" declined a question the gutter page answers.
    alone = topic_words(query)
    absent = [
        p
        for p in phrases
        if not book.holds(p) and set(stems(" ".join(p))) <= book.known and asks_about(query, p)
    ]
    # A word the book never contains in a phrase with a word it knows: a name ("Firebase Hosting", "a
    # Svelte app", retrieval's ``unknown_names``) embeds alone too far from the question for retrieval's
    # ``asks_unknown``, the phrase does not. A plain word ("GitHub star count") only in a phrase that
    # holds no run of other words the book names: "switch statement mandatory" asks about the book's
    # switch statement. Either is then judged below as the book's phrases are: close to the question,
    # in no section found, and far from the best passage ("gutter numbers" are the book's line numbers).
    names = {name.lower() for name in unknown_names}
    plain = {word.lower() for word in absent_words} - names
    lacked = names | plain
    absent += [
        p
        for p in phrases
        if p not in absent
        and (
            (lower := {w.lower() for w in p}) & names
            or (lower & plain and not _qualifies_named(book, p, plain))
        )
        and any((ids := set(stems(w))) and ids <= book.known for w in p if w.lower() not in lacked)
    ]
    # Only a question about that thing alone ("How does a particle filter work?"): a detail the book
    # gives once ("debug panel", "webpack alias") still answers a question that asks about more, and a
    # sentence whose subject it is says what it is ("A quadrature encoder with 256 lines produces…").
    passing = [
        p
        for p in phrases
        if p not in absent
        and alone <= {w.lower() for w in p}
        and _in_passing(book.mentions(p))
        and not book.opens_a_sentence(p)
    ]
    asked = absent + passing
    if not asked:
        return [], False
    texts = [" ".join(p) for p in asked]
    vectors = retriever.embedder.embed_documents([" ".join(query.split()), *texts])
    central = [p for p, cosine in zip(asked, _cosines(vectors), strict=True) if cosine >= PHRASE_COSINE]
    # "danger callout": the admonitions page, "Handling admonitions/callouts", has `:::danger`.
    held = [
        set(stems(" ".join((s.title, s.heading_text, s.text)))) | book.pages.get(s.doc_path, frozenset())
        for s in (sources if any(p in absent for p in central) else ())  # stemmed only when read
    ]
    unnamed = [p for p in central if p in absent and not any(set(stems(" ".join(p))) <= h for h in held)]
    if unnamed:
        about = retriever.embedder.embed_documents([best_text, *(" ".join(p) for p in unnamed)])
        close = _cosines(about)
        unnamed = [p for p, cosine in zip(unnamed, close, strict=True) if cosine < PHRASE_PASSAGE_COSINE]
    return [" ".join(p) for p in unnamed], any(p in passing for p in central)


def _qualifies_named(book: BookPhrases, phrase: Sequence[str], words: set[str]) -> bool:
    """Whether ``phrase`` around ``words`` holds a run of two or more others that the book names:
    "integral term mandatory" asks whether the book's integral term is mandatory."""
    runs: list[list[str]] = [[]]
    for word in phrase:
        if word.lower() in words:
            runs.append([])
        else:
            runs[-1].append(word)
    # ``mentions`` reads every sentence of the book: once per run, its count or its label answering.
    return any(len(run) >= 2 and any(book.mentions(run)) for run in runs)


def asks_about(query: str, phrase: Sequence[str]) -> bool:
    """Whether ``query`` is about ``phrase``: at most ``WORDS_BESIDE_PHRASE`` of its topic words lie
    outside it ("How do I tune a model predictive controller?")."""
    return len(topic_words(query) - {w.lower() for w in phrase}) <= WORDS_BESIDE_PHRASE


def _in_passing(mentions: tuple[int, bool]) -> bool:
    sentences, labelled = mentions
    return 0 < sentences <= PASSING_SENTENCES and not labelled


async def passage_plan(
    retriever: Retriever,
    query: str,
    sources: Sequence[SectionResult],
    history: Sequence[Turn] = (),
    *,
    retrieval_sufficient: bool,
    unknown_names: Sequence[str] = (),
    asked_unknown: Sequence[str] = (),
    absent_words: Sequence[str] = (),
    defining_sections: bool = True,
    names_own_topic: bool = True,
    reader_page: str | None = None,
) -> PassagePlan:
    """The passages of ``sources`` that answer ``query``, or the decline (``sufficient`` false).
    ``defining_sections``: a "what is" question may also quote the section of the book that defines
    its term; not when the answer is bound to one section (a selection widened to its section).
    ``reader_page``: the URL of the page the reader asks from, whose passages are preferred.
    ``names_own_topic``: false when the reader's question names nothing of its own ("how do I fix
    it?"): a passage the previous answers showed may then be quoted again."""
    if defining_sections:
        sources = [*sources, *await _defining_sections(retriever, query, sources)]
    ranked = without_solutions(await retriever.arank_passages(query, sources), sources)
    plan = plan_passages(
        ranked,
        sources,
        history,
        retrieval_sufficient=retrieval_sufficient,
        names_unknown=bool(unknown_names),
        asks_unknown=bool(asked_unknown),
        question=query,
        names_own_topic=names_own_topic,
        reader_page=page_paths(reader_page) if reader_page else (),
    )
    if not plan.sufficient or plan.best is None:
        return plan
    # The passages' scores say the book answers; whether they answer *this* question also depends on
    # whether the book names what it asks about: each word of "model predictive controller" occurs in
    # the example book, the phrase never, and the PID lab's wheel scored well on "tune" and "controller".
    best = plan.best
    unnamed, passing = await retriever.arun(
        functools.partial(
            unnamed_topics, retriever, query, best.passage.text, sources, unknown_names, absent_words
        )
    )
    if not unnamed and not passing:
        return plan
    # A phrase around a name retrieval already reports is not named again ("Firebase" or "Firebase Hosting").
    reported = {name.lower() for name in unknown_names}
    named = tuple(u for u in unnamed if reported.isdisjoint(u.lower().split()))
    return replace(plan, quoted=[], sufficient=False, sources=list(sources), unknown_names=named)


def spelling_variant(word: str, other: str) -> bool:
    """Whether ``word`` and ``other`` are one word spelled the American and the British way: "colors"
    and "colours", "customize" and "customise", "center" and "centre", "canceled" and "cancelled"."""

    def american(w: str) -> str:
        for british, spelled in _AMERICAN:
            w = british.sub(spelled, w)
        return w

    return word != other and american(word) == american(other)


async def respelled(retriever: Retriever, query: str, result: RetrievalResult) -> str:
    """``query`` with its words that the book never contains but misspells (``BookPhrases.spelled_as``)
    spelled as the book does: "how does odomtry work" is searched as "how does odometry work", not
    declined as a question about something the book never mentions. Only a word the query asks about
    (``asked_unknown``), or any such word when retrieval found too little: a search that went well
    keeps the reader's words ("overshot" is not the book's "overshoot", "httpd" not its "http"). The
    book's other spelling of a word is always taken: "colors" is its "colours" however the search went,
    and so is its one word for a verb and its particle: "wind up" is its "windup" when it never writes
    "wind" alone."""
    for word, form in result.book_forms:
        query = _joined(query, word, form)
    if not result.absent_words:
        return query
    asked = set(result.absent_words if not result.sufficient_context else result.asked_unknown)
    book = await retriever.arun(functools.partial(book_phrases, retriever))
    query = letters_named(query, book.writes)  # "kappa" for the book's κ, however the search went
    for word in result.absent_words:
        right = book.spelled_as(word)
        if right is not None and (word in asked or spelling_variant(word, right)):
            query = re.sub(rf"\b{re.escape(word)}\b", right, query)
    return query


def _joined(query: str, word: str, form: str) -> str:
    """``query`` with ``word`` and the particle after it written as the book's one ``form``."""

    def joined(match: re.Match[str]) -> str:
        return form if form.endswith(match.group(1).lower()) else match.group(0)

    return re.sub(rf"\b{re.escape(word)}[\s-]+([A-Za-z]+)\b", joined, query, flags=re.IGNORECASE)


async def spelled_search(
    retriever: Retriever, query: str, search: Callable[[str], Awaitable[RetrievalResult]]
) -> tuple[str, RetrievalResult]:
    """``search(query)``, searched again as the book spells it when ``query`` misspells its words
    (``respelled``): the query searched and its result. The chat and the MCP ``search`` tool both
    search this way, so an agent's ``covered`` agrees with the chat."""
    if names_a_numbered_part(query):  # "chapter 3" is searched as the book labels it
        outlines = await retriever.arun(retriever.outlines)
        labels = (label for page in outlines.values() for label in (*page.group, page.title))
        query = with_parts_named(query, labels)
    result = await search(query)
    spelled = await respelled(retriever, query, result)
    return (query, result) if spelled == query else (spelled, await search(spelled))


async def _defining_sections(
    retriever: Retriever, query: str, sources: Sequence[SectionResult]
) -> list[SectionResult]:
    """For "What is odometry?", the section that defines the term when the search left it out: the
    question's other words ("what is") carried "Why odometry drifts" and the introduction above "The
    wheel odometry model". The term alone is searched, and its sections that define it are added."""
    added: list[SectionResult] = []
    known = {s.section_id for s in sources}
    for term in defined_terms(query):
        definers = await retriever.arun(functools.partial(_definers.of, retriever, term))
        for section in [s for s in definers if s.section_id not in known][:DEFINERS_ADDED]:
            known.add(section.section_id)
            added.append(section)
    return added


def _defines_term(section: SectionResult, term: str) -> bool:
    passages = passages_of(section.text)
    first = passages[0].text if passages else ""
    return any(defines(p.text, section.heading_text, p.text == first, term) for p in passages)


_Sections = tuple[SectionResult, ...]


class DefiningSections:
    """The sections a term's own search finds that define it (``DEFINING_SEARCH`` searched), in the
    search's order, then those headed by the term that define it (``HEADED_SEARCH`` looked up, one
    search within each), kept per retriever by index generation, model and term: the same "what is"
    question, or another about the same term, is not searched again (a search, and a query embedding
    the first time). At most ``capacity`` terms, the least recently asked forgotten."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._known: weakref.WeakKeyDictionary[Retriever, Lru[tuple[str, str, str], _Sections]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def of(self, retriever: Retriever, term: str) -> _Sections:
        """Blocking (a search when the term is new): run it in a worker thread."""
        with self._lock:
            known = self._known.setdefault(retriever, Lru(self.capacity))
        kept = known.get((retriever.generation(), retriever.embedder.model_id, term))
        if kept is not None:
            return kept
        result = retriever.search(term, top_k=DEFINING_SEARCH)
        found = [s for s in result.sections if _defines_term(s, term)]
        # A common term's search finds the sections that use it most ("Using a 'Reducer Manager'"),
        # not the one headed by it that defines it ("Reducers": "A **reducer** is a function …").
        book = book_phrases(retriever)
        key = stems(term.lower())
        # Then the sections headed by the term, and those that say what it is ("What is Docusaurus?":
        # every page names it, the introduction says what it is).
        places = [*book.headed.get(key, ())[:HEADED_SEARCH], *book.defined.get(key, ())[:HEADED_SEARCH]]
        for page_url, anchor in dict.fromkeys(places):
            section = retriever.locate(page_url, heading_id=anchor, text=term)
            if section is not None and section not in found and _defines_term(section, term):
                found.append(section)
        # The search may have followed a re-ingest: its sections are that generation's.
        known.put((result.index_version, retriever.embedder.model_id, term), tuple(found))
        return tuple(found)


_definers = DefiningSections(DEFINING_CACHE)


async def covers(retriever: Retriever, result: RetrievalResult) -> bool:
    """Whether the book answers ``result``'s query, as the chat without a model decides it."""
    if not result.sections:
        return False
    plan = await passage_plan(
        retriever,
        result.query,
        result.sections,
        retrieval_sufficient=result.sufficient_context,
        unknown_names=result.unknown_names,
        asked_unknown=result.asked_unknown,
        absent_words=result.absent_words,
    )
    return plan.sufficient
