"""The report of a log driven through the real API (scripts/drive_insights_log.py), in real Chromium.

A quick run of the driver: the example book indexed with the hash embedder, `bookwise serve` with the
question log on, 60 of its planned questions (and 15 MCP searches) over HTTP with scripted ratings,
the rows spread over a week, then `bookwise insights`. The README's screenshots are the full run's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_a_driven_log_gives_a_report_with_charts_and_gap_clusters(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "report"
    driven = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "drive_insights_log.py"), "--embedder", "hash",
         "--limit", "60", "--spread-days", "7", "--out", str(out), "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert driven.returncode == 0, driven.stderr
    report = json.loads((out / "insights.json").read_text(encoding="utf-8"))
    summary = report["summary"]
    assert summary["questions"] == 75 and summary["traffic"] == {"reader": 60, "agent": 15}
    assert summary["feedback"] > 0 and len(report["days"]) >= 7

    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    page.goto((out / "insights.html").as_uri())
    bars = page.locator("svg[data-chart=questions-per-day] rect.bar")
    assert bars.count() == len(report["days"])
    values = bars.evaluate_all("bars => bars.map(b => Number(b.dataset.value))")
    assert sum(values) == 75
    assert page.locator("svg[data-chart=outcomes] rect[data-outcome=answered]").count() > 0
    assert page.locator("svg[data-chart=cited-pages] rect.bar").count() > 0
    gaps = page.locator("table[data-part=gaps] tr[data-gap]")
    assert gaps.count() == len(report["gaps"]) > 0
    assert gaps.first.locator(".gap-label").inner_text() == report["gaps"][0]["label"]
    assert gaps.first.locator("li.section a").count() > 0  # the closest sections, from the index
    exported = (out / "to-label.questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert exported and all(json.loads(line)["type"] in ("unanswerable", "factoid") for line in exported)
    page.close()
