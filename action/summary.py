"""The action's job summary (Markdown for $GITHUB_STEP_SUMMARY) and outputs, from Bookwise's JSON.

    summary.py ingest REPORT STDERR STATUS   the ingest report as a summary
    summary.py publish ANSWER STATUS         the server's answer to the upload
    summary.py version FILE                  the index version a report or an answer names

Standard library only: it runs with whatever Python runs the action.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _load(path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _index_state(report: dict[str, Any]) -> str:
    if report.get("held_back"):
        return "(not switched: `--strict` found errors)"
    return "(switched)" if report.get("switched") else "(unchanged)"


def ingest(report_path: str, stderr_path: str, status: str) -> str:
    report = _load(report_path)
    ok = status == "0"
    lines = [f"## Bookwise ingest {'✅' if ok else '❌ failed'}", ""]
    if report is not None and "docs_processed" not in report and isinstance(report.get("error"), dict):
        # `--json` prints the error itself when the run stopped before its report.
        error = report["error"]
        return "\n".join(
            [
                *lines,
                f"The ingest stopped before its report: `{_cell(error.get('code', ''))}` "
                f"{_cell(error.get('message', ''))}",
                "",
                "Nothing was published: the live index is unchanged.",
                "",
            ]
        )
    if report is None:
        tail = Path(stderr_path).read_text(encoding="utf-8", errors="replace")[-2000:]
        return "\n".join(
            [*lines, "The ingest stopped before its report:", "", "```", tail.strip(), "```", ""]
        )
    lines += [
        "| | |",
        "|---|---|",
        f"| docs | {report['docs_processed']} processed, {report['docs_skipped']} skipped |",
        f"| chunks | {report['chunks']} total: {report['created']} created, {report['updated']} updated, "
        f"{report['deleted']} deleted, {report['unchanged']} unchanged |",
        f"| index | `{report.get('generation') or '-'}` {_index_state(report)} |",
        f"| embedder | {_cell(report.get('embed_model', ''))} |",
        f"| duration | {report['duration_s']:.1f} s |",
    ]
    check = report.get("manifest") or {}
    if check:
        lines.append(
            f"| build manifest | {check['docs_agreeing']}/{check['docs']} docs and "
            f"{check['headings_agreeing']}/{check['headings']} heading ids agree |"
        )
    problems = [(e.get("path", ""), e.get("line"), e["code"], e["message"]) for e in report["errors"]]
    problems += [
        (
            m["doc_path"],
            None,
            "manifest_mismatch",
            f"{m['kind']}: ours {m['ours'] or '-'}, build {m['build'] or '-'}",
        )
        for m in check.get("mismatches", [])
    ]
    if problems:
        lines += [
            "",
            f"### Errors ({len(problems)})",
            "",
            "| file | line | code | message |",
            "|---|---|---|---|",
        ]
        lines += [f"| {_cell(p)} | {line or ''} | `{c}` | {_cell(m)} |" for p, line, c, m in problems]
    if not ok:
        lines += ["", "Nothing was published: the live index is unchanged."]
    return "\n".join([*lines, ""])


def publish(answer_path: str, status: str) -> str:
    answer = _load(answer_path)
    if status == "0" and answer is not None:
        return (
            f"Installed on the Bookwise server: index `{answer['index_version']}`, "
            f"{answer['points']} chunks, "
            f"{answer['archive_bytes'] / 1e6:.1f} MB uploaded; serving `{answer.get('serving') or '-'}`.\n"
        )
    error = (answer or {}).get("error") or {}
    why = f"`{error.get('code')}`: {_cell(error.get('message'))}" if error else "see the step's log"
    return f"❌ The Bookwise server did not install the index ({why}). Its live index is unchanged.\n"


def version(path: str) -> str:
    data = _load(path) or {}
    return str(data.get("index_version") or data.get("generation") or "")


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    text = {"ingest": ingest, "publish": publish, "version": version}[command](*rest)
    sys.stdout.write(text if command != "version" else text + "\n")
