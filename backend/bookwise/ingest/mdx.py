"""A line scanner for Docusaurus Markdown/MDX that keeps source offsets.

It finds what decides structure — headings (ATX and setext), code fences, admonitions, ESM
import/export blocks, comments, JSX wrappers and partial includes — and yields items with their
character span in the source file. What each line opens or closes is ``blocks.py``'s; this module
walks a page with it, one construct per method. Inline Markdown is left for mistune (``markdown.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bookwise.errors import MarkdownError
from bookwise.ingest import blocks
from bookwise.ingest.blocks import MDX_CODE_BLOCK, Fence
from bookwise.ingest.markdown import strip_jsx

_TAB_ITEM = re.compile(r"""<TabItem\b[^>]*?\blabel=(?:"([^"]*)"|'([^']*)'|\{['"]([^'"]*)['"]\})[^>]*>""")
_TAB_ITEM_OPEN = "<TabItem"
_MATH = re.compile(r"\$\$|\\\(|\$[^$\s][^$]*\$")
_IMAGE = re.compile(r"!\[[^\]]*\]\(|<img\b", re.I)


@dataclass(frozen=True)
class HeadingItem:
    level: int
    raw: str  # text after the #s, as written (may end with {#id} or {/* #id */})
    start: int
    end: int


@dataclass(frozen=True)
class TextItem:
    text: str
    start: int
    end: int
    kind: str  # prose | code | table | admonition | blank


@dataclass(frozen=True)
class IncludeItem:
    target: str  # import path of an MDX partial, relative to the including file
    start: int
    end: int


Item = HeadingItem | TextItem | IncludeItem


def tab_labels(line: str) -> str:
    """``<TabItem label="x" ...>`` → ``x: ``, scanning each tag once."""
    out: list[str] = []
    done = search = 0
    last_close = line.rfind(">")
    while 0 <= (start := line.find(_TAB_ITEM_OPEN, search)) < last_close:
        match = _TAB_ITEM.match(line, start)
        if match is None:
            # No tag starting before the next ">" can match either: skip to it.
            search = line.find(">", start) + 1
            continue
        out.append(line[done:start])
        out.append(f"{match.group(1) or match.group(2) or match.group(3)}: ")
        done = search = match.end()
    out.append(line[done:])
    return "".join(out)


def scan(body: str, offset: int = 0, *, path: str = "", first_line: int = 1) -> list[Item]:
    """Scan ``body``, which starts at character ``offset`` and line ``first_line`` of its file."""
    return _merge_tables(_Scanner(body, offset, path, first_line).run())


class _Scanner:
    """One pass over a page's lines. Each ``_read_*`` method reads one construct at line ``at`` and
    returns the index of the line after it, or None when the line does not open that construct."""

    def __init__(self, body: str, offset: int, path: str, first_line: int) -> None:
        self.body, self.offset, self.path, self.first_line = body, offset, path, first_line
        self.lines = body.split("\n")
        # (start, end) character offsets of each line in the file; kept beside ``lines``.
        self.spans: list[tuple[int, int]] = []
        position = offset
        for line in self.lines:
            self.spans.append((position, position + len(line)))
            position += len(line) + 1
        self.items: list[Item] = []
        self.partials: dict[str, str] = {}  # component name → import path of an MDX partial
        self.admonition_depth = 0
        # (fence character, marker length) → a line index from which no line closes such a fence.
        self.unclosed_from: dict[tuple[str, int], int] = {}
        # Lines of the open paragraph (that a setext underline would turn into a heading), joined once
        # when it closes: re-joining the growing text line by line was quadratic.
        self.paragraph: list[tuple[str, int, int]] = []

    def run(self) -> list[Item]:
        readers: tuple[Callable[[int], int | None], ...] = (
            self._read_fence,
            self._read_comment,
            self._read_esm,
            self._read_atx_heading,
            self._read_setext_underline,
            self._read_admonition_open,
            self._read_admonition_close,
            self._read_include,
            self._read_multiline_tag,
            self._read_line,
        )
        at = 0
        while at < len(self.lines):
            for read in readers:
                following = read(at)
                if following is not None:
                    at = following
                    break
        self._close_paragraph()
        return self.items

    # --- helpers -----------------------------------------------------------------------------------

    def _close_paragraph(self) -> None:
        if self.paragraph:
            text = "\n".join(t for t, _, _ in self.paragraph)
            self.items.append(TextItem(text, self.paragraph[0][1], self.paragraph[-1][2], "prose"))
            self.paragraph.clear()

    def _add(self, at: int, text: str, kind: str) -> None:
        """An item of line ``at`` alone, after the open paragraph."""
        self._close_paragraph()
        self.items.append(TextItem(text, *self.spans[at], kind))

    def _fence_end(self, at: int, fence: Fence) -> int:
        """``blocks.fence_end``, remembering where no closing line is left for a marker: each of a
        page of unclosed ``mdx-code-block`` openers (read on as the page's own) searched to the end."""
        key = (fence.marker[0], len(fence.marker))
        known = self.unclosed_from.get(key)
        if known is not None and known <= at + 1:
            return len(self.lines)
        end = blocks.fence_end(self.lines, at, fence)
        if end == len(self.lines):
            self.unclosed_from[key] = at + 1
        return end

    def _drop_line(self, at: int) -> None:
        del self.lines[at]
        del self.spans[at]
        # Removing a line adds no closing line: what was known from a later line now starts one earlier.
        self.unclosed_from = {key: p - 1 if p > at else p for key, p in self.unclosed_from.items()}

    def _line_number(self, position: int) -> int:
        return self.body.count("\n", 0, position - self.offset) + self.first_line

    # --- code fences -------------------------------------------------------------------------------

    def _read_fence(self, at: int) -> int | None:
        fence = blocks.fence_opening(self.lines[at])
        if fence is None:
            return None
        end = self._fence_end(at, fence)
        if fence.lang == MDX_CODE_BLOCK:
            return self._read_mdx_code_block(at, end)
        # An unclosed fence runs to the end of the file, as in CommonMark.
        close_end = self.spans[min(end, len(self.lines) - 1)][1]
        code = "\n".join(
            fence.unindent(ln) for ln in self.lines[at + 1 : end] if not blocks.is_magic_comment(ln)
        )
        header = f"{fence.marker}{fence.lang}" + (f' title="{fence.title}"' if fence.title else "")
        self._close_paragraph()
        self.items.append(TextItem(f"{header}\n{code}\n{fence.marker}", self.spans[at][0], close_end, "code"))
        return end + 1

    def _read_mdx_code_block(self, at: int, end: int) -> int:
        """Docusaurus renders this fence's content as MDX: its content is scanned as the page's own,
        without the two fence lines, unless it is a live demo of the code block just shown.

        The content is read lazily (lines ``at + 1`` to ``end``): an unclosed block runs to the end
        of the page, and copying the rest of the page at every such opener was quadratic."""
        if not self.paragraph and _renders_code_above(self.items, self.lines, at + 1, end):
            return end + 1  # a live demo of the example just shown: its text would read twice
        wrapped = None if self.paragraph else self._wrapped_fence(at + 1, end)
        if wrapped is not None and _renders_code_above(self.items, self.lines, *wrapped[0], as_mdx=False):
            return wrapped[1] + 1  # the same demo, its wrapper opened and closed around a fence
        if end < len(self.lines):
            self._drop_line(end)
        return at + 1

    def _wrapped_fence(self, start: int, end: int) -> tuple[tuple[int, int], int] | None:
        """An ``mdx-code-block`` that only opens a JSX wrapper (``<BrowserWindow>``, its content lines
        ``start`` to ``end``), then a code fence, then one that only closes the wrapper: the (start,
        end) lines of the fence and the index of the wrapper's last line."""
        lines = self.lines
        if not _only_tags(lines, start, end):
            return None
        code = _next_text_line(lines, end + 1)
        shown = _fence_at(lines, code)
        if shown is None or shown.lang == MDX_CODE_BLOCK:
            return None
        code_end = self._fence_end(code, shown)
        closer = _next_text_line(lines, code_end + 1)
        wrapper = _fence_at(lines, closer)
        if wrapper is None or wrapper.lang != MDX_CODE_BLOCK:
            return None
        closer_end = self._fence_end(closer, wrapper)
        if closer_end >= len(lines) or not _only_tags(lines, closer + 1, closer_end):
            return None
        return (code, code_end + 1), closer_end

    # --- MDX blocks --------------------------------------------------------------------------------

    def _read_comment(self, at: int) -> int | None:
        """An HTML or MDX comment, over as many lines as it takes; text after its end is prose."""
        closer = blocks.comment_closer(self.lines[at])
        if closer is None:
            return None
        end = at
        while end < len(self.lines) and closer not in self.lines[end]:
            end += 1
        if end == len(self.lines):
            raise MarkdownError(
                f"comment is never closed (missing '{closer}')",
                path=self.path,
                line=self._line_number(self.spans[at][0]),
            )
        rest = self.lines[end].split(closer, 1)[1].strip()
        self._close_paragraph()
        if rest:
            self.items.append(TextItem(strip_jsx(rest), self.spans[at][0], self.spans[end][1], "prose"))
        return end + 1

    def _read_esm(self, at: int) -> int | None:
        """An ``import``/``export`` block up to the next blank line; it renders nothing, but its
        default imports of partials name the components that include them."""
        if not blocks.is_esm(self.lines[at]):
            return None
        end = at
        while end < len(self.lines) and self.lines[end].strip():
            if imported := blocks.partial_import(self.lines[end]):
                self.partials[imported[0]] = imported[1]
            end += 1
        self._close_paragraph()
        return end

    def _read_include(self, at: int) -> int | None:
        """``<Partial />`` of a component imported from a partial: the partial's content goes here."""
        name = blocks.self_closing_component(self.lines[at])
        if name is None or name not in self.partials:
            return None
        self._close_paragraph()
        self.items.append(IncludeItem(self.partials[name], *self.spans[at]))
        return at + 1

    def _read_multiline_tag(self, at: int) -> int | None:
        """A JSX opening tag whose attributes run over several lines: dropped whole."""
        if not blocks.opens_multiline_tag(self.lines[at]):
            return None
        end = at
        while end < len(self.lines) and not self.lines[end].rstrip().endswith(">"):
            end += 1
        self._close_paragraph()
        return end + 1

    # --- headings ----------------------------------------------------------------------------------

    def _read_atx_heading(self, at: int) -> int | None:
        heading = blocks.atx_heading(self.lines[at])
        if heading is None:
            return None
        self._close_paragraph()
        self.items.append(HeadingItem(heading[0], heading[1], *self.spans[at]))
        return at + 1

    def _read_setext_underline(self, at: int) -> int | None:
        """``===`` or ``---`` under a paragraph: the paragraph is a heading."""
        level = blocks.setext_level(self.lines[at])
        if level is None or not self.paragraph:
            return None
        text = "\n".join(t for t, _, _ in self.paragraph).strip()
        self.items.append(HeadingItem(level, text, self.paragraph[0][1], self.spans[at][1]))
        self.paragraph.clear()
        return at + 1

    # --- admonitions -------------------------------------------------------------------------------

    def _read_admonition_open(self, at: int) -> int | None:
        """``:::tip[Title]`` → a bold label (``**Tip: Title**``); the content reads on as the page's."""
        opening = blocks.admonition_opening(self.lines[at])
        if opening is None:
            return None
        keyword, title = opening
        self._add(
            at, "**" + keyword.capitalize() + (f": {strip_jsx(title)}" if title else "") + "**", "admonition"
        )
        self.admonition_depth += 1
        return at + 1

    def _read_admonition_close(self, at: int) -> int | None:
        if not self.admonition_depth or not blocks.closes_admonition(self.lines[at]):
            return None
        self.admonition_depth -= 1
        self._add(at, "", "blank")
        return at + 1

    # --- lines of text -----------------------------------------------------------------------------

    def _read_line(self, at: int) -> int:
        """Any other line: a blank, a table row, or a line of the open paragraph."""
        line = self.lines[at]
        if not line.strip():
            self._add(at, "", "blank")
            return at + 1
        text = strip_jsx(tab_labels(line))
        if not text.strip():
            # A line of wrappers only (<Tabs>, </details>…): a block boundary, like a blank line.
            self._add(at, "", "blank")
        elif blocks.is_table_row(line):
            self._add(at, text, "table")
        else:
            self.paragraph.append((text, *self.spans[at]))
        return at + 1


def _only_tags(lines: list[str], start: int, end: int) -> bool:
    """Whether lines ``start`` to ``end`` (not included) are some, and only JSX tags."""
    return start < end and not any(strip_jsx(lines[k]).strip() for k in range(start, end))


def _fence_at(lines: list[str], at: int) -> Fence | None:
    return blocks.fence_opening(lines[at]) if at < len(lines) else None


def _next_text_line(lines: list[str], start: int) -> int:
    while start < len(lines) and not lines[start].strip():
        start += 1
    return start


def _renders_code_above(
    items: list[Item], lines: list[str], start: int, end: int, *, as_mdx: bool = True
) -> bool:
    """Whether an ``mdx-code-block``'s content (lines ``start`` to ``end``) is the code block right
    above it, wrapped in JSX (a ``<BrowserWindow>`` showing the rendered example): the demo's
    placeholder text ("Some **content** with _Markdown_ `syntax`") would be indexed and quoted as if
    it said something. ``as_mdx=False`` compares a code fence's lines as they are (a demo fence
    between two wrappers). The content's words are read only until they outgrow the code's."""
    above = next(
        (item for item in reversed(items) if not (isinstance(item, TextItem) and item.kind == "blank")), None
    )
    if not isinstance(above, TextItem) or above.kind != "code":
        return False
    shown = " ".join(" ".join(above.text.split("\n")[1:-1]).split())
    if not shown:
        return False
    words: list[str] = []
    size = -1  # the length of " ".join(words)
    for k in range(start, end):
        line = lines[k]
        if as_mdx and (not strip_jsx(line).strip() or blocks.is_esm(line)):
            continue
        for word in line.split():
            words.append(word)
            size += len(word) + 1
        if size > len(shown):
            return False
    return " ".join(words) == shown


def _merge_tables(items: list[Item]) -> list[Item]:
    """Consecutive table rows → one table item (joined once per table, not once per row)."""
    merged: list[Item] = []
    rows: list[TextItem] = []
    for item in [*items, None]:
        if isinstance(item, TextItem) and item.kind == "table":
            rows.append(item)
            continue
        if rows:
            merged.append(TextItem("\n".join(r.text for r in rows), rows[0].start, rows[-1].end, "table"))
            rows.clear()
        if item is not None:
            merged.append(item)
    return merged


def has_math(text: str) -> bool:
    return bool(_MATH.search(text))


def has_image(text: str) -> bool:
    return bool(_IMAGE.search(text))
