"""Markdown and MDX block syntax, one line at a time: what a line opens, closes or is.

The one place that knows where a code fence opens and closes, what a heading, a table row, a list
item, an admonition or an MDX block (ESM, a comment, a JSX tag) looks like. Ingest's scanner
(``mdx.scan``) walks a page with it, the chunker cuts lists with it, and :func:`fence_spans` and
:func:`split_blocks` find fenced code and blocks in Markdown that is already assembled (sections,
chunks, answers). Every test reads one line once, so a scan stays linear in the page however
hostile it is.

The lines are read as Docusaurus' MDX reads them, not as CommonMark would: a fence opens at any
indent (inside a JSX wrapper or a list item alike), and ``import``/``export``, ``{/* */}`` and ``:::``
are structure. markdown-it-py was measured as the base: its fences are these on all 1,590 code
blocks the scanner keeps in the three reference corpora, but it knows no MDX (ESM, JSX, comments,
admonitions), so the scan would still need every test below, and its block pass alone takes longer
than the whole scan (1.1 s against 0.75 s on the corpora; 27 s against 10 s on a 2 MB page of
one-letter lines). It would be a second pass that changes no chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_TITLE_ATTR = re.compile(r"""title=(?:"([^"]*)"|'([^']*)')""")
# Docusaurus' default magic comments: the site renders the code without these lines (they only mark
# highlighted lines), so a quoted or copied block must not carry them either.
_MAGIC_COMMENT = re.compile(
    r"^\s*(?://|#|--|%|;;?|/\*|\{\s*/\*|<!--)\s*highlight-(?:next-line|start|end)\s*(?:\*/\s*\}?|-->)?\s*$"
)
# A fence whose content Docusaurus renders as MDX (its remark plugin unwraps it).
MDX_CODE_BLOCK = "mdx-code-block"


@dataclass(frozen=True)
class Fence:
    """An opening code fence: its indent, its marker (three or more backticks or tildes) and info."""

    indent: str
    marker: str
    info: str

    @property
    def lang(self) -> str:
        """The first word of the info string."""
        return self.info.strip().split(" ")[0] if self.info.strip() else ""

    @property
    def title(self) -> str:
        """The ``title="…"`` of the info string, "" without one."""
        match = _TITLE_ATTR.search(self.info)
        return (match.group(1) or match.group(2)) if match else ""

    def closed_by(self, line: str) -> bool:
        """A closing fence: at least as many of the same character, and nothing else but spaces."""
        run = line.strip()
        return len(run) >= len(self.marker) and run == self.marker[0] * len(run)

    def unindent(self, line: str) -> str:
        """A content line without the fence's indent (or without its own, when it has less)."""
        return line[len(self.indent) :] if line.startswith(self.indent) else line.lstrip()


def fence_opening(line: str) -> Fence | None:
    match = _FENCE.match(line)
    return Fence(*match.groups()) if match else None


def fence_end(lines: Sequence[str], opening: int, fence: Fence) -> int:
    """The index of the line closing ``fence``, opened at ``opening`` (``len(lines)`` if none does:
    an unclosed fence runs to the end, as in CommonMark)."""
    end = opening + 1
    while end < len(lines) and not fence.closed_by(lines[end]):
        end += 1
    return end


