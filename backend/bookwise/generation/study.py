"""Study actions without a language model: the book's own material, quoted and cited, and a line
saying what a model would add.

explain → where the page introduces or defines the terms the passage uses (never the passage
again); example → the page's worked examples and the section's code, else a plain "none", and the
chapter's labs; quiz → the book's exercises for the page or chapter (solutions held back until the
reader answers, then compared with the answer term by term), then fill-in-the-blank questions cut
from the passage and its section, round again once all were asked; summarize → the page's
description, learning objectives and headings. A quiz question here is always a sentence of the book
or an exercise the book wrote, so its answer is in the book. Nothing here claims to judge meaning:
an answer is compared with the book's words.

Page context: ``page_intent`` tells a question about "this page / chapter / section" apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bookwise.generation.code_context import SelectedProgram, is_program
from bookwise.generation.extractive import blockquote, cite, quotable_sentences
from bookwise.generation.prompts import Turn
from bookwise.ingest.blocks import fence_spans
from bookwise.ingest.documents import is_exercises
from bookwise.retrieval.models import SectionResult, code_spans, plain_text
from bookwise.retrieval.pages import PageOutline
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import Passage, link_text, passages_of, split_units
from bookwise.retrieval.snippets import SOLUTION_LABEL, flat
from bookwise.retrieval.topics import topic_words

NO_MODEL = "*No language model is configured, so this is the book's own material."
MODEL_WOULD = {
    "explain": "A language model would explain the passage in plain words; here is where the page "
    "introduces the terms it uses.*",
    "explain_code": "A language model would explain the code line by line; here is what the page says "
    "about it.*",
    "example": "A language model would build an example from the passage.*",
    "quiz": "Your answers are compared with the book's words; a language model would write new questions "
    "and judge what your answers mean.*",
    "summarize_page": "A language model would summarize the page in a few sentences.*",
}
KEY_TERMS = 6  # a solution's terms compared with the reader's answer
MIN_KEY_WORD = 6  # shorter plain words ("gets", "times") say little of an answer
DEFINITIONS = 4
EXAMPLES = 2
LABS = 3
PageIntent = Literal["summarize", "exercises", "question"]

# "this page", "the current chapter", "on this section": the reader points at where they are.
_THIS_PAGE = re.compile(
    r"\b(?:this|the current|current|the present)\s+"
    r"(?:page|chapter|section|lesson|article|doc|document|unit|lab|quiz|exercise|assessment)\b",
    re.IGNORECASE,
)
# Words of a page telling something ("what does it say about…", "give me"): no topic of their own.
_TELLING = frozenset(
    "say says said tell tells talk talks cover covers covered discuss discusses give show me us".split()
)
THIS_SECTION = re.compile(r"\b(?:this|the current|current) (?:section|part)\b", re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|“[^”]*”|‘[^’]*’|`[^`]*`")
_SUMMARY_WORDS = re.compile(
    r"\b(?:summar\w*|overview|recap|outline|tl;?dr|key points|main points|main ideas|about)\b", re.I
)
_EXERCISE_WORDS = re.compile(
    r"\b(?:exercises?|quiz\w*|practice|problems?|questions?|self-check|review)\b", re.I
)
EXAMPLE_HEADING = re.compile(r"\b(?:examples?|worked|walkthrough|try it)\b", re.I)
_EXAMPLE_PROSE = re.compile(r"\b(?:for example|for instance|e\.g\.|example)\b", re.I)
# A sentence that works a case out: it says so, or it sets a value (`Kp = 2`).
_EXAMPLE_SENTENCE = re.compile(r"\b(?:for example|for instance|e\.g\.)|`[^`]*=\s*-?\d", re.I)
_ITEM = re.compile(r"\n(?=[ \t]{0,3}(?:\d{1,3}[.)]|[-*+])\s)")
_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*+])\s+")
_DEFINES = re.compile(
    r"\*\*[^*]+\*\*|\b(?:is called|are called|means|refers to|stands for|is defined as)\b", re.I
)
_BLANK_TERM = re.compile(r"`[^`\n]+`|\*\*[^*\n]+\*\*")
BLANK = "_____"
MIN_SENTENCE_WORDS = 4
MIN_BLANK_CHARS = 3  # a blanked code span names something ("odometry"), not a symbol ("x")
NO_WORKED_EXAMPLE = "Besides the passage itself, the book gives no worked example or code for it."
# Said instead when the page shows code elsewhere ("A discrete-time PID in code" beside the Integral
# passage), which is then listed as the chapter's labs are: "no code for it" would be untrue.
NO_WORKED_EXAMPLE_ON_PAGE = "Besides the passage itself, the book works no example of it out."
PAGE_CODE = 3  # sections of the page with code listed when no example is quoted


def page_intent(question: str) -> PageIntent | None:
    """What a question about the reader's page asks for, or None when it does not point at it."""
    # A quoted phrase is named, not asked: "add a 'Was this page helpful?' widget" is about the book.
    question = _QUOTED.sub(" ", question)
    if not _THIS_PAGE.search(question):
        return None
    if _EXERCISE_WORDS.search(question):
        return "exercises"
    if _SUMMARY_WORDS.search(question) and not _names_a_topic_beyond_the_page(question):
        return "summarize"
    return "question"


