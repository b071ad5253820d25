"""The error tree. Every error has a stable ``code`` and one public shape.

* BookwiseError
  - ConfigError                 bad settings or site configuration
  - SourceError                 one source file cannot be ingested (reported, the rest goes on)
    - FrontMatterError · EncodingError · FileTooLargeError · MarkdownError
    - OutsideSiteError · BrokenSymlinkError · NotARegularFileError
  - IndexUnusableError          the vector index cannot be used
    - ModelMismatchError · EmbedderMissingError · IndexNotFoundError · IndexBusyError · StoreUnavailableError
    - RetrievalTimeoutError
    - IndexCorruptError · DiskFullError   (data-directory faults)
    - IndexIncompatibleError    built by another chunker or BM25 scheme: `--reindex`
  - EmbeddingError              the embedder failed (network, model)
  - GenerationError             the language model failed
    - LLMUnavailableError · LLMTimeoutError · LLMStreamError · LLMContentFilterError · LLMNoAnswerError
  - RequestRejected             the API refuses a request before doing any work
    - InvalidRequestError · PayloadTooLargeError · UnsupportedMediaTypeError · OriginNotAllowedError
    - RateLimitedError · TooManyStreamsError · ServerBusyError · NotFoundError
    - MalformedRequestError · UnknownAnswerError
    - UnauthorizedError         (metrics without the token)
    - IndexUploadInvalidError · IndexUploadIncompatibleError · IndexUploadUnsupportedError
  - FeedbackUnavailableError    the feedback store cannot be opened or written (the rest serves)
  - InsightsStoreError          the question log's store cannot be opened, migrated, read or written
  - PublishError                `bookwise publish`: the server is unreachable or refused the upload

``status_code`` is the HTTP status the API answers with; the CLI and SSE ``error`` events use ``code``.

``message`` is for the operator (the CLI prints it; it may name hosts, paths, the library's own
words). What a user is shown (``to_dict``: API bodies, SSE ``error`` events) is ``public_message``
when the class sets one: a fixed sentence per code for server-side faults, whose detail goes to the
log with the request id instead.
"""

from __future__ import annotations

from typing import Any


class BookwiseError(Exception):
    """An unexpected failure (a bug); the base of the tree. The CLI prints one line,
    `bookwise: internal error [<exception type>]: <message>` (with `--json`, this error on stdout too),
    and exits 3; `bookwise --debug <command>` prints the traceback as well."""

    code = "internal_error"
    retryable = False
    status_code = 500
    public_message: str | None = None  # shown to users instead of ``message`` (a server-side fault)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def shown(self) -> str:
        """The message a user may see."""
        return self.public_message if self.public_message is not None else self.message

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.shown, "retryable": self.retryable}


class ConfigError(BookwiseError):
    """Bad settings or site configuration (for example, no docs folder)."""

    code = "config_error"
    public_message = "the server is misconfigured; its operator can see why in the log"


class ManifestError(BookwiseError):
    """The build manifest given to `bookwise ingest --manifest` is missing, not JSON (or nested too
    deeply to parse), or not a manifest."""

    code = "manifest_invalid"


class SourceError(BookwiseError):
    """A source file could not be read; located by path and (1-based) line when known."""

    code = "source_error"

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "path": self.path, "line": self.line}


class FrontMatterError(SourceError):
    """The file's YAML front matter is malformed or not closed."""

    code = "front_matter_invalid"


class EncodingError(SourceError):
    """The file is not valid UTF-8, or it is binary."""

    code = "encoding_invalid"


class FileTooLargeError(SourceError):
    """The file is over `BOOKWISE_MAX_FILE_BYTES`."""

    code = "file_too_large"


class MarkdownError(SourceError):
    """Broken MDX, such as an unclosed comment."""

    code = "markdown_invalid"


class OutsideSiteError(SourceError):
    """A doc, symlinked folder, MDX import or docs folder resolves outside the site directory (and
    `BOOKWISE_INGEST_EXTRA_ROOTS`)."""

    code = "outside_site"


class BrokenSymlinkError(SourceError):
    """A dangling symlink or a symlink loop in a docs folder."""

    code = "broken_symlink"


class NotARegularFileError(SourceError):
    """A FIFO, socket or device named like a doc: never opened (a FIFO would block the ingest)."""

    code = "not_a_regular_file"


class IndexUnusableError(BookwiseError):
    """The index cannot be used."""

    code = "index_error"
    status_code = 503
    public_message = "the book's index cannot be used right now"


