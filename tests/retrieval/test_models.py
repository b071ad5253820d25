"""Sources are shaped for output in one type: clean site-relative URLs and plain-text fields."""

from __future__ import annotations

import dataclasses

import pytest

from bookwise.retrieval.models import plain_text, site_url
from conftest import SectionFactory


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("/\\evil.example/x", "/evil.example/x"),  # a browser reads `/\` as `//`: another site
        ("//evil.example/x", "/evil.example/x"),
        ("https://evil.example/a#b", "/evil.example/a#b"),
        ("javascript:alert(1)", "/alert%281%29"),
        ('/docs/x#"><svg onload=alert(1)>', "/docs/x#%22%3E%3Csvg%20onload=alert%281%29%3E"),
        ("/docs/x#a\u200bb", "/docs/x#a%E2%80%8Bb"),
        ("/docs/a b/100%/x?q=1", "/docs/a%20b/100%25/x"),
        # What Docusaurus and the selection's text fragments produce is kept as it is.
        ("/docs/care/feeding#morning-feed", "/docs/care/feeding#morning-feed"),
        (
            "/docs/x#feed:~:text=Offer%20fresh,before%20sunrise.",
            "/docs/x#feed:~:text=Offer%20fresh,before%20sunrise.",
        ),
        ("/docs/中文#中文-标题", "/docs/中文#中文-标题"),
        ("", "/"),
    ],
)
def test_urls_are_clean_site_relative_paths_with_inert_anchors(raw: str, clean: str) -> None:
    assert site_url(raw) == clean
    assert site_url(clean) == clean  # cleaning twice changes nothing


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<img src=x onerror=alert(1)>Wombat &amp; burrows", "Wombat & burrows"),
        ("<script>alert(1)</script>Care <b>and</b> feeding", "Care and feeding"),
        ("&lt;script&gt;alert(1)&lt;/script&gt;Care", "Care"),
        ("Notes <!-- hidden --> here", "Notes here"),
        (
            "List<String> and <Provider> and a < b",
            "List<String> and <Provider> and a < b",
        ),  # text, not markup
    ],
)
def test_author_text_is_plain_text(raw: str, clean: str) -> None:
    assert plain_text(raw) == clean


def test_a_source_keeps_inline_code_of_its_heading(section: SectionFactory) -> None:
    source = dataclasses.replace(
        section("x", "text"), heading="The `<code>` element <b>now</b>", heading_text="The <code> element now"
    ).to_source()
    assert source["heading"] == "The `<code>` element now"
    assert source["heading_text"] == "The <code> element now"