def page_topic(question: str) -> str:
    """What a question about the reader's page asks about, in its own words: "noise" for "What does
    this chapter say about noise?"; empty for "what is this page about?" (its summary). The page
    narrows the search; the words that point at it are no part of what is searched for."""
    rest = _SUMMARY_WORDS.sub(" ", _THIS_PAGE.sub(" ", _QUOTED.sub(" ", question)))
    return " ".join(w for w in re.findall(r"[\w'-]+", rest) if topic_words(w) - _TELLING)


def page_silent_answer(title: str, topic: str) -> str:
    """The answer when the reader's page has no passage on what they asked about."""
    return f"The page “{title}” does not seem to say anything about {topic}."


def _names_a_topic_beyond_the_page(question: str) -> bool:
    return bool(page_topic(question))


def _label(action: str) -> str:
    return f"{NO_MODEL} {MODEL_WOULD[action]}"


def _heading(source: SectionResult) -> str:
    return plain_text(source.known_as, code_spans(source.heading))


def _link(source: SectionResult) -> str:
    label = re.sub(r"([\\\[\]])", r"\\\1", _heading(source))
    return f"[{label}]({source.url})"


# -- exercises ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exercise:
    source: int  # 1-based source number
    text: str  # the question, as Markdown
    solution: str | None  # the book's own, shown only after the reader answers


def _items(list_text: str) -> list[str]:
    return [_MARKER.sub("", item).strip() for item in _ITEM.split(list_text) if item.strip()]


def exercises_of(text: str, source: int) -> list[Exercise]:
    """The numbered questions of an exercises section, each with its solution when the book gives one
    (a list after a "Solution" / "Answers" label, matched by position)."""
    questions: list[str] = []
    solutions: list[str] = []
    in_solutions = False
    for unit in split_units(text):
        if unit.kind in ("prose", "label") and SOLUTION_LABEL.match(unit.text.strip().strip("*:")):
            in_solutions = True
            continue
        if unit.kind == "list":
            (solutions if in_solutions else questions).extend(_items(unit.text))
        elif unit.kind == "prose" and not in_solutions and unit.text.rstrip().endswith("?"):
            questions.append(unit.text.strip())
        elif in_solutions and unit.kind == "prose" and not solutions:
            solutions.append(unit.text.strip())  # one solution paragraph, for a single question
    return [
        Exercise(source, question, solutions[i] if i < len(solutions) else None)
        for i, question in enumerate(questions)
    ]


def solution_start(text: str) -> int | None:
    """The position of a section's first block after a solution label ("Show solution"), if any."""
    for position, unit in enumerate(split_units(text)):
        if unit.kind in ("prose", "label") and SOLUTION_LABEL.match(unit.text.strip().strip("*:")):
            return position
    return None


def without_solutions(
    ranked: Sequence[ScoredPassage], sources: Sequence[SectionResult]
) -> list[ScoredPassage]:
    """Passages to quote as an answer, minus the book's solutions to its own exercises: a quiz is
    not answered by quoting its answer key."""
    starts = [solution_start(source.text) for source in sources]
    return [
        p
        for p in ranked
        if (start := starts[p.passage.section] if p.passage.section < len(starts) else None) is None
        or p.passage.position < start
    ]


def is_exercise_section(section: SectionResult, outline: PageOutline | None = None) -> bool:
    return is_exercises(outline.content_type if outline is not None else None, section.heading_text or "")


