"""Eval metrics checked against hand-computed values, question loading, and the CI gate."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bookwise.errors import ConfigError
from bookwise.evaluation.retrieval import (
    Gate,
    Question,
    QuestionOutcome,
    doc_hit,
    first_hit,
    load_questions,
    ndcg,
    reciprocal_rank,
    summarize,
)

A, B, C, D = ("a.md", "A"), ("b.md", "B"), ("c.md", "C"), ("a.md", "Other")


def outcome(gold: tuple[tuple[str, str], ...], ranked: list[tuple[str, str]], sufficient: bool = True):  # type: ignore[no-untyped-def]
    kind = "factoid" if gold else "unanswerable"
    return QuestionOutcome(Question("q", "?", kind, gold), ranked, sufficient, 0.5, 10.0)


def test_rank_metrics_on_one_list() -> None:
    ranked = [D, B, A, C]
    assert first_hit(ranked, [A, C]) == 2  # any gold entry counts; the first one found wins
    assert reciprocal_rank(2, 10) == pytest.approx(1 / 3)
    assert reciprocal_rank(2, 2) == 0.0  # beyond the depth
    assert ndcg(2, 10) == pytest.approx(1 / math.log2(4))
    assert ndcg(None, 10) == 0.0
    assert doc_hit(ranked, [("a.md", "Missing")], 1)  # D is on a.md: a document-level hit at 1
    assert not doc_hit([B, C], [A], 5)


def test_summary_matches_hand_computed_values() -> None:
    outcomes = [
        outcome((A,), [A, B, C]),  # rank 1
        outcome((C,), [A, B, C]),  # rank 3
        outcome((B,), [A, C, D], sufficient=False),  # miss, and wrongly refused
        outcome((), [A], sufficient=False),  # unanswerable, refused
        outcome((), [B], sufficient=True),  # unanswerable, answered
    ]
    summary = summarize(outcomes, k=5)
    section = summary["section"]
    assert (summary["answerable"], summary["unanswerable"]) == (3, 2)
    assert section["recall@1"] == pytest.approx(1 / 3, abs=1e-4)
    assert section["recall@5"] == pytest.approx(2 / 3, abs=1e-4)
    assert section["recall@10"] == pytest.approx(2 / 3, abs=1e-4)
    assert section["mrr@10"] == pytest.approx((1 + 1 / 3) / 3, abs=1e-4)
    assert section["ndcg@10"] == pytest.approx((1 + 0.5) / 3, abs=1e-4)
    assert summary["document"]["recall@5"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["refusal"] == {
        "refused": 1,
        "refusal_rate": 0.5,
        "false_refusals": 1,
        "false_refusal_rate": pytest.approx(1 / 3, abs=1e-4),
    }
    assert summary["by_type"]["factoid"]["questions"] == 3


def test_gate_lists_every_failed_threshold() -> None:
    summary = summarize([outcome((A,), [B, A]), outcome((), [A], sufficient=True)], k=1)
    assert Gate(min_recall=0.9, min_mrr=0.4, min_refusal=0.5, max_false_refusal=0.0).failures(summary) == [
        "section recall@1 0.0000 < 0.9",
        "refusal rate 0.0000 < 0.5",
    ]
    assert Gate().failures(summary) == []


def test_selected_text_questions_search_with_the_selection_first(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "s1",
            "question": "Why?",
            "type": "selected_text",
            "selected_text": "Shallow copies.",
            "gold": [{"doc_path": "a.md", "heading": "A", "heading_level": 2}],
        },
        {"id": "u1", "question": "Storybook?", "type": "unanswerable", "gold": []},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    selected, unanswerable = load_questions(path)
    assert selected.query == "Shallow copies.\n\nWhy?" and selected.gold == (A,)
    assert not unanswerable.answerable and unanswerable.query == "Storybook?"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "q.jsonl:2: invalid question"),
        ('{"question": "x", "type": "factoid", "gold": []}', "needs at least one gold section"),
        ('{"question": "x", "type": "trivia", "gold": []}', "unknown type 'trivia'"),
    ],
)
def test_bad_question_lines_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "ok", "type": "unanswerable", "gold": []}\n' + line + "\n")
    with pytest.raises(ConfigError, match=message):
        load_questions(path)


def test_missing_or_empty_questions_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_questions(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="holds no questions"):
        load_questions(tmp_path / "empty.jsonl")
