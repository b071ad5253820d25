"""Passages: the whole blocks of a section's Markdown that can be quoted as an answer.

A section's assembled text is its parsed blocks (paragraphs, lists, code fences, tables, admonition
labels) joined by blank lines, so the blocks come back by splitting outside code fences. A passage
is one block, or a block with what it cannot stand without: a list, code block or table with the
sentence that introduces it, an admonition's body with its label, an answer with the question line
above it (a ``<details>`` summary, an FAQ entry). Nothing is ever cut inside a block, so a passage
never starts or stops mid-sentence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bookwise.ingest.blocks import fence_opening, split_blocks

UnitKind = Literal["prose", "list", "code", "table", "label", "gap"]

LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+\S")
_ORDERED = re.compile(r"^\s*(\d{1,3})[.)]\s", re.M)
RESUME_WITHIN = 3  # blocks between two halves of a numbered list that are read as one list
_LABEL = re.compile(r"^\*\*[^*\n]+\*\*:?$")  # an admonition's title or a bold pseudo-heading
# One question on a line of its own: a <details> summary or an FAQ entry, which heads its answer.
_QUESTION_LINE = re.compile(r"^(?![^\n]*[.!?]\s)[^\n]{3,160}\?$")  # one sentence ("docusaurus.config.js?" is)
_GAP = "…"
# A Markdown link or image: only its text is quoted. Its target is a source file path
# (`../01-basics/setup.mdx`), which is no URL on the site, and an image would load from anywhere.
# Inside a code span it is an example of the syntax (`[page](../plugins)`), and stays whole.
_CODE_SPAN = r"(?P<code>(?P<ticks>`+)[^\n]*?(?P=ticks))"
_LINK_OR_CODE = re.compile(_CODE_SPAN + r"|(?P<image>!)?\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]*)[^)]*\)")
# An HTML comment renders nothing, but inside a code span it is what the book shows: "Use the
# `<!--truncate-->` marker" was quoted as "Use the `` marker".
_COMMENT_OR_CODE = re.compile(_CODE_SPAN + r"|<!--.*?-->", re.S)
# A paragraph of images alone: its alt text is a caption ("The widget on the example textbook, light
# theme"), not something the book says, and read as text it answered "How do I change the widget's colors?".
_IMAGES_ONLY = re.compile(r"^(?:\s*\[?!\[[^\]]*\]\([^)]*\)(?:\]\([^)]*\))?)+\s*$")
# A list item that is a link and nothing else ("- [Reddit: Why Redux Needs Reducers To Be Pure
# Functions](https://…)", a "Further information" list): quoted as its text, it points nowhere.
_LINK_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[[^\]]*\]\([^)]*\)[.,;]?\s*$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:: not a page of the book
_WORD = re.compile(r"\w+")
_TERMINAL = (".", "!", "?")
_CLOSERS = "\"'”’)*_`"
MIN_WORDS = 3  # a prose or list unit with fewer words is no passage on its own
TAB_LABEL_WORDS = 3  # "Bash:", "npm:", "Windows:": a tab's label, as ingest writes it, is this short
LEAD_MAX_WORDS = 80  # a paragraph this long introduces a code block or table; a longer one stands alone
UNITS_CACHE = 4_096  # sections' texts whose units are kept: every answer splits the same sections again


@dataclass(frozen=True)
class Unit:
    kind: UnitKind
    text: str
    pointers: tuple[str, ...] = ()  # the text of its links to other pages of the book


@dataclass(frozen=True)
class Passage:
    """Quotable Markdown from one section: ``body`` is what answers, ``lead`` what introduces it."""

    section: int  # 0-based index of the section in the list it was cut from
    text: str  # lead and body, as Markdown
    kinds: tuple[UnitKind, ...]
    position: int  # index of the passage's first unit within its section
    # The text of its links to other pages of the book ("Put a reverse proxy in front for TLS
    # (Deploying behind nginx)"): words that say where to read on, not what the passage says.
    pointers: tuple[str, ...] = ()

    @property
    def said(self) -> str:
        """``text`` without its links' text to other pages."""
        text = self.text
        for pointer in self.pointers:
            text = text.replace(pointer, " ", 1)
        return text

    @property
    def has_prose(self) -> bool:
        return any(kind in ("prose", "list") for kind in self.kinds)


