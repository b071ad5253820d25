"""Headless Debian Chromium driven by Playwright, for the widget and end-to-end tests.

Playwright never downloads a browser here: it drives the system `chromium` by executable path. The
flags keep Chromium off the (closed) network: no background updates, sync or QUIC probes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

HOST = "#bookwise-widget"

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """The system Chromium. Missing is a failure, not a skip: a skipped browser test proves nothing."""
    path = os.environ.get("BOOKWISE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is not installed: apt-get install chromium (.ci/run does)")
    return path


@contextmanager
def launched_chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            _shared_contexts.pop(id(browser), None)
            browser.close()


def visit(page: Page, url: str) -> None:
    """Open a page and wait for the widget to mount."""
    page.goto(url)
    page.wait_for_function("() => window.Bookwise && document.getElementById('bookwise-widget')")


def part(page: Page, name: str) -> Locator:
    """An element of the widget by its `data-bw` hook (Playwright's CSS pierces the shadow root)."""
    return page.locator(f'{HOST} [data-bw="{name}"]')


def wait_state(page: Page, state: str, timeout_ms: float = 5000) -> None:
    from playwright.sync_api import expect

    expect(page.locator(HOST)).to_have_attribute("data-state", state, timeout=timeout_ms)


def shadow_focus(page: Page) -> str | None:
    """The `data-bw` hook of the element focused inside the widget."""
    focused: str | None = page.evaluate(
        "() => document.getElementById('bookwise-widget').shadowRoot.activeElement?.dataset.bw"
    )
    return focused


# One browser context per browser, which every test page opens in and leaves clean (checked by
# tests/widget/test_browser_pages.py). A context per page costs Chromium a fresh cache and fresh
# processes: a page of the example book took 1.1 CPU-s to open in a new context, 0.46 in a shared one
# that keeps a page open (0.81 when its last page closes). The browser modules (209 tests): 229 CPU-s
# and 118 s with a context per page, 158 CPU-s and 83 s shared.
_shared_contexts: dict[int, Any] = {}
DESKTOP = {"width": 1280, "height": 860}


def _shared_context(browser: Any) -> Any:
    context = _shared_contexts.get(id(browser))
    if context is None:
        context = _shared_contexts[id(browser)] = browser.new_context(viewport=DESKTOP)
        context.new_page()  # kept open: with no page left, the context's processes wind down
    return context


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else None


@contextmanager
def fresh_page(
    browser: Any,
    *,
    permissions: tuple[str, ...] = (),
    origin: str | None = None,
    viewport: dict[str, int] = DESKTOP,
) -> Iterator[Page]:
    """A page as a new reader's, at a desktop size unless told.

    It opens in the browser's shared context and leaves it as it found it: the storage of every
    origin its pages visited (local storage, IndexedDB, caches, service workers, cookies) cleared,
    its permissions revoked and every page it opened closed."""
    context = _shared_context(browser)
    if permissions:
        context.grant_permissions(list(permissions), origin=origin)
    page = context.new_page()
    page.set_viewport_size(viewport)
    visited: set[str] = set()
    page.on("framenavigated", lambda frame: visited.update(o for o in [_origin(frame.url)] if o))
    try:
        yield page
    finally:
        _clean(context, visited)


def _clean(context: Any, visited: set[str]) -> None:
    """Clear what the test's pages stored, by origin (a popup's included), then close them."""
    keep, *opened = context.pages
    visited.update(o for o in map(_origin, (page.url for page in opened)) if o)
    if visited:
        session = context.new_cdp_session(keep)
        for origin in sorted(visited):
            session.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        session.detach()
    for page in opened:
        page.close()
    context.clear_cookies()
    context.clear_permissions()


@contextmanager
def page_without_errors(
    browser: Any,
    *,
    permissions: tuple[str, ...] = (),
    origin: str | None = None,
    viewport: dict[str, int] = DESKTOP,
) -> Iterator[Page]:
    """A ``fresh_page``; the test fails if the page threw."""
    with fresh_page(browser, permissions=permissions, origin=origin, viewport=viewport) as page:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
    assert errors == []
