"""A loopback OpenAI-compatible server that replays real providers' chat streams, byte for byte.

Each builder below returns the Server-Sent Events one provider sends for an answer, in the shape its
documentation (or its server's source) shows; fields the openai SDK never reads are kept, because a
client must survive them. The real `openai` client reads them over a real socket, so tests see what
production sees. Sources, by builder:

* `openai_stream`: platform.openai.com chat streaming reference (role-only first delta, `usage: null` on
  every chunk with `stream_options.include_usage`, then a usage chunk with empty `choices`).
* `azure_stream`, `AZURE_PROMPT_FILTERED`: learn.microsoft.com "content filtering" and "content
  streaming" (a first chunk with empty `choices` and `prompt_filter_results`, `content_filter_results`
  on every choice, annotation chunks with no `delta` in asynchronous-filter mode, `finish_reason:
  content_filter`, HTTP 400 `code: content_filter` for a filtered prompt).
* `ollama_stream`: ollama `openai/openai.go` (`role` and `content` on every delta, `reasoning` for
  thinking models, `system_fingerprint: fp_ollama`); without a reasoning parser the thinking stays in
  `content` as `<think>…</think>`.
* `deepseek_stream`: api-docs.deepseek.com reasoning model guide (`reasoning_content` then `content`,
  `: keep-alive` comments while the request waits).
* `vllm_stream`: vLLM's reasoning outputs (`reasoning_content`, newer versions `reasoning`; `stop_reason`).
* `llama_cpp_stream`: llama.cpp `tools/server/server-task.cpp` (`content: null` in the role delta, an
  empty final delta, the usage chunk carrying `timings`).
* `anthropic_stream`: docs.claude.com "OpenAI SDK compatibility" (`msg_` ids, one choice, no
  `finish_reason` key until the end, usage on the final chunk; thinking is never returned).
* `gemini_stream`: ai.google.dev "OpenAI compatibility" (no `finish_reason` key until the end, text and
  usage together in the last chunk, `include_thoughts` thought summaries as `<thought>…</thought>`).
* `openrouter_stream`: openrouter.ai "Streaming" and "Errors" (`: OPENROUTER PROCESSING` comments,
  `reasoning` + `reasoning_details`, the mid-stream error chunk with `error: {code, message}` and
  `finish_reason: error` after which the stream ends).
* `groq_stream`: console.groq.com (an `x_groq` object with the request id, usage inside `x_groq` on
  the last chunk, `reasoning` with `reasoning_format: parsed`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from servers import serve_in_thread

DONE = "data: [DONE]\n\n"
CREATED = 1_763_800_000
PROMPT_TOKENS = 412
SAFE = {"filtered": False, "severity": "safe"}
FILTER_SAFE = {"hate": SAFE, "self_harm": SAFE, "sexual": SAFE, "violence": SAFE}

Frames = Sequence[str] | Callable[[], Iterable[str]]


def data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"


def comment(text: str) -> str:
    return f": {text}\n\n"


def _usage(tokens: Sequence[str], reasoning: Sequence[str] = ()) -> dict[str, int]:
    completion = len(tokens) + len(reasoning)
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": completion,
        "total_tokens": PROMPT_TOKENS + completion,
    }


# -- the providers ------------------------------------------------------------------------------------


def openai_stream(tokens: Sequence[str], *, finish: str = "stop") -> list[str]:
    def envelope(choices: list[dict[str, Any]], usage: dict[str, Any] | None, obfuscation: str) -> str:
        return data(
            {
                "id": "chatcmpl-CfJ3kGxP0wBz7sYw1nQm2VtR9aLhE",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": "gpt-4o-mini-2024-07-18",
                "service_tier": "default",
                "system_fingerprint": "fp_560af6e559",
                "choices": choices,
                "usage": usage,
                "obfuscation": obfuscation,
            }
        )

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return envelope([choice], None, "Qk3v")

    usage = _usage(tokens) | {
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    return [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        *(chunk({"content": token}) for token in tokens),
        chunk({}, finish),
        envelope([], usage, "x9"),  # stream_options.include_usage: a last chunk with no choices
        DONE,
    ]


def azure_stream(
    tokens: Sequence[str], *, filtered_after: int | None = None, annotations: bool = False
) -> list[str]:
    """Azure OpenAI; `filtered_after` stops the answer with the content filter after that many tokens,
    `annotations` adds the asynchronous filter's annotation chunks (a choice with no `delta`)."""

    def chunk(choice: dict[str, Any]) -> str:
        return data(
            {
                "choices": [{"index": 0, "logprobs": None, "finish_reason": None, **choice}],
                "created": CREATED,
                "id": "chatcmpl-CfJ4a1Vn8yXw2ZqT5uRb3sLp0KmHd",
                "model": "gpt-4o-2024-11-20",
                "object": "chat.completion.chunk",
                "system_fingerprint": "fp_ee1d74bde0",
            }
        )

    def text(token: str) -> str:
        return chunk({"content_filter_results": FILTER_SAFE, "delta": {"content": token}})

    frames = [
        data(
            {
                "choices": [],
                "created": 0,
                "id": "",
                "model": "",
                "object": "",
                "prompt_filter_results": [
                    {
                        "prompt_index": 0,
                        "content_filter_results": FILTER_SAFE
                        | {"jailbreak": {"filtered": False, "detected": False}},
                    }
                ],
            }
        ),
        chunk({"content_filter_results": {}, "delta": {"content": "", "refusal": None, "role": "assistant"}}),
    ]
    shown = tokens if filtered_after is None else tokens[:filtered_after]
    frames += [text(token) for token in shown]
    if annotations:
        frames.append(
            data(
                {
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": None,
                            "content_filter_results": FILTER_SAFE,
                            "content_filter_offsets": {
                                "check_offset": 0,
                                "start_offset": 0,
                                "end_offset": 31,
                            },
                        }
                    ],
                    "created": 0,
                    "id": "",
                    "model": "",
                    "object": "",
                    "usage": None,
                }
            )
        )
    if filtered_after is not None:
        blocked = FILTER_SAFE | {"violence": {"filtered": True, "severity": "medium"}}
        frames.append(
            chunk({"content_filter_results": blocked, "delta": {}, "finish_reason": "content_filter"})
        )
    else:
        frames.append(chunk({"content_filter_results": {}, "delta": {}, "finish_reason": "stop"}))
    frames.append(
        data(
            {
                "choices": [],
                "created": CREATED,
                "id": "chatcmpl-CfJ4a1Vn8yXw2ZqT5uRb3sLp0KmHd",
                "model": "gpt-4o-2024-11-20",
                "object": "chat.completion.chunk",
                "system_fingerprint": "fp_ee1d74bde0",
                "usage": _usage(shown),
            }
        )
    )
    return [*frames, DONE]


