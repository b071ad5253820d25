#!/usr/bin/env python3
"""Validate an evaluation question file (``questions.jsonl``) against a corpus's docs folder.

Usage: ``python validate_questions.py QUESTIONS.jsonl DOCS_DIR``

Runs the checks described in the corpora README:

* ids are unique and every ``type`` is valid;
* each gold ``doc_path`` exists;
* each gold heading appears verbatim at the stated level, outside code fences and front matter;
* each gold heading occurs exactly once in its page;
* each ``selected_text`` appears verbatim in the first gold doc, inside the first gold section;
* each ``must_contain`` term appears (case-insensitively) in the answer and in at least one
  gold section;
* field shapes: unanswerable questions have empty ``gold`` and ``must_contain``,
  ``selected_text`` / ``answerable_from_selection`` only on ``selected_text`` questions.

Every failure is printed; the exit status is 1 if there was any failure, 0 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VALID_TYPES = ("factoid", "howto", "conceptual", "troubleshooting", "unanswerable", "selected_text")

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_FENCE_OPEN_RE = re.compile(r"^\s*(`{3,}|~{3,})")
_CUSTOM_ID_RE = re.compile(r"\s*\{#[^{}\s]*\}$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+$")


@dataclass(frozen=True)
class Section:
    """A heading plus its own text, up to the next heading of any level."""

    heading: str
    level: int
    text: str


def strip_front_matter(source: str) -> str:
    """Remove a leading YAML front matter block (``---`` ... ``---``) if there is one."""
    lines = source.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return source
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[index + 1 :])
    return source


def normalize_heading(raw: str) -> str:
    """Heading text as used in gold labels: closing #s and a trailing ``{#custom-id}`` removed."""
    text = raw.strip()
    text = _CUSTOM_ID_RE.sub("", text).strip()
    text = _CLOSING_HASHES_RE.sub("", text).strip()
    return _CUSTOM_ID_RE.sub("", text).strip()


def split_sections(source: str) -> list[Section]:
    """Split a Markdown/MDX source into sections. The first one is always the intro (``""``, level 1)."""
    body = strip_front_matter(source)
    sections: list[Section] = []
    heading, level, buffer = "", 1, []
    fence: str | None = None
    for line in body.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if fence is not None:
            buffer.append(line)
            closing = stripped.strip()
            if closing and set(closing) == {fence[0]} and len(closing) >= len(fence):
                fence = None
            continue
        fence_match = _FENCE_OPEN_RE.match(stripped)
        if fence_match:
            marker = fence_match.group(1)
            # A backtick fence's info string may not contain backticks (CommonMark).
            if not (marker[0] == "`" and "`" in stripped.strip()[len(marker) :]):
                fence = marker
            buffer.append(line)
            continue
        heading_match = _HEADING_RE.match(stripped)
        if heading_match:
            sections.append(Section(heading, level, "".join(buffer)))
            heading = normalize_heading(heading_match.group(2) or "")
            level = len(heading_match.group(1))
            buffer = [line]
            continue
        buffer.append(line)
    sections.append(Section(heading, level, "".join(buffer)))
    return sections


