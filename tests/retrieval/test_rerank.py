"""The learned reranking stage on a real Edge index (hash embedder): the retriever applies the model
the generation carries, and serves fusion's order when there is none."""

from __future__ import annotations

import numpy as np

from bookwise.index.build import run_ingest
from bookwise.index.edge.generations import read_current
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.rerank_fit import FEATURES, RERANK_MODEL, RerankModel
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.rerank import LearnedReranker
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

FILLER = "Plain words about the garden, the weather and the long road home."
PAGES = {
    f"docs/page-{n}.md": f"# Page {n}\n\n{FILLER}\n\n"
    + "\n\n".join(f"## Topic {n}-{s}\n\n{FILLER} Item {n}{s} is described here. {FILLER}" for s in range(4))
    for n in range(6)
}
# Many chunks say "lantern wick" in passing; one section is about the wick, by its heading.
PAGES["docs/lanterns.md"] = (
    "# Lamps\n\n"
    + "\n\n".join(f"## Note {s}\n\nA lantern wick, a lantern wick glows in note {s}." for s in range(3))
    + "\n\n## Wick care\n\nTrim it short so the flame stays low.\n"
)
QUESTION = "lantern wick"


def ranked(settings: Settings, *, learned: bool) -> list[str]:
    store = open_store(settings)
    reranker = LearnedReranker(settings.data_dir) if learned else None
    retriever = Retriever(settings, store.open_reader(), HashEmbedder(), learned=reranker, store=store)
    try:
        return [s.heading for s in retriever.search(QUESTION, top_k=8).sections]
    finally:
        retriever.close()


def test_the_retriever_reorders_by_the_model_its_generation_carries(
    settings: Settings, make_site: SiteFactory
) -> None:
    configured = settings.model_copy(update={"rerank_provider": "learned", "index_refresh_s": 0.0})
    run_ingest(configured, read_site_config(make_site(PAGES)), embedder=HashEmbedder())
    generation, _ = read_current(configured.data_dir / "index")
    directory = configured.data_dir / "index" / "generations" / str(generation)
    model = RerankModel.load(directory, HashEmbedder().model_id)
    assert model is not None
    fused = ranked(configured, learned=False)
    assert fused[0] != "Wick care"  # the passing mentions win by fusion
    # A model that trusts the heading's words above all: the section named by the question comes first.
    model.weights = np.array([10.0 if name == "heading_terms" else 0.0 for name in FEATURES])
    model.save(directory)
    reordered = ranked(configured, learned=True)
    assert reordered[0] == "Wick care"
    # The other features weigh nothing: the rest keep fusion's order.
    assert reordered[1:] == [h for h in fused if h != "Wick care"][: len(reordered) - 1]


def test_a_generation_without_a_model_is_served_in_fusions_order(
    settings: Settings, make_site: SiteFactory
) -> None:
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    run_ingest(configured, read_site_config(make_site(PAGES)), embedder=HashEmbedder())
    generation, _ = read_current(configured.data_dir / "index")
    assert not (configured.data_dir / "index" / "generations" / str(generation) / RERANK_MODEL).exists()
    assert ranked(configured, learned=True) == ranked(configured, learned=False)