# Azure's answer to a prompt its filter blocks: HTTP 400, before any stream.
AZURE_PROMPT_FILTERED: dict[str, Any] = {
    "error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
        "policy. Please modify your prompt and retry.",
        "type": None,
        "param": "prompt",
        "code": "content_filter",
        "status": 400,
        "innererror": {
            "code": "ResponsibleAIPolicyViolation",
            "content_filter_result": FILTER_SAFE | {"violence": {"filtered": True, "severity": "high"}},
        },
    }
}


def ollama_stream(
    tokens: Sequence[str], *, reasoning: Sequence[str] = (), finish: str = "stop", usage: bool = True
) -> list[str]:
    """Ollama's `/v1`; `reasoning` goes in the `reasoning` field (put `<think>` in `tokens` for a model
    served without a reasoning parser)."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, choices: bool = True) -> str:
        body: dict[str, Any] = {
            "id": "chatcmpl-742",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": "qwen3:8b",
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}] if choices else [],
        }
        return data(body)

    frames = [chunk({"role": "assistant", "content": "", "reasoning": piece}) for piece in reasoning]
    frames += [chunk({"role": "assistant", "content": token}) for token in tokens]
    frames.append(chunk({"role": "assistant", "content": ""}, finish))
    if usage:
        frames.append(
            data(
                {
                    "id": "chatcmpl-742",
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": "qwen3:8b",
                    "system_fingerprint": "fp_ollama",
                    "choices": [],
                    "usage": _usage(tokens, reasoning),
                }
            )
        )
    return [*frames, DONE]


def ollama_completion(content: str) -> dict[str, Any]:
    """A non-streamed Ollama `/v1` answer (query rewriting), thinking left in `content`."""
    return {
        "id": "chatcmpl-743",
        "object": "chat.completion",
        "created": CREATED,
        "model": "qwen3:8b",
        "system_fingerprint": "fp_ollama",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 60, "completion_tokens": 30, "total_tokens": 90},
    }


def _chunker(chunk_id: str, model: str, fingerprint: str) -> Callable[..., str]:
    """One provider's chunk frames (DeepSeek and Groq share this shape, with a system fingerprint)."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        return data(
            {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "system_fingerprint": fingerprint,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
                **extra,
            }
        )

    return chunk


def deepseek_stream(tokens: Sequence[str], *, reasoning: Sequence[str], keep_alive: int = 2) -> list[str]:
    chunk = _chunker("5b9f7c1e-2d4a-4c3b-9e8f-0a1b2c3d4e5f", "deepseek-reasoner", "fp_5417b77867_prod0225")

    usage = _usage(tokens, reasoning) | {
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": len(reasoning)},
        "prompt_cache_hit_tokens": 0,
        "prompt_cache_miss_tokens": PROMPT_TOKENS,
    }
    return [
        *(comment("keep-alive") for _ in range(keep_alive)),
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        *(chunk({"content": None, "reasoning_content": piece}) for piece in reasoning),
        *(chunk({"content": token, "reasoning_content": None}) for token in tokens),
        chunk({"content": "", "reasoning_content": None}, "stop", usage=usage),
        DONE,
    ]