def _kind(block: str) -> UnitKind:
    lines = block.split("\n")
    if fence_opening(lines[0]) is not None:
        return "code"
    if block.strip() == _GAP:
        return "gap"
    if all(line.strip().startswith("|") for line in lines):
        return "table"
    if LIST_ITEM.match(lines[0]):
        return "list"
    if len(lines) == 1 and (_LABEL.match(block.strip()) or _QUESTION_LINE.match(block.strip())):
        return "label"
    return "prose"


def _pointers(block: str) -> tuple[str, ...]:
    """The text of ``block``'s links to other pages of the book (a relative target), outside code."""
    links = (m for m in _LINK_OR_CODE.finditer(block) if not m.group("code") and not m.group("image"))
    texts = (m.group("text").strip() for m in links if not _SCHEME.match(m.group("target")))
    return tuple(text for text in texts if text)


def _links_only(block: str) -> bool:
    lines = [line for line in block.split("\n") if line.strip()]
    return bool(lines) and all(_LINK_ITEM.match(line) for line in lines)


def link_text(markdown: str) -> str:
    """Links and images as their text, except where a code span shows the syntax itself."""
    return _LINK_OR_CODE.sub(lambda m: m.group("code") or m.group("text"), markdown)


def clean(markdown: str) -> str:
    """Links and images keep only their text (a source path is no site URL; an image would load from
    anywhere), HTML comments go: what is safe and meaningful to quote."""
    return link_text(_COMMENT_OR_CODE.sub(lambda m: m.group("code") or "", markdown))


def split_units(markdown: str) -> list[Unit]:
    """A section's text as units; the items of a loose list and their indented paragraphs are one list."""
    return list(_units_of(markdown))


@functools.lru_cache(maxsize=UNITS_CACHE)
def _units_of(markdown: str) -> tuple[Unit, ...]:
    units: list[Unit] = []
    for block in split_blocks(markdown):
        kind = _kind(block)
        text = block if kind == "code" else clean(block).strip()
        if not text or _IMAGES_ONLY.match(block):
            continue
        previous = units[-1] if units else None
        pointers = () if kind == "code" else _pointers(block)
        if _links_only(block) and (previous is None or previous.kind != "list"):
            if previous is not None and previous.kind == "label":
                units.pop()  # "**Discussions**" goes with its links
            continue
        continues_list = kind == "list" or (kind == "prose" and block.startswith(("  ", "\t")))
        if previous is not None and previous.kind == "list" and continues_list:
            units[-1] = Unit("list", f"{previous.text}\n\n{text}", (*previous.pointers, *pointers))
            continue
        resumed = _resumed_list(units, text) if kind == "list" else None
        if resumed is not None:
            joined = "\n\n".join([*(u.text for u in units[resumed:]), text])
            pointed = tuple(pointer for u in units[resumed:] for pointer in u.pointers) + pointers
            units[resumed:] = [Unit("list", joined, pointed)]
            continue
        units.append(Unit(kind, text, pointers))
    return tuple(units)


def _resumed_list(units: list[Unit], text: str) -> int | None:
    """Where the numbered list that ``text`` resumes starts, if it does.

    "1. Remove the version…", an unindented "Example:" and code block, then "2. Delete…": the source
    broke its list in two, but the steps are one answer (quoted from 2., step 1 was lost).
    """
    number = _ORDERED.match(text)
    if number is None or int(number.group(1)) < 2:
        return None
    for back in range(len(units) - 1, max(-1, len(units) - 1 - RESUME_WITHIN), -1):
        unit = units[back]
        if unit.kind == "list":
            numbers = _ORDERED.findall(unit.text)
            return back if numbers and int(numbers[-1]) == int(number.group(1)) - 1 else None
        if unit.kind == "label":
            return None
    return None


def _introduces(unit: Unit) -> bool:
    return unit.kind in ("prose", "list") and unit.text.rstrip().endswith(":")


