"""CI thresholds on the answer metrics."""

from __future__ import annotations

from dataclasses import dataclass

from bookwise.evaluation.answers.scoring import Rate


@dataclass(frozen=True)
class AnswerGate:
    """CI thresholds on the answer metrics: any one missed fails the run."""

    min_first_cited: float | None = None
    min_any_cited: float | None = None
    min_key_facts: float | None = None
    max_fragments: float | None = None
    min_declined: float | None = None
    max_false_declines: float | None = None
    min_supported: float | None = None

    def failures(self, rates: dict[str, Rate]) -> list[str]:
        checks = [
            ("first_cited_gold", self.min_first_cited, "min"),
            ("any_cited_gold", self.min_any_cited, "min"),
            ("key_facts", self.min_key_facts, "min"),
            ("fragment_rate", self.max_fragments, "max"),
            ("declined", self.min_declined, "min"),
            ("false_declines", self.max_false_declines, "max"),
            ("supported", self.min_supported, "min"),
        ]
        failed = []
        for name, bound, kind in checks:
            value = rates[name].value
            if bound is None:
                continue
            if value is None:
                # Nothing measured: a minimum cannot be shown (no judge reply, no unanswerable question),
                # a maximum holds (no quoted passage is no fragment).
                if kind == "min":
                    failed.append(f"{name} not measured (gate {bound})")
            elif (kind == "min" and value < bound) or (kind == "max" and value > bound):
                failed.append(f"{name} {value:.4f} {'<' if kind == 'min' else '>'} {bound}")
        return failed
