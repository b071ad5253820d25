"""The one settings object. Read once (env ``BOOKWISE_*``, then ``bookwise.toml``) and passed down.

Every limit is a named, documented field; the manual's settings page is generated from these classes.
The fields are declared in areas (index, embeddings, retrieval, the chat model, ...), and ``Settings``
inherits them all: the names stay flat, so each environment variable is ``BOOKWISE_`` and the field's
name, while a component declares the area it reads (``LLMClient(settings: LLMSettings)``) and mypy holds
it to that. A component that reads several areas takes one of the few combinations below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

EmbeddingProvider = Literal["local", "openai", "hash"]
RerankProvider = Literal["none", "learned", "cross-encoder"]

DEFAULT_MODELS: dict[str, str] = {
    "local": "all-MiniLM-L6-v2",
    "openai": "text-embedding-3-small",
    "hash": "hash-384",
}


def _list_from_env(value: Any) -> Any:
    """A JSON list, or the comma-separated form people write first (`http://localhost:3000,https://x`)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise ValueError("not a JSON list; write one, or comma-separated values") from None
    return [item.strip() for item in text.split(",") if item.strip()]


_T = TypeVar("_T")
# A list setting: read by ``_list_from_env``, not decoded as JSON by the settings sources first.
EnvList = Annotated[list[_T], NoDecode, BeforeValidator(_list_from_env)]


