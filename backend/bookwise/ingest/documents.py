"""One source file → one Document (metadata, URL, sections)."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

import yaml

from bookwise.errors import OutsideSiteError, SourceError
from bookwise.ingest.markdown import markdown_to_text
from bookwise.ingest.mdx import Item, TextItem, scan
from bookwise.ingest.models import Document
from bookwise.ingest.routing import apply_trailing_slash, permalink, route_doc, strip_number_prefix
from bookwise.ingest.sections import ResolvedHeading, build_sections, resolve
from bookwise.ingest.site import DocsSource, SiteConfig
from bookwise.ingest.source import SourceFile, line_of, read_source

DESCRIPTION_SOURCE_CHARS = 20_000  # far beyond any real first paragraph line
MAX_OBJECTIVES = 20
OBJECTIVE_CHARS = 300


def category_metadata(directory: Path) -> dict[str, Any]:
    """The folder's ``_category_`` file as a mapping; empty when there is none or it is broken (a
    broken category file only loses its label and position)."""
    for name in ("_category_.json", "_category_.yml", "_category_.yaml"):
        path = directory / name
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
                data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
            except (OSError, ValueError, yaml.YAMLError):
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def category_label(directory: Path) -> str:
    label = category_metadata(directory).get("label")
    return label if isinstance(label, str) else strip_number_prefix(directory.name)[0]


def _tags(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return ()
    tags = [t.get("label", "") if isinstance(t, dict) else str(t) for t in raw]
    return tuple(str(t) for t in tags if t)


def _objectives(raw: Any) -> tuple[str, ...]:
    """``learning_objectives``: a list of short texts (a single text is one objective); anything else
    in it (mappings, nested lists) is not an objective and is left out."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    texts = (" ".join(str(item).split()) for item in items if isinstance(item, str | int | float))
    return tuple(text[:OBJECTIVE_CHARS] for text in texts if text)[:MAX_OBJECTIVES]


# Page types a site declares (front matter `content_type`) or names in its paths; a page of
# exercises is offered by its questions and never quoted for its answers.
EXERCISE_TYPES = ("quiz", "assessment", "exercise")
PAGE_TYPES = ("lab", *EXERCISE_TYPES)
# A heading that names its section as the reader's exercises, by its first words: a FAQ heading such
# as "Will caching cause memory problems?" teaches.
_EXERCISE_HEADING = re.compile(
    r"^\W*(?:exercises?|quiz(?:zes)?|self-check|check your understanding|review questions|practice)\b", re.I
)


def is_exercise_heading(heading: str) -> bool:
    """Whether a heading names its section as exercises ("Exercises", "Quiz: the gain", "Check your
    understanding")."""
    return bool(_EXERCISE_HEADING.search(heading))


def is_exercises(content_type: str | None, heading: str) -> bool:
    """Whether a section is the reader's exercises: its page is declared a page of exercises, or its
    heading says so."""
    return content_type in EXERCISE_TYPES or is_exercise_heading(heading)


def _content_type(front_matter: dict[str, Any], doc_path: str) -> str:
    declared = front_matter.get("content_type")
    if isinstance(declared, str) and declared:
        return declared
    words = {w for part in doc_path.lower().replace("_", "-").split("/") for w in part.split("-")}
    for kind in PAGE_TYPES:
        if kind in words or f"{kind}s" in words:
            return kind
    return "prose"


