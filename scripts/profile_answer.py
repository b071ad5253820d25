"""CPU per answer, in one process: what one question costs the server, whatever else loads the machine.

The answerer is built as ``bookwise serve`` builds it (one ``Retriever`` opened and warmed up, the
book's phrases read at open when there is no model, one ``Answerer`` per request) and asked the
questions of a set again and again, as the load benchmark asks them. Each answer is timed in CPU
time (the process's, worker threads and ONNX Runtime included), which other processes' load barely
moves, where wall time under load measures the machine. Two paths are measured:

- ``extractive``: no model, the whole answer (retrieval, the passage plan, the quoted answer);
- ``sources``: with a model configured (never called: no question here has history), the work up to
  the ``sources`` event, which is all the server does before the model streams.

The first round (cold caches) is reported apart; the rounds after it are the steady state a loaded
server lives in. Then one more round runs under cProfile (every thread's profile merged, each timed
in its own thread's CPU time, so waiting for a worker thread counts nothing) and the top of it is
printed. ``--code label=<backend dir>,...`` runs the same measurement on other checkouts,
each in its own process, in turn (``--repeat`` times), or all at once with ``--together`` (then
each opens its own copy of the index: ``label=<backend dir>@<data dir>``), so before and after meet
the same load. Never let two processes open one index copy.

    python scripts/profile_answer.py --data-dir <index dir> --questions website-plugin/example/questions.jsonl
    python scripts/profile_answer.py --data-dir <index dir> --questions <set> \
        --code before=<old checkout>/backend,after=backend --repeat 2 --top 0
    python scripts/profile_answer.py --data-dir <index dir> --top 0 --repeat 3 --together \
        --code before=<old checkout>/backend@<index copy>,after=backend@<another copy>
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "website-plugin" / "example" / "questions.jsonl"


def read_questions(path: Path) -> list[str]:
    lines = path.read_text("utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


class ThreadProfiles:
    """cProfile for the calls the answer hands to worker threads (``anyio.to_thread.run_sync``): a
    ``cProfile.Profile`` sees only the thread that enabled it, and retrieval runs in workers."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._local = threading.local()
        self.enabled = False

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        def run(*args: Any) -> Any:
            if not self.enabled:
                return call(*args)
            profile = getattr(self._local, "profile", None)
            if profile is None:
                profile = self._local.profile = cProfile.Profile(time.thread_time)
                self.profiles.append(profile)
            profile.enable()
            try:
                return call(*args)
            finally:
                profile.disable()

        return run

    def install(self) -> None:
        import anyio.to_thread

        original = anyio.to_thread.run_sync

        async def run_sync(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return await original(self.wrap(func), *args, **kwargs)

        anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """This process's figures: CPU ms per answer for each path, and the profile's top."""
    threads = ThreadProfiles()
    threads.install()
    questions = read_questions(args.questions)
    paths = {path: measure_path(args, path, questions, threads) for path in args.paths}
    return {"questions": len(questions), "paths": paths}


def measure_path(
    args: argparse.Namespace, path: str, questions: list[str], threads: ThreadProfiles
) -> dict[str, Any]:
    import anyio

    from bookwise.generation.answer import Answerer, checked
    from bookwise.generation.coverage import book_phrases
    from bookwise.generation.events import Done, Sources
    from bookwise.generation.llm import LLMClient
    from bookwise.generation.models import ChatRequest
    from bookwise.retrieval.retriever import Retriever
    from bookwise.settings import Settings
    from bookwise.validation import RequestLimits

    # Unreachable on purpose: with a model configured, nothing before ``sources`` calls it.
    model = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "unused"} if path == "sources" else {}
    settings = Settings(data_dir=args.data_dir, **model)  # type: ignore[arg-type]
    llm = LLMClient(settings) if path == "sources" else None
    opened = time.process_time()
    retriever = Retriever.open(settings)
    retriever.search("warm up")
    if llm is None:
        book_phrases(retriever)  # as the server does when it opens the index without a model
    open_ms = (time.process_time() - opened) * 1000
    limits = RequestLimits.from_settings(settings)
    kinds: dict[str, int] = {}

    async def answer(question: str) -> None:
        request = checked(ChatRequest(question=question), limits)
        answerer = Answerer(settings, retriever, llm)
        prepared = await answerer.prepare(request)
        async for event in answerer.stream(prepared):
            if isinstance(event, Sources) and llm is not None:
                kinds[prepared.plan] = kinds.get(prepared.plan, 0) + 1
                break  # the model's stream is not this path's
            if isinstance(event, Done):
                kinds[event.answer_kind] = kinds.get(event.answer_kind, 0) + 1

    async def one_round() -> float:
        started = time.process_time()
        for question in questions:
            await answer(question)
        return (time.process_time() - started) * 1000 / len(questions)

    cold = anyio.run(one_round)
    computed = getattr(retriever.embedder, "computed", 0)  # texts a serving embedder ran the model on
    warm = [anyio.run(one_round) for _ in range(args.rounds)]
    embedded = (getattr(retriever.embedder, "computed", 0) - computed) / max(args.rounds, 1)
    top = ""
    if args.top:
        main = cProfile.Profile(time.thread_time)
        threads.enabled = True
        main.enable()
        anyio.run(one_round)
        main.disable()
        threads.enabled = False
        out = io.StringIO()
        stats = pstats.Stats(main, stream=out)
        for profile in threads.profiles:
            stats.add(profile)
        stats.sort_stats(args.sort).print_stats(args.top)
        top = out.getvalue()
        threads.profiles.clear()
    retriever.close()
    rounds = args.rounds + 1 + bool(args.top)
    return {
        "open_cpu_ms": round(open_ms),
        "cold_cpu_ms_per_answer": round(cold, 2),
        "warm_cpu_ms_per_answer": [round(w, 2) for w in warm],
        "warm_median": round(sorted(warm)[len(warm) // 2], 2),
        "warm_best": round(min(warm), 2),
        "warm_embedded_per_round": embedded,
        "answers": {k: v // rounds for k, v in sorted(kinds.items())},
        "profile": top,
    }


def show(label: str, report: dict[str, Any]) -> None:
    for path, figures in report["paths"].items():
        warm = ", ".join(f"{w:.1f}" for w in figures["warm_cpu_ms_per_answer"])
        print(
            f"{label}{path}: {figures['warm_median']:.1f} ms CPU per answer warm, median "
            f"(best {figures['warm_best']:.1f}; rounds {warm}); "
            f"cold round {figures['cold_cpu_ms_per_answer']:.1f}; open {figures['open_cpu_ms']} ms; "
            f"texts embedded per warm round {figures['warm_embedded_per_round']:g}; "
            f"{report['questions']} questions, answers per round {figures['answers']}"
        )
        if figures["profile"]:
            print(figures["profile"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="an ingested index (a copy: see above)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="a questions .jsonl")
    parser.add_argument(
        "--paths", default="extractive,sources", help="extractive and/or sources, comma-separated"
    )
    parser.add_argument("--rounds", type=int, default=3, help="warm rounds over the questions")
    parser.add_argument("--top", type=int, default=30, help="profile rows printed (0: no profile)")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key (cumulative, tottime…)")
    parser.add_argument("--code", default="", help="label=<backend dir>,... : measure these checkouts")
    parser.add_argument("--repeat", type=int, default=1, help="with --code: runs of each, in turn")
    parser.add_argument(
        "--together",
        action="store_true",
        help="with --code: run the checkouts at the same time, so they share the machine's load alike",
    )
    parser.add_argument("--json", action="store_true", help="print this process's figures as JSON")
    args = parser.parse_args()
    args.paths = [p for p in args.paths.split(",") if p]
    if not set(args.paths) <= {"extractive", "sources"}:
        parser.error("--paths takes extractive and sources")
    if not args.code:
        if str(ROOT / "backend") not in sys.path and "bookwise" not in sys.modules:
            sys.path.append(str(ROOT / "backend"))  # after PYTHONPATH: a checkout given there wins
        figures = measure(args)
        if args.json:
            print(json.dumps(figures))
        else:
            show("", figures)
        return
    codes = [tuple(item.split("=", 1)) for item in args.code.split(",")]
    argv = sys.argv[1:]
    valued = ("--code", "--repeat", "--data-dir")  # the options a child is not given, and their values
    child = [
        a
        for i, a in enumerate(argv)
        if not a.startswith((*valued, "--together")) and (i == 0 or argv[i - 1] not in valued)
    ]
    places = [backend.partition("@")[2] or str(args.data_dir) for _, backend in codes]
    if args.together and len(set(places)) < len(places):
        parser.error("--together: give each checkout its own copy of the index (label=<backend>@<data dir>)")
    for run in range(args.repeat):
        started = []
        for (label, backend), place in zip(codes, places, strict=True):
            env = {**os.environ, "PYTHONPATH": str(Path(backend.partition("@")[0]).resolve())}
            command = [sys.executable, __file__, *child, "--data-dir", place, "--json"]
            load = os.getloadavg()[0]
            process = subprocess.Popen(
                command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            started.append((label, load, process))
            if not args.together:
                collect(run, *started.pop())
        for item in started:
            collect(run, *item)


def collect(run: int, label: str, load: float, process: subprocess.Popen[str]) -> None:
    out, err = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{label}: {err[-2000:]}")
    show(f"[{label} run {run + 1}, load {load:.2f}] ", json.loads(out.splitlines()[-1]))


if __name__ == "__main__":
    main()
