"""llms.txt, llms-full.txt and the .md twins, written from what ingestion parsed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from bookwise.cli import main
from bookwise.ingest.llms import (
    LLMS_MAX_CHARS,
    BookInfo,
    book_documents,
    llms_index,
    read_book,
    render_page,
    source_links,
    twin_file,
    twin_url,
    write_llms,
)
from bookwise.ingest.manifest import load_manifests
from bookwise.ingest.models import Block, Document, Section
from bookwise.ingest.pipeline import ChunkingParams, ingest_site
from bookwise.ingest.site import SiteConfig, read_site_config
from docusite import read_built_pages, unresolved
from examplesite import EXAMPLE_SITE, MANIFEST_NAME, build_example

FIXTURE_SITE = Path(__file__).resolve().parents[1] / "fixtures" / "docusite"
PARAMS = ChunkingParams(10_000, 0, 0, 10_000, lambda text: len(text.split()))
LINK_ITEM = re.compile(r"^- \[(?:[^\]\\]|\\.)+\]\((?P<url>[^)\s]+)\)(?::\s.+)?$")


def validate_llms_txt(text: str) -> list[str]:
    """llmstxt.org's shape: an H1 first, an optional `>` summary, then only `##` sections whose
    lines are `- [name](url)` items with an optional `: note`. Returns the links."""
    lines = text.splitlines()
    assert lines[0].startswith("# ") and lines[0][2:].strip(), "the H1 comes first"
    rest = [line for line in lines[1:] if line.strip()]
    if rest and rest[0].startswith("> "):
        rest = rest[1:]
    assert rest and rest[0].startswith("## "), "then sections"
    links: list[str] = []
    for line in rest:
        if line.startswith("## "):
            assert line[3:].strip(), "a section has a name"
            continue
        match = LINK_ITEM.match(line)
        assert match, f"not a link item: {line!r}"
        links.append(match["url"])
    return links


def built_path(out: Path, url: str, site_url: str, base_url: str) -> Path:
    assert url.startswith(site_url)
    path = unquote(urlsplit(url).path)
    base = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
    assert path.startswith(base)
    return out / path[len(base) :]


def write(site_dir: Path, out: Path) -> tuple[SiteConfig, list[Document]]:
    site = read_site_config(site_dir)
    documents = ingest_site(site, PARAMS).documents
    write_llms(
        documents, site, BookInfo("The Book", "What it is about", site.url.rstrip("/"), site.base_url), out
    )
    return site, documents


@pytest.mark.parametrize("site_dir", [EXAMPLE_SITE, FIXTURE_SITE], ids=["example", "fixture"])
def test_llms_txt_is_valid_and_every_link_is_a_written_twin(site_dir: Path, tmp_path: Path) -> None:
    site, documents = write(site_dir, tmp_path)
    text = (tmp_path / "llms.txt").read_text(encoding="utf-8")
    assert len(text) <= LLMS_MAX_CHARS
    links = validate_llms_txt(text)
    assert text.startswith("# The Book\n\n> What it is about\n")
    listed = [d for d in documents if not d.unlisted]
    assert len(links) == len(listed) >= 8
    for link in links:
        assert link.endswith(".md")
        assert built_path(tmp_path, link, site.url.rstrip("/"), site.base_url).is_file(), link
    twins = sorted(tmp_path.rglob("*.md"))
    assert len(twins) == len(documents)  # unlisted pages get a twin too, just no line in llms.txt


def test_example_sections_follow_the_sidebar_modules_with_descriptions(tmp_path: Path) -> None:
    write(EXAMPLE_SITE, tmp_path)
    text = (tmp_path / "llms.txt").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", text, flags=re.M)
    assert sections == ["Docs", "Module 1: Foundations", "Module 2: Sensing", "Module 3: Control"]
    assert (
        "- [PID Control](http://127.0.0.1:8000/docs/control/pid-control.md): Feedback control with "
        "proportional" in text
    )
    titles = re.findall(r"^- \[([^\]]+)\]", text, flags=re.M)
    assert titles[:3] == ["Welcome", "Coordinate Frames and Poses", "Differential Drive Kinematics"]


def test_twins_keep_title_headings_and_code_and_drop_jsx_and_imports(tmp_path: Path) -> None:
    write(EXAMPLE_SITE, tmp_path)
    twin = (tmp_path / "docs/foundations/differential-drive.md").read_text(encoding="utf-8")
    assert twin.startswith(
        "# Differential Drive Kinematics\n\nSource: http://127.0.0.1:8000/docs/foundations/"
    )
    assert "\n## From wheel speeds to body velocity {#forward-kinematics}\n" in twin
    assert '```python title="diff_drive.py"\n' in twin and twin.count("```") % 2 == 0
    assert "def wheel_speeds(v, omega" in twin
    for jsx in ("import Tabs", "<Tabs", "<TabItem", "</TabItem>", "<details", "<summary"):
        assert jsx not in twin


def test_twins_and_llms_full_keep_the_heading_ids_agents_link_to(tmp_path: Path) -> None:
    """Regression: the `.md` twins and llms-full.txt dropped the heading ids (`{#ekf}`), so an agent
    reading them could not build the `url#anchor` deep links the site and the MCP tools cite. Every
    section heading now ends with its id, as `{#id}`; the page's own title has none (the page URL)."""
    site, documents = write(EXAMPLE_SITE, tmp_path)
    twin = (tmp_path / "docs/sensing/kalman-filter.md").read_text(encoding="utf-8")
    full = (tmp_path / "llms-full.txt").read_text(encoding="utf-8")
    ekf = "\n## Beyond one dimension: the extended Kalman filter {#ekf}\n"
    assert ekf in twin and ekf in full
    assert twin.startswith("# The Kalman Filter\n")
    for document in documents:
        lines = twin_file(tmp_path, document.url, site.base_url).read_text(encoding="utf-8").split("\n")
        for section in document.sections:
            if section.heading and section.level > 1:
                assert f"{'#' * section.level} {section.heading} {{#{section.anchor}}}" in lines


