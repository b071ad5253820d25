"""The report's tables, on fabricated log records."""

from __future__ import annotations

from datetime import timedelta

from reportdata import DAY0, SITE, cite, question, vote

from bookwise.insights.records import LogFilter
from bookwise.insights.report import aggregate as agg


def test_select_keeps_the_range_version_and_locale_and_feedback_follows_its_answer() -> None:
    v2 = question("a", 0, 1, version="2.0", locale="fr")
    v1 = question("b", 0, 2, version="1.0", locale="fr")
    late = question("c", 5, 0, version="2.0", locale="fr")
    votes = [vote(v2), vote(v1), vote(late)]
    chosen, kept = agg.select(
        [v2, v1, late], votes, LogFilter(since=DAY0, until=DAY0 + timedelta(days=1), version="2.0")
    )
    assert chosen == [v2]
    assert [f.request_id for f in kept] == [v2.request_id]
    # Without a version or locale, feedback is chosen by its own date alone.
    _, all_votes = agg.select([v2], votes, LogFilter(until=DAY0 + timedelta(days=1)))
    assert len(all_votes) == 2


def test_per_day_fills_empty_days_and_splits_outcomes() -> None:
    log = [
        question("a", 0),
        question("b", 0, 1, outcome="not_covered"),
        question("c", 3, traffic="agent"),
    ]
    days = agg.per_day(log)
    assert [d.total for d in days] == [2, 0, 0, 1]
    assert days[0].outcomes["not_covered"] == 1 and days[0].outcomes["answered"] == 1
    assert days[3].agent == 1
    # The filter's bounds widen the series to the days asked for.
    wide = agg.per_day(log, LogFilter(since=DAY0 - timedelta(days=2), until=DAY0 + timedelta(days=6)))
    assert len(wide) == 9 and wide[0].total == 0  # 2 days before to the 6th after (09:00)


def test_top_questions_merge_duplicates_that_differ_in_case_and_punctuation() -> None:
    log = [
        question("How do I tune a PID?", 0, 0, page_url=f"{SITE}/pid"),
        question("how do i tune a pid", 0, 1, page_url=f"{SITE}/intro"),
        question("How do I tune a PID?", 0, 2, outcome="not_covered"),
        question("What is a Kalman filter?", 0, 3),
    ]
    top = agg.top_questions(log)
    assert top[0] == agg.TopQuestion("How do I tune a PID?", count=3, not_covered=1, pages=2)
    assert top[1].question == "What is a Kalman filter?" and top[1].count == 1


def test_cited_sections_and_pages_count_each_answer_once() -> None:
    gains, tuning = cite("/docs/pid", "gains", "Gains"), cite("/docs/pid", "tuning", "Tuning")
    log = [
        question("a", 0, 0, cited=(gains, tuning, gains)),
        question("b", 0, 1, cited=(gains,)),
        question("c", 0, 2, cited=(cite("/docs/kalman", None, "Kalman filter"),)),
    ]
    sections = agg.cited_sections(log)
    assert [(s.title, s.count) for s in sections] == [("Gains", 2), ("Kalman filter", 1), ("Tuning", 1)]
    pages = agg.cited_pages(log)
    assert [(p.url, p.count) for p in pages] == [(f"{SITE}/docs/pid", 2), (f"{SITE}/docs/kalman", 1)]
    assert pages[1].title == "Kalman filter"  # a page's intro names the page


def test_highlight_pages_count_selections_and_study_actions_per_page() -> None:
    pid, kalman = f"{SITE}/docs/pid", f"{SITE}/docs/kalman"
    log = [
        question("a", 0, 0, mode="selected_text", page_url=f"{pid}#gains"),
        question("b", 0, 1, mode="selected_text", page_url=pid),
        question("c", 0, 2, mode="quiz", page_url=pid),
        question("d", 0, 3, mode="explain", page_url=kalman),
        question("e", 0, 4, mode="normal", page_url=kalman),
        question("f", 0, 5, mode="search", page_url=kalman, traffic="agent"),  # MCP: not a reader's action
    ]
    rows = agg.highlight_pages(log)
    assert [(r.page, r.selected_text, r.study) for r in rows] == [(pid, 2, 1), (kalman, 0, 1)]
    assert rows[0].study_actions == {"quiz": 1}


def test_page_feedback_rates_count_the_last_vote_of_each_answer() -> None:
    pid = f"{SITE}/docs/pid"
    asked = [question(str(n), 0, n, page_url=pid) for n in range(4)]
    votes = [vote(asked[0], "up"), vote(asked[0], "down", minutes=5), vote(asked[1], "up")]
    orphan = vote(question("gone", 0, 9, page_url=f"{SITE}/docs/old"), "down")
    rows = {r.page: r for r in agg.page_feedback(asked, [*votes, orphan])}
    assert (rows[pid].questions, rows[pid].feedback, rows[pid].down) == (4, 2, 1)
    assert rows[pid].feedback_rate == 0.5 and rows[pid].down_rate == 0.5
    # Feedback on an answer the log does not hold counts on the page it names.
    assert rows[f"{SITE}/docs/old"].down == 1 and rows[f"{SITE}/docs/old"].feedback_rate is None


def test_summary_splits_human_and_agent_traffic_and_counts_distinct_readers() -> None:
    log = [
        question("a", 0, 0, reader="h1", ms_total=100.0),
        question("b", 0, 1, reader="h1", ms_total=300.0),
        question("c", 0, 2, reader="h2", traffic="agent", outcome="error", ms_total=200.0),
    ]
    s = agg.summary(log, [vote(log[0], "down")])
    assert s.traffic == {"reader": 2, "agent": 1}
    assert s.readers == 2 and s.median_ms_total == 200.0
    assert s.outcomes["error"] == 1 and s.feedback == 1 and s.down_rate == 1.0
    assert s.feedback_rate == 1 / 3


def test_normalize_ignores_case_punctuation_and_spacing() -> None:
    assert agg.normalize("  How do I   tune a PID?! ") == agg.normalize("how do i tune a pid")
    assert agg.normalize("?!") == ""


def test_page_of_drops_the_fragment_and_a_trailing_slash_but_not_the_root() -> None:
    assert agg.page_of(f"{SITE}/docs/pid/#gains") == f"{SITE}/docs/pid"
    assert agg.page_of("/docs/intro/") == "/docs/intro"
    assert agg.page_of(f"{SITE}/") == f"{SITE}/" and agg.page_of("/") == "/"
    assert agg.page_of("") is None
