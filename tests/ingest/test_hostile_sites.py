"""Hostile sites: each test is named after a red-team finding, asserts the clear error and
that the rest of the site still ingests.

Linearity is checked without timing: the token counter raises once it has been asked to tokenize
more than a few times the input (the quadratic chunker asked for thousands of times), and the parse
stage runs under a generous watchdog that only a quadratic or worse pattern could reach.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bookwise import cli
from bookwise.errors import ConfigError, NotARegularFileError
from bookwise.index.build import run_ingest
from bookwise.index.embedders import HashEmbedder
from bookwise.ingest.chunking import MAX_CHARS_PER_TOKEN, chunk_blocks
from bookwise.ingest.headings import parse_heading
from bookwise.ingest.markdown import strip_jsx
from bookwise.ingest.mdx import TextItem, scan
from bookwise.ingest.models import Block
from bookwise.ingest.pipeline import ChunkingParams, IngestResult, ingest_site
from bookwise.ingest.site import SiteConfig, read_site_config
from bookwise.ingest.source import read_source
from bookwise.settings import Settings
from conftest import SiteFactory

GOOD = "## Fine\n\nThis page is fine.\n"
_WORD = re.compile(r"\w+|[^\w\s]")


def run(site: SiteConfig) -> IngestResult:
    embedder = HashEmbedder()
    return ingest_site(site, ChunkingParams(450, 60, 40, embedder.max_input_tokens, embedder.count_tokens))


def errors(result: IngestResult) -> dict[str, str]:
    return {e.path: e.code for e in result.errors}


def indexed_text(result: IngestResult) -> str:
    return "\n".join(c.embed_text for c in result.chunks)


@contextmanager
def watchdog(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the block runs far longer than linear work could."""

    def expire(*_: object) -> None:
        raise AssertionError(f"still running after {seconds} s: not linear")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class BoundedCounter:
    """The hash tokenizer, refusing to tokenize more than ``factor`` times the input in all."""

    def __init__(self, input_chars: int, factor: int = 12) -> None:
        self.limit = input_chars * factor
        self.tokenized = 0

    def __call__(self, text: str) -> int:
        self.tokenized += len(text)
        if self.tokenized > self.limit:
            raise AssertionError(
                f"tokenized {self.tokenized} characters for a {self.limit // 12}-character input"
            )
        return len(_WORD.findall(text))


def _nested_list(depth: int = 200) -> str:
    return "".join("  " * level + f"- item {level}\n" for level in range(depth))


HOSTILE_BLOCKS = {
    "data-uri image": "![d](data:image/png;base64,"
    + base64.b64encode(random.Random(1).randbytes(150_000)).decode()
    + ")",
    "runs of spaces": ("word" + " " * 1000) * 400,
    "list nested 200 deep": _nested_list() * 4,
    "[a( repeated": "[a(" * 60_000,
    "one huge word": "x" * 200_000,
    "one-letter lines": "a\n" * 100_000,
}


@pytest.mark.parametrize("name", list(HOSTILE_BLOCKS))
def test_chunking_is_quadratic_in_long_words_and_long_runs_of_spaces(name: str) -> None:
    text = HOSTILE_BLOCKS[name]
    count = BoundedCounter(len(text))
    chunks = chunk_blocks(
        (Block(text, 0, len(text)),), budget=200, overlap=0, min_tokens=0, hard_limit=200, count=count
    )
    assert all(len(_WORD.findall(c.text)) <= 200 for c in chunks)
    assert all(len(c.text) <= MAX_CHARS_PER_TOKEN * 200 for c in chunks)
    # Nothing lost or repeated: the chunks hold the text's characters in order (spaces aside).
    assert "".join(re.sub(r"\s", "", c.text) for c in chunks) == re.sub(r"\s", "", text)


def test_long_code_block_with_many_blank_lines_is_split_linearly() -> None:
    code = "```text\n" + "\n" * 50_000 + "\n".join(f"line {i}" for i in range(3000)) + "\n```"
    count = BoundedCounter(len(code))
    chunks = chunk_blocks(
        (Block(code, 0, len(code), "code"),), budget=100, overlap=0, min_tokens=0, hard_limit=100, count=count
    )
    assert all(c.text.startswith("```text\n") and c.text.endswith("\n```") for c in chunks)
    assert all(len(_WORD.findall(c.text)) <= 100 for c in chunks)


