"""Real providers' stream shapes (replayed by `tests/providers.py`) read by the real openai SDK and the
real `LLMClient`, then a few through the whole API on a real server.

What must hold for every provider: readers get the answer text and nothing else (no reasoning, however
it is sent), usage and `finish_reason` are recorded, a content filter or an error object inside the
stream ends the answer with one clear error, and a long reasoning phase is not taken for a stall.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import providers as p
from apiserver import Stream, build_book, chat, running_api
from bookwise.errors import BookwiseError
from bookwise.generation.llm import Completion, LLMClient, ThinkFilter, without_reasoning
from bookwise.settings import Settings
from providers import ProviderServer, running_provider

ANSWER = ["Quokkas ", "eat peppermint ", "leaves", " [1]."]
TEXT = "".join(ANSWER)
REASONING = ["The reader asks ", "about feeding; ", "source 1 covers it."]
MESSAGES = [{"role": "system", "content": "Answer from the sources."}, {"role": "user", "content": "Food?"}]
THINKING = "<think>\nThe reader asks about feeding; source 1 covers it.\n</think>\n\n"


@pytest.fixture(scope="module")
def provider_server() -> Iterator[tuple[ProviderServer, str]]:
    with running_provider() as running:
        yield running


@pytest.fixture
def provider(provider_server: tuple[ProviderServer, str]) -> ProviderServer:
    return provider_server[0]


@pytest.fixture
def url(provider_server: tuple[ProviderServer, str]) -> str:
    return provider_server[1]


@dataclass
class Outcome:
    texts: list[str]
    completion: Completion
    error: BookwiseError | None

    @property
    def text(self) -> str:
        return "".join(self.texts)


def llm_settings(url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"llm_base_url": url, "llm_max_retries": 0, "llm_retry_max_wait_s": 0.05}
    return Settings(_env_file=None, **(values | overrides))  # type: ignore[call-arg]


def stream(url: str, **overrides: Any) -> Outcome:
    async def run() -> Outcome:
        client = LLMClient(llm_settings(url, **overrides))
        outcome = Outcome([], Completion(), None)
        try:
            async for text in client.stream(MESSAGES, outcome.completion):
                outcome.texts.append(text)
        except BookwiseError as error:
            outcome.error = error
        finally:
            await client.aclose()
        return outcome

    return anyio.run(run)


def usage(completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": p.PROMPT_TOKENS,
        "completion_tokens": completion_tokens,
        "total_tokens": p.PROMPT_TOKENS + completion_tokens,
    }


def chars(text: str) -> list[str]:
    return list(text)


# -- every provider's ordinary answer ----------------------------------------------------------------

N = len(ANSWER)
R = len(REASONING)
# Each provider's answer, and the completion tokens its usage reports.
ORDINARY = {
    "openai": (p.openai_stream(ANSWER), N),
    "azure": (p.azure_stream(ANSWER), N),
    "azure, asynchronous filter annotations": (p.azure_stream(ANSWER, annotations=True), N),
    "ollama": (p.ollama_stream(ANSWER), N),
    "ollama, reasoning field": (p.ollama_stream(ANSWER, reasoning=REASONING), N + R),
    "ollama, <think> in content": (p.ollama_stream([THINKING, *ANSWER]), N + 1),
    "deepseek, reasoning_content": (p.deepseek_stream(ANSWER, reasoning=REASONING), N + R),
    "vllm, reasoning_content": (p.vllm_stream(ANSWER, reasoning=REASONING), N + R),
    "vllm, reasoning": (p.vllm_stream(ANSWER, reasoning=REASONING, field_name="reasoning"), N + R),
    "llama.cpp": (p.llama_cpp_stream(ANSWER), N),
    "llama.cpp, reasoning_content": (p.llama_cpp_stream(ANSWER, reasoning=REASONING), N + R),
    "anthropic": (p.anthropic_stream(ANSWER), N),
    "gemini": (p.gemini_stream(ANSWER), N),
    "gemini, thought summaries": (p.gemini_stream(ANSWER, thoughts=REASONING), N + R),
    "openrouter": (p.openrouter_stream(ANSWER), N),
    "openrouter, reasoning": (p.openrouter_stream(ANSWER, reasoning=REASONING), N + R),
    "groq, usage in x_groq": (p.groq_stream(ANSWER), N),
    "groq, parsed reasoning": (p.groq_stream(ANSWER, reasoning=REASONING), N + R),
}


@pytest.mark.parametrize("frames, completion_tokens", ORDINARY.values(), ids=ORDINARY.keys())
def test_each_provider_gives_the_answer_text_its_usage_and_finish(
    provider: ProviderServer, url: str, frames: list[str], completion_tokens: int
) -> None:
    provider.play(frames)
    outcome = stream(url)
    assert outcome.error is None
    assert outcome.text == TEXT  # reasoning, whatever its field or tag, never reaches a reader
    assert outcome.completion.finish_reason == "stop"
    assert outcome.completion.usage == usage(completion_tokens)
    assert outcome.completion.attempts == 1


def test_the_request_asks_for_usage_and_sends_the_default_sampling(
    provider: ProviderServer, url: str
) -> None:
    provider.play(p.openai_stream(ANSWER))
    assert stream(url, llm_temperature=0.3, llm_max_tokens=321).error is None
    body = provider.last_request
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.3 and body["max_tokens"] == 321
    assert "max_completion_tokens" not in body


# -- reasoning in the text: <think> split anywhere ---------------------------------------------------


def test_a_think_block_split_into_single_characters_is_never_shown(
    provider: ProviderServer, url: str
) -> None:
    provider.play(p.ollama_stream(chars(THINKING + TEXT)))
    outcome = stream(url)
    assert outcome.error is None and outcome.text == TEXT


def test_a_think_tag_split_as_thi_nk_is_never_shown(provider: ProviderServer, url: str) -> None:
    provider.play(
        p.ollama_stream(["<thi", "nk>The reader asks", " about feeding.</th", "ink>", "\n\n", *ANSWER])
    )
    assert stream(url).text == TEXT


def test_a_gemini_thought_split_across_deltas_is_never_shown(provider: ProviderServer, url: str) -> None:
    provider.play(p.gemini_stream(["<tho", "ught>**Planning**\nSource 1.</thou", "ght>", *ANSWER]))
    assert stream(url).text == TEXT


def test_every_split_of_a_think_block_gives_the_same_answer() -> None:
    full = THINKING + TEXT
    for cut in range(1, len(full)):
        assert _filtered([full[:cut], full[cut:]]) == TEXT, cut
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(full)), rng.randint(2, 12)))
        pieces = [full[a:b] for a, b in zip([0, *cuts], [*cuts, len(full)], strict=True)]
        assert _filtered(pieces) == TEXT, pieces


def test_text_that_only_looks_like_a_tag_is_shown() -> None:
    assert _filtered(["<th", "ead> is a table header."]) == "<thead> is a table header."
    assert _filtered(["<thi"]) == "<thi"  # the stream ended: it was text after all
    assert _filtered(["Use ", "<think>", " in prompts."]) == "Use <think> in prompts."  # not at the start
    assert _filtered(["  Leading spaces stay."]) == "  Leading spaces stay."


def test_two_opening_blocks_and_an_unfinished_one() -> None:
    assert _filtered(["<think>a</think>\n<thought>b</thought>\n\nAnswer."]) == "Answer."
    assert _filtered(["<think>still thinking when the stream ended"]) == ""


def test_a_non_streamed_answer_loses_its_think_block_too() -> None:
    assert without_reasoning(THINKING + "store configuration") == "store configuration"


def _filtered(pieces: list[str]) -> str:
    think = ThinkFilter()
    return "".join(think.feed(piece) for piece in pieces) + think.flush()


# -- a long reasoning phase is not a stall, but it has its own limit ----------------------------------


def test_reasoning_longer_than_the_first_token_timeout_is_not_a_stall(
    provider: ProviderServer, url: str
) -> None:
    provider.play(p.deepseek_stream(ANSWER, reasoning=REASONING * 3, keep_alive=0), delay_s=0.25)
    # Nine reasoning deltas 0.25 s apart: over 2 s of thinking, against a 1 s first-token limit that the
    # first of them meets with room to spare on a loaded machine (0.3 s against 0.08 s apart did not).
    outcome = stream(url, llm_first_token_timeout_s=1, llm_idle_timeout_s=2, llm_reasoning_timeout_s=10)
    assert outcome.error is None and outcome.text == TEXT
    assert outcome.completion.first_token_s is not None and outcome.completion.first_token_s > 1


def test_the_same_silence_without_reasoning_is_a_first_token_timeout(
    provider: ProviderServer, url: str
) -> None:
    head = p.openai_stream(ANSWER)[:1]  # the role-only delta is no sign of an answer
    provider.play(p.endless(head, ": keep-alive\n\n"), delay_s=0.08)
    started = time.monotonic()
    outcome = stream(url, llm_first_token_timeout_s=0.3, llm_idle_timeout_s=2)
    assert outcome.error is not None and outcome.error.code == "llm_timeout"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "head, repeated",
    [
        (p.vllm_stream([], reasoning=["Hmm."])[:2], p.vllm_stream([], reasoning=["Hmm, "])[1]),
        (p.ollama_stream(["<think>Hmm."])[:1], p.ollama_stream(["and hmm, "])[0]),
    ],
    ids=["reasoning_content", "<think> in content"],
)
def test_endless_reasoning_ends_at_the_reasoning_limit_without_a_retry(
    provider: ProviderServer, url: str, head: list[str], repeated: str
) -> None:
    provider.play(p.endless(head, repeated), delay_s=0.05)
    started = time.monotonic()
    outcome = stream(url, llm_reasoning_timeout_s=0.5, llm_first_token_timeout_s=5, llm_max_retries=2)
    assert outcome.error is not None and outcome.error.code == "llm_timeout"
    assert "reasoned" in outcome.error.message and outcome.texts == []
    assert time.monotonic() - started < 5
    assert len(provider.requests) == 1  # thinking as long again would not help
    assert provider.disconnected.wait(2), "the upstream stream was left running"


# -- cut answers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frames",
    [p.openai_stream(ANSWER, finish="length"), p.anthropic_stream(ANSWER, finish="length")],
    ids=["openai", "anthropic"],
)
def test_a_length_finish_marks_the_answer_as_cut(
    provider: ProviderServer, url: str, frames: list[str]
) -> None:
    provider.play(frames)
    outcome = stream(url)
    assert outcome.error is None and outcome.text == TEXT
    assert outcome.completion.finish_reason == "length"


def test_a_model_that_thinks_until_its_length_limit_gives_a_clear_error(
    provider: ProviderServer, url: str
) -> None:
    provider.play(p.llama_cpp_stream([], reasoning=REASONING, finish="length"))
    outcome = stream(url)
    assert outcome.error is not None and outcome.error.code == "llm_no_answer"
    assert outcome.error.retryable is False and outcome.texts == []


# -- content filters -----------------------------------------------------------------------------------


def test_azure_content_filter_mid_answer_is_a_clear_non_retryable_error(
    provider: ProviderServer, url: str
) -> None:
    provider.play(p.azure_stream(ANSWER, filtered_after=2))
    outcome = stream(url, llm_max_retries=2)
    assert outcome.texts == ANSWER[:2]
    assert outcome.error is not None and outcome.error.code == "llm_content_filter"
    assert outcome.error.retryable is False and "content filter" in outcome.error.message
    assert outcome.completion.finish_reason == "content_filter"


def test_azure_content_filter_before_any_text_is_not_retried(provider: ProviderServer, url: str) -> None:
    provider.play(p.azure_stream(ANSWER, filtered_after=0))
    outcome = stream(url, llm_max_retries=2)
    assert outcome.error is not None and outcome.error.code == "llm_content_filter"
    assert len(provider.requests) == 1


def test_azure_refusing_a_filtered_prompt_is_the_same_error(provider: ProviderServer, url: str) -> None:
    provider.answer(400, p.AZURE_PROMPT_FILTERED)
    outcome = stream(url, llm_max_retries=2)
    assert outcome.error is not None and outcome.error.code == "llm_content_filter"
    assert outcome.error.retryable is False and len(provider.requests) == 1


# -- an error object inside the stream (OpenRouter) -----------------------------------------------------


def test_openrouter_error_mid_answer_ends_it_with_one_error(provider: ProviderServer, url: str) -> None:
    provider.play(p.openrouter_stream(ANSWER, error_after=2))
    outcome = stream(url, llm_max_retries=2)
    assert outcome.texts == ANSWER[:2]
    assert outcome.error is not None and outcome.error.code == "llm_stream_error"
    assert outcome.error.retryable is True
    assert len(provider.requests) == 1  # text was shown: never retried


def test_openrouter_error_before_any_text_is_retried(provider: ProviderServer, url: str) -> None:
    provider.play(p.openrouter_stream(ANSWER, error_after=0))
    outcome = stream(url, llm_max_retries=1)
    assert outcome.error is not None and outcome.error.code == "llm_stream_error"
    assert len(provider.requests) == 2


def test_openrouter_client_error_before_any_text_is_not_retried(provider: ProviderServer, url: str) -> None:
    provider.play(
        p.openrouter_stream(ANSWER, error_after=0, error={"code": 402, "message": "Insufficient credits"})
    )
    outcome = stream(url, llm_max_retries=2)
    assert outcome.error is not None and outcome.error.code == "llm_stream_error"
    assert outcome.error.retryable is False and len(provider.requests) == 1


# -- models that reject temperature or max_tokens ----------------------------------------------------------


def test_reasoning_model_settings_send_max_completion_tokens_and_no_temperature(
    provider: ProviderServer, url: str
) -> None:
    provider.play(p.openai_stream(ANSWER))
    outcome = stream(url, llm_max_tokens_param="max_completion_tokens", llm_send_temperature=False)
    assert outcome.error is None
    body = provider.last_request
    assert body["max_completion_tokens"] == 800
    assert "max_tokens" not in body and "temperature" not in body


def test_the_length_limit_can_be_left_out(provider: ProviderServer, url: str) -> None:
    provider.play(p.ollama_stream(ANSWER))
    assert stream(url, llm_max_tokens_param="none").error is None
    assert not {"max_tokens", "max_completion_tokens"} & set(provider.last_request)


def test_query_rewriting_uses_the_same_parameters_and_drops_thinking(
    provider: ProviderServer, url: str
) -> None:
    provider.answer(200, p.ollama_completion(THINKING + "How is the store configured in tests?"))

    async def run() -> str:
        client = LLMClient(
            llm_settings(url, llm_max_tokens_param="max_completion_tokens", llm_send_temperature=False)
        )
        try:
            return await client.complete(MESSAGES, timeout_s=30, max_tokens=64)
        finally:
            await client.aclose()

    assert anyio.run(run) == "How is the store configured in tests?"
    body = provider.last_request
    assert body["stream"] is False and body["max_completion_tokens"] == 64
    assert "temperature" not in body and "max_tokens" not in body


# -- through the whole API on a real server ----------------------------------------------------------------

QUESTION = {"question": "What do quokkas eat in the morning?"}


@pytest.fixture(scope="module")
def api_url(
    tmp_path_factory: pytest.TempPathFactory, provider_server: tuple[ProviderServer, str]
) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("provider-api")
    settings = build_book(root, llm_base_url=provider_server[1], llm_max_retries=1, llm_retry_max_wait_s=0.05)
    with running_api(settings) as running:
        yield running


def _answered(stream: Stream) -> dict[str, Any]:
    assert stream.status == 200
    assert stream.names()[:2] == ["meta", "sources"] and stream.names()[-1] == "done"
    assert "error" not in stream.names()
    return stream.first("done")


def _failed(stream: Stream, code: str) -> dict[str, Any]:
    assert stream.status == 200
    names = stream.names()
    assert names[:2] == ["meta", "sources"] and names[-1] == "error"
    assert names.count("error") == 1 and "done" not in names
    error = stream.first("error")
    assert error["code"] == code and set(error) == {"code", "message", "retryable", "request_id"}
    return error


def test_api_readers_never_see_a_think_block(provider: ProviderServer, api_url: str) -> None:
    provider.play(p.ollama_stream(chars(THINKING + TEXT)))
    result = chat(api_url, QUESTION)
    done = _answered(result)
    assert result.answer == TEXT and "think" not in result.answer and "reader asks" not in result.answer
    assert done["finish_reason"] == "stop" and done["citations"] == [1]


def test_api_carries_a_length_finish_and_groq_usage_to_done(provider: ProviderServer, api_url: str) -> None:
    provider.play(p.groq_stream(ANSWER))
    assert _answered(chat(api_url, QUESTION))["usage"] == usage(len(ANSWER))
    provider.play(p.openai_stream(ANSWER, finish="length"))
    result = chat(api_url, QUESTION)
    assert _answered(result)["finish_reason"] == "length" and result.answer == TEXT


def test_api_content_filter_is_one_clear_error_event(provider: ProviderServer, api_url: str) -> None:
    provider.play(p.azure_stream(ANSWER, filtered_after=2))
    result = chat(api_url, QUESTION)
    error = _failed(result, "llm_content_filter")
    assert error["retryable"] is False and "content filter" in error["message"]
    assert result.answer == "".join(ANSWER[:2])


def test_api_openrouter_mid_stream_error_is_one_error_event(provider: ProviderServer, api_url: str) -> None:
    provider.play(p.openrouter_stream(ANSWER, error_after=2))
    result = chat(api_url, QUESTION)
    assert _failed(result, "llm_stream_error")["retryable"] is True
    assert result.answer == "".join(ANSWER[:2]) and len(provider.requests) == 1
