"""Markdown → plain text through mistune's AST (heading text for slugs, snippets, flags)."""

from __future__ import annotations

import bisect
import html
import re
from typing import Any

import mistune

_parse = mistune.create_markdown(renderer=None, plugins=["table", "strikethrough", "math"])
# A tag runs to the first ">" outside {…} attribute values. One way to match each character (no
# "\s+ … \s*" pair to share a run of spaces): linear, where the lazy form was cubic on "<a" + spaces.
_JSX_TAG = re.compile(r"</?[A-Za-z][\w.:-]*(?:\s(?:[^<>{}]|\{[^{}]*\})*)?/?>")
_BACKTICKS = re.compile(r"`+")


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each inline code span: a backtick run closed by a run of the same length."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    by_width: dict[int, list[int]] = {}  # width → indexes in ``runs``, ascending
    for index, (start, end) in enumerate(runs):
        by_width.setdefault(end - start, []).append(index)
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        start, end = runs[index]
        same = by_width[end - start]
        after = bisect.bisect_right(same, index)  # the next run of the same width, if any
        if after == len(same):
            index += 1
            continue
        closing = same[after]
        spans.append((start, runs[closing][1]))
        index = closing + 1
    return spans


def _drop_between(text: str, opener: str, closer: str) -> str:
    """Remove every ``opener … closer`` (shortest, non-overlapping), as ``re.sub`` with ``.*?``
    would, in one pass: the regex rescanned to the end from every unclosed opener."""
    out: list[str] = []
    position = 0
    while (start := text.find(opener, position)) >= 0:
        end = text.find(closer, start + len(opener))
        if end < 0:
            break  # no later opener can be closed either
        out.append(text[position:start])
        position = end + len(closer)
    out.append(text[position:])
    return "".join(out)


def _strip_tags(text: str) -> str:
    text = _drop_between(text, "{/*", "*/}")
    text = _drop_between(text, "<!--", "-->")
    return _JSX_TAG.sub("", text)


def strip_jsx(text: str) -> str:
    """Drop MDX/HTML tags and comments but keep the text between tags and all inline code."""
    if "`" not in text:
        return _strip_tags(text)
    out, position = [], 0
    for start, end in code_spans(text):
        out.append(_strip_tags(text[position:start]))
        out.append(text[start:end])  # `<Provider>` is code the reader sees, not a tag
        position = end
    out.append(_strip_tags(text[position:]))
    return "".join(out)


def _collect(nodes: list[dict[str, Any]], out: list[str]) -> None:
    for node in nodes:
        kind = node.get("type")
        if kind in ("text", "codespan", "block_code", "inline_math", "block_math"):
            out.append(node.get("raw", ""))
        elif kind in ("softbreak", "linebreak"):
            out.append(" ")
        elif kind in ("inline_html", "block_html", "blank_line", "thematic_break"):
            continue
        elif kind == "image":
            # mdast-util-to-string counts an image's alt text.
            _collect(node.get("children", []), out)
        else:
            _collect(node.get("children", []), out)
            if kind in ("paragraph", "heading", "block_text", "list_item", "table_cell"):
                out.append(" " if kind == "table_cell" else "\n")


def markdown_to_text(markdown: str, *, collapse_whitespace: bool = True) -> str:
    """The plain text a reader sees."""
    nodes = _parse(markdown)
    out: list[str] = []
    if isinstance(nodes, list):
        _collect(nodes, out)
    text = html.unescape("".join(out))
    return (re.sub(r"\s+", " ", text) if collapse_whitespace else text).strip()


def heading_plain_text(source_heading: str) -> str:
    """Heading text as mdast-util-to-string renders it: markup removed, JSX text and image alt kept."""
    # Inline-only parse: guard against the text being read as a block construct.
    escaped = re.sub(r"^(\s*)([#>+*=-])", r"\1\\\2", strip_jsx(source_heading))
    escaped = re.sub(r"^(\s*\d+)([.)])", r"\1\\\2", escaped)
    # Internal runs of spaces survive: github-slugger turns each space into "-".
    return markdown_to_text(escaped, collapse_whitespace=False)
