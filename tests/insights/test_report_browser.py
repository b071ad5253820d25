"""The HTML report in real headless Chromium: charts drawn, gap clusters listed, hostile questions inert."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from reportdata import SITE, cite, question, vote

from bookwise.index.embedders import HashEmbedder
from bookwise.insights.records import FeedbackRecord, QuestionRecord
from bookwise.insights.report import build_report, render_html
from bookwise.insights.report.gaps import ClosestSection

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> propeller size?'
DRONE = ["what propeller size for my quadcopter drone", "quadcopter drone propeller size", HOSTILE]
STAIRS = ["stair climbing gait for a legged robot", "legged robot gait to climb a stair"]


def three_weeks() -> tuple[list[QuestionRecord], list[FeedbackRecord]]:
    rng = random.Random(5)
    pages = [f"{SITE}/docs/control/pid", f"{SITE}/docs/sensing/kalman", f"{SITE}/docs/intro"]
    log: list[QuestionRecord] = []
    for day in range(21):
        for n in range(rng.randint(2, 9)):
            page = rng.choice(pages)
            name = page.rsplit("/", 1)[1]
            cited = (cite(page.removeprefix(SITE), "intro", name),)
            log.append(question(f"How does the {name} work?", day, n, page_url=page, cited=cited))
        for n, text in enumerate(rng.sample(DRONE + STAIRS, 2)):
            log.append(question(text, day, 30 + n, outcome="not_covered", evidence=0.1, page_url=pages[2]))
        log.append(question("What does this mean?", day, 40, mode="selected_text", page_url=pages[0]))
    votes = [vote(q, rng.choice(["up", "down"])) for q in log[::4]]
    return log, votes


def closest(label: str) -> list[ClosestSection]:
    return [ClosestSection("Control › PID", f"{SITE}/docs/control/pid#tuning", 0.31)]


def test_the_report_in_chromium_draws_its_charts_and_lists_the_gaps(browser: Any, tmp_path: Path) -> None:
    log, votes = three_weeks()
    report = build_report(log, votes, embed=HashEmbedder().embed_documents, search=closest)
    html = tmp_path / "insights.html"
    html.write_text(render_html(report), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(html.as_uri())

    per_day = page.locator("svg[data-chart=questions-per-day] rect.bar")
    assert per_day.count() == 21
    drawn = per_day.evaluate_all("bars => bars.map(b => [Number(b.dataset.value), b.getBBox().height])")
    assert sum(value for value, _ in drawn) == len(log)
    assert all(height > 0 for value, height in drawn if value)  # every busy day is a visible bar
    outcomes = page.locator("svg[data-chart=outcomes] rect.bar")
    assert outcomes.filter(has=page.locator("title")).count() == outcomes.count() > 21  # stacked segments
    assert page.locator("svg[data-chart=outcomes] rect[data-outcome=not_covered]").count() == 21
    assert page.locator("svg[data-chart=cited-pages] rect.bar").count() == 3

    gaps = page.locator("table[data-part=gaps] tr[data-gap]")
    assert gaps.count() >= 2
    sizes = [int(size) for size in gaps.evaluate_all("rows => rows.map(r => r.dataset.size)")]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == report.gap_questions
    assert gaps.first.locator("li.section a").get_attribute("href") == f"{SITE}/docs/control/pid#tuning"
    assert page.get_by_text(HOSTILE).count() >= 1  # shown as text…
    assert page.evaluate("window.pwned") is None and dialogs == []  # …and never run
    assert page.locator("body img, body script").count() == 0

    shot = tmp_path / "insights.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    page.close()
