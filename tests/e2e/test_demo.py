"""The README's first command, `scripts/demo`, on a fresh copy of the repository: the example textbook
installed, built, indexed and served with the widget, and a question answered with a citation that
lands on a heading of the served page.

The copy holds the checkout's files as git sees them (nothing ignored: no node_modules, no build, no
index) and shares its Python environment, which `scripts/install` builds and other tests exercise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import local_http
from apiserver import parse_sse, serving_process
from nginx import free_port

pytestmark = pytest.mark.docusaurus

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How do I send a velocity command to the robot from the terminal?"
EXPECTED = "/docs/foundations/differential-drive#reading-the-cmd_vel-topic"
# npm ci of the example, its Docusaurus build, the ingest with the embedder adapted to the book.
DEMO_READY_S = 900


def fresh_copy(into: Path) -> Path:
    """The checkout's files that git tracks or would track, as they are in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted in the working tree is still listed as cached
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    (into / ".venv").symlink_to(ROOT / ".venv")
    return into


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    checkout = fresh_copy(tmp_path_factory.mktemp("demo"))
    assert not (checkout / "website-plugin" / "node_modules").exists()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOOKWISE_", "PYTHON"))}
    env |= {"BOOKWISE_API_PORT": str(port), "DOCUSAURUS_TELEMETRY_DISABLED": "1"}
    url = f"http://127.0.0.1:{port}"
    log = checkout / "demo.log"
    with serving_process(
        [str(checkout / "scripts" / "demo")], cwd=checkout, env=env, url=url, log=log, within_s=DEMO_READY_S
    ):
        yield url


def test_the_demo_serves_the_example_book_with_the_widget_from_a_fresh_checkout_regression(demo: str) -> None:
    """On a fresh clone the example's build failed: it loads the plugin through a link to
    website-plugin, whose own dependency (htmlparser2) only the test setup installed."""
    page = local_http.get(f"{demo}/docs/intro", timeout=30)
    assert page.status_code == 200
    assert re.search(r'<script src="?/widget\.js"?[^>]*data-bookwise', page.text)  # minified: unquoted
    assert local_http.get(f"{demo}/widget.js", timeout=30).status_code == 200


def test_the_demo_answers_with_a_citation_that_lands_on_its_heading(demo: str) -> None:
    with local_http.client(timeout=120) as client:
        with client.stream("POST", f"{demo}/api/chat", json={"question": QUESTION}) as response:
            assert response.status_code == 200
            events = list(parse_sse(response.iter_lines()))
        names = [name for name, _ in events]
        assert names[:2] == ["meta", "sources"] and names[-1] == "done"
        first = urlsplit(events[1][1]["sources"][0]["url"])
        assert f"{first.path}#{first.fragment}" == EXPECTED
        served = client.get(f"{demo}{first.path}").text
    assert re.search(rf'<h[1-6][^>]*\bid="?{re.escape(first.fragment)}"?[\s>]', served)
