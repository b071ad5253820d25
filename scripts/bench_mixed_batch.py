"""Mixed-batch benchmark: do poisoned searches fail normal searches running beside them?

Concurrent query embeddings are batched, so one bad text used to fail its whole batch (154 of 200
normal searches failed beside 3 lone-surrogate ones). This script indexes a small book (or uses
``--data-dir``), starts ``bookwise serve`` as its own process on loopback, fires ``--normal``
ordinary searches and ``--poisoned`` hostile ones at the same time (a JSON ``\\ud800`` escape, the
raw bytes ``ED A0 80``, a NUL), and prints how many normal searches failed beside the poisoned ones.

    python scripts/bench_mixed_batch.py                      # local MiniLM (offline), 200 + 10
    python scripts/bench_mixed_batch.py --embedder hash --normal 500 --poisoned 50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from apiserver import wait_until_serving
from nginx import free_port

BOOK = {
    "docs/intro.md": "# Robot motion\n\nThis book teaches how mobile robots move and know where they are.\n",
    "docs/odometry.md": (
        "# Odometry\n\n## Wheel encoders\n\nWheel encoders count wheel turns; odometry integrates them into "
        "a pose estimate that drifts over time.\n\n## Drift\n\nSlipping wheels and uneven floors make "
        "odometry drift, so robots correct it with other sensors.\n"
    ),
    "docs/localization.md": (
        "# Localization\n\n## Particle filters\n\nA particle filter keeps many pose guesses and weighs "
        "them by how well they explain the sensor readings.\n\n## Landmarks\n\nKnown landmarks let a "
        "robot correct its pose estimate when it sees them again.\n"
    ),
}
QUESTIONS = [
    "How does odometry estimate the pose?",
    "Why does odometry drift?",
    "What is a particle filter?",
    "How do landmarks help localization?",
    "What do wheel encoders count?",
]
POISONS: list[bytes] = [
    b'{"query": "odometry \\ud800"}',  # the JSON escape of a lone surrogate
    b'{"query": "odometry \xed\xa0\x80"}',  # the same surrogate as raw (CESU-8) bytes
    b'{"query": "odometry \\u0000 drift"}',  # a NUL
]


def bookwise(*args: str, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "bookwise.cli", *args], env=env, check=True, stdout=subprocess.DEVNULL
    )


async def fire(url: str, normal: int, poisoned: int) -> tuple[Counter[str], Counter[str], float]:
    bodies: list[tuple[bool, bytes]] = [
        (False, f'{{"query": "{QUESTIONS[n % len(QUESTIONS)]} {n}"}}'.encode()) for n in range(normal)
    ]
    step = max(1, normal // max(1, poisoned))
    for n in range(poisoned):  # spread among the normal ones, so they share embedding rounds
        bodies.insert(min(len(bodies), n * (step + 1)), (True, POISONS[n % len(POISONS)]))
    normal_outcomes: Counter[str] = Counter()
    poisoned_outcomes: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=len(bodies))
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def one(poison: bool, body: bytes) -> None:
            try:
                response = await client.post(
                    f"{url}/api/search", content=body, headers={"content-type": "application/json"}
                )
                outcome = str(response.status_code)
                if response.status_code != 200:
                    outcome += " " + str(response.json().get("error", {}).get("code"))
            except httpx.HTTPError as error:
                outcome = type(error).__name__
            (poisoned_outcomes if poison else normal_outcomes)[outcome] += 1

        started = time.perf_counter()
        await asyncio.gather(*(one(poison, body) for poison, body in bodies))
    return normal_outcomes, poisoned_outcomes, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--normal", type=int, default=200)
    parser.add_argument("--poisoned", type=int, default=10)
    parser.add_argument("--embedder", choices=["local", "hash"], default="local")
    parser.add_argument(
        "--data-dir", type=Path, help="an existing index (default: a small book, indexed now)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-mixed-") as tmp:
        env = {
            **os.environ,
            "BOOKWISE_EMBEDDING_PROVIDER": args.embedder,
            "BOOKWISE_EMBEDDING_ADAPT": "false",  # minutes of fine-tuning would not change the figure
            "BOOKWISE_RATE_LIMIT_PER_MINUTE": "1000000",
            "BOOKWISE_DATA_DIR": str(args.data_dir or Path(tmp) / "data"),
        }
        if args.data_dir is None:
            site = Path(tmp) / "site"
            for relative, content in BOOK.items():
                (site / relative).parent.mkdir(parents=True, exist_ok=True)
                (site / relative).write_text(content, encoding="utf-8")
            bookwise("ingest", str(site), "--url", "https://robots.example", "--base-url", "/", env=env)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "bookwise.cli", "serve", "--port", str(port)],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_serving(url, server, within_s=180)
            normal, poisoned, elapsed = asyncio.run(fire(url, args.normal, args.poisoned))
        finally:
            server.terminate()
            server.wait(30)
    failed = sum(count for outcome, count in normal.items() if outcome != "200")
    print(
        f"embedder {args.embedder}: {args.normal} normal + {args.poisoned} poisoned searches at once, "
        f"{elapsed:.1f} s"
    )
    print(f"  normal outcomes:   {dict(normal)}")
    print(f"  poisoned outcomes: {dict(poisoned)}")
    print(f"normal searches failed beside poisoned ones: {failed}/{args.normal}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