class ModelMismatchError(IndexUnusableError):
    """The index was built with another embedding model (rebuild with `bookwise ingest --reindex`)."""

    code = "embedding_model_mismatch"
    public_message = "the book's index was built with another embedding model; it must be rebuilt"


class EmbedderMissingError(IndexUnusableError):
    """The index carries no exported embedding model and PyTorch is not installed to load the weights
    (re-run `bookwise ingest` where the `local` extra is installed: it exports the model)."""

    code = "embedding_model_missing"
    public_message = "the book's index cannot embed questions here; it must be ingested again"


class IndexNotFoundError(IndexUnusableError):
    """Nothing has been ingested yet."""

    code = "index_not_found"
    public_message = "the book has not been indexed yet"


class IndexBusyError(IndexUnusableError):
    """Another ingest holds the write lock."""

    code = "index_busy"
    retryable = True
    public_message = "the book's index is busy; try again shortly"


class StoreUnavailableError(IndexUnusableError):
    """Qdrant is unreachable or the index is unreadable."""

    code = "store_unavailable"
    retryable = True
    public_message = "the book's index is unavailable; try again shortly"


class RetrievalTimeoutError(IndexUnusableError):
    """A request's retrieval (query embedding and search) took longer than
    `BOOKWISE_RETRIEVAL_TIMEOUT_S`."""

    code = "retrieval_timeout"
    retryable = True
    public_message = "searching the book took too long; try again"


class EmbeddingError(BookwiseError):
    """The embeddings API (or the local model) failed."""

    code = "embedding_failed"
    retryable = True
    status_code = 503
    public_message = "the question could not be searched (the embedding service failed); try again shortly"


class GenerationError(BookwiseError):
    """The language model failed."""

    code = "generation_failed"
    retryable = True
    status_code = 503


class LLMUnavailableError(GenerationError):
    """The chat API refused the connection or answered with an error (retryable when it was a 429 or
    5xx)."""

    code = "llm_unavailable"


class LLMTimeoutError(GenerationError):
    """The chat API sent no first token, or stopped sending, within the timeouts."""

    code = "llm_timeout"


class LLMStreamError(GenerationError):
    """The chat API reported an error inside the answer's stream, such as OpenRouter's mid-stream
    error object (retryable unless the provider's code is a client error)."""

    code = "llm_stream_error"


class LLMContentFilterError(GenerationError):
    """The provider's content filter blocked the question or stopped the answer (Azure OpenAI's
    `content_filter`)."""

    code = "llm_content_filter"
    retryable = False  # the same question would be filtered again


class LLMNoAnswerError(GenerationError):
    """The model reached its length limit before writing any answer (it spent it reasoning)."""

    code = "llm_no_answer"
    retryable = False


class RequestRejected(BookwiseError):
    """The API refused a request before doing any work."""

    code = "request_rejected"
    status_code = 400

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidRequestError(RequestRejected):
    """The body does not match the schema, or breaks a rule: an empty or too long question,
    selection or history, `top_k` out of range or not an integer, an unknown filter field, a selection
    or section scope without the selected text. The same rules and code for the API, `bookwise
    ask`/`search` and the Retriever (``bookwise.validation``)."""

    code = "invalid_request"
    status_code = 422


class PayloadTooLargeError(RequestRejected):
    """The body is over `BOOKWISE_MAX_BODY_BYTES`."""

    code = "payload_too_large"
    status_code = 413


class UnsupportedMediaTypeError(RequestRejected):
    """A POST body that is not `application/json`."""

    code = "unsupported_media_type"
    status_code = 415


class OriginNotAllowedError(RequestRejected):
    """The browser page's `Origin` is not in `BOOKWISE_ALLOWED_ORIGINS`."""

    code = "origin_not_allowed"
    status_code = 403


class HostNotAllowedError(RequestRejected):
    """A request to `/mcp` whose `Host` is not one of the API's (`BOOKWISE_ALLOWED_HOSTS`; by
    default, loopback names on a loopback address): a DNS-rebinding page."""

    code = "host_not_allowed"
    status_code = 421


class RateLimitedError(RequestRejected):
    """Over `BOOKWISE_RATE_LIMIT_PER_MINUTE`; `Retry-After` says when to come back."""

    code = "rate_limited"
    retryable = True
    status_code = 429


class TooManyStreamsError(RequestRejected):
    """This client already streams `BOOKWISE_MAX_STREAMS_PER_CLIENT` answers."""

    code = "too_many_streams"
    retryable = True
    status_code = 429


class ServerBusyError(RequestRejected):
    """The server streams `BOOKWISE_MAX_STREAMS` answers; `Retry-After` is set."""

    code = "server_busy"
    retryable = True
    status_code = 503


