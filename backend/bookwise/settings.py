"""The one settings object. Read once (env ``BOOKWISE_*``, then ``bookwise.toml``) and passed down.

Every limit is a named, documented field; the README's settings table is checked against this class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

EmbeddingProvider = Literal["local", "openai", "hash"]
RerankProvider = Literal["none", "cross-encoder"]

DEFAULT_MODELS: dict[str, str] = {
    "local": "all-MiniLM-L6-v2",
    "openai": "text-embedding-3-small",
    "hash": "hash-384",
}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BOOKWISE_", toml_file="bookwise.toml", extra="forbid", frozen=True
    )

    data_dir: Path = Field(
        Path(".bookwise"), description="Where the embedded index, embedding cache and feedback live."
    )
    qdrant_url: str | None = Field(
        None, description="Qdrant server URL. Unset: the embedded on-disk engine (Qdrant Edge) is used."
    )
    qdrant_api_key: SecretStr | None = Field(None, description="API key for the Qdrant server.")
    qdrant_collection: str = Field(
        "bookwise", description="Alias readers query; each ingest writes a new collection behind it."
    )
    qdrant_timeout_s: float = Field(10.0, gt=0, description="Timeout of every Qdrant server call.")
    keep_generations: int = Field(
        2, ge=1, description="Index generations kept after a switch (the live one included)."
    )

    embedding_provider: EmbeddingProvider = Field(
        "local",
        description="`local` (offline MiniLM), `openai` (any OpenAI-compatible API) or `hash` (tests).",
    )
    embedding_model: str | None = Field(
        None, description="Embedding model name; default depends on the provider."
    )
    embedding_base_url: str | None = Field(
        None, description="Base URL of the OpenAI-compatible embeddings API."
    )
    embedding_api_key: SecretStr | None = Field(None, description="API key of the embeddings API.")
    embedding_batch_size: int = Field(64, ge=1, le=2048, description="Texts per embedding call.")
    embedding_adapt: bool | None = Field(
        None,
        description="Fine-tune the local model on the site's own headings and text when an index is "
        "built from scratch (minutes on CPU; better ranking). Unset: on for the embedded index, off "
        "with a Qdrant server (the adapted model would have to travel with the index).",
    )
    embedding_adapt_max_pairs: int = Field(
        3000, ge=8, description="Most (heading context, chunk) pairs the adaptation trains on."
    )
    embedding_timeout_s: float = Field(30.0, gt=0, description="Timeout of one embeddings API call.")

    chunk_max_tokens: int = Field(
        450, ge=32, description="Largest chunk, in embedding-model tokens (capped by the model's input size)."
    )
    chunk_overlap_tokens: int = Field(
        60, ge=0, description="Tokens repeated between consecutive chunks of one section."
    )
    chunk_min_tokens: int = Field(
        40, ge=0, description="A trailing piece smaller than this is merged into the previous chunk."
    )
    max_file_bytes: int = Field(
        2_000_000, ge=1, description="Source files larger than this are reported and skipped."
    )
    module_depth: int = Field(
        1, ge=0, description="Folder depth whose category label is a doc's `module` (0 disables)."
    )
    chapter_depth: int = Field(
        2, ge=0, description="Folder depth whose category label is a doc's `chapter` (0 disables)."
    )

    retrieval_top_k: int = Field(5, ge=1, description="Sections returned when a request does not say.")
    retrieval_max_top_k: int = Field(20, ge=1, description="Largest `top_k` a request may ask for.")
    retrieval_candidates: int = Field(
        50, ge=1, description="Fused chunks considered before grouping them into sections."
    )
    retrieval_prefetch: int = Field(
        100, ge=1, description="Candidates each channel (dense, BM25) hands to the fusion."
    )
    retrieval_rrf_k: int = Field(
        10, ge=1, description="RRF rank constant: lower trusts each channel's top ranks more."
    )
    retrieval_dense_weight: float = Field(1.0, ge=0, description="RRF weight of the dense channel.")
    retrieval_sparse_weight: float = Field(1.0, ge=0, description="RRF weight of the BM25 channel.")
    section_max_tokens: int = Field(
        600, ge=16, description="Context budget of one returned section (small-to-big assembly)."
    )
    sufficiency_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="P(answerable) below which retrieval reports `sufficient_context: false`. "
        "Unset: the threshold calibrated from data (`scripts/calibrate_sufficiency.py`).",
    )
    index_refresh_s: float = Field(
        1.0, ge=0, description="How often a running reader checks for a newer index generation."
    )
    retrieval_threads: int = Field(
        4, ge=1, description="Searches run at once in worker threads (they are CPU-bound)."
    )
    rerank_provider: RerankProvider = Field(
        "none", description="`none` (default) or `cross-encoder` (a sentence-transformers model)."
    )
    rerank_model: str | None = Field(None, description="Reranker model: a local path or model name.")
    rerank_candidates: int = Field(20, ge=1, description="Top sections the reranker rescores.")

    @property
    def adapts_embedder(self) -> bool:
        if self.embedding_provider != "local":
            return False
        return self.embedding_adapt if self.embedding_adapt is not None else not self.qdrant_url

    @property
    def resolved_embedding_model(self) -> str:
        return self.embedding_model or DEFAULT_MODELS[self.embedding_provider]

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit arguments beat env vars, which beat bookwise.toml.
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))
