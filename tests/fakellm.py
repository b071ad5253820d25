"""A scriptable OpenAI-compatible chat server for tests.

The real `openai` client talks to it over a real socket, so tests see the same errors, retries,
timeouts and disconnects as in production, without a network or an API key. Tests set the script
(`tokens`, `mode`, ..., or a `respond` function that answers each request from its body) on a
`FakeLLM`, then inspect what it recorded (`requests`, `disconnected`, ...).
The server runs in another thread, hence the lock and the `threading.Event`s.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, get_args

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from servers import serve_in_thread

Mode = Literal["ok", "slow", "stall", "stall_first", "429", "500", "malformed"]
MODES: frozenset[str] = frozenset(get_args(Mode))

DEFAULT_TOKENS: tuple[str, ...] = ("Hello", ",", " world", "!")
Responder = Callable[[dict[str, Any]], list[str]]
PROMPT_TOKENS = 11
POLL_S = 0.05  # how often a stalled response checks whether the client went away


class FakeLLM:
    """The script a fake server follows, plus a thread-safe record of what happened."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Events are created once so references taken by tests stay valid across `reset()`.
        self.disconnected = threading.Event()
        self.finished = threading.Event()
        self._released = threading.Event()
        self.app = build_app(self)
        self.reset()

    def reset(self) -> None:
        """Restore the default script and forget every recorded request."""
        with self._lock:
            self.tokens: list[str] = list(DEFAULT_TOKENS)
            self._mode: Mode = "ok"
            self.delay_s: float = 0.05
            self.stall_after: int = 1
            self.retry_after: float = 1
            self.fail_times: int | None = None
            self.completion: str = "rewritten query"
            # Per-request script: the request body -> the reply's tokens (streamed, or joined as the
            # non-streamed completion). Unset: `tokens` and `completion` as above.
            self.respond: Responder | None = None
            self._usage: dict[str, int] | None = None
            self.requests: list[dict[str, Any]] = []
            self.calls: int = 0
            self.disconnected_at: float | None = None
            self.disconnected.clear()
            self.finished.clear()
            self._released.clear()

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, value: Mode) -> None:
        # A typo must fail loudly here, not look like a server error later.
        if value not in MODES:
            raise ValueError(f"unknown FakeLLM mode {value!r}; expected one of {sorted(MODES)}")
        self._mode = value

    @property
    def usage(self) -> dict[str, int]:
        """The usage reported; derived from `tokens` unless a test set it explicitly."""
        if self._usage is not None:
            return dict(self._usage)
        return _usage_of(self.tokens)

    @usage.setter
    def usage(self, value: dict[str, int] | None) -> None:
        self._usage = None if value is None else dict(value)

    @property
    def last_request(self) -> dict[str, Any]:
        with self._lock:
            if not self.requests:
                raise AssertionError("the fake LLM received no request")
            return self.requests[-1]

    def release_stalls(self) -> None:
        """End every stalled response (used on shutdown, so the server need not wait for them)."""
        self._released.set()

    # -- used by the app --------------------------------------------------------------------------

    def _record(self, body: dict[str, Any]) -> _Plan:
        """Log the request and freeze the script for it, so a test changing it mid-stream is harmless."""
        respond = self.respond
        replied = list(respond(body)) if respond is not None else None  # outside the lock: test code
        with self._lock:
            self.calls += 1
            self.requests.append(body)
            mode: str = self._mode
            if mode in ("429", "500") and self.fail_times is not None and self.calls > self.fail_times:
                mode = "ok"
            tokens = list(self.tokens) if replied is None else replied
            usage = self.usage if replied is None or self._usage is not None else _usage_of(replied)
            return _Plan(
                mode=mode,
                tokens=tokens,
                delay_s=self.delay_s,
                stall_after=self.stall_after,
                retry_after=self.retry_after,
                completion=self.completion if replied is None else "".join(replied),
                usage=usage,
            )

    def _mark_disconnected(self) -> None:
        with self._lock:
            if not self.disconnected.is_set():
                self.disconnected_at = time.monotonic()
                self.disconnected.set()

    async def _hang(self, request: Request) -> bool:
        """Wait until the client leaves (-> True) or the stall is released (-> False).

        Polling `is_disconnected` means we notice a closed socket even if nothing cancels us.
        """
        while not self._released.is_set():
            if await request.is_disconnected():
                return True
            await anyio.sleep(POLL_S)
        return False


