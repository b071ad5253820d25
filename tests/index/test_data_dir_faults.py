"""Fault injection on the data directory: each fault of the red-team pass, its expected outcome.

Every test breaks the data dir the way an operator, a crash or a full disk would, then checks the
clear outcome (a warning or an error with a stable code and hint) AND that serving and ingesting
go on. The embedded store (Qdrant Edge) is the one with a data dir; the hash embedder keeps it fast.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import bookwise.index.edge.generations as edge_format
import local_http
from apiserver import build_book, running_api
from bookwise.errors import ConfigError, DiskFullError, IndexCorruptError
from bookwise.index.adapt import model_dir
from bookwise.index.build import IngestReport, run_ingest
from bookwise.index.cache import SqliteEmbeddingCache
from bookwise.index.edge.generations import complete_manifest
from bookwise.index.edge.reader import EdgeReader
from bookwise.index.edge.store import EdgeStore
from bookwise.index.embedders import HashEmbedder
from bookwise.index.sparse import Bm25Encoder
from bookwise.index.store import HybridQuery
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SiteFactory


def page(n: int, edition: int = 0) -> str:
    return f"## Topic {n}\n\nReducers topic {n} text, edition {edition}.\n\n## More {n}\n\nExtra words {n}.\n"


def ingest(settings: Settings, site: Path, **options: bool) -> IngestReport:
    store = EdgeStore(settings.data_dir)
    try:
        return run_ingest(settings, read_site_config(site), embedder=HashEmbedder(), store=store, **options)
    finally:
        store.close()


def index_root(settings: Settings) -> Path:
    return settings.data_dir / "index"


def current(settings: Settings) -> str:
    return str(json.loads((index_root(settings) / "CURRENT").read_text())["generation"])


def generations(settings: Settings) -> list[str]:
    return sorted(p.name for p in (index_root(settings) / "generations").iterdir())


@pytest.fixture(scope="module")
def built_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A site ingested twice (one page changed), once per module: (folder, older, live generation).

    Writing an Edge shard takes seconds on a busy disk; each test works on a copy.
    """
    root = tmp_path_factory.mktemp("built-twice")
    site = root / "site" / "docs"
    site.mkdir(parents=True)
    for n in range(4):
        (site / f"page-{n}.md").write_text(page(n))
    settings = Settings(data_dir=root / "data", embedding_provider="hash", _env_file=None)  # type: ignore[call-arg]
    older = ingest(settings, root / "site").index.generation
    (site / "page-0.md").write_text(page(0, 1))
    live = ingest(settings, root / "site").index.generation
    assert older and live and older != live
    return root, older, live


@pytest.fixture
def gens(built_twice: tuple[Path, str, str], settings: Settings, tmp_path: Path) -> tuple[Path, str, str]:
    """A copy of ``built_twice`` in this test's data dir: (site, older generation, live generation)."""
    root, older, live = built_twice
    subprocess.run(
        ["cp", "-a", str(root / "data"), str(settings.data_dir)], check=True
    )  # sparse stays sparse
    shutil.copytree(root / "site", tmp_path / "site")
    return tmp_path / "site", older, live


def query(reader: EdgeReader, text: str = "reducers topic text") -> list[str]:
    hits = reader.hybrid(HybridQuery(HashEmbedder().embed_query(text), Bm25Encoder().query(text), 5, 20))
    return [h.payload["index_version"] for h in hits.fused]


def store_chunks(settings: Settings) -> list[list[str]]:
    manifest = EdgeStore(settings.data_dir).live_manifest()
    assert manifest is not None
    return list(manifest.chunks.values())


def codes(report: IngestReport) -> list[str]:
    return [w["code"] for w in report.warnings]


