"""`bookwise insights`' report outputs: the store read once, the index's embedder and search wired in."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from bookwise.insights.records import FeedbackRecord, LogFilter, QuestionRecord
from bookwise.insights.report.build import (
    Log,
    Report,
    build_report,
    export_jsonl,
    export_questions,
    report_csv,
    report_json,
)
from bookwise.insights.report.gaps import (
    LOW_EVIDENCE,
    SECTIONS_PER_GAP,
    ClosestSection,
    Search,
    UnknownNames,
)
from bookwise.insights.report.render import render_html

if TYPE_CHECKING:
    from bookwise.retrieval.models import RetrievalResult
    from bookwise.retrieval.retriever import Retriever


@dataclass(frozen=True)
class Outputs:
    html: Path | None = None
    json: Path | None = None  # "-" is stdout, handled by the caller
    csv: Path | None = None
    export: Path | None = None


def gap_lookups(retriever: Retriever, log_filter: LogFilter) -> tuple[Search, UnknownNames]:
    """What the report looks up for its gaps, in its version and locale: the book's closest sections
    to a gap's label, and the names in a phrasing that no chunk holds. One search per text serves
    both (a gap's label is also one of its phrasings)."""
    pairs = (("version", log_filter.version), ("locale", log_filter.locale))
    filters = {name: [value] for name, value in pairs if value} or None
    site = retriever.site_url

    @functools.cache
    def found(text: str) -> RetrievalResult:
        return retriever.search(text, top_k=SECTIONS_PER_GAP, filters=filters)

    def search(label: str) -> Sequence[ClosestSection]:
        return [
            ClosestSection(
                title=" › ".join([*s.breadcrumb, s.heading_text]) if s.heading_text else s.title,
                url=urljoin(site, s.url) if site else s.url,  # the report is opened from a file
                score=s.score,
            )
            for s in found(label).sections
        ]

    def unknown(question: str) -> Sequence[str]:
        return found(question).unknown_names

    return search, unknown


def html_report(log: Log, log_filter: LogFilter, retriever: Retriever) -> str:
    """The HTML report of ``log`` (``/api/insights``; ``--out`` writes the same page)."""
    return render_html(_report(log.questions(log_filter), log.feedback(log_filter), log_filter, retriever))


def _report(
    questions: Sequence[QuestionRecord],
    feedback: Sequence[FeedbackRecord],
    log_filter: LogFilter,
    retriever: Retriever,
) -> Report:
    search, unknown_names = gap_lookups(retriever, log_filter)
    return build_report(
        questions,
        feedback,
        log_filter,
        embed=retriever.embedder.embed_documents,
        search=search,
        unknown_names=unknown_names,
        low_evidence=_threshold(retriever.settings.sufficiency_threshold),
        site_url=retriever.site_url,
    )


def write_report(
    log: Log, log_filter: LogFilter, outputs: Outputs, *, retriever: Retriever | None
) -> dict[str, str]:
    """Write each asked output; returns the text of those going to stdout by name ("json").

    Without an index (``retriever`` None) the gaps are grouped with nothing to embed them: the
    report needs the index, as the answers do.
    """
    questions, feedback = log.questions(log_filter), log.feedback(log_filter)
    printed: dict[str, str] = {}
    if outputs.html is not None or outputs.json is not None:
        if retriever is None:
            raise ValueError("the report needs the index's embedder")
        report = _report(questions, feedback, log_filter, retriever)
        if outputs.html is not None:
            _write(outputs.html, render_html(report))
        if outputs.json is not None:
            _emit(outputs.json, report_json(report) + "\n", printed, "json")
    if outputs.csv is not None:
        _emit(outputs.csv, report_csv(questions, feedback, log_filter), printed, "csv")
    if outputs.export is not None:
        _write(outputs.export, export_jsonl(export_questions(questions, feedback, log_filter)))
    return printed


def _threshold(configured: float | None) -> float:
    return LOW_EVIDENCE if configured is None else configured


def _emit(path: Path, text: str, printed: dict[str, str], name: str) -> None:
    if str(path) == "-":
        printed[name] = text
    else:
        _write(path, text)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
