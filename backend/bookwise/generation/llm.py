"""Any OpenAI-compatible chat endpoint through the openai SDK, streamed, with every wait bounded.

* A failed call is retried only before its first token: after that, a retry would repeat text the
  reader has already seen (and bill it twice). A 429's ``Retry-After`` is honoured up to a cap.
* Five limits: connecting, the first sign of life (a deadline per attempt), the reasoning phase of a
  reasoning model (from its first reasoning delta to its first answer token), the silence between
  chunks (the HTTP read timeout; reasoning deltas count as chunks) and the whole answer (checked on
  every chunk and before each attempt).
* Providers speak dialects of the same stream (tested against their documented shapes in
  ``tests/providers.py``): chunks without ``choices`` (usage, Azure's filter annotations), choices
  without ``delta``, usage in Groq's ``x_groq``, reasoning in ``reasoning_content``/``reasoning``
  fields or in ``<think>``/``<thought>`` blocks at the start of ``content``, an error object inside
  a 200 stream (OpenRouter), ``finish_reason: content_filter`` (Azure). Readers only ever get the
  answer text.
* Closing the stream (the reader went away, a timeout) closes the upstream HTTP response, shielded
  from cancellation, so the model stops generating at once.
* The length limit is ours too: an upstream that ignores ``max_tokens`` is cut off once the answer
  text reaches about ``llm_max_tokens`` tokens (see ``_Reader.tokens``), ending like
  ``finish_reason: length``.
* Model text is always valid Unicode: a lone surrogate (JSON ``"\\ud800"`` in a delta) would make
  the answer unencodable as UTF-8, so it becomes U+FFFD; a pair split across two deltas is joined.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import anyio
import openai
from openai.types.chat import ChatCompletionMessageParam

from bookwise.errors import (
    GenerationError,
    LLMContentFilterError,
    LLMNoAnswerError,
    LLMStreamError,
    LLMTimeoutError,
    LLMUnavailableError,
)
from bookwise.generation.completion import Completion
from bookwise.generation.events import SURROGATE, valid_text
from bookwise.settings import LLMSettings

Message = dict[str, str]

# Where reasoning models put their thinking: DeepSeek, vLLM and llama.cpp say `reasoning_content`;
# Ollama, OpenRouter, Groq and newer vLLM say `reasoning` (OpenRouter adds `reasoning_details`).
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
# Reasoning written into the answer text itself: Ollama/llama.cpp/vLLM without a reasoning parser
# (`<think>`), Gemini's OpenAI endpoint with `include_thoughts` (`<thought>`).
_THINK_TAGS = (("<think>", "</think>"), ("<thought>", "</thought>"))
_CONTENT_FILTERED = "the AI provider's content filter blocked this answer; try asking in other words"
# The length limit as we count it: an answer is at least one token per text delta (providers stream
# whole tokens) and at least one token per CHARS_PER_TOKEN characters (English averages about 4; 5
# leaves room for long words, so an upstream that keeps its own limit is never cut before it).
CHARS_PER_TOKEN = 5
_HIGH_SURROGATE = re.compile(r"[\ud800-\udbff]$")


def _join_pairs(text: str) -> str:
    # A high and a low surrogate side by side (one delta ended with half of an emoji, the next began
    # with the other half) are one character.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class _MalformedStream(Exception):
    """The stream broke before its first token (bad JSON): worth a retry like a dropped connection."""


class _ProviderError(Exception):
    """An error object the provider sent inside a 200 stream (`{"error": {"code", "message"}}`)."""

    def __init__(self, body: object) -> None:
        super().__init__("error object in the stream")
        code = _field(body, "code")
        # OpenRouter repeats the HTTP status as the code: a client error will not go away on retry.
        self.retryable = not (isinstance(code, int) and 400 <= code < 500 and code not in (408, 429))


_RETRYABLE = (
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
    TimeoutError,
    _MalformedStream,
    _ProviderError,
)
_STREAM_ERRORS = (openai.OpenAIError, _MalformedStream, _ProviderError)


Call = Literal["answer", "rewrite"]


class LLMObserver(Protocol):
    """Told of each failed attempt at the model (the API counts them as metrics; generation never
    imports the API). ``code`` is the error code the failure has, or would have had if not retried."""

    def retried(self, code: str) -> None: ...

    def failed(self, call: Call, code: str) -> None: ...


class ThinkFilter:
    """Drops the reasoning blocks (`<think>…</think>`, `<thought>…</thought>`) that open an answer.

    Tags may be split across deltas anywhere (`<thi` + `nk>`), so text that could still be the start of
    a tag is held back until it cannot be. Only blocks at the start count (after whitespace or another
    block): later, `<think>` is answer text (a book about HTML may well mention it).
    """

    def __init__(self) -> None:
        self._held = ""
        self._closing: str | None = None  # inside a block: the tag that ends it
        self._opening = True  # no answer text yet: a block may still start
        self._after_block = False
        self.reasoning = False  # a block was seen

    def feed(self, text: str) -> str:
        self._held += text
        shown: list[str] = []
        while self._held:
            if self._closing is not None:
                if not self._skip_reasoning():
                    break
            elif not self._opening:
                shown.append(self._held)
                self._held = ""
            elif not self._open_block():
                if self._may_open():
                    break
                self._opening = False
                if self._after_block:  # the blank lines between a block and the answer
                    self._held = self._held.lstrip()
        return "".join(shown)

    def flush(self) -> str:
        """What is still held when the stream ends: an unfinished block is dropped, a tag prefix shown."""
        held, self._held = self._held, ""
        if self._closing is not None:
            return ""
        return held.lstrip() if self._opening and self._after_block else held

    def _skip_reasoning(self) -> bool:
        assert self._closing is not None
        end = self._held.find(self._closing)
        if end < 0:  # keep only what may be the start of the closing tag
            self._held = self._held[-(len(self._closing) - 1) :]
            return False
        self._held = self._held[end + len(self._closing) :]
        self._closing, self._opening, self._after_block = None, True, True
        return True

    def _open_block(self) -> bool:
        stripped = self._held.lstrip()
        for opening, closing in _THINK_TAGS:
            if stripped.startswith(opening):
                self._held = stripped[len(opening) :]
                self._closing, self.reasoning = closing, True
                return True
        return False

    def _may_open(self) -> bool:
        stripped = self._held.lstrip()
        return not stripped or any(opening.startswith(stripped) for opening, _ in _THINK_TAGS)


def without_reasoning(text: str) -> str:
    """A whole (non-streamed) answer without its opening reasoning block."""
    think = ThinkFilter()
    return (think.feed(text) + think.flush()).strip()


class _Reader:
    """One attempt's chunks → answer text, whatever the provider's dialect. Records usage and finish."""

    def __init__(self, completion: Completion) -> None:
        self.completion = completion
        self.think = ThinkFilter()
        self.reasoning = False  # the model is (or was) reasoning: a sign of life, not an answer
        self._half = ""  # a high surrogate that ended the last delta: its pair may start the next
        self._deltas = 0
        self._chars = 0

    @property
    def tokens(self) -> int:
        """The answer's length so far in tokens, approximately (never more than a provider counts)."""
        return max(self._deltas, math.ceil(self._chars / CHARS_PER_TOKEN))

    def _content(self, content: str) -> str:
        self._deltas += 1
        self._chars += len(content)
        content = self._half + content
        self._half = ""
        if _HIGH_SURROGATE.search(content):
            content, self._half = content[:-1], content[-1]
        if SURROGATE.search(content):
            content = valid_text(_join_pairs(content))
        return content

    def feed(self, chunk: Any) -> str:
        _record_usage(chunk, self.completion)
        choices = _field(chunk, "choices")
        if not choices:  # usage chunks, Azure's prompt filter results
            return ""
        choice = choices[0]
        delta = _field(choice, "delta")  # Azure's content-filter annotations have none
        text = ""
        if delta is not None:
            if any(_field(delta, name) for name in _REASONING_FIELDS):
                self.reasoning = True
            content = _field(delta, "content")
            if isinstance(content, str) and content:
                text = self.think.feed(self._content(content))
                self.reasoning = self.reasoning or self.think.reasoning
        finish = _field(choice, "finish_reason")
        if finish:
            self.completion.finish_reason = str(finish)
            if finish == "content_filter":
                raise LLMContentFilterError(_CONTENT_FILTERED)
            if finish == "error":  # OpenRouter's mid-stream error, should the SDK not have raised it
                raise _ProviderError(_field(chunk, "error"))
        return text

    def finish(self) -> str:
        half, self._half = valid_text(self._half), ""
        return self.think.feed(half) + self.think.flush()