def _unfinished(unit: Unit) -> bool:
    """Prose that stops without a sentence end ("The classic PID rules are then"): before a block,
    it introduces that block."""
    end = unit.text.rstrip().rstrip(_CLOSERS)
    return unit.kind == "prose" and not end.endswith(_TERMINAL)


def _substantial(unit: Unit) -> bool:
    """Enough words to say something: not a stray `&nbsp;` or a one-word line."""
    return unit.kind in ("code", "table") or len(_WORD.findall(unit.text)) >= MIN_WORDS


def _complete_prose(unit: Unit) -> bool:
    """Prose that reads as whole sentences: not a paragraph's tail after a cut."""
    text = unit.text.strip()
    return bool(text) and not text[0].islower() and _substantial(unit)


def _lead_for(unit: Unit, before: Unit | None) -> Unit | None:
    """What ``unit`` cannot be quoted without: an admonition label, or the sentence introducing it."""
    if before is None:
        return None
    if before.kind == "label":
        return before
    if unit.kind in ("list", "code", "table") and (_introduces(before) or _unfinished(before)):
        return before
    if unit.kind in ("code", "table") and before.kind == "prose" and _short(before):
        return before
    return None


def passages_of(markdown: str, section: int = 0) -> list[Passage]:
    """Every quotable passage of one section, in reading order."""
    units = split_units(markdown)
    found: list[Passage] = []
    for i, unit in enumerate(units):
        if unit.kind in ("gap", "label") or (unit.kind == "prose" and not _complete_prose(unit)):
            continue
        lead = _lead_for(unit, units[i - 1] if i > 0 else None)
        parts = [lead, unit] if lead is not None else [unit]
        following = units[i + 1] if i + 1 < len(units) else None
        introduced = following is not None and following.kind in ("list", "code", "table")
        last = i
        if _introduces(unit) or _unfinished(unit):
            # "…the two steps are:" is only quoted with what it introduces.
            if introduced:
                assert following is not None
                parts.append(following)
                last = i + 1
            elif (tab := _tab_after(units, i + 1)) is not None:
                parts += tab
                last = i + 2
            elif _introduces(unit):
                continue
        if parts[-1].kind == "code" and last + 1 < len(units) and _continues_sentence(units[last + 1]):
            # "A simple model of a sensor is", the formula, then "where `x` is the true value, the
            # **bias** is…": the sentence the formula sits in ends after it, with the definitions.
            parts.append(units[last + 1])
        text = "\n\n".join(p.text for p in parts)
        if (not _substantial(unit) and len(parts) == 1) or (found and found[-1].text == text):
            continue
        found.append(
            Passage(
                section=section,
                text=text,
                kinds=tuple(p.kind for p in parts),
                position=i - (1 if lead is not None else 0),
                pointers=tuple(pointer for part in parts for pointer in part.pointers),
            )
        )
    return found


def _tab_after(units: list[Unit], start: int) -> list[Unit] | None:
    """A tab's label and the block under it ("Bash:" then the command), when they start at ``start``:
    "Finally, to deploy your site, run:" introduces the first tab's block, not the label alone."""
    return units[start : start + 2] if is_tab_label(units, start) else None


def is_tab_label(units: Sequence[Unit], at: int) -> bool:
    """Whether ``units[at]`` is a tab's label ("Python:") over the block that follows it."""
    if at + 1 >= len(units):
        return False
    label, block = units[at], units[at + 1]
    is_label = label.kind == "prose" and _introduces(label) and len(label.text.split()) <= TAB_LABEL_WORDS
    return is_label and block.kind in ("list", "code", "table")


_CONTINUATION = re.compile(r"^(?:where|which|with|whose|so that|and|or)\b")


def _continues_sentence(unit: Unit) -> bool:
    """Prose that goes on with the sentence of the block before it ("where `x` is the true value…")."""
    return unit.kind == "prose" and bool(_CONTINUATION.match(unit.text.lstrip()))


def _short(unit: Unit) -> bool:
    return len(unit.text.split()) <= LEAD_MAX_WORDS
