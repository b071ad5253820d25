"""The text checks on one answer: its key facts found (on normalised text), and its quoted passages
that start or stop mid-sentence (fragments)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bookwise.evaluation.answers.run import AnswerRun
from bookwise.generation.citations import strip_markers
from bookwise.retrieval.passages import link_text

_LINE_MARKS = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)*(?:#{1,6}[ \t]+)?", re.MULTILINE)
_TYPOGRAPHY = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": None, "*": None, "_": None})


def normalise(text: str) -> str:
    """Text for key-fact matching: Markdown and citation markers removed, case and spaces folded."""
    plain = _LINE_MARKS.sub("", link_text(strip_markers(text)))
    return " ".join(plain.translate(_TYPOGRAPHY).split()).casefold()


def key_facts(answer: str, terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """(found, missing) ``must_contain`` terms."""
    text = normalise(answer)
    found = [term for term in terms if (needle := normalise(term)) and needle in text]  # "" is no fact
    return found, [term for term in terms if term not in found]


_QUOTE_LINE = re.compile(r"^[ \t]{0,3}>[ \t]?(.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")  # a code fence line; the judge's sentences keep fenced code whole too
_BLOCK_LINE = re.compile(r"^(?:\s*(?:[-*+]|\d{1,3}[.)])\s|\s*\||\s*(?:```|~~~)| {4,}|\t)")
_OPENERS = "\"'“‘(*_["  # may precede a sentence's first letter
_CLOSERS = "\"'”’)*_]"  # may follow its final punctuation
_CUT = ("…", "...")
# A sentence may begin with a code identifier or a bolded name (`createStore` returns…, **redux-persist**):
# lowercase there is the term's own spelling, not a continuation.
_TERM_START = re.compile(r"^\s*(?:`[^`]+`|\*\*[^*]+\*\*)")
_TERMINAL = (".", "!", "?")


def quoted_passages(answer: str) -> list[str]:
    """The answer's ``>`` blockquotes, one passage each: a lead-in quoted with its list or code (a
    ``>`` blank line between them) is one passage, judged at its two ends."""
    passages: list[str] = []
    current: list[str] = []
    for line in [*answer.splitlines(), ""]:
        match = _QUOTE_LINE.match(line)
        if match is not None:
            current.append(match.group(1))
            continue
        if any(part.strip() for part in current):
            passages.append("\n".join(current).strip("\n"))
        current = []
    return passages


def fragment_reason(passage: str) -> str | None:
    """Why a quoted passage is a fragment, or None when it is whole.

    A passage is whole when it starts and stops at sentence boundaries. It *starts mid-sentence* when
    its first character (past opening quotes, brackets and emphasis marks) is a lowercase letter or
    one of ``, ; : )``, or it opens with ``…``/``...``; a first word in code or bold (an identifier, a
    package name) is spelled as it is and not checked. It *stops mid-sentence* when its last
    character (citation markers removed, past closing quotes, brackets and emphasis marks) is not
    ``.``, ``!`` or ``?``, or it ends with ``…``/``...`` (a cut). Blocks quoted whole are allowed:
    a first or last line that is a list item, a table row, a code fence or indented code is not
    checked at that end; a code fence left open is a fragment.
    """
    lines = [line for line in strip_markers(passage).strip().splitlines() if line.strip()]
    if not lines:
        return None
    if sum(bool(FENCE.match(line)) for line in lines) % 2:
        return "unclosed_code"
    if not _BLOCK_LINE.match(lines[0]) and not _TERM_START.match(lines[0]):
        start = lines[0].strip().lstrip(_OPENERS)
        if start.startswith(_CUT):
            return "starts_with_cut"
        if start[:1].islower() or start[:1] in (",", ";", ":", ")"):
            return "starts_mid_sentence"
    if not _BLOCK_LINE.match(lines[-1]):
        end = lines[-1].rstrip().rstrip(_CLOSERS).rstrip()
        if end.endswith(_CUT):
            return "ends_with_cut"
        if not end.endswith(_TERMINAL):
            return "ends_mid_sentence"
    return None


@dataclass(frozen=True)
class Fragment:
    where: Literal["answer", "quote"]  # a > quote of the answer, or a done.quotes text
    text: str
    reason: str


def fragments_of(run: AnswerRun) -> tuple[int, list[Fragment]]:
    """(quoted passages, the fragments among them) of one answer."""
    in_answer = quoted_passages(run.answer)
    found = [Fragment("answer", p, reason) for p in in_answer if (reason := fragment_reason(p))]
    found += [Fragment("quote", q, reason) for q in run.quotes if (reason := fragment_reason(q))]
    return len(in_answer) + len(run.quotes), found