def test_fixture_twins_strip_esm_and_keep_tables(tmp_path: Path) -> None:
    write(FIXTURE_SITE, tmp_path)
    tabs = (tmp_path / "docs/content/tabs.md").read_text(encoding="utf-8")
    assert tabs.startswith("# Tabs And Details\n")
    assert "### With npm" in tabs and "| name | value |" in tabs
    assert not re.search(r"^(import|export) ", tabs, flags=re.M)
    assert "<Tabs" not in tabs and "{/*" not in tabs
    esm = (tmp_path / "docs/content/md-with-esm.md").read_text(encoding="utf-8")
    assert not re.search(r"^(import|export) ", esm, flags=re.M)


def test_llms_full_is_every_listed_twin_in_sidebar_order(tmp_path: Path) -> None:
    site, documents = write(EXAMPLE_SITE, tmp_path)
    full = (tmp_path / "llms-full.txt").read_text(encoding="utf-8")
    index = (tmp_path / "llms.txt").read_text(encoding="utf-8")
    position = 0
    for link in validate_llms_txt(index):
        twin = built_path(tmp_path, link, site.url.rstrip("/"), site.base_url).read_text(encoding="utf-8")
        found = full.find(twin, position)
        assert found >= position, link
        position = found + len(twin)


@pytest.mark.parametrize(
    ("url", "base", "twin"),
    [
        ("/docs/intro", "/", "/docs/intro.md"),
        ("/docs/intro/", "/", "/docs/intro.md"),
        ("/docs/intro#setup", "/", "/docs/intro.md"),
        ("/mysite/docs/guides/", "/mysite/", "/mysite/docs/guides.md"),
        ("/", "/", "/index.md"),
        ("/mysite/", "/mysite/", "/mysite/index.md"),
        ("/mysite", "/mysite/", "/mysite/index.md"),
    ],
)
def test_twin_url_rule(url: str, base: str, twin: str, tmp_path: Path) -> None:
    assert twin_url(url, base) == twin
    assert twin_file(tmp_path, url, base) == tmp_path / twin[len(base) :]


