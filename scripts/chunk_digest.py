"""A digest of every chunk a site ingests to: one line per chunk, then one line for the whole corpus.

    PYTHONPATH=backend python scripts/chunk_digest.py [--provider local|hash] [--summary] SITE_DIR ...

Each chunk's line is ``doc_path  chunk_index  sha256`` of its id, text, embedding text and payload
(JSON, keys sorted); the last line per site is ``SITE  chunks  errors  sha256`` over all of them and
the ingest's reported problems. Nothing is embedded or written: the site is parsed and chunked with the
settings ``bookwise ingest`` uses and the token counter of the configured embedder (the local
tokenizer by default, as a real ingest). A ``site.json`` beside the docs (the shared corpora) sets the
URL options, as in ``scripts/bench_ingest.py``.

Run it before and after a change to the parser or the chunker, and diff the outputs: identical lines
mean byte-identical chunks; a differing line names the page.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path

from bookwise.index.build import chunking_params
from bookwise.index.embedders import create_embedder
from bookwise.ingest.pipeline import ingest_site
from bookwise.ingest.site import SiteConfig, read_site_config
from bookwise.settings import Settings


def site_config(site_dir: Path) -> SiteConfig:
    meta_file = site_dir / "site.json"
    if not meta_file.is_file():
        return read_site_config(site_dir)
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    return read_site_config(site_dir).with_overrides(
        url=meta.get("url"),
        base_url=meta.get("baseUrl"),
        docs_path=meta.get("docs_dir"),
        route_base_path=meta.get("routeBasePath"),
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sites", nargs="+", type=Path)
    parser.add_argument("--provider", default="local", choices=["local", "hash"], help="token counter")
    parser.add_argument("--summary", action="store_true", help="only the line per site")
    args = parser.parse_args()
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), embedding_provider=args.provider, _env_file=None)  # type: ignore[call-arg]
    counter = create_embedder(settings)
    params = chunking_params(settings, counter)
    for site_dir in args.sites:
        result = ingest_site(site_config(site_dir), params, max_file_bytes=settings.max_file_bytes)
        total = hashlib.sha256()
        for chunk in result.chunks:
            record = json.dumps(
                [chunk.id, chunk.text, chunk.embed_text, chunk.payload], sort_keys=True, ensure_ascii=False
            )
            digest = hashlib.sha256(record.encode()).hexdigest()
            total.update(digest.encode())
            if not args.summary:
                print(f"{chunk.payload['doc_path']}  {chunk.chunk_index}  {digest}")
        for problem in [*result.errors, *result.skipped]:
            total.update(json.dumps(problem.to_dict(), sort_keys=True).encode())
        print(f"{site_dir}  {len(result.chunks)}  {len(result.errors)}  {total.hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
