from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bookwise.retrieval.models import SectionResult
from bookwise.settings import Settings
from browser import launched_chromium
from examplesite import build_example, index_example_locally
from fakellm import FakeLLM, running_fake_llm

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
