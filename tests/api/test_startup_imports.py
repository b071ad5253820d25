"""`bookwise serve` and `bookwise ingest` start in a fresh process, and every test that runs one waits
for it: what they import but do not use on the default setup (the embedded store, no Redis, the hash
or an API embedder, no chat model) stays unimported. qdrant-client alone took seconds, for the server
store only; the openai SDK a second, for a configured model or the API embedder only; the MCP SDK a
second, until an agent first calls `/mcp`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apiserver import cli_env

UNUSED_BY_DEFAULT = ("qdrant_client", "redis", "torch", "sentence_transformers", "openai", "mcp")


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


# Run in a fresh interpreter: starts the app, then calls /mcp twice (argv: the tests folder).
MCP_PROBE = """
import json, sys
import httpx
sys.path.insert(0, sys.argv[1])
from servers import serve_in_thread
from bookwise.api.app import create_app
from bookwise.settings import Settings

client = {"name": "probe", "version": "1"}
params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
with serve_in_thread(create_app(Settings())) as url:
    at_start = "mcp" in sys.modules
    answers = [httpx.post(url + "/mcp", json=initialize, headers=headers, timeout=60) for _ in range(2)]
    statuses = [answer.status_code for answer in answers]
    print(json.dumps([at_start, "mcp" in sys.modules, statuses, "serverInfo" in answers[1].text]))
"""


def test_a_served_app_loads_the_mcp_sdk_on_the_first_mcp_request_and_answers_it(tmp_path: Path) -> None:
    tests = str(Path(__file__).resolve().parents[1])
    run = subprocess.run(
        [sys.executable, "-c", MCP_PROBE, tests],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.splitlines()[-1]) == [False, True, [200, 200], True]
