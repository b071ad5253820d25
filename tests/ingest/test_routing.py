from pathlib import Path
from typing import Any

import pytest

from bookwise.ingest.routing import apply_trailing_slash, permalink, route_doc, strip_number_prefix
from bookwise.ingest.site import SiteConfig, read_site_config

# (source, front matter, doc id, permalink) for baseUrl /mysite/, routeBasePath docs (notes §3b).
TABLE: list[tuple[str, dict[str, Any], str, str]] = [
    ("intro.md", {}, "intro", "/mysite/docs/intro"),
    ("01-guides/index.md", {}, "guides/index", "/mysite/docs/guides/"),
    ("01-guides/02-install.md", {}, "guides/install", "/mysite/docs/guides/install"),
    ("api/api.md", {}, "api/api", "/mysite/docs/api/"),
    ("tutorial/README.md", {}, "tutorial/README", "/mysite/docs/tutorial/"),
    ("03-numbered/10-first.md", {}, "numbered/first", "/mysite/docs/numbered/first"),
    ("03-numbered/1.5-dotted.md", {}, "numbered/1.5-dotted", "/mysite/docs/numbered/1.5-dotted"),
    ("03-numbered/2_underscore.md", {}, "numbered/underscore", "/mysite/docs/numbered/underscore"),
    ("03-numbered/2023-date.md", {}, "numbered/date", "/mysite/docs/numbered/date"),
    ("misc/slug-abs.md", {"slug": "/absolute-slug"}, "misc/slug-abs", "/mysite/docs/absolute-slug"),
    ("misc/slug-rel.md", {"slug": "relative-slug"}, "misc/slug-rel", "/mysite/docs/misc/relative-slug"),
    ("misc/slug-up.md", {"slug": "../up-one"}, "misc/slug-up", "/mysite/docs/up-one"),
    ("misc/with-id.md", {"id": "custom-id"}, "misc/custom-id", "/mysite/docs/misc/custom-id"),
    ("misc/doc with space.md", {}, "misc/doc with space", "/mysite/docs/misc/doc with space"),
    ("CamelCase.md", {}, "CamelCase", "/mysite/docs/CamelCase"),
    ("01-guides/guides.md", {}, "guides/guides", "/mysite/docs/guides/guides"),
]


@pytest.mark.parametrize(("source", "fm", "doc_id", "url"), TABLE)
def test_permalinks_match_docusaurus(source: str, fm: dict[str, Any], doc_id: str, url: str) -> None:
    route = route_doc(source, fm)
    assert route.doc_id == doc_id
    assert permalink("/mysite/docs", route.slug) == url


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("02-install", ("install", 2)),
        ("1.5-dotted", ("1.5-dotted", None)),
        ("2023-date", ("date", 2023)),
        ("2_underscore", ("underscore", 2)),
        ("plain", ("plain", None)),
        ("10 - spaced", ("spaced", 10)),
    ],
)
def test_number_prefixes(name: str, expected: tuple[str, int | None]) -> None:
    assert strip_number_prefix(name) == expected


def test_number_prefix_parsing_can_be_disabled() -> None:
    route = route_doc("01-guides/02-install.md", {"parse_number_prefixes": False})
    assert route.doc_id == "01-guides/02-install"


def test_sidebar_position_from_prefix_or_front_matter() -> None:
    assert route_doc("03-numbered/10-first.md", {}).sidebar_position == 10
    assert route_doc("03-numbered/10-first.md", {"sidebar_position": 2}).sidebar_position == 2


@pytest.mark.parametrize(
    ("setting", "url", "expected"),
    [
        (None, "/docs/intro", "/docs/intro"),
        (True, "/docs/intro", "/docs/intro/"),
        (False, "/docs/guides/", "/docs/guides"),
        (False, "/mysite/", "/mysite/"),
    ],
)
def test_trailing_slash(setting: bool | None, url: str, expected: str) -> None:
    assert apply_trailing_slash(url, setting, "/mysite/") == expected


def test_versions_and_locales_give_docusaurus_paths(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "versioned_docs" / "version-1.0").mkdir(parents=True)
    (tmp_path / "i18n/fr/docusaurus-plugin-content-docs/current").mkdir(parents=True)
    (tmp_path / "versions.json").write_text('["1.0"]')
    (tmp_path / "docusaurus.config.js").write_text(
        "module.exports = {url: 'https://x.test', baseUrl: '/mysite/', trailingSlash: false,\n"
        "  i18n: {defaultLocale: 'en', locales: ['en', 'fr']},\n"
        "  presets: [['classic', {docs: {routeBasePath: 'docs', sidebarPath: './sidebars.js'}}]]};\n"
    )
    site = read_site_config(tmp_path)
    assert (site.url, site.base_url, site.trailing_slash, site.locales) == (
        "https://x.test",
        "/mysite/",
        False,
        ("en", "fr"),
    )
    paths = {(s.version, s.locale): s.version_path for s in site.docs_sources()}
    assert paths == {
        ("current", "en"): "/mysite/docs/next",
        ("1.0", "en"): "/mysite/docs",
        ("current", "fr"): "/mysite/fr/docs/next",
    }


def test_flags_override_what_the_config_cannot_state(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docusaurus.config.ts").write_text(
        "export default {url: process.env.URL, baseUrl: getBase()}"
    )
    site = read_site_config(tmp_path).with_overrides(base_url="/b/", route_base_path="/")
    assert site.base_url == "/b/"
    assert [s.version_path for s in site.docs_sources()] == ["/b/"]


def test_docs_only_mode() -> None:
    site = SiteConfig(site_dir=Path("."), route_base_path="/")
    assert site.locale_base_url("en") == "/"