PARSE_CASES = {
    "line of leading spaces": " " * 200_000 + "| x",
    "unclosed tag then spaces": "text <Tabs" + " " * 200_000 + "x",
    "heading with a run of spaces": "# a" + " " * 200_000 + "b",
    "heading with unclosed comments": "# a" + "<!--" * 50_000 + " -->x",
    "heading id never closed": "# a {/* #" + "x" * 200_000,
    "admonition title of spaces": ":::note" + " " * 200_000 + "x",
    "unclosed comment openers": "text " + "{/*" * 60_000,
    "backtick runs of every width": " ".join("`" * w for w in range(1, 600)) + " `x` " * 20_000,
    "tab labels never closed": "text <TabItem label='a' " * 20_000,
    "one-line paragraph of 100k lines": "a\n" * 100_000,
    "table of 50k rows": "| a | b |\n" * 50_000,
}


@pytest.mark.parametrize("name", list(PARSE_CASES))
def test_markdown_parsing_of_hostile_lines_is_linear(name: str) -> None:
    text = PARSE_CASES[name]
    with watchdog(20):
        items = scan(text)
        strip_jsx(text[:300_000])
        parse_heading(text.split("\n")[0])
    assert items


@pytest.mark.parametrize(
    "page",
    ["````mdx-code-block\n" * 100_000, "```\nx\n```\n````mdx-code-block\n" * 25_000],
    ids=["openers only", "each after a code block"],
)
def test_unclosed_mdx_code_block_openers_were_quadratic_regression(page: str) -> None:
    """An ``mdx-code-block`` fence's content is read as the page's own, so the scan goes on after an
    unclosed one; each opener searched the rest of the page for its closing line and copied the rest
    as its content (5,000 openers took 12 s, a 2 MB page of them hours). Where no closing line is left
    is now remembered, and the content read only as far as the demo check needs."""
    with watchdog(20):
        items = scan(page)
    assert all(isinstance(item, TextItem) for item in items)


def test_a_hostile_page_ingests_beside_normal_pages(make_site: SiteFactory) -> None:
    page = "---\ntitle: Hostile\n---\n\n## Hostile\n\n" + "\n\n".join(HOSTILE_BLOCKS.values()) + "\n"
    site = make_site({"docs/good.md": GOOD, "docs/hostile.md": page})
    embedder = HashEmbedder()
    count = BoundedCounter(len(page) + 1000, factor=20)
    with watchdog(60):
        result = ingest_site(
            read_site_config(site),
            ChunkingParams(450, 60, 40, embedder.max_input_tokens, count),
            max_file_bytes=3_000_000,
        )
    assert result.errors == []
    assert {d.doc_path for d in result.documents} == {"good.md", "hostile.md"}
    assert "This page is fine." in indexed_text(result)
    assert all(embedder.count_tokens(c.text) <= 450 for c in result.chunks)


# --- Ingest reads outside the site ---------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "x").mkdir(parents=True)
    (folder / "secret.txt").write_text("root:x:0:0:TOPSECRET\n")
    (folder / "x" / "secret.mdx").write_text("## Leaked\n\nTOPSECRET partial.\n")
    (folder / "elsewhere").mkdir()
    (folder / "elsewhere" / "other.md").write_text("## Other\n\nTOPSECRET docs folder.\n")
    return folder


def test_symlink_to_a_file_outside_the_site_is_refused(make_site: SiteFactory, outside: Path) -> None:
    site = make_site({"docs/good.md": GOOD, "docs/guide/page.md": GOOD})
    (site / "docs" / "passwd.md").symlink_to(outside / "secret.txt")
    (site / "docs" / "linked").symlink_to(outside / "elsewhere")  # a folder, too
    (outside / "category.json").write_text('{"label": "TOPSECRET"}')
    (site / "docs" / "guide" / "_category_.json").symlink_to(outside / "category.json")
    result = run(read_site_config(site))
    assert errors(result) == {
        "docs/passwd.md": "outside_site",
        "docs/linked": "outside_site",
        "docs/guide/_category_.json": "outside_site",  # reported, and its label not read
    }
    assert any(str(outside / "secret.txt") in e.message for e in result.errors)
    assert "TOPSECRET" not in indexed_text(result)
    assert [(d.doc_path, d.module) for d in result.documents] == [("good.md", ""), ("guide/page.md", "guide")]