class _Area(BaseModel):
    """One area of the settings. Alone (a test, a component built by hand) it validates as ``Settings``
    does, without reading the environment or ``bookwise.toml``."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
    area: ClassVar[str]  # the heading of the area's table in the manual


class DataSettings(_Area):
    """Where Bookwise keeps its files, and the free space it must leave there."""

    area: ClassVar[str] = "Data directory"

    data_dir: Path = Field(
        Path(".bookwise"),
        description="Where the embedded index, the embedding cache and the feedback live.",
    )
    min_free_disk_mb: int = Field(
        200,
        ge=0,
        description="Free space the data dir's disk must keep. Below it an ingest stops with `disk_full` "
        "before writing (checked again between batches, with the live generation's size added "
        "before a new one), and a reader does not open a shard. The live index is untouched. `0`"
        " turns the check off (a full disk can then kill Edge with `SIGBUS`).",
    )


class IndexSettings(DataSettings):
    """The index: the embedded engine (Qdrant Edge) in the data dir, or a Qdrant server, and the generations
    an ingest writes."""

    area: ClassVar[str] = "Index"

    qdrant_url: str | None = Field(
        None,
        description="Qdrant server URL. When unset, the embedded on-disk engine (Qdrant Edge) is used. "
        "`:memory:` gives an in-process qdrant-client (tests).",
    )
    qdrant_api_key: SecretStr | None = Field(None, description="API key for the Qdrant server.")
    qdrant_collection: str = Field(
        "bookwise",
        description="The alias that readers query. Each ingest writes a new collection "
        "`<alias>__<generation>` behind it.",
    )
    qdrant_timeout_s: float = Field(10.0, gt=0, description="Timeout of every Qdrant server call.")
    keep_generations: int = Field(
        2, ge=1, description="Index generations kept after a switch (the live one included)."
    )
    index_upload_max_mb: int = Field(
        2048,
        ge=1,
        description="Largest index generation `PUT /api/admin/index` accepts, in MB: the archive as sent "
        "and its unpacked files each (an adapted embedder travels with it, about 90 MB). Beyond, "
        "413 `payload_too_large` and nothing is kept.",
    )


class EmbeddingSettings(DataSettings):
    """The model that turns passages and questions into vectors."""

    area: ClassVar[str] = "Embeddings"

    embedding_provider: EmbeddingProvider = Field(
        "local",
        description="`local` (offline all-MiniLM-L6-v2), `openai` (any OpenAI-compatible API) or `hash` "
        "(deterministic; tests only).",
    )
    embedding_model: str | None = Field(
        None,
        description="Embedding model name. Unset: the provider's, `all-MiniLM-L6-v2`, "
        "`text-embedding-3-small` or `hash-384`.",
    )
    embedding_base_url: str | None = Field(
        None,
        description="Base URL of the OpenAI-compatible embeddings API (OpenAI, Ollama, vLLM).",
    )
    embedding_api_key: SecretStr | None = Field(None, description="API key of the embeddings API.")
    embedding_batch_size: int = Field(64, ge=1, le=2048, description="Texts per embedding call.")
    embedding_adapt: bool | None = Field(
        None,
        description="Adapt the local MiniLM to the site (a short fine-tune on its own headings and text) "
        "when an index is built from scratch; the adapted model is saved under `<data "
        "dir>/models/`. Unset: on for the embedded index, off with a Qdrant server, where the "
        "model would have to travel with the index (persist `<data dir>/models` and ship it to "
        "the API host to turn it on).",
    )
    embedding_adapt_max_pairs: int = Field(
        3000,
        ge=8,
        description="The most (heading context, chunk) pairs the adaptation trains on; bounds its time on "
        "large sites.",
    )
    embedding_timeout_s: float = Field(30.0, gt=0, description="Timeout of one embeddings API call.")
    embedding_threads: int = Field(
        1,
        ge=0,
        description="Threads one process's ONNX Runtime uses to embed questions; 0: as many as the "
        "machine has cores. A question is too little work to share out: on 2 cores one thread took "
        "less CPU and no more time than two (scripts/bench_embed_threads.py).",
    )
    query_vector_cache: int = Field(
        4096,
        ge=0,
        description="Question vectors kept in memory by each API process (by model and question text, "
        "whitespace normalised): a question asked again is not embedded again. 0 turns the cache off.",
    )

    @property
    def resolved_embedding_model(self) -> str:
        return self.embedding_model or DEFAULT_MODELS[self.embedding_provider]


class IngestSettings(_Area):
    """How `bookwise ingest` reads the site and cuts it into chunks, and what else it builds from it."""

    area: ClassVar[str] = "Ingest"

    chunk_max_tokens: int = Field(
        450,
        ge=32,
        description="Largest chunk in embedding-model tokens, capped by the model's input size (256 for "
        "MiniLM).",
    )
    chunk_overlap_tokens: int = Field(
        60,
        ge=0,
        description="Tokens repeated between consecutive chunks of one section (at most a quarter of the "
        "chunk).",
    )
    chunk_min_tokens: int = Field(
        40, ge=0, description="A trailing piece smaller than this is merged into the previous chunk."
    )
    max_file_bytes: int = Field(
        2_000_000, ge=1, description="Source files larger than this are reported and skipped."
    )
    module_depth: int = Field(
        1,
        ge=0,
        description="Folder depth whose category label is a doc's `module` (0 disables). Front matter "
        "`module:` wins.",
    )
    chapter_depth: int = Field(
        2,
        ge=0,
        description="Folder depth whose category label is a doc's `chapter` (0 disables). Front matter "
        "`chapter:` wins.",
    )
    ingest_extra_roots: EnvList[Path] = Field(
        default_factory=list,
        description="Folders outside the site directory that docs, docs folders and MDX imports may "
        "resolve into (comma-separated or a JSON list), e.g. a monorepo's shared docs. Empty: anything "
        "resolving outside the site is refused with `outside_site`.",
    )
    suggested_questions: int = Field(
        3,
        ge=0,
        le=3,
        description="Suggested questions kept per page by `bookwise ingest` (each checked by retrieval), "
        "served by `GET /api/suggestions`; `0` builds none.",
    )
    suggested_questions_max_searches: int = Field(
        5000,
        ge=0,
        description="Most searches the suggested-questions step of `bookwise ingest` makes (one per proposed"
        " question checked), so a big book's ingest ends in bounded time. Pages are checked "
        "breadth first: each page's best proposal before any page's second. Pages left when the "
        "cap is reached offer only their questions about the page itself "
        "([scale](ingest.md#scale)).",
    )
    llms_max_chars: int = Field(
        50_000,
        ge=1_000,
        description="Longest `llms.txt` `bookwise llms` writes, in characters. Over it, page descriptions "
        "are dropped, then it links one list per section, then the list is cut with a link to "
        "`llms-full.txt`.",
    )


class RetrievalSettings(_Area):
    """How a question finds its sections: the two channels, their fusion, the reranker and the budgets."""

    area: ClassVar[str] = "Retrieval"

    retrieval_candidates: int = Field(
        50,
        ge=1,
        description="Fused chunks considered before they are grouped into sections.",
    )
    retrieval_prefetch: int = Field(
        100, ge=1, description="Candidates each channel (dense, BM25) hands to the fusion."
    )
    retrieval_rrf_k: int = Field(
        10,
        ge=1,
        description="RRF rank constant; lower trusts each channel's first ranks more (tuned, see "
        "[Benchmarks](benchmarks.md#retrieval-quality)).",
    )
    retrieval_dense_weight: float = Field(1.0, ge=0, description="RRF weight of the dense channel.")
    retrieval_sparse_weight: float = Field(1.0, ge=0, description="RRF weight of the BM25 channel.")
    retrieval_reader_page_sections: int = Field(
        2,
        ge=0,
        le=10,
        description="Sections of the page the reader asks from (`page.url`) searched besides the book's; "
        "a passage of that page leads when it scores near the best. `0` adds none.",
    )
    section_max_tokens: int = Field(
        600,
        ge=16,
        description="Context budget of one returned section: matching chunks first, then their neighbours.",
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
        32,
        ge=1,
        description="Searches in flight at once, in worker threads. Their query embeddings are computed "
        "together in one forward pass, so under load more in flight means larger, cheaper "
        "batches (4 gave a 2.2 s p50 time to `sources` at 100 streams, 32 gave 0.8 s).",
    )
    rerank_provider: RerankProvider = Field(
        "none",
        description="`none`; `learned` to reorder the top sections with a scorer fitted at ingest on the "
        "book's own synthetic questions and stored with the index (set it for the ingest too); or "
        "`cross-encoder` to rescore them with a sentence-transformers cross-encoder.",
    )
    rerank_model: str | None = Field(
        None,
        description="The cross-encoder: a local path or a model name the machine can load.",
    )
    rerank_candidates: int = Field(20, ge=1, description="Top sections the reranker rescores.")
    retrieval_timeout_s: float = Field(
        10.0,
        gt=0,
        description="Longest a request's retrieval (query embedding + search) may take; past it the API "
        "answers 503 `retrieval_timeout`.",
    )
    instant_search_dense_words: int = Field(
        1,
        ge=0,
        description="Complete words (stop words aside) a keystroke search needs before the dense channel "
        "ranks too (it weighs in full from three); below it the search is lexical only (0: always dense).",
    )


class RequestSettings(_Area):
    """What one request may carry and ask for, wherever it comes from (the API, the CLI, MCP)."""

    area: ClassVar[str] = "Requests"

    retrieval_top_k: int = Field(5, ge=1, description="Sections returned when a request does not say.")
    retrieval_max_top_k: int = Field(20, ge=1, description="Largest `top_k` a request may ask for.")
    max_body_bytes: int = Field(
        65_536,
        ge=1024,
        description="Largest request body (checked on `Content-Length` and while reading).",
    )
    max_question_chars: int = Field(2000, ge=1, description="Longest question.")
    max_selection_chars: int = Field(4000, ge=1, description="Longest selected text.")
    max_history_turns: int = Field(10, ge=0, description="Most earlier turns a request may carry.")
    max_history_chars: int = Field(4000, ge=1, description="Longest single earlier turn.")


class LLMSettings(_Area):
    """The OpenAI-compatible chat API that writes answers, and how long it may take."""

    area: ClassVar[str] = "Chat model"

    llm_base_url: str | None = Field(
        None,
        description="Base URL of an OpenAI-compatible chat API (`https://api.openai.com/v1`, Ollama "
        "`http://127.0.0.1:11434/v1`, vLLM, llama.cpp). Unset: answers are extractive (the "
        "book's own passages, quoted whole).",
    )
    llm_api_key: SecretStr | None = Field(None, description="API key of the chat API.")
    llm_model: str = Field("gpt-4o-mini", description="Chat model name.")
    llm_temperature: float = Field(0.2, ge=0, le=2, description="Sampling temperature of answers.")
    llm_max_tokens: int = Field(800, ge=16, description="Longest answer, in model tokens.")
    llm_max_tokens_param: Literal["max_tokens", "max_completion_tokens", "none"] = Field(
        "max_tokens",
        description="How the length limit is sent: `max_tokens`, `max_completion_tokens` (OpenAI's reasoning"
        " models accept only this one; it counts reasoning tokens too) or `none` (not sent).",
    )
    llm_send_temperature: bool = Field(
        True, description="Send `temperature`; turn off for models that reject it (OpenAI o-series, GPT-5)."
    )
    llm_reasoning_timeout_s: float = Field(
        60.0,
        gt=0,
        description="Longest a reasoning model may think (reasoning deltas, or a `<think>` block) between "
        "its first reasoning delta and its first answer token; past it the answer ends with "
        "`llm_timeout`, not retried. Reasoning deltas count as signs of life for the first-token"
        " and idle timeouts.",
    )
    llm_connect_timeout_s: float = Field(3.0, gt=0, description="Connecting to the chat API.")
    llm_first_token_timeout_s: float = Field(
        15.0, gt=0, description="Longest wait for the first token of an answer (per attempt)."
    )
    llm_idle_timeout_s: float = Field(
        20.0,
        gt=0,
        description="Longest silence between two tokens; past it the answer ends with `llm_timeout`.",
    )
    llm_total_timeout_s: float = Field(
        90.0,
        gt=0,
        description="Longest a whole answer may take, retries included.",
    )
    llm_max_retries: int = Field(
        2,
        ge=0,
        description="Retries of a failed chat call (connection error, 429, 5xx, timeout), only before its "
        "first token.",
    )
    llm_retry_max_wait_s: float = Field(
        5.0, ge=0, description="Longest pause before a retry (a 429's `Retry-After` is honoured up to this)."
    )
    llm_rewrite_timeout_s: float = Field(
        5.0,
        gt=0,
        description="Rewriting a follow-up into a standalone query with the model; past it, the "
        "deterministic rewrite is used.",
    )
    eval_judge_model: str | None = Field(
        None,
        description="The model that judges answers in `bookwise eval --answers` (whether every sentence is "
        "supported by the source it cites), on the same chat API. Unset: `BOOKWISE_LLM_MODEL`.",
    )


class AnswerSettings(_Area):
    """What an answer is given besides the retrieved sections."""

    area: ClassVar[str] = "Answers"

    book_title: str = Field(
        "this book",
        description="The book's name, as the assistant calls it in its instructions.",
    )
    page_context_max_tokens: int = Field(
        3000,
        ge=100,
        description="Most tokens of the reader's page given to the model for a page action "
        '(`summarize_page`, `quiz_page`) or a question about "this page": its sections in '
        "reading order until this budget.",
    )


class StreamSettings(_Area):
    """How many answers stream at once, and how a stream is kept alive."""

    area: ClassVar[str] = "Answer streams"

    max_streams_per_client: int = Field(
        3, ge=1, description="Answers one client (a reader the widget names, else an IP) may stream at once."
    )
    max_streams_per_address: int = Field(
        30,
        ge=1,
        description="Answers the readers behind one address (see `rate_limit_per_address_per_minute`) may "
        "stream at once in all.",
    )
    max_streams: int = Field(
        256,
        ge=1,
        description="Answers the server streams at once; beyond it, 503 `server_busy` at once (no queue).",
    )
    sse_ping_s: int = Field(
        15,
        ge=1,
        description="Keep-alive comment interval on answer streams, in seconds (proxies drop idle "
        "connections).",
    )
    sse_send_timeout_s: float = Field(
        30.0, gt=0, description="A stream whose client reads nothing for this long is closed."
    )


class RateLimitSettings(_Area):
    """How often a client may call, counted per process or in Redis."""

    area: ClassVar[str] = "Rate limits"

    rate_limit_per_minute: int = Field(
        30,
        ge=1,
        description="Requests one client (IP) may make per minute to the POST endpoints, `GET "
        "/api/suggestions` and `GET /api/insights` together ([Rate "
        "limits](operations.md#rate-limits-one-process-or-many)).",
    )
    rate_limit_per_address_per_minute: int = Field(
        300,
        ge=1,
        description="Requests per minute from one address in all, for the readers the widget names (an "
        "anonymous id it keeps per browser, sent as `X-Bookwise-Reader`): each of them gets "
        "`rate_limit_per_minute`, so a class or an office behind one address is not one client; requests "
        "without the id share `rate_limit_per_minute` per address, as before.",
    )
    instant_search_per_minute: int = Field(
        600,
        ge=1,
        description="Keystroke searches (`GET /api/search/instant`) one client (IP) may make per minute, "
        "counted apart from `rate_limit_per_minute` and per process: a reader typing fast, with the "
        "widget's debounce, sends a few a second.",
    )
    rate_limit_max_clients: int = Field(
        100_000,
        ge=1,
        description="Clients the in-memory rate limiter counts per minute; beyond, the one seen first is "
        "forgotten first (counted afresh). Bounds its memory: two minutes of counts, about 200 "
        "bytes per client (40 MB at the default).",
    )
    redis_url: str | None = Field(
        None,
        description="Redis counting the request rate for every process and replica that uses it "
        "(`redis://host:6379/0`, `rediss://` for TLS, `unix:///path/redis.sock`). Unset: each "
        "process counts on its own. While Redis is unreachable each process counts on its own "
        "again and logs `rate_limit_redis_down`. See [Rate "
        "limits](operations.md#rate-limits-one-process-or-many).",
    )
    redis_timeout_s: float = Field(
        0.5,
        gt=0,
        description="Longest wait for Redis (connect or reply) before a request falls back to the "
        "per-process count.",
    )


class ServerSettings(_Area):
    """`bookwise serve`: where it listens, whom it trusts, the limits of its HTTP layer and what else it
    serves."""

    area: ClassVar[str] = "Server"

    api_host: str = Field("127.0.0.1", description="Address `bookwise serve` listens on.")
    api_port: int = Field(8000, ge=0, le=65535, description="Port `bookwise serve` listens on.")
    api_workers: int = Field(
        1,
        ge=1,
        le=64,
        description="API processes `bookwise serve` runs on one port (uvicorn workers; `--workers` "
        "overrides). Each has its own index reader, model, stream slots and connection caps: "
        "`BOOKWISE_MAX_STREAMS` and `BOOKWISE_HTTP_MAX_CONNECTIONS` apply per process.",
    )
    allowed_origins: EnvList[str] = Field(
        default_factory=list,
        description="Sites whose pages may call the API, as exact origins, comma-separated "
        "(`https://docs.example.com,http://localhost:3000`) or a JSON list "
        '(`["https://docs.example.com"]`). The API\'s own origin is allowed too, under the hosts '
        "of `BOOKWISE_ALLOWED_HOSTS`. Requests without an `Origin` header (curl, servers) are "
        "not from browsers and pass.",
    )
    allowed_hosts: EnvList[str] = Field(
        default_factory=list,
        description="Host names (no port; comma-separated or a JSON list; `*` for any) under which the API's"
        " own origin is same-origin for the `Origin` check. Empty: only `localhost`, "
        "`127.0.0.1`, `[::1]` when the API is reached on a loopback address, any name otherwise."
        " Behind a proxy, list the site's name ([why](operations.md#deploying-behind-nginx)).",
    )
    trusted_proxies: EnvList[str] = Field(
        default_factory=list,
        description="Addresses or CIDR ranges of your reverse proxies (comma-separated or a JSON list). Only"
        " from them are `X-Forwarded-For` (client address) and `X-Forwarded-Proto` (scheme) "
        "believed; empty: the socket peer and scheme are the client's.",
    )
    http_request_timeout_s: float = Field(
        15.0,
        gt=0,
        description="From the moment the server waits for a request (a new connection, or the end of the "
        "previous answer), the whole request, headers and body, must arrive within this time, or"
        " the connection is closed. Longer answers are not cut. An index upload carrying "
        "`BOOKWISE_ADMIN_TOKEN` is on this clock only while silent (every read re-arms it).",
    )
    http_keep_alive_s: int = Field(
        5,
        ge=1,
        description="An idle keep-alive connection is closed after this many seconds (whole seconds).",
    )
    http_max_connections: int = Field(
        1000,
        ge=1,
        description="Open connections (or running requests) the server accepts; beyond, every new "
        "request is answered 503 at once. Kept below the process's file limit (raised at start if allowed).",
    )
    http_max_connections_per_client: int = Field(
        64,
        ge=1,
        description="Open connections one client address may hold; beyond, a new one is closed at once. Not "
        "applied to `BOOKWISE_TRUSTED_PROXIES` (limit per client at the proxy).",
    )
    http_max_header_bytes: int = Field(
        16_384, ge=1024, description="Largest request line plus headers; beyond, 400 `malformed_request`."
    )
    api_docs: bool = Field(
        False,
        description="Serve the OpenAPI schema at `/api/openapi.json` and its docs page at `/api/docs`.",
    )
    admin_token: SecretStr | None = Field(
        None,
        min_length=16,
        description="Bearer token (`Authorization: Bearer <token>`, at least 16 characters) for the "
        "authors' report at `/api/insights` and for index uploads (`PUT /api/admin/index`, sent by "
        "`bookwise publish`). Unset: those routes do not exist (404).",
    )
    widget_path: Path | None = Field(
        None, description="The widget bundle served at `/widget.js`. Unset: the bundle shipped with Bookwise."
    )
    site_dir: Path | None = Field(
        None,
        description="A built Docusaurus site (its `build/` folder) served at `/` next to the API "
        "(the demo; one origin, so no CORS). Unset: the API only.",
    )


class McpSettings(_Area):
    """The book as tools for agents (`bookwise mcp` and `/mcp`)."""

    area: ClassVar[str] = "MCP"

    mcp_contents_max_pages: int = Field(
        200,
        ge=1,
        description="Most pages one MCP `contents` call lists: the default and the cap of its `limit`; the "
        "rest come with the `cursor` it returns "
        "([paging](agents.md#the-table-of-contents-in-pages)).",
    )
    mcp_contents_max_bytes: int = Field(
        262_144,
        ge=16_384,
        description="Largest MCP `contents` answer, in bytes of JSON (at least 16384): a page that would "
        "pass it is left for the next call, and a page whose headings alone pass it lists only "
        "the headings that fit (`headings_truncated`).",
    )


class InsightsSettings(DataSettings):
    """Readers' ratings, the question log and where they are stored."""

    area: ClassVar[str] = "Feedback and the question log"

    feedback_db: Path | None = Field(
        None,
        description="SQLite file where readers' ratings and the question log are stored (unless "
        "`BOOKWISE_INSIGHTS_DB_URL`). Unset: `feedback.sqlite3` in the data dir. An earlier "
        "version's file is migrated in place.",
    )
    feedback_max_comment_chars: int = Field(
        2000, ge=0, description="Longest feedback comment; a longer one is refused (422)."
    )
    feedback_max_bytes: int = Field(
        50_000_000,
        ge=65_536,
        description="Space the SQLite file of ratings and the question log may use; beyond, the oldest "
        "ratings and questions are deleted first (not applied to PostgreSQL: its space is the "
        "retention's and its operator's).",
    )
    feedback_remembered_answers: int = Field(
        10_000,
        ge=1,
        description="Feedback is accepted once per answer this process gave, among the most recent ones "
        "(request ids kept in memory; an older or unknown id is refused).",
    )
    question_log: bool = Field(
        False,
        description="Keep a log of readers' questions for the book's authors (`bookwise insights`): per "
        "answer the question as typed, its page, version, locale, outcome, evidence score, cited sections "
        "and timings. Never an IP address or a client id: at most a salted hash, its salt replaced daily, "
        "to count distinct readers. Tell readers, e.g. in the site's privacy notice. Off: nothing is kept "
        "but ratings readers send.",
    )
    insights_db_url: SecretStr | None = Field(
        None,
        description="PostgreSQL URL (`postgresql://user:password@host:5432/db`) holding the question log "
        "and feedback, shared by every process and replica that uses it. Unset: the SQLite file "
        "`feedback_db` of this machine.",
    )
    question_log_retention_days: int = Field(
        90,
        ge=1,
        description="While the question log is on, questions and ratings older than this many days are "
        "deleted, at start and then hourly (`bookwise insights --forget-before DATE` deletes at "
        "once).",
    )
    reader_hash_key: SecretStr | None = Field(
        None,
        min_length=32,
        description="Secret (at least 32 characters) the question log's daily reader-hash salt is derived "
        "from, never stored in the insights store; set the same value on every replica sharing "
        "one `BOOKWISE_INSIGHTS_DB_URL`. Unset: a random key in `reader-hash.key` in the data "
        "dir, owner-only, made on first use ([what the hash "
        "protects](insights.md#question-log-and-insights)).",
    )

    @property
    def resolved_feedback_db(self) -> Path:
        return self.feedback_db or self.data_dir / "feedback.sqlite3"

    @property
    def resolved_insights_db(self) -> str | Path:
        """The insights store: the PostgreSQL URL (a secret: never log it), else the SQLite file."""
        url = self.insights_db_url
        return url.get_secret_value() if url is not None else self.resolved_feedback_db