# -- fill-in-the-blank from the passage -----------------------------------------------------------


@dataclass(frozen=True)
class Blank:
    sentence: str
    term: str
    source: int = 1  # 1-based source number

    @property
    def question(self) -> str:
        return self.sentence.replace(self.term, BLANK, 1)


def blanks_of(text: str, source: int = 1) -> list[Blank]:
    """Sentences of the passage's prose with one term blanked: a bold term when it has one, else a
    code span of a word or more (not a one-letter symbol), else its longest word. The answer is the
    passage's own word. A paragraph the book wraps over several lines is one paragraph here."""
    found = []
    bold = [term for term in re.findall(r"\*\*([^*\n]+)\*\*", text) if term.strip()]
    prose = "\n\n".join(" ".join(u.text.split()) for u in split_units(text) if u.kind in ("prose", "list"))
    for sentence in quotable_sentences(prose):  # emphasis is gone from these; code spans stay
        spans = [span for span in _BLANK_TERM.findall(sentence) if len(_bare(span)) >= MIN_BLANK_CHARS]
        marked = [term for term in bold if term in sentence] + spans
        if marked:
            term = marked[0]
        else:
            longest = max(re.findall(r"[A-Za-z][\w-]{5,}", sentence), key=len, default="")
            if not longest:
                continue
            term = longest
        found.append(Blank(sentence, term, source))
    return found


def section_blanks(selection: str, section_text: str, source: int = 1) -> list[Blank]:
    """Blanks cut from the selection's section, past those of the selection itself."""
    inside = _unmarked(selection)
    return [b for b in blanks_of(section_text, source) if _unmarked(b.sentence) not in inside]


def _bare(term: str) -> str:
    return term.strip("`*").lower()


# -- the answers ----------------------------------------------------------------------------------


def _plain_terms(markdown: str) -> list[str]:
    """The bold and code-span terms of ``markdown``, in order, each once."""
    found = re.findall(r"\*\*([^*\n]+)\*\*|`([^`\n]+)`", markdown)
    return list(dict.fromkeys(term.strip() for pair in found for term in pair if term.strip()))


def _mentions(text: str, term: str) -> bool:
    """Whether plain ``text`` names ``term`` as a whole word ("K" is not in "Kalman"); a symbol of one
    or two letters in its own case ("P" is not "p")."""
    flags = 0 if len(term) <= 2 else re.IGNORECASE
    return re.search(rf"(?<![\w⁻]){re.escape(term)}(?![\w⁻])", text, flags) is not None


def _as_read(markdown: str) -> str:
    """Text as the reader sees it: no bold or code marks, links as their text."""
    return " ".join(re.sub(r"\*\*|__|`", "", link_text(markdown)).split())


def _unmarked(markdown: str) -> str:
    """Text as compared for "already in the passage"."""
    return flat(_as_read(markdown))


def passage_terms(
    selection: str, located: SectionResult | None, page: Sequence[SectionResult] = ()
) -> list[str]:
    """The terms the passage uses that the book marks as terms: in bold on its page, or in bold or
    code in its own section (the reader's selection is plain text; the book's Markdown says which
    of its words are names)."""
    marked = _plain_terms(selection) + (_plain_terms(located.text) if located is not None else [])
    marked += [t for section in page for t in re.findall(r"\*\*([^*\n]+)\*\*", section.text)]
    plain = _as_read(selection)
    return [t for t in dict.fromkeys(m.strip() for m in marked) if t and _mentions(plain, _as_read(t))]


def _prose_sentences(text: str) -> list[str]:
    """The sentences of a section's prose and lists (its code and tables are no definitions), with
    their Markdown (code spans, bold) kept."""
    blocks = [u.text for u in split_units(text) if u.kind in ("prose", "list")]
    return [s for block in blocks for s in re.split(r"(?<=[.!?])\s+", " ".join(block.split())) if s]


