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


@contextmanager
def page_without_errors(
    browser: Any, *, permissions: tuple[str, ...] = (), origin: str | None = None
) -> Iterator[Page]:
    """A page in a context of its own at a desktop size; the test fails if the page threw."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    if permissions:
        context.grant_permissions(list(permissions), origin=origin)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == []
