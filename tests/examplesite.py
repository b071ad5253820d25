"""The example textbook (website-plugin/example) built by real Docusaurus with the plugin, and indexed.

The build runs once per test session (and is skipped while the sources are unchanged; see
``docusite.build_fixture_site``). Indexing uses the deterministic hash embedder: these tests are about
URLs, anchors and the widget, not ranking quality.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apiserver import hash_settings, ingest_hashed
from bookwise.index.build import IngestReport
from bookwise.ingest.manifest import load_manifests
from bookwise.settings import Settings
from docusite import build_fixture_site

EXAMPLE_SITE: Path = Path(__file__).resolve().parents[1] / "website-plugin" / "example"
MANIFEST_NAME = "bookwise-manifest.json"


def build_example() -> Path:
    return build_fixture_site(EXAMPLE_SITE)


def read_manifest(build_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((build_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    return data


def index_example(data_dir: Path, build_dir: Path, **overrides: Any) -> tuple[Settings, IngestReport]:
    """The example indexed with the hash embedder, checked against (and corrected by) its manifest."""
    settings = hash_settings(data_dir, **overrides)
    report = ingest_hashed(settings, EXAMPLE_SITE, built=load_manifests([build_dir / MANIFEST_NAME]))
    return settings, report
