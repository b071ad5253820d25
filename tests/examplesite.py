"""The example textbook (website-plugin/example) built by real Docusaurus with the plugin, and indexed.

The build runs once per test session (and is skipped while the sources are unchanged; see
``docusite.build_fixture_site``). Indexing uses the deterministic hash embedder: these tests are about
URLs, anchors and the widget, not ranking quality.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bookwise.index.build import IngestReport, run_ingest
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.ingest.manifest import load_manifests
from bookwise.ingest.site import read_site_config
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
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "embedding_provider": "hash",
        "index_refresh_s": 0.0,
        "sufficiency_threshold": 0.0,  # the hash embedder is not calibrated
        "rate_limit_per_minute": 10_000,
    }
    settings = Settings(_env_file=None, **(values | overrides))  # type: ignore[call-arg]
    store = open_store(settings)
    try:
        report = run_ingest(
            settings,
            read_site_config(EXAMPLE_SITE),
            embedder=HashEmbedder(),
            store=store,
            built=load_manifests([build_dir / MANIFEST_NAME]),
        )
    finally:
        store.close()
    return settings, report
