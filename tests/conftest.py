from __future__ import annotations

import io
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bookwise.api.logs import configure_logging
from bookwise.insights.sql import SqlStore
from bookwise.insights.store import open_store
from bookwise.retrieval.models import SectionResult
from bookwise.settings import Settings
from browser import launched_chromium
from examplesite import build_example, index_example_locally
from fakellm import FakeLLM, running_fake_llm
from pgserver import PostgresServer, running_postgres

# The developer's shell must not change what the tests test: every BOOKWISE_ setting exported there
# is dropped, and the tests run from an empty temporary folder (no bookwise.toml to pick up), before
# any test module is imported. Subprocesses (`bookwise ...`) inherit both. Variables of the test
# harness itself (BOOKWISE_CHROMIUM) are no settings and stay.
_INVOKED_FROM = pytest.StashKey[str]()
SETTING_VARIABLES = frozenset(f"BOOKWISE_{name.upper()}" for name in Settings.model_fields)


def pytest_configure(config: pytest.Config) -> None:
    for name in [n for n in os.environ if n.upper() in SETTING_VARIABLES]:
        del os.environ[name]
    paths = os.environ.get("PYTHONPATH")
    if paths:  # relative entries would break in the new working directory
        os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in paths.split(os.pathsep) if p)
    config.stash[_INVOKED_FROM] = os.getcwd()
    os.chdir(tempfile.mkdtemp(prefix="bookwise-tests-cwd-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    empty = os.getcwd()
    os.chdir(config.stash.get(_INVOKED_FROM, "/"))
    try:
        os.rmdir(empty)  # left as it was found: empty (a test that wrote there would make this fail)
    except OSError:
        pass


SiteFactory = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embedding_provider="hash", _env_file=None)  # type: ignore[call-arg]


@pytest.fixture
def make_site(tmp_path: Path) -> SiteFactory:
    """Write a site: keys are paths under the site folder, values file contents."""

    def make(files: dict[str, str | bytes]) -> Path:
        site = tmp_path / "site"
        for relative, content in files.items():
            path = site / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        (site / "docs").mkdir(parents=True, exist_ok=True)
        return site

    return make


SectionFactory = Callable[..., SectionResult]


@pytest.fixture
def section() -> SectionFactory:
    def make(heading: str, text: str, n: int = 1) -> SectionResult:
        return SectionResult(
            section_id=f"s{n}",
            doc_path=f"p{n}.md",
            doc_id=f"p{n}",
            title=f"Page {n}",
            heading=heading,
            heading_text=heading,
            heading_level=2,
            breadcrumb=[f"Page {n}"],
            url=f"/p{n}#{heading.lower()}",
            page_url=f"/p{n}",
            anchor=heading.lower(),
            module=None,
            chapter=None,
            version="current",
            locale="en",
            content_type="prose",
            score=1.0 / n,
            snippet="",
            text=text,
            tokens=0,
            truncated=False,
        )

    return make


@pytest.fixture(scope="module")
def llm_server() -> Iterator[tuple[FakeLLM, str]]:
    """A fake OpenAI-compatible server on loopback, one per test module: (fake, base URL with /v1)."""
    with running_fake_llm() as running:
        yield running


@pytest.fixture
def fake(llm_server: tuple[FakeLLM, str]) -> Iterator[FakeLLM]:
    """The module's fake LLM with its default script and no records; stalled replies end after the test."""
    llm_server[0].reset()
    yield llm_server[0]
    llm_server[0].release_stalls()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Debian Chromium per test module (Playwright by executable path)."""
    with launched_chromium() as launched:
        yield launched


@pytest.fixture(scope="session")
def example_local(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The example textbook built by Docusaurus and indexed with the local embedder, no LLM: the
    demo's answers, for the e2e answer tests and the README screenshots."""
    return index_example_locally(tmp_path_factory.mktemp("example-local"), build_example())


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What `bookwise serve` logs, captured; pytest's own handlers are put back afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    named = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).propagate) for n in ("bookwise",)}
    stream = io.StringIO()
    configure_logging(stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        for name, (handlers, propagate) in named.items():
            logging.getLogger(name).handlers[:] = handlers
            logging.getLogger(name).propagate = propagate


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL for the session (started on first use); each test makes its own database."""
    with running_postgres() as server:
        yield server


# The insights store's fixtures live here, not in tests/insights/conftest.py: a second conftest module
# would shadow this one for the tests that import helpers from it (`from conftest import SiteFactory`).
@pytest.fixture(params=["sqlite", "postgres"])
def insights_target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a store lives: a SQLite file, or a new database on the session's real PostgreSQL."""
    if request.param == "sqlite":
        return tmp_path / "insights.sqlite3"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture
def insights_store(insights_target: str | Path) -> Iterator[SqlStore]:
    opened = open_store(insights_target)
    assert isinstance(opened, SqlStore)
    try:
        yield opened
    finally:
        opened.close()
