"""int8 against fp32 for the query embedder a server runs: speed, and retrieval on every eval set.

Each data dir's live generation carries the ONNX export of its model (``embedder/``). This script
quantizes it dynamically (``onnxruntime.quantization.quantize_dynamic``, int8 weights, activations
quantized at run time), copies the data dir with the int8 model in the export's place, and measures:

- speed: one question at a time, one intra-op thread, fp32 and int8 in turn for each question
  (wall time and CPU time per query), and the cosine of each question's int8 vector to its fp32 one;
- retrieval: ``bookwise eval --json`` on both copies (section R@5 and MRR@10); with ``--answers``
  also the extractive answer figures (``bookwise eval --answers --concurrency 1``).

The index's own vectors (chunks and passages, computed at ingest) stay fp32: only the question is
embedded by the quantized model, as a server with an int8 query embedder would do.

    python scripts/bench_int8.py --set website-plugin/example/questions.jsonl=DIR \\
        --set eval/docusaurus-docs.questions.jsonl=DIR2 ... [--answers] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "backend"))

from bookwise.index.edge.generations import live_generation  # noqa: E402
from bookwise.index.embedders import EXPORTED, OnnxEmbedder, is_export_of  # noqa: E402

BOOKWISE = Path(sys.executable).with_name("bookwise")


def export_dir(data_dir: Path) -> Path:
    generation, manifest, fault = live_generation(data_dir / "index")
    if generation is None or manifest is None:
        raise SystemExit(f"{data_dir}: no live generation ({fault})")
    place = data_dir / "index" / "generations" / generation / EXPORTED
    if not is_export_of(place, manifest.embed_model):
        raise SystemExit(f"{data_dir}: the live generation carries no ONNX export: re-run `bookwise ingest`")
    return place


def int8_copy(data_dir: Path, work: Path) -> Path:
    """A copy of ``data_dir`` whose live generation's export is the int8 quantization of its own."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = work / (data_dir.name + "-int8")
    if not target.exists():
        shutil.copytree(data_dir, target, ignore=shutil.ignore_patterns("embeddings.sqlite*"))
        model = export_dir(target) / "model.onnx"
        model.unlink()  # the copy may share the file with the export cache: never written in place
        quantize_dynamic(export_dir(data_dir) / "model.onnx", model, weight_type=QuantType.QInt8)
    return target


def read_questions(path: Path) -> list[str]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return [row["question"] for row in rows]


def speed(fp32: Path, int8: Path, questions: list[str], runs: int) -> dict[str, Any]:
    embedders = {"fp32": OnnxEmbedder(fp32, threads=1), "int8": OnnxEmbedder(int8, threads=1)}
    wall: dict[str, list[float]] = {name: [] for name in embedders}
    cpu: dict[str, list[float]] = {name: [] for name in embedders}
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in embedders}
    for embedder in embedders.values():
        embedder.embed_query("warm up the session")
    for question in questions:
        for name, embedder in embedders.items():  # in turn: both see the same load
            for run in range(runs):
                started, started_cpu = time.perf_counter(), time.process_time()
                vector = embedder.embed_query(question)
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.process_time() - started_cpu) * 1000)
                if run == 0:
                    vectors[name].append(np.asarray(vector))
    cosines = [float(a @ b) for a, b in zip(vectors["fp32"], vectors["int8"], strict=True)]
    tokens = [embedders["fp32"].count_tokens(q) + 2 for q in questions]  # [CLS] and [SEP]
    out: dict[str, Any] = {"questions": len(questions), "tokens_median": statistics.median(tokens)}
    for name in embedders:
        out[name] = {
            "wall_ms_p50": round(statistics.median(wall[name]), 2),
            "cpu_ms_mean": round(statistics.fmean(cpu[name]), 2),
        }
    out["cosine_min"] = round(min(cosines), 5)
    out["cosine_mean"] = round(statistics.fmean(cosines), 5)
    return out


def model_flops(model: Path, tokens: int) -> dict[str, Any]:
    """The multiply-adds of one embedding of ``tokens`` tokens, counted from the ONNX graph: each
    MatMul by a weight matrix (k × m) costs 2·n·k·m FLOPs; each MatMul of two activations is one of
    attention's two (Q·Kᵀ and scores·V), 2·n²·d each for hidden size d. Everything else (layer norms,
    softmax, GELU, pooling) is linear in n·d and left out: under 1 % here."""
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    weights = {init.name: list(init.dims) for init in graph.initializer}
    per_token, attention, hidden = 0, 0, 0
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        shape = next((weights[name] for name in node.input if name in weights), None)
        if shape is not None and len(shape) == 2:
            per_token += 2 * shape[0] * shape[1]
            hidden = hidden or shape[0]
        else:
            attention += 1
    flops = per_token * tokens + attention * 2 * tokens * tokens * hidden
    return {
        "tokens": tokens,
        "weight_flops_per_token": per_token,
        "attention_matmuls": attention,
        "hidden": hidden,
        "flops": flops,
    }