def vllm_stream(
    tokens: Sequence[str], *, reasoning: Sequence[str] = (), field_name: str = "reasoning_content"
) -> list[str]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason, **extra}
        return data(
            {
                "id": "chatcmpl-9c1f3e0b8a7d4f62b5e4a3c2d1f0e9b8",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": "Qwen/Qwen3-8B",
                "choices": [choice],
            }
        )

    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({field_name: piece}) for piece in reasoning),
        *(chunk({"content": token}) for token in tokens),
        chunk({"content": ""}, "stop", stop_reason=None),
        data(
            {
                "id": "chatcmpl-9c1f3e0b8a7d4f62b5e4a3c2d1f0e9b8",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": "Qwen/Qwen3-8B",
                "choices": [],
                "usage": _usage(tokens, reasoning),
            }
        ),
        DONE,
    ]


def llama_cpp_stream(
    tokens: Sequence[str], *, reasoning: Sequence[str] = (), finish: str = "stop"
) -> list[str]:
    def body(choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "choices": choices,
            "created": CREATED,
            "id": "chatcmpl-Xq7sDk2PaLm9VbN4cRt6YwEzH1uJf0Gi",
            "model": "qwen3-8b",
            "system_fingerprint": "b6097-9515c613",
            "object": "chat.completion.chunk",
        }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        return data(body([{"finish_reason": finish_reason, "index": 0, "delta": delta}]))

    completion = len(tokens) + len(reasoning)
    timings = {
        "cache_n": 0,
        "prompt_n": PROMPT_TOKENS,
        "prompt_ms": 203.378,
        "prompt_per_token_ms": 0.4936,
        "prompt_per_second": 2025.8,
        "predicted_n": completion,
        "predicted_ms": 933.63,
        "predicted_per_token_ms": 3.78,
        "predicted_per_second": 264.56,
    }
    usage = _usage(tokens, reasoning) | {"prompt_tokens_details": {"cached_tokens": 0}}
    return [
        chunk({"role": "assistant", "content": None}),
        *(chunk({"reasoning_content": piece}) for piece in reasoning),
        *(chunk({"content": token}) for token in tokens),
        chunk({}, finish),
        data(body([]) | {"usage": usage, "timings": timings}),
        DONE,
    ]


def anthropic_stream(tokens: Sequence[str], *, finish: str = "stop") -> list[str]:
    def chunk(choice: dict[str, Any], **extra: Any) -> str:
        return data(
            {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "choices": [{"index": 0, **choice}],
                "created": CREATED,
                "model": "claude-sonnet-4-5",
                "object": "chat.completion.chunk",
                **extra,
            }
        )

    return [
        chunk({"delta": {"role": "assistant", "content": ""}}),
        *(chunk({"delta": {"content": token}}) for token in tokens),
        chunk({"delta": {}, "finish_reason": finish}, usage=_usage(tokens)),
        DONE,
    ]


def gemini_stream(tokens: Sequence[str], *, thoughts: Sequence[str] = (), finish: str = "stop") -> list[str]:
    """Gemini's OpenAI endpoint; `thoughts` are the `include_thoughts` summaries, sent in `content`."""
    pieces = [*(["<thought>", *thoughts, "</thought>"] if thoughts else []), *tokens]

    def chunk(content: str, **extra: Any) -> str:
        choice = {"delta": {"content": content, "role": "assistant"}, "index": 0}
        if "finish_reason" in extra:
            choice["finish_reason"] = extra.pop("finish_reason")
        return data(
            {
                "choices": [choice],
                "created": CREATED,
                "id": "8LQhaeKHN6Ts7M8Ptc7b0Qg",
                "model": "gemini-2.5-flash",
                "object": "chat.completion.chunk",
                **extra,
            }
        )

    *body, last = pieces
    return [
        *(chunk(piece) for piece in body),
        chunk(last, finish_reason=finish, usage=_usage(tokens, thoughts)),
        DONE,
    ]


OPENROUTER_ERROR = {"code": "server_error", "message": "Provider disconnected unexpectedly"}