def test_mdx_import_outside_the_site_is_refused(make_site: SiteFactory, outside: Path) -> None:
    site = make_site({"docs/good.md": GOOD})
    escape = os.path.relpath(outside / "x" / "secret.mdx", site / "docs")  # ../../outside/x/secret.mdx
    page = f"import Secret from '{escape}';\n\n## Page\n\nText.\n\n<Secret />\n"
    result = run(read_site_config(make_site({"docs/page.mdx": page})))
    assert errors(result) == {"docs/page.mdx": "outside_site"}
    assert "secret.mdx" in result.errors[0].message
    assert "TOPSECRET" not in indexed_text(result)
    assert [d.doc_path for d in result.documents] == ["good.md"]


def test_docs_path_outside_the_site_is_refused(make_site: SiteFactory, outside: Path) -> None:
    site = make_site(
        {
            "docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {"
            "path: '../outside/elsewhere'}}]]};",
            "versions.json": '["1.0"]',
            "versioned_docs/version-1.0/old.md": GOOD,
        }
    )
    result = run(read_site_config(site))
    assert [e.code for e in result.errors] == ["outside_site"]
    assert result.errors[0].path == "../outside/elsewhere"
    assert "BOOKWISE_INGEST_EXTRA_ROOTS" in result.errors[0].message
    assert "TOPSECRET" not in indexed_text(result)
    assert [d.doc_path for d in result.documents] == ["old.md"]
    # With no other docs folder the whole ingest stops, saying why.
    (site / "versions.json").unlink()
    with pytest.raises(ConfigError, match="outside the site"):
        run(read_site_config(site))


def test_extra_roots_allow_named_folders_outside_the_site(make_site: SiteFactory, outside: Path) -> None:
    site = make_site(
        {"docs/good.md": GOOD, "docs/page.mdx": "import S from '../../outside/x/secret.mdx';\n\n<S />\n"}
    )
    (site / "docs" / "linked").symlink_to(outside / "elsewhere")
    result = run(read_site_config(site, extra_roots=(outside,)))
    assert result.errors == []
    assert indexed_text(result).count("TOPSECRET") == 2  # the import and the linked folder