class Faults(logging.Handler):
    """The data-directory faults the index layer logs (whatever the root logger's configuration)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.codes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.codes.append(getattr(record, "fields", {}).get("code", ""))


@pytest.fixture
def faults() -> Iterator[Faults]:
    handler = Faults()
    logger = logging.getLogger("bookwise.index")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def corrupt(path: Path) -> None:
    path.write_bytes(b'{"generation": "2026')  # a torn write


# -- a corrupt live manifest.json ---------------------------------------------------------------


def test_corrupt_live_manifest_json_restart_serves_the_newest_complete_generation(
    settings: Settings, gens: tuple[Path, str, str], faults: Faults
) -> None:
    _, older, live = gens
    corrupt(index_root(settings) / "generations" / live / "manifest.json")
    reader = EdgeStore(settings.data_dir).open_reader()  # a restart
    try:
        assert reader.manifest.generation == older
        assert set(query(reader)) == {older}
    finally:
        reader.close()
    assert faults.codes == ["index_generation_corrupt"]


def test_corrupt_live_manifest_json_plain_ingest_recovers_from_the_previous_generation(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    site, older, live = gens
    corrupt(index_root(settings) / "generations" / live / "manifest.json")
    report = ingest(settings, site)  # was: JSONDecodeError
    assert codes(report) == ["index_generation_corrupt"]
    assert older in report.warnings[0]["message"]
    assert report.index.switched and report.index.created == 0 and report.index.unchanged  # incremental
    assert report.index.embedded == 0  # page-0's new text is in the embedding cache
    assert current(settings) == report.index.generation
    assert live not in generations(settings)  # the corrupt one is pruned once it is not live
    reader = EdgeStore(settings.data_dir).open_reader()
    assert set(query(reader)) == {report.index.generation}
    reader.close()


def test_corrupt_live_manifest_json_with_no_other_generation_cli_ingest_and_reindex_recover(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    site = make_site({"docs/a.md": "## A\n\nAlpha words.\n"})
    data = tmp_path / "data"
    assert bookwise("ingest", str(site), data_dir=data).returncode == 0
    root = data / "index"
    live = json.loads((root / "CURRENT").read_text())["generation"]
    corrupt(root / "generations" / live / "manifest.json")

    search = bookwise("search", "alpha", data_dir=data)
    assert search.returncode == 1
    assert "[index_corrupt]" in search.stderr and "bookwise ingest --reindex" in search.stderr

    plain = bookwise("ingest", str(site), "--json", data_dir=data)
    assert plain.returncode == 0, plain.stderr
    report = json.loads(plain.stdout)
    assert [w["code"] for w in report["warnings"]] == ["index_generation_corrupt"]
    assert "rebuilds the index" in report["warnings"][0]["message"]
    assert report["switched"] and report["created"] == 1

    corrupt(root / "generations" / report["generation"] / "manifest.json")
    reindex = bookwise("ingest", str(site), "--reindex", data_dir=data)
    assert reindex.returncode == 0, reindex.stderr
    assert "warning: " in reindex.stdout and "[index_generation_corrupt]" in reindex.stdout


# -- a corrupt or deleted CURRENT ---------------------------------------------------------------


def test_corrupt_current_keeps_a_running_server_answering_from_its_loaded_generation(
    tmp_path: Path, faults: Faults
) -> None:
    settings = build_book(tmp_path)
    root = index_root(settings)
    live = current(settings)
    with running_api(settings) as url, local_http.client(timeout=20) as client:
        assert client.post(f"{url}/api/search", json={"query": "quokka burrow"}).status_code == 200
        corrupt(root / "CURRENT")
        answers = [client.post(f"{url}/api/search", json={"query": "quokka burrow"}) for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5  # was: 100 % 503
    assert {a.json()["index_version"] for a in answers} == {live}
    assert faults.codes == ["index_current_corrupt"]  # logged once, not at every refresh


def test_corrupt_current_at_start_serves_the_newest_complete_generation(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    site, _, live = gens
    corrupt(index_root(settings) / "CURRENT")
    retriever = Retriever.open(settings)
    try:
        assert retriever.index_version == live
        assert retriever.search("reducers topic").sections
    finally:
        retriever.close()
    report = ingest(settings, site)  # nothing changed, but CURRENT is repaired
    assert codes(report) == ["index_current_corrupt"]
    assert report.index.switched and report.index.embedded == 0
    assert current(settings) == report.index.generation


def test_deleted_current_readers_and_next_ingest_use_the_newest_complete_generation(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    site, _, live = gens
    half_built = index_root(settings) / "generations" / "29991231T000000000000Z"
    (half_built / "shard").mkdir(parents=True)  # newer, but a crash left it unfinished
    (index_root(settings) / "CURRENT").unlink()
    with running_api(settings) as url:  # a restart: was 503 index_not_found
        response = local_http.post(f"{url}/api/search", json={"query": "reducers topic"}, timeout=20)
    assert response.status_code == 200
    assert response.json()["index_version"] == live
    (site / "docs/page-1.md").write_text(page(1, 1))
    report = ingest(settings, site)
    assert codes(report) == ["index_current_missing"]
    assert (report.index.created, report.index.embedded) == (0, 1)  # not rebuilt: one text embedded
    assert current(settings) == report.index.generation
    assert half_built.name not in generations(settings)


# -- a full disk --------------------------------------------------------------------------------


def test_low_disk_stops_ingest_before_writing_with_disk_full_and_a_hint(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    site, _, live = gens
    before = generations(settings)
    (site / "docs/page-2.md").write_text(page(2, 1))
    full = settings.model_copy(update={"min_free_disk_mb": 10**9})  # more than any test disk has free
    with pytest.raises(DiskFullError) as caught:
        ingest(full, site)
    assert caught.value.code == "disk_full"
    assert "BOOKWISE_MIN_FREE_DISK_MB" in caught.value.message and "untouched" in caught.value.message
    assert (current(settings), generations(settings)) == (live, before)
    assert ingest(settings, site).index.switched  # with space, the next ingest goes on


def test_enospc_while_writing_a_generation_is_disk_full_and_the_live_index_untouched(
    settings: Settings, gens: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated at the store boundary: the manifest write of the new generation hits ENOSPC."""
    site, _, live = gens
    before = generations(settings)
    real_write = edge_format.write_atomic

    def full_disk(path: Path, text: str) -> None:
        if path.name == "manifest.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(path, text)

    monkeypatch.setattr(edge_format, "write_atomic", full_disk)
    (site / "docs/page-2.md").write_text(page(2, 1))
    with pytest.raises(DiskFullError, match="full"):
        ingest(settings, site)
    assert (current(settings), generations(settings)) == (live, before)  # the half-built one removed
    monkeypatch.setattr(edge_format, "write_atomic", real_write)
    assert ingest(settings, site).index.switched


