"""Load benchmark: N concurrent SSE answer streams against `bookwise serve` on loopback.

The API runs as its own process (`bookwise serve`) on an existing index, answering with a fake
OpenAI-compatible LLM (another process) that streams `--tokens` tokens `--delay` seconds apart, so
each stream lasts as long as a real answer. For each concurrency N, N clients each ask, read the
whole stream, and ask again until `--duration` is over (a closed loop: N streams are open at all
times); clients start spread over one answer's length, as readers do. `--burst` instead sends N
questions at the same instant, once. Reported: errors, p50/p95 time to the `sources` event and to
the first token, and answers per second. ``--extractive`` runs the API without an LLM: the
passage answers' ranking (embedding the retrieved sections' passages) then counts in the time to
``sources``.

    python scripts/bench_load.py --data-dir <index dir> --concurrency 1,10,50,100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_QUESTIONS = ROOT / "eval" / "redux-extra.questions.jsonl"


@dataclass
class Wave:
    concurrency: int
    to_sources: list[float] = field(default_factory=list)
    to_first_token: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    answer_modes: dict[str, int] = field(default_factory=dict)
    retrieval: list[float] = field(default_factory=list)  # server-side, from `done.timings_ms`
    elapsed: float = 0.0

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the process exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


async def one_stream(client: httpx.AsyncClient, url: str, question: str, wave: Wave) -> None:
    started = time.perf_counter()
    seen_sources = seen_token = False
    event = ""
    try:
        async with client.stream("POST", f"{url}/api/chat", json={"question": question}) as response:
            if response.status_code != 200:
                await response.aread()
                wave.error(f"http_{response.status_code}")
                return
            async for line in response.aiter_lines():
                if line.startswith("data:") and event == "meta":
                    mode = json.loads(line[5:])["answer_mode"]
                    wave.answer_modes[mode] = wave.answer_modes.get(mode, 0) + 1
                elif line.startswith("data:") and event == "done":
                    wave.retrieval.append(json.loads(line[5:])["timings_ms"]["retrieval"] / 1000)
                if line.startswith("event:"):
                    event = line[6:].strip()
                    now = time.perf_counter() - started
                    if event == "sources" and not seen_sources:
                        seen_sources = True
                        wave.to_sources.append(now)
                    elif event == "token" and not seen_token:
                        seen_token = True
                        wave.to_first_token.append(now)
                    elif event == "error":
                        wave.error("error_event")
                    elif event == "done":
                        wave.totals.append(now)
    except httpx.HTTPError as error:
        wave.error(type(error).__name__)


async def run_wave(
    url: str, questions: list[str], concurrency: int, duration: float, stagger: float, burst: bool
) -> Wave:
    wave = Wave(concurrency)
    limits = httpx.Limits(max_connections=concurrency + 5, max_keepalive_connections=concurrency + 5)
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=limits) as client:
        started = time.perf_counter()

        async def reader(n: int) -> None:
            if burst:
                await one_stream(client, url, questions[n % len(questions)], wave)
                return
            await asyncio.sleep(stagger * n / concurrency)
            asked = n
            while time.perf_counter() - started < duration:
                await one_stream(client, url, questions[asked % len(questions)], wave)
                asked += concurrency

        await asyncio.gather(*(reader(n) for n in range(concurrency)))
        wave.elapsed = time.perf_counter() - started
    return wave


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0] * 1000
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000


def summary(wave: Wave) -> dict[str, Any]:
    return {
        "streams": wave.concurrency,
        "answers": len(wave.totals),
        "errors": sum(wave.errors.values()),
        "error_kinds": wave.errors,
        "answer_modes": wave.answer_modes,
        "sources_p50_ms": percentile(wave.to_sources, 50),
        "sources_p95_ms": percentile(wave.to_sources, 95),
        "first_token_p50_ms": percentile(wave.to_first_token, 50),
        "first_token_p95_ms": percentile(wave.to_first_token, 95),
        "answer_p50_ms": percentile(wave.totals, 50),
        "server_retrieval_p50_ms": percentile(wave.retrieval, 50),
        "server_retrieval_p95_ms": percentile(wave.retrieval, 95),
        "answers_per_s": round(len(wave.totals) / wave.elapsed, 1) if wave.elapsed else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="an ingested index (BOOKWISE_DATA_DIR)")
    parser.add_argument("--concurrency", default="1,10,50,100", help="comma-separated stream counts")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per concurrency level")
    parser.add_argument("--tokens", type=int, default=60, help="tokens per fake answer")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds between fake tokens")
    parser.add_argument("--burst", action="store_true", help="N questions at the same instant, once")
    parser.add_argument(
        "--questions", type=Path, default=DEFAULT_QUESTIONS, help="questions.jsonl; answerable ones are asked"
    )
    parser.add_argument(
        "--extractive", action="store_true", help="no LLM: passage answers (time to sources includes ranking)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions = [
        row["question"]
        for row in map(json.loads, args.questions.read_text(encoding="utf-8").splitlines())
        if row.get("type") != "unanswerable"
    ]

    llm_port, api_port = free_port(), free_port()
    python = sys.executable
    llm = subprocess.Popen(
        [python, str(ROOT / "tests" / "fakellm.py"), "--port", str(llm_port),
         "--tokens", str(args.tokens), "--delay", str(args.delay)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BOOKWISE_LLM_")},
        "BOOKWISE_DATA_DIR": str(args.data_dir),
        # Every bench client is 127.0.0.1: per-client limits would measure the limiter, not the server.
        "BOOKWISE_RATE_LIMIT_PER_MINUTE": "1000000",
        "BOOKWISE_MAX_STREAMS_PER_CLIENT": "100000",
    }
    if not args.extractive:
        env |= {"BOOKWISE_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1", "BOOKWISE_LLM_MODEL": "fake"}
    api = subprocess.Popen(
        [python, "-m", "bookwise.cli", "serve", "--port", str(api_port)], env=env, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{api_port}"
    try:
        wait_until_up(f"http://127.0.0.1:{llm_port}/v1/models", llm)
        wait_until_up(f"{url}/api/ready", api)
        stagger = args.tokens * args.delay
        results = []
        for concurrency in (int(n) for n in args.concurrency.split(",")):
            wave = asyncio.run(run_wave(url, questions, concurrency, args.duration, stagger, args.burst))
            results.append(summary(wave))
            if not args.json:
                r = results[-1]
                print(
                    f"N={r['streams']:>4}  answers {r['answers']:>5}  errors {r['errors']:>3}  "
                    f"sources p50 {r['sources_p50_ms']:.0f} / p95 {r['sources_p95_ms']:.0f} ms  "
                    f"first token p50 {r['first_token_p50_ms']:.0f} / p95 {r['first_token_p95_ms']:.0f} ms  "
                    f"server retrieval p50 {r['server_retrieval_p50_ms']:.0f} / "
                    f"p95 {r['server_retrieval_p95_ms']:.0f} ms  "
                    f"{r['answers_per_s']} answers/s  {r['answer_modes']}",
                    flush=True,
                )
        if args.json:
            print(
                json.dumps({"mode": "burst" if args.burst else "closed-loop", "results": results}, indent=2)
            )
    finally:
        for process in (api, llm):
            process.terminate()
            process.wait(timeout=15)


if __name__ == "__main__":
    main()