def matmul_gflops(threads: int, n: int, m: int, k: int, seconds: float = 2.0) -> dict[str, float]:
    """numpy's (OpenBLAS's) float32 matmul throughput, (n × k) @ (k × m), on ``threads`` threads:
    per second of wall time, and per second of CPU time (what one busy core gives, whatever else
    shares the machine)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal((k, m), dtype=np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        a @ b
        done, started, started_cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - started < seconds:
            a @ b
            done += 1
        wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    flops = 2 * n * m * k * done / 1e9
    return {"per_wall_s": round(flops / wall, 1), "per_cpu_s": round(flops / cpu, 1)}


def physical_limit(model: Path, tokens: int) -> dict[str, Any]:
    counted = model_flops(model, tokens)
    counted["numpy_gflops"] = {
        f"{threads} thread{'s' if threads > 1 else ''}, {shape}": matmul_gflops(threads, *dims)
        for threads in (1, 2)
        for shape, dims in (
            ("2048x2048x2048", (2048, 2048, 2048)),
            (f"{tokens}x384x1536", (tokens, 1536, 384)),
        )
    }
    return counted


def _eval(data_dir: Path, questions: Path, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "BOOKWISE_DATA_DIR": str(data_dir), "BOOKWISE_RETRIEVAL_TIMEOUT_S": "120"}
    args = [str(BOOKWISE), "eval", str(questions), "--json", *extra]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: a --min gate, not a failure to measure
        raise SystemExit(f"bookwise eval failed on {questions}:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def evaluate(data_dir: Path, questions: Path, answers: bool) -> dict[str, Any]:
    report = _eval(data_dir, questions)
    figures: dict[str, Any] = {
        "R@5": report["section"]["recall@5"],
        "MRR@10": report["section"]["mrr@10"],
    }
    if answers:  # the extractive answers (no LLM), one at a time as the eval commands on this page run them
        answered = _eval(data_dir, questions, "--answers", "--concurrency", "1", "--no-judge")
        figures["answers"] = {
            name: metric["value"]
            for name, metric in answered["metrics"].items()
            if metric["value"] is not None
        } | {"outcomes": answered["outcomes"]}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", action="append", required=True, metavar="QUESTIONS=DATA_DIR")
    parser.add_argument("--runs", type=int, default=5, help="timed embeddings of each question per model")
    parser.add_argument("--answers", action="store_true", help="also the extractive answer figures")
    parser.add_argument("--work", type=Path, help="where the int8 copies go (default: a temporary folder)")
    parser.add_argument(
        "--limit", action="store_true", help="also the FLOPs of one query and numpy's matmul GFLOP/s here"
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bookwise-int8-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}; int8 copies in {work}", flush=True)
    rows = []
    if args.limit:
        questions_file, data_dir = (Path(part) for part in args.set[0].split("=", 1))
        probe = OnnxEmbedder(export_dir(data_dir))
        tokens = round(statistics.median(probe.count_tokens(q) + 2 for q in read_questions(questions_file)))
        limit = physical_limit(export_dir(data_dir) / "model.onnx", tokens)
        print(json.dumps({"limit": limit, "load": round(os.getloadavg()[0], 1)}), flush=True)
    for spec in args.set:
        questions_file, data_dir = (Path(part) for part in spec.split("=", 1))
        copy = int8_copy(data_dir, work)
        fp32_bytes = (export_dir(data_dir) / "model.onnx").stat().st_size
        int8_bytes = (export_dir(copy) / "model.onnx").stat().st_size
        row: dict[str, Any] = {
            "set": str(questions_file),
            "model_mb": [round(fp32_bytes / 1e6, 1), round(int8_bytes / 1e6, 1)],
            "speed": speed(export_dir(data_dir), export_dir(copy), read_questions(questions_file), args.runs),
            "fp32": evaluate(data_dir, questions_file, args.answers),
            "int8": evaluate(copy, questions_file, args.answers),
            "load": round(os.getloadavg()[0], 1),
        }
        row["R@5_lost"] = round(row["fp32"]["R@5"] - row["int8"]["R@5"], 4)
        print(json.dumps(row), flush=True)
        rows.append(row)
    worst = max(row["R@5_lost"] for row in rows)
    # The R@5 bar alone: MRR, the answers (--answers) and the sets not given here decide too.
    print(f"largest R@5 lost by int8: {worst:+.4f} ({'within' if worst <= 0.01 else 'beyond'} 0.01)")


if __name__ == "__main__":
    main()
