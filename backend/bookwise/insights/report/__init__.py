"""The insights report: what readers ask and where the book has no answer (``bookwise insights``)."""

from bookwise.insights.report.build import (
    Report,
    build_report,
    export_jsonl,
    export_questions,
    report_csv,
    report_dict,
    report_from_log,
    report_json,
)
from bookwise.insights.report.render import render_html

__all__ = [
    "Report",
    "build_report",
    "export_jsonl",
    "export_questions",
    "render_html",
    "report_csv",
    "report_dict",
    "report_from_log",
    "report_json",
]