class Validator:
    """Collects failures while checking questions against a docs folder."""

    def __init__(self, docs_dir: Path) -> None:
        self.docs_dir = docs_dir
        self.failures: list[str] = []
        self._cache: dict[str, list[Section] | None] = {}

    def fail(self, qid: str, message: str) -> None:
        self.failures.append(f"{qid}: {message}")

    def sections(self, doc_path: str) -> list[Section] | None:
        if doc_path not in self._cache:
            path = self.docs_dir / doc_path
            if "\\" in doc_path or not path.is_file():
                self._cache[doc_path] = None
            else:
                self._cache[doc_path] = split_sections(path.read_text(encoding="utf-8"))
        return self._cache[doc_path]

    def gold_section(self, qid: str, entry: Any) -> Section | None:
        """Resolve one gold entry to its section, recording failures; ``None`` if it can't be found."""
        if not isinstance(entry, dict) or set(entry) != {"doc_path", "heading", "heading_level"}:
            self.fail(qid, f"malformed gold entry {entry!r}")
            return None
        doc_path, heading, level = entry["doc_path"], entry["heading"], entry["heading_level"]
        if not isinstance(level, int) or not 1 <= level <= 6:
            self.fail(qid, f"heading_level must be an int 1-6, got {level!r}")
            return None
        sections = self.sections(doc_path)
        if sections is None:
            self.fail(qid, f"doc_path does not exist: {doc_path}")
            return None
        if heading == "":
            if level != 1:
                self.fail(qid, f"{doc_path}: intro gold entry must have heading_level 1")
            intro = sections[0]
            if not intro.text.strip():
                self.fail(qid, f"{doc_path}: gold points at the intro but the page has no intro text")
            return intro
        same_text = [section for section in sections[1:] if section.heading == heading]
        if not same_text:
            self.fail(qid, f"{doc_path}: heading not found outside code fences: {heading!r}")
            return None
        if len(same_text) > 1:
            self.fail(qid, f"{doc_path}: heading occurs {len(same_text)} times in the page: {heading!r}")
        matching = [section for section in same_text if section.level == level]
        if not matching:
            levels = sorted({section.level for section in same_text})
            self.fail(qid, f"{doc_path}: heading {heading!r} is at level(s) {levels}, not {level}")
            return None
        return matching[0]

    def check_question(self, question: dict[str, Any]) -> None:
        qid = str(question.get("id", "?"))
        qtype = question.get("type")
        if qtype not in VALID_TYPES:
            self.fail(qid, f"invalid type {qtype!r}")
        if not isinstance(question.get("question"), str) or not question["question"].strip():
            self.fail(qid, "missing question text")
        answer = question.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            self.fail(qid, "missing answer")
            answer = ""
        gold = question.get("gold")
        must_contain = question.get("must_contain")
        if not isinstance(gold, list) or not isinstance(must_contain, list):
            self.fail(qid, "gold and must_contain must be lists")
            return

        if qtype == "unanswerable":
            if gold or must_contain:
                self.fail(qid, "unanswerable questions need empty gold and must_contain")
        else:
            if not gold:
                self.fail(qid, "gold is empty")
            if not 1 <= len(must_contain) <= 3:
                self.fail(qid, f"must_contain should hold 1-3 terms, has {len(must_contain)}")

        sections = [self.gold_section(qid, entry) for entry in gold]
        found = [section for section in sections if section is not None]

        for term in must_contain:
            if not isinstance(term, str) or not term:
                self.fail(qid, f"invalid must_contain term {term!r}")
                continue
            if term.lower() not in answer.lower():
                self.fail(qid, f"must_contain term not in answer: {term!r}")
            if found and not any(term.lower() in section.text.lower() for section in found):
                self.fail(qid, f"must_contain term not in any gold section: {term!r}")

        self.check_selection(qid, qtype, question, sections)

    def check_selection(
        self, qid: str, qtype: Any, question: dict[str, Any], sections: list[Section | None]
    ) -> None:
        selected = question.get("selected_text")
        if qtype != "selected_text":
            if selected is not None:
                self.fail(qid, "selected_text must be null for this type")
            if "answerable_from_selection" in question:
                self.fail(qid, "answerable_from_selection is only allowed on selected_text questions")
            return
        if not isinstance(question.get("answerable_from_selection"), bool):
            self.fail(qid, "selected_text questions need a boolean answerable_from_selection")
        if not isinstance(selected, str) or not selected.strip():
            self.fail(qid, "selected_text questions need a non-empty selected_text")
            return
        if not sections or sections[0] is None:
            return
        if selected not in sections[0].text:
            self.fail(qid, "selected_text does not appear verbatim in the first gold section")


def load_questions(path: Path, validator: Validator) -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            validator.fail(f"line {line_number}", f"invalid JSON: {error}")
            continue
        if not isinstance(record, dict):
            validator.fail(f"line {line_number}", "not a JSON object")
            continue
        questions.append(record)
    return questions


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write(f"usage: {Path(argv[0]).name} QUESTIONS.jsonl DOCS_DIR\n")
        return 2
    questions_path, docs_dir = Path(argv[1]), Path(argv[2])
    if not docs_dir.is_dir():
        sys.stderr.write(f"not a directory: {docs_dir}\n")
        return 2
    validator = Validator(docs_dir)
    questions = load_questions(questions_path, validator)

    for qid, count in Counter(str(q.get("id")) for q in questions).items():
        if count > 1:
            validator.fail(qid, f"id used {count} times")
    for question in questions:
        validator.check_question(question)

    for failure in validator.failures:
        sys.stdout.write(f"FAIL {failure}\n")
    types = Counter(str(q.get("type")) for q in questions)
    pages = {g["doc_path"] for q in questions for g in q.get("gold") or [] if isinstance(g, dict)}
    summary = ", ".join(f"{name} {types[name]}" for name in VALID_TYPES)
    sys.stdout.write(f"{len(questions)} questions ({summary}); {len(pages)} distinct gold pages\n")
    sys.stdout.write(f"{len(validator.failures)} failure(s)\n" if validator.failures else "OK\n")
    return 1 if validator.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
