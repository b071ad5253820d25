"""Running the eval: every question answered (and judged) with the configured index and models."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from bookwise.errors import ConfigError
from bookwise.evaluation.answers.judge import Judge
from bookwise.evaluation.answers.questions import AnswerQuestion
from bookwise.evaluation.answers.report import AnswerEval
from bookwise.evaluation.answers.run import ReaderPage, answer_question
from bookwise.evaluation.answers.scoring import AnswerOutcome
from bookwise.generation.answer import Answerer
from bookwise.generation.llm import LLMClient
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings


async def evaluate_answers(
    answerer: Answerer,
    questions: Sequence[AnswerQuestion],
    *,
    judge: Judge | None,
    concurrency: int,
    reader_page: ReaderPage = "none",
) -> list[AnswerOutcome]:
    """Every question answered (and judged), ``concurrency`` at a time; outcomes in question order."""
    outcomes: list[AnswerOutcome | None] = [None] * len(questions)
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(index: int, question: AnswerQuestion) -> None:
        async with limiter:
            run = await answer_question(answerer, question.question, reader_page)
            verdict = None
            if judge is not None and run.outcome == "answered":
                verdict = await judge.judge(question.question.question, run)
            outcomes[index] = AnswerOutcome(question, run, verdict)

    async with anyio.create_task_group() as group:
        for index, question in enumerate(questions):
            group.start_soon(one, index, question)
    return [outcome for outcome in outcomes if outcome is not None]


def run_answer_eval(
    settings: Settings,
    questions: Sequence[AnswerQuestion],
    *,
    judge: bool = True,
    concurrency: int = 4,
    reader_page: ReaderPage = "none",
) -> AnswerEval:
    """The configured index and model (extractive without one), as ``bookwise serve`` would answer;
    ``reader_page``: the page each question is asked from (``run.ReaderPage``)."""
    if concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    judge_model = settings.eval_judge_model or settings.llm_model

    async def run() -> AnswerEval:
        llm = LLMClient(settings) if settings.llm_base_url else None
        judge_client = None
        if llm is not None and judge:
            judge_client = LLMClient(settings.model_copy(update={"llm_model": judge_model}))
        try:
            retriever = await anyio.to_thread.run_sync(Retriever.open, settings)
            try:
                judged = (
                    Judge(
                        judge_client, book_title=settings.book_title, timeout_s=settings.llm_total_timeout_s
                    )
                    if judge_client is not None
                    else None
                )
                outcomes = await evaluate_answers(
                    Answerer(settings, retriever, llm),
                    questions,
                    judge=judged,
                    concurrency=concurrency,
                    reader_page=reader_page,
                )
                version = retriever.index_version
            finally:
                retriever.close()
        finally:
            for client in (llm, judge_client):
                if client is not None:
                    await client.aclose()
        return AnswerEval(
            outcomes,
            answer_mode="llm" if llm is not None else "extractive",
            model=llm.model if llm is not None else None,
            judge_model=judge_client.model if judge_client is not None else None,
            index_version=version,
        )

    return anyio.run(run)
