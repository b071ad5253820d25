"""Copies of a shard that keep its holes.

Edge sizes its memory-mapped files in 32 MB steps and writes only what it uses: a small book's shard
is 258 MB long and 1.6 MB on disk. A plain copy (``shutil.copytree``) writes the holes out as zeros,
so each private copy a reader made took 258 MB of disk and over a second of writing, while the free
space checked before it (the blocks the shard uses) was 1.6 MB.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

# A file the shard's opener is writing, renamed over its target when done: it may vanish while a copy
# lists the directory ("No such file or directory: shard/.atomicwriteLseIuZ" failed a second reader),
# and the copy needs only the target.
_IN_FLIGHT = shutil.ignore_patterns(".atomicwrite*")
_BLOCK = 1 << 20


def copy_shard(source: Path, target: Path) -> None:
    """``source``'s files in ``target`` (which must not exist), their holes left holes."""
    shutil.copytree(source, target, ignore=_IN_FLIGHT, copy_function=copy_keeping_holes)


def copy_keeping_holes(source: str, target: str) -> str:
    """Copy the file ``source`` to ``target`` as ``shutil.copy2`` does, writing only its data: the
    holes of a sparse file stay holes. Where the file system cannot tell holes apart, a plain copy."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        try:
            _copy_data(src.fileno(), dst.fileno(), size)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):  # no SEEK_DATA here
                raise
            src.seek(0)
            dst.seek(0)
            shutil.copyfileobj(src, dst)
        dst.truncate(size)  # a hole at the end is only a length
    shutil.copystat(source, target)
    return target


def _copy_data(src: int, dst: int, size: int) -> None:
    offset = 0
    while offset < size:
        try:
            start = os.lseek(src, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole from here to the end
                return
            raise
        end = os.lseek(src, start, os.SEEK_HOLE)
        while start < end:
            block = os.pread(src, min(_BLOCK, end - start), start)
            if not block:  # the file shrank meanwhile
                return
            os.pwrite(dst, block, start)
            start += len(block)
        offset = end
