"""Data-directory faults: a nearly full disk is refused, a full one named, recovered faults logged.

Qdrant Edge writes through memory maps: when the disk fills under one, the process dies of SIGBUS
with no message. Checking the free space before each step that writes keeps that from happening
(as long as the minimum exceeds what one step writes), and an ``ENOSPC`` that still happens is
reported as ``disk_full`` rather than a traceback.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

from bookwise.errors import DiskFullError

MB = 1024 * 1024
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_TEXTS = ("no space left on device", "disk quota exceeded", "database or disk is full")

logger = logging.getLogger("bookwise.index")


def free_bytes(path: Path) -> int:
    """Free space of the filesystem holding ``path`` (its nearest existing ancestor)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def read_only(path: Path) -> bool:
    """Whether ``path`` cannot be written: a read-only mount (which binds root too) or no permission."""
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY) or not os.access(path, os.W_OK)


def used_bytes(directory: Path) -> int:
    """Space the files under ``directory`` take on disk: allocated blocks, so a sparse file counts the
    data it holds, not its length."""
    total = 0
    for path in directory.rglob("*"):
        try:
            total += path.lstat().st_blocks * 512
        except OSError:  # removed meanwhile
            pass
    return total


INGEST_AGAIN = "run `bookwise ingest` again"


def ensure_free_space(
    path: Path, min_free_bytes: int, doing: str, *, needed_bytes: int = 0, then: str = INGEST_AGAIN
) -> None:
    """Raise ``DiskFullError`` before ``doing`` unless the disk of ``path`` has ``needed_bytes`` free
    beyond the minimum (a minimum of 0 turns the check off); ``then``: what to do once space is freed."""
    if min_free_bytes <= 0:
        return
    free = free_bytes(path)
    if free < min_free_bytes + needed_bytes:
        need = f" + {needed_bytes / MB:.0f} MB for the new generation" if needed_bytes else ""
        raise DiskFullError(
            f"only {free / MB:.0f} MB free on the disk of {path} (BOOKWISE_MIN_FREE_DISK_MB is "
            f"{min_free_bytes / MB:.0f}{need}); stopped before {doing}, the live index is untouched: "
            f"free some space (or lower BOOKWISE_MIN_FREE_DISK_MB) and {then}"
        )


def is_disk_full(exc: BaseException) -> bool:
    """An OS error, an SQLite error or a Qdrant Edge error (plain text) that means the disk is full."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _FULL_TEXTS)


def disk_full_error(path: Path, exc: BaseException) -> DiskFullError:
    return DiskFullError(
        f"the disk of {path} is full ({exc}); the write was abandoned and the live index is untouched: "
        "free some space and run `bookwise ingest` again"
    )


def warn(code: str, message: str) -> None:
    """A data-directory fault recovered from: logged with its stable code (the API logs it as JSON,
    ``bookwise ingest`` lists it in its report)."""
    logger.warning(f"{code}: {message}", extra={"fields": {"code": code}})
