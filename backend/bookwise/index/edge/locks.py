"""The ``flock``s that let several processes share one index, and the readers' private copies
they guard: a lock is held through an open descriptor, so it goes when its process dies."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def lock_path(path: Path, operation: int) -> int | None:
    """An open descriptor of ``path`` holding the ``flock`` asked for; None if another holds it.

    Directories are locked through their own descriptor, so a read-only data dir can be locked too;
    closing the descriptor releases the lock (also when the process dies).
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def locked(path: Path, operation: int) -> Iterator[None]:
    fd = lock_path(path, operation)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def remove_stale_copies(root: Path) -> list[str]:
    """Private copies under ``readers`` whose process died (their directory's lock is free)."""
    readers = root / "readers"
    if not readers.is_dir():
        return []
    removed = []
    with locked(readers, fcntl.LOCK_EX):  # a new copy is locked before anyone may look
        for copy in readers.iterdir():
            try:
                fd = lock_path(copy, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # removed meanwhile, or not a directory we made
                continue
            if fd is not None:
                shutil.rmtree(copy, ignore_errors=True)
                os.close(fd)
                removed.append(copy.name)
    return removed