def _page(n: int, module: str, description: str) -> Document:
    body = Block(f"Text of page {n}.", 0, 10)
    section = Section("k", "", "", 1, "", (f"Page {n}",), 0, 10, (body,))
    return Document(
        doc_path=f"m/p{n}.md",
        doc_id=f"m/p{n}",
        url=f"/docs/{module.lower().replace(' ', '-')}/page-number-{n}",
        title=f"Page number {n} of the generated book",
        description=description,
        tags=(),
        sidebar_label=None,
        sidebar_position=float(n),
        module=module,
        chapter="",
        version="current",
        locale="en",
        content_type="prose",
        sections=(section,),
    )


def _book(pages: int, description: str, per_module: int = 50) -> list[Document]:
    return [_page(n, f"Module {n // per_module}", description) for n in range(pages)]


BOOK = BookInfo("Huge", "A generated book", "https://example.test", "/")


@pytest.mark.parametrize(
    ("pages", "description", "per_module", "fallback"),
    [
        (100, "A short note.", 50, "none"),
        (300, "A long description of the page that repeats itself. " * 4, 50, "no_descriptions"),
        (3000, "A short note.", 50, "per_section"),
        (3000, "A short note.", 3000, "truncated"),  # one huge section: nothing to split
        (8000, "A short note.", 2, "truncated"),  # too many sections for one line each
    ],
)
def test_huge_books_fall_back_and_stay_under_the_cap(
    pages: int, description: str, per_module: int, fallback: str
) -> None:
    index = llms_index(_book(pages, description, per_module), BOOK, LLMS_MAX_CHARS)
    assert index.fallback == fallback
    assert len(index.text) <= LLMS_MAX_CHARS
    links = validate_llms_txt(index.text)
    if fallback == "truncated":
        assert links[-1] == "https://example.test/llms-full.txt"
        assert len(links) - 1 == index.listed < pages
        assert f"{pages - index.listed} of {pages} pages are not listed here" in index.text
        assert len(index.text) > LLMS_MAX_CHARS - 200  # the cap is used, not wasted
    elif fallback == "per_section":
        assert len(links) == len(index.parts) == pages // per_module
        assert [link.removeprefix("https://example.test/") for link in links] == list(index.parts)
        part_links = [link for part in index.parts.values() for link in validate_llms_txt(part)]
        assert len(part_links) == index.listed == pages  # every page one hop away, with its note
        assert all(len(part) <= LLMS_MAX_CHARS for part in index.parts.values())
        assert "A short note." in next(iter(index.parts.values()))
    else:
        assert len(links) == index.listed == pages
        assert (description.strip()[:20] in index.text) == (fallback == "none")


def test_truncation_respects_a_small_cap() -> None:
    index = llms_index(_book(200, "note", per_module=200), BOOK, 2_000)
    assert index.fallback == "truncated" and 0 < index.listed < 200 and len(index.text) <= 2_000
    validate_llms_txt(index.text)


def test_per_section_lists_are_written_beside_llms_txt(tmp_path: Path) -> None:
    site = SiteConfig(site_dir=tmp_path / "site", url="https://example.test")
    (tmp_path / "site/docs").mkdir(parents=True)
    report = write_llms(_book(200, "A short note.", per_module=20), site, BOOK, tmp_path / "out", 5_000)
    assert report.fallback == "per_section" and report.listed == 200
    for link in validate_llms_txt((tmp_path / "out/llms.txt").read_text(encoding="utf-8")):
        part = (tmp_path / "out" / link.removeprefix("https://example.test/")).read_text(encoding="utf-8")
        for twin in validate_llms_txt(part):
            assert (tmp_path / "out" / twin.removeprefix("https://example.test/")).is_file()


def test_bookwise_llms_writes_into_the_build_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "build"
    out.mkdir()
    assert main(["llms", str(EXAMPLE_SITE), "--out", str(out)]) == 0
    assert "8 .md twins" in capsys.readouterr().out
    index = (out / "llms.txt").read_text(encoding="utf-8")
    assert index.startswith("# Robot Motion\n\n> A short course on how mobile robots move")
    assert (out / "llms-full.txt").is_file() and (out / "docs/intro.md").is_file()


