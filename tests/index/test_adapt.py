"""Site adaptation of the local embedder: training pairs, stable names, and the real fine-tune."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adaptbook import ADAPT_PAGES
from bookwise.errors import ConfigError
from bookwise.index.adapt import AdaptParams, adapted_name, is_adapted, model_dir, training_pairs
from bookwise.index.build import run_ingest
from bookwise.index.embedders import EXPORTED
from bookwise.ingest.models import Chunk
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory


def chunk(context: str, text: str, n: int = 0) -> Chunk:
    embed_text = f"{context}\n\n{text}" if text else context
    return Chunk(f"id{n}", "p", text, embed_text, "h", n, 1, 0, 0, 0)


def test_pairs_are_context_and_text_deduplicated_and_sampled_deterministically() -> None:
    chunks = [chunk("Book › Setup", "Install with npm.", 0), chunk("Book › Setup", "Install with npm.", 1)]
    chunks += [chunk("Book › Empty", "", 2)] + [chunk(f"Book › S{n}", f"Text {n}.", n) for n in range(3, 20)]
    pairs = training_pairs(chunks, max_pairs=100, seed=1)
    assert ("Book › Setup", "Install with npm.") in pairs and len(pairs) == 18  # one copy, no empty chunk
    assert training_pairs(chunks, max_pairs=5, seed=1) == training_pairs(list(reversed(chunks)), 5, seed=1)
    assert len(training_pairs(chunks, max_pairs=5, seed=1)) == 5


def test_the_model_name_follows_the_pairs_and_parameters(tmp_path: Path) -> None:
    pairs = [("A › B", "text")]
    name = adapted_name(pairs, AdaptParams())
    assert is_adapted(name) and name.startswith("all-MiniLM-L6-v2@") and not is_adapted("all-MiniLM-L6-v2")
    assert adapted_name(pairs, AdaptParams()) == name
    assert adapted_name([("A › B", "other text")], AdaptParams()) != name
    assert adapted_name(pairs, AdaptParams(learning_rate=1e-4)) != name
    assert model_dir(tmp_path, name) == tmp_path / "models" / name.split("@")[1]


@pytest.mark.model
def test_a_new_local_index_is_built_with_a_site_adapted_model(
    settings: Settings, make_site: SiteFactory
) -> None:
    local = settings.model_copy(update={"embedding_provider": "local", "embedding_adapt_max_pairs": 16})
    site = read_site_config(make_site(ADAPT_PAGES))
    first = run_ingest(local, site)
    assert first.adapt_s is not None and is_adapted(first.embed_model)
    assert (model_dir(local.data_dir, first.embed_model) / "config.json").is_file()

    again = run_ingest(local, site)  # incremental: the same model, nothing re-embedded, no new training
    assert (again.embed_model, again.adapt_s, again.index.embedded) == (first.embed_model, None, 0)

    retriever = Retriever.open(local)
    try:
        result = retriever.search("what does a reducer compute?", top_k=3)
        assert "Reducers" in [s.heading for s in result.sections]
    finally:
        retriever.close()

    shutil.rmtree(local.data_dir / "models")  # the generation carries the model's ONNX export
    Retriever.open(local).close()
    for generation in (local.data_dir / "index" / "generations").iterdir():
        shutil.rmtree(generation / EXPORTED)  # an index from before exports: torch needs the weights
    with pytest.raises(ConfigError, match="models/ folder"):
        Retriever.open(local)


def test_only_the_local_model_is_adapted(settings: Settings, make_site: SiteFactory) -> None:
    report = run_ingest(settings, read_site_config(make_site(ADAPT_PAGES)))
    assert report.adapt_s is None and report.embed_model == "hash-384"


@pytest.mark.model
def test_adaptation_can_be_turned_off(settings: Settings, make_site: SiteFactory) -> None:
    local = settings.model_copy(update={"embedding_provider": "local", "embedding_adapt": False})
    report = run_ingest(local, read_site_config(make_site(ADAPT_PAGES)))
    assert report.adapt_s is None and report.embed_model == "all-MiniLM-L6-v2"
    assert [p.name for p in (local.data_dir / "models").iterdir()] == ["onnx"]  # the export, no adapted model
