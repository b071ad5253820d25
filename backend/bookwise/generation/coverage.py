"""Whether the book answers a query without a model: the one decision the chat's extractive answer
and the MCP ``search`` tool's ``covered`` share, so an agent is never told "covered" for a question
the chat declines."""

from __future__ import annotations

from collections.abc import Sequence

from bookwise.generation.evidence import PassagePlan, plan_passages
from bookwise.generation.prompts import Turn
from bookwise.generation.study import without_solutions
from bookwise.retrieval.models import RetrievalResult, SectionResult
from bookwise.retrieval.retriever import Retriever


async def passage_plan(
    retriever: Retriever,
    query: str,
    sources: Sequence[SectionResult],
    history: Sequence[Turn] = (),
    *,
    retrieval_sufficient: bool,
    unknown_names: Sequence[str] = (),
    asks_unknown: bool = False,
) -> PassagePlan:
    """The passages of ``sources`` that answer ``query``, or the decline (``sufficient`` false)."""
    ranked = without_solutions(await retriever.arank_passages(query, sources), sources)
    return plan_passages(
        ranked,
        sources,
        history,
        retrieval_sufficient=retrieval_sufficient,
        names_unknown=bool(unknown_names),
        asks_unknown=asks_unknown,
        question=query,
    )


async def covers(retriever: Retriever, result: RetrievalResult) -> bool:
    """Whether the book answers ``result``'s query, as the chat without a model decides it."""
    if not result.sections:
        return False
    plan = await passage_plan(
        retriever,
        result.query,
        result.sections,
        retrieval_sufficient=result.sufficient_context,
        unknown_names=result.unknown_names,
        asks_unknown=result.asks_unknown,
    )
    return plan.sufficient