@dataclass
class _Attempt:
    stream: Any = None
    chunks: Any = None
    reader: _Reader | None = None
    pending: list[str] = field(default_factory=list)


def _field(value: object, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _record_usage(chunk: Any, completion: Completion) -> None:
    # Groq reports usage in its own `x_groq` object; most chunks carry none (`usage: null`).
    usage = _field(chunk, "usage") or _field(_field(chunk, "x_groq"), "usage")
    if not usage:
        return
    counts = {name: int(_field(usage, name) or 0) for name in ("prompt_tokens", "completion_tokens")}
    if not any(counts.values()):  # an empty `usage: {}`, as some gateways send on every chunk
        return
    total = int(_field(usage, "total_tokens") or 0)
    completion.usage = {**counts, "total_tokens": total or sum(counts.values())}


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


def _worth_retrying(error: BaseException) -> bool:
    return not isinstance(error, _ProviderError) or error.retryable


def _failure(error: BaseException, *, mid_answer: bool = False) -> GenerationError:
    if isinstance(error, TimeoutError | openai.APITimeoutError):
        if mid_answer:
            return LLMTimeoutError("the language model stopped answering mid-way")
        return LLMTimeoutError("the language model did not answer in time")
    if isinstance(error, _ProviderError):
        failure: GenerationError = LLMStreamError("the language model failed while answering")
        failure.retryable = error.retryable
        return failure
    if isinstance(error, openai.BadRequestError) and error.code == "content_filter":
        return LLMContentFilterError(_CONTENT_FILTERED)  # Azure refuses a filtered prompt with a 400
    if isinstance(error, openai.APIStatusError):
        failure = LLMUnavailableError(f"the language model refused the request (HTTP {error.status_code})")
        failure.retryable = isinstance(error, openai.RateLimitError | openai.InternalServerError)
        return failure
    if isinstance(error, _MalformedStream):
        return LLMUnavailableError("the language model sent a malformed stream")
    return LLMUnavailableError("the language model is unavailable")


async def _next_chunk(chunks: Any) -> Any:
    """The next chunk. Raises StopAsyncIteration at the end, or one of `_STREAM_ERRORS`."""
    try:
        return await chunks.__anext__()
    except (openai.APIStatusError, openai.APIConnectionError):
        raise
    except openai.APIError as error:  # the SDK raises this for an `error` object in the stream
        raise _ProviderError(error.body) from error
    except ValueError as error:  # a chunk that is not JSON
        raise _MalformedStream(str(error)) from error


class LLMClient:
    def __init__(
        self,
        settings: LLMSettings,
        *,
        client: openai.AsyncOpenAI | None = None,
        observer: LLMObserver | None = None,
    ) -> None:
        if not settings.llm_base_url and client is None:
            raise ValueError("no chat API configured (BOOKWISE_LLM_BASE_URL)")
        self.settings = settings
        self.model = settings.llm_model
        self.observer = observer
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
                    stream=False,
                    **self._sampling(temperature=0.0, max_tokens=max_tokens),
                )
        except (openai.OpenAIError, TimeoutError) as error:
            failure = _failure(error)
            if self.observer is not None:
                self.observer.failed("rewrite", failure.code)
            raise failure from error
        choices = getattr(response, "choices", None)
        text = str(choices[0].message.content or "") if choices else ""
        # The same length limit as answers (an upstream may ignore it), in valid text.
        return without_reasoning(valid_text(text[: max_tokens * CHARS_PER_TOKEN]))

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
                    await self._start(messages, attempt, completion, deadline)
                    break
                except _RETRYABLE as error:
                    await _close(attempt)
                    out_of_tries = completion.attempts > settings.llm_max_retries
                    if out_of_tries or not _worth_retrying(error) or time.monotonic() >= deadline:
                        raise _failure(error) from error
                    if self.observer is not None:
                        self.observer.retried(_failure(error).code)
                    await anyio.sleep(_retry_wait(error, completion.attempts, settings.llm_retry_max_wait_s))
                except openai.OpenAIError as error:
                    raise _failure(error) from error
            completion.first_token_s = time.monotonic() - started
            reader = attempt.reader
            assert reader is not None
            if self._cut(reader):
                return
            for text in attempt.pending:
                yield text
            # Past the first token, a silence is caught by the client's read timeout (the idle limit):
            # no cancel scope per token, which would cost more than the token itself under load.
            while True:
                try:
                    text = reader.feed(await _next_chunk(attempt.chunks))
                except StopAsyncIteration:
                    break
                except _STREAM_ERRORS as error:
                    raise _failure(error, mid_answer=True) from error
                if time.monotonic() > deadline:
                    raise LLMTimeoutError("the answer took longer than the total time limit")
                if self._cut(reader):
                    return  # the delta that went past the limit is not relayed
                if text:
                    yield text
            tail = reader.finish()
            if tail:
                yield tail
        except GenerationError as failure:  # every way the answer fails ends here, once
            if self.observer is not None:
                self.observer.failed("answer", failure.code)
            raise
        finally:
            await _close(attempt)

    def _cut(self, reader: _Reader) -> bool:
        """Past the length limit (an upstream ignoring ``max_tokens``): end as the limit would."""
        if reader.tokens <= self.settings.llm_max_tokens:
            return False
        reader.completion.finish_reason = "length"
        return True

    async def _start(
        self, messages: Sequence[Message], attempt: _Attempt, completion: Completion, deadline: float
    ) -> None:
        """Open the stream and read to the first answer text (or the end): all of it may be retried.

        The first-token deadline waits for any sign of life, reasoning included; the first reasoning
        delta replaces it with the reasoning deadline. Both are capped by the whole answer's deadline.
        """
        settings = self.settings
        reader = attempt.reader = _Reader(completion)
        attempt.pending = []
        reasoning_deadline: float | None = None
        first_deadline = min(time.monotonic() + settings.llm_first_token_timeout_s, deadline)
        with anyio.CancelScope(deadline=first_deadline) as scope:
            attempt.stream = await self._open(messages)
            attempt.chunks = attempt.stream.__aiter__()
            while True:
                try:
                    text = reader.feed(await _next_chunk(attempt.chunks))
                except StopAsyncIteration:
                    text = reader.finish()
                    if not text and completion.finish_reason == "length":
                        raise LLMNoAnswerError(
                            "the language model reached its length limit before writing an answer"
                        ) from None
                    attempt.pending = [text] if text else []
                    return
                if text:
                    attempt.pending = [text]
                    return
                if reader.reasoning and reasoning_deadline is None:
                    reasoning_deadline = min(time.monotonic() + settings.llm_reasoning_timeout_s, deadline)
                    scope.deadline = reasoning_deadline
        # Only reached when a deadline cancelled the reads. The clock says which: a reasoning delta read
        # just as the first-token deadline passed leaves that cancellation pending after the deadline
        # was moved, and it is a late first sign of life (retried), not a long reasoning phase.
        if (
            reasoning_deadline is not None
            and reasoning_deadline < deadline
            and time.monotonic() >= reasoning_deadline
        ):
            # Not retried: the same question would make the model think as long again.
            raise LLMTimeoutError("the language model reasoned for longer than its time limit")
        raise TimeoutError

    async def _open(self, messages: Sequence[Message]) -> Any:
        """The stream of chunks as the provider's JSON objects. The SDK sends the request and reads the
        stream (its errors, an error object inside it), but builds no typed chunk from each: that cost
        a sixth of the server's time under load, and the reader takes fields of either form."""
        body = {
            "model": self.model,
            "messages": list(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            **self._sampling(
                temperature=self.settings.llm_temperature, max_tokens=self.settings.llm_max_tokens
            ),
        }
        return await self._client.post(
            "/chat/completions", cast_to=object, body=body, stream=True, stream_cls=openai.AsyncStream[object]
        )

    def _sampling(self, *, temperature: float, max_tokens: int) -> dict[str, Any]:
        """Temperature and length limit, as the configured model accepts them (reasoning models refuse
        `temperature`, and OpenAI's refuse `max_tokens` for `max_completion_tokens`)."""
        params: dict[str, Any] = {}
        if self.settings.llm_send_temperature:
            params["temperature"] = temperature
        if self.settings.llm_max_tokens_param != "none":
            params[self.settings.llm_max_tokens_param] = max_tokens
        return params


def _params(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    return cast("list[ChatCompletionMessageParam]", list(messages))


async def _close(attempt: _Attempt) -> None:
    stream, attempt.stream, attempt.chunks = attempt.stream, None, None
    if stream is not None:
        with anyio.CancelScope(shield=True):  # cancelled or not, the upstream response must be closed
            await stream.close()
