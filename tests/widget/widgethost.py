"""Helpers for the widget tests: a static host site, a trap server, and the host page's markup.

The host page is served from its own origin, as a documentation site would be, with clean URLs
like Docusaurus (`/docs/care/feeding` serves `docs/care/feeding.html`), and loads the built bundle
from the API's `GET /widget.js`. A trap server records every request that reaches it, so a test
can show that nothing the model wrote made the browser fetch anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _SiteHandler(SimpleHTTPRequestHandler):
    """Static files, with `.html` left out of page URLs."""

    def translate_path(self, path: str) -> str:
        translated = Path(super().translate_path(path))
        page = translated.with_name(translated.name + ".html")
        return str(page if not translated.suffix and page.is_file() else translated)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Trap:
    """A server that answers anything with 204 and remembers every request line."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.url = ""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        trap = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                trap.requests.append(f"{self.command} {self.path}")
                self.send_response(204)
                self.end_headers()

            do_GET = do_POST = do_HEAD = do_OPTIONS = _record

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def serve_site(root: Path) -> Iterator[str]:
    """Serve the folder `root` on loopback; yield its base URL. Files are read per request, so
    pages may be written after the server starts (once the API's URL is known)."""
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), partial(_SiteHandler, directory=str(root)))) as url:
        yield url


def host_page(title: str, api_url: str, *, script_attributes: str = "", body: str = "") -> str:
    """A page marked up like a Docusaurus doc page, loading the widget from `api_url`."""
    return f"""<!doctype html>
<html data-theme="light" lang="en">
<head>
  <meta charset="utf-8">
  <meta name="docusaurus_version" content="current">
  <meta name="docusaurus_locale" content="en">
  <title>{title}</title>
  <script src="{api_url}/widget.js" defer data-api-url="{api_url}" {script_attributes}></script>
</head>
<body>
  <div id="__docusaurus">
    <nav><a id="home" href="/">Home</a></nav>
    <main><article><div class="theme-doc-markdown markdown">
      <h1>{title}</h1>
      {body}
    </div></article></main>
  </div>
</body>
</html>
"""
