"""Discover → parse → section → chunk, for a whole site. Bad files are reported; the rest goes on."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookwise.errors import BrokenSymlinkError, NotARegularFileError, OutsideSiteError, SourceError
from bookwise.ingest.chunking import TokenCounter, chunk_blocks
from bookwise.ingest.documents import DocumentBuilder, is_partial_or_excluded
from bookwise.ingest.manifest import BuiltDoc, DocKey, ManifestCheck, reconcile
from bookwise.ingest.models import Chunk, Document, Section
from bookwise.ingest.payload import ChunkPayload
from bookwise.ingest.site import DocsSource, SiteConfig
from bookwise.ingest.suggestions import Proposal, propose

# Changes when the same page gives other chunks: "2" reads `mdx-code-block` fences as MDX.
CHUNKER_VERSION = "2"
_NAMESPACE = uuid.UUID("5b0c3a52-5f0e-4c55-9a8e-0b1d6b2f7e11")


@dataclass(frozen=True)
class ChunkingParams:
    max_tokens: int
    overlap_tokens: int
    min_tokens: int
    model_max_tokens: int  # the embedder's input size: context line + chunk must fit
    count_tokens: TokenCounter


@dataclass
class FileProblem:
    path: str
    code: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "code": self.code, "message": self.message}


@dataclass
class IngestResult:
    documents: list[Document] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    errors: list[FileProblem] = field(default_factory=list)
    skipped: list[FileProblem] = field(default_factory=list)  # drafts and partials: not errors
    manifest: ManifestCheck | None = None  # set when a build manifest was given


def stable_id(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


DOC_SUFFIXES = (".md", ".mdx")
Found = tuple[Path, str, SourceError | None]  # (path, path relative to the docs folder, problem)


def discover(source: DocsSource, site: SiteConfig) -> Iterator[Found]:
    """Every doc file under ``source`` in path order, with a problem instead for what cannot be read.

    Symlinks are followed only into the site (or an extra root), and a symlinked folder only outside
    this docs folder (inside, it is a loop or a duplicate). Dangling links, loops, and FIFOs or devices
    named like docs are reported, never opened.
    """
    root = source.directory.resolve()
    seen = {root}

    def walk(directory: Path, prefix: str) -> Iterator[Found]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            yield directory, prefix.rstrip("/"), SourceError(f"cannot list the folder: {exc.strerror}")
            return
        for entry in entries:
            path, relative = Path(entry.path), prefix + entry.name
            kind, problem = _classify(entry, site, root)
            if problem is None and kind == "dir":
                resolved = path.resolve()
                if resolved in seen:
                    problem = BrokenSymlinkError(f"symlink to a folder already read ({resolved})")
                else:
                    seen.add(resolved)
                    yield from walk(path, relative + "/")
            if problem is not None:
                yield path, relative, problem
            elif kind == "doc":
                yield path, relative, None

    yield from walk(source.directory, "")


def _classify(entry: os.DirEntry[str], site: SiteConfig, root: Path) -> tuple[str, SourceError | None]:
    """("dir" | "doc" | "other", problem) of one folder entry, symlinks resolved."""
    path = Path(entry.path)
    try:
        if entry.is_symlink():
            target = path.resolve(strict=True)  # raises on dangling links and loops
            if not site.inside(target):
                message = f"symlink to {target}, outside the site directory"
                return "other", OutsideSiteError(f"{message} (allow it with BOOKWISE_INGEST_EXTRA_ROOTS)")
            if entry.is_dir() and (target.is_relative_to(root) or root.is_relative_to(target)):
                return "other", BrokenSymlinkError(
                    f"symlink to {target}, inside this docs folder (a loop or a duplicate)"
                )
        is_dir = entry.is_dir()
    except FileNotFoundError:
        return "other", BrokenSymlinkError(f"dangling symlink (to {_link_target(path)})")
    except (OSError, RuntimeError):
        return "other", BrokenSymlinkError("symlink loop")
    if is_dir:
        return "dir", None
    if path.suffix not in DOC_SUFFIXES:
        return "other", None
    if not entry.is_file():
        return "other", NotARegularFileError("not a regular file (a FIFO, socket or device)")
    return "doc", None


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def context_line(section: Section) -> str:
    trail = [*section.breadcrumb]
    if section.heading_text and section.heading_text not in trail:
        trail.append(section.heading_text)
    return " › ".join(t for t in trail if t)


def chunk_document(document: Document, params: ChunkingParams) -> list[Chunk]:
    """The page's chunks: each section cut to fit the embedder, each piece numbered in its page and
    its section, then given its ids and payload."""
    proposals = tuple(propose(document))
    pieces = [piece for section in document.sections for piece in _cut_section(section, params)]
    places = _number(pieces)
    # The page's suggested questions ride on its first chunk; they are checked after indexing.
    return [
        _make_chunk(document, piece, place, proposals if place.index == 0 else None)
        for piece, place in zip(pieces, places, strict=True)
    ]


@dataclass(frozen=True)
class _SectionPiece:
    """A section's text for one chunk: a piece cut by the chunker, or nothing but its heading."""

    section: Section
    context: str  # the heading trail, read by the embedder before the text
    text: str
    char_start: int
    char_end: int