class MetricsSettings(_Area):
    """Prometheus metrics at `/metrics`, off unless enabled."""

    area: ClassVar[str] = "Metrics"

    metrics: bool = Field(
        False,
        description="Serve Prometheus metrics at `/metrics` (see [Metrics](operations.md#metrics)): on the "
        "API's port with `BOOKWISE_METRICS_TOKEN`, or only on `BOOKWISE_METRICS_PORT`. Enabled "
        "with neither: `config_error` at start.",
    )
    metrics_token: SecretStr | None = Field(
        None,
        min_length=16,
        description="Bearer token a scraper must send (`Authorization: Bearer <token>`), at least 16 "
        "characters. Required to serve `/metrics` on the API's port; also checked on `metrics_port` if set.",
    )
    metrics_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Serve `/metrics` on this port (of `metrics_host`) instead of the API's port, from one "
        "listener however many workers run.",
    )
    metrics_host: str = Field(
        "127.0.0.1", description="Address the separate metrics listener (`metrics_port`) binds to."
    )
    metrics_max_connections: int = Field(
        32,
        ge=1,
        description="Open connections the separate metrics listener (`metrics_port`) serves at once (a "
        "thread each); beyond, a new one is closed at once. Each request must arrive within "
        "`http_request_timeout_s`.",
    )