def term_definitions(
    selection: str, located: SectionResult | None, page: Sequence[tuple[int, SectionResult]]
) -> list[tuple[str, int]]:
    """For each term the passage uses, the page's sentence that defines it (a defining phrase, or the
    term in bold), else the first that names it up to the passage's section, outside the passage; up
    to ``DEFINITIONS`` sentences, in the page's order (``page``: its sections in order, numbered),
    each with its source number."""
    terms = passage_terms(selection, located, [section for _, section in page])
    inside = _unmarked(selection)
    candidates = [
        (sentence, number, (position, index))
        for position, (number, section) in enumerate(page)
        if not is_exercise_section(section)
        for index, sentence in enumerate(_prose_sentences(section.text))
        if _unmarked(sentence) not in inside and len(sentence.split()) >= MIN_SENTENCE_WORDS
    ]
    # A term is introduced before it is used: only a definition may come from later in the page.
    own = located.section_id if located is not None else None
    here = next((i for i, (_, section) in enumerate(page) if section.section_id == own), len(page))
    own_sentences = _prose_sentences(located.text) if located is not None else []
    said = [i for i, sentence in enumerate(own_sentences) if _unmarked(sentence) in inside]
    start = (here, min(said, default=len(own_sentences)))  # where the passage begins
    chosen: dict[str, tuple[tuple[int, int], int]] = {}
    for term in terms:
        named = [c for c in candidates if _mentions(_as_read(c[0]), _as_read(term))]
        defining = [c for c in named if f"**{term}**" in c[0] or _DEFINES.search(c[0])]
        naming = defining + [c for c in named if c[2] < start]
        best = naming[:1]
        for sentence, number, position in best:
            chosen.setdefault(sentence, (position, number))
        if len(chosen) == DEFINITIONS:
            break
    ordered = sorted(chosen.items(), key=lambda item: item[1][0])  # in the page's reading order
    return [(sentence, number) for sentence, (_, number) in ordered]


def explain_quotes(found: Sequence[tuple[str, int]]) -> str:
    return "\n\n".join(f"> {sentence} [{number}]" for sentence, number in found)


def explain_answer(found: Sequence[tuple[str, int]]) -> str:
    """Where the page introduces the passage's terms, each sentence with its citation (the passage
    is not repeated back: the reader has just read it)."""
    return "\n\n".join(
        [_label("explain"), "**Where the book introduces the passage's terms**", explain_quotes(found)]
    )


def holds_code(section: SectionResult) -> bool:
    """Whether the section shows a program: a fenced block in a language, not a ```text block of
    formulas (nor MDX that Docusaurus renders)."""
    lines = section.text.splitlines()
    return any(is_program(lines[opening]) for opening, _ in fence_spans(lines))


def explain_code_answer(
    program: SelectedProgram,
    working: tuple[int, SectionResult, Sequence[Passage]] | None,
    definitions: Sequence[tuple[str, int]] = (),
) -> str | None:
    """For a selected program: the sentence introducing it [1], the section working out what it
    computes, then where the page introduces its terms; None when the page says none of these."""
    parts = [_label("explain_code")]
    if program.introduction:
        parts += ["**What the page says about this code**", blockquote(cite(program.introduction, 1))]
    if working is not None:
        number, section, passages = working
        parts.append(f"**The page works it through in** {_link(section)}:")
        parts += [blockquote(cite(passage.text, number)) for passage in passages]
    if definitions:
        parts += ["**Where the book introduces its terms**", explain_quotes(definitions)]
    return "\n\n".join(parts) if len(parts) > 1 else None


def example_answer(
    quoted: Sequence[str],
    labs: Sequence[tuple[int, SectionResult]],
    page_code: Sequence[tuple[int, SectionResult]] = (),
) -> str | None:
    """The example quotes (``example_quotes``); when there are none, a plain sentence saying so and
    the sections of the page with code (``page_code``); the chapter's labs after. None when there is
    neither an example, nor code on the page, nor a lab."""
    code_lines = [] if quoted else [f"- {_link(section)} [{number}]" for number, section in page_code]
    lab_lines = [f"- {_link(lab)} [{number}]" for number, lab in labs]
    if not quoted and not code_lines and not lab_lines:
        return None
    parts = [_label("example"), *(quoted or [NO_WORKED_EXAMPLE_ON_PAGE if code_lines else NO_WORKED_EXAMPLE])]
    if code_lines:
        parts += ["**Code on this page:**", "\n".join(code_lines)]
    if lab_lines:
        parts += ["**To try it yourself**, the chapter's labs:", "\n".join(lab_lines)]
    return "\n\n".join(parts)


