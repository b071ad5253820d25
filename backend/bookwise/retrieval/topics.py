"""What a question is about: its words minus the ones that only say what kind of answer is wanted.

"what's atan2 for" names a topic (atan2); "how do I fix it?", "why?" and "explain this" do not, so a
follow-up or a question about a selection has to borrow its topic from the conversation or the passage.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from bookwise.index.sparse import Bm25Encoder
from bookwise.retrieval.snippets import STOP_WORDS, words

# Words that ask for a kind of answer, point back, or greet, without naming anything in the book.
GENERIC = frozenset(
    "explain explanation mean means meaning summarize summarise summary simplify clarify elaborate "
    "describe tell rephrase paraphrase passage selection selected text paragraph sentence part simply "
    "simple simpler words plain example examples more else also about again instead fix fixed work works "
    "working use used using need needed happen happens happened wrong right better best way ways mean "
    "other another one ones first second third last former latter previous earlier above same thing things "
    "them they their these those there its it's here please thanks thank hi hello hey bye goodbye cheers "
    "ok okay so then but also and why "
    "whats what's vs versus compare compared comparison difference differences between".split()
)


# "What does Tu stand for?" asks what it means, as "mean" does; "make them stand out" names something.
_STANDS_FOR = re.compile(r"\bstands?\s+for\b", re.IGNORECASE)


def topic_words(text: str) -> set[str]:
    return words(_STANDS_FOR.sub(" ", text)) - GENERIC


def names_a_topic(question: str) -> bool:
    """Whether ``question`` names something to look up: a topic word, or a one-letter symbol ("What is
    Q?" asks about the filter's Q, though no word of it is a topic). A small letter only when the
    question asks what it is ("what is r?") or writes it as code (`` `v` ``): "u there?" and "k
    thanks" are chat, not questions about `u` and `k`."""
    if topic_words(question):
        return True
    asked = {term.lower() for term in defined_terms(question)}
    return any(
        symbol.isupper() or symbol in asked or f"`{symbol}`" in question for symbol in symbols_named(question)
    )


_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def topic_text(query: str) -> str:
    """The query without its stop and generic words; single letters stay ("R", "Q" are symbols)."""
    tokens = _TOKEN.findall(_STANDS_FOR.sub(" ", query))
    kept = [t for t in tokens if t.lower() not in GENERIC and t.lower() not in STOP_WORDS]
    return " ".join(kept) or query


# A capital letter alone names a quantity ("L", "R", "Q", "P⁻"); "I" and "A" are words. So does a small
# letter standing alone as a word ("what is r?", "`v`"), but not the "s" of "it's", the "e" of "e.g." or
# the "x" of "x86"; "a" and "i" are words.
_SYMBOL = re.compile(
    r"(?<![A-Za-z0-9])([B-HJ-Z])(?![A-Za-z0-9])"
    r"|(?:^|(?<=[\s`\"(]))([b-hj-z])(?=$|[\s`\"),?!:;]|\.(?![\w.]))"
)


def is_symbol(token: str) -> bool:
    return bool(_SYMBOL.fullmatch(token))


def symbols_named(query: str) -> list[str]:
    """The one-letter symbols ``query`` names, each once: ["Q"] for "what is Q?"."""
    return list(dict.fromkeys(capital or small for capital, small in _SYMBOL.findall(query)))


def holds_symbol(text: str, symbol: str) -> bool:
    """Whether ``text`` writes ``symbol`` as a symbol: "P⁻", "Q_k" and "(R)" do, "Quokka" does not, nor
    does "v_r", where `r` is the subscript of `v`."""
    return re.search(rf"(?<![A-Za-z_]){re.escape(symbol)}(?![A-Za-z])", text) is not None


# A word as a name is spelled: letters and digits, with inner dots, dashes, pluses or hashes (Node.js, C++).
# Whole words only: "Qué" is no name "Qu".
_NAME = re.compile(r"(?<![\w`])([A-Za-z][A-Za-z0-9+#.-]*[A-Za-z0-9+#])(?!\w)")
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
        before = query[: match.start()].rstrip(" \"'(`¿¡")
        starts_sentence = not before or before[-1] in _SENTENCE_END
        inner_capital = any(c.isupper() for c in word[1:])
        if inner_capital or (word[0].isupper() and not starts_sentence):
            found.append(word)
    return list(dict.fromkeys(found))


# A verb and its particle are often one word in a book's prose: "winding up" is its "windup", "set up"
# its "setup", "plug in" its "plugin", "roll back" its "rollback".
_JOINING_PARTICLES = frozenset("up down out in on off back over".split())
_INFLECTIONS = ("ing", "ed", "s")


def _bases(word: str) -> list[str]:
    """``word`` and the words it may be inflected from: "winding" → "wind", "setting" → "set",
    "logged" → "log", "making" → "make"."""
    found = [word]
    for ending in _INFLECTIONS:
        base = word.removesuffix(ending)
        if base == word or len(base) < 2:
            continue
        found.append(base)
        if len(base) >= 3 and base[-1] == base[-2]:  # "setting", "logged": the doubled consonant
            found.append(base[:-1])
        if ending != "s":
            found.append(f"{base}e")
    return list(dict.fromkeys(found))


def joined_forms(query: str) -> dict[str, tuple[str, ...]]:
    """For each word of ``query`` followed by a particle, the one-word forms a book may write the pair
    as: "winding" in "… from winding up?" may be the book's "windup"."""
    tokens = _TOKEN.findall(query)
    forms: dict[str, tuple[str, ...]] = {}
    for word, after in zip(tokens, tokens[1:], strict=False):
        particle = after.lower()
        if particle in _JOINING_PARTICLES and word.isalpha() and word.lower() not in STOP_WORDS:
            joined = (f"{base}{particle}" for base in _bases(word.lower()))
            forms[word] = tuple(dict.fromkeys([*forms.get(word, ()), *joined]))
    return forms


# Endings that derive one word from another where Snowball's stems stay apart: "sharp" and "sharply",
# "oscillate" and "oscillatory", "accurate" and "accuracy", "stable" and "stability", "noisy" and
# "noise". Each pair goes both ways; the stem left must keep ``_DERIVED_STEM_LETTERS`` letters.
_DERIVATIONS = (("", "ly"), ("e", "ory"), ("e", "ive"), ("ate", "acy"), ("le", "ility"), ("y", "e"))
_DERIVED_STEM_LETTERS = 4


def derived_forms(probed: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each of a query's ``probed`` words (``probed_words``), the words derived from it or it from
    them that BM25 stems apart: "How do I slow down before a sharp turn?" is answered by a book that
    says "how sharply to turn". A word is absent from the book only when these are too."""
    forms: dict[str, tuple[str, ...]] = {}
    for word in probed:
        lower = word.lower()
        if not lower.isalpha():
            continue
        derived = [
            lower[: len(lower) - len(ending)] + other
            for plain, made in _DERIVATIONS
            for ending, other in ((plain, made), (made, plain))
            if lower.endswith(ending) and len(lower) - len(ending) >= _DERIVED_STEM_LETTERS
        ]
        if found := tuple(dict.fromkeys(f for f in derived if f != lower)):
            forms[word] = found
    return forms


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
# Only noun phrases name a thing; a question's verbs are told by English grammar, not by a word list.
_MODALS = frozenset("can could should will would may might must shall".split())
_DO = frozenset(("do", "does", "did"))
_WH = frozenset("what which who how why where when".split())
_PRONOUNS = frozenset("i you we they he she it".split())
_DETERMINERS = frozenset(
    "a an the this that these those my your our their its his her each every some any".split()
)
_PREPOSITIONS = frozenset(
    "to in on at for from with by of about into onto over under through across between against via "
    "without within inside outside".split()
)
# What ends the clause a do-support question's verb closes: "What files does X produce, and …?"
_CLAUSE_END = frozenset("? , . ; ! and or but".split())
_PARTICLES = frozenset("up down off out back away over".split())
_SUBORDINATORS = frozenset(
    "if when whenever while because since so that which who where unless until".split()
)
# A bare word right before these, after the subject, is the verb: "Does ingest read it?"
_OBJECTS = _DETERMINERS | frozenset("it them me us him".split())
# A name is neither a determiner nor a subordinating word ("… get back if the question …").
_NOT_IN_RUNS = STOP_WORDS | GENERIC | _NOT_IN_NAMES | _DETERMINERS | _SUBORDINATORS
_NOT_VERBS = STOP_WORDS | _DETERMINERS | _PRONOUNS | _PREPOSITIONS | _NOT_IN_NAMES
# "-ing" or "-ed" with a syllable before it ("pointing", "stored"), not "string", "thing", "speed".
_PARTICIPLE = re.compile(r"^[a-z]*[aeiouy][a-z]*[^aeiouy](?:ing|ed)$|^[a-z]*[aeiouy][a-z]*[^e]ed$")


def participle(word: str) -> bool:
    """Whether ``word`` is spelled as a participle ("pointing", "cached"): after a noun it starts a
    clause ("a symlink pointing to …"), so it does not continue the noun's name."""
    lower = word.lower()
    return len(lower) > 4 and _PARTICIPLE.match(lower) is not None and not lower.endswith("eed")


def _verbs(tokens: list[str]) -> set[int]:
    """The positions of ``tokens`` that grammar makes verbs, sentence by sentence: in a question that
    opens with an auxiliary ("Does …", "Can …", "What files does …"), those ``_inverted_verbs`` finds;
    elsewhere the word right after a modal ("readers can ask", "it must rebuild")."""
    lower = [t.lower() for t in tokens]
    verbs: set[int] = set()
    start = 0
    for i, word in enumerate([*lower, "."]):
        if word not in (".", "?", "!"):
            continue
        sentence = lower[start:i]
        aux = next((j for j, w in enumerate(sentence) if w in _DO | _MODALS), None)
        # The auxiliary opens the sentence, or follows its wh-word and up to two words ("which option do").
        if aux is not None and (aux == 0 or (sentence[0] in _WH and aux <= 3)):
            verbs |= {start + j for j in _inverted_verbs(sentence, aux)}
        else:
            after = [j + 1 for j, w in enumerate(sentence[:-1]) if w in _MODALS]
            verbs |= {start + j for j in after if sentence[j].isalpha() and sentence[j] not in _NOT_VERBS}
        start = i + 1
    return verbs


def _inverted_verbs(lower: list[str], aux: int) -> set[int]:
    """In a question with its auxiliary before the subject ("Does the plugin …", "Can I …"), the word
    after a pronoun subject ("How do I tune …"); after any other subject, a bare word followed by a
    determiner or an object pronoun ("Does ingest read it"), or else the word that closes the clause
    (before "?", ",", "and" or a preposition: "What files does cutting a release produce, and …", "How
    does a particle filter work?", "What does it depend on?")."""
    start = aux + 1
    if start < len(lower) and lower[start] in _PRONOUNS:
        after = start + 1
        return {after} if after < len(lower) and lower[after] not in _NOT_VERBS else set()
    # The main clause ends at a conjunction or a subordinate clause ("… if the question it sends …").
    clause = next(
        (i for i in range(start, len(lower)) if lower[i] in _CLAUSE_END | _SUBORDINATORS), len(lower)
    )
    verbs = {
        i
        for i in range(start + 1, clause - 1)
        if lower[i].isalpha() and lower[i] not in _NOT_VERBS and lower[i + 1] in _OBJECTS
    }
    if verbs:
        return {min(verbs)}
    end = next(
        (i for i in range(start + 1, clause) if lower[i] in _PREPOSITIONS | _PARTICLES),
        clause,
    )
    if end - 1 > start and lower[end - 1].isalpha() and lower[end - 1] not in _NOT_VERBS:
        verbs.add(end - 1)
    return verbs


def topic_phrases(query: str) -> list[tuple[str, ...]]:
    """The runs of ``query``'s topic words that may name one thing together, each as its words: noun
    phrases only, so a run stops before a verb (``_verbs``) or a participle after a noun."""
    tokens = [*_RUN_TOKEN.findall(query), "."]
    verbs = _verbs(tokens)
    found: list[tuple[str, ...]] = []
    run: list[str] = []
    for i, token in enumerate(tokens):
        lower = token.lower()
        plain = lower.isascii() and (lower.isalnum() or "_" in lower) and not lower.isdigit()
        content = plain and len(lower) > 1 and lower not in _NOT_IN_RUNS
        # A capitalised word inside a run continues a name, whatever its ending ("Firebase Hosting").
        if content and i not in verbs and not (run and participle(lower) and not token[0].isupper()):
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
    and "particle filter" are one run. A snake_case name is its parts, as BM25 reads it:
    ``BOOKWISE_DATA_DIR`` is "bookwise data dir"."""
    return tuple(
        i
        for w in _STEM_WORD.findall(text.lower())
        for part in w.split("_")
        if part and part not in STOP_WORDS and (i := _stem(part)) is not None
    )


# "What is odometry?", "What's a rigid transform?", "What does Ku mean?", "Define bias.", "What does the
# baseUrl setting do?": the question asks what something is (or is for); "the difference between bias
# and noise" asks it of two things.
_DEFINITION = re.compile(
    r"^(?:what|who)(?:'s|’s|\s+is|\s+are)\s+(?:an?\s+|the\s+)?(?P<is>[^?]+?)\s*\??$"
    r"|^what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<mean>[^?]+?)\s+mean\s*\??$"
    # "What does the integral term do in a PID controller?": where it works says nothing of what it is.
    r"|^what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<do>[^?]+?)\s+do(?:\s+(?:in|inside|within|for|on)\s+[^?]+)?\s*\??$"
    r"|^what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<stand>[^?]+?)\s+stands?\s+for\s*\??$"
    r"|^define\s+(?:an?\s+|the\s+)?(?P<define>[^?.]+?)\s*[.?]?$",
    re.IGNORECASE,
)
_DIFFERENCE = re.compile(
    r"\bdifference\s+between\s+(?:an?\s+|the\s+)?(?P<a>[\w`-]+(?:\s+[\w`-]+)?)\s+and\s+"
    r"(?:an?\s+|the\s+)?(?P<b>[\w`-]+)",
    re.IGNORECASE,
)
# What a thing is called after its name ("the baseUrl setting", "the derivative term", "the swizzle
# command"), or what comes from it ("the lidar data"): the section that defines it is headed by the
# name alone, and the book names the thing wherever it names the name.
ROLE_NOUNS = frozenset(
    "setting option field flag prop property parameter argument function hook method command component "
    "term step data information".split()
)
_ROLE = re.compile(rf"\s+(?:{'|'.join(sorted(ROLE_NOUNS))})s?$", re.IGNORECASE)


def without_role(phrase: tuple[str, ...]) -> tuple[str, ...]:
    """``phrase`` without a last word that only says what kind of thing it names: ("swizzle", "command")
    is ("swizzle",)."""
    last = phrase[-1].lower() if phrase else ""
    return phrase[:-1] if last in ROLE_NOUNS or last.removesuffix("s") in ROLE_NOUNS else phrase


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# A letter's name as a reader types it ("what is kappa here?") for the letter a formula writes (κ).
GREEK_LETTERS = dict(
    zip(
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
        "sigma tau upsilon phi chi psi omega".split(),
        "αβγδεζηθικλμνξοπρστυφχψω",
        strict=True,
    )
)
GREEK = frozenset(c for small in GREEK_LETTERS.values() for c in (small, small.upper()))
_GREEK_NAME = re.compile(rf"\b(?:{'|'.join(GREEK_LETTERS)})\b", re.IGNORECASE)


def greek_letters_asked(query: str) -> dict[str, str]:
    """The Greek letters ``query`` names by their names, name → small letter: {"theta": "θ"}."""
    return {name.lower(): GREEK_LETTERS[name.lower()] for name in _GREEK_NAME.findall(query)}


def letters_named(query: str, holds: Callable[[str], bool]) -> str:
    """``query`` with each Greek letter's name ("kappa") written as the letter (κ) where ``holds``
    the letter but not the name: "what is kappa here?" asks about the formula's κ."""

    def letter(match: re.Match[str]) -> str:
        name = match.group(0)
        small = GREEK_LETTERS[name.lower()]
        if holds(name.lower()):
            return name
        return next((symbol for symbol in (small, small.upper()) if holds(symbol)), name)

    return _GREEK_NAME.sub(letter, query)


# "chapter 3", "Module 2", "part 1": a part of the book named by its number.
_NUMBERED_PART = re.compile(r"\b(chapter|module|part|unit|lesson|week)\s+(\d{1,2})\b", re.IGNORECASE)


def names_a_numbered_part(query: str) -> bool:
    return _NUMBERED_PART.search(query) is not None


# What a question asks of a part of the book as a whole: "Give me a summary of chapter 3", "What does
# module 2 cover?".
_ABOUT_A_PART = frozenset(
    "give me say says cover covers covered contain contains teach teaches overview recap".split()
)


def with_parts_named(query: str, labels: Iterable[str]) -> str:
    """``query`` with the part of the book it names by number ("chapter 3") written as the book labels
    that part ("Module 3: Control"), when it asks about the part as a whole and one label (of its
    modules, chapters and page titles) holds that number, or one of several also holds the word
    asked: "Give me a summary of chapter 3" found "Python 3.9 or newer" on the number alone, and the
    modules' overview as "… of Module 3: Control". "What does module 1 say about angles?" asks about
    angles: searched as asked, it finds them; as "Module 1: Foundations", that module's overview."""
    rest = topic_words(_NUMBERED_PART.sub(" ", query)) - _ABOUT_A_PART
    if rest:
        return query
    named = [label for label in dict.fromkeys(labels) if label]

    def label(match: re.Match[str]) -> str:
        word, number = match.group(1).lower(), match.group(2)
        numbered = [n for n in named if re.search(rf"(?<![\d.]){number}(?![\d.])", n)]
        same_word = [n for n in numbered if word in n.lower()]
        found = numbered if len(numbered) == 1 else same_word
        return found[0] if len(found) == 1 else match.group(0)

    return _NUMBERED_PART.sub(label, query)


def spelled_apart(term: str) -> str:
    """A camelCase name as prose spells it: "baseUrl" is "base Url" ("The base URL of your site is …")."""
    return _CAMEL.sub(" ", term)


DEFINED_MAX_WORDS = 4  # "What is a step-by-step way to pick the gains…" asks for a method, not a definition


# A question that is a term and nothing else ("pid?", "integral windup", "Kalman gain"), as typed into a
# search box: at most this many words, letters and digits only.
BARE_TERM_WORDS = 3
_BARE_TERM = re.compile(r"^[^\W_][\w-]*(?: [^\W_][\w-]*)*$")


def bare_term(question: str) -> str | None:
    """``question`` when it is a term alone, asking what it is: "pid?" as "What is PID?". Not a word
    that only asks or greets ("thanks", "why?"), nor a letter alone ("k")."""
    text = " ".join(question.split()).rstrip("?.! ")
    found = text.lower().split()
    if not _BARE_TERM.match(text) or not 1 <= len(found) <= BARE_TERM_WORDS:
        return None
    if any(word in STOP_WORDS or word in GENERIC for word in found) or max(map(len, found)) < 3:
        return None
    return text


def defined_terms(question: str) -> list[str]:
    """The terms ``question`` asks the definition of: ["odometry"] for "What is odometry?" and for
    "odometry?"."""
    text = " ".join(question.split())
    difference = _DIFFERENCE.search(text)
    if difference is not None:
        found = [difference.group("a"), difference.group("b")]
    elif (asked := _DEFINITION.match(text)) is not None:
        found = [next(g for g in asked.groups() if g)]
    elif (term := bare_term(text)) is not None:
        found = [term]
    else:
        return []
    terms = [_ROLE.sub("", t).strip("` ") for t in found]
    return [t for t in terms if t and len(t.split()) <= DEFINED_MAX_WORDS and stems(t)]