# The components that read more than one area. Python has no intersection type, so each is a class
# that ``Settings`` inherits; it declares no field of its own.


class RetrieverSettings(RetrievalSettings, RequestSettings):
    """The Retriever's: retrieval, and the request bounds it checks ``top_k`` against."""


class OpenRetrieverSettings(EmbeddingSettings, IndexSettings, RetrieverSettings):
    """What opens a Retriever on the live index: the Retriever's areas, the index, and the embedder
    its generation names."""


class IndexBuildSettings(IngestSettings, EmbeddingSettings, IndexSettings, RetrievalSettings):
    """An ingest's: chunking, the embedder, the index, and the retrieval a learned reranker is fitted with."""

    @property
    def adapts_embedder(self) -> bool:
        if self.embedding_provider != "local":
            return False
        return self.embedding_adapt if self.embedding_adapt is not None else not self.qdrant_url


class ServedMetricsSettings(MetricsSettings, StreamSettings, ServerSettings):
    """The metrics of a running server: theirs, the stream slots they report, the listener's deadline."""


class AnswererSettings(LLMSettings, AnswerSettings, RetrievalSettings, RequestSettings):
    """An answer's: the model's rewrite deadline, the book's title and page budget, the search's deadline
    and the request bounds."""


class IndexUploadSettings(EmbeddingSettings, IndexSettings):
    """An index upload's: the index it joins, and the embedder its generation must have been built with."""


