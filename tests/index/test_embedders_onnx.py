"""Serving without PyTorch: the ingest exports MiniLM to ONNX and computes every passage's vector,
both travel with the index generation, and a server embeds only its questions."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from adaptbook import ADAPT_PAGES
from apiserver import BACKEND, BOOK, hash_settings
from bookwise.errors import IndexUploadInvalidError
from bookwise.index.adapt import export_onnx
from bookwise.index.build import IngestReport, run_ingest
from bookwise.index.embedders import (
    EXPORTED,
    PASSAGE_KEYS,
    HashEmbedder,
    LocalEmbedder,
    OnnxEmbedder,
    ServingEmbedder,
    load_passage_vectors,
    text_key,
)
from bookwise.index.transfer import Upload, pack_live_generation
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.passage_rank import book_passage_inputs_within
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

ROOT = Path(__file__).resolve().parents[2]
QUESTION_FILES = [
    *sorted((ROOT / "eval").glob("*.questions.jsonl")),
    ROOT / "website-plugin/example/questions.jsonl",
]


def eval_questions() -> list[str]:
    return [
        json.loads(line)["question"]
        for path in QUESTION_FILES
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]


def passage_inputs(settings: Settings):  # type: ignore[no-untyped-def]
    """What `bookwise ingest` passes: the passages as the servers' section budget assembles them."""
    return book_passage_inputs_within(settings.section_max_tokens)


def ingest(settings: Settings, site: Path, **options: object) -> IngestReport:
    return run_ingest(settings, read_site_config(site), passage_inputs=passage_inputs(settings), **options)  # type: ignore[arg-type]


def write_site(root: Path, pages: dict[str, str]) -> Path:
    for relative, content in pages.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


class Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed_documents(texts)


def test_a_fresh_server_ranks_passages_without_embedding_them(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "data", chunk_max_tokens=60, chunk_overlap_tokens=12)
    site = write_site(tmp_path / "site", BOOK)
    ingest(settings, site)
    retriever = Retriever.open(settings)
    try:
        embedder = retriever.embedder
        assert isinstance(embedder, ServingEmbedder) and embedder.passages_known > 0
        question = "What do quokkas eat in the morning?"
        ranked = retriever.rank_passages(question, retriever.search(question).sections)
        assert ranked and ranked[0].passage.text.startswith("Quokkas eat leaves")
        assert embedder.computed == 1  # the question, once (the ranking's second use of it is cached)
        assert retriever.prefill_passages() == 0  # nothing to prefill: every passage is in the generation
        assert embedder.computed == 1
    finally:
        retriever.close()


def test_passage_vectors_are_reused_for_unchanged_passages(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "data", chunk_max_tokens=60, chunk_overlap_tokens=12)
    site = write_site(tmp_path / "site", BOOK)
    ingest(settings, site)
    page = next(p for p in BOOK if "quokka" in BOOK[p].lower())
    added = "\n\n## Added\n\nQuokkas also nap at noon in the shade.\n"
    (site / page).write_text(BOOK[page] + added, "utf-8")
    again = Counting()
    ingest(settings, site, embedder=again)  # from the embedding cache: only the new text is embedded
    assert again.texts and all("nap at noon" in t for t in again.texts)

    # Two paragraphs: two new passages, neither the whole of the section's one chunk.
    (site / page).write_text(BOOK[page] + added.replace("noon", "dusk") + "\nA nap lasts an hour.\n", "utf-8")
    (settings.data_dir / "embeddings.sqlite").unlink()  # a fresh CI runner: the live generation serves
    fresh = Counting()
    report = ingest(settings, site, embedder=fresh)
    assert len(fresh.texts) - report.index.embedded == 2  # every chunk, and the two new passages


