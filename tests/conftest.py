from __future__ import annotations

import functools
import inspect
import io
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, FunctionType
from typing import Any

import pytest

from bookwise.api.logs import configure_logging
from bookwise.insights.factory import open_insights_store
from bookwise.insights.sql import SqlStore
from bookwise.retrieval.models import SectionResult
from bookwise.settings import Settings
from browser import launched_chromium
from examplesite import build_example, example_indexed_once
from fakellm import FakeLLM, running_fake_llm
from pgserver import PostgresServer, running_postgres

# The developer's shell must not change what the tests test: every BOOKWISE_ setting exported there
# is dropped before any test module is imported, and the tests run from an empty temporary folder (no
# bookwise.toml to pick up, nothing written beside the checkout). Subprocesses (`bookwise ...`) inherit
# both. Variables of the test harness itself (BOOKWISE_CHROMIUM) are no settings and stay.
SETTING_VARIABLES = frozenset(f"BOOKWISE_{name.upper()}" for name in Settings.model_fields)
TESTS = Path(__file__).resolve().parent

# Marks for what a test needs beyond Python, applied from what it reaches (below): nothing to forget.
# `docusaurus` and `model` are declared in pyproject.toml.
MARKERS = {
    "browser": "drives a real headless Chromium (Playwright)",
    "postgres": "starts a real PostgreSQL server",
    "redis": "starts a real Redis server",
    "nginx": "starts a real nginx",
    "podman": "builds and runs a container image with rootful podman",
    "services": "needs an external service: PostgreSQL, Redis, nginx or podman",
}
SERVICES = frozenset({"postgres", "redis", "nginx", "podman"})
MARK_OF_FIXTURE = {"browser": "browser", "postgres": "postgres"}
MARK_OF_HELPER = {
    "launched_chromium": "browser",
    "build_fixture_site": "docusaurus",
    "build_example": "docusaurus",
    "running_postgres": "postgres",
    "running_redis": "redis",
    "running_nginx": "nginx",
}
MARK_OF_WORD = {"podman": "podman"}  # a string in the code: the command it runs


def pytest_configure(config: pytest.Config) -> None:
    for name in [n for n in os.environ if n.upper() in SETTING_VARIABLES]:
        del os.environ[name]
    paths = os.environ.get("PYTHONPATH")
    if paths:  # relative entries would break in the tests' working directory
        os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in paths.split(os.pathsep) if p)
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


@pytest.fixture(scope="session", autouse=True)
def empty_working_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder every test runs in. Entered at the first test's setup, after collection: paths on
    the command line (`--ignore=tests/e2e`) are resolved where pytest was started, as pytest does."""
    empty = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(empty)
        yield empty


@pytest.fixture(autouse=True)
def nothing_written_to_the_working_directory(empty_working_directory: Path) -> Iterator[None]:
    """A test that writes into its working directory fails: in a developer's checkout it would have
    written beside their files (a relative data dir, a default `.bookwise`)."""
    yield
    left = sorted(empty_working_directory.iterdir())
    for path in left:  # emptied, so the next test is judged on its own
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if left:
        pytest.fail(f"the test wrote into its working directory: {[p.name for p in left]}")


def _reached(code: CodeType, scope: dict[str, Any], seen: set[CodeType]) -> set[str]:
    """Names and strings in ``code``, in the functions nested in it, and in the test helpers
    (functions defined in this folder) it calls, followed to the end."""
    if code in seen:
        return set()
    seen.add(code)
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found |= _reached(const, scope, seen)
        elif isinstance(const, str):
            found.add(const)
    for name in code.co_names:
        helper = inspect.unwrap(scope[name]) if callable(scope.get(name)) else None
        if inspect.isfunction(helper) and Path(helper.__code__.co_filename).is_relative_to(TESTS):
            found |= _reached(helper.__code__, helper.__globals__, seen)
    return found


@functools.cache
def _reached_from(function: FunctionType) -> frozenset[str]:
    """``_reached`` from a test's or a fixture's function, once per function (fixtures are shared)."""
    return frozenset(_reached(function.__code__, function.__globals__, set()))


def needed_marks(item: pytest.Function) -> set[str]:
    """What ``item`` needs, from its fixtures (all of them, transitively), from the helpers its
    function and its fixtures' functions call, and from the store it is parametrized with."""
    marks = {MARK_OF_FIXTURE[name] for name in item.fixturenames if name in MARK_OF_FIXTURE}
    definitions = item._fixtureinfo.name2fixturedefs.values()
    functions = [item.function] + [definition.func for defined in definitions for definition in defined]
    for function in functions:
        function = inspect.unwrap(function)
        if not inspect.isfunction(function):
            continue
        reached = _reached_from(function)
        marks |= {MARK_OF_HELPER[name] for name in reached & MARK_OF_HELPER.keys()}
        marks |= {MARK_OF_WORD[word] for word in reached & MARK_OF_WORD.keys()}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("insights_target") == "postgres":
        marks.add("postgres")  # asked for by name (getfixturevalue), so not among the fixtures
    if marks & SERVICES:
        marks.add("services")
    return marks


# The modules whose setup is a user's whole path (a Docusaurus build, an ingest, a container build:
# one to two minutes of both cores each), longest first. scripts/test runs each module whole in one of
# three processes, taking the modules in the order below (``--no-loadscope-reorder``).
LONG_SETUPS = (
    "tests/e2e/test_docs_site.py",
    "tests/e2e/test_owner_path.py",
    "tests/deploy/test_container.py",
    "tests/e2e/test_demo.py",
)


def module_order(modules: dict[str, int]) -> list[str]:
    """The order the modules run in, from each module's number of tests: the rest by that number,
    most first (as pytest-xdist would order them), with the long setups spread among them: the first
    one first, the others at even intervals, so that no two start together and the last minutes are
    short modules that fill the processes evenly. Started together, three of them fought for the 2
    cores and the run took longer; left to the end, as xdist orders modules of few tests, the last
    one ran alone while the other processes idled."""
    long = [module for module in LONG_SETUPS if module in modules]
    rest = sorted((m for m in modules if m not in long), key=lambda m: -modules[m])
    ordered = list(rest)
    for index, module in reversed(list(enumerate(long))):
        ordered.insert(round(index * len(rest) / (len(long) + 1)), module)
    return ordered


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function):
            for name in sorted(needed_marks(item) - {mark.name for mark in item.iter_markers()}):
                item.add_marker(name)
    counts: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        counts[module] = counts.get(module, 0) + 1
    rank = {module: index for index, module in enumerate(module_order(counts))}
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])  # stable: a module's own order stays


_running: list[pytest.Item] = []  # the test being set up, for the check below


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _running[:] = [item]


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> None:
    """A fixture reached in a way the marking above cannot see (``getfixturevalue``) fails its test,
    rather than running unmarked where `-m "not ..."` promised it would not."""
    mark = MARK_OF_FIXTURE.get(fixturedef.argname)
    if mark and _running and _running[0].get_closest_marker(mark) is None:
        test, name = _running[0].nodeid, fixturedef.argname
        pytest.fail(f"{test} uses `{name}` without the `{mark}` mark", pytrace=False)


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
    demo's answers, for the e2e answer tests and the README screenshots. Indexed once per run; each
    test process serves its own copy."""
    return example_indexed_once(tmp_path_factory, build_example())


@pytest.fixture(scope="module")
def example_retriever(example_local: Settings) -> Iterator[Any]:
    """The example book's index opened once per test module."""
    from bookwise.retrieval.retriever import Retriever

    opened = Retriever.open(example_local)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def mcp_search(example_local: Settings, example_retriever: Any) -> Callable[[str], dict[str, Any]]:
    """The MCP `search` tool's result for a question over the example book: what `covered` says
    must agree with the chat's declines."""
    import anyio

    from bookwise.api.mcp import BookTools  # the MCP SDK only for the tests that use it
    from bookwise.validation import RequestLimits

    async def opened() -> Any:
        return example_retriever

    tools = BookTools(opened, RequestLimits.from_settings(example_local))

    def search(question: str) -> dict[str, Any]:
        found: dict[str, Any] = anyio.run(tools.search, question, {}, None)
        return found

    return search


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
    opened = open_insights_store(insights_target)
    assert isinstance(opened, SqlStore)
    try:
        yield opened
    finally:
        opened.close()
