"""Copying a shard's files: the same bytes and length, the holes left holes."""

from __future__ import annotations

import os
from pathlib import Path

from bookwise.index.edge.copies import copy_keeping_holes, copy_shard

MB = 1024 * 1024


def sparse_file(path: Path, parts: list[tuple[int, bytes]], length: int) -> Path:
    with open(path, "wb") as handle:
        for offset, data in parts:
            handle.seek(offset)
            handle.write(data)
        handle.truncate(length)
    return path


def test_data_between_holes_is_copied_and_the_holes_stay_holes(tmp_path: Path) -> None:
    parts = [(0, b"head" * 1000), (8 * MB, os.urandom(3 * MB)), (20 * MB, b"tail")]
    source = sparse_file(tmp_path / "a.dat", parts, 32 * MB)  # ends in a hole too
    os.chmod(source, 0o640)
    copy_keeping_holes(str(source), str(tmp_path / "b.dat"))
    copied = tmp_path / "b.dat"
    assert copied.read_bytes() == source.read_bytes()
    assert copied.stat().st_size == 32 * MB
    assert copied.stat().st_blocks * 512 < 6 * MB  # the data, not the 32 MB
    assert copied.stat().st_mode == source.stat().st_mode


def test_a_file_without_holes_and_an_empty_one_are_copied_whole(tmp_path: Path) -> None:
    dense = tmp_path / "dense"
    dense.write_bytes(os.urandom(MB + 17))
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    for source in (dense, empty):
        copy_keeping_holes(str(source), str(tmp_path / f"{source.name}.copy"))
        assert (tmp_path / f"{source.name}.copy").read_bytes() == source.read_bytes()


def test_a_shard_copy_skips_files_in_flight(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    (shard / "segments").mkdir(parents=True)
    sparse_file(shard / "segments" / "page_0.dat", [(MB, b"points")], 32 * MB)
    (shard / ".atomicwriteAbc").write_text("being written")
    copy_shard(shard, tmp_path / "copy")
    assert sorted(p.name for p in (tmp_path / "copy").rglob("*")) == ["page_0.dat", "segments"]
    assert (tmp_path / "copy/segments/page_0.dat").read_bytes() == (
        shard / "segments/page_0.dat"
    ).read_bytes()
