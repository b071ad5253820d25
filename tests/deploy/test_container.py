"""The Dockerfile built and run for real: ingest the example book into a volume, serve, answer over SSE.

No container registry is reachable here, so the image's base is made from Debian's packages (mmdebstrap:
bookworm with python3 and python3-venv, as a site owner's `python:3.11-slim` has them) and imported into
podman once; later runs reuse it (`podman image exists`). The image is built with
`podman build --isolation chroot` and its layer cache, so a warm run rebuilds only what changed. The
build installs from the same package indexes as this machine: pip's own configuration files, and the
local folders and CA bundle they name, are mounted read-only into the build steps, never copied into
the image. Containers run with runc and explicit ulimits (crun cannot set them here).

Needs root: podman builds and runs rootful here, and the tools come from Debian's packages
(scripts/setup-test-deps installs them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import local_http
from apiserver import parse_sse
from docusite import file_lock
from examplesite import EXAMPLE_SITE, MANIFEST_NAME, build_example
from nginx import free_port

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("podman", "buildah", "mmdebstrap", "runc")
APT_INSTALL = "apt-get install -y --no-install-recommends podman buildah mmdebstrap runc"
BASE_PACKAGES = ("ca-certificates", "python3", "python3-venv")
# As Debian's own slim images are made: no recommended packages, /usr merged by mmdebstrap's hook
# rather than by the usrmerge package (which pulls in perl, 46 MB), and no documentation, manual pages
# or translations (about 50 MB); the copyright files stay.
BASE_OPTIONS = (
    '--aptopt=APT::Install-Recommends "false"',
    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
    *(f"--dpkgopt=path-exclude=/usr/share/{folder}/*" for folder in ("doc", "man", "info", "locale")),
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
)
# The packages and options are in the tag: a different list makes a new base instead of reusing a stale one.
BASE_IMAGE = (
    "localhost/bookwise-test-base:bookworm-"
    + hashlib.sha256(" ".join(BASE_PACKAGES + BASE_OPTIONS).encode()).hexdigest()[:12]
)
IMAGE = "localhost/bookwise-test:latest"
SERVER_IMAGE = "localhost/bookwise-test-server:latest"  # the Dockerfile's `server` target: no torch
SERVER_IMAGE_MAX_MB = 500
RUN_FLAGS = ["--runtime", "runc", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"]
QUESTION = "What are the two steps of the Kalman filter?"
READY_WITHIN_S = 180
BUILD_TIMEOUT_S = 1800


def _run(cmd: list[str], timeout: float = 600, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout ---\n{proc.stdout[-4000:]}"
            f"\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return proc


def _lock(name: str) -> AbstractContextManager[None]:
    """One build of the base and of the image at a time on this machine (other sessions, xdist)."""
    return file_lock(Path(tempfile.gettempdir(), f"{name}.lock"))


def _ensure_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip(f"the container test builds and runs rootful podman: run it as root ({APT_INSTALL})")
    if all(shutil.which(tool) or Path("/usr/sbin", tool).exists() for tool in TOOLS):
        return
    _run(["apt-get", "update", "-q"])
    _run([*APT_INSTALL.split(), "-q"], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def _base_image(scratch: Path) -> str:
    """Debian bookworm with Python, made once with mmdebstrap and imported into podman."""
    with _lock("bookwise-test-base"):
        if subprocess.run(["podman", "image", "exists", BASE_IMAGE], check=False).returncode != 0:
            rootfs = scratch / "rootfs.tar"
            _run(
                ["mmdebstrap", "--variant=minbase", *BASE_OPTIONS, f"--include={','.join(BASE_PACKAGES)}",
                 "bookworm", str(rootfs)],
                timeout=BUILD_TIMEOUT_S,
            )  # fmt: skip
            _run(["podman", "import", str(rootfs), BASE_IMAGE])
            rootfs.unlink()
    return BASE_IMAGE


def _pip_config_mounts() -> list[str]:
    """`-v path:path:ro` for pip's configuration files on this machine and the local paths they name
    (find-links folders, file:// indexes with the files they link to, constraints, CA bundle)."""
    debug = _run([sys.executable, "-m", "pip", "config", "debug"]).stdout
    paths: set[Path] = set()
    for line in debug.splitlines():
        found = re.match(r"\s*(/\S+), exists: True$", line)
        if found:
            paths.add(Path(found.group(1)))
            continue
        value = line.split(":", 1)[1] if ":" in line else line.split("=", 1)[-1]
        for token in value.replace("'", " ").replace('"', " ").split():
            if token.startswith("file://"):
                # A simple index links its files relatively (../../files/x.whl): mount the folder above.
                paths.add(Path(token.removeprefix("file://")).parent)
            elif token.startswith("/"):
                paths.add(Path(token))
    mounts = []
    for path in sorted(p for p in paths if p.exists()):
        if any(parent in paths for parent in path.parents):
            continue  # inside a folder mounted already
        mounts += ["-v", f"{path}:{path}:ro"]
    return mounts


def _build_image(base: str, tag: str, target: str | None = None) -> str:
    with _lock("bookwise-test-image"):
        before = subprocess.run(
            ["podman", "image", "inspect", "--format", "{{.Id}}", tag],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        build = ["podman", "build", "--isolation", "chroot", "--layers", "--format", "docker",
                 "--build-arg", f"BASE={base}",
                 # torch as scripts/install gets it, from pip's configuration (which must offer CPU torch
                 # there too); the Dockerfile's default, PyTorch's own index, is not reachable here.
                 "--build-arg", "TORCH_INDEX_URL=",
                 *(["--target", target] if target else []),
                 *_pip_config_mounts(), "-t", tag, str(ROOT)]  # fmt: skip
        try:
            _run(build, timeout=BUILD_TIMEOUT_S)
        except RuntimeError as failed:
            # runc copies itself into a sealed memfd for each RUN step, and the seal can fail with
            # EBUSY ("Close_Fd sealing memfd copy: Device or resource busy"), a runtime race that
            # failed one CI run: the step itself never ran. Once more; any other failure stands.
            if "sealing memfd copy" not in str(failed):
                raise
            _run(build, timeout=BUILD_TIMEOUT_S)
        after = _run(["podman", "image", "inspect", "--format", "{{.Id}}", tag]).stdout.strip()
        if before and before != after:  # the previous build, now untagged: not kept around
            subprocess.run(["podman", "rmi", before], capture_output=True, check=False)
        # Build-stage layers are the cache of the next build, but each pyproject.toml change leaves a
        # stack of them (about 1 GB) behind: those unused for two days go.
        subprocess.run(
            ["podman", "image", "prune", "--force", "--filter", "until=48h"], capture_output=True, check=False
        )
    return tag


def _size_mb(image: str) -> float:
    return int(_run(["podman", "image", "inspect", "--format", "{{.Size}}", image]).stdout) / 1e6


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    _ensure_tools()
    return _base_image(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def image(base: str) -> str:
    started = time.monotonic()
    built = _build_image(base, IMAGE)
    print(f"\nimage {built}: {_size_mb(built):.0f} MB, base and build {time.monotonic() - started:.0f} s")
    return built


@pytest.fixture(scope="module")
def server_image(base: str) -> str:
    started = time.monotonic()
    built = _build_image(base, SERVER_IMAGE, target="server")
    print(f"\nimage {built}: {_size_mb(built):.0f} MB (base {_size_mb(base):.0f} MB), "
          f"build {time.monotonic() - started:.0f} s")  # fmt: skip
    return built


def _copy_example(build_dir: Path, site: Path) -> Path:
    """The example's sources and its build, writable by the container's user: with --manifest, ingest
    writes llms.txt and the .md twins into the build folder."""
    skip = shutil.ignore_patterns("node_modules", "build", ".docusaurus", ".bookwise*")
    shutil.copytree(EXAMPLE_SITE, site, ignore=skip)
    shutil.copytree(build_dir, site / "build", ignore=shutil.ignore_patterns(".bookwise*"))
    for folder, dirs, files in os.walk(site):
        for name in [folder, *(os.path.join(folder, entry) for entry in dirs + files)]:
            os.chmod(name, 0o777 if os.path.isdir(name) else 0o666)
    return site


def _wait_ready(url: str, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + READY_WITHIN_S
    with local_http.client(timeout=5) as client:  # one TLS context for the whole wait
        while True:
            try:
                response = client.get(f"{url}/api/ready")
                if response.status_code == 200:
                    ready: dict[str, Any] = response.json()
                    return ready
            except httpx.HTTPError:
                pass
            state = _run(["podman", "inspect", "--format", "{{.State.Status}}", name]).stdout.strip()
            if state != "running" or time.monotonic() > deadline:
                logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True, check=False)
                raise AssertionError(
                    f"the container ({state}) was not ready within {READY_WITHIN_S}s:\n"
                    f"{logs.stdout[-3000:]}{logs.stderr[-3000:]}"
                )
            time.sleep(0.5)


@dataclass(frozen=True)
class Served:
    url: str
    container: str
    ready: dict[str, Any]
    ingest_report: str


@dataclass(frozen=True)
class Ingested:
    volume: str
    report: str


@pytest.fixture(scope="module")
def ingested(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingested]:
    """The example book ingested by a one-off container of the full image into a named volume."""
    site = _copy_example(build_example(), tmp_path_factory.mktemp("example") / "site")
    volume = f"bookwise-test-data-{uuid.uuid4().hex[:10]}"
    _run(["podman", "volume", "create", volume])
    try:
        ingest = _run(
            ["podman", "run", "--rm", *RUN_FLAGS, "--no-healthcheck",
             "-v", f"{volume}:/data", "-v", f"{site}:/site",
             "-e", "BOOKWISE_EMBEDDING_ADAPT=false",  # adapting the model takes minutes on CPU
             image, "bookwise", "ingest", "/site", "--manifest", f"/site/build/{MANIFEST_NAME}", "--strict"],
            timeout=900,
        )  # fmt: skip
        yield Ingested(volume, ingest.stdout)
    finally:
        subprocess.run(["podman", "volume", "rm", "--force", volume], capture_output=True)


@contextmanager
def _serving(image: str, ingested: Ingested) -> Iterator[Served]:
    """A container of ``image`` serving the volume, published on loopback."""
    container = f"bookwise-test-{uuid.uuid4().hex[:10]}"
    port = free_port()
    _run(
        ["podman", "run", "--detach", "--name", container, *RUN_FLAGS,
         "--health-interval", "disable",  # no systemd timer here; checks are run by the test
         "-v", f"{ingested.volume}:/data", "-p", f"127.0.0.1:{port}:8000", image],
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        yield Served(url, container, _wait_ready(url, container), ingested.report)
    finally:
        subprocess.run(["podman", "rm", "--force", "--time", "5", container], capture_output=True)


@pytest.fixture(scope="module")
def served(image: str, ingested: Ingested) -> Iterator[Served]:
    """The example book served from the volume by the full image."""
    with _serving(image, ingested) as serving:
        yield serving


def _ask(url: str) -> list[tuple[str, Any]]:
    with local_http.client(timeout=60) as client:
        with client.stream("POST", f"{url}/api/chat", json={"question": QUESTION}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            return list(parse_sse(response.iter_lines()))


def test_one_off_ingest_fills_the_volume_the_server_reads(served: Served) -> None:
    processed = re.search(r"docs: (\d+) processed", served.ingest_report)
    assert processed is not None and int(processed.group(1)) > 0, served.ingest_report
    assert served.ready["points"] > 0
    assert served.ready["embed_model"] == "all-MiniLM-L6-v2"  # the packaged model, offline
    assert served.ready["llm"] is None


def test_answers_over_sse_with_sources(served: Served) -> None:
    events = _ask(served.url)
    names = [name for name, _ in events]
    assert names[-1] == "done", names
    sources = next(data for name, data in events if name == "sources")["sources"]
    assert any("kalman" in source["url"] for source in sources), [s["url"] for s in sources]
    assert "".join(data["text"] for name, data in events if name == "token")


def test_server_runs_as_non_root_as_the_containers_first_process(served: Served) -> None:
    pid = _run(["podman", "inspect", "--format", "{{.State.Pid}}", served.container]).stdout.strip()
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    uids = re.search(r"^Uid:\s+(.*)$", status, re.MULTILINE)
    assert uids is not None
    assert "0" not in uids.group(1).split(), status  # real, effective, saved and filesystem uid
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"serve" in cmdline  # exec form: the server itself gets the stop signal


def test_healthcheck_reports_healthy(served: Served) -> None:
    check = subprocess.run(["podman", "healthcheck", "run", served.container], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    health = _run(["podman", "inspect", "--format", "{{.State.Health.Status}}", served.container])
    assert health.stdout.strip() == "healthy"


def test_image_is_configured_for_a_volume_a_port_and_readiness(image: str) -> None:
    inspected = json.loads(_run(["podman", "image", "inspect", image]).stdout)[0]
    config = inspected["Config"]
    assert config["User"] == "bookwise"
    assert "/data" in config["Volumes"]
    assert "8000/tcp" in config["ExposedPorts"]
    assert "BOOKWISE_DATA_DIR=/data" in config["Env"]
    assert "/api/ready" in " ".join(inspected["Healthcheck"]["Test"])
    assert config["Cmd"][:2] == ["bookwise", "serve"]


def test_bookwise_is_a_small_layer_above_its_dependencies_regression(image: str, server_image: str) -> None:
    """Both images copied one layer, the dependencies and Bookwise together (1.5 GB in the default
    image, 350 MB in the server's), so every code change made owners pull it all again; now Bookwise's
    own files are the top layer, and the dependencies' layer is reused."""
    for built, dependencies_mb in ((image, 1000), (server_image, 250)):
        layers = json.loads(_run(["podman", "history", "--format", "json", built]).stdout)  # newest first
        copies = [
            (layer["size"] / 1e6, layer["CreatedBy"][:80])
            for layer in layers
            if " COPY " in layer["CreatedBy"]
        ]
        assert copies[0][0] < 20 and copies[1][0] > dependencies_mb, (built, copies)


def test_server_target_is_under_500_mb_and_answers_from_the_ingested_volume(
    server_image: str, ingested: Ingested
) -> None:
    """The `server` target has no torch: it serves the volume the full image ingested, embedding the
    question with the ONNX export the index carries."""
    size = _size_mb(server_image)
    assert size < SERVER_IMAGE_MAX_MB, f"{size:.0f} MB"
    with _serving(server_image, ingested) as serving:
        assert serving.ready["embed_model"] == "all-MiniLM-L6-v2"
        events = _ask(serving.url)
        logs = _run(["podman", "logs", serving.container])
    assert [name for name, _ in events][-1] == "done", events
    sources = next(data for name, data in events if name == "sources")["sources"]
    assert any("kalman" in source["url"] for source in sources), [s["url"] for s in sources]
    no_torch = subprocess.run(
        ["podman", "run", "--rm", *RUN_FLAGS, "--no-healthcheck", server_image,
         "python3", "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert no_torch.returncode == 0, no_torch.stdout + no_torch.stderr + logs.stderr[-2000:]
