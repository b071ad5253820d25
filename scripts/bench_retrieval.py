"""Retrieval latency at scale: embedded hybrid search p50/p95 at 5k and 50k chunks (2 cores).

    python scripts/bench_retrieval.py --data-dir DIR [--sizes 5000 50000] [--queries N]

DIR holds an index ingested with the local embedder, e.g. redux:

    BOOKWISE_DATA_DIR=DIR bookwise ingest ../shared/corpora/redux --base-url / --route-base-path /

Its chunks are copied, with their vectors slightly perturbed and ids, sections and pages renamed
per copy, until the index reaches each size; every size is written through the real Edge backend
(HNSW built, payload indexes) and queried with the questions in ``--questions`` files. Reported:

* ``hybrid``: the Qdrant query alone (both prefetches, RRF fusion, channel scores);
* ``retrieve``: the whole Retriever.search without the query embedding (hybrid, grouping, fetching
  sections, small-to-big assembly, sufficiency);
* ``embed``: the query embedding alone (MiniLM on CPU), reported separately.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from bookwise.evaluation.retrieval import load_questions
from bookwise.index.edge.store import EdgeStore
from bookwise.index.embedders import create_embedder
from bookwise.index.sparse import Bm25Encoder, SparseVector
from bookwise.index.store import HybridQuery, IndexManifest, IndexPoint
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings

DEFAULT_QUESTIONS = [
    Path("../shared/corpora/redux/questions.jsonl"),
    Path("eval/redux-extra.questions.jsonl"),
]


def read_points(data_dir: Path) -> tuple[IndexManifest, list[IndexPoint]]:
    store = EdgeStore(data_dir)
    manifest = store.live_manifest()
    if manifest is None:
        raise SystemExit(f"no index in {data_dir}: ingest a corpus there first")
    shard = qe.EdgeShard.load(str(store.root / "generations" / manifest.generation / "shard"))
    points: list[IndexPoint] = []
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            qe.ScrollRequest(offset=offset, limit=1000, with_payload=True, with_vector=True)
        )
        for r in records:
            vectors: Any = r.vector
            sparse = vectors["bm25"]
            points.append(
                IndexPoint(
                    str(r.id),
                    list(vectors["dense"]),
                    SparseVector(list(sparse.indices), list(sparse.values)),
                    dict(r.payload or {}),
                )
            )
        if offset is None:
            break
    shard.close()
    return manifest, points


def scaled(points: Sequence[IndexPoint], size: int, seed: int = 13) -> Iterator[IndexPoint]:
    """``size`` points: the originals, then perturbed copies renamed so no two sections collide."""
    rng = random.Random(seed)
    for n in range(size):
        copy, base = divmod(n, len(points))
        point = points[base]
        if copy == 0:
            yield point
            continue
        noisy = [v + rng.gauss(0.0, 0.02) for v in point.dense]
        norm = sum(v * v for v in noisy) ** 0.5
        payload = dict(point.payload)
        payload["doc_path"] = f"copy-{copy}/{payload['doc_path']}"
        payload["section_id"] = f"{payload['section_id']}-{copy}"
        payload["url"] = f"/copy-{copy}{payload['url']}"
        payload["text"] = f"{payload['text']} (copy {copy})"  # distinct text: not deduplicated away
        yield IndexPoint(
            str(uuid.uuid5(uuid.NAMESPACE_URL, f"{point.id}/{copy}")),
            [v / norm for v in noisy],
            point.sparse,
            payload,
        )


class Precomputed:
    """The configured embedder's identity with vectors computed beforehand (embedding excluded)."""

    def __init__(self, model_id: str, dim: int, vectors: dict[str, list[float]], counter: Any) -> None:
        self.model_id, self.dim, self._vectors = model_id, dim, vectors
        self.max_input_tokens = 256
        self.count_tokens = counter

    def embed_query(self, text: str) -> list[float]:
        return self._vectors[" ".join(text.split())]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50": round(pick(0.5), 2),
        "p95": round(pick(0.95), 2),
        "mean": round(statistics.fmean(ordered), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--questions", type=Path, nargs="+", default=DEFAULT_QUESTIONS)
    parser.add_argument("--queries", type=int, default=300, help="timed queries per size")
    args = parser.parse_args()

    settings = Settings(data_dir=args.data_dir)
    manifest, points = read_points(args.data_dir)
    embedder = create_embedder(settings, model=manifest.embed_model)  # the site-adapted model, if any
    texts = [" ".join(q.query.split()) for path in args.questions for q in load_questions(path)]
    embedder.embed_query("warm up")
    embed_ms, vectors = [], {}
    for text in texts:
        started = time.perf_counter()
        vectors[text] = embedder.embed_query(text)
        embed_ms.append((time.perf_counter() - started) * 1000)
    sparse = Bm25Encoder()
    rows: list[dict[str, Any]] = [{"stage": "embed (MiniLM, CPU)", "chunks": "-", **percentiles(embed_ms)}]
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            data_dir = Path(tmp)
            store = EdgeStore(data_dir)
            started = time.perf_counter()
            store.write_generation(
                IndexManifest.from_dict(manifest.summary() | {"generation": f"bench-{size}"}),
                scaled(points, size),
            )
            build_s = time.perf_counter() - started
            store.close()
            scaled_settings = settings.model_copy(update={"data_dir": data_dir})
            reader = EdgeStore(data_dir).open_reader()
            retriever = Retriever(
                scaled_settings,
                reader,
                Precomputed(manifest.embed_model, manifest.dim, vectors, embedder.count_tokens),  # type: ignore[arg-type]
            )
            hybrid_ms, retrieve_ms = [], []
            for n in range(args.queries + 20):
                text = texts[n % len(texts)]
                query = HybridQuery(
                    vectors[text],
                    sparse.query(text),
                    limit=settings.retrieval_candidates,
                    prefetch=settings.retrieval_prefetch,
                    rrf_k=settings.retrieval_rrf_k,
                )
                started = time.perf_counter()
                reader.hybrid(query)
                hybrid = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                retriever.search(text)
                retrieve = (time.perf_counter() - started) * 1000
                if n >= 20:  # warm-up queries are not counted
                    hybrid_ms.append(hybrid)
                    retrieve_ms.append(retrieve)
            retriever.close()
            rows.append({"stage": "hybrid (Qdrant Edge)", "chunks": size, **percentiles(hybrid_ms)})
            rows.append({"stage": "retrieve (no embedding)", "chunks": size, **percentiles(retrieve_ms)})
            rows[-1]["build_s"] = round(build_s, 1)
    print(json.dumps(rows, indent=2))
    print(f"\n{'stage':26} {'chunks':>7} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for row in rows:
        print(
            f"{row['stage']:26} {row['chunks']!s:>7} {row['p50']:8.2f} {row['p95']:8.2f} {row['mean']:8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
