"""The report's HTML, JSON, CSV and eval export, from fabricated records."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from reportdata import DAY0, SITE, cite, question, vote

from bookwise.errors import ConfigError
from bookwise.evaluation.retrieval import load_questions
from bookwise.index.embedders import HashEmbedder
from bookwise.insights.records import CitedSection, FeedbackRecord, LogFilter, QuestionRecord
from bookwise.insights.report import (
    build_report,
    export_jsonl,
    export_questions,
    render_html,
    report_csv,
    report_dict,
)
from bookwise.insights.report.gaps import ClosestSection
from bookwise.insights.report.render import safe_href

HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)> which propeller?'


def fabricated_log() -> tuple[list[QuestionRecord], list[FeedbackRecord]]:
    pid = f"{SITE}/docs/pid"
    log = [
        question("How do I tune a PID?", day, n, page_url=pid, cited=(cite("/docs/pid", "gains", "Gains"),))
        for day in range(4)
        for n in range(day + 2)
    ]
    log += [
        question(HOSTILE, 1, 20, outcome="not_covered", evidence=0.1, page_url="javascript:alert(2)"),
        question(
            "which propeller size for a drone", 2, 21, outcome="not_covered", evidence=0.2, page_url=pid
        ),
        question('=HYPERLINK("http://evil")', 2, 22, outcome="not_covered", page_url=pid),
        question("what does this mean?", 3, 23, mode="selected_text", page_url=f"{pid}#gains"),
    ]
    return log, [vote(log[0]), vote(log[1], "up"), vote(log[-1], "down", reason="unclear")]


def sections(label: str) -> list[ClosestSection]:
    return [
        ClosestSection("Tuning › Gains", f"{SITE}/docs/pid#gains", 0.4),
        ClosestSection("x", "javascript:x()", 0.1),
    ]


def test_a_hostile_question_is_inert_in_the_html() -> None:
    log, votes = fabricated_log()
    html = render_html(build_report(log, votes, embed=HashEmbedder().embed_documents, search=sections))
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in html
    assert not re.search(r"""href=["']?\s*javascript:""", html, re.I)  # a hostile URL stays text
    assert '<a href="https://book.example/docs/pid#gains">Tuning › Gains</a>' in html


def test_the_html_is_self_contained() -> None:
    log, votes = fabricated_log()
    html = render_html(build_report(log, votes, embed=HashEmbedder().embed_documents, search=sections))
    assert not re.search(r"<(script|link|iframe|img|object)\b", html)
    assert not re.search(r"""<[^>]*\ssrc=|url\(|@import""", html)
    assert "default-src 'none'" in html  # and the browser is told so
    # The charts are drawn: one bar per day, stacked outcome segments, one bar per cited page.
    per_day = re.findall(r'data-day="([\d-]+)" data-value="(\d+)"', html.split('data-chart="outcomes"')[0])
    assert [int(v) for _, v in per_day] == [2, 4, 6, 6]
    assert 'data-outcome="not_covered" data-value="1"' in html
    assert 'data-page="https://book.example/docs/pid" data-value="14"' in html


def test_json_holds_every_table_and_the_gap_clusters() -> None:
    log, votes = fabricated_log()
    report = build_report(log, votes, embed=HashEmbedder().embed_documents, search=sections)
    data = json.loads(json.dumps(report_dict(report)))
    assert data["summary"]["questions"] == len(log)
    assert data["summary"]["outcomes"]["not_covered"] == 3
    assert [d["total"] for d in data["days"]] == [2, 4, 6, 6]
    assert data["top_questions"][0] == {
        "question": "How do I tune a PID?",
        "count": 14,
        "not_covered": 0,
        "pages": 1,
    }
    assert data["gap_questions"] == 4  # three declined, one voted down (not the one on a selection)
    assert sum(g["size"] for g in data["gaps"]) == 4
    assert data["gaps"][0]["sections"][0]["url"] == f"{SITE}/docs/pid#gains"
    assert data["page_feedback"][0]["down_rate"] == pytest.approx(2 / 3)
    assert data["highlight_pages"][0]["selected_text"] == 1


