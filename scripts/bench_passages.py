"""Passage choice on golden questions: does the first quoted passage come from a gold section?

    python scripts/bench_passages.py --data-dir DIR QUESTIONS.jsonl [...] [--grid]

DIR holds an index ingested with the local embedder (see ``scripts/bench_retrieval.py``). For each
answerable question the retriever's top sections are searched as the API does, their passages
ranked by ``Retriever.rank_passages``, and reported:

* ``retrieval@1``: the first ranked section is a gold section (what quoting in rank order gives);
* ``passage@1``: the best passage comes from a gold section (what the extractive answer leads with);
* ``facts@3``: every ``must_contain`` fact is in the three best passages.

``--evidence`` instead reports, for every question including unanswerable ones, how the declining
rule of ``generation/evidence.py`` decides (declined unanswerable, wrongly declined answerable), next
to retrieval's verdict alone.

``--grid`` tries a few weight settings (``PassageWeights``) and prints one line each: how the
weights in ``retrieval/passage_rank.py`` were chosen. Tune on ``eval/`` only; redux's own file is
measured, never tuned on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path
from typing import Any

from bookwise.generation.evidence import answers
from bookwise.retrieval.passage_rank import PassageWeights
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings


def _load(paths: list[Path], *, unanswerable: bool = False) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if (unanswerable or row.get("type") != "unanswerable") and not row.get("selected_text"):
                    rows.append(row)
    return rows


def _declining(retriever: Retriever, rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {"answerable": 0, "unanswerable": 0, "declined": 0, "false_declines": 0}
    retrieval_only = {"declined": 0, "false_declines": 0}
    for row in rows:
        result = retriever.search(row["question"])
        ranked = retriever.rank_passages(row["question"], result.sections)
        says = answers(ranked[0] if ranked else None, retrieval_sufficient=result.sufficient_context)
        if row.get("type") == "unanswerable":
            counts["unanswerable"] += 1
            counts["declined"] += not says
            retrieval_only["declined"] += not result.sufficient_context
        else:
            counts["answerable"] += 1
            counts["false_declines"] += not says
            retrieval_only["false_declines"] += not result.sufficient_context
    return {**counts, "retrieval_verdict_only": retrieval_only}


def _measure(
    retriever: Retriever,
    rows: list[dict[str, Any]],
    results: list[Any],
    weights: PassageWeights | None = None,
) -> dict[str, float]:
    hits = first = facts = 0
    for row, sections in zip(rows, results, strict=True):
        gold = {(g["doc_path"], g["heading"]) for g in row["gold"]}
        if sections and (sections[0].doc_path, sections[0].heading) in gold:
            first += 1
        ranked = retriever.rank_passages(row["question"], sections, weights)
        if ranked:
            best = sections[ranked[0].passage.section]
            hits += (best.doc_path, best.heading) in gold
        shown = " ".join(s.passage.text for s in ranked[:3]).lower()
        facts += all(str(f).lower() in shown for f in row.get("must_contain") or [])
    n = len(rows) or 1
    return {"questions": len(rows), "retrieval@1": first / n, "passage@1": hits / n, "facts@3": facts / n}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("questions", type=Path, nargs="+")
    parser.add_argument("--grid", action="store_true", help="try several weight settings")
    parser.add_argument("--evidence", action="store_true", help="measure the declining rule")
    args = parser.parse_args()
    os.environ["BOOKWISE_DATA_DIR"] = str(args.data_dir)
    retriever = Retriever.open(Settings())
    if args.evidence:
        print(json.dumps(_declining(retriever, _load(args.questions, unanswerable=True)), indent=2))
        return
    rows = _load(args.questions)
    results = [retriever.search(row["question"]).sections for row in rows]
    if not args.grid:
        print(json.dumps(_measure(retriever, rows, results), indent=2))
        return
    for plain, coverage, prior in itertools.product((0.0, 0.5), (0.0, 0.3, 0.6), (0.0, 0.05, 0.15)):
        weights = PassageWeights(plain_share=plain, coverage=coverage, prior=prior)
        figures = _measure(retriever, rows, results, weights)
        print(f"plain={plain} coverage={coverage} prior={prior}: " + json.dumps(figures))


if __name__ == "__main__":
    main()
