"""The first question after start waits for the embedding model to load; it does not time out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from apiserver import build_book
from bookwise.generation.answer import Answerer, checked
from bookwise.generation.models import ChatRequest
from bookwise.index.embedders import HashEmbedder
from bookwise.index.factory import open_store
from bookwise.retrieval.retriever import Retriever

LOAD_S = 1.5


class SlowToLoad(HashEmbedder):
    """The hash embedder behind a model load that takes longer than the retrieval deadline."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = False

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not self.loaded:
            time.sleep(LOAD_S)
            self.loaded = True
        return super().embed_documents(texts)


def test_the_first_question_does_not_time_out_while_the_model_loads_regression(tmp_path: Path) -> None:
    """The first `bookwise ask` on a busy machine failed with retrieval_timeout: the model load
    counted against the retrieval deadline."""
    settings = build_book(tmp_path, retrieval_timeout_s=LOAD_S / 3)
    store = open_store(settings)
    retriever = Retriever(settings, store.open_reader(), SlowToLoad(), store=store)
    answerer = Answerer(settings, retriever, llm=None)

    async def first_answer() -> str:
        prepared = await answerer.prepare(
            checked(ChatRequest(question="What do quokkas eat in the morning?"), answerer.limits)
        )
        events = [event async for event in answerer.stream(prepared)]
        return events[-1].name

    try:
        assert anyio.run(first_answer) == "done"
    finally:
        retriever.close()