def test_links_between_pages_become_the_pages_absolute_urls(tmp_path: Path) -> None:
    site, documents = write(EXAMPLE_SITE, tmp_path)
    pages = {site.url.rstrip("/") + d.url for d in documents}
    twin = (tmp_path / "docs/foundations/differential-drive.md").read_text(encoding="utf-8")
    assert "[coordinate frames](http://127.0.0.1:8000/docs/foundations/coordinate-frames)" in twin
    targets = re.findall(r"\]\((http[^)\s]+)\)", "".join(p.read_text() for p in tmp_path.rglob("*.md")))
    assert len(targets) >= 10
    for target in targets:
        assert target.split("#")[0] in pages, target


def test_links_in_code_and_unknown_files_are_left_as_written() -> None:
    blocks = (
        Block("See [b](b.md#x), [c](/docs/c) and [gone](gone.md).", 0, 10),
        Block("```md\n[b](b.md)\n```", 10, 20, kind="code"),
    )
    page = replace(
        _page(1, "M", ""), doc_path="m/a.md", sections=(Section("k", "", "", 1, "", (), 0, 20, blocks),)
    )
    other = replace(_page(2, "M", ""), doc_path="m/b.md", url="/docs/m/b")
    text = render_page(page, BOOK, source_links([page, other], BOOK))
    assert "[b](https://example.test/docs/m/b#x)" in text
    assert "[c](https://example.test/docs/c)" in text
    assert "[gone](gone.md)" in text
    assert "```md\n[b](b.md)\n```" in text


def test_bookwise_llms_refuses_a_missing_build_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["llms", str(EXAMPLE_SITE), "--out", str(tmp_path / "nope")]) == 1
    assert "not found" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()


def test_sidebar_order_puts_category_pages_first_and_unpositioned_items_last(
    make_site: Callable[[dict[str, str]], Path],
) -> None:
    site_dir = make_site(
        {
            "docs/zeta.md": "# Zeta\n",  # no position: after every positioned item of its level
            "docs/b-folder/_category_.json": '{"label": "B", "position": 1}',
            "docs/b-folder/02-two.md": "# Two\n",
            "docs/b-folder/01-one.md": "# One\n",
            "docs/b-folder/index.md": "# B landing\n",
            "docs/03-a-folder/x.md": "---\nsidebar_position: 1\n---\n# X\n",
            "docs/intro.md": "---\nsidebar_position: 2\n---\n# Intro\n",
        }
    )
    site = read_site_config(site_dir)
    ordered = book_documents(ingest_site(site, PARAMS).documents, site)
    assert [d.title for d in ordered] == ["B landing", "One", "Two", "Intro", "X", "Zeta"]


HEADING_ID = re.compile(r"^#{2,6} .* \{#(?P<id>[^}]+)\}$", flags=re.M)


@pytest.mark.docusaurus
def test_every_heading_id_in_the_twins_is_an_element_of_the_real_build(tmp_path: Path) -> None:
    """The `{#id}` the twins write, after the Source URL, open the built page at that heading."""
    build_dir = build_example()
    site = read_site_config(EXAMPLE_SITE)
    documents = ingest_site(site, PARAMS, built=load_manifests([build_dir / MANIFEST_NAME])).documents
    write_llms(documents, site, read_book(site, "Robot Motion"), tmp_path)
    urls: list[str] = []
    for twin in tmp_path.rglob("*.md"):
        text = twin.read_text(encoding="utf-8")
        source = re.search(r"^Source: (\S+)$", text, flags=re.M)
        assert source, twin
        page = urlsplit(source[1]).path
        urls += [f"{page}#{match['id']}" for match in HEADING_ID.finditer(text)]
    assert len(urls) >= 40 and any(url.endswith("/docs/sensing/kalman-filter#ekf") for url in urls)
    assert unresolved(urls, read_built_pages(build_dir)) == []
