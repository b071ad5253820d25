"""Site adaptation of the local embedder: a short fine-tune of MiniLM on the book's own structure.

Every chunk gives one training pair, (its context line "Title › Section › Heading", its text): the
model learns which passages belong under which headings of *this* book. No questions and no labels
are used, so the same code adapts to any site. With in-batch negatives (the other chunks of the
batch) and one pass over at most ``max_pairs`` pairs this takes a few minutes on two CPU cores and,
on both evaluation corpora, raised MRR@10 by 0.03-0.04 (see docs/benchmarks.md).

The adapted model is saved under ``<data_dir>/models/<name>/`` and named
``all-MiniLM-L6-v2@<digest>``, the digest covering the training pairs and parameters, so the index
manifest names exactly the model its vectors came from. Adaptation runs when an index is built from
scratch (first ingest, ``--reindex``, ``--adapt``); later incremental ingests reuse the same model,
so unchanged chunks are never re-embedded.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookwise.errors import ConfigError
from bookwise.ingest.models import Chunk

BASE_MODEL = "all-MiniLM-L6-v2"
SEPARATOR = "@"
MIN_PAIRS = 8  # below this a book is too small to learn anything from: the shipped model is used
EXPORT_FORMAT = 1  # of the ONNX export below: a change exports every model again


@dataclass(frozen=True)
class AdaptParams:
    max_pairs: int = 3000
    batch_size: int = 32
    learning_rate: float = 2e-5
    max_seq_length: int = 128
    scale: float = 20.0  # cosine → logits temperature of the in-batch softmax
    seed: int = 13


def quiet_transformers() -> None:
    """No "Loading weights" progress bars on stderr when a model loads."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def training_pairs(chunks: Sequence[Chunk], max_pairs: int, seed: int) -> list[tuple[str, str]]:
    """(context line, chunk text) for every chunk with text, sampled down to ``max_pairs``."""
    pairs = sorted(
        {
            (c.embed_text.partition("\n\n")[0], c.text)
            for c in chunks
            if c.text.strip() and "\n\n" in c.embed_text
        }
    )
    rng = random.Random(seed)
    rng.shuffle(pairs)
    return pairs[:max_pairs]


def adapted_name(pairs: Sequence[tuple[str, str]], params: AdaptParams) -> str:
    digest = hashlib.sha256(json.dumps([pairs, params.__dict__], sort_keys=True).encode()).hexdigest()
    return f"{BASE_MODEL}{SEPARATOR}{digest[:12]}"


def is_adapted(model_id: str) -> bool:
    return model_id.startswith(BASE_MODEL + SEPARATOR)


def model_dir(data_dir: Path, model_id: str) -> Path:
    return data_dir / "models" / model_id.partition(SEPARATOR)[2]


def onnx_dir(data_dir: Path, model_id: str) -> Path:
    """Where the ONNX export of ``model_id`` (shipped or adapted MiniLM) is kept between ingests."""
    return data_dir / "models" / "onnx" / (model_id.partition(SEPARATOR)[2] or "base")


def export_onnx(source: str, out_dir: Path, model_id: str) -> None:
    """Export the sentence-transformers model in ``source`` to ``out_dir`` for ONNX Runtime.

    The graph takes the tokenizer's ids, attention mask and token types and gives the mean-pooled,
    L2-normalised embedding, as sentence-transformers computes it; the tokenizer and a small
    description travel with it, so serving needs neither PyTorch nor the model's package.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    quiet_transformers()
    model: Any = SentenceTransformer(source, device="cpu")
    encoder = _pooled(model[0].auto_model).eval()
    dim = int(model.get_embedding_dimension())
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    sample = torch.ones(2, 8, dtype=torch.long)
    inputs = ["input_ids", "attention_mask", "token_type_ids"]
    # The TorchScript exporter is deprecated for the dynamo one, whose graphs were not measured here;
    # its tracer warns about the shape arithmetic of the attention mask, which the dynamic axes cover.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            encoder,
            (sample, sample, torch.zeros_like(sample)),
            str(tmp / "model.onnx"),
            input_names=inputs,
            output_names=["embedding"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in inputs} | {"embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,  # the TorchScript exporter: measured to give the same vectors
        )
    shutil.copyfile(Path(source) / "tokenizer.json", tmp / "tokenizer.json")
    meta = {
        "model_id": model_id,
        "dim": dim,
        "max_seq_length": int(model.max_seq_length),
        "format": EXPORT_FORMAT,
    }
    (tmp / "embedder.json").write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.replace(out_dir)  # a half-written export is never found under its name


def _pooled(encoder: Any) -> Any:
    """The transformer followed by sentence-transformers' mean pooling and normalisation."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            hidden = self.encoder(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    return Pooled()


def adapt(base_path: str, pairs: Sequence[tuple[str, str]], out_dir: Path, params: AdaptParams) -> None:
    """Fine-tune the base model on ``pairs`` (in-batch negatives) and save it to ``out_dir``."""
    if len(pairs) < MIN_PAIRS:
        raise ConfigError(f"too little text to adapt the embedder to (fewer than {MIN_PAIRS} chunks)")
    import torch
    from sentence_transformers import SentenceTransformer

    quiet_transformers()
    torch.manual_seed(params.seed)
    model: Any = SentenceTransformer(base_path, device="cpu")
    model.max_seq_length = params.max_seq_length
    optimizer = torch.optim.AdamW(model.parameters(), lr=params.learning_rate)
    model.train()
    for start in range(0, len(pairs), params.batch_size):
        batch, anchors = [], set()
        for anchor, text in pairs[start : start + params.batch_size]:
            if anchor not in anchors:  # two chunks of one section in a batch would be false negatives
                anchors.add(anchor)
                batch.append((anchor, text))
        if len(batch) < 2:
            continue
        queries = model(model.preprocess([a for a, _ in batch]))["sentence_embedding"]
        passages = model(model.preprocess([t for _, t in batch]))["sentence_embedding"]
        logits = (
            torch.nn.functional.normalize(queries, dim=-1) @ torch.nn.functional.normalize(passages, dim=-1).T
        ) * params.scale
        labels = torch.arange(len(batch))
        loss = (
            torch.nn.functional.cross_entropy(logits, labels)
            + torch.nn.functional.cross_entropy(logits.T, labels)
        ) / 2
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    model.eval()
    model.max_seq_length = 256
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    model.save(str(tmp))
    tmp.replace(out_dir)  # a half-written model is never found under its name