def test_csv_has_one_answer_a_row_and_defuses_spreadsheet_formulas() -> None:
    log, votes = fabricated_log()
    rows = list(csv.DictReader(io.StringIO(report_csv(log, votes, LogFilter(since=DAY0.replace(day=4))))))
    assert len(rows) == sum(q.created_at >= DAY0.replace(day=4) for q in log)
    formula = next(r for r in rows if "HYPERLINK" in r["question"])
    assert formula["question"].startswith("'=")
    rated = next(r for r in rows if r["rating"])
    assert rated["reason"] == "unclear" and rated["mode"] == "selected_text"
    assert "reader" not in rows[0]  # no reader hash leaves the store through the CSV


def test_exported_questions_are_a_questions_file_that_bookwise_eval_reads_once_labelled(
    tmp_path: Path,
) -> None:
    log, votes = fabricated_log()
    rows = export_questions(log, votes, LogFilter())
    by_question = {r["question"]: r for r in rows}
    # Declined: unanswerable as it stands. Voted down: needs gold sections from the author.
    assert by_question["which propeller size for a drone"]["type"] == "unanswerable"
    assert by_question["How do I tune a PID?"]["type"] == "factoid"
    assert by_question["How do I tune a PID?"]["insights"]["thumbs_down"] == 1
    # Not the voted-down question about a highlighted passage: the log keeps no selection to ask it with.
    assert set(by_question) == {"How do I tune a PID?", HOSTILE.strip(),
                                "which propeller size for a drone", '=HYPERLINK("http://evil")'}  # fmt: skip
    path = tmp_path / "questions.jsonl"
    path.write_text(export_jsonl(rows), encoding="utf-8")
    with pytest.raises(ConfigError, match="needs at least one gold section"):
        load_questions(path)  # an unlabelled row cannot slip into the CI gate
    for row in rows:
        if row["type"] == "factoid":
            row["gold"] = [{"doc_path": "pid.md", "heading": "Gains"}]
    path.write_text(export_jsonl(rows), encoding="utf-8")
    loaded = load_questions(path)
    assert len(loaded) == len(rows) and sum(not q.answerable for q in loaded) == 3


def test_site_relative_links_are_joined_to_the_site_and_others_stay_text() -> None:
    assert safe_href("/docs/pid", "https://book.example") == "https://book.example/docs/pid"
    assert safe_href("/docs/pid") == "/docs/pid"
    assert safe_href("/docs/pid", "javascript:alert(1)") == "/docs/pid"
    for hostile in ("javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,x", "//evil.example/x"):
        assert safe_href(hostile, "https://book.example") is None
    asked = question("a", page_url="/docs/intro")
    report = build_report([asked], [], embed=HashEmbedder().embed_documents, site_url="https://book.example")
    assert '<a href="https://book.example/docs/intro">/docs/intro</a>' in render_html(report)


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_formula_injection_is_defused_in_every_text_cell(start: str) -> None:
    asked = question(
        f"{start}q",
        page_url=f"{start}/docs/a",
        version=f"{start}2.0",
        locale=f"{start}fr",
        mode=f"{start}normal",
        cited=(CitedSection(f"{start}cite", None, "t"),),
    )
    rated = vote(asked, "down", reason=f"{start}other", comment=f"{start}cmd|' /C calc'!A0")
    (row,) = csv.DictReader(io.StringIO(report_csv([asked], [rated], LogFilter())))
    for column in ("question", "mode", "page_url", "version", "locale", "cited", "reason", "comment"):
        assert row[column].startswith("'" + start), (column, row[column])
    assert row["evidence"] == "0.900"  # numbers are ours, left as numbers


def test_page_url_in_the_report_is_a_site_path_linked_on_the_site() -> None:
    secret = "https://user:pa55word@book.example/docs/intro?x=1#access_token=tok3n"
    log = [
        question("how do I log in?", 0, 0, outcome="not_covered", evidence=0.1, page_url=secret),
        question("why is it broken?", 0, 1, outcome="not_covered", evidence=0.1, page_url=secret),
        question("phish", 0, 2, mode="selected_text", page_url="https://evil.example/phish"),
    ]
    report = build_report(log, [], embed=HashEmbedder().embed_documents, site_url=SITE)
    html = render_html(report)
    assert '<a href="https://book.example/docs/intro">/docs/intro</a>' in html
    assert '<a href="https://book.example/phish">/phish</a>' in html
    for leaked in ("pa55word", "user:", "tok3n", "access_token", "evil.example"):
        assert leaked not in html, leaked
