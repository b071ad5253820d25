"""The error tree. Every error has a stable ``code`` and one public shape.

* BookwiseError
  - ConfigError                 bad settings or site configuration
  - SourceError                 one source file cannot be ingested (reported, the rest goes on)
    - FrontMatterError · EncodingError · FileTooLargeError · MarkdownError
  - IndexError_                 the vector index cannot be used
    - ModelMismatchError · IndexNotFoundError · IndexBusyError · StoreUnavailableError
  - EmbeddingError              the embedder failed (network, model)
  - QueryError                  a search request that cannot be run (empty, bad filter or top_k)
"""

from __future__ import annotations

from typing import Any


class BookwiseError(Exception):
    """Base class: the message is safe to show to users."""

    code = "internal_error"
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


class ConfigError(BookwiseError):
    code = "config_error"


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


class IndexError_(BookwiseError):  # trailing underscore: do not shadow the builtin
    code = "index_error"


class ModelMismatchError(IndexError_):
    code = "embedding_model_mismatch"


class IndexNotFoundError(IndexError_):
    code = "index_not_found"


class IndexBusyError(IndexError_):
    code = "index_busy"
    retryable = True


class StoreUnavailableError(IndexError_):
    code = "store_unavailable"
    retryable = True


class EmbeddingError(BookwiseError):
    code = "embedding_failed"
    retryable = True


class QueryError(BookwiseError):
    code = "invalid_query"