@dataclass(frozen=True)
class _Place:
    """Where a chunk stands: ``index`` of ``total`` in its page, ``ordinal`` of ``section_total`` in
    its section."""

    index: int
    total: int
    ordinal: int
    section_total: int


def _cut_section(section: Section, params: ChunkingParams) -> list[_SectionPiece]:
    """The section's blocks in pieces that fit, beside its context line, the embedder's input."""
    context = context_line(section)
    room = params.model_max_tokens - params.count_tokens(context) - 4  # [CLS], [SEP], blank line
    budget = max(16, min(params.max_tokens, room))
    cut = chunk_blocks(
        section.blocks,
        budget=budget,
        overlap=min(params.overlap_tokens, budget // 4),
        min_tokens=params.min_tokens,
        hard_limit=max(budget, room),
        count=params.count_tokens,
    )
    if not cut:  # a heading with no body of its own: still findable and citable
        return [_SectionPiece(section, context, "", section.char_start, section.char_end)]
    return [_SectionPiece(section, context, c.text, c.char_start, c.char_end) for c in cut]


def _number(pieces: list[_SectionPiece]) -> list[_Place]:
    per_section = Counter(piece.section.key for piece in pieces)
    ordinals: Counter[str] = Counter()
    places: list[_Place] = []
    for index, piece in enumerate(pieces):
        key = piece.section.key
        places.append(_Place(index, len(pieces), ordinals[key], per_section[key]))
        ordinals[key] += 1
    return places


def _make_chunk(
    document: Document, piece: _SectionPiece, place: _Place, suggestions: tuple[Proposal, ...] | None
) -> Chunk:
    prefix = f"{document.version}\x1f{document.locale}\x1f{document.doc_path}"
    section_id = stable_id(prefix, piece.section.key)
    embed_text = f"{piece.context}\n\n{piece.text}" if piece.text else piece.context
    content_hash = hashlib.sha256(embed_text.encode()).hexdigest()
    payload = _payload(document, piece, place, section_id, content_hash, suggestions)
    return Chunk(
        id=stable_id(prefix, piece.section.key, str(place.ordinal)),
        parent_id=section_id,
        text=piece.text,
        embed_text=embed_text,
        content_hash=content_hash,
        chunk_index=place.index,
        total_chunks=place.total,
        section_chunk_index=place.ordinal,
        char_start=piece.char_start,
        char_end=piece.char_end,
        payload=payload.to_payload(),
    )


def _payload(
    document: Document,
    piece: _SectionPiece,
    place: _Place,
    section_id: str,
    content_hash: str,
    suggestions: tuple[Proposal, ...] | None,
) -> ChunkPayload:
    """What a chunk carries of its page and its section."""
    section = piece.section
    return ChunkPayload(
        doc_path=document.doc_path,
        doc_id=document.doc_id,
        title=document.title,
        description=document.description,
        page_url=document.url,
        anchor=section.anchor,
        url=document.url + (f"#{section.anchor}" if section.anchor else ""),
        heading=section.heading,
        heading_text=section.heading_text,
        heading_level=section.level,
        breadcrumb=section.breadcrumb,
        module=document.module,
        chapter=document.chapter,
        tags=document.tags,
        version=document.version,
        locale=document.locale,
        content_type=_chunk_type(document.content_type, piece.text),
        sidebar_position=document.sidebar_position,
        unlisted=document.unlisted,
        learning_objectives=document.learning_objectives,
        section_id=section_id,
        section_key=section.key,
        section_chunk_index=place.ordinal,
        char_start=piece.char_start,
        char_end=piece.char_end,
        text=piece.text,
        flags=section.flags,
        suggestions=suggestions,
        chunk_index=place.index,
        total_chunks=place.total,
        section_chunk_total=place.section_total,
        content_hash=content_hash,
    )


def _chunk_type(page_type: str, text: str) -> str:
    """The page's type, or "code" / "table" for a prose chunk that is one code block or table."""
    if page_type == "prose" and text.startswith(("```", "~~~")) and text.rstrip().endswith(("```", "~~~")):
        return "code"
    if page_type == "prose" and text.startswith("|"):
        return "table"
    return page_type


def ingest_site(
    site: SiteConfig,
    params: ChunkingParams,
    *,
    module_depth: int = 1,
    chapter_depth: int = 2,
    max_file_bytes: int = 2_000_000,
    on_file: Callable[[str], None] | None = None,
    built: dict[DocKey, BuiltDoc] | None = None,
) -> IngestResult:
    """``built``: the build manifest's docs; their permalinks and heading ids win over ours."""
    result = IngestResult()
    builder = DocumentBuilder(site, module_depth, chapter_depth, max_file_bytes)
    sources, refused = site.docs_folders()
    for folder in refused:
        result.errors.append(FileProblem(folder.path, folder.code, folder.message))
    for source in sources:
        for found in discover(source, site):
            _read_found(found, source, site, builder, result, on_file)
    if built is not None:
        result.documents, result.manifest = reconcile(result.documents, built)
    for document in result.documents:
        result.chunks.extend(chunk_document(document, params))
    _check_duplicate_urls(result)
    return result


def _read_found(
    found: Found,
    source: DocsSource,
    site: SiteConfig,
    builder: DocumentBuilder,
    result: IngestResult,
    on_file: Callable[[str], None] | None,
) -> None:
    """One discovered file into ``result``: a document, a skipped file, or an error."""
    path, relative, problem = found
    display = f"{_display_dir(source, site)}/{relative}"
    if problem is not None:
        result.errors.append(FileProblem(display, problem.code, problem.message))
        return
    if on_file is not None:
        on_file(display)
    if is_partial_or_excluded(relative):
        result.skipped.append(FileProblem(display, "partial", "partial or excluded file (not a page)"))
        return
    try:
        parsed = builder.read(path, display)
        if parsed.front_matter.get("draft") is True:
            result.skipped.append(FileProblem(display, "draft", "draft: true (absent from production)"))
            return
        document = builder.build(source, path, parsed)
    except SourceError as exc:
        result.errors.append(FileProblem(display, exc.code, exc.message, exc.line))
        return
    except RecursionError:
        result.errors.append(FileProblem(display, "markdown_invalid", "document nests too deeply"))
        return
    result.documents.append(document)


def _display_dir(source: DocsSource, site: SiteConfig) -> str:
    """The docs folder as reported: relative to the site, or as given when in an extra root."""
    try:
        return source.directory.relative_to(site.site_dir).as_posix()
    except ValueError:
        return source.directory.as_posix()


def _check_duplicate_urls(result: IngestResult) -> None:
    """Two docs at one URL is a broken site (Docusaurus warns and one page wins): report both."""
    seen: dict[tuple[str, str, str], str] = {}
    for document in result.documents:
        key = (document.version, document.locale, document.url)
        if key in seen:
            result.errors.append(
                FileProblem(document.doc_path, "duplicate_url", f"same URL {document.url} as {seen[key]}")
            )
        else:
            seen[key] = document.doc_path
