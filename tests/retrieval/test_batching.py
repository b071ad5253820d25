from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import pytest

from bookwise.index.embedders import HashEmbedder
from bookwise.retrieval.batching import QueryBatcher


class SlowEmbedder(HashEmbedder):
    """Holds the first batch until released, so callers arriving meanwhile queue for one round."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []
        self.release = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(len(texts))
        if len(self.batches) == 1:
            self.release.wait(5)
        return super().embed_documents(texts)


def ask_in_two_rounds(embedder: SlowEmbedder, batcher: QueryBatcher, ask: Callable[[int], None]) -> None:
    """Caller 0 enters the model alone; callers 1-7 arrive while it is busy and queue for one round."""
    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    threads[0].start()
    while not embedder.batches:  # the leader is inside the model
        threading.Event().wait(0.001)
    for thread in threads[1:]:
        thread.start()
    while batcher.pending < 7:
        threading.Event().wait(0.001)
    embedder.release.set()
    for thread in threads:
        thread.join(10)


def test_concurrent_queries_share_one_forward_pass_and_get_their_own_vectors() -> None:
    embedder = SlowEmbedder()
    batcher = QueryBatcher(embedder.embed_documents)
    results: dict[int, list[float]] = {}

    def ask(n: int) -> None:
        results[n] = batcher.embed(f"question {n}")

    ask_in_two_rounds(embedder, batcher, ask)
    assert embedder.batches == [1, 7]
    for n in range(8):
        assert results[n] == HashEmbedder().embed_query(f"question {n}")


def test_a_failed_batch_fails_each_waiter_and_the_next_call_works() -> None:
    calls = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append(list(texts))
        if len(calls) == 1:
            raise RuntimeError("model crashed")
        return [[1.0] for _ in texts]

    batcher = QueryBatcher(embed)
    with pytest.raises(RuntimeError, match="model crashed"):
        batcher.embed("a")
    assert batcher.embed("b") == [1.0]


def test_lone_surrogate_in_one_search_does_not_fail_its_batch_neighbours() -> None:
    embedder = SlowEmbedder()  # like the real tokenizer, it fails any batch holding a lone surrogate
    batcher = QueryBatcher(embedder.embed_documents)
    results: dict[int, list[float] | BaseException] = {}
    texts = {n: f"question {n}" for n in range(8)}
    texts[3] = texts[6] = "odometry \ud800"  # two bad readers in one round

    def ask(n: int) -> None:
        try:
            results[n] = batcher.embed(texts[n])
        except Exception as error:
            results[n] = error

    ask_in_two_rounds(embedder, batcher, ask)
    assert embedder.batches[:2] == [1, 7]  # the round of seven was tried together first
    for n in (3, 6):
        assert isinstance(results[n], UnicodeEncodeError)
    for n in (0, 1, 2, 4, 5, 7):
        assert results[n] == HashEmbedder().embed_query(f"question {n}")
    assert batcher.embed("question 9") == HashEmbedder().embed_query("question 9")  # serving goes on
