"""`bookwise serve --site`: a built Docusaurus site served next to the API, as `docusaurus serve` would."""

import mimetypes
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bookwise.api.app import create_app
from bookwise.settings import Settings


@pytest.fixture
def client(tmp_path: Path, settings: Settings) -> Iterator[TestClient]:
    build = tmp_path / "build"
    files = {
        "index.html": "<h1>home</h1>",
        "404.html": "<h1>lost</h1>",
        "docs/intro/index.html": "<h1>intro</h1>",
        "docs/flat.html": "<h1>flat</h1>",
        "docs/v1.2/index.html": "<h1>dotted</h1>",
        "assets/js/main.abc123.js": "console.log(1)",
        ".env": "SECRET=1",
        ".git/config": "[core]",
        "docs/.intro.md.swp": "swap",
        ".well-known/security.txt": "Contact: mailto:sec@example.org",
        "llms.txt": "# Book",
        "docs/intro.md": "# Intro",
    }
    for relative, text in files.items():
        (build / relative).parent.mkdir(parents=True, exist_ok=True)
        (build / relative).write_text(text, encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    with TestClient(create_app(settings.model_copy(update={"site_dir": build}))) as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/", "<h1>home</h1>"),
        ("/docs/intro", "<h1>intro</h1>"),
        ("/docs/intro/", "<h1>intro</h1>"),
        ("/docs/flat", "<h1>flat</h1>"),
        ("/docs/v1.2", "<h1>dotted</h1>"),
    ],
)
def test_pages_are_served_without_redirects(client: TestClient, path: str, body: str) -> None:
    response = client.get(path, follow_redirects=False)
    assert (response.status_code, response.text) == (200, body)
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["cache-control"] == "no-cache"


def test_assets_are_cacheable(client: TestClient) -> None:
    response = client.get("/assets/js/main.abc123.js")
    assert response.status_code == 200
    assert "javascript" in response.headers["content-type"]
    assert "max-age" in response.headers["cache-control"]


@pytest.mark.parametrize(
    "path", ["/docs/missing", "/../secret.txt", "/%2e%2e/secret.txt", "/docs/..%2f..%2fsecret.txt"]
)
def test_unknown_and_escaping_paths_get_the_sites_404(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert (response.status_code, response.text) == (404, "<h1>lost</h1>")


def test_api_routes_win_over_the_site(client: TestClient) -> None:
    assert client.get("/api/health").json()["status"] == "ok"
    assert "Bookwise" in client.get("/widget.js").text


@pytest.mark.parametrize("path", ["/.env", "/.git/config", "/docs/.intro.md.swp", "/%2eenv", "/docs/../.env"])
def test_dotfiles_in_the_site_directory_are_not_served(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert (response.status_code, response.text) == (404, "<h1>lost</h1>")


def test_well_known_files_are_still_served(client: TestClient) -> None:
    assert client.get("/.well-known/security.txt").status_code == 200


@pytest.mark.parametrize("path", ["/api/nope", "/api/health/", "/api", "/api/chat/x"])
def test_unknown_api_paths_get_the_json_404_not_the_sites_page(client: TestClient, path: str) -> None:
    response = client.get(path, headers={"Host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 404 and "location" not in response.headers
    assert response.json()["error"]["code"] == "not_found"


def test_openapi_schema_and_docs_pages_are_off_by_default(client: TestClient, settings: Settings) -> None:
    for path in ("/openapi.json", "/docs", "/redoc", "/api/openapi.json", "/api/docs"):
        assert client.get(path).status_code == 404, path
    with TestClient(create_app(settings.model_copy(update={"api_docs": True}))) as documented:
        assert "/api/chat" in documented.get("/api/openapi.json").json()["paths"]
        assert documented.get("/api/docs").status_code == 200


@pytest.mark.parametrize(
    ("path", "content_type", "body"),
    [
        ("/llms.txt", "text/plain; charset=utf-8", "# Book"),
        ("/docs/intro.md", "text/markdown; charset=utf-8", "# Intro"),
    ],
)
def test_markdown_for_agents_is_served_as_text_even_without_a_system_md_type(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, path: str, content_type: str, body: str
) -> None:
    mimetypes.init()
    monkeypatch.delitem(mimetypes.types_map, ".md", raising=False)  # as on a system without it
    response = client.get(path)
    assert (response.status_code, response.text) == (200, body)
    assert response.headers["content-type"] == content_type
    assert response.headers["cache-control"] == "no-cache"  # rewritten on every deploy, like pages
