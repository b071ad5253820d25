"""The build manifest: checked against Bookwise's own URLs and anchors; the build wins."""

import json
from pathlib import Path

import pytest
from test_documents import build

from bookwise.errors import ManifestError
from bookwise.ingest.manifest import BuiltDoc, load_manifests, reconcile

PAGE = "# Setup\n\nIntro.\n\n## Install the tools\n\nx\n\n## Configure {#config}\n\ny\n"


def built(doc_path: str = "page.mdx", permalink: str = "/docs/page", ids: tuple[str, ...] = ()) -> BuiltDoc:
    return BuiltDoc(doc_path, permalink, "current", "en", ids)


def key(doc: BuiltDoc) -> tuple[str, str, str]:
    return (doc.version, doc.locale, doc.doc_path)


def test_agreeing_build_changes_nothing() -> None:
    document = build(PAGE)
    manifest = built(ids=("install-the-tools", "config"))
    [same], check = reconcile([document], {key(manifest): manifest})
    assert same is document
    assert (check.docs, check.docs_agreeing, check.headings, check.headings_agreeing) == (1, 1, 2, 2)
    assert check.mismatches == [] and check.corrected == 0


def test_build_permalink_and_ids_win_and_are_reported() -> None:
    document = build(PAGE)
    manifest = built(permalink="/docs/setup", ids=("install-the-tools-x", "config"))
    [fixed], check = reconcile([document], {key(manifest): manifest})
    assert fixed.url == "/docs/setup"
    assert [s.anchor for s in fixed.sections] == ["", "install-the-tools-x", "config"]
    assert {(m.kind, m.ours, m.build) for m in check.mismatches} == {
        ("permalink", "/docs/page", "/docs/setup"),
        ("anchor_not_in_build", "install-the-tools", ""),
        ("heading_not_indexed", "", "install-the-tools-x"),
    }
    assert (check.docs_agreeing, check.headings_agreeing, check.corrected) == (0, 1, 1)


def test_different_heading_counts_keep_our_anchors() -> None:
    document = build(PAGE)
    manifest = built(ids=("install-the-tools", "config", "from-a-partial"))
    [kept], check = reconcile([document], {key(manifest): manifest})
    assert [s.anchor for s in kept.sections] == ["", "install-the-tools", "config"]
    assert [(m.kind, m.build) for m in check.mismatches] == [("heading_not_indexed", "from-a-partial")]


def test_docs_missing_on_either_side_are_reported() -> None:
    document = build(PAGE)
    other = built(doc_path="other.md", permalink="/docs/other")
    _, check = reconcile([document], {key(other): other})
    assert {(m.kind, m.doc_path) for m in check.mismatches} == {
        ("doc_not_in_build", "page.mdx"),
        ("doc_not_ingested", "other.md"),
    }


def write(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "bookwise-manifest.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_manifest_file_is_read_by_version_locale_and_path(tmp_path: Path) -> None:
    doc = {"doc_path": "a.md", "permalink": "/docs/a", "version": "current", "locale": "fr"}
    path = write(tmp_path, {"manifest_version": 1, "docs": [doc | {"headings": [{"level": 2, "id": "x"}]}]})
    assert load_manifests([path]) == {
        ("current", "fr", "a.md"): BuiltDoc("a.md", "/docs/a", "current", "fr", ("x",))
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ({"docs": []}, "not a docusaurus-plugin-bookwise manifest"),
        ({"manifest_version": 1, "docs": [{"doc_path": "a.md"}]}, "malformed doc entry"),
    ],
)
def test_bad_manifest_is_a_clear_error(tmp_path: Path, content: object, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_manifests([write(tmp_path, content)])


def test_missing_manifest_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read the manifest"):
        load_manifests([tmp_path / "nope.json"])