def in_mount_namespace(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) as root of a new user and mount namespace, so it can mount filesystems
    without real root: ``$MNT`` is an empty folder to mount on, ``$OUT`` one for its output, ``$PY``
    this Python. Skips the test where that is not possible (the script exits 99 when a mount fails)."""
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user namespaces are not available: cannot mount a filesystem without root")
    for name in ("mnt", "out"):
        (tmp_path / name).mkdir()
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        env=os.environ
        | {
            "BOOKWISE_EMBEDDING_PROVIDER": "hash",
            "PY": sys.executable,
            "MNT": str(tmp_path / "mnt"),
            "OUT": str(tmp_path / "out"),
            "PYTHONPATH": os.pathsep.join(sys.path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    if done.returncode == 99:
        pytest.skip("tmpfs cannot be mounted in a user namespace here")
    return done


DISK_FULL_SCRIPT = """
set -u
mount -t tmpfs -o size=40m tmpfs "$MNT" || exit 99
export BOOKWISE_DATA_DIR="$MNT/data"
run() { "$PY" -m bookwise.cli "$@" >"$OUT/$STEP.out" 2>"$OUT/$STEP.err"; echo $? >"$OUT/$STEP.rc"; }
# The guard is off for the first ingest only so it fits; suggestions would open the index again
# (a reader's open writes to the shard) on the nearly full disk the guard is there to prevent.
STEP=first BOOKWISE_MIN_FREE_DISK_MB=0 BOOKWISE_SUGGESTED_QUESTIONS=0 run ingest "$SMALL"
STEP=open BOOKWISE_MIN_FREE_DISK_MB=20 run search "alpha words"
STEP=estimate BOOKWISE_MIN_FREE_DISK_MB=1 run ingest "$BIG"
dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null
STEP=enospc BOOKWISE_MIN_FREE_DISK_MB=0 run ingest "$BIG"
rm "$MNT/filler"
mount -o remount,size=400m "$MNT"
STEP=search BOOKWISE_MIN_FREE_DISK_MB=1 run search "alpha words"
STEP=roomy BOOKWISE_MIN_FREE_DISK_MB=1 run ingest "$BIG"
"""


def test_disk_full_during_ingest_is_disk_full_not_sigbus_on_a_small_filesystem(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    """A real 40 MB tmpfs, mounted in a user namespace (no root). Edge's first shard takes 28 MB of it
    there, and opening a shard writes to it too: on a full disk both died of SIGBUS."""
    small = make_site({"docs/a.md": "## A\n\nAlpha words.\n"})
    big = tmp_path / "big"
    for n in range(40):
        (big / "docs").mkdir(parents=True, exist_ok=True)
        (big / f"docs/page-{n}.md").write_text(page(n))
    in_mount_namespace(DISK_FULL_SCRIPT, tmp_path, SMALL=str(small), BIG=str(big))

    def step(name: str) -> tuple[int, str]:
        out = tmp_path / "out"
        return int((out / f"{name}.rc").read_text()), (out / f"{name}.err").read_text()

    assert step("first")[0] == 0, step("first")
    for name in ("open", "estimate", "enospc"):  # before: SIGBUS, exit 135 and no message
        code, err = step(name)
        assert code == 1 and "[disk_full]" in err and "untouched" in err, (name, code, err)
    assert step("search")[0] == 0, step("search")  # the live index was untouched
    assert step("roomy")[0] == 0, step("roomy")


READ_ONLY_SCRIPT = """
set -u
mount -t tmpfs -o size=200m tmpfs "$MNT" || exit 99
"$PY" -m bookwise.cli ingest "$SITE" >"$OUT/ingest.out" 2>&1 || exit 98
mount -o remount,ro "$MNT" || exit 99
"$PY" -m bookwise.cli search "alpha words" >"$OUT/search.out" 2>"$OUT/search.err"; echo $? >"$OUT/search.rc"
"$PY" -c "$PROBE" >"$OUT/probe.json" 2>"$OUT/probe.err"
"""

READ_ONLY_PROBE = """
import json, httpx
from apiserver import chat, running_api
from bookwise.settings import Settings
with running_api(Settings()) as url:
    found = httpx.post(url + "/api/search", json={"query": "alpha words"}).json()
    answer = chat(url, {"question": "What are alpha words?"})
    rid = answer.first("meta")["request_id"]
    body = {"request_id": rid, "rating": "up", "question": "q", "answer": "a"}
    feedback = httpx.post(url + "/api/feedback", json=body)
    print(json.dumps({"hits": len(found["sources"]), "last": answer.names()[-1],
                      "feedback": [feedback.status_code, feedback.json()["error"]["code"]]}))
