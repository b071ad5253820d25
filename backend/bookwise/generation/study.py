"""Study actions without a language model: the book's own material, quoted and cited, and a line
saying what a model would add.

explain → the passage's key sentences and the section's own definitions; example → the section's
code and worked examples, and the chapter's labs; quiz → the book's exercises for the page or
chapter (solutions held back until the reader answers), else fill-in-the-blank questions cut from
the passage itself; summarize → the page's description, learning objectives and headings. A quiz
question here is always a sentence of the book or an exercise the book wrote, so its answer is in
the book.

Page context: ``page_intent`` tells a question about "this page / chapter / section" apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bookwise.generation.extractive import blockquote, cite, quotable_sentences
from bookwise.generation.prompts import Turn
from bookwise.ingest.documents import EXERCISE_TYPES
from bookwise.retrieval.models import SectionResult, code_spans, plain_text
from bookwise.retrieval.pages import PageOutline
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import passages_of, split_units
from bookwise.retrieval.snippets import SOLUTION_LABEL
from bookwise.retrieval.topics import topic_words

NO_MODEL = "*No language model is configured, so this is the book's own material."
MODEL_WOULD = {
    "explain": "A language model would explain the passage in plain words.*",
    "example": "A language model would build an example from the passage.*",
    "quiz": "A language model would write new questions and assess your answers.*",
    "summarize_page": "A language model would summarize the page in a few sentences.*",
}
KEY_SENTENCES = 5
DEFINITIONS = 3
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
EXERCISE_HEADING = re.compile(
    r"\b(?:exercises?|quiz|problems|self-check|check your understanding|review questions|practice)\b", re.I
)
EXAMPLE_HEADING = re.compile(r"\b(?:examples?|worked|walkthrough|try it)\b", re.I)
_EXAMPLE_PROSE = re.compile(r"\b(?:for example|for instance|e\.g\.|example)\b", re.I)
_ITEM = re.compile(r"\n(?=[ \t]{0,3}(?:\d{1,3}[.)]|[-*+])\s)")
_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*+])\s+")
_DEFINES = re.compile(
    r"\*\*[^*]+\*\*|\b(?:is called|are called|means|refers to|stands for|is defined as)\b", re.I
)
_BLANK_TERM = re.compile(r"`[^`\n]+`|\*\*[^*\n]+\*\*")
BLANK = "_____"


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


def _names_a_topic_beyond_the_page(question: str) -> bool:
    return bool(page_topic(question))


def _label(action: str) -> str:
    return f"{NO_MODEL} {MODEL_WOULD[action]}"


def _heading(source: SectionResult) -> str:
    return plain_text(source.heading_text or source.title, code_spans(source.heading))


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
    declared = outline is not None and outline.content_type in EXERCISE_TYPES
    return declared or bool(EXERCISE_HEADING.search(section.heading_text or ""))


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
    """Sentences of the passage with one term blanked: a code span or bold term when it has one,
    else its longest word. The answer is the passage's own word."""
    found = []
    bold = [term for term in re.findall(r"\*\*([^*\n]+)\*\*", text) if term.strip()]
    for sentence in quotable_sentences(text):  # emphasis is gone from these; code spans stay
        marked = [term for term in bold if term in sentence] + _BLANK_TERM.findall(sentence)
        if marked:
            term = marked[0]
        else:
            longest = max(re.findall(r"[A-Za-z][\w-]{5,}", sentence), key=len, default="")
            if not longest:
                continue
            term = longest
        found.append(Blank(sentence, term, source))
    return found


def _bare(term: str) -> str:
    return term.strip("`*").lower()


# -- the answers ----------------------------------------------------------------------------------


def key_sentences(sentences: Sequence[str]) -> list[str]:
    """Up to ``KEY_SENTENCES`` of the passage, in its order: every sentence that defines a term
    first (a passage usually closes on the name it was leading up to), then the earliest others."""
    defining = [i for i, sentence in enumerate(sentences) if _DEFINES.search(sentence)][:KEY_SENTENCES]
    others = [i for i in range(len(sentences)) if i not in defining][: KEY_SENTENCES - len(defining)]
    return [sentences[i] for i in sorted(defining + others)]


