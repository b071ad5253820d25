"""Readers in other processes: pruning never removes a generation one still has open, and the
private copy of a reader that died is removed by the next reader or ingest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from apiserver import BOOK, build_book, ingest_hashed

BACKEND = Path(__file__).resolve().parents[2] / "backend"  # this checkout's code, whatever the cwd

# A reader process: opens the index, says which generation it serves, then refreshes on each line.
READER = """
import sys
from pathlib import Path
from bookwise.index.edge.store import EdgeStore
reader = EdgeStore(Path(sys.argv[1])).open_reader()
print(reader.manifest.generation, flush=True)
for _ in sys.stdin:
    reader.refresh()
    print(reader.manifest.generation, flush=True)
"""


def start_reader(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", READER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def refresh(process: subprocess.Popen[str]) -> str:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("refresh\n")
    process.stdin.flush()
    return process.stdout.readline().strip()


def live(data_dir: Path) -> str:
    return str(json.loads((data_dir / "index" / "CURRENT").read_text())["generation"])


def edit(root: Path, line: str) -> None:
    (root / "site/docs/care/feeding.md").write_text(BOOK["docs/care/feeding.md"] + f"\n{line}\n")


def test_pruning_never_deletes_a_generation_another_process_still_reads(tmp_path: Path) -> None:
    settings = build_book(tmp_path, keep_generations=1)
    generations = settings.data_dir / "index" / "generations"
    first, old = start_reader(settings.data_dir)  # opens the shard in place
    second, _ = start_reader(settings.data_dir)  # serves a private copy
    try:
        edit(tmp_path, "One more line.")
        report = ingest_hashed(settings, tmp_path / "site")  # keep_generations=1
        assert (
            old not in report.index.pruned and (generations / old).is_dir()
        )  # was: removed under the readers
        assert {w["code"] for w in report.warnings} == {"index_generation_in_use"}  # and said why
        new = live(settings.data_dir)
        assert refresh(first) == new and refresh(second) == new
        edit(tmp_path, "Yet another line.")
        report = ingest_hashed(settings, tmp_path / "site")
        assert old in report.index.pruned and not (generations / old).exists()  # released: pruned at last
        assert refresh(first) == refresh(second) == live(settings.data_dir)
    finally:
        for process in (first, second):
            process.kill()
            process.communicate()


def test_private_copy_of_a_killed_reader_is_removed_by_the_next_ingest(tmp_path: Path) -> None:
    settings = build_book(tmp_path)
    readers = settings.data_dir / "index" / "readers"
    owner, _ = start_reader(settings.data_dir)
    copier, _ = start_reader(settings.data_dir)
    try:
        assert len(list(readers.iterdir())) == 1  # the second reader's copy
        os.kill(copier.pid, signal.SIGKILL)  # no chance to remove it
        copier.communicate()
        assert len(list(readers.iterdir())) == 1
        edit(tmp_path, "One more line.")
        ingest_hashed(settings, tmp_path / "site")
        assert list(readers.iterdir()) == []
        assert refresh(owner) == live(settings.data_dir)
    finally:
        owner.kill()
        owner.communicate()


def test_a_second_reader_copies_the_shard_while_its_opener_writes_a_file_regression(tmp_path: Path) -> None:
    """Two `bookwise eval` processes opened one index at once and the second failed with
    store_unavailable, "No such file or directory: shard/.atomicwriteLseIuZ": the first had a file in
    flight (written aside, then renamed over its target), gone before the copy reached it. Such a file
    is not copied. A dangling link stands for it: listed, then nothing there to read."""
    settings = build_book(tmp_path)
    shard = settings.data_dir / "index" / "generations" / live(settings.data_dir) / "shard"
    owner, generation = start_reader(settings.data_dir)  # opens the shard in place
    (shard / ".atomicwriteLseIuZ").symlink_to(tmp_path / "renamed-away")
    copier, served = start_reader(settings.data_dir)  # serves a private copy
    try:
        assert served == generation
        assert refresh(copier) == generation
    finally:
        for process in (owner, copier):
            process.kill()
            process.communicate()


def blocks_and_length(directory: Path) -> tuple[int, int]:
    files = [path.stat() for path in directory.rglob("*") if path.is_file()]
    return sum(f.st_blocks * 512 for f in files), sum(f.st_size for f in files)


def test_a_private_copy_takes_the_disk_the_shard_takes_not_its_length_regression(tmp_path: Path) -> None:
    """A second reader's copy of a small book's shard took 258 MB of disk where the shard took 1.6 MB:
    Edge's memory-mapped files are mostly holes, and the copy wrote them out as zeros, while the
    free-space check before it counted only the 1.6 MB."""
    settings = build_book(tmp_path)
    shard = settings.data_dir / "index" / "generations" / live(settings.data_dir) / "shard"
    owner, _ = start_reader(settings.data_dir)  # opens the shard in place
    copier, _ = start_reader(settings.data_dir)  # serves a private copy
    try:
        (copy,) = (settings.data_dir / "index" / "readers").iterdir()
        used, length = blocks_and_length(shard)
        copy_used, copy_length = blocks_and_length(copy / "shard")
        assert length > 20 * used  # the shard is mostly holes
        assert copy_length == length
        assert copy_used < 2 * used + 4 * 1024 * 1024  # was 258 MB against 1.6 MB
        edit(tmp_path, "One more line.")
        ingest_hashed(settings, tmp_path / "site")
        assert refresh(copier) == live(
            settings.data_dir
        )  # the copies keep serving, generation after generation
    finally:
        for process in (owner, copier):
            process.kill()
            process.communicate()
