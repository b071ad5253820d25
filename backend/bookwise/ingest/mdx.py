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

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_ADMONITION_OPEN = re.compile(r"^\s*(:{3,})([A-Za-z][\w-]*)(?:\[(.*)\])?(?:\{[^}]*\})?\s*(.*?)\s*$")
_ADMONITION_CLOSE = re.compile(r"^\s*:{3,}\s*$")
_ESM = re.compile(r"^(import|export)\s")
_IMPORT_DEFAULT = re.compile(r"""^import\s+(\w+)\s+from\s+['"]([^'"]+\.mdx?)['"]""")
_SELF_CLOSING = re.compile(r"^\s*<([A-Z]\w*)\s*/>\s*$")
_TAB_ITEM = re.compile(r"""<TabItem\b[^>]*?\blabel=(?:"([^"]*)"|'([^']*)'|\{['"]([^'"]*)['"]\})[^>]*>""")
_UNCLOSED_TAG = re.compile(r"^\s*<[A-Za-z][\w.:-]*(?:\s[^>]*)?$")
_TITLE_ATTR = re.compile(r"""title=(?:"([^"]*)"|'([^']*)')""")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_DELIM = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
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
    paragraph_open = (
        False  # the previous item is a prose line that a setext underline would turn into a heading
    )

    def line_number(pos: int) -> int:
        return body.count("\n", 0, pos - offset) + first_line

    while i < len(lines):
        line, start, end = lines[i]
        stripped = line.strip()

        fence = _FENCE.match(line)
        if fence:
            indent, marker, info = fence.groups()
            j = i + 1
            closing = re.compile(rf"^\s*{re.escape(marker[0])}{{{len(marker)},}}\s*$")
            while j < len(lines) and not closing.match(lines[j][0]):
                j += 1
            # An unclosed fence runs to the end of the file, as in CommonMark.
            close_end = lines[min(j, len(lines) - 1)][2]
            code = "\n".join(
                ln[len(indent) :] if ln.startswith(indent) else ln.lstrip() for ln, _, _ in lines[i + 1 : j]
            )
            lang = info.strip().split(" ")[0] if info.strip() else ""
            title_match = _TITLE_ATTR.search(info)
            title = (title_match.group(1) or title_match.group(2)) if title_match else ""
            header = f"{marker}{lang}" + (f' title="{title}"' if title else "")
            items.append(TextItem(f"{header}\n{code}\n{marker}", start, close_end, "code"))
            i, paragraph_open = j + 1, False
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
            if rest:
                items.append(TextItem(strip_jsx(rest), start, lines[j][2], "prose"))
            i, paragraph_open = j + 1, False
            continue

        if _ESM.match(line):
            j = i
            while j < len(lines) and lines[j][0].strip():
                if match := _IMPORT_DEFAULT.match(lines[j][0]):
                    partials[match.group(1)] = match.group(2)
                j += 1
            i, paragraph_open = j, False
            continue

        heading = _ATX.match(line)
        if heading:
            items.append(HeadingItem(len(heading.group(1)), (heading.group(2) or "").strip(), start, end))
            i, paragraph_open = i + 1, False
            continue

        setext = _SETEXT.match(line)
        if setext and paragraph_open and isinstance(items[-1], TextItem):
            previous = items.pop()
            assert isinstance(previous, TextItem)
            level = 1 if setext.group(1)[0] == "=" else 2
            items.append(HeadingItem(level, previous.text.strip(), previous.start, end))
            i, paragraph_open = i + 1, False
            continue

        admonition = _ADMONITION_OPEN.match(line)
        if admonition and admonition.group(2).lower() in ADMONITIONS:
            _, keyword, bracket_title, legacy_title = admonition.groups()
            title = bracket_title or legacy_title or ""
            label = keyword.capitalize() + (f": {strip_jsx(title)}" if title else "")
            items.append(TextItem(f"**{label}**", start, end, "admonition"))
            admonition_depth += 1
            i, paragraph_open = i + 1, False
            continue
        if admonition_depth and _ADMONITION_CLOSE.match(line):
            admonition_depth -= 1
            items.append(TextItem("", start, end, "blank"))
            i, paragraph_open = i + 1, False
            continue

        include = _SELF_CLOSING.match(line)
        if include and include.group(1) in partials:
            items.append(IncludeItem(partials[include.group(1)], start, end))
            i, paragraph_open = i + 1, False
            continue

        if _UNCLOSED_TAG.match(line) and not stripped.endswith(">"):
            # A JSX opening tag whose attributes run over several lines: drop it whole.
            j = i
            while j < len(lines) and not lines[j][0].rstrip().endswith(">"):
                j += 1
            i, paragraph_open = j + 1, False
            continue

        if not stripped:
            items.append(TextItem("", start, end, "blank"))
            i, paragraph_open = i + 1, False
            continue

        text = _TAB_ITEM.sub(lambda m: f"{m.group(1) or m.group(2) or m.group(3)}: ", line)
        text = strip_jsx(text)
        if not text.strip():
            # A line of wrappers only (<Tabs>, </details>…): a block boundary, like a blank line.
            items.append(TextItem("", start, end, "blank"))
            i, paragraph_open = i + 1, False
            continue
        kind = "table" if _TABLE_ROW.match(line) or _TABLE_DELIM.match(line) and "|" in line else "prose"
        if kind == "prose" and paragraph_open and isinstance(items[-1], TextItem):
            previous = items.pop()
            assert isinstance(previous, TextItem)
            items.append(TextItem(previous.text + "\n" + text, previous.start, end, "prose"))
        else:
            items.append(TextItem(text, start, end, kind))
        paragraph_open = kind == "prose"
        i += 1
    return _merge_tables(items)


def _merge_tables(items: list[Item]) -> list[Item]:
    merged: list[Item] = []
    for item in items:
        if (
            isinstance(item, TextItem)
            and item.kind == "table"
            and merged
            and isinstance(merged[-1], TextItem)
            and merged[-1].kind == "table"
        ):
            previous = merged.pop()
            assert isinstance(previous, TextItem)
            merged.append(TextItem(previous.text + "\n" + item.text, previous.start, item.end, "table"))
        else:
            merged.append(item)
    return merged


def has_math(text: str) -> bool:
    return bool(_MATH.search(text))


def has_image(text: str) -> bool:
    return bool(_IMAGE.search(text))
