"""What is known about an answer's text once it ends, whoever wrote it (the model or the book's own passages).

Apart from ``llm.py`` so that an answer without a model never loads the model's SDK.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Completion:
    """What is known about a streamed answer once it ends (filled in while streaming)."""

    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    attempts: int = 0
    first_token_s: float | None = None  # since the call started, retries included
