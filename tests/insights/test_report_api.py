"""`/api/insights` serves the same HTML report as `bookwise insights --out`, for the admin token only."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

import local_http
from apiserver import build_book, chat, running_api

TOKEN = "report-token-0123456789"


def test_the_api_serves_the_html_report_with_its_gaps(tmp_path: Path) -> None:
    settings = build_book(tmp_path).model_copy(
        update={"question_log": True, "admin_token": SecretStr(TOKEN), "sufficiency_threshold": 0.99}
    )
    with running_api(settings) as url:
        for question in ("What do quokkas eat in the morning?", "How do I vaccinate a quokka?"):
            assert chat(url, {"question": question}).status == 200
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for _ in range(50):  # the log's writer thread writes shortly after the answer
            report = local_http.get(f"{url}/api/insights", headers=headers, timeout=30)
            if "How do I vaccinate a quokka?" in report.text:
                break
        assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
        assert 'data-chart="questions-per-day"' in report.text and 'data-part="gaps"' in report.text
        assert '<tr data-gap data-size="1">' in report.text
