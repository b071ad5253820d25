"""The red-team pass's two runs against MCP on `bookwise serve`, on loopback, with `/api/health`
probed throughout.

A generated book (``--pages`` pages in folders of 50, three headings each) is ingested with the hash
embedder (no model cost) and served by `bookwise serve` as a subprocess, with its default limits.
Then, each while a prober asks `/api/health` every 50 ms:

1. ``--gets`` attempts of ``GET /mcp`` (``Accept: text/event-stream``, the transport's event stream)
   from ``--addresses`` loopback addresses (127.0.0.2, 127.0.0.3, …), 64 at a time;
2. five concurrent first ``contents`` calls over streamable HTTP (the table of contents is built
   then), and a walk of the whole table along ``next_cursor``.

Printed per phase: `/api/health` latency p50/p95/max and its non-200 answers, and what the phase's
own requests got (statuses, durations, answer sizes).

    python scripts/bench_mcp_limits.py [--pages 5000] [--gets 999] [--addresses 17]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
PAGES_PER_FOLDER = 50
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "backend")]

from apiserver import wait_until_serving  # noqa: E402
from nginx import free_port  # noqa: E402

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def generate_site(root: Path, pages: int) -> None:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (root / "docusaurus.config.js").write_text(
        "export default {\n  title: 'Scale',\n  url: 'https://scale.example',\n  baseUrl: '/',\n};\n"
    )
    for number in range(pages):
        folder = docs / f"part-{number // PAGES_PER_FOLDER:04d}"
        if not folder.is_dir():
            folder.mkdir()
            label = {"label": f"Part {number // PAGES_PER_FOLDER}", "position": number // PAGES_PER_FOLDER}
            (folder / "_category_.json").write_text(json.dumps(label))
        sections = "".join(
            f"## {name} {number}\n\nHow the wombat {name.lower()} burrow {number} in the season {n}.\n\n"
            for n, name in enumerate(("Digging", "Resting", "Feeding"))
        )
        (folder / f"page-{number:05d}.md").write_text(
            f"---\ntitle: Page {number}\nsidebar_position: {number % PAGES_PER_FOLDER + 1}\n"
            f"description: What page {number} says about burrows.\n---\n\n"
            f"Wombats of page {number} dig.\n\n{sections}",
            encoding="utf-8",
        )


class HealthProbe:
    """Asks `/api/health` every ``every_s`` from its own thread; latencies and statuses."""

    def __init__(self, url: str, every_s: float = 0.05) -> None:
        self.url, self.every_s = url, every_s
        self.latencies: list[float] = []
        self.statuses: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    status = str(client.get(f"{self.url}/api/health").status_code)
                except httpx.HTTPError as error:
                    status = type(error).__name__
                self.latencies.append(time.perf_counter() - started)
                self.statuses[status] += 1
                self._stop.wait(self.every_s)

    def summary(self) -> str:
        ordered = sorted(self.latencies) or [0.0]
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        return (
            f"/api/health: {len(ordered)} probes, p50 {statistics.median(ordered) * 1000:.1f} ms, "
            f"p95 {p95 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms; statuses {dict(self.statuses)}"
        )


def get_attempts(url: str, attempts: int, addresses: int) -> None:
    clients = [
        httpx.Client(transport=httpx.HTTPTransport(local_address=f"127.0.0.{n + 2}"), timeout=30)
        for n in range(addresses)
    ]

    def attempt(n: int) -> tuple[str, float]:
        started = time.perf_counter()
        try:
            with clients[n % addresses].stream(
                "GET", f"{url}/mcp", headers={"Accept": "text/event-stream"}
            ) as response:
                response.read()
                status = str(response.status_code)
        except httpx.HTTPError as error:
            status = type(error).__name__
        return status, time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(attempt, range(attempts)))
    took = time.perf_counter() - started
    for client in clients:
        client.close()
    durations = sorted(d for _, d in results)
    print(
        f"  {attempts} GET /mcp from {addresses} addresses in {took:.1f} s: "
        f"{dict(Counter(s for s, _ in results))}, each at most {durations[-1] * 1000:.0f} ms"
    )


def contents_call(url: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], int, float]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "contents", "arguments": arguments},
    }
    started = time.perf_counter()
    response = httpx.post(f"{url}/mcp", json=body, headers=MCP_HEADERS, timeout=600)
    took = time.perf_counter() - started
    response.raise_for_status()
    data = next(line for line in response.text.splitlines() if line.startswith("data:"))
    result = json.loads(data[5:])["result"]
    if result.get("isError"):
        raise SystemExit(f"contents failed: {result['content']}")
    return result["structuredContent"], len(response.content), took


def contents_runs(url: str) -> None:
    with ThreadPoolExecutor(5) as pool:
        firsts = list(pool.map(lambda _: contents_call(url, {}), range(5)))
    print(
        f"  5 concurrent first contents calls: {', '.join(f'{t:.2f}' for _, _, t in firsts)} s; "
        f"answers {max(size for _, size, _ in firsts):,} bytes at most"
    )
    started, parts, biggest, pages = time.perf_counter(), 0, 0, 0
    cursor = None
    while True:
        answer, size, _ = contents_call(url, {"cursor": cursor} if cursor else {})
        parts, biggest = parts + 1, max(biggest, size)
        pages += sum(len(c["pages"]) for m in answer["modules"] for c in m["chapters"])
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    print(
        f"  the whole table along next_cursor: {pages} of {answer['total_pages']} pages in {parts} "
        f"answers ({biggest:,} bytes at most on the wire), {time.perf_counter() - started:.1f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--gets", type=int, default=999)
    parser.add_argument("--addresses", type=int, default=17)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        site, data = Path(work) / "site", Path(work) / "data"
        env = os.environ | {
            "PYTHONPATH": str(ROOT / "backend"),
            "BOOKWISE_EMBEDDING_PROVIDER": "hash",
            "BOOKWISE_DATA_DIR": str(data),
            "BOOKWISE_SUGGESTED_QUESTIONS": "0",  # not what is measured here
        }
        started = time.perf_counter()
        generate_site(site, args.pages)
        ingest = [sys.executable, "-m", "bookwise.cli", "ingest", str(site), "--json"]
        subprocess.run(ingest, env=env, check=True, capture_output=True)
        print(f"{args.pages} pages generated and ingested in {time.perf_counter() - started:.0f} s")

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        serve = [sys.executable, "-m", "bookwise.cli", "serve", "--port", str(port)]
        server = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until_serving(url, server, within_s=120)

            with HealthProbe(url) as probe:
                time.sleep(3)
            print(f"baseline (3 s idle)\n  {probe.summary()}")
            with HealthProbe(url) as probe:
                get_attempts(url, args.gets, args.addresses)
            print(f"  {probe.summary()}")
            with HealthProbe(url) as probe:
                contents_runs(url)
            print(f"  {probe.summary()}")
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