def example_quotes(
    selection: str, located: tuple[int, SectionResult] | None, worked: Sequence[tuple[int, SectionResult]]
) -> list[str]:
    """The page's worked examples (the one nearest the passage first), then the code or "for example"
    of the passage's own section (not the passage itself)."""
    wanted = topic_words(selection)
    inside = _unmarked(selection)
    ranked = sorted(worked, key=lambda ns: -len(topic_words(ns[1].text) & wanted))
    quoted: list[str] = []
    for number, section in ranked:
        passage = next(iter(passages_of(section.text)), None)
        if passage is not None and len(quoted) < EXAMPLES:
            quoted.append(f"From {_link(section)}:\n\n" + blockquote(cite(passage.text, number)))
    if located is not None:
        number, section = located
        for passage in passages_of(section.text):
            if len(quoted) == EXAMPLES:
                break
            if _unmarked(passage.text) in inside:
                continue  # the passage itself is no example of it
            if "code" in passage.kinds:
                quoted.append(f"From {_link(section)}:\n\n" + blockquote(cite(passage.text, number)))
                continue
            worked_out = [
                sentence
                for sentence in _prose_sentences(passage.text)
                if _unmarked(sentence) not in inside and _EXAMPLE_SENTENCE.search(sentence)
            ]
            if worked_out:
                quoted.append(f"From {_link(section)}:\n\n> {' '.join(worked_out)} [{number}]")
    return quoted


def summary_answer(outline: PageOutline, sections: Sequence[SectionResult]) -> str:
    """The page's description [1], its learning objectives and its headings, each cited."""
    parts = [_label("summarize_page"), f"**{plain_text(outline.title)}**"]
    if outline.description:
        parts.append(f"> {plain_text(outline.description)} [1]")
    if outline.learning_objectives:
        objectives = "\n".join(f"- {plain_text(o)}" for o in outline.learning_objectives)
        parts += ["**Learning objectives**", f"{objectives} [1]"]
    headings = [
        f"{'  ' * max(0, s.heading_level - 2)}- {_link(s)} [{n}]"
        for n, s in enumerate(sections, start=1)
        if s.heading_text and s.heading_level > 1
    ]
    if headings:
        parts += ["**What the page covers**", "\n".join(headings)]
    return "\n\n".join(parts)


def exercises_answer(exercises: Sequence[Exercise], sections: Sequence[SectionResult]) -> str | None:
    """A page's exercises, listed (solutions held back): for "what are the exercises on this page?"."""
    if not exercises:
        return None
    listed = "\n".join(f"{i}. {e.text} [{e.source}]" for i, e in enumerate(exercises, start=1))
    where = sorted({e.source for e in exercises})
    links = ", ".join(_link(sections[n - 1]) for n in where)
    return f"*The book's own exercises on this page ({links}); solutions are in the book.*\n\n{listed}"


@dataclass(frozen=True)
class QuizTurn:
    text: str
    asked: bool  # False when there was nothing to ask


def _last_asked(history: Sequence[Turn], text: str) -> int:
    """Where ``text`` was last asked in ``history`` (-1: never): the quiz goes round its questions,
    the longest unasked first."""
    return max((i for i, t in enumerate(history) if t.role == "assistant" and text in t.content), default=-1)


def quiz_turn(
    exercises: Sequence[Exercise],
    blanks: Sequence[Blank],
    history: Sequence[Turn],
    reader_answer: str | None,
) -> QuizTurn:
    """One quiz turn: compare the reader's answer to the question last asked with the book (its
    solution's terms, or the blanked term), then ask the question asked longest ago, one never asked
    first: a quiz goes on until the reader ends it."""
    parts = [_label("quiz")]
    last = next((t.content for t in reversed(history) if t.role == "assistant"), "")
    if reader_answer is not None:
        parts.append(_assessment(exercises, blanks, last, reader_answer))
    questions: list[tuple[str, str]] = [
        (e.text, f"**Question:** {e.text} [{e.source}]") for e in exercises
    ] + [(b.question, f"**Fill in the blank:** {b.question} [{b.source}]") for b in blanks]
    if not questions:
        parts.append("Bookwise found no exercise and no sentence to quiz you on in this passage.")
        return QuizTurn("\n\n".join(parts), asked=reader_answer is not None)
    asked = [_last_asked(history, key) for key, _ in questions]
    # On from the question asked last, in the book's order (the history the client sends is short:
    # the first questions drop out of it, and must not come back before the later ones were asked).
    latest = max(range(len(questions)), key=lambda i: asked[i])
    start = latest + 1 if asked[latest] >= 0 else 0
    rotated = [(start + k) % len(questions) for k in range(len(questions))]
    chosen = min(rotated, key=lambda i: (asked[i], rotated.index(i)))
    if all(a >= 0 for a in asked):
        parts.append("*You have seen every question Bookwise has for this passage; here they come again.*")
    parts += [questions[chosen][1], "*Reply with your answer.*"]
    return QuizTurn("\n\n".join(parts), asked=True)