def test_a_passage_that_is_a_whole_chunk_takes_the_chunks_vector(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "data", chunk_max_tokens=60, chunk_overlap_tokens=12)
    counting = Counting()
    ingest(settings, write_site(tmp_path / "site", BOOK), embedder=counting)
    assert len(counting.texts) == len(set(counting.texts))  # no text embedded twice
    generation = json.loads((settings.data_dir / "index" / "CURRENT").read_text())["generation"]
    loaded = load_passage_vectors(settings.data_dir / "index" / "generations" / generation, "hash-384")
    assert loaded is not None
    rows, matrix = loaded
    whole = "Welcome\n\nThis book teaches quokka husbandry on Rottnest island."  # one paragraph, one chunk
    assert counting.texts.count(whole) == 1
    assert np.allclose(matrix[rows[text_key(whole)]], HashEmbedder().embed_query(whole))


def test_an_index_from_before_exports_gets_them_from_the_next_ingest(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "data")
    site = write_site(tmp_path / "site", BOOK)
    run_ingest(settings, read_site_config(site))  # without passage vectors
    before = json.loads((settings.data_dir / "index" / "CURRENT").read_text())["generation"]
    ingest(settings, site)  # nothing changed, but the live generation lacks them
    after = json.loads((settings.data_dir / "index" / "CURRENT").read_text())["generation"]
    assert after != before and (settings.data_dir / "index" / "generations" / after / PASSAGE_KEYS).is_file()


@pytest.mark.model
def test_onnx_gives_the_same_vectors_as_sentence_transformers(tmp_path: Path) -> None:
    torch_embedder = LocalEmbedder()
    export_onnx(torch_embedder.path, tmp_path / "onnx", torch_embedder.model_id)
    onnx = OnnxEmbedder(tmp_path / "onnx", batch_size=16)
    assert (onnx.model_id, onnx.dim, onnx.max_input_tokens) == ("all-MiniLM-L6-v2", 384, 256)
    questions = eval_questions()
    long = "A very long passage about reducers and stores. " * 80  # truncated at 256 tokens by both
    texts = [*questions, long, "  spaced   out\tquestion  "]
    assert onnx.count_tokens(long) == torch_embedder.count_tokens(long)
    cosines = np.sum(
        np.array(torch_embedder.embed_documents(texts)) * np.array(onnx.embed_documents(texts)), 1
    )
    assert len(questions) >= 150 and float(cosines.min()) >= 0.9999
    alone = onnx.embed_query(questions[0])  # batched or alone: the same vector
    assert float(np.dot(alone, onnx.embed_documents(questions[:5])[0])) >= 0.9999


