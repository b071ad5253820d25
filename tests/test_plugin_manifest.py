"""The plugin's build manifest on a real Docusaurus build with ``future: {v4: true}`` (the fixture site, as
a site made today by create-docusaurus): its minified HTML writes ``<h2 id=usage>`` without quotes, and
the manifest must still list every heading, so that the documented CI command passes with ``--strict``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from docusite import FIXTURE_SITE, build_fixture_site, read_built_pages

pytestmark = pytest.mark.docusaurus

MANIFEST = "bookwise-manifest.json"
UNQUOTED_HEADING_ID = re.compile(r"<h[2-6]\b[^>]*\sid=[^\"'\s>]")
# GFM's generated footnotes heading: no heading of the doc's text, so the manifest leaves it out.
GENERATED_IDS = {"footnote-label"}


@pytest.fixture(scope="module")
def build_dir() -> Path:
    return build_fixture_site()


def read_manifest(build_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((build_dir / MANIFEST).read_text(encoding="utf-8"))
    return data


def test_manifest_finds_unquoted_heading_ids_of_a_future_v4_build(build_dir: Path) -> None:
    # The build really is the minified kind that broke the manifest: heading ids without quotes.
    intro = (build_dir / "docs" / "intro" / "index.html").read_text(encoding="utf-8")
    assert UNQUOTED_HEADING_ID.search(intro), "the fixture no longer builds with future.v4's minifier"
    pages = {url: page for url, page in read_built_pages(build_dir).items() if page.doc_id is not None}
    docs = read_manifest(build_dir)["docs"]
    assert {doc["permalink"] for doc in docs if doc["built"]} == set(pages)
    for doc in docs:
        if doc["built"]:
            ids = tuple(heading["id"] for heading in doc["headings"])
            built = tuple(i for i in pages[doc["permalink"]].heading_ids if i not in GENERATED_IDS)
            assert ids == built, doc["permalink"]
    assert sum(len(doc["headings"]) for doc in docs) >= 40


def test_strict_ingest_with_the_manifest_of_a_future_v4_build_passes(build_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "BOOKWISE_EMBEDDING_PROVIDER": "hash", "BOOKWISE_DATA_DIR": str(tmp_path / "data")}
    command = ["ingest", str(FIXTURE_SITE), "--manifest", str(build_dir / MANIFEST), "--strict", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", *command], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["errors"] == []
    assert report["docs_processed"] >= 20
