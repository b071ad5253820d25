"""A line scanner for Docusaurus Markdown/MDX that keeps source offsets.

It finds what decides structure — headings (ATX and setext), code fences, admonitions, ESM
import/export blocks, comments, JSX wrappers and partial includes — and yields items with their
character span in the source file. Inline Markdown is left for mistune (``markdown.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from bookwise.errors import MarkdownError
from bookwise.ingest.markdown import strip_jsx

ADMONITIONS = ("note", "tip", "info", "warning", "danger", "caution", "important", "success", "secondary")

_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
MDX_CODE_BLOCK = "mdx-code-block"
_ADMONITION_OPEN = re.compile(r"^\s*(:{3,})([A-Za-z][\w-]*)(?:\[(.*)\])?(?:\{[^}]*\})?(.*)$")
_ADMONITION_CLOSE = re.compile(r"^\s*:{3,}\s*$")
_ESM = re.compile(r"^(import|export)\s")
_IMPORT_DEFAULT = re.compile(r"""^import\s+(\w+)\s+from\s+['"]([^'"]+\.mdx?)['"]""")
_SELF_CLOSING = re.compile(r"^\s*<([A-Z]\w*)\s*/>\s*$")
_TAB_ITEM = re.compile(r"""<TabItem\b[^>]*?\blabel=(?:"([^"]*)"|'([^']*)'|\{['"]([^'"]*)['"]\})[^>]*>""")
_TAB_ITEM_OPEN = "<TabItem"
_UNCLOSED_TAG = re.compile(r"^\s*<[A-Za-z][\w.:-]*(?:\s[^>]*)?$")
_TITLE_ATTR = re.compile(r"""title=(?:"([^"]*)"|'([^']*)')""")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# Matched against the stripped line: a leading and a trailing ``\s*`` beside ``\s*`` was quadratic.
_TABLE_DELIM = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")
# Docusaurus' default magic comments: the site renders the code without these lines (they only mark
# highlighted lines), so a quoted or copied block must not carry them either.
_MAGIC_COMMENT = re.compile(
    r"^\s*(?://|#|--|%|;;?|/\*|\{\s*/\*|<!--)\s*highlight-(?:next-line|start|end)\s*(?:\*/\s*\}?|-->)?\s*$"
)
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


def _atx(line: str) -> tuple[int, str] | None:
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


def _lines(text: str, offset: int) -> Iterator[tuple[str, int, int]]:
    pos = 0
    for line in text.split("\n"):
        yield line, offset + pos, offset + pos + len(line)
        pos += len(line) + 1


def scan(body: str, offset: int = 0, *, path: str = "", first_line: int = 1) -> list[Item]:
    """Scan ``body``, which starts at character ``offset`` and line ``first_line`` of its file."""
    items: list[Item] = []
    partials: dict[str, str] = {}
    lines = list(_lines(body, offset))
    i = 0
    admonition_depth = 0
    # Lines of the open paragraph (that a setext underline would turn into a heading), joined once
    # when it closes: re-joining the growing text line by line was quadratic.
    paragraph: list[tuple[str, int, int]] = []

    def close_paragraph() -> None:
        if paragraph:
            text = "\n".join(t for t, _, _ in paragraph)
            items.append(TextItem(text, paragraph[0][1], paragraph[-1][2], "prose"))
            paragraph.clear()

    def line_number(pos: int) -> int:
        return body.count("\n", 0, pos - offset) + first_line

    while i < len(lines):
        line, start, end = lines[i]
        stripped = line.strip()

        fence = _FENCE.match(line)
        if fence:
            indent, marker, info = fence.groups()
            j = _fence_end(lines, i)
            lang = _lang(info)
            if lang == MDX_CODE_BLOCK:
                content = [ln for ln, _, _ in lines[i + 1 : j]]
                if not paragraph and _renders_code_above(items, content):
                    i = j + 1  # a live demo of the example just shown: its text would read twice
                    continue
                wrapped = None if paragraph else _wrapped_fence(lines, j, content)
                if wrapped is not None and _renders_code_above(items, wrapped[0], as_mdx=False):
                    i = wrapped[1] + 1  # the same demo, its wrapper opened and closed around a fence
                    continue
                # Docusaurus renders this fence's content as MDX (its remark plugin unwraps it): scan
                # the content as the page's own, without the two fence lines.
                if j < len(lines):
                    del lines[j]
                i += 1
                continue
            # An unclosed fence runs to the end of the file, as in CommonMark.
            close_end = lines[min(j, len(lines) - 1)][2]
            code = "\n".join(
                ln[len(indent) :] if ln.startswith(indent) else ln.lstrip()
                for ln, _, _ in lines[i + 1 : j]
                if not _MAGIC_COMMENT.match(ln)
            )
            title_match = _TITLE_ATTR.search(info)
            title = (title_match.group(1) or title_match.group(2)) if title_match else ""
            header = f"{marker}{lang}" + (f' title="{title}"' if title else "")
            close_paragraph()
            items.append(TextItem(f"{header}\n{code}\n{marker}", start, close_end, "code"))
            i = j + 1
            continue

        if stripped.startswith("<!--") or stripped.startswith("{/*"):
            closer = "-->" if stripped.startswith("<!--") else "*/}"
            j = i
            while j < len(lines) and closer not in lines[j][0]:
                j += 1
            if j == len(lines):
                raise MarkdownError(
                    f"comment is never closed (missing '{closer}')", path=path, line=line_number(start)
                )
            rest = lines[j][0].split(closer, 1)[1].strip()
            close_paragraph()
            if rest:
                items.append(TextItem(strip_jsx(rest), start, lines[j][2], "prose"))
            i = j + 1
            continue

        if _ESM.match(line):
            j = i
            while j < len(lines) and lines[j][0].strip():
                if match := _IMPORT_DEFAULT.match(lines[j][0]):
                    partials[match.group(1)] = match.group(2)
                j += 1
            close_paragraph()
            i = j
            continue

        heading = _atx(line)
        if heading:
            close_paragraph()
            items.append(HeadingItem(heading[0], heading[1], start, end))
            i += 1
            continue

        setext = _SETEXT.match(line)
        if setext and paragraph:
            level = 1 if setext.group(1)[0] == "=" else 2
            text = "\n".join(t for t, _, _ in paragraph).strip()
            items.append(HeadingItem(level, text, paragraph[0][1], end))
            paragraph.clear()
            i += 1
            continue

        admonition = _ADMONITION_OPEN.match(line)
        if admonition and admonition.group(2).lower() in ADMONITIONS:
            _, keyword, bracket_title, legacy_title = admonition.groups()
            title = bracket_title or legacy_title.strip() or ""
            label = keyword.capitalize() + (f": {strip_jsx(title)}" if title else "")
            close_paragraph()
            items.append(TextItem(f"**{label}**", start, end, "admonition"))
            admonition_depth += 1
            i += 1
            continue
        if admonition_depth and _ADMONITION_CLOSE.match(line):
            admonition_depth -= 1
            close_paragraph()
            items.append(TextItem("", start, end, "blank"))
            i += 1
            continue

        include = _SELF_CLOSING.match(line)
        if include and include.group(1) in partials:
            close_paragraph()
            items.append(IncludeItem(partials[include.group(1)], start, end))
            i += 1
            continue

        if _UNCLOSED_TAG.match(line) and not stripped.endswith(">"):
            # A JSX opening tag whose attributes run over several lines: drop it whole.
            j = i
            while j < len(lines) and not lines[j][0].rstrip().endswith(">"):
                j += 1
            close_paragraph()
            i = j + 1
            continue

        if not stripped:
            close_paragraph()
            items.append(TextItem("", start, end, "blank"))
            i += 1
            continue

        text = strip_jsx(tab_labels(line))
        if not text.strip():
            # A line of wrappers only (<Tabs>, </details>…): a block boundary, like a blank line.
            close_paragraph()
            items.append(TextItem("", start, end, "blank"))
            i += 1
            continue
        if _TABLE_ROW.match(line) or "|" in line and _TABLE_DELIM.match(stripped):
            close_paragraph()
            items.append(TextItem(text, start, end, "table"))
        else:
            paragraph.append((text, start, end))
        i += 1
    close_paragraph()
    return _merge_tables(items)


def _lang(info: str) -> str:
    """A fence's language: the first word of its info string."""
    return info.strip().split(" ")[0] if info.strip() else ""


def _fence_end(lines: list[tuple[str, int, int]], opening: int) -> int:
    """The index of the line closing the fence opened at ``opening`` (``len(lines)`` if none does)."""
    marker = _FENCE.match(lines[opening][0])
    assert marker is not None
    fence = marker.group(2)
    closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    end = opening + 1
    while end < len(lines) and not closing.match(lines[end][0]):
        end += 1
    return end


def _only_tags(content: list[str]) -> bool:
    return bool(content) and not any(strip_jsx(line).strip() for line in content)


def _wrapped_fence(
    lines: list[tuple[str, int, int]], end: int, content: list[str]
) -> tuple[list[str], int] | None:
    """An ``mdx-code-block`` that only opens a JSX wrapper (``<BrowserWindow>``, its ``content``,
    closed at line ``end``), then a code fence, then one that only closes the wrapper: the fence's
    lines and the index of the wrapper's last line."""
    if not _only_tags(content):
        return None
    code = _next_text_line(lines, end + 1)
    fence = _FENCE.match(lines[code][0]) if code < len(lines) else None
    if fence is None or _lang(fence.group(3)) == MDX_CODE_BLOCK:
        return None
    code_end = _fence_end(lines, code)
    closer = _next_text_line(lines, code_end + 1)
    wrapper = _FENCE.match(lines[closer][0]) if closer < len(lines) else None
    if wrapper is None or _lang(wrapper.group(3)) != MDX_CODE_BLOCK:
        return None
    closer_end = _fence_end(lines, closer)
    if closer_end >= len(lines) or not _only_tags([ln for ln, _, _ in lines[closer + 1 : closer_end]]):
        return None
    return [ln for ln, _, _ in lines[code : code_end + 1]], closer_end


def _next_text_line(lines: list[tuple[str, int, int]], start: int) -> int:
    while start < len(lines) and not lines[start][0].strip():
        start += 1
    return start


def _renders_code_above(items: list[Item], content: list[str], *, as_mdx: bool = True) -> bool:
    """Whether an ``mdx-code-block``'s content is the code block right above it, wrapped in JSX (a
    ``<BrowserWindow>`` showing the rendered example): the demo's placeholder text ("Some
    **content** with _Markdown_ `syntax`") would be indexed and quoted as if it said something.
    ``as_mdx=False`` compares a code fence's lines as they are (a demo fence between two wrappers)."""
    above = next(
        (item for item in reversed(items) if not (isinstance(item, TextItem) and item.kind == "blank")), None
    )
    if not isinstance(above, TextItem) or above.kind != "code":
        return False
    shown = " ".join(" ".join(above.text.split("\n")[1:-1]).split())
    if as_mdx:
        content = [line for line in content if strip_jsx(line).strip() and not _ESM.match(line)]
    rendered = " ".join(" ".join(content).split())
    return bool(shown) and rendered == shown


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
