"""Build the real Docusaurus fixture site and read doc URLs and element ids from its HTML.

The fixture in ``tests/fixtures/docusite`` is a Docusaurus 3.10.2 site (docs plugin + classic theme,
no preset, so no Algolia/@docsearch packages) with ``url: 'https://example.test'``, ``baseUrl:
'/mysite/'`` and ``routeBasePath: 'docs'``. Its built HTML is the ground truth for the
``permalink#anchor`` values that Bookwise computes from the Markdown sources.

What the 3.10.2 build shows (checked on this fixture; see ``test_docusite_helper.py``):

* Every doc page is ``build/<route>/index.html``; ``trailingSlash`` is unset, so a category-index doc
  (``01-guides/index.md``) is routed as ``/mysite/docs/guides/`` and every other doc without a
  trailing slash, but both are written as ``.../index.html``. The exact permalink is the path of
  ``<link rel="canonical">`` (same as ``og:url``), which keeps the trailing slash.
* A file name with a space (``misc/doc with space.md``) keeps the literal space everywhere: the build
  writes ``build/docs/misc/doc with space/index.html``, the canonical href is
  ``https://example.test/mysite/docs/misc/doc with space`` (not percent-encoded) and the ``<html>``
  class is ``docs-doc-id-misc/doc with space``. URLs are ``unquote``-d anyway, so an encoded form
  would give the same key.
* ``<html class="... docs-doc-page docs-doc-id-<id>">``: the doc-id class is the last class, and the
  id is not escaped (spaces included), so it is read as the rest of the attribute.
  A ``_category_.json`` generated-index page (``/mysite/docs/category/miscellaneous``) also carries
  ``docs-doc-page`` but no ``docs-doc-id-*`` class and no ``.theme-doc-markdown``: it is returned with
  ``doc_id=None`` and no ids.
* The theme never renders an ``id`` on the H1: a Markdown ``# Title`` at the top and the synthetic
  title (front matter ``title`` with no H1) both come out as ``<header><h1>Title</h1></header>``.
  A later setext H1 (``Title\\n===`` in the middle of a page) is rendered as a bare ``<h1>``, also
  without an id. The H1 still consumes its slug (``# Overview`` + ``## Overview`` -> ``overview-1``).
* Headings nested in admonitions, ``<details>`` and ``<TabItem>`` get ids from the page's slugger like
  any other heading. Headings of an imported ``_partial.mdx`` get ids from the *partial's own*
  slugger: a page that renders the partial's ``## Shared setup`` and has its own ``## Shared setup``
  contains ``id="shared-setup"`` twice. ``heading_ids`` keeps duplicates, ``element_ids`` is a set.
  The TOC (outside ``<article>``) lists all of these too, partial headings included.
* ``## Text <!-- #my-id -->`` sets NO id with the default ``markdown.mdx1Compat.comments: true``, in
  ``format: mdx`` and ``format: md`` alike: remark-comment parses the comment into a ``comment`` node
  (not ``html``), so the text keeps its trailing space and the id is ``text-`` (trailing dash).
  ``{/* #my-id */}`` and ``{#my-id}`` (trimmed) work; explicit ids do not reserve their slug.
* A setext H1 in the middle of a page renders without an id but consumes its slug.
* Other ids inside ``<article>``: GFM footnotes (``user-content-fn-note``,
  ``user-content-fnref-note``, ``footnote-label``); the table of contents is outside ``<article>``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

FIXTURE_SITE: Path = Path(__file__).resolve().parent / "fixtures" / "docusite"

# Files and folders of the site whose changes require a new build (node_modules and build excluded).
_SOURCE_FILES = ("package.json", "package-lock.json", "docusaurus.config.js", "sidebars.js")
_SOURCE_DIRS = ("docs", "src", "static")
_BUILD_STAMP = ".bookwise-build-stamp"
PLUGIN_SOURCE = Path(__file__).resolve().parents[1] / "website-plugin" / "src"
_LOCK_FILE = ".bookwise-build.lock"
_NPM_TIMEOUT_S = 1200
_BUILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class BuiltPage:
    """One built doc page."""

    url: str  # the permalink path, e.g. "/mysite/docs/guides/install" or "/mysite/docs/guides/"
    element_ids: frozenset[str]  # every id attribute inside <article> (the doc content)
    heading_ids: tuple[str, ...]  # ids of h1..h6 inside .theme-doc-markdown, document order
    doc_id: str | None  # from the <html> class docs-doc-id-<id>; None for generated-index pages


def _run(cmd: list[str], cwd: Path, timeout: int) -> None:
    env = dict(os.environ)
    env.setdefault("CI", "true")  # no interactive prompts, no progress spinners
    env.setdefault("DOCUSAURUS_TELEMETRY_DISABLED", "1")
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{' '.join(cmd)} timed out after {timeout}s in {cwd}") from exc
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed with exit code {proc.returncode} in {cwd}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )


def _node_modules_in_sync(site: Path) -> bool:
    """True when node_modules holds exactly what package-lock.json asks for.

    npm writes ``node_modules/.package-lock.json`` (the "hidden lockfile") on every install; its
    ``packages`` entries equal those of ``package-lock.json`` except for optional packages skipped on
    this platform (e.g. ``fsevents``). This also accepts a ``node_modules`` made by a plain ``npm ci``
    in ``.ci/run``.
    """
    hidden = site / "node_modules" / ".package-lock.json"
    if not hidden.is_file() or not (site / "node_modules" / ".bin" / "docusaurus").exists():
        return False
    try:
        wanted = json.loads((site / "package-lock.json").read_text(encoding="utf-8"))["packages"]
        have = json.loads(hidden.read_text(encoding="utf-8"))["packages"]
    except (OSError, ValueError, KeyError):
        return False
    for key, meta in wanted.items():
        if not key:  # the root project itself
            continue
        if key in have:
            if have[key] != meta:
                return False
        elif not meta.get("optional"):
            return False
    return all(key in wanted for key in have)


def _source_state(site: Path) -> tuple[float, str]:
    """Newest mtime over the site's sources (files and folders) and the plugin's client code, and a
    digest of their paths (a change to the plugin's page actions alone must rebuild the site too)."""
    newest = 0.0
    names: list[str] = []
    paths = [site / name for name in _SOURCE_FILES]
    for top in [site / dirname for dirname in _SOURCE_DIRS] + [PLUGIN_SOURCE]:
        if top.is_dir():
            paths.append(top)
            paths.extend(sorted(top.rglob("*")))
    for path in paths:
        if path.exists():
            newest = max(newest, path.stat().st_mtime)
            names.append(
                path.relative_to(site if path.is_relative_to(site) else PLUGIN_SOURCE.parent).as_posix()
            )
    return newest, hashlib.sha256("\n".join(names).encode()).hexdigest()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold the lock on the file ``path`` (made if missing) for the block: one process at a time, across
    processes (pytest-xdist workers, other runs on this machine)."""
    with open(path, "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_fixture_site(site: Path = FIXTURE_SITE) -> Path:
    """npm ci (only if node_modules is missing or package-lock changed) then `docusaurus build`
    unless the build is newer than every source file; returns the build dir. Raises RuntimeError
    with npm's output on failure."""
    site = site.resolve()
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH: Node.js 20+ and npm are needed to build the fixture site")
    build_dir = site / "build"
    stamp = build_dir / _BUILD_STAMP
    with file_lock(site / _LOCK_FILE):  # one build of a site at a time
        installed = False
        if not _node_modules_in_sync(site):
            _run([npm, "ci", "--no-audit", "--no-fund"], site, _NPM_TIMEOUT_S)
            installed = True
        newest, digest = _source_state(site)
        fresh = (
            not installed
            and stamp.is_file()
            and stamp.stat().st_mtime > newest
            and stamp.read_text(encoding="utf-8").strip() == digest
        )
        if not fresh:
            stamp.unlink(missing_ok=True)
            docusaurus = site / "node_modules" / ".bin" / "docusaurus"
            _run([str(docusaurus), "build", "--out-dir", str(build_dir)], site, _BUILD_TIMEOUT_S)
            stamp.write_text(digest + "\n", encoding="utf-8")
    return build_dir


_VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_DOC_ID_PREFIX = "docs-doc-id-"


class _PageParser(HTMLParser):
    """Collects the html classes, the permalink and the ids inside <article> / .theme-doc-markdown."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.html_class = ""
        self.canonical: str | None = None
        self.og_url: str | None = None
        self.element_ids: set[str] = set()
        self.heading_ids: list[str] = []
        # Open elements: (tag, is_article, is_markdown_root).
        self._stack: list[tuple[str, bool, bool]] = []
        self._article_depth = 0
        self._markdown_depth = 0

    def _attrs(self, attrs: list[tuple[str, str | None]]) -> dict[str, str]:
        return {name: value or "" for name, value in attrs}

    def _visit(self, tag: str, attrs: dict[str, str]) -> tuple[bool, bool]:
        if tag == "html":
            self.html_class = attrs.get("class", "")
        elif tag == "link" and "canonical" in attrs.get("rel", "").split() and self.canonical is None:
            self.canonical = attrs.get("href")
        elif tag == "meta" and attrs.get("property") == "og:url" and self.og_url is None:
            self.og_url = attrs.get("content")
        is_article = tag == "article"
        is_markdown = "theme-doc-markdown" in attrs.get("class", "").split()
        in_article = self._article_depth > 0 or is_article
        in_markdown = self._markdown_depth > 0 or is_markdown
        element_id = attrs.get("id")
        if element_id and in_article:
            self.element_ids.add(element_id)
        if element_id and in_markdown and tag in _HEADINGS:
            self.heading_ids.append(element_id)
        return is_article, is_markdown

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        is_article, is_markdown = self._visit(tag, self._attrs(attrs))
        if tag in _VOID_ELEMENTS:
            return
        self._stack.append((tag, is_article, is_markdown))
        self._article_depth += is_article
        self._markdown_depth += is_markdown

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._visit(tag, self._attrs(attrs))  # self-closing (SVG paths etc.): never a container

    def handle_endtag(self, tag: str) -> None:
        if not any(open_tag == tag for open_tag, _, _ in self._stack):
            return  # stray end tag
        while self._stack:
            open_tag, is_article, is_markdown = self._stack.pop()
            self._article_depth -= is_article
            self._markdown_depth -= is_markdown
            if open_tag == tag:
                break


def _url_path(url: str) -> str:
    """Path of an absolute permalink ("https://example.test/mysite/docs/x" -> "/mysite/docs/x")."""
    return unquote(urlsplit(url).path)


def _route_of_file(build_dir: Path, html_file: Path) -> str:
    """Route of a built file without the baseUrl: "docs/x/index.html" -> "/docs/x", "a.html" -> "/a"."""
    rel = html_file.relative_to(build_dir).as_posix()
    route = rel.removesuffix("index.html") if rel.endswith("index.html") else rel.removesuffix(".html")
    return ("/" + route).rstrip("/")


def parse_built_page(html: str) -> BuiltPage | None:
    """Parse one built HTML page; None unless it is a doc page (html class docs-doc-page).

    Raises ValueError for a doc page with neither ``<link rel=canonical>`` nor ``og:url``.
    """
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    classes = parser.html_class.split()
    if "docs-doc-page" not in classes:
        return None
    doc_id: str | None = None
    start = parser.html_class.find(_DOC_ID_PREFIX)
    if start >= 0:
        # Last class, not escaped: "docs-doc-id-misc/doc with space" is one id.
        doc_id = parser.html_class[start + len(_DOC_ID_PREFIX) :].strip() or None
    permalink = parser.canonical or parser.og_url
    if not permalink:
        raise ValueError("doc page without <link rel=canonical> or og:url")
    url = _url_path(permalink)
    return BuiltPage(
        url=url,
        element_ids=frozenset(parser.element_ids),
        heading_ids=tuple(parser.heading_ids),
        doc_id=doc_id,
    )


def unresolved(urls: Iterable[str], pages: dict[str, BuiltPage]) -> list[str]:
    """The ``page#anchor`` URLs that name no built page, or no element of that page."""
    broken = []
    for url in urls:
        page_url, _, anchor = url.partition("#")
        page = pages.get(page_url)
        if page is None or (anchor and anchor not in page.element_ids):
            broken.append(url)
    return broken


def read_built_pages(build_dir: Path) -> dict[str, BuiltPage]:
    """Every doc page of a Docusaurus build, keyed by its URL path (with the baseUrl)."""
    pages: dict[str, BuiltPage] = {}
    for html_file in sorted(build_dir.rglob("*.html")):
        if not html_file.is_file():
            continue
        page = parse_built_page(html_file.read_text(encoding="utf-8"))
        if page is None:
            continue
        # The permalink must end with the file's own route (the baseUrl comes before it): with
        # trailingSlash unset, both "/mysite/docs/x" and "/mysite/docs/x/" are written as x/index.html.
        route = _route_of_file(build_dir, html_file)
        if not (page.url.rstrip("/") + "/").endswith(route + "/"):
            raise ValueError(f"{html_file} is not where its permalink {page.url!r} routes to")
        if page.url in pages:
            raise ValueError(f"two built pages claim the URL {page.url!r} (second: {html_file})")
        pages[page.url] = page
    return pages
