"""The error tree. Every error has a stable ``code`` and one public shape.

* BookwiseError
  - ConfigError                 bad settings or site configuration
  - SourceError                 one source file cannot be ingested (reported, the rest goes on)
    - FrontMatterError · EncodingError · FileTooLargeError · MarkdownError
    - OutsideSiteError · BrokenSymlinkError · NotARegularFileError
  - IndexError_                 the vector index cannot be used
    - ModelMismatchError · IndexNotFoundError · IndexBusyError · StoreUnavailableError
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
    """Base class: the message is safe to show to users."""

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
    code = "config_error"
    public_message = "the server is misconfigured; its operator can see why in the log"


class ManifestError(BookwiseError):
    """The build manifest given to `bookwise ingest --manifest` cannot be read."""

    code = "manifest_invalid"


class SourceError(BookwiseError):
    """A problem with one source file, located by path and (1-based) line when known."""

    code = "source_error"

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "path": self.path, "line": self.line}


class FrontMatterError(SourceError):
    code = "front_matter_invalid"


class EncodingError(SourceError):
    code = "encoding_invalid"


class FileTooLargeError(SourceError):
    code = "file_too_large"


class MarkdownError(SourceError):
    code = "markdown_invalid"


class OutsideSiteError(SourceError):
    """A doc, folder or MDX import that resolves outside the site directory (and the extra roots)."""

    code = "outside_site"


class BrokenSymlinkError(SourceError):
    """A dangling symlink or a symlink loop in a docs folder."""

    code = "broken_symlink"


class NotARegularFileError(SourceError):
    """A FIFO, socket or device named like a doc: never opened (a FIFO would block the ingest)."""

    code = "not_a_regular_file"


class IndexError_(BookwiseError):  # trailing underscore: do not shadow the builtin
    code = "index_error"
    status_code = 503
    public_message = "the book's index cannot be used right now"


class ModelMismatchError(IndexError_):
    code = "embedding_model_mismatch"
    public_message = "the book's index was built with another embedding model; it must be rebuilt"


class IndexNotFoundError(IndexError_):
    code = "index_not_found"
    public_message = "the book has not been indexed yet"


class IndexBusyError(IndexError_):
    code = "index_busy"
    retryable = True
    public_message = "the book's index is busy; try again shortly"


class StoreUnavailableError(IndexError_):
    code = "store_unavailable"
    retryable = True
    public_message = "the book's index is unavailable; try again shortly"


class RetrievalTimeoutError(IndexError_):
    code = "retrieval_timeout"
    retryable = True
    public_message = "searching the book took too long; try again"


class EmbeddingError(BookwiseError):
    code = "embedding_failed"
    retryable = True
    status_code = 503
    public_message = "the question could not be searched (the embedding service failed); try again shortly"


class GenerationError(BookwiseError):
    code = "generation_failed"
    retryable = True
    status_code = 503


class LLMUnavailableError(GenerationError):
    code = "llm_unavailable"


class LLMTimeoutError(GenerationError):
    code = "llm_timeout"


class LLMStreamError(GenerationError):
    """The provider reported an error inside an answer's stream (OpenRouter's mid-stream error object)."""

    code = "llm_stream_error"


class LLMContentFilterError(GenerationError):
    """The provider's content filter refused the question or stopped the answer (Azure OpenAI)."""

    code = "llm_content_filter"
    retryable = False  # the same question would be filtered again


class LLMNoAnswerError(GenerationError):
    """The model used its whole length limit before writing any answer (a reasoning model thinking long)."""

    code = "llm_no_answer"
    retryable = False


class RequestRejected(BookwiseError):
    code = "request_rejected"
    status_code = 400

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidRequestError(RequestRejected):
    """A request that breaks a rule (``bookwise.validation``): the API, the CLI and the Retriever alike."""

    code = "invalid_request"
    status_code = 422


class PayloadTooLargeError(RequestRejected):
    code = "payload_too_large"
    status_code = 413