def _usage_of(tokens: list[str]) -> dict[str, int]:
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": len(tokens),
        "total_tokens": PROMPT_TOKENS + len(tokens),
    }


class _Plan:
    """What one request will do: a snapshot of the script taken when it arrived."""

    def __init__(
        self,
        *,
        mode: str,
        tokens: list[str],
        delay_s: float,
        stall_after: int,
        retry_after: float,
        completion: str,
        usage: dict[str, int],
    ) -> None:
        self.mode = mode
        self.tokens = tokens
        self.delay_s = delay_s
        self.stall_after = stall_after
        self.retry_after = retry_after
        self.completion = completion
        self.usage = usage


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    return JSONResponse(body, status_code=status, headers=headers)


def _sse(payload: dict[str, Any] | str) -> str:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {data}\n\n"


def build_app(fake: FakeLLM) -> Starlette:
    """The ASGI app serving `POST /v1/chat/completions` from `fake`'s script."""

    async def chat_completions(request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        plan = fake._record(body)
        model = str(body.get("model", "fake-model"))
        created = int(time.time())

        if plan.mode == "429":
            headers = {"Retry-After": f"{plan.retry_after:g}"}
            return _error(429, "rate_limit_error", "Rate limit reached (fake)", headers)
        if plan.mode == "500":
            return _error(500, "server_error", "The server had an error (fake)")

        if not body.get("stream"):
            return await _complete(fake, request, plan, model, created)

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(
            _stream(fake, request, plan, model, created, include_usage),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


async def _complete(fake: FakeLLM, request: Request, plan: _Plan, model: str, created: int) -> Response:
    """A non-streaming `chat.completion` (query rewriting uses these)."""
    if plan.mode == "malformed":
        return Response("{not json", media_type="application/json")
    if plan.mode in ("stall", "stall_first"):
        if await fake._hang(request):
            fake._mark_disconnected()
            return Response(status_code=499)  # nobody is listening any more
    if plan.mode == "slow":
        await anyio.sleep(plan.delay_s)
    fake.finished.set()
    return JSONResponse(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": plan.completion},
                    "finish_reason": "stop",
                }
            ],
            "usage": plan.usage,
        }
    )


async def _stream(
    fake: FakeLLM, request: Request, plan: _Plan, model: str, created: int, include_usage: bool
) -> AsyncIterator[str]:
    """OpenAI's SSE chunk sequence, with the faults the plan asks for.

    Starlette cancels this generator when uvicorn reports the disconnect (ASGI spec < 2.4), and the
    stall loop polls as well; either way the `finally` records that the client left early.
    """

    def chunk(delta: dict[str, str], finish_reason: str | None = None) -> str:
        return _sse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
        )

    completed = False
    released = False
    try:
        if plan.mode == "malformed":
            yield "data: {not json\n\n"
            completed = True
            return
        if plan.mode == "stall_first":
            released = not await fake._hang(request)
            return
        for index, token in enumerate(plan.tokens):
            if plan.mode == "stall" and index == plan.stall_after:
                released = not await fake._hang(request)
                return
            if plan.mode == "slow":
                await anyio.sleep(plan.delay_s)
            if await request.is_disconnected():
                return
            yield chunk({"role": "assistant", "content": token})
        if plan.mode == "stall" and plan.stall_after >= len(plan.tokens):
            released = not await fake._hang(request)
            return
        yield chunk({}, "stop")
        if include_usage:
            yield _sse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": plan.usage,
                }
            )
        yield _sse("[DONE]")
        completed = True
    finally:
        if completed:
            fake.finished.set()
        elif not released:
            fake._mark_disconnected()


@contextmanager
def running_fake_llm(fake: FakeLLM | None = None) -> Iterator[tuple[FakeLLM, str]]:
    """Serve a `FakeLLM`; yield it and the base URL to give the OpenAI client (ends in `/v1`)."""
    fake = fake if fake is not None else FakeLLM()
    with serve_in_thread(fake.app) as url:
        try:
            yield fake, f"{url}/v1"
        finally:
            fake.release_stalls()


def main() -> None:
    """Serve a fake LLM from the command line (the load benchmark runs it in its own process)."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible chat server on loopback.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=60, help="tokens per answer")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds between tokens")
    args = parser.parse_args()
    fake = FakeLLM()
    fake.tokens = [f"word{n} " for n in range(args.tokens - 1)] + ["[1]."]
    fake.mode, fake.delay_s = "slow", args.delay
    uvicorn.run(fake.app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
