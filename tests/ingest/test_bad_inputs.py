"""Bad files are reported with path and line; everything else is indexed."""

from __future__ import annotations

from bookwise.index.embedders import HashEmbedder
from bookwise.ingest.pipeline import ChunkingParams, IngestResult, ingest_site
from bookwise.ingest.site import read_site_config
from conftest import SiteFactory

GOOD = "## Fine\n\nThis page is fine.\n"


def run(make_site: SiteFactory, files: dict[str, str | bytes], max_bytes: int = 50_000) -> IngestResult:
    embedder = HashEmbedder()
    params = ChunkingParams(450, 60, 40, embedder.max_input_tokens, embedder.count_tokens)
    return ingest_site(
        read_site_config(make_site({"docs/good.md": GOOD, **files})), params, max_file_bytes=max_bytes
    )


def errors(result: IngestResult) -> dict[str, tuple[str, int | None]]:
    return {e.path: (e.code, e.line) for e in result.errors}


def test_malformed_front_matter(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/bad.md": "---\ntitle: ok\ntags: [unclosed\nother: 1\n---\n\n## X\n"})
    assert errors(result)["docs/bad.md"][0] == "front_matter_invalid"
    assert errors(result)["docs/bad.md"][1] == 3


def test_front_matter_that_is_not_a_mapping(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/list.md": "---\n- a\n- b\n---\n## X\n"})
    assert errors(result)["docs/list.md"] == ("front_matter_invalid", 2)
    assert [d.doc_path for d in result.documents] == ["good.md"]


def test_unclosed_front_matter(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/bad.md": "---\ntitle: never closed\n\n## X\n"})
    assert errors(result)["docs/bad.md"] == ("front_matter_invalid", 1)


def test_non_utf8_file_reports_the_line(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/latin1.md": "## Caf\xe9\n\nline two\n".encode("latin-1")})
    assert errors(result)["docs/latin1.md"] == ("encoding_invalid", 1)
    assert len(result.documents) == 1


def test_binary_file_with_md_extension(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/blob.md": b"## ok\n\x00\x01\x02"})
    assert errors(result)["docs/blob.md"][0] == "encoding_invalid"


def test_oversized_file_is_skipped_with_a_clear_error(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/huge.md": "## Big\n\n" + "word " * 20_000}, max_bytes=50_000)
    code, _ = errors(result)["docs/huge.md"]
    assert code == "file_too_large"
    assert "max_file_bytes" in next(e.message for e in result.errors)


def test_broken_mdx_reports_the_line(make_site: SiteFactory) -> None:
    result = run(
        make_site, {"docs/broken.mdx": "---\ntitle: B\n---\n\n## A\n\ntext\n\n{/* never closed\n\nmore\n"}
    )
    assert errors(result)["docs/broken.mdx"] == ("markdown_invalid", 9)


def test_bom_crlf_and_unclosed_fence_still_ingest(make_site: SiteFactory) -> None:
    result = run(
        make_site,
        {
            "docs/bom.md": "\ufeff---\r\ntitle: Bom\r\n---\r\n\r\n## Windows\r\n\r\nText.\r\n".encode(),
            "docs/fence.md": "## Code\n\n```js\nconst a = 1;\n## not a heading\n",
        },
    )
    assert result.errors == []
    titles = {d.doc_path: [s.heading for s in d.sections] for d in result.documents}
    assert titles["bom.md"] == ["Windows"] and titles["fence.md"] == ["Code"]


def test_drafts_and_partials_are_skipped_not_errors(make_site: SiteFactory) -> None:
    result = run(
        make_site,
        {
            "docs/draft.md": "---\ndraft: true\n---\n## D\n",
            "docs/_part.mdx": "## P\n",
            "docs/_dir/x.md": "## X\n",
        },
    )
    assert result.errors == []
    assert {s.code for s in result.skipped} == {"draft", "partial"}
    assert [d.doc_path for d in result.documents] == ["good.md"]


def test_two_docs_at_one_url_are_reported(make_site: SiteFactory) -> None:
    result = run(
        make_site,
        {"docs/a.md": "---\nslug: /same\n---\n## A\n", "docs/b.md": "---\nslug: /same\n---\n## B\n"},
    )
    assert [e.code for e in result.errors] == ["duplicate_url"]


def test_deeply_nested_markup_does_not_crash(make_site: SiteFactory) -> None:
    result = run(make_site, {"docs/deep.md": "## Deep\n\n" + "> " * 2000 + "quote\n" + "[" * 5000 + "\n"})
    assert "docs/deep.md" not in errors(result) or errors(result)["docs/deep.md"][0] == "markdown_invalid"
