"""The settings are declared in areas that ``Settings`` inherits: the environment variables, their
defaults and their rules are the flat model's, and a component can be handed a single area."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from bookwise.settings import (
    AREAS,
    EmbeddingSettings,
    IngestSettings,
    LLMSettings,
    ServerSettings,
    Settings,
)

# Every variable and its default as the flat class had them before it was split into areas.
VARIABLES: dict[str, Any] = {
    "BOOKWISE_DATA_DIR": Path(".bookwise"),
    "BOOKWISE_QDRANT_URL": None,
    "BOOKWISE_QDRANT_API_KEY": None,
    "BOOKWISE_QDRANT_COLLECTION": "bookwise",
    "BOOKWISE_QDRANT_TIMEOUT_S": 10.0,
    "BOOKWISE_KEEP_GENERATIONS": 2,
    "BOOKWISE_EMBEDDING_PROVIDER": "local",
    "BOOKWISE_EMBEDDING_MODEL": None,
    "BOOKWISE_EMBEDDING_BASE_URL": None,
    "BOOKWISE_EMBEDDING_API_KEY": None,
    "BOOKWISE_EMBEDDING_BATCH_SIZE": 64,
    "BOOKWISE_EMBEDDING_ADAPT": None,
    "BOOKWISE_EMBEDDING_ADAPT_MAX_PAIRS": 3000,
    "BOOKWISE_EMBEDDING_TIMEOUT_S": 30.0,
    "BOOKWISE_EMBEDDING_THREADS": 1,
    "BOOKWISE_QUERY_VECTOR_CACHE": 4096,
    "BOOKWISE_CHUNK_MAX_TOKENS": 450,
    "BOOKWISE_CHUNK_OVERLAP_TOKENS": 60,
    "BOOKWISE_CHUNK_MIN_TOKENS": 40,
    "BOOKWISE_MAX_FILE_BYTES": 2000000,
    "BOOKWISE_MODULE_DEPTH": 1,
    "BOOKWISE_CHAPTER_DEPTH": 2,
    "BOOKWISE_RETRIEVAL_TOP_K": 5,
    "BOOKWISE_RETRIEVAL_MAX_TOP_K": 20,
    "BOOKWISE_RETRIEVAL_CANDIDATES": 50,
    "BOOKWISE_RETRIEVAL_PREFETCH": 100,
    "BOOKWISE_RETRIEVAL_RRF_K": 10,
    "BOOKWISE_RETRIEVAL_DENSE_WEIGHT": 1.0,
    "BOOKWISE_RETRIEVAL_SPARSE_WEIGHT": 1.0,
    "BOOKWISE_RETRIEVAL_READER_PAGE_SECTIONS": 2,
    "BOOKWISE_SECTION_MAX_TOKENS": 600,
    "BOOKWISE_SUFFICIENCY_THRESHOLD": None,
    "BOOKWISE_INDEX_REFRESH_S": 1.0,
    "BOOKWISE_RETRIEVAL_THREADS": 32,
    "BOOKWISE_RERANK_PROVIDER": "none",
    "BOOKWISE_RERANK_MODEL": None,
    "BOOKWISE_RERANK_CANDIDATES": 20,
    "BOOKWISE_RETRIEVAL_TIMEOUT_S": 10.0,
    "BOOKWISE_BOOK_TITLE": "this book",
    "BOOKWISE_LLM_BASE_URL": None,
    "BOOKWISE_LLM_API_KEY": None,
    "BOOKWISE_LLM_MODEL": "gpt-4o-mini",
    "BOOKWISE_LLM_TEMPERATURE": 0.2,
    "BOOKWISE_LLM_MAX_TOKENS": 800,
    "BOOKWISE_LLM_MAX_TOKENS_PARAM": "max_tokens",
    "BOOKWISE_LLM_SEND_TEMPERATURE": True,
    "BOOKWISE_LLM_REASONING_TIMEOUT_S": 60.0,
    "BOOKWISE_LLM_CONNECT_TIMEOUT_S": 3.0,
    "BOOKWISE_LLM_FIRST_TOKEN_TIMEOUT_S": 15.0,
    "BOOKWISE_LLM_IDLE_TIMEOUT_S": 20.0,
    "BOOKWISE_LLM_TOTAL_TIMEOUT_S": 90.0,
    "BOOKWISE_LLM_MAX_RETRIES": 2,
    "BOOKWISE_LLM_RETRY_MAX_WAIT_S": 5.0,
    "BOOKWISE_LLM_REWRITE_TIMEOUT_S": 5.0,
    "BOOKWISE_EVAL_JUDGE_MODEL": None,
    "BOOKWISE_API_HOST": "127.0.0.1",
    "BOOKWISE_API_PORT": 8000,
    "BOOKWISE_ALLOWED_ORIGINS": [],
    "BOOKWISE_TRUSTED_PROXIES": [],
    "BOOKWISE_MAX_BODY_BYTES": 65536,
    "BOOKWISE_MAX_QUESTION_CHARS": 2000,
    "BOOKWISE_MAX_SELECTION_CHARS": 4000,
    "BOOKWISE_MAX_HISTORY_TURNS": 10,
    "BOOKWISE_MAX_HISTORY_CHARS": 4000,
    "BOOKWISE_RATE_LIMIT_PER_MINUTE": 30,
    "BOOKWISE_RATE_LIMIT_PER_ADDRESS_PER_MINUTE": 300,
    "BOOKWISE_INSTANT_SEARCH_PER_MINUTE": 600,
    "BOOKWISE_INSTANT_SEARCH_DENSE_WORDS": 1,
    "BOOKWISE_MAX_STREAMS_PER_CLIENT": 3,
    "BOOKWISE_MAX_STREAMS_PER_ADDRESS": 30,
    "BOOKWISE_MAX_STREAMS": 256,
    "BOOKWISE_SSE_PING_S": 15,
    "BOOKWISE_SSE_SEND_TIMEOUT_S": 30.0,
    "BOOKWISE_MCP_CONTENTS_MAX_PAGES": 200,
    "BOOKWISE_MCP_CONTENTS_MAX_BYTES": 262144,
    "BOOKWISE_FEEDBACK_DB": None,
    "BOOKWISE_WIDGET_PATH": None,
    "BOOKWISE_SITE_DIR": None,
    "BOOKWISE_MIN_FREE_DISK_MB": 200,
    "BOOKWISE_HTTP_REQUEST_TIMEOUT_S": 15.0,
    "BOOKWISE_HTTP_KEEP_ALIVE_S": 5,
    "BOOKWISE_HTTP_MAX_CONNECTIONS": 1000,
    "BOOKWISE_HTTP_MAX_CONNECTIONS_PER_CLIENT": 64,
    "BOOKWISE_HTTP_MAX_HEADER_BYTES": 16384,
    "BOOKWISE_API_DOCS": False,
    "BOOKWISE_FEEDBACK_MAX_COMMENT_CHARS": 2000,
    "BOOKWISE_FEEDBACK_MAX_BYTES": 50000000,
    "BOOKWISE_FEEDBACK_REMEMBERED_ANSWERS": 10000,
    "BOOKWISE_INGEST_EXTRA_ROOTS": [],
    "BOOKWISE_ALLOWED_HOSTS": [],
    "BOOKWISE_METRICS": False,
    "BOOKWISE_METRICS_TOKEN": None,
    "BOOKWISE_METRICS_PORT": None,
    "BOOKWISE_METRICS_HOST": "127.0.0.1",
    "BOOKWISE_METRICS_MAX_CONNECTIONS": 32,
    "BOOKWISE_REDIS_URL": None,
    "BOOKWISE_REDIS_TIMEOUT_S": 0.5,
    "BOOKWISE_RATE_LIMIT_MAX_CLIENTS": 100000,
    "BOOKWISE_API_WORKERS": 1,
    "BOOKWISE_LLMS_MAX_CHARS": 50000,
    "BOOKWISE_QUESTION_LOG": False,
    "BOOKWISE_INSIGHTS_DB_URL": None,
    "BOOKWISE_QUESTION_LOG_RETENTION_DAYS": 90,
    "BOOKWISE_READER_HASH_KEY": None,
    "BOOKWISE_ADMIN_TOKEN": None,
    "BOOKWISE_INDEX_UPLOAD_MAX_MB": 2048,
    "BOOKWISE_PAGE_CONTEXT_MAX_TOKENS": 3000,
    "BOOKWISE_SUGGESTED_QUESTIONS": 3,
    "BOOKWISE_SUGGESTED_QUESTIONS_MAX_SEARCHES": 5000,
}


def declared_in(area: type[BaseModel]) -> list[str]:
    inherited = {name for base in area.__bases__ for name in getattr(base, "model_fields", {})}
    return [name for name in area.model_fields if name not in inherited]


def test_the_variables_and_their_defaults_are_the_flat_models() -> None:
    variables = {
        f"BOOKWISE_{name.upper()}": field.get_default(call_default_factory=True)
        for name, field in Settings.model_fields.items()
    }
    assert variables == VARIABLES


def test_every_setting_is_declared_in_exactly_one_area_and_settings_has_them_all() -> None:
    declared = [name for area in AREAS for name in declared_in(area)]
    assert sorted(declared) == sorted(Settings.model_fields)
    assert len(declared) == len(set(declared))
    assert all(issubclass(Settings, area) for area in AREAS)


@pytest.mark.parametrize("area", AREAS, ids=lambda area: area.__name__)
def test_an_area_alone_has_the_fields_and_rules_of_settings(area: type[BaseModel]) -> None:
    for name, field in area.model_fields.items():
        flat = Settings.model_fields[name]
        assert (field.annotation, field.description, field.metadata) == (
            flat.annotation,
            flat.description,
            flat.metadata,
        )
        assert field.get_default(call_default_factory=True) == flat.get_default(call_default_factory=True)
    built = area()  # every default is valid on its own
    with pytest.raises(ValidationError, match="frozen"):
        setattr(built, next(iter(area.model_fields)), None)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        area(not_a_setting=1)


def test_an_area_refuses_what_settings_refuses_with_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError) as alone:
        LLMSettings(llm_temperature=3)
    with pytest.raises(ValidationError) as flat:
        Settings(llm_temperature=3)
    assert alone.value.errors(include_url=False) == flat.value.errors(include_url=False)


def test_list_settings_read_the_comma_and_json_forms_in_their_areas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ServerSettings(allowed_hosts="docs.example.org, api").allowed_hosts == ["docs.example.org", "api"]
    assert IngestSettings(ingest_extra_roots='["../shared"]').ingest_extra_roots == [Path("../shared")]
    with pytest.raises(ValidationError, match="not a JSON list"):
        ServerSettings(trusted_proxies="[10.0.0.1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOOKWISE_TRUSTED_PROXIES", "10.0.0.1,10.0.0.2")
    monkeypatch.setenv("BOOKWISE_INGEST_EXTRA_ROOTS", "../a, ../b")
    settings = Settings()
    assert settings.trusted_proxies == ["10.0.0.1", "10.0.0.2"]
    assert settings.ingest_extra_roots == [Path("../a"), Path("../b")]


# One setting of each area: its line in bookwise.toml and what it reads as, then its variable's text and
# what that reads as.
PER_AREA: dict[str, tuple[str, Any, str, Any]] = {
    "data_dir": ('"from-file"', Path("from-file"), "from-env", Path("from-env")),
    "qdrant_url": ('":memory:"', ":memory:", "http://qdrant:6333", "http://qdrant:6333"),
    "embedding_provider": ('"hash"', "hash", "openai", "openai"),
    "chunk_max_tokens": ("300", 300, "200", 200),
    "retrieval_candidates": ("40", 40, "30", 30),
    "retrieval_top_k": ("4", 4, "3", 3),
    "llm_base_url": ('"http://file/v1"', "http://file/v1", "http://env/v1", "http://env/v1"),
    "book_title": ('"File"', "File", "Env", "Env"),
    "max_streams_per_client": ("4", 4, "5", 5),
    "rate_limit_per_minute": ("40", 40, "50", 50),
    "api_host": ('"0.0.0.0"', "0.0.0.0", "::1", "::1"),
    "mcp_contents_max_pages": ("20", 20, "30", 30),
    "feedback_db": ('"file.sqlite3"', Path("file.sqlite3"), "env.sqlite3", Path("env.sqlite3")),
    "metrics_host": ('"0.0.0.0"', "0.0.0.0", "::1", "::1"),
}


def test_every_area_is_read_from_the_toml_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    areas = {area for name in PER_AREA for area in AREAS if name in declared_in(area)}
    assert areas == set(AREAS)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bookwise.toml").write_text(
        "".join(f"{name} = {line}\n" for name, (line, *_) in PER_AREA.items())
    )
    from_file = Settings()
    assert {name: getattr(from_file, name) for name in PER_AREA} == {
        name: v[1] for name, v in PER_AREA.items()
    }
    for name, (_, _, text, _) in PER_AREA.items():
        monkeypatch.setenv(f"BOOKWISE_{name.upper()}", text)
    from_env = Settings()
    assert {name: getattr(from_env, name) for name in PER_AREA} == {
        name: v[3] for name, v in PER_AREA.items()
    }


def test_a_component_can_be_built_from_its_area_alone(tmp_path: Path) -> None:
    from bookwise.generation.llm import LLMClient
    from bookwise.index.embedders import create_embedder

    llm = LLMClient(LLMSettings(llm_base_url="http://127.0.0.1:9/v1", llm_model="area-model"))
    assert llm.model == "area-model"
    embedder = create_embedder(
        EmbeddingSettings(embedding_provider="hash", data_dir=tmp_path), runtime="ingest"
    )
    assert embedder.model_id == "hash-384"
