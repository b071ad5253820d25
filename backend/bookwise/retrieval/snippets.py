"""A short excerpt of a section for source lists: the sentence window that shares most query words."""

from __future__ import annotations

import re

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_WORDS = re.compile(r"[a-z0-9]+")
_FLAT = re.compile(r"[\s>]+")
STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it my of on or should that the this to "
    "what when where which who why with you your".split()
)


def flat(text: str) -> str:
    """Text as compared for "already said": lower case, with line breaks, runs of spaces and
    blockquote markers (an answer quotes passages as ``> …``) collapsed to one space."""
    return _FLAT.sub(" ", text).strip().lower()


def words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1}


def _plain(text: str) -> str:
    # Fences, bold markers and table pipes make poor previews; keep the words.
    text = re.sub(r"^```.*$", "", text, flags=re.MULTILINE)
    text = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", text)  # bold markers, not the words
    return re.sub(r"[ \t]*\|[ \t]*", " ", text)


def sentences(text: str) -> list[str]:
    """Readable sentences of a section's text (fence lines, bold markers and table pipes removed)."""
    return [s.strip() for s in _SENTENCES.split(_plain(text)) if s.strip()]


# The label of a solution block (`<details><summary>Show solution</summary>`, "Answers:").
SOLUTION_LABEL = re.compile(r"^\**(?:show |hide )?(?:solutions?|answers?|answer key)\b.{0,40}$", re.I)
_TAG = re.compile(r"</?\w+[^>]*>")


def before_solutions(text: str) -> str:
    """A section's text up to the book's solution to its own exercises, if it gives one there: the
    book hides it behind a "Show solution" label, and a preview must not show what a quiz asks."""
    fenced = False
    offset = 0
    previous_blank = True
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and previous_blank and SOLUTION_LABEL.match(_TAG.sub("", stripped).strip("*: ")):
            return text[:offset]
        previous_blank = not stripped
        offset += len(line)
    return text


HELD_BACK = "*(The book's solution follows here, held back until the reader has answered.)*"


def holding_back_solutions(text: str) -> str:
    """``text`` up to a solution the book holds back, and a line saying one was held back."""
    kept = before_solutions(text)
    return text if kept == text else f"{kept.rstrip()}\n\n{HELD_BACK}"


def make_snippet(text: str, query: str, max_chars: int = 240) -> str:
    """The run of consecutive sentences, at most ``max_chars`` long, with the most query words (never
    from a solution the book holds back)."""
    parts = sentences(before_solutions(text))
    if not parts:
        return ""
    wanted = words(query)
    best, best_score = 0, -1.0
    for start in range(len(parts)):
        window = parts[start]
        for following in parts[start + 1 :]:
            if len(window) + 1 + len(following) > max_chars:
                break
            window = f"{window} {following}"
        score = len(words(window) & wanted) - start * 1e-3  # ties: earlier text
        if score > best_score:
            best, best_score = start, score
    snippet = parts[best]
    for following in parts[best + 1 :]:
        if len(snippet) + 1 + len(following) > max_chars:
            break
        snippet = f"{snippet} {following}"
    if len(snippet) > max_chars:
        snippet = snippet[: max_chars - 1].rsplit(" ", 1)[0] + "…"
    return snippet
