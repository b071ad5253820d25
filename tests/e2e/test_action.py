"""The CI action (action.yml) run as a GitHub runner runs it: its `run:` steps in bash, inputs as
environment, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, the site as working directory.

Skipped: `actions/setup-python` (a `uses:` step) and the pip install step; Bookwise comes from this
checkout's .venv, first on PATH. Target server: a real Bookwise server on loopback with an admin
token. Target qdrant: no Qdrant server binary exists on the test machines, so the URL is qdrant-
client's in-process `:memory:` (the ingest runs against it end to end, and the URL and key reach
Bookwise), and an unreachable URL must fail the step clearly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import local_http
from apiserver import BOOK, build_book, running_api
from bookwise.settings import Settings
from examplesite import EXAMPLE_SITE, build_example

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
TOKEN = "action-admin-token-0123456789"
SHA = "0123456789abcdef0123456789abcdef01234567"
_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


@dataclass
class Run:
    failed_step: str | None
    outputs: dict[str, dict[str, str]]  # step id → its outputs
    summary: str
    logs: str

    def output(self, name: str) -> str:
        """An output of the action, as action.yml's `outputs` compute it (`a || b`)."""
        expression = _EXPR.fullmatch(ACTION["outputs"][name]["value"])
        assert expression is not None
        for alternative in expression.group(1).split("||"):
            _, step, _, key = alternative.strip().split(".")
            if self.outputs.get(step, {}).get(key):
                return self.outputs[step][key]
        return ""


def _inputs(given: dict[str, str]) -> dict[str, str]:
    unknown = set(given) - set(ACTION["inputs"])
    assert not unknown, f"not inputs of action.yml: {unknown}"
    return {name: given.get(name, str(spec.get("default", ""))) for name, spec in ACTION["inputs"].items()}


