"""The browser pages the tests open (``browser.fresh_page``) share one context, so each must start as a
new reader's would: nothing an earlier page stored or was granted is seen by the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from widgethost import serve_site

from browser import fresh_page

STORE = """async () => {
  localStorage.setItem('answer', '42');
  sessionStorage.setItem('answer', '42');
  document.cookie = 'reader=1; max-age=3600';
  await new Promise((resolve, reject) => {
    const opened = indexedDB.open('conversations');
    opened.onupgradeneeded = () => opened.result.createObjectStore('turns');
    opened.onsuccess = () => { opened.result.close(); resolve(); };
    opened.onerror = () => reject(opened.error);
  });
  await (await caches.open('answers')).put('/cached', new Response('x'));
}"""

READ = """async () => ({
  local: localStorage.length,
  session: sessionStorage.length,
  cookie: document.cookie,
  databases: (await indexedDB.databases()).map(d => d.name),
  caches: await caches.keys(),
  clipboard: (await navigator.permissions.query({name: 'clipboard-read'})).state,
})"""


def test_a_fresh_page_sees_nothing_an_earlier_page_stored_or_was_granted(
    browser: Any, tmp_path: Path
) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>reader</title><p>page", encoding="utf-8")
    with serve_site(tmp_path) as url:
        clipboard = ("clipboard-read", "clipboard-write")
        with fresh_page(browser, permissions=clipboard, origin=url) as first:
            first.goto(f"{url}/index.html")
            first.evaluate(STORE)
            stored = first.evaluate(READ)
            first.context.new_page().goto(f"{url}/index.html")  # a second page it opened, left open
        with fresh_page(browser) as second:
            second.goto(f"{url}/index.html")
            seen = second.evaluate(READ)
            pages = len(second.context.pages)
    assert stored == {
        "local": 1, "session": 1, "cookie": "reader=1", "databases": ["conversations"],
        "caches": ["answers"], "clipboard": "granted",
    }  # fmt: skip
    assert seen == {
        "local": 0, "session": 0, "cookie": "", "databases": [], "caches": [], "clipboard": "prompt",
    }  # fmt: skip
    assert pages == 2  # the context's own page kept open, and this one: the first test's two are closed