def explain_answer(selection: str, section: SectionResult | None) -> str:
    """Key sentences of the passage [1], then the section's own definitions [2]."""
    key = key_sentences(quotable_sentences(selection)) or [" ".join(selection.split())]
    parts = [
        _label("explain"),
        "**Key sentences of the passage**",
        blockquote("\n".join(f"- {s}" for s in key)) + " [1]",
    ]
    if section is not None:
        inside = " ".join(selection.split())
        defined = [
            s
            for s in quotable_sentences(section.text)
            if _DEFINES.search(s) and " ".join(s.split()) not in inside
        ][:DEFINITIONS]
        if defined:
            parts += [
                f"**How the section {_link(section)} defines its terms**",
                *(f"> {s} [2]" for s in defined),
            ]
    return "\n\n".join(parts)


def example_answer(
    examples: Sequence[tuple[int, SectionResult]], labs: Sequence[tuple[int, SectionResult]]
) -> str | None:
    """Code and worked examples from the section and its page, then the chapter's labs; None when
    the book has neither near the passage."""
    quoted: list[str] = []
    for number, section in examples:
        for passage in passages_of(section.text):
            if len(quoted) == EXAMPLES:
                break
            worked = EXAMPLE_HEADING.search(section.heading_text or "")
            if "code" in passage.kinds or worked or _EXAMPLE_PROSE.search(passage.text):
                quoted.append(f"From {_link(section)}:\n\n" + blockquote(cite(passage.text, number)))
                if worked:
                    break
    lab_lines = [f"- {_link(lab)} [{number}]" for number, lab in labs]
    if not quoted and not lab_lines:
        return None
    parts = [_label("example"), *quoted]
    if lab_lines:
        parts += ["**Labs for this chapter**, to try it yourself:", "\n".join(lab_lines)]
    return "\n\n".join(parts)


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


def _asked_before(history: Sequence[Turn], text: str) -> bool:
    return any(turn.role == "assistant" and text in turn.content for turn in history)


def quiz_turn(
    exercises: Sequence[Exercise],
    blanks: Sequence[Blank],
    history: Sequence[Turn],
    reader_answer: str | None,
) -> QuizTurn:
    """One quiz turn: assess the reader's answer to the question last asked (the book's solution,
    or the blanked term), then ask the next question not asked yet."""
    parts = [_label("quiz")]
    last = next((t.content for t in reversed(history) if t.role == "assistant"), "")
    if reader_answer is not None:
        parts.append(_assessment(exercises, blanks, last, reader_answer))
    pending_exercises = [e for e in exercises if not _asked_before(history, e.text)]
    pending_blanks = [b for b in blanks if not _asked_before(history, b.question)]
    if pending_exercises:
        exercise = pending_exercises[0]
        parts.append(f"**Question:** {exercise.text} [{exercise.source}]")
    elif pending_blanks:
        blank = pending_blanks[0]
        parts.append(f"**Fill in the blank:** {blank.question} [{blank.source}]")
    else:
        parts.append("That was the last question Bookwise can take from this passage.")
        return QuizTurn("\n\n".join(parts), asked=reader_answer is not None)
    parts.append("*Reply with your answer.*")
    return QuizTurn("\n\n".join(parts), asked=True)


def _assessment(exercises: Sequence[Exercise], blanks: Sequence[Blank], last: str, reader_answer: str) -> str:
    exercise = next((e for e in exercises if e.text in last), None)
    if exercise is not None:
        if exercise.solution:
            return (
                f"Compare your answer with the book's solution:\n\n> {exercise.solution} [{exercise.source}]"
            )
        return f"The book gives no solution for this one; reread the section [{exercise.source}]."
    blank = next((b for b in blanks if b.question in last), None)
    if blank is None:
        return "Bookwise cannot tell which question you answered; here is the next one."
    right = _bare(blank.term) in reader_answer.lower()
    verdict = "Right: the passage says" if right else f"The passage has **{_bare(blank.term)}** here:"
    return f"{verdict}\n\n> {blank.sentence} [{blank.source}]"
