"""Hostile-page ingest benchmark: the time one worst-case page takes to ingest (parse + chunk).

    PYTHONPATH=backend python scripts/bench_hostile_ingest.py [--size BYTES] [--timeout S]
        [--provider local|hash] [CASE ...]

Each case is one page of about ``--size`` bytes (default 2,000,000: the default ``max_file_bytes``
limit) in a fresh one-page site, ingested by ``ingest_site`` with the chunk settings ``bookwise
ingest`` uses and the token counter of the configured embedder (the local MiniLM tokenizer by
default, as a real ingest). Each case runs in its own process, stopped after ``--timeout`` seconds
(reported as ``> T``). The cases are the inputs that were quadratic: an inline data-URI image, a long
run of spaces, lists nested 200 deep, ``[a(`` repeated and one huge word (the red-team's cases), plus
a line of leading spaces, an unclosed JSX tag followed by spaces, and a paragraph of one-letter lines.
"""

from __future__ import annotations

import argparse
import base64
import multiprocessing
import random
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bookwise.ingest import pipeline
from bookwise.ingest.pipeline import ingest_site
from bookwise.ingest.site import read_site_config
from bookwise.settings import Settings

HEAD = "---\ntitle: Hostile\n---\n\n## Intro\n\nA normal paragraph before the hostile part.\n\n"


def data_uri(size: int) -> str:
    blob = base64.b64encode(random.Random(1).randbytes(size * 3 // 4)).decode()
    return HEAD + f"![diagram](data:image/png;base64,{blob})\n\nAfter the image.\n"


def space_runs(size: int) -> str:
    return HEAD + ("word" + " " * 1000) * (size // 1004) + "end\n"


def indented_line(size: int) -> str:
    return HEAD + "text\n" + " " * size + "x\n"


def nested_list(size: int) -> str:
    one = "".join("  " * depth + f"- item {depth}\n" for depth in range(200))  # ~41 KB
    return HEAD + "\n".join([one] * max(1, size // len(one)))


def link_opens(size: int) -> str:
    return HEAD + "[a(" * (size // 3) + "\n"


def unclosed_tag(size: int) -> str:
    return HEAD + "text <Tabs" + " " * size + "x\n"


def short_lines(size: int) -> str:
    return HEAD + "a\n" * (size // 2)


def huge_word(size: int) -> str:
    rng = random.Random(2)
    return HEAD + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(size)) + "\n"


CASES: dict[str, Callable[[int], str]] = {
    "data-uri image": data_uri,
    "runs of 1000 spaces": space_runs,
    "list nested 200 deep": nested_list,
    "[a( repeated": link_opens,
    "one huge word": huge_word,
    "indented line": indented_line,
    "unclosed tag + spaces": unclosed_tag,
    "one-line paragraphs": short_lines,
}


def _run_case(name: str, size: int, provider: str, out: Connection) -> None:
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), embedding_provider=provider, _env_file=None)  # type: ignore[call-arg]
    from bookwise.index.build import chunking_params
    from bookwise.index.embedders import create_embedder

    counter = create_embedder(settings)
    params = chunking_params(settings, counter)
    chunk_s = 0.0
    original = pipeline.chunk_document

    def timed(*args: Any) -> Any:  # the chunking share of the ingest time
        nonlocal chunk_s
        started = time.perf_counter()
        try:
            return original(*args)
        finally:
            chunk_s += time.perf_counter() - started

    pipeline.chunk_document = timed  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        (site / "docs").mkdir(parents=True)
        page = CASES[name](size)
        (site / "docs" / "page.md").write_text(page, encoding="utf-8")
        started = time.perf_counter()
        result = ingest_site(
            read_site_config(site), params, max_file_bytes=max(settings.max_file_bytes, len(page) + 1)
        )
        total = time.perf_counter() - started
    errors = ",".join(e.code for e in result.errors) or "-"
    out.send((len(page.encode()), total, chunk_s, len(result.chunks), errors))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cases", nargs="*", default=list(CASES), help=f"any of {list(CASES)}")
    parser.add_argument("--size", type=int, default=2_000_000, help="page size in bytes (default 2 MB)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case before giving up")
    parser.add_argument("--provider", default="local", choices=["local", "hash"], help="token counter")
    args = parser.parse_args()
    print(f"{'case':<22} {'bytes':>9} {'ingest s':>9} {'chunk s':>8} {'chunks':>7}  errors")
    for name in args.cases:
        receive, send = multiprocessing.Pipe(duplex=False)
        process = multiprocessing.Process(target=_run_case, args=(name, args.size, args.provider, send))
        process.start()
        process.join(args.timeout)
        if process.is_alive():
            process.terminate()
            process.join()
            print(f"{name:<22} {args.size:>9} {'> ' + str(int(args.timeout)):>9}")
            continue
        if not receive.poll():
            print(f"{name:<22} {args.size:>9} {'crashed':>9} (exit {process.exitcode})")
            continue
        size, total, chunk_s, chunks, errors = receive.recv()
        print(f"{name:<22} {size:>9} {total:>9.2f} {chunk_s:>8.2f} {chunks:>7}  {errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