# The areas in the manual's order.
AREAS: tuple[type[_Area], ...] = (
    DataSettings,
    IndexSettings,
    EmbeddingSettings,
    IngestSettings,
    RetrievalSettings,
    RequestSettings,
    LLMSettings,
    AnswerSettings,
    StreamSettings,
    RateLimitSettings,
    ServerSettings,
    McpSettings,
    InsightsSettings,
    MetricsSettings,
)


class Settings(
    BaseSettings,
    IndexBuildSettings,
    IndexUploadSettings,
    OpenRetrieverSettings,
    ServedMetricsSettings,
    AnswererSettings,
    LLMSettings,
    AnswerSettings,
    RateLimitSettings,
    McpSettings,
    InsightsSettings,
):
    """Every area, read from the environment and ``bookwise.toml``."""

    model_config = SettingsConfigDict(
        env_prefix="BOOKWISE_", toml_file="bookwise.toml", extra="forbid", frozen=True
    )

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


def describe_settings_error(error: ValidationError) -> str:
    """One line per bad setting, named by its env var, with the unit of a length limit.

    pydantic counts a string's length in "items"; "at least 16 items" reads as a mystery to someone
    who set ``BOOKWISE_ADMIN_TOKEN``. Inputs are never echoed: several settings are secrets.
    """
    lines = []
    for problem in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in problem["loc"])
        name = f"BOOKWISE_{where.upper()}" if where in Settings.model_fields else where or "settings"
        lines.append(f"{name}: {_explain(problem)}")
    return "\n".join(lines)


def _explain(problem: ErrorDetails) -> str:
    context = problem.get("ctx") or {}
    kind = problem["type"].removeprefix("string_")
    if kind in ("too_short", "too_long"):
        field = Settings.model_fields.get(str(problem["loc"][0])) if problem["loc"] else None
        unit = "characters" if field is not None and _is_text(field.annotation) else "items"
        if kind == "too_short" and "min_length" in context:
            return f"too short: at least {context['min_length']} {unit}"
        if kind == "too_long" and "max_length" in context:
            return f"too long: at most {context['max_length']} {unit}"
    if kind == "extra_forbidden":
        return "not a Bookwise setting (check the spelling; the settings table lists them all)"
    return str(problem["msg"])


def _is_text(annotation: object) -> bool:
    return annotation in (str, SecretStr) or any(arg in (str, SecretStr) for arg in get_args(annotation))
