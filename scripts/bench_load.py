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

``--workers 1,2`` runs every level once per worker count (``bookwise serve --workers N``).
After each level the server's memory is read from /proc: resident (``VmRSS``) and its own
(``RssAnon``, without the memory-mapped model and index files), summed over its workers.
``--code before=<dir>,after=<dir>`` compares checkouts in one run: one server per ``backend`` folder
(its PYTHONPATH), all started first, then each level run against each in turn, so the machine's other
load falls on both alike.
``--reingest SITE`` re-ingests a copy of SITE (one page edited, so a new generation is built) in
the middle of each level's run, and reports the requests that failed (must be 0) and how many
answers each index generation served.

    python scripts/bench_load.py --data-dir <index dir> --concurrency 50,100 --workers 1,2
    python scripts/bench_load.py --data-dir <index dir> --concurrency 50 --workers 2 --reingest <site>
    python scripts/bench_load.py --data-dir <index dir> --concurrency 10,25,50 \
        --code before=<old checkout>/backend,after=backend
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import uvloop

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
    generations: dict[str, int] = field(default_factory=dict)  # answers per index generation
    elapsed: float = 0.0
    end: float = 0.0  # when the clients stop asking (perf_counter); a re-ingest pushes it back
    workers: int = 1
    code: str = ""  # the --code label of the server measured
    reingest: str = ""  # the re-ingest's outcome, in --reingest runs
    cpu_per_answer: dict[str, float] = field(default_factory=dict)  # CPU ms per answer, by process

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


def tree_pids(pid: int) -> list[int]:
    """A process and its live descendants (Linux /proc; the process alone elsewhere)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds so far of a process and its live descendants (Linux /proc; 0 elsewhere)."""
    total = 0.0
    for current in tree_pids(pid):
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def tree_memory_mb(pid: int) -> dict[str, float]:
    """Resident memory of a process and its live descendants, in MB: all of it (``VmRSS``), and the
    part that is the processes' own (``RssAnon``), not file pages the kernel can reclaim (the model's
    and the index's memory-mapped files; shared by the workers, so counted once per worker here).
    Empty where /proc is missing."""
    totals = {"rss": 0.0, "anon": 0.0}
    for current in tree_pids(pid):
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            name, _, value = line.partition(":")
            key = {"VmRSS": "rss", "RssAnon": "anon"}.get(name)
            if key is not None:
                totals[key] += int(value.split()[0]) / 1024
    return {key: round(mb, 1) for key, mb in totals.items()} if totals["rss"] else {}


async def refusal(response: aiohttp.ClientResponse) -> str:
    """A refused answer's label: its status and the error body's code."""
    body = await response.read()
    try:
        code = json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = "not_json"  # uvicorn's own plain-text 503 beyond the connection cap
    return f"http_{response.status}_{code}"


async def one_stream(client: aiohttp.ClientSession, url: str, question: str, wave: Wave) -> None:
    started = time.perf_counter()
    seen_sources = seen_token = False
    event = ""
    try:
        async with client.post(f"{url}/api/chat", json={"question": question}) as response:
            if response.status != 200:
                wave.error(await refusal(response))
                return
            async for raw in response.content:  # one SSE line per item
                line = raw.decode().rstrip("\r\n")
                if line.startswith("data:") and event == "meta":
                    meta = json.loads(line[5:])
                    mode, generation = meta["answer_mode"], str(meta.get("index_version"))
                    wave.answer_modes[mode] = wave.answer_modes.get(mode, 0) + 1
                    wave.generations[generation] = wave.generations.get(generation, 0) + 1
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
    except (aiohttp.ClientError, TimeoutError) as error:
        wave.error(type(error).__name__)


