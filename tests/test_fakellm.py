"""The fake LLM must look like OpenAI to the real `openai` client, faults included.

Other tests trust it to reproduce rate limits, outages, stalls and disconnects, so each scripted mode
is checked here against the client the app actually uses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
import pytest

from fakellm import FakeLLM
from servers import closed_port_url

T = TypeVar("T")
MESSAGES: list[Any] = [{"role": "user", "content": "What is a bookwise?"}]


@pytest.fixture
def base_url(llm_server: tuple[FakeLLM, str]) -> str:
    return llm_server[1]


def run(base_url: str, body: Callable[[openai.AsyncOpenAI], Awaitable[T]], **client_args: Any) -> T:
    """Run `body` with a fresh client that is always closed (an unclosed one would warn, i.e. fail)."""

    async def main() -> T:
        options: dict[str, Any] = {"max_retries": 0, **client_args}
        async with openai.AsyncOpenAI(base_url=base_url, api_key="test", **options) as client:
            return await body(client)

    return asyncio.run(main())


async def collect(client: openai.AsyncOpenAI) -> tuple[list[str], list[str | None], Any]:
    stream = await client.chat.completions.create(
        model="fake-model", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    contents: list[str] = []
    finishes: list[str | None] = []
    usage: Any = None
    async with stream:
        async for chunk in stream:
            assert chunk.model == "fake-model"
            if chunk.usage is not None:
                assert chunk.choices == []
                usage = chunk.usage
                continue
            choice = chunk.choices[0]
            finishes.append(choice.finish_reason)
            if choice.delta.content is not None:
                contents.append(choice.delta.content)
    return contents, finishes, usage


def test_streams_tokens_then_stop_then_usage(fake: FakeLLM, base_url: str) -> None:
    fake.tokens = ["A", "b", " c"]
    contents, finishes, usage = run(base_url, collect)
    assert contents == ["A", "b", " c"]
    assert finishes == [None, None, None, "stop"]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 3, 14)
    assert fake.finished.wait(2)
    assert not fake.disconnected.is_set()
    assert fake.calls == 1
    assert fake.last_request["messages"] == MESSAGES
    assert fake.last_request["stream"] is True


def test_usage_chunk_only_when_asked(fake: FakeLLM, base_url: str) -> None:
    async def body(client: openai.AsyncOpenAI) -> list[Any]:
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        async with stream:
            return [chunk async for chunk in stream]

    chunks = run(base_url, body)
    assert all(chunk.usage is None for chunk in chunks)
    assert len(chunks) == len(fake.tokens) + 1


def test_explicit_usage_is_reported(fake: FakeLLM, base_url: str) -> None:
    fake.usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    _, _, usage = run(base_url, collect)
    assert usage.total_tokens == 3


def test_slow_mode_spaces_tokens_out(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "slow"
    fake.tokens = ["a", "b", "c"]
    fake.delay_s = 0.05
    started = time.monotonic()
    contents, _, _ = run(base_url, collect)
    assert contents == ["a", "b", "c"]
    assert time.monotonic() - started >= 0.15


def test_non_stream_completion(fake: FakeLLM, base_url: str) -> None:
    fake.completion = "bookwise definition"

    async def body(client: openai.AsyncOpenAI) -> Any:
        return await client.chat.completions.create(model="rewriter", messages=MESSAGES)

    completion = run(base_url, body)
    assert completion.choices[0].message.content == "bookwise definition"
    assert completion.model == "rewriter"
    assert completion.usage is not None and completion.usage.prompt_tokens == 11
    assert fake.last_request.get("stream") in (None, False)


def test_429_is_a_rate_limit_error_with_retry_after(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "429"
    fake.retry_after = 7
    with pytest.raises(openai.RateLimitError) as caught:
        run(base_url, collect)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert fake.calls == 1


def test_500_is_an_internal_server_error(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "500"
    with pytest.raises(openai.InternalServerError):
        run(base_url, collect)


def test_fail_times_fails_only_the_first_requests(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "500"
    fake.fail_times = 1
    with pytest.raises(openai.InternalServerError):
        run(base_url, collect)
    contents, _, _ = run(base_url, collect)
    assert "".join(contents) == "Hello, world!"
    assert fake.calls == 2


def test_client_retry_honours_short_retry_after(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "429"
    fake.fail_times = 1
    fake.retry_after = 0.05
    contents, _, _ = run(base_url, collect, max_retries=1)
    assert "".join(contents) == "Hello, world!"
    assert fake.calls == 2


def test_refused_connection_is_a_connection_error() -> None:
    with pytest.raises(openai.APIConnectionError) as caught:
        run(closed_port_url(), collect)
    assert not isinstance(caught.value, openai.APITimeoutError)


def test_malformed_chunk_breaks_the_client(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "malformed"
    with pytest.raises(ValueError):  # json.JSONDecodeError from the client's SSE parser
        run(base_url, collect)


def test_closing_a_stalled_stream_is_seen_as_a_disconnect(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "stall"
    fake.stall_after = 1

    async def body(client: openai.AsyncOpenAI) -> float:
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        async with stream:
            first = await stream.__anext__()
            assert first.choices[0].delta.content == "Hello"
            await asyncio.sleep(0.1)  # the server is now hanging on the second token
            assert not fake.disconnected.is_set()
        return time.monotonic()

    closed_at = run(base_url, body)
    assert fake.disconnected.wait(2)
    assert fake.disconnected_at is not None
    assert fake.disconnected_at - closed_at < 0.5
    assert not fake.finished.is_set()


def test_stall_first_hits_the_client_read_timeout(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "stall_first"

    async def body(client: openai.AsyncOpenAI) -> None:
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        async with stream:  # headers arrived: the timeout fires while waiting for the first chunk
            async for _ in stream:
                raise AssertionError("stall_first must send no chunk")

    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        run(base_url, body, timeout=0.5)
    assert 0.4 < time.monotonic() - started < 2
    assert fake.disconnected.wait(2)


def test_stalled_non_stream_request_times_out(fake: FakeLLM, base_url: str) -> None:
    fake.mode = "stall"

    async def body(client: openai.AsyncOpenAI) -> Any:
        return await client.chat.completions.create(model="m", messages=MESSAGES)

    with pytest.raises(openai.APITimeoutError):
        run(base_url, body, timeout=0.3)
    assert fake.disconnected.wait(2)


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown FakeLLM mode"):
        FakeLLM().mode = "timeout"  # type: ignore[assignment]


def test_reset_restores_defaults_and_keeps_events(fake: FakeLLM, base_url: str) -> None:
    finished = fake.finished
    fake.mode = "500"
    fake.tokens = ["x"]
    with pytest.raises(openai.InternalServerError):
        run(base_url, collect)
    fake.reset()
    assert (fake.mode, fake.calls, fake.requests, fake.fail_times) == ("ok", 0, [], None)
    assert fake.usage["completion_tokens"] == len(fake.tokens)
    run(base_url, collect)
    assert finished.is_set()
