"""`bookwise insights` as an author runs it: a real subprocess over a real store and a hash-built index."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from reportdata import DAY0, SITE, cite, question, vote

from apiserver import build_book, cli_env
from bookwise.insights.factory import open_insights_store
from bookwise.insights.records import QuestionRecord
from bookwise.settings import Settings


def insights(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env(settings.data_dir, BOOKWISE_SUFFICIENCY_THRESHOLD="0")
    return subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "insights", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def logged(settings: Settings) -> list[QuestionRecord]:
    feeding = cite("/docs/care/feeding", "morning-feed", "Morning feed")
    log = [
        question(
            "What do quokkas eat in the morning?",
            day,
            n,
            cited=(feeding,),
            page_url=f"{SITE}/docs/care/feeding",
        )
        for day in range(3)
        for n in range(2)
    ]
    log += [
        question("Can a quokka eat bread?", 1, 5, outcome="not_covered", evidence=0.1, version="2.0"),
        question("can quokkas eat bread", 2, 5, outcome="not_covered", evidence=0.1),
        question("How do I vaccinate a quokka?", 2, 6, outcome="not_covered", evidence=0.2),
        question("Does the Vegemite brand suit marsupials?", 2, 7, outcome="not_covered", evidence=0.1),
    ]
    store = open_insights_store(settings.resolved_feedback_db)
    try:
        for record in log:
            store.add_question(record)
        store.add_feedback(vote(log[0], reason="incorrect"))
    finally:
        store.close()
    return log


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, list[QuestionRecord]]:
    settings = build_book(tmp_path_factory.mktemp("book"))
    return settings, logged(settings)


def test_insights_writes_the_html_json_csv_and_the_questions_to_label(
    book: tuple[Settings, list[QuestionRecord]], tmp_path: Path
) -> None:
    settings, log = book
    out, export = tmp_path / "out" / "report.html", tmp_path / "to-label.jsonl"
    done = insights(settings, "--out", str(out), "--json", "--export-questions", str(export))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["questions"] == len(log)
    gaps = report["gaps"]
    assert gaps[0]["size"] == 2 and "bread" in gaps[0]["label"]  # the two bread phrasings, one gap
    # The closest section, from the index: the one that says never to feed bread.
    assert gaps[0]["sections"][0]["url"].endswith("/docs/care/feeding#evening-feed")
    # A name no chunk of the book holds is listed with its gap ("Vegemite"); "quokka" is in the book.
    names = {gap["label"]: gap["unknown_names"] for gap in gaps}
    assert names["Does the Vegemite brand suit marsupials?"] == ["Vegemite"]
    assert gaps[0]["unknown_names"] == [] and names["How do I vaccinate a quokka?"] == []
    html = out.read_text(encoding="utf-8")
    assert 'data-chart="questions-per-day"' in html and "Can a quokka eat bread?" in html
    assert "the book never mentions: <b>Vegemite</b>" in html
    exported = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert {row["type"] for row in exported} == {"unanswerable", "factoid"}
    assert len(exported) == 5  # two bread phrasings, the vaccine and Vegemite ones, the voted-down one


def test_insights_filters_by_day_and_version(book: tuple[Settings, list[QuestionRecord]]) -> None:
    settings, _ = book
    day = DAY0.date().replace(day=DAY0.day + 1).isoformat()
    done = insights(settings, "--csv", "--since", day, "--until", day)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 3 and {r["created_at"][:10] for r in rows} == {day}  # --until's day included
    versioned = insights(settings, "--json", "--version", "2.0")
    assert json.loads(versioned.stdout)["summary"]["questions"] == 1


def test_insights_without_an_output_says_what_to_write(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    done = insights(settings, "--since", "2026-01-01")
    assert done.returncode == 1 and "--out report.html" in done.stderr and "--forget-before" in done.stderr
    bad = insights(settings, "--json", "--since", "yesterday")
    assert bad.returncode == 2 and "expected a day" in bad.stderr