def edited_copy(site: Path, into: Path, n: int) -> Path:
    """A copy of ``site`` with one page edited: ingesting it builds a new generation."""
    copy = into / f"site-{n}"
    ignore = shutil.ignore_patterns("node_modules", "build", ".docusaurus", ".git")
    shutil.copytree(site, copy, ignore=ignore, symlinks=True)
    page = next(p for p in sorted((copy / "docs").rglob("*.md")) if not p.name.startswith("_"))
    page.write_text(page.read_text(encoding="utf-8") + f"\n\nEdited by the load benchmark ({n}).\n")
    return copy


async def reingest_later(site: Path, env: dict[str, str], delay: float, wave: Wave) -> None:
    """``bookwise ingest`` of an edited copy of ``site``, ``delay`` seconds into the wave; the load
    goes on for ``delay`` seconds after it, however long it took, so the switch is under load too."""
    await asyncio.sleep(delay)
    started = time.perf_counter() - delay
    try:
        await _reingest(site, env, wave)
    finally:
        wave.end = max(started + 3 * delay, time.perf_counter() + delay)  # at least the planned run


async def _reingest(site: Path, env: dict[str, str], wave: Wave) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        copy = edited_copy(site, Path(scratch), int(time.time()))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bookwise.cli", "ingest", str(copy), "--json",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()
    if process.returncode != 0:
        wave.reingest = f"failed ({process.returncode}): {err.decode()[-300:]}"
        return
    report = json.loads(out)
    embedded, switched = report.get("embedded"), report.get("switched")
    wave.reingest = f"generation {report.get('generation')}: {embedded} chunks embedded, switched {switched}"


async def run_wave(
    url: str,
    questions: list[str],
    concurrency: int,
    duration: float,
    stagger: float,
    burst: bool,
    reingest: tuple[Path, dict[str, str]] | None = None,
) -> Wave:
    wave = Wave(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency + 5)
    timeout = aiohttp.ClientTimeout(total=60.0)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:
        started = time.perf_counter()
        wave.end = started + duration + (3600.0 if reingest else 0.0)  # set by the re-ingest when done

        async def reader(n: int) -> None:
            if burst:
                await one_stream(client, url, questions[n % len(questions)], wave)
                return
            await asyncio.sleep(stagger * n / concurrency)
            asked = n
            while time.perf_counter() < wave.end:
                await one_stream(client, url, questions[asked % len(questions)], wave)
                asked += concurrency

        ingest = [reingest_later(*reingest, duration / 3, wave)] if reingest else []
        await asyncio.gather(*(reader(n) for n in range(concurrency)), *ingest)
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
        **({"code": wave.code} if wave.code else {}),
        "workers": wave.workers,
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
        "answers_per_generation": wave.generations,
        **wave.cpu_per_answer,
        **({"reingest": wave.reingest} if wave.reingest else {}),
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
    parser.add_argument("--workers", default="1", help="comma-separated API process counts")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds for every worker to start")
    parser.add_argument(
        "--reingest", type=Path, help="re-ingest an edited copy of this site during each level's run"
    )
    parser.add_argument(
        "--code", default="", help="label=backend dir,...: compare checkouts level by level in one run"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions = [
        row["question"]
        for row in map(json.loads, args.questions.read_text(encoding="utf-8").splitlines())
        if row.get("type") != "unanswerable"
    ]

    llm_port = free_port()
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
        "BOOKWISE_HTTP_MAX_CONNECTIONS_PER_CLIENT": "100000",
    }
    if not args.extractive:
        env |= {"BOOKWISE_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1", "BOOKWISE_LLM_MODEL": "fake"}
    results = []
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    try:
        wait_until_up(f"http://127.0.0.1:{llm_port}/v1/models", llm)
        codes = [tuple(item.split("=", 1)) for item in args.code.split(",") if item] or [("", "")]
        for workers in (int(n) for n in args.workers.split(",")):
            results += run_servers(args, env, workers, questions, codes, llm.pid)  # type: ignore[arg-type]
        if args.json:
            print(
                json.dumps({"mode": "burst" if args.burst else "closed-loop", "results": results}, indent=2)
            )
    finally:
        llm.terminate()
        llm.wait(timeout=15)


def run_servers(
    args: argparse.Namespace,
    env: dict[str, str],
    workers: int,
    questions: list[str],
    codes: list[tuple[str, str]],
    llm_pid: int,
) -> list[dict[str, Any]]:
    """`bookwise serve --workers N` on the index (one per checkout in ``codes``: label, backend dir),
    and every concurrency level against each in turn."""
    servers: list[tuple[str, str, subprocess.Popen[bytes]]] = []
    results = []
    try:
        for label, backend in codes:
            api_port = free_port()
            code_env = env | ({"PYTHONPATH": str(Path(backend).resolve())} if backend else {})
            command = ["serve", "--port", str(api_port), "--workers", str(workers)]
            api = subprocess.Popen(
                [sys.executable, "-m", "bookwise.cli", *command], env=code_env, stderr=subprocess.DEVNULL
            )
            servers.append((label, f"http://127.0.0.1:{api_port}", api))
            wait_until_up(f"{servers[-1][1]}/api/ready", api)
        time.sleep(args.warmup)  # every worker up and warm (one answering /api/ready is not all)
        stagger = args.tokens * args.delay
        reingest = (args.reingest, env) if args.reingest else None
        for concurrency in (int(n) for n in args.concurrency.split(",")):
            for label, url, api in servers:
                before = tree_cpu_s(api.pid), tree_cpu_s(llm_pid), time.process_time()
                with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                    wave = runner.run(
                        run_wave(url, questions, concurrency, args.duration, stagger, args.burst, reingest)
                    )
                after = tree_cpu_s(api.pid), tree_cpu_s(llm_pid), time.process_time()
                answers = max(len(wave.totals), 1)
                wave.cpu_per_answer = {
                    f"cpu_ms_per_answer_{name}": round((end - start) * 1000 / answers, 2)
                    for name, start, end in zip(("server", "fake_llm", "client"), before, after, strict=True)
                }
                wave.workers, wave.code = workers, label
                results.append(summary(wave))
                memory = tree_memory_mb(api.pid)  # after the level: what the answers left in memory
                results[-1] |= {f"server_{key}_mb": mb for key, mb in memory.items()}
                results[-1]["load_average"] = round(os.getloadavg()[0], 1)  # others on the machine show here
                if not args.json:
                    print_row(results[-1])
    finally:
        for _, _, api in servers:
            api.terminate()
            api.wait(timeout=30)
    return results


def print_row(r: dict[str, Any]) -> None:
    def ms(key: str) -> str:
        return "-" if r[key] is None else f"{r[key]:.0f}"

    code = f"{r['code']}  " if "code" in r else ""
    print(
        f"{code}workers={r['workers']}  N={r['streams']:>4}  answers {r['answers']:>5}  "
        f"errors {r['errors']:>3} "
        f"{r['error_kinds'] or ''}  sources p50 {ms('sources_p50_ms')} / p95 {ms('sources_p95_ms')} ms  "
        f"first token p50 {ms('first_token_p50_ms')} / p95 {ms('first_token_p95_ms')} ms  "
        f"server retrieval p50 {ms('server_retrieval_p50_ms')} / p95 {ms('server_retrieval_p95_ms')} ms  "
        f"{r['answers_per_s']} answers/s  {r['answer_modes']}  load average {r['load_average']}  "
        f"CPU ms per answer: server {r['cpu_ms_per_answer_server']}, "
        f"fake LLM {r['cpu_ms_per_answer_fake_llm']}, "
        f"load generator {r['cpu_ms_per_answer_client']}  "
        f"server memory {r.get('server_rss_mb', '-')} MB resident, {r.get('server_anon_mb', '-')} MB its own",
        flush=True,
    )
    if "reingest" in r:
        print(f"    re-ingest: {r['reingest']}; answers per generation {r['answers_per_generation']}")


if __name__ == "__main__":
    main()
