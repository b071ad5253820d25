"""The widget's SSE parser (widget/src/sse.js), run as a module in Chromium against a table of streams.

Every stream is fed whole, one character at a time, and split at every position, so an event, a
field or a CRLF cut across chunks must parse the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from widgethost import serve_site

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

WIDGET_SRC = Path(__file__).resolve().parents[2] / "widget" / "src"

# Feeds each chunking of each stream to a fresh parser; returns, per stream, the distinct results.
PARSE_ALL = """async streams => {
    const { createSseParser } = await import('/sse.js');
    const parse = chunks => {
        const events = [];
        const parser = createSseParser(event => events.push([event.event, event.data]));
        chunks.forEach(chunk => parser.push(chunk));
        return JSON.stringify(events);
    };
    return streams.map(stream => {
        const chunkings = [[stream], [...stream]];
        for (let cut = 1; cut < stream.length; cut++) {
            chunkings.push([stream.slice(0, cut), stream.slice(cut)]);
        }
        return [...new Set(chunkings.map(parse))].map(JSON.parse);
    });
}"""

CASES: list[tuple[str, str, list[list[str]]]] = [
    ("one event", 'event: meta\ndata: {"a": 1}\n\n', [["meta", '{"a": 1}']]),
    ("no event name", "data: x\n\n", [["message", "x"]]),
    ("CRLF line ends", "event: token\r\ndata: x\r\n\r\n", [["token", "x"]]),
    ("CR line ends", "event: token\rdata: x\r\r", [["token", "x"]]),
    ("multi-line data", "event: a\ndata: one\ndata:  two\ndata:three\n\n", [["a", "one\n two\nthree"]]),
    ("comments", ": ping\n\n: ping\nevent: a\n: inside\ndata: x\n\n", [["a", "x"]]),
    ("a field with no colon", "event: a\ndata\n\n", [["a", ""]]),
    ("unknown fields, id and retry", "id: 7\nretry: 10\nfoo: bar\ndata: x\n\n", [["message", "x"]]),
    ("the name resets", "event: a\ndata: 1\n\ndata: 2\n\n", [["a", "1"], ["message", "2"]]),
    ("blank lines without data", "\n\nevent: a\n\n\ndata: x\n\n", [["message", "x"]]),
    ("an unfinished event is dropped", "data: 1\n\ndata: 2\n", [["message", "1"]]),
    ("colons in the value", 'data: {"url": "/a#b:~:text=c"}\n\n', [["message", '{"url": "/a#b:~:text=c"}']]),
    ("unicode", "data: quokka 🦘 ünïcode\r\n\r\n", [["message", "quokka 🦘 ünïcode"]]),
    (
        "sse-starlette's framing",
        'event: meta\r\ndata: {"request_id": "r"}\r\n\r\n: ping - 2026-01-01\r\n\r\n'
        'event: token\r\ndata: {"text": "Hi"}\r\n\r\nevent: done\r\ndata: {}\r\n\r\n',
        [["meta", '{"request_id": "r"}'], ["token", '{"text": "Hi"}'], ["done", "{}"]],
    ),
]


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Page]:
    with serve_site(WIDGET_SRC) as url:
        page = browser.new_page()
        page.goto(url + "/")  # a directory listing: any page of this origin can import the module
        yield page
        page.close()


def test_every_chunking_of_every_stream_parses_to_the_expected_events(page: Page) -> None:
    results: list[list[Any]] = page.evaluate(PARSE_ALL, [stream for _, stream, _ in CASES])
    for (name, _, expected), distinct in zip(CASES, results, strict=True):
        assert distinct == [expected], f"{name}: {distinct}"