"""


def test_read_only_data_dir_serves_answers_with_feedback_off_regression(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    """A read-only data dir stopped the API (feedback) and then every search (Edge opens shards
    read-write): now the index is served from a private copy and only feedback is off."""
    site = make_site({"docs/a.md": "## Alpha\n\nAlpha words are the first words of the book.\n"})
    (tmp_path / "tmp").mkdir()
    done = in_mount_namespace(
        READ_ONLY_SCRIPT,
        tmp_path,
        BOOKWISE_DATA_DIR=str(tmp_path / "mnt/data"),
        BOOKWISE_MIN_FREE_DISK_MB="1",
        TMPDIR=str(tmp_path / "tmp"),
        SITE=str(site),
        PROBE=READ_ONLY_PROBE,
    )
    out = tmp_path / "out"
    assert done.returncode != 98, (out / "ingest.out").read_text()
    assert (out / "search.rc").read_text().strip() == "0", (out / "search.err").read_text()
    assert "Alpha" in (out / "search.out").read_text()
    served = json.loads((out / "probe.json").read_text() or "{}") or (out / "probe.err").read_text()
    assert served == {"hits": 1, "last": "done", "feedback": [503, "feedback_unavailable"]}, served
    assert "data_dir_read_only" in (out / "probe.err").read_text()
    assert not list((tmp_path / "tmp").glob("bookwise-*"))  # the private copies went with their readers


# -- pruning after a crash ----------------------------------------------------------------------


def test_pruning_after_a_crash_removes_the_half_built_generation_and_keeps_the_last_good_one(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    site, _, good = gens
    # What a kill -9 during the next ingest leaves: a newer generation with a shard and no marker.
    half_built = index_root(settings) / "generations" / "29991231T000000000000Z"
    (half_built / "shard" / "segments").mkdir(parents=True)
    (half_built / "shard" / "segments" / "data").write_bytes(b"\0" * 4096)
    (site / "docs/page-0.md").write_text(page(0, 2))
    report = ingest(settings, site)  # BOOKWISE_KEEP_GENERATIONS=2
    assert generations(settings) == sorted([good, str(report.index.generation)])  # was: half-built kept


def test_pruning_never_removes_the_live_or_the_newest_complete_generation(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    _, older, live = gens
    (index_root(settings) / "CURRENT").write_text(json.dumps({"generation": older}))  # rolled back by hand
    half_built = index_root(settings) / "generations" / "29991231T000000000000Z"
    (half_built / "shard").mkdir(parents=True)
    store = EdgeStore(settings.data_dir)
    try:
        assert store.prune(1) == [half_built.name]  # was: the newest complete one went, the half-built stayed
    finally:
        store.close()
    assert generations(settings) == sorted([older, live])


def test_a_generation_is_complete_only_with_a_marker_matching_its_manifest(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    directory = index_root(settings) / "generations" / gens[2]
    assert complete_manifest(directory) is not None
    marker = (directory / "COMPLETE").read_bytes()
    (directory / "COMPLETE").unlink()  # crashed between the manifest and the marker
    assert complete_manifest(directory) is None
    (directory / "COMPLETE").write_bytes(marker)
    manifest = json.loads((directory / "manifest.json").read_text())
    (directory / "manifest.json").write_text(json.dumps(manifest | {"dim": 3}))  # valid JSON, wrong content
    assert complete_manifest(directory) is None
    manifest.pop("edge_layout")  # a generation written before the marker existed: its manifest was last
    (directory / "manifest.json").write_text(json.dumps(manifest))
    (directory / "COMPLETE").unlink()
    assert complete_manifest(directory) is not None


def test_no_complete_generation_at_all_is_index_corrupt_with_the_reindex_hint(settings: Settings) -> None:
    (index_root(settings) / "generations" / "20260101T000000000000Z" / "shard").mkdir(parents=True)
    with pytest.raises(IndexCorruptError, match="--reindex") as caught:
        EdgeStore(settings.data_dir).open_reader()
    assert caught.value.code == "index_corrupt"


# -- corrupt caches -----------------------------------------------------------------------------


def test_corrupt_embedding_cache_is_rebuilt_with_a_warning_not_a_crash(
    settings: Settings, gens: tuple[Path, str, str]
) -> None:
    site, _, _ = gens
    cache = settings.data_dir / "embeddings.sqlite"
    for extra in ("-wal", "-shm"):
        Path(f"{cache}{extra}").unlink(missing_ok=True)
    cache.write_bytes(b"not a database" * 512)
    (site / "docs/page-0.md").write_text(page(0, 2))
    report = ingest(settings, site)
    assert codes(report) == ["embedding_cache_corrupt"]
    assert report.index.switched and report.index.embedded == report.chunks  # nothing cached any more
    rebuilt = SqliteEmbeddingCache(cache)
    assert len(rebuilt.get_many("hash-384", [c[0] for c in store_chunks(settings)])) == report.chunks
    rebuilt.close()


def test_embedding_cache_corrupt_past_its_header_is_rebuilt_when_read(tmp_path: Path, faults: Faults) -> None:
    path = tmp_path / "embeddings.sqlite"
    cache = SqliteEmbeddingCache(path)
    cache.put_many("m", {f"h{n}": [float(n)] * 64 for n in range(2000)})
    cache.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(path, "r+b") as handle:  # trash the table's pages, keep the header and schema page
        handle.seek(8192)
        handle.write(b"\xff" * 65536)
    cache = SqliteEmbeddingCache(path)
    assert cache.get_many("m", [f"h{n}" for n in range(2000)]) == {}
    cache.put_many("m", {"h1": [1.0]})
    assert cache.get_many("m", ["h1"]) == {"h1": [1.0]}
    cache.close()
    assert faults.codes == ["embedding_cache_corrupt"]


@pytest.mark.model
def test_corrupt_adapted_model_is_adapted_again_with_a_warning_not_a_crash(
    settings: Settings, make_site: SiteFactory
) -> None:
    local = settings.model_copy(update={"embedding_provider": "local", "embedding_adapt_max_pairs": 16})
    topics = ["reducers", "actions", "stores", "selectors", "thunks", "middleware", "testing", "devtools"]
    site = make_site(
        {f"docs/{t}.md": f"# {t.title()}\n\n## About {t}\n\nHow {t} work, in one line.\n" for t in topics}
    )
    first = run_ingest(local, read_site_config(site))
    assert first.adapt_s is not None
    weights = model_dir(local.data_dir, first.embed_model) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])  # torn by a crash or a full disk

    page = site / "docs/reducers.md"
    original = page.read_text()
    page.write_text("# Reducers\n\n## About reducers\n\nChanged text.\n")
    with pytest.raises(ConfigError, match="--adapt"):  # an incremental ingest must keep the model
        run_ingest(local, read_site_config(site))
    page.write_text(original)  # the same pairs: the same model name, found corrupt on disk
    again = run_ingest(local, read_site_config(site), adapt=True)
    assert codes(again) == ["adapted_model_corrupt"]
    assert again.adapt_s is not None and again.index.switched
    retriever = Retriever.open(local)
    try:
        assert retriever.search("how do reducers work").sections
    finally:
        retriever.close()


# -- kill -9 mid-ingest -------------------------------------------------------------------------


def bookwise(*args: str, data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"BOOKWISE_EMBEDDING_PROVIDER": "hash", "BOOKWISE_DATA_DIR": str(data_dir)}
    env |= {f"BOOKWISE_{k.upper()}": v for k, v in settings.items()}
    return subprocess.run(
        [sys.executable, "-m", "bookwise.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def killed_mid_ingest(make_site: SiteFactory, tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """An index, then a second ingest killed with SIGKILL while its new generation is being written."""
    site = make_site({f"docs/page-{n}.md": page(n) for n in range(150)})
    data = tmp_path / "data"
    assert bookwise("ingest", str(site), data_dir=data).returncode == 0
    root = data / "index"
    live = json.loads((root / "CURRENT").read_text())["generation"]
    for n in range(150):
        (site / f"docs/page-{n}.md").write_text(page(n, 1))
    env = os.environ | {"BOOKWISE_EMBEDDING_PROVIDER": "hash", "BOOKWISE_DATA_DIR": str(data)}
    process = subprocess.Popen(
        [sys.executable, "-m", "bookwise.cli", "ingest", str(site)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if any(p.name != live for p in (root / "generations").iterdir()):
                break  # the new generation's directory exists: its shard is being written
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    yield site, data, live


def test_kill_9_mid_ingest_leaves_the_live_index_intact_and_the_next_ingest_works(
    killed_mid_ingest: tuple[Path, Path, str],
) -> None:
    site, data, live = killed_mid_ingest
    root = data / "index"
    assert json.loads((root / "CURRENT").read_text())["generation"] == live
    leftovers = [p for p in (root / "generations").iterdir() if p.name != live]
    assert leftovers and all(complete_manifest(p) is None for p in leftovers), "not killed mid-write"
    reader = EdgeStore(data).open_reader()
    assert set(query(reader)) == {live}
    reader.close()
    after = bookwise("ingest", str(site), "--json", data_dir=data)
    assert after.returncode == 0, after.stderr
    report = json.loads(after.stdout)
    assert report["switched"] and report["created"] == 0 and report["updated"] > 0
    assert sorted(p.name for p in (root / "generations").iterdir()) == sorted([live, report["generation"]])
