"""The payload ingestion stores with every chunk: its page, its section and its own place, typed.

Ingestion builds a ``ChunkPayload`` and the index stores ``to_payload()``, a flat dict whose keys and
values are the index's format (filters and existing generations depend on them). Readers turn a
stored dict back with ``from_payload``, which tolerates payloads of older ingests: a missing key
reads as the default below. Fields whose absence readers treat differently from an empty value are
``None`` when missing (``url``, ``section_id``, ``content_type``, ``module`` …). Keys this type does
not know, such as the index's own stamps (``payload_hash``, ``ingested_at``, ``index_version``,
``embed_model``), are kept in ``extra`` and written back after the known ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bookwise.ingest.models import SectionFlags
from bookwise.ingest.suggestions import Proposal

_FLAGS = tuple(f.name for f in fields(SectionFlags))


@dataclass(frozen=True)
class ChunkPayload:
    # The page (every chunk of a page repeats it).
    doc_path: str = ""
    doc_id: str = ""
    title: str = ""
    description: str = ""
    page_url: str = ""  # the page's permalink
    # The section.
    anchor: str = ""  # "" when the section is reached by the page URL alone
    url: str | None = None  # page URL + "#anchor"
    heading: str = ""  # as written in the source; "" for a page's intro
    heading_text: str = ""  # as rendered
    heading_level: int = 1
    breadcrumb: tuple[str, ...] = ()
    # The page again (the stored order is kept).
    module: str | None = None  # "" for a page at the docs root
    chapter: str | None = None
    tags: tuple[str, ...] = ()
    version: str | None = None
    locale: str | None = None
    content_type: str | None = None  # the page's type, refined to code or table for such a chunk
    sidebar_position: float | None = None
    unlisted: bool = False
    learning_objectives: tuple[str, ...] = ()
    # The chunk's place in its section and in the source.
    section_id: str | None = None
    section_key: str = ""
    section_chunk_index: int = 0
    char_start: int = -1
    char_end: int = -1
    text: str = ""  # the chunk's own Markdown
    flags: SectionFlags = SectionFlags()  # stored as the flags' own keys (has_code, …)
    suggestions: tuple[Proposal, ...] | None = None  # on a page's first chunk only
    chunk_index: int = 0  # reading order within the page
    total_chunks: int = 0
    section_chunk_total: int = 0
    content_hash: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys not listed above, kept as stored

    def to_payload(self) -> dict[str, Any]:
        """The stored form: flat, JSON-ready, keys in the order ingestion has always written them."""
        payload: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "flags":
                payload.update(asdict(value))
            elif item.name == "suggestions":
                if value is not None:
                    payload["suggestions"] = [proposal.to_dict() for proposal in value]
            elif item.name == "extra":
                payload.update(value)
            else:
                payload[item.name] = list(value) if isinstance(value, tuple) else value
        return payload

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> ChunkPayload:
        """A stored payload read back; what an older ingest did not write takes its default."""
        p = payload
        return cls(
            doc_path=str(p.get("doc_path") or ""),
            doc_id=str(p.get("doc_id") or ""),
            title=str(p.get("title") or ""),
            description=str(p.get("description") or ""),
            page_url=str(p.get("page_url") or ""),
            anchor=str(p.get("anchor") or ""),
            url=_optional_text(p, "url"),
            heading=str(p.get("heading") or ""),
            heading_text=str(p.get("heading_text") or ""),
            heading_level=int(p.get("heading_level", 1)),
            breadcrumb=_texts(p, "breadcrumb"),
            module=_optional_text(p, "module"),
            chapter=_optional_text(p, "chapter"),
            tags=_texts(p, "tags"),
            version=_optional_text(p, "version"),
            locale=_optional_text(p, "locale"),
            content_type=_optional_text(p, "content_type"),
            sidebar_position=_number(p.get("sidebar_position")),
            unlisted=bool(p.get("unlisted")),
            learning_objectives=_texts(p, "learning_objectives"),
            section_id=_optional_text(p, "section_id"),
            section_key=str(p.get("section_key") or ""),
            section_chunk_index=int(p.get("section_chunk_index", 0)),
            char_start=int(p.get("char_start", -1)),
            char_end=int(p.get("char_end", -1)),
            text=str(p.get("text") or ""),
            flags=_FLAG_SETS[tuple(bool(p.get(name)) for name in _FLAGS)],
            suggestions=_proposals(p.get("suggestions")),
            chunk_index=int(p.get("chunk_index", 0)),
            total_chunks=int(p.get("total_chunks", 0)),
            section_chunk_total=int(p.get("section_chunk_total", 0)),
            content_hash=str(p.get("content_hash") or ""),
            extra={key: value for key, value in p.items() if key not in _KNOWN},
        )


_KNOWN = frozenset(f.name for f in fields(ChunkPayload)) | frozenset(_FLAGS)
# Every combination of the flags, made once: reading a payload (every hit of every search) only looks one up.
_FLAG_SETS = {
    values: SectionFlags(*values) for values in itertools.product((False, True), repeat=len(_FLAGS))
}


def _optional_text(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return None if value is None else str(value)


def _texts(payload: Mapping[str, Any], key: str) -> tuple[str, ...]:
    return tuple(str(item) for item in payload.get(key) or ())


def _number(value: Any) -> float | None:
    # Kept as stored (an int stays an int), so that a payload reads back to the same JSON.
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _proposals(value: Any) -> tuple[Proposal, ...] | None:
    if value is None:
        return None
    return tuple(
        Proposal(str(item.get("question", "")), bool(item.get("check", True)))
        for item in value
        if isinstance(item, dict)
    )