_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?")


def _numbers(text: str) -> set[float]:
    return {float(n.replace(",", ".")) for n in _NUMBER.findall(text)}


def _longest_first(word: str) -> tuple[int, str]:
    return -len(word), word


def key_terms(solution: str, question: str) -> list[str]:
    """What a solution says that its question does not: its numbers, then its one-word marked terms
    (bold, code), then its other topic words, longest first; up to ``KEY_TERMS``."""
    given = _numbers(question)
    # A worked line (`K = 0.04 / 0.05 = 0.8`) counts by its result, not by its steps.
    results = [
        _NUMBER.findall(span.rsplit("=", 1)[1])[:1] for span in re.findall(r"`([^`]*=[^`]*)`", solution)
    ]
    prose = re.sub(r"`[^`]*=[^`]*`", " ", solution)
    found = [n for found in results for n in found] + _NUMBER.findall(plain_text(prose, code_spans(prose)))
    numbers = [n for n in found if float(n.replace(",", ".")) not in given]
    plain = plain_text(solution, code_spans(solution))
    asked = topic_words(question) | {_bare(t) for t in _plain_terms(question)}
    marked = [t.strip("`*") for t in _plain_terms(solution) if re.fullmatch(r"[A-Za-z][\w⁻'-]+", t)]
    others = sorted(
        (w for w in topic_words(plain) if len(w) >= MIN_KEY_WORD and not w.isdigit()), key=_longest_first
    )
    terms: dict[str, str] = {}  # each once, as first written
    for term in [*numbers, *(t for t in [*marked, *others] if t.lower() not in asked)]:
        terms.setdefault(term.lower(), term)
    return list(terms.values())[:KEY_TERMS]


def _has_term(answer: str, term: str) -> bool:
    if _NUMBER.fullmatch(term):
        return float(term.replace(",", ".")) in _numbers(answer)
    stem = term[:-1] if len(term) > 4 and term.endswith("s") else term  # "variance" meets "variances"
    return re.search(rf"(?<!\w){re.escape(stem)}", answer, re.IGNORECASE) is not None


def _listed(terms: Sequence[str]) -> str:
    return ", ".join(f"**{t}**" for t in terms)


def compare_with_solution(answer: str, solution: str, question: str) -> str:
    """Which of the solution's key terms the answer has and which it misses: a comparison of words,
    said as one, never a verdict on what the answer means."""
    terms = key_terms(solution, question)
    if not terms:
        return "Compare your answer with the book's solution:"
    has = [t for t in terms if _has_term(answer, t)]
    missing = [t for t in terms if t not in has]
    if not missing:
        return f"Your answer has every key term of the book's solution ({_listed(has)}):"
    if not has:
        return f"Your answer has none of the key terms of the book's solution ({_listed(missing)}):"
    return f"Your answer has {_listed(has)} but not {_listed(missing)}, from the book's solution:"


def _assessment(exercises: Sequence[Exercise], blanks: Sequence[Blank], last: str, reader_answer: str) -> str:
    exercise = next((e for e in exercises if e.text in last), None)
    if exercise is not None:
        if exercise.solution:
            verdict = compare_with_solution(reader_answer, exercise.solution, exercise.text)
            return f"{verdict}\n\n> {exercise.solution} [{exercise.source}]"
        return f"The book gives no solution for this one; reread the section [{exercise.source}]."
    blank = next((b for b in blanks if b.question in last), None)
    if blank is None:
        return "Bookwise cannot tell which question you answered; here is the next one."
    right = _bare(blank.term) in reader_answer.lower()
    verdict = (
        "**Right.** The passage says:"
        if right
        else f"**Not quite:** the blank is **{_bare(blank.term)}**. The passage says:"
    )
    return f"{verdict}\n\n> {blank.sentence} [{blank.source}]"
