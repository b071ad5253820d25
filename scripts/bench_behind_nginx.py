"""Time to the `sources` event through the manual's nginx recipe (TLS, proxy_buffering off) and direct.

Builds the tests' small book (hash embedder), starts `bookwise serve` on loopback behind a real nginx
(Debian's nginx-light, configured by tests/nginx.py from the manual's recipe, self-signed TLS), then
asks the same question N times over one keep-alive connection each way, alternating, and prints
p50/p95 of the time from sending the request to reading `sources`, and to the end of the answer
(extractive: no LLM). Needs nginx and openssl (scripts/setup-test-deps).

    python scripts/bench_behind_nginx.py [N]
"""

from __future__ import annotations

import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "backend")]  # the tests' book and nginx helpers

from apiserver import build_book, parse_sse  # noqa: E402
from nginx import free_port, make_certificate, recipe_for_test, running_nginx  # noqa: E402

QUESTION = {"question": "What do quokkas eat in the morning?"}


def timed_chat(client: httpx.Client, url: str, origin: str) -> tuple[float, float]:
    started = time.perf_counter()
    to_sources = 0.0
    with client.stream("POST", f"{url}/api/chat", json=QUESTION, headers={"Origin": origin}) as response:
        response.raise_for_status()
        for name, _ in parse_sse(response.iter_lines()):
            if name == "sources":
                to_sources = time.perf_counter() - started
    return to_sources, time.perf_counter() - started


def wait_for(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(f"{url}/api/health", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def percentiles(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms"


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = build_book(root / "book")
        site = root / "build"
        site.mkdir()
        (site / "index.html").write_text("<title>site</title>", encoding="utf-8")
        cert, key = make_certificate(root / "tls")
        api_port, proxy_port = free_port(), free_port()
        api = f"http://127.0.0.1:{api_port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOOKWISE_")} | {
            "BOOKWISE_DATA_DIR": str(settings.data_dir),
            "BOOKWISE_EMBEDDING_PROVIDER": "hash",
            "BOOKWISE_SUFFICIENCY_THRESHOLD": "0",
            "BOOKWISE_CHUNK_MAX_TOKENS": str(settings.chunk_max_tokens),
            "BOOKWISE_CHUNK_OVERLAP_TOKENS": str(settings.chunk_overlap_tokens),
            "BOOKWISE_RATE_LIMIT_PER_MINUTE": "1000000",
            "BOOKWISE_TRUSTED_PROXIES": '["127.0.0.1"]',
            "BOOKWISE_ALLOWED_HOSTS": '["127.0.0.1"]',
            "PYTHONPATH": str(ROOT / "backend"),
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "bookwise.cli", "serve", "--port", str(api_port)],
            env=env,
            cwd=tmp,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(api)
            config = recipe_for_test(port=proxy_port, cert=cert, key=key, site_dir=site, api_url=api)
            with running_nginx(root / "nginx", config, proxy_port) as proxied:
                tls = ssl.create_default_context(cafile=str(cert))
                with httpx.Client(timeout=30) as direct, httpx.Client(timeout=30, verify=tls) as through:
                    for client, url in ((direct, api), (through, proxied)):  # warm up both paths
                        for _ in range(5):
                            timed_chat(client, url, url)
                    results: dict[str, list[tuple[float, float]]] = {"direct": [], "nginx": []}
                    for _ in range(rounds):
                        results["direct"].append(timed_chat(direct, api, api))
                        results["nginx"].append(timed_chat(through, proxied, proxied))
        finally:
            server.terminate()
            server.wait(15)
    print(f"{rounds} extractive answers each way, sequential, one keep-alive connection per path:")
    for path, timings in results.items():
        print(f"  {path:6}  to sources: {percentiles([t[0] for t in timings])}")
        print(f"  {'':6}  to the end: {percentiles([t[1] for t in timings])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
