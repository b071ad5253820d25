"""What a page says about a program the reader selected, for Explain without a model.

A program's terms are identifiers (``omega``, ``track``), not the bold or code-span terms the prose
defines, so the page's definitions of them are rarely found. What a book does say about its code is
the sentence that introduces it ("The driver node converts each command into wheel speeds…") and,
often, a section that works out what the code computes: ``v_l = v − ω·b / 2`` above
``v_l = v - omega * track / 2``. That section is found by its heading, matched in order against the
program's comments and names ("Body velocity … to wheel speeds" is "From body velocity to wheel
speeds", not "From wheel speeds to body velocity"), and by the names both assign.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bookwise.ingest.blocks import MDX_CODE_BLOCK, fence_opening
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passages import Passage, Unit, is_tab_label, passages_of, split_units
from bookwise.retrieval.topics import stems

# Fences that hold formulas or Markdown, not a program.
NOT_PROGRAMS = frozenset(
    {"text", "txt", "plain", "plaintext", "math", "latex", "tex", "md", "markdown", MDX_CODE_BLOCK}
)
MIN_SELECTED_CODE = 12  # characters (spaces aside) a selection needs to be told apart inside a program
MIN_HEADING_RUN = 2  # heading words, in order, a comment or a name must share to explain the code
MIN_SHARED_NAMES = 2  # or names both the program and a section's formulas assign
INTRODUCTION_SENTENCES = 4  # of the paragraph right before a program, quoted as what introduces it
WORKING_PASSAGES = 2  # quoted from the section that works out what the program computes

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A comment (`#` or `//` to the end of the line, `/* … */`) or a string (docstrings among them).
_WORDS_IN_CODE = re.compile(
    r"(?<![\w$])#(?!include|define|if|endif|pragma|!)\s*(.*)$|//(.*)$|/\*(.*?)\*/"
    r'|"""(.*?)"""|\'\'\'(.*?)\'\'\'|"([^"\n]*)"|\'([^\'\n]*)\'',
    re.MULTILINE | re.DOTALL,
)
# `v_l = …` in code or in a formula (not `==`, `<=`, `+=`): the name assigned.
_ASSIGNED = re.compile(r"(?<![\w.])([^\W\d]\w*)\s*(?<![=!<>+\-*/])=(?!=)")
_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class SelectedProgram:
    """The fenced program that holds the reader's selection, and the prose that introduces it."""

    code: str  # the fence's body
    # Markdown: the prose right before the program in its section, and the formula between them if
    # there is one; "" when the program follows neither.
    introduction: str


def is_program(fence_line: str) -> bool:
    """Whether ``fence_line`` opens a program: a fence in a language other than formulas or MDX."""
    fence = fence_opening(fence_line)
    return fence is not None and bool(fence.lang) and fence.lang.lower() not in NOT_PROGRAMS


def _squeezed(text: str) -> str:
    """Text without whitespace: a selection copied from the page loses the code's indentation."""
    return re.sub(r"\s+", "", text)


def selected_program(selection: str, section: SectionResult) -> SelectedProgram | None:
    """The program of ``section`` the selection lies in, or None when the selection is not code."""
    wanted = _squeezed(selection)
    if len(wanted) < MIN_SELECTED_CODE:
        return None
    units = split_units(section.text)
    for index, unit in enumerate(units):
        if unit.kind != "code" or not is_program(unit.text.split("\n", 1)[0]):
            continue
        body = "\n".join(unit.text.split("\n")[1:-1])
        if wanted not in _squeezed(body):
            continue
        before = units[: _group_start(units, index)]
        while before and before[-1].kind == "label":
            before.pop()
        parts: list[str] = []
        if before and before[-1].kind == "code" and not is_program(before[-1].text.split("\n", 1)[0]):
            parts.append(before.pop().text)  # the formula the program implements
        if before and before[-1].kind == "prose":
            sentences = re.split(r"(?<=[.!?])\s+", " ".join(before[-1].text.split()))
            parts.insert(0, " ".join(sentences[-INTRODUCTION_SENTENCES:]))
        introduction = "\n\n".join(parts)
        return SelectedProgram(body, introduction)
    return None


