"""`bookwise publish`: pack the live generation of this data dir and upload it to a running server."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx

from bookwise.errors import PublishError
from bookwise.index.transfer import pack_live_generation

UPLOAD_PATH = "/api/admin/index"
CHUNK = 1024 * 1024


def _chunks(archive: IO[bytes]) -> Iterator[bytes]:
    while chunk := archive.read(CHUNK):
        yield chunk


def publish(
    data_dir: Path,
    server_url: str,
    token: str,
    *,
    timeout_s: float,
    suggestions: Callable[[str], Path] | None = None,
) -> dict[str, Any]:
    """The server's answer (the generation it made live). The archive is packed to a temporary file
    first, so its size is declared: a server refuses an oversized upload before it writes a byte."""
    url = server_url.rstrip("/") + UPLOAD_PATH
    with tempfile.TemporaryFile() as archive:
        pack_live_generation(data_dir, archive, suggestions=suggestions)
        size = archive.tell()
        archive.seek(0)
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/gzip",
            "Content-Length": str(size),
        }
        try:
            # The answer comes after the server has checked and installed the generation: the read
            # timeout covers that too.
            response = httpx.put(
                url, content=_chunks(archive), headers=headers, timeout=httpx.Timeout(timeout_s)
            )
        except httpx.HTTPError as exc:
            raise PublishError(f"could not upload the index to {url}: {exc or type(exc).__name__}") from exc
    try:
        answer: Any = response.json()
    except ValueError:
        answer = None
    if response.status_code != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            raise PublishError(
                f"{url} refused the index ({response.status_code} {error.get('code')}): "
                f"{error.get('message')}",
                answer=answer,
            )
        raise PublishError(f"{url} answered {response.status_code}: {response.text[:300]}")
    return answer
