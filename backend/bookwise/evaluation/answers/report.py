"""The eval's report: counts, metrics overall and by question type, latency, the gate's verdict and
every question's details; and its lines for a terminal."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bookwise.evaluation.answers.gate import AnswerGate
from bookwise.evaluation.answers.scoring import AnswerOutcome, metrics


@dataclass
class AnswerEval:
    outcomes: list[AnswerOutcome]
    answer_mode: str  # "llm" or "extractive"
    model: str | None
    judge_model: str | None
    index_version: str

    def report(self, gate: AnswerGate) -> dict[str, Any]:
        rates = metrics(self.outcomes)
        failures = gate.failures(rates)
        latencies = [o.run.latency_ms for o in self.outcomes]
        counts = {
            kind: sum(o.run.outcome == kind for o in self.outcomes)
            for kind in ("answered", "declined", "error")
        }
        return {
            "questions": len(self.outcomes),
            "answerable": sum(o.answerable for o in self.outcomes),
            "unanswerable": sum(not o.answerable for o in self.outcomes),
            "answer_mode": self.answer_mode,
            "model": self.model,
            "judge_model": self.judge_model,
            "index_version": self.index_version,
            "outcomes": counts,
            "judge": _judge_counts(self.outcomes),
            "metrics": {name: rate.to_dict() for name, rate in rates.items()},
            "by_type": _by_type(self.outcomes),
            "latency_ms": {
                "p50": round(statistics.median(latencies), 1) if latencies else 0.0,
                "max": round(max(latencies), 1) if latencies else 0.0,
            },
            "gate": {"passed": not failures, "failures": failures},
            "details": [o.to_dict() for o in self.outcomes],
        }


def _judge_counts(outcomes: Sequence[AnswerOutcome]) -> dict[str, int]:
    """Answers judged, and those without a verdict (the judge failed, or left a sentence unjudged)."""
    verdicts = [o.verdict for o in outcomes if o.verdict is not None]
    return {"judged": len(verdicts), "unknown": sum(v.supported is None for v in verdicts)}


def _by_type(outcomes: Sequence[AnswerOutcome]) -> dict[str, dict[str, Any]]:
    by_type = {}
    for kind in sorted({o.question.question.type for o in outcomes}):
        rates = metrics([o for o in outcomes if o.question.question.type == kind])
        by_type[kind] = {"questions": sum(o.question.question.type == kind for o in outcomes)} | {
            name: rates[name].value
            for name in ("first_cited_gold", "key_facts", "declined", "false_declines")
        }
    return by_type


SUMMARY_ROWS = (
    ("first_cited_gold", "first cited passage is from a gold section"),
    ("any_cited_gold", "a gold section is cited"),
    ("key_facts", "key facts present (share of terms)"),
    ("key_facts_all", "answers with every key fact"),
    ("fragment_rate", "quoted passages that are fragments"),
    ("declined", "unanswerable questions declined"),
    ("false_declines", "answerable questions declined"),
    ("supported", "judge: answers fully supported"),
    ("sentences_supported", "judge: sentences supported"),
)


def summary_lines(report: dict[str, Any]) -> list[str]:
    outcomes, latency, judged = report["outcomes"], report["latency_ms"], report["judge"]
    mode = f"{report['answer_mode']} ({report['model']})" if report["model"] else report["answer_mode"]
    lines = [
        f"questions: {report['questions']} ({report['answerable']} answerable, "
        f"{report['unanswerable']} unanswerable); answers: {mode}; judge: {report['judge_model'] or 'off'}",
        f"outcomes:  {outcomes['answered']} answered, {outcomes['declined']} declined, "
        f"{outcomes['error']} errors; latency p50 {latency['p50']:.0f} ms, max {latency['max']:.0f} ms",
    ]
    if report["judge_model"]:
        lines.append(f"judged:    {judged['judged']} answers, {judged['unknown']} without a verdict")
    lines += ["", f"{'metric':44} {'value':>6}  {'count':>9}"]
    for name, label in SUMMARY_ROWS:
        rate = report["metrics"][name]
        value = "-" if rate["value"] is None else f"{rate['value']:.3f}"
        lines.append(f"{label:44} {value:>6}  {rate['count']:>5g}/{rate['of']}")
    lines.append("")
    for kind, row in report["by_type"].items():
        shown = "  ".join(
            f"{name} {value:.2f}" for name, value in row.items() if name != "questions" and value is not None
        )
        lines.append(f"  {kind:16} n={row['questions']:<3} {shown}")
    return lines


def detail_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for d in report["details"]:
        facts = d["key_facts"]
        judged = d["judge"]["supported"] if d["judge"] else None
        verdict = "-" if judged is None else ("ok" if judged else "unsupported")
        lines.append(
            f"{d['id']:10} {d['type']:15} {d['outcome']:8}"
            f"  first cited gold {'yes' if d['first_cited_gold'] else 'no':3}"
            f"  facts {len(facts['found'])}/{len(facts['found']) + len(facts['missing'])}"
            f"  fragments {len(d['fragments'])}/{d['quoted_passages']}  judge {verdict}"
            + (f"  error {d['error']}" if d["error"] else "")
        )
    return lines
