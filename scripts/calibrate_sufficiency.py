"""Fit the sufficiency model (which signals, their weights, the threshold) on labelled questions.

    python scripts/calibrate_sufficiency.py \\
        --set eval/redux-extra.questions.jsonl=/path/to/redux-index-data-dir \\
        --set eval/docusaurus-docs.questions.jsonl=/path/to/docusaurus-index-data-dir \\
        --set eval/docusaurus-docs-extra.questions.jsonl=/path/to/docusaurus-index-data-dir \\
        --held-out ../shared/corpora/redux/questions.jsonl=/path/to/redux-index-data-dir [--write]
        [--max-false-refusal 0.02]

Each ``--set`` pairs a questions file with the data dir of an index of its corpus (ingested with the
same embedder). The script reports, for each candidate feature set, leave-one-set-out refusal and
false-refusal rates (the threshold is fitted on the other sets), picks the best, refits it on all
sets and reports it on the held-out set. ``--write`` stores it in
``backend/bookwise/retrieval/sufficiency_model.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from bookwise.evaluation.calibration import fit_model
from bookwise.evaluation.retrieval import load_questions
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.sufficiency import MODEL_PATH, SufficiencyModel
from bookwise.settings import Settings

FEATURES = ("dense", "dense_margin", "bm25", "bm25_margin")


@dataclass
class Row:
    source: str
    answerable: bool
    signals: dict[str, float]


def collect(pair: str) -> list[Row]:
    questions_path, _, data_dir = pair.partition("=")
    retriever = Retriever.open(Settings(data_dir=Path(data_dir)))
    try:
        return [
            Row(questions_path, q.answerable, retriever.search(q.query).sufficiency.signals)
            for q in load_questions(Path(questions_path))
        ]
    finally:
        retriever.close()


def rates(model: SufficiencyModel, rows: list[Row]) -> tuple[float, float]:
    refused = [model.probability(r.signals) < model.threshold for r in rows]
    unanswerable = [x for x, r in zip(refused, rows, strict=True) if not r.answerable]
    answerable = [x for x, r in zip(refused, rows, strict=True) if r.answerable]
    return sum(unanswerable) / max(1, len(unanswerable)), sum(answerable) / max(1, len(answerable))


def fit(rows: list[Row], features: tuple[str, ...], max_false_refusal: float) -> SufficiencyModel:
    return fit_model(
        [r.signals for r in rows], [r.answerable for r in rows], features, max_false_refusal=max_false_refusal
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", action="append", required=True, help="QUESTIONS.jsonl=DATA_DIR")
    parser.add_argument("--held-out", action="append", default=[], help="QUESTIONS.jsonl=DATA_DIR")
    # The answer targets allow 5 % false declines on *each* set, and the passage evidence declines a
    # few answerable questions of its own. At 3 % of the pooled sets (2 of 77) both of retrieval's
    # false refusals fell on one set (docusaurus-docs, 44 questions), which the evidence stage then
    # pushed over its 5 %; 2 % (1 of 77) leaves that stage room.
    parser.add_argument("--max-false-refusal", type=float, default=0.02)
    parser.add_argument("--max-features", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    rows = [row for pair in args.set for row in collect(pair)]
    held = [row for pair in args.held_out for row in collect(pair)]
    sources = sorted({r.source for r in rows})
    results = []
    for size in range(1, args.max_features + 1):
        for features in itertools.combinations(FEATURES, size):
            refused = wrongly = unanswerable = answerable = 0
            for source in sources:  # leave one set out
                train = [r for r in rows if r.source != source]
                test = [r for r in rows if r.source == source]
                model = fit(train, features, args.max_false_refusal)
                rr, fr = rates(model, test)
                n_u = sum(not r.answerable for r in test)
                n_a = len(test) - n_u
                refused, wrongly = refused + rr * n_u, wrongly + fr * n_a
                unanswerable, answerable = unanswerable + n_u, answerable + n_a
            results.append((refused / unanswerable, wrongly / answerable, features))
    # Refusals gained are worth less than false refusals avoided: a wrong "not covered" hurts more.
    results.sort(key=lambda r: -(r[0] - 3 * r[1]))
    print("leave-one-set-out (refusal rate, false-refusal rate) per feature set, best first:")
    for rr, fr, features in results[:8]:
        print(f"  {rr:6.1%} {fr:6.1%}  {', '.join(features)}")
    best = results[0][2]
    model = fit(rows, best, args.max_false_refusal)
    rr, fr = rates(model, rows)
    print(f"\nchosen: {', '.join(best)}; threshold {model.threshold:.4f}")
    print(f"calibration sets ({len(rows)} questions): refusal {rr:.1%}, false refusal {fr:.1%}")
    if held:
        rr, fr = rates(model, held)
        print(f"held out ({len(held)} questions): refusal {rr:.1%}, false refusal {fr:.1%}")
    if args.write:
        MODEL_PATH.write_text(json.dumps(model.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
