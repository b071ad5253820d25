"""What retrieval returns: ranked sections with their citation fields, and the sufficiency verdict.

Citation fields come from the book's authors (front matter, ``_category_`` labels, slugs, heading
ids) and reach API and MCP clients, so they are made safe here, the one type every source goes
through:

* URLs (``url``, ``page_url``, ``anchor``) are clean site-relative paths, made so when a section is
  built: one leading ``/`` (``//host`` and ``/\\host``, which browsers read as another site, become
  paths), backslashes read as ``/`` (as browsers do), no scheme or host, and every character that
  is not allowed in a URL (quotes, ``<``, ``>``, spaces, controls) percent-encoded, in the fragment
  too, so ``#"><svg onload=…>`` is an inert anchor.
* Text fields of the public source (``title``, ``heading``, ``heading_text``, ``breadcrumb``,
  ``module``, ``chapter``) are plain text: HTML comments, tags with attributes, dangerous elements
  (``<script>`` with its content) and formatting tags are removed and entities decoded. Inline code
  of the heading is kept as written (``The `<select>` element``), and so is other text that only
  looks like a tag (``List<String>``, ``<Provider>``). Clients must still show them as text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

# Tags removed from plain text: any tag with attributes, these elements with their content, and
# these tags (their text kept). Other things in angle brackets are text (generics, JSX names).
_WITH_CONTENT = re.compile(r"<(script|style|iframe|noscript|template)\b[^>]*>.*?(?:</\1\s*>|$)", re.I | re.S)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*)(\s[^<>]*)?/?>")
_MARKUP = frozenset(
    "a abbr b base big blink br center cite code del dfn div em embed font frame frameset i iframe img ins "
    "kbd link mark marquee math meta noscript object p q s samp script small span strike strong style sub "
    "sup svg template tt u var wbr".split()
)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# URL characters kept as they are: RFC 3986 unreserved and sub-delims, plus `:` `@` `/`, but not the
# quote and the parentheses, so a URL is also safe as a Markdown link's destination.
_PATH_SAFE = frozenset("-._~!$&*+,;=:@/")
_FRAGMENT_SAFE = _PATH_SAFE | {"?"}
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


def _strip_tags(text: str, keep: Sequence[str]) -> str:
    def tag(match: re.Match[str]) -> str:
        if any(match.group() in code for code in keep):
            return match.group()
        if "=" in (match.group(2) or "") or match.group(1).lower() in _MARKUP:
            return ""
        return match.group()

    return _TAG.sub(tag, _WITH_CONTENT.sub("", _COMMENT.sub("", text)))


def _plain(text: str, keep: Sequence[str]) -> str:
    text = _strip_tags(html.unescape(_strip_tags(text, keep)), keep)  # `&lt;script&gt;` is markup too
    return _CONTROL.sub(" ", text)


def plain_text(value: object, keep: Sequence[str] = ()) -> str:
    """Author text as plain text (see the module docstring); ``keep``: inline code to leave as is."""
    return " ".join(_plain(str(value), keep).split())


def code_spans(markdown: str) -> list[str]:
    return [match.group(2) for match in _CODE_SPAN.finditer(markdown)]


def plain_markdown(markdown: str) -> str:
    """A source-form heading as plain text, its inline code spans kept as written."""
    parts, last = [], 0
    for match in _CODE_SPAN.finditer(markdown):
        parts += [_plain(markdown[last : match.start()], ()), match.group()]
        last = match.end()
    parts.append(_plain(markdown[last:], ()))
    return " ".join("".join(parts).split())


def _encode(text: str, safe: frozenset[str]) -> str:
    out = []
    for index, char in enumerate(text):
        if char == "%" and _PERCENT.match(text, index):
            out.append(char)  # already percent-encoded
        elif char.isascii() and (char.isalnum() or char in safe):
            out.append(char)
        elif not char.isascii() and char.isprintable() and not char.isspace():
            out.append(char)  # letters of other scripts stay readable, as Docusaurus' own ids
        else:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8", "replace")))
    return "".join(out)


def site_url(url: str) -> str:
    """A clean site-relative URL: ``/path`` and an optional ``#fragment`` (see the module docstring)."""
    path, hashed, fragment = str(url).partition("#")
    path = re.sub(r"/{2,}", "/", path.replace("\\", "/"))  # `/\\host` and `//host`: paths, not hosts
    parts = urlsplit(path)
    path = "/" + parts.path.lstrip("/")  # a scheme (`javascript:`) or query is dropped
    clean = _encode(path, _PATH_SAFE)
    return f"{clean}#{anchor_of(fragment)}" if hashed and fragment else clean


