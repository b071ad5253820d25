"""Keystroke search (GET /api/search/instant): quality on partial queries, and latency under typing.

    python scripts/bench_instant_search.py quality --corpus redux=DIR:Q1.jsonl,Q2.jsonl [--corpus ...]
    python scripts/bench_instant_search.py speed --data-dir DIR --questions Q.jsonl [--readers 20]
    python scripts/bench_instant_search.py cpu --data-dir DIR --questions Q.jsonl [--limit 8]

Each DIR holds an index ingested with the local embedder (``bookwise ingest``).

**quality**: for each answerable question, two queries as a reader would have typed them so far: its
first three words, and its first half (cut mid-word as typing is). Section Recall@5 (a result whose
doc_path and source heading equal a gold section's) for:

* ``instant``: the keystroke search (lexical with the last word as a prefix; dense fused in once two
  words are complete);
* ``instant_lexical``: the same with the dense channel off;
* ``bm25``: the baseline, BM25 over the same sections' title, heading and text with whole words only,
  stop words dropped, as a lunr-style local search ranks them.

**speed**: ``bookwise serve`` on the index (one process), and ``--readers`` readers typing at once:
each types its question one character per ``--interval`` seconds and sends the query so far after
every character, without waiting for the reply (a reader types on; the readers are aiohttp on uvloop, so
the load generator costs less than the server it measures). Readers type independently, each from a
random moment of the first interval; ``--together`` sends every reader's keystroke at the same moment
(the worst case). Reported: the requests' p50/p95/
max as the client sees them on loopback, the share that used the dense channel, errors, the server
process's and the load generator's CPU time per answered request (from /proc: the figure the
machine's other load does not change much), and the machine's load average (it is shared: its other
load shows there).

**cpu**: in this process, one thread: every prefix of each answerable question (``--limit`` of them)
searched as the reader types it, in order. CPU time per query, with the dense channel and without;
the share of queries that embedded a new query vector.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from apiserver import wait_until_serving
from bookwise.evaluation.retrieval import Question, load_questions
from bookwise.retrieval.instant import InstantSearch, SectionIndex, words_of
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import STOP_WORDS
from bookwise.settings import Settings
from nginx import free_port

K = 5


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load_passages(instant: InstantSearch) -> None:
    """Load the passage vectors now (a server loads them in the background on the first dense search)."""
    if hasattr(instant, "passage_vectors"):  # a clone of an earlier commit has none
        instant.passage_vectors(instant.section_index())


def typed_queries(question: str) -> dict[str, str]:
    return {"first 3 words": " ".join(question.split()[:3]), "first half": question[: len(question) // 2]}


class Bm25Baseline:
    """Plain BM25 over each section's title, heading and text as one field: whole words, stop words
    dropped, no prefixes and no field weights."""

    def __init__(self, index: SectionIndex, k1: float = 1.2, b: float = 0.75) -> None:
        self.sections = index.sections
        self.k1, self.b = k1, b
        self.postings: dict[str, dict[int, int]] = defaultdict(dict)
        self.lengths: list[int] = []
        for number, section in enumerate(self.sections):
            counts = Counter(
                w
                for w in words_of(f"{section.title} {section.heading} {section.text}")
                if w not in STOP_WORDS
            )
            self.lengths.append(sum(counts.values()))
            for word, count in counts.items():
                self.postings[word][number] = count
        self.average = sum(self.lengths) / max(len(self.lengths), 1)

    def search(self, query: str, limit: int) -> list[int]:
        total = len(self.sections)
        scores: dict[int, float] = defaultdict(float)
        for word in {w for w in words_of(query) if w not in STOP_WORDS}:
            found = self.postings.get(word, {})
            idf = math.log(1 + (total - len(found) + 0.5) / (len(found) + 0.5))
            for number, count in found.items():
                norm = self.k1 * (1 - self.b + self.b * self.lengths[number] / self.average)
                scores[number] += idf * count * (self.k1 + 1) / (count + norm)
        return sorted(scores, key=lambda n: (-scores[n], n))[:limit]


def hit(ranked: list[tuple[str, str]], question: Question) -> bool:
    return bool(set(ranked[:K]) & set(question.gold))


def quality(corpus: str, data_dir: Path, files: list[Path]) -> list[dict[str, Any]]:
    settings = Settings(_env_file=None, data_dir=data_dir)
    retriever = Retriever.open(settings)
    try:
        instant = InstantSearch(retriever, dense_min_words=settings.instant_search_dense_words)
        index = instant.section_index()
        _load_passages(instant)
        baseline = Bm25Baseline(index)
        rows = []
        for path in files:
            questions = [q for q in load_questions(path) if q.answerable]
            hits: dict[tuple[str, str], int] = Counter()
            for question in questions:
                for kind, query in typed_queries(question.question).items():
                    for system, dense in (("instant", True), ("instant_lexical", False)):
                        result = instant.search(query, limit=K, dense=dense)
                        ranked = [
                            key
                            for s in result.sections
                            if (key := instant.gold_key(s["url"], s["version"], s["locale"])) is not None
                        ]
                        hits[(system, kind)] += hit(ranked, question)
                    ranked = [
                        (index.sections[n].doc_path, index.sections[n].source_heading)
                        for n in baseline.search(query, K)
                    ]
                    hits[("bm25", kind)] += hit(ranked, question)
            row: dict[str, Any] = {"corpus": corpus, "set": path.name, "questions": len(questions)}
            for (system, kind), count in sorted(hits.items()):
                row[f"{system} R@5 ({kind})"] = round(count / len(questions), 3)
            rows.append(row)
            print(row, flush=True)
        return rows
    finally:
        retriever.close()


async def reader(
    client: aiohttp.ClientSession, url: str, question: str, interval: float, until: float, out: dict[str, Any]
) -> None:
    pending: set[asyncio.Task[None]] = set()

    async def send(query: str) -> None:
        started = time.perf_counter()
        try:
            async with client.get(f"{url}/api/search/instant", params={"q": query}) as response:
                body = await response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                out["errors"].append(response.status)
                return
            out["latencies"].append(elapsed)
            out["dense"] += b'"dense":true' in body
        except (aiohttp.ClientError, TimeoutError) as error:
            out["errors"].append(type(error).__name__)

    # Keystrokes on the reader's own clock (start + k * interval): a late wake-up must not shift every
    # later keystroke, which would slowly line readers up with each other.
    typed, keystrokes, started = 0, 0, time.monotonic()
    while time.monotonic() < until:
        typed = typed % len(question) + 1
        task = asyncio.create_task(send(question[:typed]))
        pending.add(task)
        task.add_done_callback(pending.discard)
        keystrokes += 1
        await asyncio.sleep(max(0.0, started + keystrokes * interval - time.monotonic()))
    await asyncio.gather(*pending)


async def typing_load(
    url: str, questions: list[str], readers: int, interval: float, seconds: float, together: bool
) -> Any:
    """The readers, on one aiohttp session over uvloop: a load generator on the same 2 cores must cost
    less than the server it measures (its CPU is reported beside the server's).

    Readers type independently: each starts at a random moment of the first keystroke's interval
    (seeded, so runs compare). ``together`` starts them all at once instead, so every keystroke of
    every reader arrives in the same millisecond: the worst case, not people typing."""
    out: dict[str, Any] = {"latencies": [], "errors": [], "dense": 0}
    connector = aiohttp.TCPConnector(limit=readers * 4)
    phase = random.Random(readers)
    offsets = sorted(0.0 if together else phase.uniform(0, interval) for _ in range(readers))
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as client:
        started = time.monotonic()
        until = started + seconds
        tasks = []
        for number, offset in enumerate(offsets):
            await asyncio.sleep(max(0.0, started + offset - time.monotonic()))
            question = questions[number % len(questions)]
            # A task at once: a coroutine would start only at the gather, all readers in step.
            tasks.append(asyncio.create_task(reader(client, url, question, interval, until, out)))
        await asyncio.gather(*tasks)
    return out


def speed(args: argparse.Namespace) -> dict[str, Any]:
    questions = [q.question for q in load_questions(args.questions) if q.answerable]
    port = free_port()
    env = os.environ | {
        "BOOKWISE_DATA_DIR": str(args.data_dir),
        # Every bench reader is 127.0.0.1: per-client limits would measure the limiter, not the search.
        "BOOKWISE_INSTANT_SEARCH_PER_MINUTE": "1000000",
        "BOOKWISE_HTTP_MAX_CONNECTIONS_PER_CLIENT": "100000",
        "BOOKWISE_LLM_BASE_URL": "",
    }
    command = [sys.executable, "-m", "bookwise.cli", "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, server, within_s=180)
        for question in questions[:5]:  # the section index and the embedder loaded before measuring
            httpx.get(f"{url}/api/search/instant", params={"q": question}, timeout=120)
        time.sleep(args.settle)  # and the passage vectors, which the server loads in the background
        cpu_before, client_before = process_cpu_s(server.pid), time.process_time()
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            out = runner.run(
                typing_load(url, questions, args.readers, args.interval, args.seconds, args.together)
            )
        cpu_after, client_after = process_cpu_s(server.pid), time.process_time()
    finally:
        server.terminate()
        server.wait(timeout=30)
    latencies = sorted(out["latencies"])
    result = {
        "readers": args.readers,
        "interval_ms": round(args.interval * 1000),
        "readers_start": "together" if args.together else "independently",
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / args.seconds, 1),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else None,
        "max_ms": round(latencies[-1], 1) if latencies else None,
        "dense_share": round(out["dense"] / max(len(latencies), 1), 2),
        "errors": len(out["errors"]),
        "error_kinds": dict(Counter(out["errors"])),
        "server_cpu_ms_per_request": (
            round((cpu_after - cpu_before) * 1000 / max(len(latencies), 1), 2)
            if cpu_before is not None and cpu_after is not None
            else None
        ),
        "load_generator_cpu_ms_per_request": round(
            (client_after - client_before) * 1000 / max(len(latencies), 1), 2
        ),
        "cores": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 1),
    }
    print(result, flush=True)
    return result


def cpu(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings(_env_file=None, data_dir=args.data_dir)
    questions = [q.question for q in load_questions(args.questions) if q.answerable][: args.limit]
    queries = [question[:n] for question in questions for n in range(1, len(question) + 1)]
    result: dict[str, Any] = {"questions": len(questions), "queries": len(queries)}
    for name, dense in (("lexical", False), ("served", True)):
        retriever = Retriever.open(settings)  # its own: no query vector cached by the other pass
        try:
            instant = InstantSearch(retriever, dense_min_words=settings.instant_search_dense_words)
            _load_passages(instant)
            instant.search("warm up the index and the embedder", dense=dense)
            computed = getattr(retriever.embedder, "computed", 0)  # texts the model ran on
            started = time.process_time()
            for query in queries:
                instant.search(query, dense=dense)
            spent = time.process_time() - started
            embedded = getattr(retriever.embedder, "computed", 0) - computed
        finally:
            retriever.close()
        result[f"{name}_cpu_ms_per_query"] = round(spent * 1000 / len(queries), 2)
        if dense:
            result["embedded_share"] = round(embedded / len(queries), 3)
    result["load_average_1m"] = round(os.getloadavg()[0], 1)
    print(result, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--corpus", action="append", required=True, help="NAME=DATA_DIR:QUESTIONS[,QUESTIONS]")
    s = sub.add_parser("speed")
    s.add_argument("--data-dir", type=Path, required=True)
    s.add_argument("--questions", type=Path, required=True)
    s.add_argument("--readers", type=int, default=20)
    s.add_argument("--interval", type=float, default=0.15)
    s.add_argument("--seconds", type=float, default=30)
    s.add_argument(
        "--together", action="store_true", help="every reader's keystrokes at the same moment (worst case)"
    )
    s.add_argument("--settle", type=float, default=10, help="seconds between the warm-up and the load")
    c = sub.add_parser("cpu")
    c.add_argument("--data-dir", type=Path, required=True)
    c.add_argument("--questions", type=Path, required=True)
    c.add_argument("--limit", type=int, default=8, help="questions typed")
    args = parser.parse_args()
    if args.command == "cpu":
        cpu(args)
    elif args.command == "quality":
        for spec in args.corpus:
            name, _, rest = spec.partition("=")
            data_dir, _, files = rest.partition(":")
            quality(name, Path(data_dir), [Path(f) for f in files.split(",")])
    else:
        speed(args)


if __name__ == "__main__":
    main()
