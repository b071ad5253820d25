"""The site owner's path, as the README's "Add Bookwise to your Docusaurus site" gives it, on a site made
today by the real ``create-docusaurus`` (latest 3.x, classic template, ``future.v4`` on): the plugin
installed from the packed tarball, Bookwise from the wheel in a virtual environment that has no
checkout on its path, the documented CI command with ``--strict``, ``bookwise serve``, and a question
asked in Chromium whose citation lands on its heading.

The slow parts (npm's install of the new site, pip's of the wheel with CPU torch) run side by side.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import bookwise
import local_http
from apiserver import parse_sse, serving_process, stop_group
from browser import page_without_errors, part, visit
from docusite import read_built_pages, unresolved
from nginx import free_port
from release import release_once

pytestmark = pytest.mark.docusaurus

ROOT = Path(__file__).resolve().parents[2]
VERSION = bookwise.__version__
CREATE = [
    "npx",
    "--yes",
    "create-docusaurus@3",
    "my-site",
    "classic",
    "--javascript",
    "--package-manager",
    "npm",
    "--skip-install",
]
# The new site's packages come from npm's cache where it holds them: the template pins the Docusaurus
# packages, so only the ranges of their dependencies may resolve to a cached release rather than one
# published since (measured on a warm cache: 88 s for a plain install, 32 s).
NPM_INSTALL = ["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
TORCH = "torch==2.13.0"
WHEEL = f"bookwise-{VERSION}-py3-none-any.whl"
TARBALL = f"docusaurus-plugin-bookwise-{VERSION}.tgz"
# What the README's steps say, with <version> filled in: the test runs these, so they cannot drift apart.
README_STEPS = [
    "scripts/release",
    f"npm install ./{TARBALL}",
    "plugins: [['docusaurus-plugin-bookwise', {apiUrl: 'http://localhost:8000'}]],",
    f"pip install {TORCH}",
    f'pip install "{WHEEL}[local]"',
    "npm run build && bookwise ingest . --manifest build/bookwise-manifest.json --strict",
    "BOOKWISE_ALLOWED_ORIGINS=http://localhost:3000 bookwise serve",
    "npm run serve",
]
QUESTION = "How do I release a new version of my docs?"
EXPECTED = "/docs/tutorial-extras/manage-docs-versions#create-a-docs-version"
TIMEOUT_S = 1200


@dataclass
class OwnerSite:
    site: Path
    venv: Path
    dist: Path
    api: str
    site_url: str
    ingest: dict[str, Any]


def owner_env(**extra: str) -> dict[str, str]:
    """The owner's shell: no checkout on PYTHONPATH, no test-only settings, npm without prompts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOOKWISE_", "PYTHON"))}
    return env | {"CI": "true", "DOCUSAURUS_TELEMETRY_DISABLED": "1"} | extra


def run(cmd: list[str] | str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=owner_env(**env),
        shell=isinstance(cmd, str),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{cmd} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc


@contextmanager
def side_by_side(cmd: str, cwd: Path) -> Iterator[None]:
    """Run ``cmd`` in the background while the block runs; fail if it failed."""
    log = cwd / ".side-by-side.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=owner_env(),
            shell=True,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so a failure stops the shell's children too
        )
        try:
            yield
            assert proc.wait(timeout=TIMEOUT_S) == 0, f"{cmd} failed:\n{log.read_text()[-4000:]}"
        finally:
            stop_group(proc, within_s=5)


@contextmanager
def serving(cmd: list[str], cwd: Path, url: str, path: str, **env: str) -> Iterator[None]:
    log = cwd / f".serving-{urlsplit(url).port}.log"
    with serving_process(cmd, cwd=cwd, env=owner_env(**env), url=url, log=log, path=path):
        yield


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnerSite]:
    work = tmp_path_factory.mktemp("owner")
    dist = release_once(tmp_path_factory)
    venv = work / ".venv"
    install = (
        f"{sys.executable} -m venv {venv} && {venv}/bin/pip install --quiet --no-compile {TORCH}"
        f' && {venv}/bin/pip install --quiet --no-compile "{dist / WHEEL}[local]"'
    )
    with side_by_side(install, work):
        run(CREATE, work)
        site = work / "my-site"
        config = (site / "docusaurus.config.js").read_text(encoding="utf-8")
        assert re.search(r"future:\s*\{\s*v4:\s*true", config), "the template no longer turns future.v4 on"
        run(NPM_INSTALL, site)
        (site / TARBALL).write_bytes((dist / TARBALL).read_bytes())
        run([*NPM_INSTALL, f"./{TARBALL}"], site)
    api_port, site_port = free_port(), free_port()
    api, site_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{site_port}"
    plugins = f"  plugins: [['docusaurus-plugin-bookwise', {{apiUrl: '{api}'}}]],\n\n  presets: ["
    (site / "docusaurus.config.js").write_text(config.replace("  presets: [", plugins, 1), encoding="utf-8")
    activated = f"{venv}/bin:{os.environ['PATH']}"
    ingest = run(
        "npm run build && bookwise ingest . --manifest build/bookwise-manifest.json --strict --json",
        site,
        PATH=activated,
    )
    report = json.loads(ingest.stdout[ingest.stdout.index("\n{") + 1 :])
    with serving(
        [str(venv / "bin" / "bookwise"), "serve", "--port", str(api_port)],
        site,
        api,
        "/api/ready",
        BOOKWISE_ALLOWED_ORIGINS=site_url,
    ):
        with serving(
            ["npm", "run", "serve", "--", "--port", str(site_port), "--host", "127.0.0.1", "--no-open"],
            site,
            site_url,
            "/docs/intro",
        ):
            yield OwnerSite(site, venv, dist, api, site_url, report)


