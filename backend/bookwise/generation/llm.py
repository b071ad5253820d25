"""Any OpenAI-compatible chat endpoint through the openai SDK, streamed, with every wait bounded.

* A failed call is retried only before its first token: after that, a retry would repeat text the
  reader has already seen (and bill it twice). A 429's ``Retry-After`` is honoured up to a cap.
* Four limits: connecting, the first token (a deadline per attempt), the silence between tokens
  (the HTTP read timeout) and the whole answer (checked on every chunk and before each attempt).
* Closing the stream (the reader went away, a timeout) closes the upstream HTTP response, shielded
  from cancellation, so the model stops generating at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import openai
from openai.types.chat import ChatCompletionMessageParam

from bookwise.errors import GenerationError, LLMTimeoutError, LLMUnavailableError
from bookwise.settings import Settings

Message = dict[str, str]


class _MalformedStream(Exception):
    """The stream broke before its first token (bad JSON): worth a retry like a dropped connection."""


_RETRYABLE = (
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
    TimeoutError,
    _MalformedStream,
)


@dataclass
class Completion:
    """What is known about a streamed answer once it ends (filled in while streaming)."""

    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    attempts: int = 0
    first_token_s: float | None = None  # since the call started, retries included


@dataclass
class _Attempt:
    stream: Any = None
    chunks: Any = None
    pending: list[str] = field(default_factory=list)


def _retry_wait(error: BaseException, attempt: int, cap: float) -> float:
    if isinstance(error, openai.APIStatusError):
        header = error.response.headers.get("retry-after")
        try:
            if header is not None:
                return float(min(max(float(header), 0.0), cap))
        except ValueError:
            pass
    backoff: float = 0.25 * 2 ** (attempt - 1) * random.uniform(0.8, 1.2)
    return min(cap, backoff)


def _failure(error: BaseException) -> GenerationError:
    if isinstance(error, TimeoutError | openai.APITimeoutError):
        return LLMTimeoutError("the language model did not answer in time")
    if isinstance(error, openai.APIStatusError):
        failure = LLMUnavailableError(f"the language model refused the request (HTTP {error.status_code})")
        failure.retryable = isinstance(error, openai.RateLimitError | openai.InternalServerError)
        return failure
    if isinstance(error, _MalformedStream):
        return LLMUnavailableError("the language model sent a malformed stream")
    return LLMUnavailableError("the language model is unavailable")


class LLMClient:
    def __init__(self, settings: Settings, *, client: openai.AsyncOpenAI | None = None) -> None:
        if not settings.llm_base_url and client is None:
            raise ValueError("no chat API configured (BOOKWISE_LLM_BASE_URL)")
        self.settings = settings
        self.model = settings.llm_model
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "unused"
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.llm_base_url,
            api_key=key,
            max_retries=0,  # retries are ours: only before the first token
            timeout=openai.Timeout(
                settings.llm_total_timeout_s,
                connect=settings.llm_connect_timeout_s,
                read=settings.llm_idle_timeout_s,
            ),
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, messages: Sequence[Message], *, timeout_s: float, max_tokens: int = 200) -> str:
        """A short non-streamed answer (query rewriting); any failure raises a GenerationError."""
        try:
            with anyio.fail_after(timeout_s):
                response = await self._client.chat.completions.create(
                    model=self.model,
                    messages=_params(messages),
                    temperature=0,
                    max_tokens=max_tokens,
                    stream=False,
                )
        except (openai.OpenAIError, TimeoutError) as error:
            raise _failure(error) from error
        return (response.choices[0].message.content or "").strip() if response.choices else ""

    async def stream(self, messages: Sequence[Message], completion: Completion) -> AsyncIterator[str]:
        """Text deltas of the answer. Raises GenerationError; never hangs past the configured limits."""
        settings = self.settings
        started = time.monotonic()
        deadline = started + settings.llm_total_timeout_s
        attempt = _Attempt()
        try:
            while True:
                completion.attempts += 1
                try:
                    first_wait = min(settings.llm_first_token_timeout_s, deadline - time.monotonic())
                    with anyio.fail_after(max(first_wait, 0.0)):
                        attempt.stream = await self._open(messages)
                        attempt.chunks = attempt.stream.__aiter__()
                        attempt.pending = await self._first_text(attempt.chunks, completion)
                    break
                except _RETRYABLE as error:
                    await _close(attempt)
                    if completion.attempts > settings.llm_max_retries or time.monotonic() >= deadline:
                        raise _failure(error) from error
                    await anyio.sleep(_retry_wait(error, completion.attempts, settings.llm_retry_max_wait_s))
                except openai.OpenAIError as error:
                    raise _failure(error) from error
            completion.first_token_s = time.monotonic() - started
            for text in attempt.pending:
                yield text
            # Past the first token, a silence is caught by the client's read timeout (the idle limit):
            # no cancel scope per token, which would cost more than the token itself under load.
            while True:
                try:
                    chunk = await attempt.chunks.__anext__()
                except StopAsyncIteration:
                    return
                except openai.APITimeoutError as error:
                    raise LLMTimeoutError("the language model stopped answering mid-way") from error
                except openai.OpenAIError as error:
                    raise _failure(error) from error
                except ValueError as error:  # a malformed chunk
                    raise LLMUnavailableError("the language model sent a malformed stream") from error
                if time.monotonic() > deadline:
                    raise LLMTimeoutError("the answer took longer than the total time limit")
                text = _take(chunk, completion)
                if text:
                    yield text
        finally:
            await _close(attempt)

    async def _open(self, messages: Sequence[Message]) -> Any:
        return await self._client.chat.completions.create(
            model=self.model,
            messages=_params(messages),
            temperature=self.settings.llm_temperature,
            max_tokens=self.settings.llm_max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )

    @staticmethod
    async def _first_text(chunks: Any, completion: Completion) -> list[str]:
        """Read until the first text (or the end): everything before it may still be retried."""
        while True:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return []
            except ValueError as error:
                raise _MalformedStream(str(error)) from error
            text = _take(chunk, completion)
            if text:
                return [text]


def _params(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    return cast("list[ChatCompletionMessageParam]", list(messages))


def _take(chunk: Any, completion: Completion) -> str:
    if getattr(chunk, "usage", None) is not None:
        usage = chunk.usage
        completion.usage = {
            "prompt_tokens": int(usage.prompt_tokens or 0),
            "completion_tokens": int(usage.completion_tokens or 0),
            "total_tokens": int(usage.total_tokens or 0),
        }
    if not chunk.choices:
        return ""
    choice = chunk.choices[0]
    if choice.finish_reason:
        completion.finish_reason = choice.finish_reason
    return str(choice.delta.content or "") if choice.delta is not None else ""


async def _close(attempt: _Attempt) -> None:
    stream, attempt.stream, attempt.chunks = attempt.stream, None, None
    if stream is not None:
        with anyio.CancelScope(shield=True):  # cancelled or not, the upstream response must be closed
            await stream.close()