def anchor_of(fragment: str) -> str:
    """A URL fragment with every character not allowed there percent-encoded."""
    return _encode(str(fragment), _FRAGMENT_SAFE)


@dataclass(frozen=True)
class SectionResult:
    """One section of the book: the unit that is ranked, cited and given to the model."""

    section_id: str
    doc_path: str
    doc_id: str
    title: str
    heading: str  # as written in the source (inline code kept); "" for a page's intro
    heading_text: str  # as rendered
    heading_level: int
    breadcrumb: list[str]
    url: str  # page URL + "#anchor" (no fragment for a page's intro or H1)
    page_url: str
    anchor: str
    module: str | None
    chapter: str | None
    version: str | None
    locale: str | None
    content_type: str
    score: float
    snippet: str
    text: str  # the assembled section text (small-to-big), within the context budget
    tokens: int
    truncated: bool
    matched_chunks: list[int] = field(default_factory=list)  # section chunk indices that matched

    def __post_init__(self) -> None:
        # Every use of a section's links (sources, quotes, the answer's own links) gets clean ones.
        object.__setattr__(self, "url", site_url(self.url))
        object.__setattr__(self, "page_url", site_url(self.page_url))
        object.__setattr__(self, "anchor", anchor_of(self.anchor))

    @property
    def known_as(self) -> str:
        """The heading the section is known by: a page's opening, which has none, by the page's title."""
        return self.heading_text or self.title

    def to_source(self) -> dict[str, Any]:
        """The public source object (API, CLI --json); ``text`` is kept for the prompt only. Text
        fields are plain text here, on output: inside, ``heading`` stays as written (the eval
        matches gold headings on it)."""
        data = asdict(self)
        for private in ("text", "matched_chunks", "section_id", "tokens", "truncated"):
            data.pop(private)
        code = code_spans(self.heading)
        data.update(
            title=plain_text(self.title, code),
            heading=plain_markdown(self.heading),
            heading_text=plain_text(self.heading_text, code),
            breadcrumb=[plain_text(crumb, code) for crumb in self.breadcrumb],
            module=None if self.module is None else plain_text(self.module),
            chapter=None if self.chapter is None else plain_text(self.chapter),
            score=round(self.score, 6),
        )
        return data


@dataclass(frozen=True)
class Sufficiency:
    """Whether the retrieved sections can answer: a calibrated score against a threshold."""

    sufficient: bool
    score: float
    threshold: float
    signals: dict[str, float]


@dataclass(frozen=True)
class RetrievalResult:
    query: str
    sections: list[SectionResult]
    sufficiency: Sufficiency
    index_version: str
    timings_ms: dict[str, float]
    # What the query names that no chunk of the book (within the filters) contains: its names ("Firebase",
    # "WebP") and the words it asks about ("poem" in "write me a poem about robots").
    unknown_names: tuple[str, ...] = ()
    # Those of the query's words no chunk contains that are what it asks about (each embeds close to the
    # query): then no passage of the book can answer it, unless the word is a misspelling.
    asked_unknown: tuple[str, ...] = ()
    # Every word of the query looked up alone (its names and topic words) that no chunk contains.
    absent_words: tuple[str, ...] = ()
    # The query's words that no chunk contains alone but joined with the particle after them, each with
    # the book's one-word form: ("wind", "windup") for "why does it wind up?".
    book_forms: tuple[tuple[str, str], ...] = ()

    @property
    def asks_unknown(self) -> bool:
        return bool(self.asked_unknown)

    @property
    def sufficient_context(self) -> bool:
        return self.sufficiency.sufficient

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "sufficient_context": self.sufficient_context,
            "sufficiency": asdict(self.sufficiency),
            "index_version": self.index_version,
            "unknown_names": list(self.unknown_names),
            "sections": [s.to_source() for s in self.sections],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }
