"""The test harness itself: command-line paths mean what they say, and every test that needs Chromium,
a Docusaurus build or an external service carries its mark, so `-m "not ..."` leaves it out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from apiserver import running, serving_process
from nginx import free_port

ROOT = Path(__file__).resolve().parents[1]


def collected(*arguments: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode in (0, 5), run.stdout[-3000:] + run.stderr[-2000:]  # 5: none collected
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_a_relative_ignore_is_honoured_although_the_tests_run_in_another_folder() -> None:
    ids = collected("tests/insights", "--ignore=tests/insights/test_store.py")
    assert any(i.startswith("tests/insights/test_log.py::") for i in ids)
    assert not [i for i in ids if i.startswith("tests/insights/test_store.py::")]


def test_a_docusaurus_build_and_postgres_are_marked_without_a_mark_in_the_test() -> None:
    everything = ["tests/test_docusite_helper.py", "tests/insights/test_store.py"]
    unmarked = "not docusaurus and not services"
    ids = collected(*everything)
    assert [i for i in ids if "test_docusite_helper" in i] and [i for i in ids if "[postgres]" in i]
    kept = collected(*everything, "-m", unmarked)
    assert kept and not [i for i in kept if "test_docusite_helper" in i or "[postgres]" in i]


def test_the_marks_are_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0].split("(")[0] for line in pytestconfig.getini("markers")}
    assert registered >= {"browser", "docusaurus", "postgres", "redis", "nginx", "podman", "services"}


def test_a_test_that_writes_into_its_working_directory_fails(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "from pathlib import Path\n\n\n"
        "def test_leaves_a_file_behind() -> None:\n"
        '    Path("left-behind.txt").write_text("x")\n'
    )
    # The suite's conftest as a plugin, for a test outside the suite. A temporary folder of its own:
    # pytest's default one would delete the oldest of the shared numbered folders, the gigabytes an
    # earlier run's venvs and sites left there (92 s of this test in one run).
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), f"--basetemp={tmp_path / 'tmp'}",
         str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert "wrote into its working directory: ['left-behind.txt']" in run.stdout
    assert "1 passed, 1 error" in run.stdout


def test_a_served_command_is_stopped_with_the_server_it_started_regression(tmp_path: Path) -> None:
    """`npm run serve` runs the site's server under npm: stopping npm alone left `docusaurus serve`
    running after every owner's-path test."""
    port = free_port()
    child = tmp_path / "server.pid"
    server = f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    command = ["sh", "-c", f"{server} & echo $! > {child}; wait"]
    url, log = f"http://127.0.0.1:{port}", tmp_path / "log"
    with serving_process(command, cwd=tmp_path, env=dict(os.environ), url=url, log=log, path="/"):
        pid = int(child.read_text())
        assert running(pid)
    assert not running(pid)


class _Worker:
    """What `example_indexed_once` uses of pytest's temporary-folder factory, for one xdist worker."""

    def __init__(self, run: Path, name: str) -> None:
        self.base = run / f"popen-{name}"
        self.base.mkdir(parents=True)

    def getbasetemp(self) -> Path:
        return self.base

    def mktemp(self, name: str) -> Path:
        made = self.base / f"{name}0"
        made.mkdir()
        return made


def test_the_example_is_indexed_once_per_run_and_each_process_serves_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    import examplesite

    ingests: list[Path] = []

    def ingest(data_dir: Path, build_dir: Path) -> None:
        ingests.append(data_dir)
        time.sleep(0.3)  # long enough for the other worker to reach the lock meanwhile
        data_dir.mkdir(parents=True)
        (data_dir / "index").write_text("built", encoding="utf-8")

    monkeypatch.setattr(examplesite, "index_example_locally", ingest)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    run = tmp_path / "pytest-7"
    workers = [_Worker(run, "gw0"), _Worker(run, "gw1")]
    served: list[Path] = []
    threads = [
        threading.Thread(
            target=lambda w=w: served.append(examplesite.example_indexed_once(w, tmp_path).data_dir)
        )
        for w in workers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(ingests) == 1
    assert len(served) == 2 and served[0] != served[1]
    assert all(path.is_relative_to(w.base) for path, w in zip(sorted(served), workers, strict=True))
    assert all((path / "index").read_text(encoding="utf-8") == "built" for path in served)


def test_the_long_setups_are_spread_through_the_run_not_started_together_or_left_to_the_end() -> None:
    """scripts/test takes the modules in this order: each long setup (a user's whole path) starts after a
    stretch of other modules, the first one first, and the last minutes are short modules."""
    modules = {f"tests/m{i}.py": 40 - i for i in range(20)} | dict.fromkeys(conftest.LONG_SETUPS, 3)
    ordered = conftest.module_order(modules)
    assert sorted(ordered) == sorted(modules)
    at = [ordered.index(module) for module in conftest.LONG_SETUPS]
    assert at[0] == 0 and at == sorted(at)
    gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
    assert min(gaps) >= 4 and at[-1] < len(ordered) - 4
    rest = [m for m in ordered if m not in conftest.LONG_SETUPS]
    assert rest == sorted(rest, key=lambda m: -modules[m])  # the others as pytest-xdist orders them
    assert all((Path(conftest.__file__).parent.parent / module).is_file() for module in conftest.LONG_SETUPS)
