"""Drive a realistic question log through the real API, then write the authors' insights report.

Indexes the example book (website-plugin/example, Robot Motion) in a temporary data dir, starts
`bookwise serve` with the question log on (BOOKWISE_QUESTION_LOG=true, SQLite store), and asks it a
few hundred questions over HTTP as readers would: the book's own eval questions in several phrasings
(the popular ones more often), follow-ups with history, questions about highlighted passages
(selected-text mode, from the page they are on), the book's unanswerable questions and the planted
gaps of eval/insights-gaps.jsonl (several phrasings each), and a hostile `<script>` question. Then it
sends scripted feedback (thumbs down with a reason on some answers, up on others) and runs
`bookwise insights` for the HTML, JSON and export files.

The API logs every answer as of now; ``--spread-days`` then moves the logged rows' timestamps back
over that many days (and each rating with its answer) so the per-day charts have a shape. No LLM:
answers are extractive, as in the demo. The local MiniLM is the default embedder (its sufficiency
verdict is calibrated, so unanswerable questions are declined as in production); ``--embedder hash``
is faster but declines little.

    python scripts/drive_insights_log.py --out build/insights [--screenshots docs/screenshots]
    python scripts/drive_insights_log.py --embedder hash --limit 60 --out /tmp/insights   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "backend")]

from apiserver import parse_sse, wait_until_serving  # noqa: E402
from nginx import free_port  # noqa: E402

EXAMPLE = ROOT / "website-plugin" / "example"
QUESTIONS = EXAMPLE / "questions.jsonl"
FOLLOWUPS = ROOT / "eval" / "example-followups.jsonl"
GAPS = ROOT / "eval" / "insights-gaps.jsonl"
HOSTILE = '<script>alert("insights")</script> how do I tune a PID?'
REASONS = ("incorrect", "not_what_i_asked", "unclear", "other")


@dataclass
class Ask:
    question: str
    page: str | None = None  # the page the reader asks from
    selected_text: str | None = None
    heading_id: str | None = None
    history: list[str] = field(default_factory=list)
    vote: str | None = None  # "up", "down", or None
    reason: str | None = None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def variants(question: str, rng: random.Random) -> list[str]:
    """How readers retype one question: as written, casual, terse."""
    casual = re.sub(r"[?.!]+$", "", question).lower()
    words = casual.split()
    terse = " ".join(w for w in words if len(w) > 3) or casual
    return [question, casual, terse, f"{question} Thanks!"][: rng.randint(1, 4)]


def env_for(data_dir: Path, embedder: str) -> dict[str, str]:
    values = {
        "BOOKWISE_DATA_DIR": str(data_dir),
        "BOOKWISE_EMBEDDING_PROVIDER": embedder,
        "BOOKWISE_EMBEDDING_ADAPT": "false",
        "BOOKWISE_QUESTION_LOG": "true",
        "BOOKWISE_RATE_LIMIT_PER_MINUTE": "100000",
        "BOOKWISE_MAX_STREAMS_PER_CLIENT": "50",
    }
    if embedder == "hash":
        values["BOOKWISE_SUFFICIENCY_THRESHOLD"] = "0.5"  # uncalibrated: a guess that declines some
    return {**os.environ, **values, "PYTHONPATH": str(ROOT / "backend")}


def bookwise(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", *args], env=env, capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        raise SystemExit(f"bookwise {' '.join(args)} failed:\n{done.stderr}")
    return done


def search(client: httpx.Client, url: str, query: str) -> list[dict[str, Any]]:
    response = client.post(f"{url}/api/search", json={"query": query, "top_k": 3})
    response.raise_for_status()
    sections: list[dict[str, Any]] = response.json()["sources"]
    return sections


def plan(client: httpx.Client, url: str, rng: random.Random) -> list[Ask]:
    """The readers' questions, in a shuffled order."""
    asks: list[Ask] = []
    book = read_jsonl(QUESTIONS)
    pages: list[str] = []
    for n, row in enumerate(q for q in book if q["type"] != "unanswerable"):
        top = search(client, url, row["question"])
        page = top[0]["page_url"] if top else None
        pages += [page] if page else []
        popularity = 5 if n < 4 else rng.randint(1, 3)  # a few questions everyone asks
        for _ in range(popularity):
            for text in variants(row["question"], rng):
                vote = rng.choices([None, "up", "down"], weights=[6, 3, 1])[0]
                asks.append(
                    Ask(text, page, vote=vote, reason=rng.choice(REASONS) if vote == "down" else None)
                )
        for section in top[:2]:  # readers highlight a passage of the page and ask about it
            for prompt in ("What does this mean?", "Can you explain this more simply?", "Why is this true?"):
                if rng.random() < 0.6:
                    asks.append(
                        Ask(
                            prompt,
                            section["page_url"],
                            selected_text=section["snippet"][:400],
                            heading_id=section.get("anchor") or None,
                            vote=rng.choice([None, "up", "down"]),
                            reason="unclear",
                        )
                    )
    for row in read_jsonl(FOLLOWUPS):
        for _ in range(rng.randint(1, 2)):
            asks.append(Ask(row["question"], rng.choice(pages), history=list(row.get("history", []))))
    for row in book:
        if row["type"] == "unanswerable":
            asks += [Ask(row["question"], rng.choice(pages), vote="down", reason="other")]
    for gap in read_jsonl(GAPS):
        if gap["book"] != "example":
            continue
        for text in gap["phrasings"]:
            for _ in range(rng.randint(1, 3)):
                vote = "down" if rng.random() < 0.3 else None
                asks.append(Ask(text, rng.choice(pages), vote=vote, reason="incorrect" if vote else None))
    asks.append(Ask(HOSTILE, rng.choice(pages), vote="down", reason="other"))
    rng.shuffle(asks)
    return asks


