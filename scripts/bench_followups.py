"""Follow-ups without an LLM: does the searched query find the section the reader meant?

    python scripts/bench_followups.py --data-dir DIR eval/example-followups.jsonl

Each line holds the reader's previous question(s) (``history``), the follow-up and its gold sections.
Two ways to search a follow-up are compared, each by whether a gold section is ranked first and
within the top five:

* ``joined``: the follow-up followed by the whole previous question (Bookwise before this change);
* ``bookwise``: ``followup.standalone_query`` without a model: as asked when the follow-up names its
  own topic, else with the topic words of the latest question that had one; then spelled as the book
  spells it, as the chat searches (``coverage.spelled_search``).

``--answers`` instead puts each conversation through the whole answer path without a model, as the
widget does: each earlier question is answered and its answer sent back as history, then the follow-up
is answered and its first quote checked against the gold sections.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from bookwise.evaluation.answers.run import AnswerRun, ask
from bookwise.generation.answer import Answerer
from bookwise.generation.coverage import book_phrases, spelled_search
from bookwise.generation.followup import Holds, SearchQuery, standalone_query
from bookwise.generation.models import ChatRequest
from bookwise.generation.prompts import Turn
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings


def _rank_of_gold(sections: Sequence[SectionResult], gold: set[tuple[str, str]]) -> int | None:
    return next((i for i, s in enumerate(sections, 1) if (s.doc_path, s.heading) in gold), None)


async def _resolve(question: str, history: tuple[Turn, ...], holds: Holds) -> SearchQuery:
    return await standalone_query(question, history, llm=None, timeout_s=1, holds=holds)


async def _conversation(answerer: Answerer, row: dict[str, Any]) -> AnswerRun:
    history: tuple[Turn, ...] = ()
    for question in row["history"]:
        earlier = await ask(answerer, ChatRequest(question=question, history=history))
        history += (Turn("user", question), Turn("assistant", earlier.answer))
    return await ask(answerer, ChatRequest(question=row["question"], history=history))


def answers(retriever: Retriever, settings: Settings, rows: list[dict[str, Any]]) -> None:
    """Each follow-up's first quote, read as ``bookwise eval --answers`` reads it (``first_cited``)."""
    answerer = Answerer(settings, retriever, llm=None)
    hits = 0
    for row in rows:
        gold = {(g["doc_path"], g["heading"]) for g in row["gold"]}
        run = anyio.run(_conversation, answerer, row)
        source = run.source(run.first_cited) if run.first_cited is not None else None
        first = source.key if source is not None else None
        hits += first in gold
        kind = run.answer_kind or "error"
        print(f"{row['id']}  {'gold' if first in gold else '-   '}  {kind:12} {row['question']!r} -> {first}")
    print(f"first quote from a gold section: {hits}/{len(rows)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--answers", action="store_true", help="answer each conversation, no model")
    args = parser.parse_args()
    os.environ["BOOKWISE_DATA_DIR"] = str(args.data_dir)
    settings = Settings()
    retriever = Retriever.open(settings)
    rows = [
        json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    if args.answers:
        answers(retriever, settings, rows)
        return
    totals = {"joined": [0, 0], "bookwise": [0, 0]}
    search = functools.partial(retriever.asearch, top_k=5)
    holds = book_phrases(retriever).holds
    for row in rows:
        gold = {(g["doc_path"], g["heading"]) for g in row["gold"]}
        history = tuple(Turn("user", q) for q in row["history"])
        searched = anyio.run(_resolve, row["question"], history, holds)
        spelled, found = anyio.run(spelled_search, retriever, searched.text, search)
        joined = retriever.search(f"{row['question']} {row['history'][-1]}", top_k=5)
        ranked = {"joined": joined.sections, "bookwise": found.sections}
        line = [row["id"]]
        for name, sections in ranked.items():
            rank = _rank_of_gold(sections, gold)
            totals[name][0] += rank == 1
            totals[name][1] += rank is not None
            line.append(f"{name}: {rank or '-'}")
        print("  ".join(line), f"  ({searched.method}: {spelled!r})")
    n = len(rows)
    for name, (first, top5) in totals.items():
        print(f"{name:9} gold first {first}/{n}  gold in top 5 {top5}/{n}")


if __name__ == "__main__":
    main()