class UnsupportedMediaTypeError(RequestRejected):
    code = "unsupported_media_type"
    status_code = 415


class OriginNotAllowedError(RequestRejected):
    code = "origin_not_allowed"
    status_code = 403


class HostNotAllowedError(RequestRejected):
    """A Host that is not the API's (``allowed_hosts``) on ``/mcp``: a DNS-rebinding page's request."""

    code = "host_not_allowed"
    status_code = 421


class RateLimitedError(RequestRejected):
    code = "rate_limited"
    retryable = True
    status_code = 429


class TooManyStreamsError(RequestRejected):
    code = "too_many_streams"
    retryable = True
    status_code = 429


class ServerBusyError(RequestRejected):
    code = "server_busy"
    retryable = True
    status_code = 503


class NotFoundError(RequestRejected):
    code = "not_found"
    status_code = 404


class MethodNotAllowedError(RequestRejected):
    """A method the endpoint does not serve (``GET /mcp``: the stateless server has no stream to open)."""

    code = "method_not_allowed"
    status_code = 405


# Data-directory faults: what the index layer cannot recover from by itself.


class IndexCorruptError(IndexError_):
    """Generations exist but none is complete and readable (a corrupt manifest, a crashed ingest)."""

    code = "index_corrupt"
    public_message = "the book's index is damaged; it must be rebuilt"


class DiskFullError(IndexError_):
    """The data directory's disk is (nearly) full: nothing was written, the live index is untouched."""

    code = "disk_full"
    public_message = "the server's disk is full"


# HTTP layer.


class MalformedRequestError(RequestRejected):
    """HTTP the server cannot parse (answered by the server's protocol layer, before any route)."""

    code = "malformed_request"
    status_code = 400


class UnknownAnswerError(RequestRejected):
    """Feedback for an answer this server did not give recently, or already rated."""

    code = "feedback_unknown_answer"
    status_code = 404


class FeedbackUnavailableError(BookwiseError):
    """The feedback database cannot be opened or written; answers and search go on."""

    code = "feedback_unavailable"
    status_code = 503


# Metrics.


class UnauthorizedError(RequestRejected):
    """A request for ``/metrics`` without the configured bearer token (``BOOKWISE_METRICS_TOKEN``)."""

    code = "unauthorized"
    status_code = 401


# Index compatibility.


class IndexIncompatibleError(IndexError_):
    """The live generation was chunked or BM25-encoded by another version: mixing would be silent."""

    code = "index_incompatible"
    public_message = "the book's index was built by another version of Bookwise; it must be rebuilt"


# The question log and feedback store.


class InsightsStoreError(BookwiseError):
    """The insights store (SQLite file or PostgreSQL) cannot be opened, migrated, read or written."""

    code = "insights_store_unavailable"
    status_code = 503
    retryable = True
    public_message = "the question log cannot be read on this server right now"


# Index uploads: CI installs a generation it built on a running server (`PUT /api/admin/index`).
# Only the admin token's holder sees these messages, so they name the cause in full.


class IndexUploadInvalidError(RequestRejected):
    """The uploaded archive is truncated, corrupt, unsafe (a path outside it, a link) or not a
    complete generation (its ``COMPLETE`` marker does not match its manifest, its shard does not open)."""

    code = "index_upload_invalid"
    status_code = 422


class IndexUploadIncompatibleError(RequestRejected):
    """The uploaded generation was built with another embedding model or dimension, chunker or BM25
    scheme than this server uses: serving it would mix vector spaces or cut sections another way."""

    code = "index_upload_incompatible"
    status_code = 409


class IndexUploadUnsupportedError(RequestRejected):
    """The server's index lives on a Qdrant server: CI writes there directly (the `qdrant` target)."""

    code = "index_upload_unsupported"
    status_code = 409


class PublishError(BookwiseError):
    """`bookwise publish` could not reach the server, or the server refused the upload (``answer``:
    the server's error body, when it sent one)."""

    code = "publish_failed"

    def __init__(self, message: str, *, answer: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.answer = answer
