"""Ingest at scale: a generated Docusaurus-like site of N pages, ingested by `bookwise ingest`.

    python scripts/bench_ingest_scale.py [--pages 2000 20000 ...] [--profile] [--keep DIR]

Each site is written to a temporary folder (folders of pages with ``_category_.json``; pages with
front matter, headings, paragraphs, lists, code and admonitions, drawn from a seeded vocabulary so
BM25 and the hash embedder see varied text) and ingested into a fresh data directory by the CLI as a
subprocess, with the hash embedder (no model cost). Printed per size: wall time, the ingest's own
duration and the suggested-questions step's, peak RSS of the subprocess, docs, chunks, suggestions,
and the CLI's report. ``--profile`` runs the CLI under cProfile and prints the top functions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGES_PER_FOLDER = 50
SYLLABLES = ["ka", "lo", "mi", "ne", "ra", "su", "ti", "vo", "ze", "qu", "ph", "ar", "en", "or", "ul", "ix"]
COMMON = "the a of to and in is for that with as on by this it be are from or can when each".split()


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _sentence(rng: random.Random, vocab: list[str]) -> str:
    words = [
        rng.choice(COMMON) if rng.random() < 0.4 else rng.choice(vocab) for _ in range(rng.randint(8, 20))
    ]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random, vocab: list[str]) -> str:
    return " ".join(_sentence(rng, vocab) for _ in range(rng.randint(2, 6)))


def _page(rng: random.Random, vocab: list[str], number: int) -> str:
    topic = " ".join(rng.choice(vocab) for _ in range(2)).title()
    lines = [
        "---",
        f"title: {topic} {number}",
        f"sidebar_position: {number % PAGES_PER_FOLDER + 1}",
        f"description: {_sentence(rng, vocab)}",
        f"tags: [{rng.choice(vocab)}, {rng.choice(vocab)}]",
    ]
    if rng.random() < 0.3:
        lines += [
            "learning_objectives:",
            *(f"  - Explain the {rng.choice(vocab)} {rng.choice(vocab)}" for _ in range(2)),
        ]
    lines += ["---", "", f"# {topic} {number}", "", _paragraph(rng, vocab), ""]
    for _ in range(rng.randint(2, 5)):
        verb = rng.choice(["Configuring", "Using", "The", "Why"])
        lines += [f"## {verb} {rng.choice(vocab)} {rng.choice(vocab)}", ""]
        lines += [_paragraph(rng, vocab), ""]
        if rng.random() < 0.5:
            lines += [f"- {_sentence(rng, vocab)}" for _ in range(rng.randint(2, 5))] + [""]
        if rng.random() < 0.4:
            name = rng.choice(vocab)
            lines += [
                "```python",
                f"def {name}(value):",
                f"    return value * {rng.randint(2, 9)}  # {rng.choice(vocab)}",
                "```",
                "",
            ]
        if rng.random() < 0.3:
            lines += [f"### {rng.choice(vocab).title()} details", "", _paragraph(rng, vocab), ""]
        if rng.random() < 0.15:
            lines += [":::tip", "", _sentence(rng, vocab), "", ":::", ""]
    return "\n".join(lines)


def generate_site(root: Path, pages: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 20_000)
    root.mkdir(parents=True, exist_ok=True)
    (root / "docusaurus.config.js").write_text(
        "export default {\n  title: 'Scale',\n  url: 'https://scale.example',\n  baseUrl: '/',\n};\n"
    )
    docs = root / "docs"
    docs.mkdir()
    (docs / "intro.md").write_text(
        "---\nsidebar_position: 1\n---\n\n# Introduction\n\n" + _paragraph(rng, vocab) + "\n"
    )
    for number in range(1, pages):
        folder = docs / f"part-{number // PAGES_PER_FOLDER:04d}"
        if not folder.is_dir():
            folder.mkdir()
            label = " ".join(rng.choice(vocab) for _ in range(2)).title()
            (folder / "_category_.json").write_text(
                json.dumps({"label": label, "position": number // PAGES_PER_FOLDER})
            )
        (folder / f"page-{number:05d}.md").write_text(_page(rng, vocab, number), encoding="utf-8")


def run(pages: int, work: Path, profile: bool) -> dict[str, object]:
    site, data = work / "site", work / "data"
    started = time.perf_counter()
    generate_site(site, pages)
    generated_s = time.perf_counter() - started
    env = os.environ | {"BOOKWISE_EMBEDDING_PROVIDER": "hash", "BOOKWISE_DATA_DIR": str(data)}
    command = [sys.executable]
    if profile:
        command += ["-m", "cProfile", "-s", "cumulative", "-o", str(work / "ingest.prof")]
    command += ["-m", "bookwise.cli", "ingest", str(site), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall_s = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"bookwise ingest exited {done.returncode}")
    out = done.stdout
    report = json.loads(out[out.index("{") :])
    if profile:
        import pstats

        pstats.Stats(str(work / "ingest.prof")).sort_stats("cumulative").print_stats(30)
    step = report.get("suggestions_step") or {}
    row: dict[str, object] = {
        "pages": pages,
        "generate_s": round(generated_s, 1),
        "wall_s": round(wall_s, 1),
        "ingest_s": round(float(report["duration_s"]), 1),
        "suggestions_s": step.get("duration_s"),
        "peak_rss_mb": round(max(peak_kb, before) / 1024),
        "docs": report["docs_processed"],
        "chunks": report["chunks"],
        "errors": len(report["errors"]),
        "suggestions": step.get("kept"),
        "suggestions_pages": step.get("pages"),
        "searches": step.get("searches"),
        "capped": step.get("capped"),
        "switched": report["switched"],
    }
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", nargs="+", type=int, default=[2000])
    parser.add_argument("--profile", action="store_true", help="run the CLI under cProfile")
    parser.add_argument("--keep", type=Path, help="build the sites here (kept) instead of a temp dir")
    args = parser.parse_args()
    for pages in args.pages:
        if args.keep:
            work = args.keep / f"scale-{pages}"
            work.mkdir(parents=True)
            row = run(pages, work, args.profile)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                row = run(pages, Path(tmp), args.profile)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
