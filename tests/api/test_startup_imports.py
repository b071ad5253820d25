"""`bookwise serve` and `bookwise ingest` start in a fresh process, and every test that runs one waits
for it: what they import but do not use on the default setup (the embedded store, no Redis, the hash
or an API embedder, no chat model) stays unimported. qdrant-client alone took seconds, for the server
store only; the openai SDK a second, for a configured model or the API embedder only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from apiserver import cli_env

UNUSED_BY_DEFAULT = ("qdrant_client", "redis", "torch", "sentence_transformers", "openai")


def test_the_app_and_the_ingest_import_no_server_store_redis_model_sdk_or_local_model_library(
    tmp_path: Path,
) -> None:
    probe = (
        "import sys, bookwise.api.app, bookwise.api.server, bookwise.index.build, bookwise.cli\n"
        f"print(' '.join(m for m in {UNUSED_BY_DEFAULT!r} if m in sys.modules))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], env=cli_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == []
