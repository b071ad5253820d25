"""Retrieval evaluation on golden questions (the corpora's ``questions.jsonl`` format).

Scoring follows the corpora README: a result hits when its ``doc_path`` and source-form ``heading``
equal a gold entry's; the gold entries of one question are alternatives (finding any counts).
Metrics are over answerable questions; unanswerable ones score refusals (``sufficient_context``
false) and answerable ones false refusals. Selected-text questions are searched with the selection
followed by the question, as the chat UI sends them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookwise.errors import ConfigError
from bookwise.retrieval.models import RetrievalResult

QUESTION_TYPES = frozenset(
    {"factoid", "howto", "conceptual", "troubleshooting", "unanswerable", "selected_text"}
)
RECALL_DEPTHS = (1, 5, 10)
SectionKey = tuple[str, str]  # (doc_path, heading)


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    type: str
    gold: tuple[SectionKey, ...]
    selected_text: str | None = None

    @property
    def answerable(self) -> bool:
        return self.type != "unanswerable"

    @property
    def query(self) -> str:
        return f"{self.selected_text}\n\n{self.question}" if self.selected_text else self.question


def load_questions(path: Path) -> list[Question]:
    questions: list[Question] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read questions file {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            kind = str(data.get("type", "factoid"))
            if kind not in QUESTION_TYPES:
                raise ValueError(f"unknown type {kind!r}")
            gold = tuple((str(g["doc_path"]), str(g["heading"])) for g in data.get("gold") or [])
            if kind != "unanswerable" and not gold:
                raise ValueError("an answerable question needs at least one gold section")
            questions.append(
                Question(
                    id=str(data.get("id", f"line-{number}")),
                    question=str(data["question"]),
                    type=kind,
                    gold=gold,
                    selected_text=data.get("selected_text") or None,
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}:{number}: invalid question: {exc}") from exc
    if not questions:
        raise ConfigError(f"{path} holds no questions")
    return questions


# Metrics on one ranked list ----------------------------------------------------------------------


def first_hit(ranked: Sequence[SectionKey], gold: Iterable[SectionKey]) -> int | None:
    """0-based rank of the first result matching any gold section, or None."""
    wanted = set(gold)
    return next((rank for rank, key in enumerate(ranked) if key in wanted), None)


def reciprocal_rank(rank: int | None, k: int) -> float:
    return 1.0 / (rank + 1) if rank is not None and rank < k else 0.0


def ndcg(rank: int | None, k: int) -> float:
    # Gold entries are alternatives: the ideal list has one relevant result first (IDCG = 1).
    return 1.0 / math.log2(rank + 2) if rank is not None and rank < k else 0.0


def doc_hit(ranked: Sequence[SectionKey], gold: Iterable[SectionKey], k: int) -> bool:
    docs = {doc for doc, _ in gold}
    return any(doc in docs for doc, _ in ranked[:k])


@dataclass
class QuestionOutcome:
    question: Question
    ranked: list[SectionKey]
    sufficient: bool
    sufficiency_score: float
    latency_ms: float
    rank: int | None = field(init=False)

    def __post_init__(self) -> None:
        self.rank = first_hit(self.ranked, self.question.gold) if self.question.answerable else None

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        return {
            "id": q.id,
            "type": q.type,
            "gold": [list(g) for g in q.gold],
            "ranked": [list(r) for r in self.ranked],
            "first_hit_rank": None if self.rank is None else self.rank + 1,
            "sufficient_context": self.sufficient,
            "sufficiency_score": self.sufficiency_score,
        }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summarize(outcomes: Sequence[QuestionOutcome], *, k: int) -> dict[str, Any]:
    answerable = [o for o in outcomes if o.question.answerable]
    unanswerable = [o for o in outcomes if not o.question.answerable]
    depths = sorted({*RECALL_DEPTHS, k})
    section = {f"recall@{d}": _mean([o.rank is not None and o.rank < d for o in answerable]) for d in depths}
    section["mrr@10"] = _mean([reciprocal_rank(o.rank, 10) for o in answerable])
    section["ndcg@10"] = _mean([ndcg(o.rank, 10) for o in answerable])
    refused = sum(not o.sufficient for o in unanswerable)
    false_refusals = sum(not o.sufficient for o in answerable)
    by_type: dict[str, dict[str, float]] = {}
    for kind in sorted({o.question.type for o in answerable}):
        group = [o for o in answerable if o.question.type == kind]
        by_type[kind] = {
            "questions": len(group),
            f"recall@{k}": _mean([o.rank is not None and o.rank < k for o in group]),
            "mrr@10": _mean([reciprocal_rank(o.rank, 10) for o in group]),
        }
    latencies = [o.latency_ms for o in outcomes]
    return {
        "questions": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "k": k,
        "section": {name: round(value, 4) for name, value in section.items()},
        "document": {
            f"recall@{k}": round(_mean([doc_hit(o.ranked, o.question.gold, k) for o in answerable]), 4)
        },
        "refusal": {
            "refused": refused,
            "refusal_rate": round(refused / len(unanswerable), 4) if unanswerable else None,
            "false_refusals": false_refusals,
            "false_refusal_rate": round(false_refusals / len(answerable), 4) if answerable else None,
        },
        "by_type": {kind: {n: round(v, 4) for n, v in m.items()} for kind, m in by_type.items()},
        "latency_ms": {
            "p50": round(_percentile(latencies, 0.5), 2),
            "p95": round(_percentile(latencies, 0.95), 2),
        },
    }


def evaluate(
    questions: Sequence[Question],
    search: Callable[[str, int], RetrievalResult],
    *,
    k: int = 5,
) -> list[QuestionOutcome]:
    """Run every question through ``search(query, top_k)``; ranks are kept to depth max(10, k)."""
    depth = max(10, k)
    outcomes = []
    for question in questions:
        result = search(question.query, depth)
        outcomes.append(
            QuestionOutcome(
                question=question,
                ranked=[(s.doc_path, s.heading) for s in result.sections],
                sufficient=result.sufficient_context,
                sufficiency_score=result.sufficiency.score,
                latency_ms=result.timings_ms.get("total", 0.0),
            )
        )
    return outcomes


@dataclass(frozen=True)
class Gate:
    """CI thresholds: any metric below its minimum (or above its maximum) fails the run."""

    min_recall: float | None = None
    min_mrr: float | None = None
    min_refusal: float | None = None
    max_false_refusal: float | None = None

    def failures(self, summary: dict[str, Any]) -> list[str]:
        k = summary["k"]
        checks = [
            (f"section recall@{k}", summary["section"][f"recall@{k}"], self.min_recall, "min"),
            ("section mrr@10", summary["section"]["mrr@10"], self.min_mrr, "min"),
            ("refusal rate", summary["refusal"]["refusal_rate"], self.min_refusal, "min"),
            ("false refusal rate", summary["refusal"]["false_refusal_rate"], self.max_false_refusal, "max"),
        ]
        failed = []
        for name, value, bound, kind in checks:
            if bound is None or value is None:
                continue
            if (kind == "min" and value < bound) or (kind == "max" and value > bound):
                failed.append(f"{name} {value:.4f} {'<' if kind == 'min' else '>'} {bound}")
        return failed
