"""The Retriever on real indexes (Edge on disk and qdrant-client in memory) with the hash embedder."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import anyio
import pytest

from bookwise.errors import IndexNotFoundError, InvalidRequestError, ModelMismatchError
from bookwise.index.build import run_ingest
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.index.store import HybridHits, HybridQuery, IndexStore
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory

LONG = " ".join(f"Sentence {n} talks about ordinary reducer plumbing number {n}." for n in range(40))
PAGES = {
    "docs/intro.md": "# Intro\n\nWelcome to the book about reducers and stores.\n",
    "docs/basics/_category_.json": '{"label": "Basics"}',
    "docs/basics/state.md": (
        "---\ntitle: State\ntags: [core]\n---\n\n## Store\n\nThe store holds the whole state tree.\n\n"
        f"## Long walk\n\n{LONG} The hidden word is zanzibar here. {LONG}\n"
    ),
    "docs/basics/actions.md": "## Actions\n\nActions are plain objects with a type field.\n",
    "docs/advanced/_category_.json": '{"label": "Advanced"}',
    "docs/advanced/middleware.md": (
        "## Middleware\n\nMiddleware wraps dispatch to log actions.\n\n"
        "```js\nconst log = store => next;\n```\n"
    ),
    "docs/advanced/copy-one.md": "## Shared tip\n\nQuokkas never mutate state in place.\n",
    "docs/advanced/copy-two.md": "## Shared tip\n\nQuokkas never mutate state in place.\n",
}


@pytest.fixture(params=["edge", "server"])
def book(
    request: pytest.FixtureRequest, settings: Settings, make_site: SiteFactory
) -> Iterator[tuple[Settings, IndexStore]]:
    url = ":memory:" if request.param == "server" else None
    configured = settings.model_copy(
        update={"qdrant_url": url, "chunk_max_tokens": 60, "chunk_overlap_tokens": 12, "index_refresh_s": 0.0}
    )
    store = open_store(configured)
    site = make_site(PAGES)
    run_ingest(configured, read_site_config(site), embedder=HashEmbedder(), store=store)
    yield configured, store
    store.close()


def retriever_for(book: tuple[Settings, IndexStore], embedder: HashEmbedder | None = None) -> Retriever:
    settings, store = book
    return Retriever(settings, store.open_reader(), embedder or HashEmbedder())


def test_sections_carry_every_citation_field(book: tuple[Settings, IndexStore]) -> None:
    result = retriever_for(book).search("What does the store hold?", top_k=3)
    top = result.sections[0].to_source()
    assert (top["doc_path"], top["heading"], top["heading_level"]) == ("basics/state.md", "Store", 2)
    assert top["url"] == "/docs/basics/state#store" and top["anchor"] == "store"
    assert (top["title"], top["breadcrumb"], top["module"]) == ("State", ["State"], "Basics")
    assert "state tree" in top["snippet"] and top["score"] > 0
    assert "text" not in top  # the assembled text goes to the prompt, not to the public source
    assert result.index_version == book[1].live_manifest().generation  # type: ignore[union-attr]


def test_small_to_big_returns_the_section_in_reading_order(book: tuple[Settings, IndexStore]) -> None:
    settings, store = book
    retriever = Retriever(
        settings.model_copy(update={"section_max_tokens": 5000}), store.open_reader(), HashEmbedder()
    )
    section = next(s for s in retriever.search("zanzibar").sections if s.heading == "Long walk")
    assert len(section.matched_chunks) >= 1 and not section.truncated
    text = section.text
    # Every sentence once, in order: the chunks' overlaps were removed when they were joined.
    positions = [text.index(f"Sentence {n} talks") for n in range(40)]
    assert positions == sorted(positions)
    assert text.count("Sentence 7 talks") == 2 and text.count("zanzibar") == 1  # LONG appears twice


def test_budget_keeps_the_matching_chunk_and_marks_the_cut(book: tuple[Settings, IndexStore]) -> None:
    settings, store = book
    retriever = Retriever(
        settings.model_copy(update={"section_max_tokens": 80}), store.open_reader(), HashEmbedder()
    )
    section = next(s for s in retriever.search("zanzibar").sections if s.heading == "Long walk")
    assert section.truncated and "zanzibar" in section.text
    assert section.text.startswith("…") and section.text.endswith("…")
    assert section.tokens <= 80


def test_identical_sections_on_two_pages_are_returned_once(book: tuple[Settings, IndexStore]) -> None:
    sections = retriever_for(book).search("quokkas mutate state", top_k=10).sections
    assert [s.heading for s in sections].count("Shared tip") == 1


def test_filters_restrict_sections(book: tuple[Settings, IndexStore]) -> None:
    retriever = retriever_for(book)
    basics = retriever.search("actions store middleware", top_k=10, filters={"module": ["Basics"]})
    assert basics.sections and {s.module for s in basics.sections} == {"Basics"}
    tagged = retriever.search("store", top_k=10, filters={"tags": ["core"]})
    assert {s.doc_path for s in tagged.sections} == {"basics/state.md"}
    code = retriever.search("log dispatch", top_k=10, filters={"content_type": ["code", "mixed"]})
    assert all(s.doc_path == "advanced/middleware.md" for s in code.sections)
    nothing = retriever.search("store", filters={"version": ["9.9"]})
    assert nothing.sections == [] and not nothing.sufficient_context


def test_the_readers_page_is_searched_alone(book: tuple[Settings, IndexStore]) -> None:
    retriever = retriever_for(book)
    on_page = retriever.search_page("store", "https://example.com/docs/basics/state/?x=1#store", top_k=3)
    assert on_page and {s.page_url for s in on_page} == {"/docs/basics/state"}
    assert len(on_page) <= 3
    assert retriever.search_page("store", "/docs/no-such-page", top_k=3) == []
    assert retriever.search_page("store", "not a path", top_k=3) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": "   "}, "empty"),
        ({"query": "x", "filters": {"colour": ["red"]}}, "unknown filter field"),
        ({"query": "x", "top_k": 0}, "top_k must be between"),
        ({"query": "x", "top_k": 21}, "top_k must be between"),
    ],
)
def test_bad_requests_raise_the_one_invalid_request_error(
    book: tuple[Settings, IndexStore], kwargs: dict, message: str
) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidRequestError, match=message):
        retriever_for(book).search(**kwargs)


def test_a_different_embedding_model_is_refused(book: tuple[Settings, IndexStore]) -> None:
    with pytest.raises(ModelMismatchError, match="hash-384"):
        retriever_for(book, HashEmbedder(model_id="another-model"))


def test_a_switch_to_an_index_of_another_model_is_refused_at_query_time(
    book: tuple[Settings, IndexStore], make_site: SiteFactory
) -> None:
    settings, store = book
    retriever = retriever_for(book)
    assert retriever.search("store").sections
    site = read_site_config(make_site(PAGES))
    run_ingest(settings, site, embedder=HashEmbedder(model_id="hash-b"), store=store, reindex=True)
    with pytest.raises(ModelMismatchError):
        retriever.search("store")


def test_no_index_is_a_clear_error(settings: Settings) -> None:
    with pytest.raises(IndexNotFoundError, match="bookwise ingest"):
        Retriever.open(settings)


def test_an_empty_index_answers_with_no_sections(settings: Settings, make_site: SiteFactory) -> None:
    site = make_site({"docs/_category_.json": '{"label": "Nothing"}'})
    run_ingest(settings, read_site_config(site), embedder=HashEmbedder())
    retriever = Retriever.open(settings)
    try:
        result = retriever.search("anything at all")
    finally:
        retriever.close()
    assert result.sections == [] and not result.sufficient_context and result.sufficiency.score == 0.0


class ThreadRecordingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.threads.add(threading.get_ident())
        return super().embed_documents(texts)


def test_async_search_runs_off_the_event_loop_thread(book: tuple[Settings, IndexStore]) -> None:
    embedder = ThreadRecordingEmbedder()
    retriever = retriever_for(book, embedder)

    async def main() -> int:
        result = await retriever.asearch("store state", top_k=2)
        assert result.sections
        return threading.get_ident()

    loop_thread = anyio.run(main)
    assert embedder.threads and loop_thread not in embedder.threads


def test_a_single_filter_value_may_be_a_string(book: tuple[Settings, IndexStore]) -> None:
    sections = retriever_for(book).search("store", top_k=10, filters={"module": "Basics"}).sections
    assert sections and {s.module for s in sections} == {"Basics"}


class ByLengthReranker:
    """A real reranker stage: prefers the shortest passage (enough to see the stage reorder)."""

    name = "by-length"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def scores(self, query: str, passages: list[str]) -> list[float]:
        self.calls.append(len(passages))
        return [-float(len(p)) for p in passages]


def test_the_reranker_stage_reorders_the_top_sections(book: tuple[Settings, IndexStore]) -> None:
    settings, store = book
    query = "store state reducers actions"
    plain_retriever = retriever_for(book)
    plain = plain_retriever.search(query, top_k=4).sections
    plain_retriever.close()  # one Edge reader per process at a time
    reranker = ByLengthReranker()
    reranked_settings = settings.model_copy(update={"rerank_candidates": 4})
    retriever = Retriever(reranked_settings, store.open_reader(), HashEmbedder(), reranker=reranker)
    reranked = retriever.search(query, top_k=4).sections
    assert reranker.calls == [4]
    assert {s.section_id for s in reranked} == {s.section_id for s in plain}
    assert [s.score for s in reranked] == sorted((s.score for s in reranked), reverse=True)
    assert all(s.score <= 0 for s in reranked)  # the reranker's own scores (minus passage length)


def test_equal_fused_scores_rank_the_same_way_every_time() -> None:
    # Regression: Qdrant returns RRF ties in any order, so one query could get two rankings.
    from bookwise.index.store import Hit, HybridHits
    from bookwise.retrieval.retriever import _break_ties

    fused = [Hit("b", 0.2, {}), Hit("a", 0.2, {}), Hit("c", 0.2, {}), Hit("top", 0.3, {})]
    hits = HybridHits(fused, dense=[Hit("c", 0.9, {}), Hit("a", 0.5, {})], sparse=[Hit("b", 7.0, {})])
    assert [h.id for h in _break_ties(hits)] == ["top", "c", "a", "b"]
    reversed_hits = HybridHits(list(reversed(fused)), hits.dense, hits.sparse)
    assert [h.id for h in _break_ties(reversed_hits)] == ["top", "c", "a", "b"]


def test_names_the_book_never_mentions_are_reported_on_both_backends(
    book: tuple[Settings, IndexStore],
) -> None:
    retriever = retriever_for(book)
    result = retriever.search("How do I deploy the Quokkas store to Firebase or Netlify?")
    # "Quokkas" is on two pages; "Firebase" and "Netlify" are in no chunk; "How" starts the sentence.
    assert result.unknown_names == ("Firebase", "Netlify")
    assert result.to_dict()["unknown_names"] == ["Firebase", "Netlify"]
    assert retriever.search("What does the store hold?").unknown_names == ()
    # Within the filters: a name the book has, but not in the part searched, is unknown there.
    filtered = retriever.search("Where do Quokkas live?", filters={"module": ["Basics"]})
    assert filtered.unknown_names == ("Quokkas",)


def test_locating_a_selection_does_not_probe_its_names(book: tuple[Settings, IndexStore]) -> None:
    # Finding a selection's section reads only the best section: one Qdrant lookup per name is waste.
    retriever = retriever_for(book)
    sent: list[HybridQuery] = []
    hybrid = retriever._reader.hybrid

    def recording(query: HybridQuery) -> HybridHits:
        sent.append(query)
        return hybrid(query)

    retriever._reader.hybrid = recording  # type: ignore[method-assign]
    page = retriever.chunk_payloads()[0].page_url
    assert retriever.locate(page, heading_id=None, text="The Quokkas store moved to Firebase.") is not None
    assert sent and all(query.probe_terms == () for query in sent)
    retriever.search("How do I deploy the Quokkas store to Firebase?")
    assert sent[-1].probe_terms


WINDUP_PAGES = {
    "docs/intro.md": "# Intro\n\nA short course on motors, encoders and the controllers that drive them.\n",
    "docs/control.md": (
        "# Control\n\n## Proportional term\n\nThe proportional term pushes in proportion to the error.\n\n"
        "## Saturation\n\nIntegral windup: the integrator keeps growing while the motor is saturated.\n\n"
        "## Sampling\n\nSet a steady loop rate and measure the time step; the setup takes a minute.\n"
    ),
    "docs/sensors.md": (
        "# Sensors\n\n## Encoders\n\nAn encoder counts ticks as the wheel turns.\n\n"
        "## Lidar\n\nA lidar measures the distance to walls around the robot.\n"
    ),
}


def test_a_word_the_book_writes_only_joined_with_its_particle_is_reported_with_that_form(
    settings: Settings, make_site: SiteFactory
) -> None:
    configured = settings.model_copy(update={"index_refresh_s": 0.0})
    store = open_store(configured)
    run_ingest(configured, read_site_config(make_site(WINDUP_PAGES)), embedder=HashEmbedder(), store=store)
    retriever = Retriever(configured, store.open_reader(), HashEmbedder())
    try:
        assert retriever.search("why does it wind up?", top_k=3).book_forms == (("wind", "windup"),)
        # "set" is a word of the book: "set up" stays as asked, though the book also writes "setup".
        assert retriever.search("how do I set up the loop?", top_k=3).book_forms == ()
    finally:
        retriever.close()
        store.close()
