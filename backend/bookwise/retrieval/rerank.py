"""The optional reranking stage: rescoring the top sections with a stronger (slower) model.

Off by default: no reranking model ships offline. With ``rerank_provider = "cross-encoder"`` a
sentence-transformers cross-encoder (a local path or a model name the machine can load) rescores
the top ``rerank_candidates`` sections; anything else implementing ``Reranker`` can be passed in.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from bookwise.errors import ConfigError
from bookwise.settings import Settings


class Reranker(Protocol):
    name: str

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """One relevance score per passage, higher is better."""


class CrossEncoderReranker:
    def __init__(self, model: str) -> None:
        self.name = f"cross-encoder:{model}"
        self._model_name = model
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as exc:  # the `local` extra is not installed
                    raise ConfigError("the cross-encoder reranker needs sentence-transformers") from exc
                try:
                    self._model = CrossEncoder(self._model_name, device="cpu")
                except Exception as exc:  # a missing or unreadable model
                    raise ConfigError(f"cannot load reranker model {self._model_name!r}: {exc}") from exc
            return self._model

    def scores(self, query: str, passages: list[str]) -> list[float]:
        model = self._load()
        return [float(s) for s in model.predict([(query, p) for p in passages])]


def create_reranker(settings: Settings) -> Reranker | None:
    if settings.rerank_provider == "none":
        return None
    if not settings.rerank_model:
        raise ConfigError("rerank_provider is 'cross-encoder' but rerank_model is not set")
    return CrossEncoderReranker(settings.rerank_model)