def fence_spans(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(opening, closing) line indexes of each fenced code block in plain Markdown; an unclosed
    block closes on the last line. Lines outside every span are Markdown, lines inside are code."""
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        fence = fence_opening(lines[index])
        if fence is None:
            index += 1
            continue
        end = fence_end(lines, index, fence)
        spans.append((index, min(end, len(lines) - 1)))
        index = end + 1
    return spans


def split_blocks(markdown: str) -> list[str]:
    """Blank-line separated blocks of plain Markdown, blank lines dropped; a fenced code block is one
    block whatever it holds (blank lines too), and starts a block even without a blank line above."""
    lines = markdown.split("\n")
    out: list[str] = []
    current: list[str] = []
    done = 0  # lines before this index are in ``out`` or ``current``
    for opening, closing in [*fence_spans(lines), (len(lines), len(lines))]:
        for line in lines[done:opening]:
            if line.strip():
                current.append(line)
            elif current:
                out.append("\n".join(current))
                current = []
        if current:
            out.append("\n".join(current))
            current = []
        if opening < len(lines):
            out.append("\n".join(lines[opening : closing + 1]))
        done = closing + 1
    return out


def is_magic_comment(line: str) -> bool:
    """A ``// highlight-next-line`` style line of code, which the site does not render."""
    return _MAGIC_COMMENT.match(line) is not None


# --- headings ---------------------------------------------------------------------------------

_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def atx_heading(line: str) -> tuple[int, str] | None:
    r"""(level, text) of an ATX heading line, the closing ``#``s removed.

    Same result as ``^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`` without its lazy
    group, which retried the ending at every character (quadratic in runs of spaces).
    """
    opening = _ATX_OPEN.match(line)
    if opening is None:
        return None
    text = line[opening.end() :].strip(" \t")
    hashes = text.rstrip("#")
    if len(hashes) < len(text) and hashes[-1:] in (" ", "\t"):
        text = hashes.rstrip(" \t")
    return len(opening.group(1)), text.strip()


def setext_level(line: str) -> int | None:
    """1 or 2 for a setext underline (``===`` or ``---``), which makes the paragraph above a heading."""
    match = _SETEXT.match(line)
    if match is None:
        return None
    return 1 if match.group(1)[0] == "=" else 2


# --- tables and lists ---------------------------------------------------------------------------

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# Matched against the stripped line: a leading and a trailing ``\s*`` beside ``\s*`` was quadratic.
_TABLE_DELIM = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")
# A list item's marker, at the start of a line.
LIST_ITEM_MARKER = r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]"


def is_table_row(line: str) -> bool:
    """A row between pipes, or a delimiter row (``--- | :---:``) with at least one pipe."""
    return _TABLE_ROW.match(line) is not None or (
        "|" in line and _TABLE_DELIM.match(line.strip()) is not None
    )


# --- admonitions ----------------------------------------------------------------------------------

ADMONITIONS = ("note", "tip", "info", "warning", "danger", "caution", "important", "success", "secondary")
_ADMONITION_OPEN = re.compile(r"^\s*(:{3,})([A-Za-z][\w-]*)(?:\[(.*)\])?(?:\{[^}]*\})?(.*)$")
_ADMONITION_CLOSE = re.compile(r"^\s*:{3,}\s*$")


def admonition_opening(line: str) -> tuple[str, str] | None:
    """(keyword, title) of a ``:::tip[Title]`` line of one of Docusaurus' admonition keywords; the
    title is "" when there is none (``:::tip Title`` is the older way to write it)."""
    match = _ADMONITION_OPEN.match(line)
    if match is None or match.group(2).lower() not in ADMONITIONS:
        return None
    _, keyword, bracket_title, legacy_title = match.groups()
    return keyword, bracket_title or legacy_title.strip() or ""


def closes_admonition(line: str) -> bool:
    return _ADMONITION_CLOSE.match(line) is not None


# --- MDX blocks -------------------------------------------------------------------------------------

_ESM = re.compile(r"^(import|export)\s")
_IMPORT_DEFAULT = re.compile(r"""^import\s+(\w+)\s+from\s+['"]([^'"]+\.mdx?)['"]""")
_SELF_CLOSING = re.compile(r"^\s*<([A-Z]\w*)\s*/>\s*$")
_UNCLOSED_TAG = re.compile(r"^\s*<[A-Za-z][\w.:-]*(?:\s[^>]*)?$")


def is_esm(line: str) -> bool:
    """An ``import``/``export`` line, which opens an ESM block running to the next blank line."""
    return _ESM.match(line) is not None


def partial_import(line: str) -> tuple[str, str] | None:
    """(component name, path) of ``import Name from './_partial.mdx'``."""
    match = _IMPORT_DEFAULT.match(line)
    return (match.group(1), match.group(2)) if match else None


def self_closing_component(line: str) -> str | None:
    """The name of a line that is one ``<Component />`` and nothing else."""
    match = _SELF_CLOSING.match(line)
    return match.group(1) if match else None


def opens_multiline_tag(line: str) -> bool:
    """A JSX opening tag whose attributes run on to the next lines (no ``>`` at the line's end)."""
    return _UNCLOSED_TAG.match(line) is not None and not line.strip().endswith(">")


def comment_closer(line: str) -> str | None:
    """``-->`` or ``*/}`` for a line opening an HTML or MDX comment, None otherwise."""
    stripped = line.strip()
    if stripped.startswith("<!--"):
        return "-->"
    if stripped.startswith("{/*"):
        return "*/}"
    return None
