"""Must-show 2 (llms part): on the real Docusaurus build of the example textbook, `bookwise llms`
writes a valid llms.txt whose every link is a twin, every twin sits next to a built page, and
`bookwise serve --site` serves them as Markdown."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from fastapi.testclient import TestClient

from bookwise.api.app import create_app
from bookwise.api.site import resolve
from bookwise.cli import main
from bookwise.settings import Settings
from examplesite import EXAMPLE_SITE, build_example

pytestmark = pytest.mark.docusaurus

ITEM = re.compile(r"^- \[[^\]]+\]\((?P<url>[^)\s]+)\)(?::\s.+)?$")


def with_llms(build_dir: Path, out: Path) -> Path:
    """A copy of the build (the session's build is shared) with `bookwise llms` run on it."""
    shutil.copytree(build_dir, out)
    assert main(["llms", str(EXAMPLE_SITE), "--out", str(out)]) == 0  # the build's manifest by default
    return out


def twin_paths(index: str) -> list[str]:
    lines = [line for line in index.splitlines() if line.strip()]
    assert lines[0] == "# Robot Motion" and lines[1].startswith("> ")
    paths = []
    for line in lines[2:]:
        if not line.startswith("## "):
            match = ITEM.match(line)
            assert match, line
            paths.append(unquote(urlsplit(match["url"]).path))
    return paths


def check_twins_match_built_pages(site: Path) -> int:
    paths = twin_paths((site / "llms.txt").read_text(encoding="utf-8"))
    for path in paths:
        assert (site / path.lstrip("/")).is_file(), f"{path}: no twin written"
    twins = [p for p in site.rglob("*.md")]
    for twin in twins:
        page = "/" + twin.relative_to(site).with_suffix("").as_posix()
        built = resolve(site.resolve(), page)
        assert built is not None and built.suffix == ".html", f"{twin}: no built page at {page}"
    return len(twins)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return with_llms(build_example(), tmp_path_factory.mktemp("example-llms") / "build")


def test_every_link_and_twin_matches_a_built_page(site: Path) -> None:
    assert check_twins_match_built_pages(site) >= 8


def test_serve_site_serves_llms_txt_and_twins(site: Path, settings: Settings) -> None:
    with TestClient(create_app(settings.model_copy(update={"site_dir": site}))) as client:
        index = client.get("/llms.txt")
        assert index.headers["content-type"] == "text/plain; charset=utf-8"
        for path in twin_paths(index.text):
            twin = client.get(path)
            assert twin.status_code == 200 and twin.headers["content-type"] == "text/markdown; charset=utf-8"
            assert twin.text.startswith("# ")
        assert client.get("/llms-full.txt").text.count("\nSource: http://127.0.0.1:8000/docs/") >= 8


def test_ingest_with_the_manifest_writes_llms_into_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One CI command: `ingest --manifest build/bookwise-manifest.json` used to leave the build without
    # its agents' Markdown until `bookwise llms` was run too, so "Copy page" failed on a fresh deploy.
    build = tmp_path / "build"
    shutil.copytree(build_example(), build)
    monkeypatch.setenv("BOOKWISE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BOOKWISE_EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("BOOKWISE_SUGGESTED_QUESTIONS", "0")
    manifest = str(build / "bookwise-manifest.json")
    assert main(["ingest", str(EXAMPLE_SITE), "--manifest", manifest, "--strict"]) == 0
    assert check_twins_match_built_pages(build) >= 8
    (build / "llms.txt").unlink()
    assert main(["ingest", str(EXAMPLE_SITE), "--manifest", manifest, "--no-llms"]) == 0
    assert not (build / "llms.txt").exists()
