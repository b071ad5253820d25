"""The build manifest of `docusaurus-plugin-bookwise`: what a real build rendered, per doc.

Bookwise computes every permalink and heading id from the sources (Docusaurus' rules, ported).
The manifest lists the permalinks and heading ids the build actually produced. Ingestion checks the
two agree and, where they do not, the build wins: a citation must land where the site really is.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bookwise.errors import ManifestError
from bookwise.ingest.models import Document

SUPPORTED_VERSION = 1

DocKey = tuple[str, str, str]  # (version, locale, doc_path)


@dataclass(frozen=True)
class BuiltDoc:
    doc_path: str
    permalink: str
    version: str
    locale: str
    heading_ids: tuple[str, ...]


@dataclass(frozen=True)
class Mismatch:
    doc_path: str
    kind: str  # permalink | anchor_not_in_build | heading_not_indexed | doc_not_in_build | doc_not_ingested
    ours: str
    build: str


@dataclass
class ManifestCheck:
    docs: int = 0  # docs compared (in both the manifest and the ingestion)
    docs_agreeing: int = 0
    headings: int = 0  # heading ids in the build of the compared docs
    headings_agreeing: int = 0
    corrected: int = 0  # URLs or anchors replaced by the build's
    mismatches: list[Mismatch] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # mismatches included, field by field


def load_manifests(paths: list[Path]) -> dict[DocKey, BuiltDoc]:
    built: dict[DocKey, BuiltDoc] = {}
    for path in paths:
        for doc in _read(path):
            built[(doc.version, doc.locale, doc.doc_path)] = doc
    return built


def _read(path: Path) -> list[BuiltDoc]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read the manifest {path}: {exc.strerror}") from exc
    except ValueError as exc:  # not UTF-8, not JSON, or a number longer than Python converts
        raise ManifestError(f"the manifest {path} is not JSON: {exc}") from exc
    except RecursionError:  # arrays or objects nested deeper than the parser's stack
        raise ManifestError(f"the manifest {path} is nested too deeply to be a manifest") from None
    if not isinstance(data, dict) or data.get("manifest_version") != SUPPORTED_VERSION:
        raise ManifestError(
            f"{path} is not a docusaurus-plugin-bookwise manifest of version {SUPPORTED_VERSION}"
        )
    try:
        return [
            BuiltDoc(
                doc_path=str(doc["doc_path"]),
                permalink=str(doc["permalink"]),
                version=str(doc["version"]),
                locale=str(doc["locale"]),
                heading_ids=tuple(str(h["id"]) for h in doc["headings"]),
            )
            for doc in data["docs"]
        ]
    except (KeyError, TypeError) as exc:
        raise ManifestError(f"the manifest {path} has a malformed doc entry: {exc!r}") from exc
    except RecursionError:  # a field holding a deeply nested value, turned into text
        raise ManifestError(f"the manifest {path} has a doc entry nested too deeply") from None


def reconcile(
    documents: list[Document], built: dict[DocKey, BuiltDoc]
) -> tuple[list[Document], ManifestCheck]:
    """Each document checked against its build; returned with the build's permalink and anchors."""
    check = ManifestCheck()
    seen: set[DocKey] = set()
    reconciled: list[Document] = []
    for document in documents:
        key = (document.version, document.locale, document.doc_path)
        build = built.get(key)
        if build is None:
            check.mismatches.append(Mismatch(document.doc_path, "doc_not_in_build", document.url, ""))
            reconciled.append(document)
            continue
        seen.add(key)
        reconciled.append(_compare(document, build, check))
    ingested = {(d.version, d.locale) for d in documents}
    for key, build in sorted(built.items()):
        if key not in seen and key[:2] in ingested:
            check.mismatches.append(Mismatch(build.doc_path, "doc_not_ingested", "", build.permalink))
    return reconciled, check


def _compare(document: Document, build: BuiltDoc, check: ManifestCheck) -> Document:
    check.docs += 1
    check.headings += len(build.heading_ids)
    ours = [section.anchor for section in document.sections if section.anchor]
    missing = Counter(ours) - Counter(build.heading_ids)
    extra = Counter(build.heading_ids) - Counter(ours)
    check.headings_agreeing += len(build.heading_ids) - sum(extra.values())
    same_url = document.url == build.permalink
    if same_url and not missing and not extra:
        check.docs_agreeing += 1
        return document
    if not same_url:
        check.mismatches.append(Mismatch(document.doc_path, "permalink", document.url, build.permalink))
    check.mismatches.extend(Mismatch(document.doc_path, "anchor_not_in_build", a, "") for a in missing)
    check.mismatches.extend(Mismatch(document.doc_path, "heading_not_indexed", "", a) for a in extra)
    check.corrected += 1
    sections = document.sections
    if len(ours) == len(build.heading_ids):
        # Same headings, slugged differently: the build's ids, in document order.
        ids = iter(build.heading_ids)
        sections = tuple(replace(s, anchor=next(ids)) if s.anchor else s for s in sections)
    return replace(document, url=build.permalink, sections=sections)
