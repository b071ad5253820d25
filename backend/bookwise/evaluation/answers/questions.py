"""The golden questions of the answer eval: the retrieval eval's, each with its key-fact terms."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bookwise.errors import ConfigError
from bookwise.evaluation.retrieval import Question, load_questions


@dataclass(frozen=True)
class AnswerQuestion:
    question: Question  # id, text, type, gold, selected_text: as the retrieval eval reads them
    must_contain: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.question.id


def load_answer_questions(path: Path) -> list[AnswerQuestion]:
    """The retrieval eval's questions (same validation), each with its ``must_contain`` terms."""
    questions = load_questions(path)
    # load_questions skips blank lines and rejects bad ones, so the remaining lines pair up in order.
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    paired = []
    for question, line in zip(questions, lines, strict=True):
        terms = json.loads(line).get("must_contain") or []
        if not isinstance(terms, list):
            raise ConfigError(f"{path}: question {question.id}: must_contain must be a list")
        paired.append(AnswerQuestion(question, tuple(str(t) for t in terms if str(t).strip())))
    return paired
