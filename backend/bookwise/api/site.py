"""Serve a built Docusaurus site next to the API (the demo, or a single-box deployment).

Docusaurus writes `docs/intro/index.html` (or `docs/intro.html` with `trailingSlash: false`) and
links to `/docs/intro`; its own `docusaurus serve` answers that URL without a redirect, so do we.
Unknown paths get the site's `404.html` with status 404; unknown `/api/*` paths the API's JSON 404.
Dotfiles and dot-folders (`.env`, `.git/`) are never served, `.well-known/` aside.

Why not Starlette's StaticFiles: in html mode it redirects a folder URL without its slash to one
with it, an absolute URL built from the request's Host header, and it has no `page.html` fallback
for `trailingSlash: false` builds. Files are still sent by Starlette's FileResponse.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response

from bookwise.errors import NotFoundError

HTML_CACHE = "no-cache"  # pages change on every deploy; hashed assets may be cached for long
ASSET_CACHE = "public, max-age=3600"
# The Markdown for agents (`bookwise llms`) changes with every deploy, like the pages, and `.md` is
# missing from some systems' MIME tables (Starlette would then guess text/plain).
TEXT_TYPES = {".md": "text/markdown; charset=utf-8", ".txt": "text/plain; charset=utf-8"}


def resolve(root: Path, url_path: str) -> Path | None:
    """The file a URL path names inside ``root``, or None. Never a file outside ``root``."""
    parts = PurePosixPath(unquote(url_path)).parts[1:]
    if any(part in ("..", ".") or "\\" in part or "\x00" in part for part in parts):
        return None
    if any(part.startswith(".") and part != ".well-known" for part in parts):
        return None  # .env, .git/config, editor droppings: deploy leftovers, never pages
    base = root.joinpath(*parts)
    candidates = [base, base / "index.html"] + ([base.with_name(f"{base.name}.html")] if parts else [])
    for candidate in candidates:
        if candidate.is_file() and candidate.resolve().is_relative_to(root):
            return candidate
    return None


def site_endpoint(site_dir: Path) -> Callable[[Request], Awaitable[Response]]:
    root = site_dir.resolve()

    async def serve_site(request: Request) -> Response:
        if request.url.path == "/api" or request.url.path.startswith("/api/"):
            raise NotFoundError("no such endpoint")  # the API's own 404, never a page
        path = resolve(root, request.url.path)
        if path is None:
            not_found = root / "404.html"
            if not_found.is_file():
                return FileResponse(not_found, status_code=404, headers={"Cache-Control": HTML_CACHE})
            return PlainTextResponse("Not Found", status_code=404)
        cache = HTML_CACHE if path.suffix in (".html", *TEXT_TYPES) else ASSET_CACHE
        return FileResponse(path, headers={"Cache-Control": cache}, media_type=TEXT_TYPES.get(path.suffix))

    return serve_site