def openrouter_stream(
    tokens: Sequence[str],
    *,
    reasoning: Sequence[str] = (),
    error_after: int | None = None,
    error: dict[str, Any] | None = None,
) -> list[str]:
    """OpenRouter; `error_after` ends the stream with its mid-stream error chunk after that many tokens."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        return data(
            {
                "id": "gen-1763800000-Jk3nP8qRt2VwXy5Za7Bc",
                "provider": "OpenAI",
                "model": "openai/gpt-4o-mini",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", **delta},
                        "finish_reason": finish_reason,
                        "native_finish_reason": finish_reason,
                        "logprobs": None,
                    }
                ],
            }
        )

    frames = [comment("OPENROUTER PROCESSING"), comment("OPENROUTER PROCESSING")]
    frames += [
        chunk(
            {
                "content": "",
                "reasoning": piece,
                "reasoning_details": [
                    {"type": "reasoning.text", "text": piece, "format": "unknown", "index": 0}
                ],
            }
        )
        for piece in reasoning
    ]
    shown = tokens if error_after is None else tokens[:error_after]
    frames += [chunk({"content": token}) for token in shown]
    if error_after is not None:
        frames.append(
            data(
                {
                    "id": "cmpl-abc123",
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": "openai/gpt-4o-mini",
                    "provider": "openai",
                    "error": error or OPENROUTER_ERROR,
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                }
            )
        )
        return frames  # the stream ends with the error: no [DONE]
    frames.append(chunk({"content": ""}, "stop"))
    usage = _usage(tokens, reasoning) | {
        "cost": 0.000093,
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": len(reasoning)},
    }
    frames.append(
        data(
            {
                "id": "gen-1763800000-Jk3nP8qRt2VwXy5Za7Bc",
                "provider": "OpenAI",
                "model": "openai/gpt-4o-mini",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "choices": [],
                "usage": usage,
            }
        )
    )
    return [*frames, DONE]


def groq_stream(tokens: Sequence[str], *, reasoning: Sequence[str] = ()) -> list[str]:
    chunk = _chunker("chatcmpl-4f1e2d3c-b5a6-4978-8e9f-a0b1c2d3e4f5", "qwen/qwen3-32b", "fp_5fe4f5f1d9")

    usage = _usage(tokens, reasoning) | {
        "queue_time": 0.052,
        "prompt_time": 0.0008,
        "completion_time": 0.0368,
        "total_time": 0.0376,
    }
    return [
        chunk({"role": "assistant", "content": ""}, x_groq={"id": "req_01kaq3m5zbf0yv8r2h6t4w9c1x"}),
        *(chunk({"reasoning": piece}) for piece in reasoning),
        *(chunk({"content": token}) for token in tokens),
        chunk({}, "stop", x_groq={"id": "req_01kaq3m5zbf0yv8r2h6t4w9c1x", "usage": usage}),
        DONE,
    ]


# -- the server ---------------------------------------------------------------------------------------


@dataclass
class Replay:
    """What the server answers next: an SSE stream (`frames`, `delay_s` apart), or `status` with `body`."""

    frames: Frames = ()
    delay_s: float = 0.0
    status: int = 200
    body: dict[str, Any] | None = None  # a JSON answer: an error, or a non-streamed completion


@dataclass
class ProviderServer:
    """Replays `replay` to every request and records what it was sent (thread-safe: the server runs in
    another thread)."""

    replay: Replay = field(default_factory=Replay)
    requests: list[dict[str, Any]] = field(default_factory=list)
    disconnected: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    def play(self, frames: Frames, *, delay_s: float = 0.0) -> None:
        with self._lock:
            self.replay = Replay(frames=frames, delay_s=delay_s)
            self.requests.clear()
            self.disconnected.clear()

    def answer(self, status: int, body: dict[str, Any]) -> None:
        with self._lock:
            self.replay = Replay(status=status, body=body)
            self.requests.clear()

    @property
    def last_request(self) -> dict[str, Any]:
        with self._lock:
            return self.requests[-1]

    async def _chat(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self.requests.append(body)
            replay = self.replay
        if replay.body is not None:
            return JSONResponse(replay.body, status_code=replay.status)
        frames = replay.frames() if callable(replay.frames) else replay.frames
        return StreamingResponse(
            self._stream(request, frames, replay.delay_s),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    async def _stream(self, request: Request, frames: Iterable[str], delay_s: float) -> AsyncIterator[str]:
        completed = False
        try:
            for frame in frames:
                if delay_s:
                    await anyio.sleep(delay_s)
                if await request.is_disconnected():
                    return
                yield frame
            completed = True
        finally:
            if not completed:
                self.disconnected.set()


def endless(head: Sequence[str], repeated: str) -> Callable[[], Iterator[str]]:
    """Frames that never end: `head`, then `repeated` until the client leaves."""

    def frames() -> Iterator[str]:
        yield from head
        while True:
            yield repeated

    return frames


@contextmanager
def running_provider() -> Iterator[tuple[ProviderServer, str]]:
    """Serve a `ProviderServer`; yield it and the base URL to give the OpenAI client (ends in `/v1`)."""
    server = ProviderServer()
    with serve_in_thread(server.app) as url:
        yield server, f"{url}/v1"
