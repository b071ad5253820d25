"""The example textbook (website-plugin/example) built by real Docusaurus with the plugin, and indexed.

The build runs once per test session (and is skipped while the sources are unchanged; see
``docusite.build_fixture_site``). Indexing uses the deterministic hash embedder: these tests are about
URLs, anchors and the widget, not ranking quality.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from apiserver import hash_settings, ingest_hashed, running_api
from bookwise.index.build import IngestReport
from bookwise.index.edge.copies import copy_keeping_holes
from bookwise.index.factory import open_store
from bookwise.ingest.manifest import load_manifests
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.book_ingest import ingest_book
from bookwise.retrieval.suggestions import suggest_for_live_index
from bookwise.settings import Settings
from docusite import build_fixture_site, file_lock

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


@contextmanager
def serving_example(
    data_dir: Path, *, llm_url: str | None = None, suggestions: bool = False
) -> Iterator[str]:
    """The built example indexed with the hash embedder and served with its site by the API: with the
    fake LLM at ``llm_url``, or extractive answers without one."""
    build_dir = build_example()
    llm: dict[str, Any] = {"llm_base_url": llm_url, "llm_api_key": "test"} if llm_url else {}
    settings, _ = index_example(data_dir, build_dir, site_dir=build_dir, **llm)
    if suggestions:
        suggest_for_live_index(settings)
    with running_api(settings) as url:
        yield url


def local_settings(data_dir: Path, build_dir: Path, **overrides: Any) -> Settings:
    """The demo's settings over ``data_dir``: the local MiniLM (not adapted to the site, which takes
    longer and is not needed to show how passages are chosen), and no LLM: extractive answers."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "embedding_provider": "local",
        "embedding_adapt": False,
        "llm_base_url": None,
        "rate_limit_per_minute": 10_000,
        "site_dir": build_dir,
    }
    return Settings(_env_file=None, **(values | overrides))


def index_example_locally(data_dir: Path, build_dir: Path, **overrides: Any) -> Settings:
    """The example indexed as the demo's `bookwise ingest` does (``local_settings``): with the
    passage vectors its generation carries, so a server of it embeds no passage at start."""
    settings = local_settings(data_dir, build_dir, **overrides)
    store = open_store(settings)
    try:
        built = load_manifests([build_dir / MANIFEST_NAME])
        ingest_book(settings, read_site_config(EXAMPLE_SITE), store=store, built=built)
    finally:
        store.close()
    return settings


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder shared by the test processes of this run (pytest-xdist's workers share the parent of
    their base folders), or this process's own base folder when it runs alone. A new run gets a new
    one: nothing made here outlives the run."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder ``name`` of this run's shared folder, filled by ``make`` once per run: the first
    process to need it makes it under a lock while the others wait, then all read it."""
    shared = run_folder(tmp_path_factory)
    made = shared / name
    with file_lock(shared / f"{name}.lock"):
        if not (made / ".complete").is_file():
            shutil.rmtree(made, ignore_errors=True)  # what a failed attempt left
            make(made)
            (made / ".complete").touch()
    return made


def example_indexed_once(tmp_path_factory: pytest.TempPathFactory, build_dir: Path) -> Settings:
    """The example indexed locally once per run, and a copy of that data directory for this process.

    The embedded index is opened by one process at a time, and a test may write beside it (feedback,
    the question log), so each process gets its own copy; the ingest, the costly part, is shared:
    the first process makes it under a lock while the others wait for it."""
    made = made_once(
        tmp_path_factory, "example-local", lambda into: index_example_locally(into / "data", build_dir)
    )
    own = tmp_path_factory.mktemp("example-local") / "data"
    copy_data_dir(made / "data", own)
    return local_settings(own, build_dir)


def copy_data_dir(source: Path, target: Path) -> None:
    """A data dir of its own: the index's files copied with their holes, the ONNX model (87 MB, twice:
    the export cache and the generation's link to it) linked, as nothing writes into a model's files:
    an export replaces the whole folder."""

    def copy(source_file: str, target_file: str) -> str:
        if Path(source_file).suffix == ".onnx":
            try:
                os.link(source_file, target_file)
                return target_file
            except OSError:  # another file system
                pass
        return copy_keeping_holes(source_file, target_file)

    shutil.copytree(source, target, copy_function=copy)