def test_ingest_extra_roots_setting_reaches_the_cli(
    make_site: SiteFactory,
    outside: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site = make_site({"docs/good.md": GOOD})
    (site / "docs" / "linked").symlink_to(outside / "elsewhere")
    monkeypatch.chdir(tmp_path)  # no bookwise.toml
    monkeypatch.setenv("BOOKWISE_EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("BOOKWISE_DATA_DIR", str(tmp_path / "d"))
    command = ["ingest", str(site), "--json", "--dry-run"]
    assert cli.main(command) == 0
    refused = json.loads(capsys.readouterr().out)
    assert [(e["path"], e["code"]) for e in refused["errors"]] == [("docs/linked", "outside_site")]
    monkeypatch.setenv("BOOKWISE_INGEST_EXTRA_ROOTS", json.dumps([str(outside)]))
    assert cli.main(command) == 0
    allowed = json.loads(capsys.readouterr().out)
    assert (allowed["errors"], allowed["docs_processed"]) == ([], 2)


# --- Dangling symlinks, loops and FIFOs ----------------------------------------------------------


def test_dangling_symlinks_loops_and_fifos_are_reported_not_skipped(make_site: SiteFactory) -> None:
    site = make_site({"docs/good.md": GOOD, "docs/sub/page.md": GOOD.replace("Fine", "Sub")})
    docs = site / "docs"
    (docs / "gone.md").symlink_to(docs / "missing.md")
    (docs / "loop.md").symlink_to(docs / "loop.md")
    (docs / "sub" / "up").symlink_to(docs)  # a folder loop
    os.mkfifo(docs / "pipe.md")
    with watchdog(20):  # reading the FIFO would block forever
        result = run(read_site_config(site))
    assert errors(result) == {
        "docs/gone.md": "broken_symlink",
        "docs/loop.md": "broken_symlink",
        "docs/sub/up": "broken_symlink",
        "docs/pipe.md": "not_a_regular_file",
    }
    assert "missing.md" in next(e.message for e in result.errors if e.path == "docs/gone.md")
    assert sorted(d.doc_path for d in result.documents) == ["good.md", "sub/page.md"]


def test_a_fifo_is_refused_without_being_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    with watchdog(20), pytest.raises(NotARegularFileError):
        read_source(tmp_path / "pipe.md", "docs/pipe.md", 1000)


# --- Front matter and versions.json --------------------------------------------------------------


@pytest.mark.parametrize(
    ("front_matter", "field"),
    [
        ("title: [a, b]", "title"),
        ("slug: {x: 1}", "slug"),
        ("id: [x]", "id"),
        ("sidebar_label: {a: b}", "sidebar_label"),
        ("tags: [[a, b]]", "tags"),
        # YAML aliases: a few lines that would stringify into gigabytes.
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "module: [*d, *d, *d, *d, *d, *d, *d, *d, *d]",
            "module",
        ),
    ],
)
def test_list_or_dict_titles_and_slugs_are_silently_stringified(
    make_site: SiteFactory, front_matter: str, field: str
) -> None:
    site = make_site({"docs/good.md": GOOD, "docs/bad.md": f"---\n{front_matter}\n---\n## B\n\nText.\n"})
    with watchdog(20):
        result = run(read_site_config(site))
    [error] = result.errors
    assert (error.path, error.code) == ("docs/bad.md", "front_matter_invalid")
    assert f"'{field}'" in error.message
    lines = front_matter.split("\n")
    assert error.line == 2 + next(n for n, line in enumerate(lines) if line.startswith(field))
    assert [d.doc_path for d in result.documents] == ["good.md"]


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_sidebar_position_nan_passes_dry_run_and_then_aborts_the_real_run(
    make_site: SiteFactory, tmp_path: Path, value: str
) -> None:
    site = read_site_config(
        make_site({"docs/good.md": GOOD, "docs/nan.md": f"---\nsidebar_position: {value}\n---\n## N\n"})
    )
    settings = Settings(data_dir=tmp_path / "data", embedding_provider="hash", _env_file=None)  # type: ignore[call-arg]
    dry = run_ingest(settings, site, dry_run=True, embedder=HashEmbedder())
    real = run_ingest(settings, site, embedder=HashEmbedder())
    for report in (dry, real):
        assert [(e.path, e.code, e.line) for e in report.errors] == [
            ("docs/nan.md", "front_matter_invalid", 2)
        ]
        assert "finite number" in report.errors[0].message
        assert report.docs_processed == 1
    assert real.index.generation


@pytest.mark.parametrize("value", [str(9 * 10**400), str(-(2**63)), str(2**53 + 1)])
def test_sidebar_position_as_a_huge_integer_is_a_per_file_error_not_a_traceback(
    make_site: SiteFactory, tmp_path: Path, value: str
) -> None:
    site = read_site_config(
        make_site({"docs/good.md": GOOD, "docs/big.md": f"---\nsidebar_position: {value}\n---\n## N\n"})
    )
    settings = Settings(data_dir=tmp_path / "data", embedding_provider="hash", _env_file=None)  # type: ignore[call-arg]
    report = run_ingest(settings, site, embedder=HashEmbedder())
    assert [(e.path, e.code, e.line) for e in report.errors] == [("docs/big.md", "front_matter_invalid", 2)]
    assert "sidebar_position" in report.errors[0].message and report.index.generation


@pytest.mark.parametrize("content", ["5", '{"2.0": true}', '[["1.0"]]', "[null]", "[true]"])
def test_versions_json_holding_5_gives_a_type_error(make_site: SiteFactory, content: str) -> None:
    site = make_site({"docs/good.md": GOOD, "versions.json": content})
    with pytest.raises(ConfigError, match=r"versions\.json: must be a JSON list of version names"):
        read_site_config(site)
