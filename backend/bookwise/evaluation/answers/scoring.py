"""One question's outcome scored (gold sections cited, key facts, fragments) and the rates over all."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bookwise.evaluation.answers.checks import fragments_of, key_facts
from bookwise.evaluation.answers.judge import Verdict
from bookwise.evaluation.answers.questions import AnswerQuestion
from bookwise.evaluation.answers.run import AnswerRun
from bookwise.evaluation.retrieval import first_hit


@dataclass(frozen=True)
class AnswerOutcome:
    question: AnswerQuestion
    run: AnswerRun
    verdict: Verdict | None = None

    @property
    def answerable(self) -> bool:
        return self.question.question.answerable

    def _is_gold(self, n: int) -> bool:
        source = self.run.source(n)
        return source is not None and first_hit([source.key], self.question.question.gold) == 0

    @property
    def first_cited_gold(self) -> bool:
        first = self.run.first_cited
        return first is not None and self._is_gold(first)

    @property
    def any_cited_gold(self) -> bool:
        return self.run.outcome == "answered" and any(self._is_gold(n) for n in self.run.citations)

    def to_dict(self) -> dict[str, Any]:
        q, run = self.question.question, self.run
        found, missing = key_facts(run.answer, self.question.must_contain)
        passages, fragments = fragments_of(run)
        first = run.source(run.first_cited) if run.first_cited is not None else None
        return {
            "id": q.id,
            "type": q.type,
            "question": q.question,
            "mode": "selected_text" if q.selected_text else "normal",
            "scopes": list(run.scopes),
            "outcome": run.outcome,
            "answer_kind": run.answer_kind,
            "error": run.error,
            "answer": run.answer,
            "citations": [{"n": n, "section": list(s.key)} for n in run.citations if (s := run.source(n))],
            "quotes": list(run.quotes),
            "gold": [list(g) for g in q.gold],
            "first_cited": list(first.key) if first else None,
            "first_cited_gold": self.first_cited_gold,
            "any_cited_gold": self.any_cited_gold,
            "key_facts": {"found": found, "missing": missing},
            "quoted_passages": passages,
            "fragments": [dataclasses.asdict(f) for f in fragments],
            "judge": self.verdict.to_dict() if self.verdict else None,
            "latency_ms": round(run.latency_ms, 1),
        }


@dataclass(frozen=True)
class Rate:
    count: float
    of: int

    @property
    def value(self) -> float | None:
        return round(self.count / self.of, 4) if self.of else None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "count": round(self.count, 4), "of": self.of}


def _key_fact_rates(outcomes: Sequence[AnswerOutcome]) -> tuple[Rate, Rate]:
    with_terms = [o for o in outcomes if o.answerable and o.question.must_contain]
    shares = [
        len(key_facts(o.run.answer, o.question.must_contain)[0]) / len(o.question.must_contain)
        for o in with_terms
    ]
    return Rate(sum(shares), len(shares)), Rate(sum(s == 1.0 for s in shares), len(shares))


def _judge_rates(outcomes: Sequence[AnswerOutcome]) -> tuple[Rate, Rate]:
    verdicts = [o.verdict for o in outcomes if o.verdict is not None]
    known = [v.supported for v in verdicts if v.supported is not None]
    sentences = [s.supported for v in verdicts for s in v.sentences if s.supported is not None]
    return Rate(sum(known), len(known)), Rate(sum(sentences), len(sentences))


def metrics(outcomes: Sequence[AnswerOutcome]) -> dict[str, Rate]:
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    key, key_all = _key_fact_rates(outcomes)
    fragment_counts = [fragments_of(o.run) for o in outcomes]
    supported, sentences = _judge_rates(outcomes)
    return {
        "first_cited_gold": Rate(sum(o.first_cited_gold for o in answerable), len(answerable)),
        "any_cited_gold": Rate(sum(o.any_cited_gold for o in answerable), len(answerable)),
        "key_facts": key,
        "key_facts_all": key_all,
        "fragment_rate": Rate(sum(len(f) for _, f in fragment_counts), sum(n for n, _ in fragment_counts)),
        "declined": Rate(sum(o.run.outcome == "declined" for o in unanswerable), len(unanswerable)),
        "false_declines": Rate(sum(o.run.outcome == "declined" for o in answerable), len(answerable)),
        "supported": supported,
        "sentences_supported": sentences,
    }
