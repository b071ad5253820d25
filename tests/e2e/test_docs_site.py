"""The manual as a Docusaurus site with Bookwise on it: website/ built by real Docusaurus from docs/*.md,
ingested by `bookwise ingest --manifest --strict` with the local embedder, served with the API, and
asked in Chromium; each answer's first citation must land on the heading that answers it.

The answers are extractive (no LLM): what a reader of the docs site gets without a model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

import local_http
from apiserver import running_api
from bookwise.settings import Settings
from browser import page_without_errors, part, visit, wait_state
from docusite import build_fixture_site

pytestmark = pytest.mark.docusaurus

ROOT = Path(__file__).resolve().parents[2]
WEBSITE = ROOT / "website"
DOCS = ROOT / "docs"
WORKFLOW = ROOT / ".github" / "workflows" / "docs.yml"
BUILD_STAMP = WEBSITE / "build" / ".bookwise-build-stamp"
LOCAL_ANSWER_MS = 60_000  # passages are ranked with the local model on CPU, shared with the rest of the suite

QUESTIONS = [
    ("How do I put Bookwise behind an nginx proxy?", "/operations", "deploying-behind-nginx"),
    ("How do I refresh the index from CI on every deploy?", "/ingest", "ingesting-in-ci-the-build-manifest"),
    ("How do I run Bookwise in a container?", "/container", "one-container"),
]


def build_docs_site() -> Path:
    """website/ built; its pages live in ../docs, which the build helper's freshness check does not
    watch, so a page newer than the last build forces a new one."""
    if stamp_is_older_than_a_page():
        BUILD_STAMP.unlink(missing_ok=True)
    return build_fixture_site(WEBSITE)


def stamp_is_older_than_a_page() -> bool:
    if not BUILD_STAMP.is_file():
        return True
    newest = max(page.stat().st_mtime for page in DOCS.glob("*.md"))
    return newest >= BUILD_STAMP.stat().st_mtime


def ingest_command(data_dir: Path, build_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The command the docs workflow runs, with the local embedder (not adapted to the site: faster,
    and not what is tested here) into a data dir of the test's own."""
    bookwise = str(Path(sys.executable).with_name("bookwise"))
    command = [
        bookwise, "ingest", str(WEBSITE), "--manifest", str(build_dir / "bookwise-manifest.json"), "--strict"
    ]  # fmt: skip
    env = os.environ | {
        "BOOKWISE_DATA_DIR": str(data_dir),
        "BOOKWISE_EMBEDDING_PROVIDER": "local",
        "BOOKWISE_EMBEDDING_ADAPT": "false",
        "BOOKWISE_INGEST_EXTRA_ROOTS": str(DOCS),
    }
    return command, env


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    build_dir = build_docs_site()
    data_dir = tmp_path_factory.mktemp("docs-site")
    command, env = ingest_command(data_dir, build_dir)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=data_dir,
        embedding_provider="local",
        embedding_adapt=False,
        llm_base_url=None,
        rate_limit_per_minute=10_000,
        site_dir=build_dir,
    )
    with running_api(settings) as url:
        # The first question loads the local model; on a busy CI machine that alone can take seconds.
        local_http.post(f"{url}/api/search", json={"query": QUESTIONS[0][0]}, timeout=120).raise_for_status()
        yield url


def test_the_docs_site_serves_llms_txt_and_markdown_twins(docs_site: str) -> None:
    llms = local_http.get(f"{docs_site}/llms.txt", timeout=10)
    assert llms.status_code == 200
    assert "/operations" in llms.text
    twin = local_http.get(f"{docs_site}/operations.md", timeout=10)
    assert twin.status_code == 200
    assert "## Deploying behind nginx" in twin.text


@pytest.mark.parametrize(("question", "page_url", "anchor"), QUESTIONS)
def test_a_question_to_the_docs_lands_on_its_heading(
    docs_site: str, browser: Any, question: str, page_url: str, anchor: str
) -> None:
    with page_without_errors(browser) as page:
        visit(page, f"{docs_site}/")
        part(page, "launcher").click()
        part(page, "input").fill(question)
        page.keyboard.press("Enter")
        wait_state(page, "done", LOCAL_ANSWER_MS)
        first = part(page, "source-link").first
        href = urlsplit(first.get_attribute("href") or "")
        assert (href.path, href.fragment) == (page_url, anchor)
        first.click()
        page.wait_for_function(f"() => location.pathname === {page_url!r}")
        page.locator(f"[id={anchor!r}]").wait_for()
        # The reader lands in that heading's section (on the quoted passage, which may be below the
        # heading itself): the heading is above the viewport's bottom, the next heading below its top.
        page.wait_for_function(
            """(id) => {
              const heading = document.getElementById(id);
              const all = [...document.querySelectorAll('.theme-doc-markdown :is(h2, h3, h4)')];
              const next = all[all.indexOf(heading) + 1];
              const top = heading.getBoundingClientRect().top;
              return top < window.innerHeight && (!next || next.getBoundingClientRect().top > 0);
            }""",
            arg=anchor,
        )


def test_the_docs_workflow_builds_ingests_strictly_with_this_repositorys_action() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert workflow["concurrency"]["group"]
    steps = [step for job in workflow["jobs"].values() for step in job.get("steps", [])]
    action = next(step for step in steps if step.get("uses") == "./")
    assert action["with"]["manifest"].endswith("build/bookwise-manifest.json")
    assert str(action["with"].get("strict", "true")).lower() == "true"
