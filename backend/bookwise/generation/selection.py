"""The citation of a highlighted passage: its own section, linked with a ``#:~:text=`` fragment.

Only the selection's *metadata* comes from the index (title, heading, URL and anchor of the section
that holds it); the text that reaches the model and the reader's screen is the selection itself.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import quote, urlsplit

from bookwise.retrieval.models import SectionResult

FRAGMENT_EDGE_WORDS = 4  # a long selection is matched by its first and last words (textStart,textEnd)
SNIPPET_CHARS = 240


def _directive_part(words: list[str]) -> str:
    # `-`, `,` and `&` have meanings inside a text directive and must be percent-encoded.
    return quote(" ".join(words), safe="").replace("-", "%2D")


def text_fragment(selection: str) -> str:
    words = selection.split()
    if not words:
        return ""
    if len(words) <= 2 * FRAGMENT_EDGE_WORDS:
        return ":~:text=" + _directive_part(words)
    start, end = words[:FRAGMENT_EDGE_WORDS], words[-FRAGMENT_EDGE_WORDS:]
    return f":~:text={_directive_part(start)},{_directive_part(end)}"


def with_text_fragment(url: str, selection: str) -> str:
    """``/page#anchor`` → ``/page#anchor:~:text=…``: the browser scrolls to and highlights the text."""
    fragment = text_fragment(selection)
    if not fragment:
        return url
    return f"{url}{fragment}" if "#" in url else f"{url}#{fragment}"


def _snippet(selection: str) -> str:
    text = " ".join(selection.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rstrip() + "…"


def selection_source(selection: str, located: SectionResult | None, page_url: str) -> SectionResult:
    """The one source of a selected-text answer; its ``text`` is the selection, never the book's."""
    if located is not None:
        return dataclasses.replace(
            located,
            url=with_text_fragment(located.url, selection),
            snippet=_snippet(selection),
            text=selection,
            score=1.0,
            matched_chunks=[],
        )
    path = urlsplit(page_url).path or "/"
    return SectionResult(
        section_id="",
        doc_path="",
        doc_id="",
        title="Selected passage",
        heading="",
        heading_text="",
        heading_level=1,
        breadcrumb=[],
        url=with_text_fragment(path, selection),
        page_url=path,
        anchor="",
        module=None,
        chapter=None,
        version=None,
        locale=None,
        content_type="prose",
        score=1.0,
        snippet=_snippet(selection),
        text=selection,
        tokens=0,
        truncated=False,
    )