def _evaluate(text: str, inputs: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name.startswith("inputs."), f"the test only knows inputs.*, not {name}"
        return inputs[name.removeprefix("inputs.")]

    return _EXPR.sub(one, text)


def _condition(condition: str | None, inputs: dict[str, str]) -> bool:
    if condition is None:
        return True
    found = re.fullmatch(r"inputs\.([\w-]+) == '([^']*)'", condition.strip())
    assert found is not None, f"the test cannot evaluate `if: {condition}`"
    return inputs[found.group(1)] == found.group(2)


def _read_outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def run_action(workspace: Path, tmp: Path, given: dict[str, str], env: dict[str, str]) -> Run:
    inputs = _inputs(given)
    temp = tmp / "runner-temp"
    temp.mkdir(exist_ok=True)
    summary = tmp / "step-summary.md"
    summary.write_text("")
    outputs: dict[str, dict[str, str]] = {}
    logs = []
    for step in ACTION["runs"]["steps"]:
        if "uses" in step or step.get("id") == "install":
            continue
        if not _condition(step.get("if"), inputs):
            continue
        output = tmp / f"output-{step['id']}"
        output.write_text("")
        step_env = {
            **os.environ,
            **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_SHA": SHA,
            "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_TEMP": str(temp),
            **{name: _evaluate(str(value), inputs) for name, value in step.get("env", {}).items()},
        }
        assert step["shell"] == "bash"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        logs.append(done.stdout + done.stderr)
        outputs[step["id"]] = _read_outputs(output)
        if done.returncode != 0:
            return Run(step["id"], outputs, summary.read_text(), "\n".join(logs))
    return Run(None, outputs, summary.read_text(), "\n".join(logs))


def _site(root: Path) -> Path:
    for relative, content in BOOK.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


HASH_ENV = {"BOOKWISE_EMBEDDING_PROVIDER": "hash", "BOOKWISE_SUGGESTED_QUESTIONS": "0"}


@pytest.fixture
def server(tmp_path: Path) -> Any:
    settings: Settings = build_book(tmp_path / "server", admin_token=TOKEN)
    with running_api(settings) as url:
        yield url, settings


def _ready(url: str) -> dict[str, Any]:
    ready: dict[str, Any] = local_http.get(f"{url}/api/ready", timeout=30).json()
    return ready


def test_target_server_installs_the_index_and_a_doc_change_updates_it(tmp_path: Path, server: Any) -> None:
    url, settings = server
    workspace = _site(tmp_path / "docs-repo")
    before = _ready(url)["index_version"]
    given = {
        "target": "server",
        "manifest": "",
        "server-url": url,
        "admin-token": TOKEN,
        "data-dir": str(tmp_path / "ci-data"),
    }

    first = run_action(workspace, tmp_path, given, HASH_ENV)

    assert first.failed_step is None, first.logs
    version = first.output("index-version")
    assert version and version != before
    assert _ready(url)["index_version"] == version
    assert json.loads(Path(first.output("report")).read_text())["generation"] == version
    assert "| docs | 3 processed, 0 skipped |" in first.summary
    assert "Installed on the Bookwise server" in first.summary and version in first.summary
    assert TOKEN not in first.logs and TOKEN not in first.summary
    manifest = json.loads(
        (settings.data_dir / "index" / "generations" / version / "manifest.json").read_text()
    )
    assert manifest["docs_commit"] == SHA

    page = workspace / "docs/care/feeding.md"
    page.write_text(page.read_text() + "\n## Night feed\n\nAt night quokkas sleep and need no food.\n")
    second = run_action(workspace, tmp_path, given, HASH_ENV)

    assert second.failed_step is None, second.logs
    assert second.output("index-version") not in ("", version)
    assert _ready(url)["index_version"] == second.output("index-version")
    assert "1 updated" in second.summary or "1 created" in second.summary


def test_the_example_book_with_its_build_manifest_and_strict(tmp_path: Path, server: Any) -> None:
    """The documented use: after the site build, with the plugin's manifest (the default) and strict."""
    build_example()
    workspace = tmp_path / "docs-repo"  # a copy: the ingest writes llms.txt into the build it checks
    shutil.copytree(EXAMPLE_SITE, workspace, ignore=shutil.ignore_patterns("node_modules", ".docusaurus"))
    url, _ = server

    run = run_action(
        workspace, tmp_path, {"target": "server", "server-url": url, "admin-token": TOKEN}, HASH_ENV
    )

    assert run.failed_step is None, run.logs
    assert _ready(url)["index_version"] == run.output("index-version")
    assert "| build manifest | 8/8 docs and" in run.summary and "### Errors" not in run.summary


def test_a_failing_ingest_fails_the_step_and_publishes_nothing(tmp_path: Path, server: Any) -> None:
    url, _ = server
    workspace = _site(tmp_path / "docs-repo")
    (workspace / "docs/broken.md").write_text("---\ntitle: [unclosed\n---\n\n# Broken\n")
    before = _ready(url)["index_version"]

    run = run_action(
        workspace,
        tmp_path,
        {"target": "server", "manifest": "", "server-url": url, "admin-token": TOKEN},
        HASH_ENV,
    )

    assert run.failed_step == "ingest"
    assert "publish" not in run.outputs
    assert "docs/broken.md" in run.summary and "front_matter_invalid" in run.summary
    assert "Nothing was published" in run.summary
    assert "not switched: `--strict` found errors" in run.summary  # nor in the job's own data dir
    assert _ready(url)["index_version"] == before


def test_a_refused_upload_fails_the_step_with_the_servers_reason(tmp_path: Path, server: Any) -> None:
    url, _ = server
    before = _ready(url)["index_version"]
    run = run_action(
        _site(tmp_path / "docs-repo"),
        tmp_path,
        {"target": "server", "manifest": "", "server-url": url, "admin-token": "not-the-token-0123456789"},
        HASH_ENV,
    )
    assert run.failed_step == "publish"
    assert "`unauthorized`" in run.summary and "live index is unchanged" in run.summary
    assert _ready(url)["index_version"] == before


def test_target_qdrant_ingests_through_the_url_and_key(tmp_path: Path) -> None:
    run = run_action(
        _site(tmp_path / "docs-repo"),
        tmp_path,
        {"target": "qdrant", "manifest": "", "qdrant-url": ":memory:", "qdrant-api-key": "secret-key-42"},
        HASH_ENV,
    )
    assert run.failed_step is None, run.logs
    assert "publish" not in run.outputs  # nothing is uploaded: the Qdrant server is the index
    assert run.output("index-version").endswith(SHA[:12])  # the docs commit names the generation
    assert "| docs | 3 processed" in run.summary
    assert not (tmp_path / "runner-temp" / "bookwise-data" / "index" / "CURRENT").exists()


def test_target_qdrant_unreachable_fails_clearly(tmp_path: Path) -> None:
    run = run_action(
        _site(tmp_path / "docs-repo"),
        tmp_path,
        {"target": "qdrant", "manifest": "", "qdrant-url": "http://127.0.0.1:9", "qdrant-api-key": "k"},
        HASH_ENV | {"BOOKWISE_QDRANT_TIMEOUT_S": "2"},
    )
    assert run.failed_step == "ingest"
    assert "store_unavailable" in run.summary and "Qdrant is unreachable" in run.summary
    assert "index-version" not in run.outputs["ingest"]  # no version: nothing was written


@pytest.mark.parametrize("given", [{"target": "elsewhere"}, {"target": "qdrant"}])
def test_bad_inputs_fail_before_anything_runs(tmp_path: Path, given: dict[str, str]) -> None:
    run = run_action(_site(tmp_path / "docs-repo"), tmp_path, given, HASH_ENV)
    assert run.failed_step == "ingest" and "::error::" in run.logs
