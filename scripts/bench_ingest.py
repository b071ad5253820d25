"""Ingest benchmark: full ingest time and chunks/s per corpus, then a re-ingest after changing one file.

    python scripts/bench_ingest.py [--provider local|hash] [CORPUS_DIR ...]

Each corpus is copied to a temporary folder (the originals stay read-only), ingested into a fresh
data dir with the URL settings from its ``site.json``, ingested again unchanged, then once more
after one paragraph of one file changed. With the local provider the full ingest includes adapting
the embedder to the corpus (``adapt_s``); the re-ingests reuse the adapted model. Each ingest computes
the passage vectors the generation carries, as ``bookwise ingest`` does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bookwise.ingest.site import read_site_config
from bookwise.retrieval.book_ingest import ingest_book
from bookwise.settings import Settings

DEFAULT_CORPORA = [Path("../shared/corpora/redux"), Path("../shared/corpora/docusaurus-docs")]


def site_for(copy: Path):  # type: ignore[no-untyped-def]
    meta = json.loads((copy / "site.json").read_text())
    return read_site_config(copy).with_overrides(
        url=meta.get("url"),
        base_url=meta.get("baseUrl"),
        docs_path=meta.get("docs_dir"),
        route_base_path=meta.get("routeBasePath"),
    )


def ingest(settings: Settings, site):  # type: ignore[no-untyped-def]
    """An ingest as ``bookwise ingest`` runs it, with the passage vectors the generation carries."""
    return ingest_book(settings, site)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpora", nargs="*", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--provider", default="local", choices=["local", "hash"])
    args = parser.parse_args()
    rows = []
    for corpus in args.corpora:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / corpus.name
            shutil.copytree(corpus, copy)
            settings = Settings(data_dir=Path(tmp) / "data", embedding_provider=args.provider)
            site = site_for(copy)
            t0 = time.perf_counter()
            full = ingest(settings, site)
            full_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = ingest(settings, site)
            again_s = time.perf_counter() - t0
            target = max((copy / "docs").rglob("*.md*"), key=lambda p: p.stat().st_size)
            text = target.read_text(encoding="utf-8")
            cut = text.find("\n\n", len(text) // 2)
            target.write_text(
                text[:cut] + "\n\nA paragraph added by the benchmark." + text[cut:], encoding="utf-8"
            )
            t0 = time.perf_counter()
            changed = ingest(settings, site)
            changed_s = time.perf_counter() - t0
            rows.append(
                {
                    "corpus": corpus.name,
                    "docs": full.docs_processed,
                    "chunks": full.chunks,
                    "errors": len(full.errors),
                    "full_s": round(full_s, 2),
                    "adapt_s": full.adapt_s and round(full.adapt_s, 1),  # included in full_s
                    "chunks_per_s": round(full.chunks / full_s, 1),
                    "unchanged_s": round(again_s, 2),
                    "unchanged_embedded": again.index.embedded,
                    "one_file_s": round(changed_s, 2),
                    "one_file_embedded": changed.index.embedded,
                    "one_file_pct_of_full": round(100 * changed_s / full_s, 1),
                    "changed_file": target.relative_to(copy).as_posix(),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    print(
        f"\n{'corpus':<16} {'docs':>5} {'chunks':>6} {'err':>4} {'full s':>7} {'chunks/s':>9} "
        f"{'2nd run s':>9} {'emb':>4} {'1 file s':>8} {'emb':>4} {'% full':>6}"
    )
    for r in rows:
        print(
            f"{r['corpus']:<16} {r['docs']:>5} {r['chunks']:>6} {r['errors']:>4} {r['full_s']:>7} "
            f"{r['chunks_per_s']:>9} {r['unchanged_s']:>9} {r['unchanged_embedded']:>4} "
            f"{r['one_file_s']:>8} {r['one_file_embedded']:>4} {r['one_file_pct_of_full']:>6}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