def chat_body(ask: Ask) -> dict[str, Any]:
    body: dict[str, Any] = {"question": ask.question}
    if ask.page:
        body["page"] = {"url": ask.page} | ({"heading_id": ask.heading_id} if ask.heading_id else {})
    if ask.selected_text:
        body |= {"mode": "selected_text", "selected_text": ask.selected_text}
    if ask.history:
        body["history"] = [{"role": "user", "content": text} for text in ask.history]
    return body


def drive(client: httpx.Client, url: str, asks: list[Ask]) -> Counter[str]:
    seen: Counter[str] = Counter()
    for ask in asks:
        request_id, end = None, "none"
        with client.stream("POST", f"{url}/api/chat", json=chat_body(ask)) as response:
            if response.status_code != 200:
                seen[f"http_{response.status_code}"] += 1
                continue
            for name, data in parse_sse(response.iter_lines()):
                if name == "meta":
                    request_id = data.get("request_id")
                if name in ("done", "error"):
                    end = data.get("answer_kind") or data.get("code") or name
        seen[str(end)] += 1
        if request_id and ask.vote:
            rating: dict[str, Any] = {"request_id": request_id, "rating": ask.vote, "question": ask.question}
            if ask.vote == "down" and ask.reason:
                rating["reason"] = ask.reason
            seen[f"feedback_{client.post(f'{url}/api/feedback', json=rating).status_code}"] += 1
    return seen


def agents(url: str, rng: random.Random) -> int:
    """AI agents searching the book over MCP (logged as agent traffic): the eval questions' keywords."""
    import anyio
    from mcp import Client

    queries = [
        " ".join([w for w in re.findall(r"[\w-]+", row["question"].lower()) if len(w) > 3][:8])
        for row in read_jsonl(QUESTIONS)
    ]

    async def run() -> int:
        async with Client(f"{url}/mcp") as client:
            for query in rng.sample(queries, k=min(15, len(queries))):
                await client.call_tool("search", {"query": query})
        return min(15, len(queries))

    return anyio.run(run)


def spread(db: Path, days: int, rng: random.Random) -> None:
    """Move the logged rows back over ``days`` days: a little more traffic each week, as a book is adopted."""
    now = datetime.now(UTC)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, request_id FROM questions ORDER BY id").fetchall()
        for row_id, request_id in rows:
            back = days * (1 - rng.random() ** 0.7)  # more recent days busier
            when = now - timedelta(days=back, minutes=rng.randrange(60))
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            conn.execute("UPDATE questions SET created_at = ? WHERE id = ?", (stamp, row_id))
            later = (when + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            conn.execute("UPDATE feedback SET created_at = ? WHERE request_id = ?", (later, request_id))


def screenshots(html: Path, folder: Path) -> list[Path]:
    from browser import launched_chromium

    folder.mkdir(parents=True, exist_ok=True)
    shots = [folder / "insights-report.png", folder / "insights-gaps.png"]
    with launched_chromium() as browser:
        page = browser.new_page(viewport={"width": 1100, "height": 1500})
        page.goto(html.resolve().as_uri())
        page.screenshot(path=str(shots[0]))
        box = page.locator("table[data-part=gaps]").bounding_box()
        assert box is not None
        # The biggest gaps: the table's top, not its long tail of one-off questions.
        clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], 1100)}
        page.screenshot(path=str(shots[1]), clip=clip, full_page=True)
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=Path("build/insights"), help="folder for the report files"
    )
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--spread-days", type=int, default=21, help="0 keeps the real timestamps")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--limit", type=int, help="ask only this many of the planned questions (a quick run)")
    parser.add_argument("--screenshots", type=Path, help="also save screenshots of the report here")
    parser.add_argument("--data-dir", type=Path, help="keep the index and the log here (default: a temp dir)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir or Path(scratch)
        env = env_for(data_dir, args.embedder)
        bookwise(env, "ingest", str(EXAMPLE))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "bookwise.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_serving(url, server, within_s=120)
            with httpx.Client(timeout=60) as client:
                asks = plan(client, url, rng)[: args.limit]
                print(f"asking {len(asks)} questions through {url} …", flush=True)
                seen = drive(client, url, asks)
            seen["mcp_search"] = agents(url, rng)
        finally:
            server.terminate()  # the writer thread flushes its queue at shutdown
            server.wait(timeout=30)
        print("ends:", dict(seen.most_common()))
        if args.spread_days:
            spread(data_dir / "feedback.sqlite3", args.spread_days, rng)
        out = args.out
        out.mkdir(parents=True, exist_ok=True)
        html, export = out / "insights.html", out / "to-label.questions.jsonl"
        bookwise(env, "insights", "--out", str(html), "--json", str(out / "insights.json"),
                 "--csv", str(out / "insights.csv"), "--export-questions", str(export))  # fmt: skip
        summary = json.loads((out / "insights.json").read_text(encoding="utf-8"))
        print(f"logged {summary['summary']['questions']} answers; {summary['gap_questions']} gap questions"
              f" in {len(summary['gaps'])} clusters; wrote {html}, {export}")  # fmt: skip
        for gap in summary["gaps"][:8]:
            print(f"  {gap['size']:3d}  {gap['label']}")
        if args.screenshots:
            for shot in screenshots(html, args.screenshots):
                print(f"screenshot: {shot}")


if __name__ == "__main__":
    main()
