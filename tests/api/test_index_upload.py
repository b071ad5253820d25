"""`PUT /api/admin/index` on a real server: CI's generation installed atomically, or refused with
the live index untouched and nothing left behind."""

from __future__ import annotations

import copy
import functools
import io
import json
import logging
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import local_http
from adaptbook import ADAPT_PAGES
from apiserver import build_book, chat, cli_env, hash_settings, running_api
from bookwise.index.adapt import is_adapted, model_dir
from bookwise.index.build import run_ingest
from bookwise.index.edge.store import EdgeStore
from bookwise.index.faults import used_bytes
from bookwise.index.publish import publish
from bookwise.index.transfer import pack_live_generation
from bookwise.ingest.site import read_site_config
from bookwise.settings import Settings

TOKEN = "upload-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Served:
    url: str
    settings: Settings

    @property
    def index(self) -> Path:
        return self.settings.data_dir / "index"

    def state(self) -> tuple[str, list[str]]:
        """CURRENT and the generation folders: what a failed upload must not change."""
        return (
            (self.index / "CURRENT").read_text(),
            sorted(p.name for p in (self.index / "generations").iterdir()),
        )

    def assert_clean(self) -> None:
        """No upload left anything: the incoming folder goes with each upload (polled: a
        disconnect is noticed by the server after the client has gone)."""
        deadline = time.monotonic() + 10
        while any((self.index / "incoming").glob("*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any((self.index / "incoming").glob("*"))


@pytest.fixture(scope="module")
def ci(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The data dir a CI job ingested into: its live generation is what gets uploaded."""
    return build_book(tmp_path_factory.mktemp("ci"))


@pytest.fixture(scope="module")
def archive(ci: Settings) -> Iterator[bytes]:
    out = io.BytesIO()
    pack_live_generation(ci.data_dir, out)
    yield out.getvalue()
    unpacked.cache_clear()  # hundreds of MB, for this module only


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    settings = build_book(tmp_path, admin_token=TOKEN)
    with running_api(settings) as url:
        yield Served(url, settings)


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the uploads that must be refused: each such test checks that its upload
    changed nothing, so none depends on a fresh server (one per test took most of their time)."""
    settings = build_book(tmp_path_factory.mktemp("refusing"), admin_token=TOKEN)
    with running_api(settings) as url:
        yield Served(url, settings)


def put(url: str, content: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return local_http.put(
        f"{url}/api/admin/index", content=content, headers=AUTH | (headers or {}), timeout=60
    )


def ci_generation(ci: Settings) -> str:
    generation: str = json.loads((ci.data_dir / "index" / "CURRENT").read_text())["generation"]
    return generation


def repack(
    archive: bytes,
    change: Callable[[tarfile.TarInfo, bytes], tuple[tarfile.TarInfo, bytes] | None],
    extra: list[tuple[tarfile.TarInfo, bytes]] = (),
) -> bytes:  # type: ignore[assignment]
    """The archive with its members passed through ``change`` (None drops one), then ``extra``.
    Written with the fastest compression: the server reads any gzip level alike."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as target:
        for member, data in unpacked(archive):
            changed = change(copy.copy(member), data)
            if changed is not None:
                info, body = changed
                info.size = len(body)
                target.addfile(info, io.BytesIO(body) if info.isfile() else None)
        for info, body in extra:
            target.addfile(info, io.BytesIO(body) if info.isfile() else None)
    return out.getvalue()


@functools.cache
def unpacked(archive: bytes) -> tuple[tuple[tarfile.TarInfo, bytes], ...]:
    """The archive's members and their data, read once: its sparse files come out as hundreds of MB."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as source:
        return tuple(
            (member, source.extractfile(member).read() if member.isfile() else b"")  # type: ignore[union-attr]
            for member in source
        )


def refused(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    message: str = error["message"]
    return message


def test_upload_is_installed_and_served_at_once(served: Served, ci: Settings, archive: bytes) -> None:
    before = chat(served.url, {"question": "What do quokkas eat?"}).first("meta")["index_version"]
    new = ci_generation(ci)
    assert before != new

    answer = publish(ci.data_dir, served.url, TOKEN, timeout_s=60)

    assert answer["index_version"] == new and answer["serving"] == new
    assert answer["points"] > 0 and answer["embed_model"] == "hash-384"
    assert json.loads((served.index / "CURRENT").read_text()) == {"generation": new}
    ready = local_http.get(f"{served.url}/api/ready", timeout=30).json()
    assert ready["index_version"] == new and ready["points"] == answer["points"]
    assert chat(served.url, {"question": "What do quokkas eat?"}).first("meta")["index_version"] == new
    served.assert_clean()


def test_first_upload_to_a_server_without_an_index(tmp_path: Path, ci: Settings, archive: bytes) -> None:
    settings = hash_settings(tmp_path / "empty", admin_token=TOKEN)
    with running_api(settings) as url:
        assert local_http.get(f"{url}/api/ready", timeout=30).status_code == 503
        answer = put(url, archive).json()
        assert answer["serving"] == ci_generation(ci)
        assert local_http.get(f"{url}/api/ready", timeout=30).json()["index_version"] == ci_generation(ci)


def test_the_same_generation_again_changes_nothing(served: Served, ci: Settings, archive: bytes) -> None:
    """CI publishing an unchanged index again (an ingest with nothing to do keeps its generation)."""
    assert put(served.url, archive).status_code == 200
    state = served.state()
    again = put(served.url, archive)
    assert again.status_code == 200 and again.json()["serving"] == ci_generation(ci)
    assert served.state() == state
    served.assert_clean()


@pytest.mark.parametrize("token", ["", "Bearer wrong-token-0123456789", f"Basic {TOKEN}"])
def test_without_the_token_nothing_is_written(refusing: Served, archive: bytes, token: str) -> None:
    state = refusing.state()
    response = local_http.put(
        f"{refusing.url}/api/admin/index", content=archive, headers={"Authorization": token}, timeout=30
    )
    message = refused(response, 401, "unauthorized")
    assert TOKEN not in message
    assert refusing.state() == state and not (refusing.index / "incoming").exists()


def test_incompatible_model_is_refused_naming_both(refusing: Served, archive: bytes) -> None:
    def other_model(member: tarfile.TarInfo, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
        if member.name == "generation/manifest.json":
            manifest = json.loads(data) | {"embed_model": "text-embedding-3-small", "dim": 1536}
            data = json.dumps(manifest, sort_keys=True).encode()
            other_model.digest = __import__("hashlib").sha256(data).hexdigest()  # type: ignore[attr-defined]
        elif member.name == "generation/COMPLETE":
            marker = json.loads(data) | {"manifest_sha256": other_model.digest}  # type: ignore[attr-defined]
            data = json.dumps(marker).encode()
        return member, data

    state = refusing.state()
    message = refused(put(refusing.url, repack(archive, other_model)), 409, "index_upload_incompatible")
    assert "'text-embedding-3-small' (1536 dims)" in message and "'hash-384' (384 dims)" in message
    assert refusing.state() == state
    refusing.assert_clean()


def test_a_manifest_that_does_not_match_its_marker_is_refused(refusing: Served, archive: bytes) -> None:
    def tampered(member: tarfile.TarInfo, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
        if member.name == "generation/manifest.json":
            data = json.dumps(json.loads(data) | {"points": 1}, sort_keys=True).encode()
        return member, data

    state = refusing.state()
    message = refused(put(refusing.url, repack(archive, tampered)), 422, "index_upload_invalid")
    assert "COMPLETE" in message
    assert refusing.state() == state
    refusing.assert_clean()


def test_a_shard_without_its_points_is_refused(refusing: Served, archive: bytes) -> None:
    def without(member: tarfile.TarInfo, data: bytes) -> tuple[tarfile.TarInfo, bytes] | None:
        return None if "/segments/" in member.name or "/wal/" in member.name else (member, data)

    state = refusing.state()
    message = refused(put(refusing.url, repack(archive, without)), 422, "index_upload_invalid")
    assert "shard" in message
    assert refusing.state() == state
    refusing.assert_clean()


@pytest.mark.parametrize("cut", ["truncated", "garbage"])
def test_truncated_or_corrupt_archive_is_refused(refusing: Served, archive: bytes, cut: str) -> None:
    body = archive[: len(archive) // 2] if cut == "truncated" else b"not a tar archive" * 100
    state = refusing.state()
    refused(put(refusing.url, body), 422, "index_upload_invalid")
    assert refusing.state() == state
    refusing.assert_clean()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    "member",
    [
        _member("generation/../../../escaped.txt"),
        _member("/tmp/absolute.txt"),
        _member("generation/shard/link", tarfile.SYMTYPE, "/etc/passwd"),
        _member("generation/shard/hard", tarfile.LNKTYPE, "generation/manifest.json"),
        _member("generation/shard/fifo", tarfile.FIFOTYPE),
        _member("elsewhere.txt"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "fifo", "outside-layout"],
)
def test_unsafe_members_are_refused(
    refusing: Served, archive: bytes, member: tarfile.TarInfo, tmp_path: Path
) -> None:
    state = refusing.state()
    body = repack(archive, lambda m, d: (m, d), extra=[(member, b"pwned")])
    message = refused(put(refusing.url, body), 422, "index_upload_invalid")
    assert member.name in message
    assert refusing.state() == state
    assert not list(refusing.settings.data_dir.rglob("escaped.txt"))
    refusing.assert_clean()


def test_oversized_upload_is_refused_declared_or_not(tmp_path: Path, archive: bytes) -> None:
    settings = build_book(tmp_path, admin_token=TOKEN, index_upload_max_mb=1)
    served = Served("", settings)
    state = served.state()
    big = b"\x01" * (2 * 1024 * 1024)
    with running_api(settings) as url:
        message = refused(put(url, big), 413, "payload_too_large")
        assert "BOOKWISE_INDEX_UPLOAD_MAX_MB" in message
        assert not (served.index / "incoming").exists()  # refused before any write

        def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(32):
                yield big[: 128 * 1024]

        refused(put(url, chunked()), 413, "payload_too_large")
    assert served.state() == state
    served.assert_clean()


def test_interrupted_upload_leaves_nothing(
    served: Served, archive: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bookwise")
    state = served.state()
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        head = (
            f"PUT /api/admin/index HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {len(archive)}\r\n\r\n"
        )
        sock.sendall(head.encode() + archive[: len(archive) // 3])
        time.sleep(0.3)  # let the server start writing, then vanish mid-body

    def events() -> list[str]:
        return [record.getMessage() for record in caplog.records]

    # Polled: on a loaded machine the server may read the body, and notice the disconnect, after
    # the client has gone (with nothing in `incoming` yet for assert_clean to wait on).
    deadline = time.monotonic() + 10
    while "index_upload_interrupted" not in events() and time.monotonic() < deadline:
        time.sleep(0.05)
    served.assert_clean()
    assert served.state() == state
    assert "index_upload_interrupted" in events() and "unexpected_error" not in events()
    assert put(served.url, archive).status_code == 200  # the lock was let go


def test_busy_while_an_ingest_writes(served: Served, archive: bytes) -> None:
    ingest = EdgeStore(served.settings.data_dir)
    ingest.remove_half_built()  # holds the write lock, as a running ingest does
    try:
        state = served.state()
        refused(put(served.url, archive), 503, "index_busy")
        assert served.state() == state and not (served.index / "incoming").exists()
    finally:
        ingest.close()


def test_a_qdrant_server_backend_refuses_uploads(tmp_path: Path, archive: bytes) -> None:
    settings = hash_settings(tmp_path, admin_token=TOKEN, qdrant_url=":memory:")
    with running_api(settings) as url:
        message = refused(put(url, archive), 409, "index_upload_unsupported")
        assert "qdrant" in message.lower()
    assert not (tmp_path / "index").exists()


def test_without_an_admin_token_the_route_does_not_exist(tmp_path: Path, archive: bytes) -> None:
    settings = build_book(tmp_path)
    with running_api(settings) as url:
        assert put(url, archive).status_code == 404


def test_holes_stay_holes_on_the_server(served: Served, ci: Settings, archive: bytes) -> None:
    """Edge's memory-mapped files are mostly holes: unpacked as written bytes, a small book's
    generation would take 258 MB of the server's disk instead of under 1 MB."""
    assert put(served.url, archive).status_code == 200
    installed = served.index / "generations" / ci_generation(ci)
    apparent = sum(p.stat().st_size for p in installed.rglob("*") if p.is_file())
    assert used_bytes(installed) < 16 * 1024 * 1024 < apparent


@pytest.mark.model
def test_the_site_adapted_embedder_travels_with_its_generation(tmp_path: Path) -> None:
    """A local index is built with MiniLM adapted to the site: the server has no copy of that model
    until the upload brings it, and then embeds questions with it."""
    local = {"embedding_provider": "local", "embedding_adapt_max_pairs": 16, "suggested_questions": 0}
    site = tmp_path / "site"
    for relative, content in ADAPT_PAGES.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(content, encoding="utf-8")
    ci = hash_settings(tmp_path / "ci", **local)
    report = run_ingest(ci, read_site_config(site))
    assert is_adapted(report.embed_model)

    server = hash_settings(tmp_path / "server", admin_token=TOKEN, **local)
    with running_api(server) as url:
        answer = publish(ci.data_dir, url, TOKEN, timeout_s=120)
        assert answer["model_installed"] and answer["embed_model"] == report.embed_model
        assert (model_dir(server.data_dir, report.embed_model) / "config.json").is_file()
        ready = local_http.get(f"{url}/api/ready", timeout=60).json()
        assert ready["embed_model"] == report.embed_model
        found = local_http.post(
            f"{url}/api/search", json={"query": "what does a reducer compute?", "top_k": 3}, timeout=60
        ).json()
        assert "Reducers" in [source["heading"] for source in found["sources"]]


def test_publish_command_prints_the_answer_and_fails_on_refusal(served: Served, ci: Settings) -> None:
    env = cli_env(ci.data_dir, BOOKWISE_ADMIN_TOKEN=TOKEN)
    command = [sys.executable, "-m", "bookwise.cli", "publish", "--server", served.url]

    done = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["serving"] == ci_generation(ci)

    wrong = env | {"BOOKWISE_ADMIN_TOKEN": "not-the-token-0123456789"}
    done = subprocess.run(command, env=wrong, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "[publish_failed]" in done.stderr and "401 unauthorized" in done.stderr

    gone = [sys.executable, "-m", "bookwise.cli", "publish", "--server", "http://127.0.0.1:9"]
    done = subprocess.run(gone, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "could not upload the index to http://127.0.0.1:9" in done.stderr

    no_token = {k: v for k, v in env.items() if k != "BOOKWISE_ADMIN_TOKEN"}
    done = subprocess.run(command, env=no_token, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "BOOKWISE_ADMIN_TOKEN" in done.stderr


def test_a_nearly_full_disk_refuses_before_writing(tmp_path: Path, archive: bytes) -> None:
    settings = build_book(tmp_path, admin_token=TOKEN)
    served = Served("", settings)
    state = served.state()
    full = settings.model_copy(update={"min_free_disk_mb": 10**9})  # more than any disk has free
    with running_api(full) as url:
        message = refused(put(url, archive), 503, "disk_full")
        assert message  # the public sentence; the detail (BOOKWISE_MIN_FREE_DISK_MB) is in the log
    assert served.state() == state and not (served.index / "incoming").exists()
