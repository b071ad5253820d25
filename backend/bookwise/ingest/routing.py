"""Doc ids, slugs and permalinks, computed the way @docusaurus/plugin-content-docs 3.x does."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any, Literal

_NOT_A_PREFIX = re.compile(r"^\d+[-_.]\d+")
_NUMBER_PREFIX = re.compile(r"^(?P<n>\d+)\s*[-_.]+\s*(?P<rest>[^-_.\s].*)$")

TrailingSlash = Literal[True, False] | None


def strip_number_prefix(name: str) -> tuple[str, int | None]:
    """``02-install`` → (``install``, 2); ``1.5-dotted`` and ``2021-11-x`` style names are kept."""
    if _NOT_A_PREFIX.match(name):
        return name, None
    match = _NUMBER_PREFIX.match(name)
    if match is None:
        return name, None
    return match["rest"], int(match["n"])


def normalize_url(*parts: str) -> str:
    """Join URL parts with single slashes, keeping a trailing slash if the last part has one."""
    joined = "/".join(p for p in parts if p != "")
    joined = re.sub(r"/{2,}", "/", joined)
    if not joined.startswith("/"):
        joined = "/" + joined
    return joined


def resolve_pathname(relative: str, base_dir: str) -> str:
    """Browser-style resolution of ``relative`` against the directory URL ``base_dir``."""
    if relative.startswith("/"):
        return relative
    resolved = posixpath.normpath(posixpath.join(base_dir, relative))
    if relative.endswith("/") and not resolved.endswith("/"):
        resolved += "/"
    return resolved if resolved.startswith("/") else "/" + resolved


@dataclass(frozen=True)
class DocRoute:
    doc_id: str
    slug: str
    sidebar_position: float | None
    is_category_index: bool


def is_category_index(source: str) -> bool:
    stem = posixpath.splitext(posixpath.basename(source))[0].lower()
    directory = posixpath.dirname(source)
    parent = directory.split("/")[-1].lower() if directory else ""
    return stem in ("index", "readme") or (bool(parent) and stem == parent)


def route_doc(source: str, front_matter: dict[str, Any]) -> DocRoute:
    """``source`` is the file path relative to the version's docs folder, with ``/`` separators."""
    stem = posixpath.splitext(posixpath.basename(source))[0]
    directory = posixpath.dirname(source) or "."
    parse_prefixes = front_matter.get("parse_number_prefixes", True) is not False
    name, position = strip_number_prefix(stem) if parse_prefixes else (stem, None)
    base_id = str(front_matter.get("id", name))
    if directory == ".":
        stripped_dir = ""
    elif parse_prefixes:
        stripped_dir = "/".join(strip_number_prefix(seg)[0] for seg in directory.split("/"))
    else:
        stripped_dir = directory
    doc_id = base_id if not stripped_dir else f"{stripped_dir}/{base_id}"
    dir_slug = "/" if not stripped_dir else f"/{stripped_dir}/"
    index = is_category_index(source)
    raw_slug = front_matter.get("slug")
    if raw_slug is not None and str(raw_slug).startswith("/"):
        slug = str(raw_slug)
    elif raw_slug is None and index:
        slug = dir_slug
    else:
        slug = resolve_pathname(str(raw_slug) if raw_slug is not None else base_id, dir_slug)
    raw_position = front_matter.get("sidebar_position", position)
    sidebar_position = float(raw_position) if isinstance(raw_position, int | float) else None
    return DocRoute(doc_id=doc_id, slug=slug, sidebar_position=sidebar_position, is_category_index=index)


def apply_trailing_slash(url: str, trailing_slash: TrailingSlash, base_url: str) -> str:
    """The URL a link to ``url`` takes under the site's ``trailingSlash`` setting."""
    if trailing_slash is None or url in ("/", base_url):
        return url
    if trailing_slash:
        return url if url.endswith("/") else url + "/"
    return url.rstrip("/") or "/"


def permalink(version_path: str, slug: str) -> str:
    return normalize_url(version_path, slug)
