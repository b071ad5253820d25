"""How many threads ONNX Runtime should give one question's embedding: wall and CPU time per
question, one at a time and in batches of 8 (concurrent readers' questions share a batch), for each
thread count, with the index's own exported model and an eval set's questions.

    python scripts/bench_embed_threads.py --data-dir .bookwise/demo \
        --questions website-plugin/example/questions.jsonl [--threads 0,1,2] [--runs 5]

Thread counts take turns question by question, so the machine's other load falls on each alike;
give `uptime`'s load beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_int8 import export_dir, read_questions
from bookwise.index.embedders import OnnxEmbedder


def measure(model: Path, questions: list[str], thread_counts: list[int], runs: int) -> dict[str, object]:
    embedders = {threads: OnnxEmbedder(model, threads=threads) for threads in thread_counts}
    for embedder in embedders.values():
        embedder.embed_documents(["warm up the session"] * 8)
    batches = [questions[i : i + 8] for i in range(0, len(questions) - 7, 8)]
    wall: dict[tuple[int, int], list[float]] = {}
    cpu: dict[tuple[int, int], list[float]] = {}
    for size, groups in ((1, [[q] for q in questions]), (8, batches)):
        for group in groups:
            for threads, embedder in embedders.items():  # in turn: each sees the same load
                for _ in range(runs):
                    started, started_cpu = time.perf_counter(), time.process_time()
                    embedder.embed_documents(group)
                    per = 1000 / len(group)
                    wall.setdefault((threads, size), []).append((time.perf_counter() - started) * per)
                    cpu.setdefault((threads, size), []).append((time.process_time() - started_cpu) * per)
    return {
        f"threads {threads}, batch {size}": {
            "wall_ms_per_question_p50": round(statistics.median(wall[threads, size]), 2),
            "cpu_ms_per_question_mean": round(statistics.fmean(cpu[threads, size]), 2),
        }
        for threads, size in wall
    }


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--data-dir", type=Path, required=True, help="an ingested index (BOOKWISE_DATA_DIR)")
    parser.add_argument("--questions", type=Path, required=True, help="an eval set (JSON lines)")
    parser.add_argument("--threads", default="0,1,2", help="comma-separated thread counts (0: ONNX's own)")
    parser.add_argument("--runs", type=int, default=5, help="timed embeddings of each question or batch")
    args = parser.parse_args()
    result = measure(
        export_dir(args.data_dir),
        read_questions(args.questions),
        [int(t) for t in args.threads.split(",")],
        args.runs,
    )
    print(json.dumps({"cores": os.cpu_count(), "load": os.getloadavg()[0], **result}, indent=2))


if __name__ == "__main__":
    main()
