"""Does a just-started server answer at full speed? The first questions asked of `bookwise serve`
(no LLM: extractive answers) against the same questions asked of it warm.

Ingests the corpus into ``--data-dir`` unless it holds an index already, starts `bookwise serve` on
it, and the moment the port answers `/api/health` (liveness: nothing loaded yet) asks the first
``--questions-count`` questions of the set, ``--concurrency`` at a time; then asks them again of
the now warm server. Reported per round: errors (HTTP status or `error` event, by code) and time to
the `sources` event, p50 / p95. The query vector cache is off (``BOOKWISE_QUERY_VECTOR_CACHE=0``),
so the warm round embeds every question again as the cold one did, instead of finding it cached.

    python scripts/bench_cold_start.py --corpus CORPUS/docusaurus-docs --route-base-path docs \\
        --questions eval/docusaurus-docs.questions.jsonl --data-dir /tmp/bw-dd
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from apiserver import wait_until_serving  # noqa: E402
from bench_load import refusal  # noqa: E402
from nginx import free_port  # noqa: E402

BOOKWISE = Path(sys.executable).with_name("bookwise")


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def ask(client: httpx.AsyncClient, url: str, question: str) -> tuple[float | None, str | None]:
    """Seconds to the `sources` event, and the error (None when answered to `done`)."""
    started = time.perf_counter()
    to_sources: float | None = None
    event = ""
    try:
        async with client.stream("POST", f"{url}/api/chat", json={"question": question}) as response:
            if response.status_code != 200:
                return None, await refusal(response)
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                    if event == "sources" and to_sources is None:
                        to_sources = time.perf_counter() - started
                elif line.startswith("data:") and event == "error":
                    return to_sources, f"error_{json.loads(line[5:]).get('code', '?')}"
                elif line.startswith("data:") and event == "done":
                    return to_sources, None
    except httpx.HTTPError as error:
        return to_sources, type(error).__name__
    return to_sources, "no_done"


async def round_of(url: str, questions: list[str], concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    started = time.perf_counter()

    async def one(question: str) -> tuple[float | None, str | None]:
        async with gate:
            return await ask(client, url, question)

    async with httpx.AsyncClient(timeout=120) as client:
        results = await asyncio.gather(*(one(q) for q in questions))
    times = [t * 1000 for t, _ in results if t is not None]
    # Past the first batch in flight: whether only the first questions pay for something.
    later = [t * 1000 for t, _ in results[concurrency:] if t is not None]
    errors = Counter(e for _, e in results if e is not None)
    return {
        "asked": len(questions),
        "errors": dict(errors),
        # In the order asked: whether the first questions pay for something the later ones do not.
        "first_ms": [round(t * 1000) if t is not None else None for t, _ in results[:8]],
        "each_ms": [round(t * 1000) if t is not None else None for t, _ in results],
        "sources_p50_ms": round(percentile(times, 50) or 0, 1),
        "sources_p95_ms": round(percentile(times, 95) or 0, 1),
        "sources_mean_ms": round(statistics.fmean(times), 1) if times else None,
        "later_sources_p95_ms": round(percentile(later, 95) or 0, 1),
        "round_s": round(time.perf_counter() - started, 2),
    }


def has_index(data_dir: Path) -> bool:
    return (data_dir / "index" / "CURRENT").is_file()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, required=True, help="the Docusaurus site to ingest")
    parser.add_argument("--route-base-path", default="docs")
    parser.add_argument("--questions", type=Path, default=ROOT / "eval" / "docusaurus-docs.questions.jsonl")
    parser.add_argument("--questions-count", type=int, default=40, help="the first N questions of the set")
    parser.add_argument("--concurrency", type=int, default=4, help="questions in flight at once")
    parser.add_argument("--data-dir", type=Path, help="default: a new temporary folder (ingested here)")
    parser.add_argument("--details", action="store_true", help="each question's cold and warm time")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bookwise-cold-"))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BOOKWISE_LLM_")},
        "BOOKWISE_DATA_DIR": str(data_dir),
        # Every question comes from 127.0.0.1: per-client limits would measure the limiter, not the server.
        "BOOKWISE_RATE_LIMIT_PER_MINUTE": "1000000",
        "BOOKWISE_MAX_STREAMS_PER_CLIENT": "100000",
        "BOOKWISE_HTTP_MAX_CONNECTIONS_PER_CLIENT": "100000",
        "BOOKWISE_QUERY_VECTOR_CACHE": "0",
    }
    if not has_index(data_dir):
        started = time.perf_counter()
        subprocess.run(
            [str(BOOKWISE), "ingest", str(args.corpus), "--route-base-path", args.route_base_path],
            env=env, check=True,
        )  # fmt: skip
        print(f"ingest {time.perf_counter() - started:.0f} s", flush=True)
    rows = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines() if line.strip()]
    questions = [row["question"] for row in rows][: args.questions_count]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    started = time.perf_counter()
    server = subprocess.Popen(
        [str(BOOKWISE), "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        try:
            wait_until_serving(url, server, path="/api/health", within_s=600)
        except AssertionError as failed:
            raise SystemExit(f"{failed}: {server.stderr.read()[-3000:] if server.stderr else ''}") from None
        up = time.perf_counter() - started
        cold = asyncio.run(round_of(url, questions, args.concurrency))
        warm = asyncio.run(round_of(url, questions, args.concurrency))
    finally:
        server.terminate()
        server.wait(timeout=30)
    ratio = cold["sources_p95_ms"] / warm["sources_p95_ms"] if warm["sources_p95_ms"] else None
    report = {
        "questions": len(questions),
        "concurrency": args.concurrency,
        "port_open_s": round(up, 2),
        "cold": cold,
        "warm": warm,
        "cold_over_warm_p95": round(ratio, 2) if ratio else None,
        "cold_over_warm_p50": round(cold["sources_p50_ms"] / warm["sources_p50_ms"], 2)
        if warm["sources_p50_ms"]
        else None,
        "load": round(os.getloadavg()[0], 1),
    }
    each = {name: report[name].pop("each_ms") for name in ("cold", "warm")}
    print(json.dumps(report, indent=1))
    if args.details:
        for n, question in enumerate(questions):
            print(f"{each['cold'][n]!s:>6} {each['warm'][n]!s:>6} ms  {question}")
    ok = not cold["errors"] and not warm["errors"] and ratio is not None and ratio <= 2
    print("bar (no error, cold p95 within 2x of warm):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
