"""A section longer than the budget is assembled around the chunks a question hit; the passages of
every such window travel with the index generation, so a fresh server embeds only the question."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations
from pathlib import Path

from apiserver import hash_settings
from bookwise.index.build import run_ingest
from bookwise.index.embedders import Embedder, ServingEmbedder
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.assemble import SectionChunk, assemble, windows
from bookwise.retrieval.passage_rank import book_passage_inputs_within
from bookwise.retrieval.passages import passages_of
from bookwise.retrieval.retriever import Retriever

TOPICS = [
    ("peppermint", "Quokkas eat peppermint leaves every morning, and they chew them slowly in the shade."),
    ("burrows", "Quokkas dig shallow burrows under thick shrubs, where the young sleep through the heat."),
    ("water", "Quokkas drink little water, since the succulent plants they eat hold most of what they need."),
    ("joeys", "A quokka mother carries her joey in the pouch for six months before it walks beside her."),
    ("ferries", "Visitors reach the island on ferries, and must never feed bread to the quokkas they meet."),
    ("census", "Rangers count the quokkas every spring, walking slow lines across the island at dawn."),
    ("storms", "Winter storms flood the lowest burrows, and families move uphill to the limestone ridges."),
    ("selfies", "A selfie with a quokka is allowed, but touching one is fined by the island authority."),
]


class Recording:
    """The server's own embedder, recording the texts it is asked to compute."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def long_page() -> str:
    paragraphs = [
        f"The {name} rule. {sentence} {sentence.replace('Quokkas', 'They')}" for name, sentence in TOPICS
    ]
    return "---\ntitle: Quokka handbook\n---\n\n## Everything at once\n\n" + "\n\n".join(paragraphs) + "\n"


def test_a_fresh_server_ranks_a_long_sections_window_without_embedding_its_passages(tmp_path: Path) -> None:
    settings = hash_settings(
        tmp_path / "data", chunk_max_tokens=60, chunk_overlap_tokens=12, section_max_tokens=130
    )
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docs" / "handbook.md").write_text(long_page(), encoding="utf-8")
    run_ingest(
        settings,
        read_site_config(site),
        passage_inputs=book_passage_inputs_within(settings.section_max_tokens),
    )

    retriever = Retriever.open(settings)  # a server started after the ingest
    try:
        embedder = retriever.embedder
        assert isinstance(embedder, ServingEmbedder)
        recording = Recording(embedder.inner)
        embedder.inner = recording  # type: ignore[assignment]
        for question in ["Where do quokka families go when winter storms flood the burrows?",
                         "Is a selfie with a quokka allowed by the island authority?"]:  # fmt: skip
            sections = retriever.search(question).sections
            window = next(s for s in sections if s.title == "Quokka handbook")
            assert window.truncated and "…" in window.text  # a window, not the whole section
            ranked = retriever.rank_passages(question, sections)
            assert any(p.passage.text in window.text for p in ranked)
        assert recording.texts  # the questions were embedded through it
        passages = [t for t in recording.texts if t.startswith("Quokka handbook")]
        assert passages == []  # a passage's input is its page title and heading, then the passage
    finally:
        retriever.close()


def test_every_window_a_search_assembles_is_made_of_stored_passages() -> None:
    chunks = [SectionChunk(n, f"The {name} rule. {sentence}") for n, (name, sentence) in enumerate(TOPICS)]
    budget = 50  # words: two or three chunks of eight

    def count(text: str) -> int:
        return len(text.split())

    stored = {
        p.text
        for text in windows(chunks, budget_tokens=budget, count_tokens=count)
        for p in passages_of(text)
    }
    indices = range(len(chunks))
    for hits in [[], *([h] for h in indices), *(list(pair) for pair in permutations(indices, 2))]:
        built = assemble(chunks, hits, budget_tokens=budget, count_tokens=count)
        assert built.truncated
        assert {p.text for p in passages_of(built.text)} <= stored, hits