BLOCK_TORCH = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, NoTorch())
    """
)


def serve_without_torch(data_dir: Path, script: str) -> subprocess.CompletedProcess[str]:
    code = (
        BLOCK_TORCH
        + textwrap.dedent(
            f"""
        from pathlib import Path
        from bookwise.settings import Settings
        from bookwise.retrieval.retriever import Retriever
        settings = Settings(_env_file=None, data_dir=Path({str(data_dir)!r}), embedding_provider="local")
        """
        )
        + textwrap.dedent(script)
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(BACKEND), "PATH": "/usr/bin:/bin", "HOME": str(data_dir)},
    )


@pytest.mark.model
def test_a_local_index_is_served_without_pytorch(settings: Settings, make_site: SiteFactory) -> None:
    local = settings.model_copy(update={"embedding_provider": "local", "embedding_adapt": False})
    ingest(local, make_site(ADAPT_PAGES))
    generation = json.loads((local.data_dir / "index" / "CURRENT").read_text())["generation"]
    directory = local.data_dir / "index" / "generations" / generation
    assert (directory / EXPORTED / "model.onnx").is_file() and (directory / PASSAGE_KEYS).is_file()
    served = serve_without_torch(
        local.data_dir,
        """
        import sys
        retriever = Retriever.open(settings)
        result = retriever.search("what does a reducer compute?", top_k=3)
        ranked = retriever.rank_passages("what does a reducer compute?", result.sections)
        assert ranked and "torch" not in sys.modules
        print(type(retriever.embedder.inner).__name__, retriever.embedder.computed)
        """,
    )
    assert served.returncode == 0, served.stderr
    assert served.stdout.split() == ["OnnxEmbedder", "1"]

    # An index from before exports, on a machine without PyTorch: a clear error, with its code.
    shutil.rmtree(directory / EXPORTED)
    shutil.rmtree(local.data_dir / "models" / "onnx")
    refused = serve_without_torch(
        local.data_dir,
        """
        from bookwise.errors import BookwiseError
        try:
            Retriever.open(settings)
        except BookwiseError as error:
            print(error.code, "|", error)
        """,
    )
    assert refused.returncode == 0, refused.stderr
    code, _, message = refused.stdout.partition(" | ")
    assert code == "embedding_model_missing" and "bookwise ingest" in message


def upload(archive: Path, settings: Settings) -> None:
    with Upload(settings, archive.stat().st_size) as receiving:
        receiving.write(archive.read_bytes())
        receiving.install()


@pytest.mark.model
def test_an_uploaded_generation_brings_its_model_and_passage_vectors(
    settings: Settings, make_site: SiteFactory, tmp_path: Path
) -> None:
    ci = settings.model_copy(update={"embedding_provider": "local", "embedding_adapt": False})
    ingest(ci, make_site(ADAPT_PAGES))
    archive = tmp_path / "generation.tar.gz"
    with archive.open("wb") as out:
        pack_live_generation(ci.data_dir, out)
    server = ci.model_copy(update={"data_dir": tmp_path / "server"})
    upload(archive, server)
    retriever = Retriever.open(server)
    try:
        embedder = retriever.embedder
        assert isinstance(embedder, ServingEmbedder) and isinstance(embedder.inner, OnnxEmbedder)
        assert embedder.inner.directory.is_relative_to(server.data_dir / "index" / "generations")
        assert embedder.passages_known > 0
    finally:
        retriever.close()

    # An export that is not the generation's model is refused before anything is installed.
    unpacked = tmp_path / "unpacked"
    shutil.unpack_archive(archive, unpacked)
    meta = unpacked / "generation" / EXPORTED / "embedder.json"
    meta.write_text(meta.read_text().replace("all-MiniLM-L6-v2", "another-model"))
    with tarfile.open(tmp_path / "tampered.tar.gz", "w:gz", compresslevel=1) as tar:
        for part in sorted(unpacked.iterdir()):
            tar.add(part, arcname=part.name)
    other = ci.model_copy(update={"data_dir": tmp_path / "other"})
    with pytest.raises(IndexUploadInvalidError, match="not a complete export"):
        upload(tmp_path / "tampered.tar.gz", other)


def test_an_archive_member_named_dot_is_refused_not_a_crash(settings: Settings, tmp_path: Path) -> None:
    archive = tmp_path / "dot.tar.gz"
    (tmp_path / "content").mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "content", arcname=".")  # what `tar -C dir .` writes first
    with pytest.raises(IndexUploadInvalidError, match="not part of an index generation"):
        upload(archive, settings)


def test_question_vectors_are_cached_by_normalised_text_within_the_bound(tmp_path: Path) -> None:
    inner = Counting()
    embedder = ServingEmbedder(inner, tmp_path, cache_size=2)  # no index: nothing known
    first = embedder.embed_query("How do quokkas sleep?")
    assert embedder.embed_query("  How do   quokkas\tsleep? ") == first
    assert inner.texts == ["How do quokkas sleep?"]
    embedder.embed_documents(["second question", "third question"])  # the first is now the oldest: gone
    embedder.embed_query("How do quokkas sleep?")
    assert len(inner.texts) == 4
    off = ServingEmbedder(Counting(), tmp_path, cache_size=0)
    off.embed_query("again")
    off.embed_query("again")
    assert off.computed == 2