def _group_start(units: Sequence[Unit], index: int) -> int:
    """Where the tabs holding the program at ``index`` start: before its label ("C++:") and the tabs
    ahead of it ("Python:" and its program), so the prose introducing them all is what comes before."""
    start = index - 1 if index >= 1 and is_tab_label(units, index - 1) else index
    while start >= 2 and units[start - 1].kind == "code" and is_tab_label(units, start - 2):
        start -= 2
    return start


def _word_stems(text: str) -> tuple[int, ...]:
    """The stems of ``text``'s words of three letters or more, in order: a variable ``q`` and the
    heading "Choosing Q and R" share a letter, not a topic. ``wheel_speeds`` and ``wheelSpeeds`` are
    "wheel speeds"."""
    return stems(" ".join(w for w in re.split(r"[\W_]+", _CAMEL.sub(" ", text)) if len(w) >= 3))


def _word_runs(code: str) -> list[tuple[int, ...]]:
    """The program's comments and strings, and each name it uses, as runs of stems in order."""
    runs = [
        _word_stems(text)
        for match in _WORDS_IN_CODE.finditer(code)
        for text in match.groups()
        if text and text.strip()
    ]
    runs += [_word_stems(name) for name in dict.fromkeys(_NAME.findall(code))]
    # The functions it defines or calls, in order: ``predict`` then ``correct`` is "predict, then correct".
    runs.append(_word_stems(" ".join(dict.fromkeys(_CALLED.findall(code)))))
    return [run for run in runs if run]


def _in_order(a: Sequence[int], b: Sequence[int]) -> int:
    """How many words ``a`` and ``b`` share in the same order (their longest common subsequence)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _assigned(text: str) -> set[str]:
    """Names of two characters or more that ``text`` assigns (a one-letter name says little)."""
    return {name for name in _ASSIGNED.findall(text) if len(name) >= 2}


def explaining_section(
    program: SelectedProgram, page: Sequence[tuple[int, SectionResult]], own: str
) -> tuple[int, SectionResult] | None:
    """The section of the page (not the program's own, ``own``) that works out what the program
    computes, numbered as in ``page``; None when none shares enough with it."""
    runs = _word_runs(program.code)
    names = _assigned(program.code)
    best: tuple[tuple[int, int], tuple[int, SectionResult]] | None = None
    for number, section in page:
        if section.section_id == own or not section.heading_text:
            continue
        heading = _word_stems(section.heading_text)
        in_order = max((_in_order(run, heading) for run in runs), default=0)
        shared = len(names & _assigned(section.text))
        if in_order < MIN_HEADING_RUN and shared < MIN_SHARED_NAMES:
            continue
        score = (in_order + shared, in_order)
        if best is None or score > best[0]:
            best = (score, (number, section))
    return best[1] if best is not None else None


def working_passages(section: SectionResult) -> list[Passage]:
    """The passages of ``section`` to quote for what a program computes: from its first with a
    formula or code (else its first), up to ``WORKING_PASSAGES``: the case worked after a formula
    ("scale both wheel speeds by the same factor") is often what the code's comments point back to.
    A passage that holds another (a sentence, then the sentence with its table) replaces it."""
    passages = passages_of(section.text)
    start = next((i for i, p in enumerate(passages) if "code" in p.kinds), 0)
    chosen: list[Passage] = []
    for passage in passages[start:]:
        if chosen and chosen[-1].text in passage.text:
            chosen[-1] = passage
        elif any(passage.text in c.text for c in chosen):
            continue
        elif len(chosen) == WORKING_PASSAGES:
            break
        else:
            chosen.append(passage)
    return chosen