class DocumentBuilder:
    def __init__(self, site: SiteConfig, module_depth: int, chapter_depth: int, max_file_bytes: int) -> None:
        self.site = site
        self.module_depth = module_depth
        self.chapter_depth = chapter_depth
        self.max_file_bytes = max_file_bytes
        self._labels: dict[Path, str] = {}
        self._partials: dict[
            Path, list[Item] | None
        ] = {}  # a partial is read once, however many pages use it

    def _label(self, directory: Path) -> str:
        if directory not in self._labels:
            # A category file linked from outside the site is not read: its folder name labels it.
            inside = all(
                self.site.inside(directory / n)
                for n in ("_category_.json", "_category_.yml", "_category_.yaml")
            )
            self._labels[directory] = (
                category_label(directory) if inside else strip_number_prefix(directory.name)[0]
            )
        return self._labels[directory]

    def _grouping(self, source: DocsSource, doc_path: str, front_matter: dict[str, Any]) -> tuple[str, str]:
        parts = doc_path.split("/")[:-1]

        def at(depth: int) -> str:
            if depth < 1 or len(parts) < depth:
                return ""
            return self._label(source.directory.joinpath(*parts[:depth]))

        module = front_matter.get("module") or at(self.module_depth)
        chapter = front_matter.get("chapter") or at(self.chapter_depth)
        return str(module), str(chapter)

    def _partial(self, included: Path) -> list[Item] | None:
        if included not in self._partials:
            items: list[Item] | None = None
            if included.is_file():
                try:
                    sub = self.read(included, str(included))
                    items = scan(sub.text[sub.body_offset :], 0, path=sub.path)
                except SourceError:
                    pass  # an unreadable partial contributes nothing; the page itself still ingests
            self._partials[included] = items
        return self._partials[included]

    def read(self, path: Path, display: str) -> SourceFile:
        return read_source(path, display, self.max_file_bytes)

    def build(self, source: DocsSource, path: Path, parsed: SourceFile) -> Document:
        doc_path = path.relative_to(source.directory).as_posix()
        fm = parsed.front_matter
        body = parsed.text[parsed.body_offset :]
        items = scan(
            body, parsed.body_offset, path=parsed.path, first_line=line_of(parsed.text, parsed.body_offset)
        )

        def load(target: str) -> list[Item] | None:
            included = (path.parent / target).resolve()
            if not self.site.inside(included):
                raise OutsideSiteError(
                    f"imports {target}, which resolves to {included}, outside the site directory "
                    "(allow it with BOOKWISE_INGEST_EXTRA_ROOTS)",
                    path=parsed.path,
                )
            return self._partial(included)

        resolved = resolve(items, load)
        first = next((it for it in resolved if not (isinstance(it, TextItem) and not it.text.strip())), None)
        content_title = first.parsed.text if isinstance(first, ResolvedHeading) and first.level == 1 else None
        route = route_doc(doc_path, fm)
        title = str(fm.get("title") or content_title or route.doc_id.split("/")[-1])
        sections = build_sections(resolved, title, parsed.body_offset, len(parsed.text))
        description = fm.get("description")
        if not isinstance(description, str):
            prose = next((b.text for s in sections for b in s.blocks if b.kind == "prose"), "")
            # The first line, bounded: a 2 MB line would cost seconds in mistune for a snippet.
            first_line = prose.split("\n", 1)[0][:DESCRIPTION_SOURCE_CHARS]
            description = markdown_to_text(first_line) if prose else ""
        module, chapter = self._grouping(source, doc_path, fm)
        url = apply_trailing_slash(
            permalink(source.version_path, route.slug), self.site.trailing_slash, self.site.base_url
        )
        label = fm.get("sidebar_label")
        return Document(
            doc_path=doc_path,
            doc_id=route.doc_id,
            url=url,
            title=title,
            description=description,
            tags=_tags(fm.get("tags")),
            sidebar_label=str(label) if label is not None else None,
            sidebar_position=route.sidebar_position,
            module=module,
            chapter=chapter,
            version=source.version,
            locale=source.locale,
            content_type=_content_type(fm, doc_path),
            sections=sections,
            unlisted=fm.get("unlisted") is True,
            learning_objectives=_objectives(fm.get("learning_objectives")),
        )


def is_partial_or_excluded(relative: str) -> bool:
    """Docusaurus' default exclude globs: ``_`` files and folders, tests."""
    parts = relative.split("/")
    name = parts[-1]
    if any(p.startswith("_") for p in parts) or "__tests__" in parts:
        return True
    return ".test." in name or posixpath.splitext(name)[1] not in (".md", ".mdx")