class NotFoundError(RequestRejected):
    """No such endpoint or file."""

    code = "not_found"
    status_code = 404


class MethodNotAllowedError(RequestRejected):
    """A method the endpoint does not serve, with `Allow` naming the one it does: `/mcp` answers
    `POST` only (the server is stateless, so a `GET` event stream would have nothing to carry)."""

    code = "method_not_allowed"
    status_code = 405


# Data-directory faults: what the index layer cannot recover from by itself.


class IndexCorruptError(IndexUnusableError):
    """Generations exist but none is complete and readable (a corrupt manifest, a crashed first
    ingest); rebuild with `bookwise ingest --reindex`."""

    code = "index_corrupt"
    public_message = "the book's index is damaged; it must be rebuilt"


class DiskFullError(IndexUnusableError):
    """The data dir's disk is below `BOOKWISE_MIN_FREE_DISK_MB` free, or a write hit `ENOSPC`:
    nothing was switched, the live index is untouched."""

    code = "disk_full"
    public_message = "the server's disk is full"


# HTTP layer.


class MalformedRequestError(RequestRejected):
    """HTTP the server cannot parse: a bad request line or header, an invalid `Content-Length` or
    `Transfer-Encoding`, HTTP/1.1 without `Host`, or headers over `BOOKWISE_HTTP_MAX_HEADER_BYTES`; or,
    from a `BOOKWISE_TRUSTED_PROXIES` peer, an `X-Forwarded-For` whose client is not an IP address.
    Answered by the server's protocol layer, before any route."""

    code = "malformed_request"
    status_code = 400


class UnknownAnswerError(RequestRejected):
    """Feedback for a `request_id` that is not one of this process's recent answers
    (`BOOKWISE_FEEDBACK_REMEMBERED_ANSWERS`), or that was already rated."""

    code = "feedback_unknown_answer"
    status_code = 404


class FeedbackUnavailableError(BookwiseError):
    """The feedback database cannot be opened or written (corrupt file, read-only or full disk);
    logged once, everything else serves. Move the file aside and restart to start a new one."""

    code = "feedback_unavailable"
    status_code = 503


# Metrics.


class UnauthorizedError(RequestRejected):
    """`/metrics` without the bearer token `BOOKWISE_METRICS_TOKEN`."""

    code = "unauthorized"
    status_code = 401


# Index compatibility.


class IndexIncompatibleError(IndexUnusableError):
    """The index was built by a Bookwise whose chunker or BM25 scheme differs from this one (the
    manifest's `chunker_version`, `bm25_scheme`); detected at ingest and at serve instead of mixing:
    rebuild with `bookwise ingest --reindex`."""

    code = "index_incompatible"
    public_message = "the book's index was built by another version of Bookwise; it must be rebuilt"


# The question log and feedback store.


class InsightsStoreError(BookwiseError):
    """The question log's store (`BOOKWISE_FEEDBACK_DB` or `BOOKWISE_INSIGHTS_DB_URL`) cannot be
    opened, migrated, read or written. Answers go on; the log is skipped, logged once."""

    code = "insights_store_unavailable"
    status_code = 503
    retryable = True
    public_message = "the question log cannot be read on this server right now"


# Index uploads: CI installs a generation it built on a running server (`PUT /api/admin/index`).
# Only the admin token's holder sees these messages, so they name the cause in full.


class IndexUploadInvalidError(RequestRejected):
    """An uploaded index generation is not one: an unsafe or unknown archive member (a path
    outside it, a link), a truncated or corrupt archive, a `COMPLETE` marker that does not match its
    manifest, or a shard Edge cannot open and query. Nothing is installed."""

    code = "index_upload_invalid"
    status_code = 422


class IndexUploadIncompatibleError(RequestRejected):
    """An uploaded generation was built with another embedding model or dimension, chunker or
    BM25 scheme than the server's (serving it would mix vector spaces or cut sections another way); the
    message names both. Nothing is installed."""

    code = "index_upload_incompatible"
    status_code = 409


class IndexUploadUnsupportedError(RequestRejected):
    """`PUT /api/admin/index` on a server whose index is on a Qdrant server: ingest into that
    Qdrant server instead (the CI action's `qdrant` target)."""

    code = "index_upload_unsupported"
    status_code = 409


class PublishError(BookwiseError):
    """`bookwise publish` could not deliver the generation (a network error, or the server refused
    it: its code and message are printed; ``answer`` holds the server's error body when it sent one)."""

    code = "publish_failed"

    def __init__(self, message: str, *, answer: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.answer = answer