def test_readme_owner_path_is_the_path_this_test_follows() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = readme.index("<!-- owner-path -->"), readme.index("<!-- /owner-path -->")
    steps = readme[start:end].replace("<version>", VERSION)
    assert [step for step in README_STEPS if step not in steps] == []


def test_release_artifacts_carry_what_users_need(owner: OwnerSite) -> None:
    with zipfile.ZipFile(owner.dist / WHEEL) as wheel:
        names = set(wheel.namelist())
    assert {"bookwise/api/static/widget.js", "bookwise/api/static/widget-markdown.js"} <= names
    assert (
        "bookwise/generation/prompts/system.j2" in names
        and "bookwise/retrieval/sufficiency_model.json" in names
    )
    assert not [name for name in names if name.startswith(("tests/", "widget/", "website-plugin/"))]
    with tarfile.open(owner.dist / f"bookwise-{VERSION}.tar.gz") as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "LICENSE", "README.md", "backend/bookwise/cli.py"} <= members
    assert not [m for m in members if "node_modules" in m or m.startswith(("tests/", ".venv"))]
    with tarfile.open(owner.dist / TARBALL) as tarball:
        packed = {m.name.removeprefix("package/") for m in tarball.getmembers()}
    assert {"package.json", "index.js", "README.md", "src/manifest.js"} <= packed
    assert not [p for p in packed if p.startswith(("test/", "example/", "node_modules/"))]


def test_the_wheel_runs_from_a_clean_environment_with_one_version(owner: OwnerSite) -> None:
    python = owner.venv / "bin" / "python"
    where = run([str(python), "-c", "import bookwise; print(bookwise.__file__)"], owner.site).stdout.strip()
    assert Path(where).is_relative_to(owner.venv) and not Path(where).is_relative_to(ROOT)
    version = run([str(owner.venv / "bin" / "bookwise"), "--version"], owner.site).stdout.strip()
    assert version == f"bookwise {VERSION}"
    assert local_http.get(f"{owner.api}/api/config", timeout=10).json()["version"] == VERSION
    widget = local_http.get(f"{owner.api}/widget.js", timeout=10)
    assert widget.status_code == 200 and widget.headers["content-type"].startswith("text/javascript")


def test_the_ci_command_passes_strict_on_a_future_v4_build(owner: OwnerSite) -> None:
    report = owner.ingest
    assert report["errors"] == [] and report["docs_processed"] >= 9
    manifest = report["manifest"]
    assert manifest["mismatches"] == [] and manifest["headings"] >= 20, manifest
    assert (
        manifest["headings_agreeing"] == manifest["headings"]
        and manifest["docs_agreeing"] == manifest["docs"]
    )
    build = owner.site / "build"
    assert (build / "llms.txt").is_file() and (build / "docs" / "intro.md").is_file()
    # Every citation Bookwise can give resolves to a page and heading of the built site.
    pages = read_built_pages(build)
    hits = local_http.post(f"{owner.api}/api/search", json={"query": QUESTION, "top_k": 10}, timeout=30)
    assert hits.status_code == 200, hits.text
    urls = [urlsplit(hit["url"]) for hit in hits.json()["sources"]]
    assert len(urls) >= 5
    assert unresolved([f"{u.path}#{u.fragment}" if u.fragment else u.path for u in urls], pages) == []


def test_a_reader_asks_and_the_citation_lands_on_its_heading(owner: OwnerSite, browser: Any) -> None:
    with page_without_errors(browser) as page:
        visit(page, f"{owner.site_url}/docs/intro")
        assert page.evaluate("q => window.Bookwise.ask(q)", QUESTION) == "done"
        cite = part(page, "answer").last.locator("[data-bw=cite]").first
        href = urlsplit(cite.get_attribute("href") or "")
        assert f"{href.path}#{href.fragment}" == EXPECTED
        cite.click()
        page.wait_for_function(f"() => location.pathname + location.hash === {EXPECTED!r}")
        heading = page.locator(f"#{href.fragment}")
        assert heading.evaluate("h => /^H[1-6]$/.test(h.tagName)")
        top = heading.evaluate("h => h.getBoundingClientRect().top")
        assert 0 <= top < page.viewport_size["height"] / 2  # scrolled to, near the top of the window


def test_the_answer_stream_from_the_sites_origin(owner: OwnerSite) -> None:
    with local_http.client(timeout=60) as client:
        with client.stream(
            "POST", f"{owner.api}/api/chat", json={"question": QUESTION}, headers={"Origin": owner.site_url}
        ) as response:
            assert response.status_code == 200
            assert response.headers["access-control-allow-origin"] == owner.site_url
            events = list(parse_sse(response.iter_lines()))
    names = [name for name, _ in events]
    assert names[:2] == ["meta", "sources"] and names[-1] == "done"
    first = events[1][1]["sources"][0]
    assert urlsplit(first["url"]).path + "#" + urlsplit(first["url"]).fragment == EXPECTED
