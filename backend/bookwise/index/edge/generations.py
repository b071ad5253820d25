"""The on-disk generation format: which generation CURRENT names, when a generation is complete,
and the atomic writes that make it so (see the package's docstring for the layout)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from bookwise.index.store import IndexManifest

COMPLETE = "COMPLETE"
LAYOUT_KEY = "edge_layout"  # in manifests written with a COMPLETE marker: without one they are half-built
LAYOUT = 2

Fault = tuple[str, str]  # (code, message)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)  # the rename itself survives a power cut


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def complete_manifest(directory: Path) -> IndexManifest | None:
    """The manifest of the generation in ``directory`` if it is complete; None if half-built or corrupt."""
    try:
        raw = (directory / "manifest.json").read_bytes()
        data = json.loads(raw)
        manifest = IndexManifest.from_dict(data)
    except (OSError, ValueError, TypeError, AttributeError):  # missing, not JSON, not a manifest
        return None
    if not (directory / "shard").is_dir():
        return None
    try:
        marker = json.loads((directory / COMPLETE).read_bytes())
    except FileNotFoundError:
        return None if LAYOUT_KEY in data else manifest  # an older layout: the manifest was written last
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("manifest_sha256") != _digest(raw):
        return None
    return manifest


def mark_complete(directory: Path, manifest: IndexManifest) -> None:
    """Writes the generation's manifest, then the COMPLETE marker that vouches for it: the marker last."""
    text = json.dumps(json.loads(manifest.to_json()) | {LAYOUT_KEY: LAYOUT}, sort_keys=True)
    write_atomic(directory / "manifest.json", text)
    marker = {"generation": manifest.generation, "manifest_sha256": _digest(text.encode())}
    write_atomic(directory / COMPLETE, json.dumps(marker))  # last: the generation is complete


def read_current(root: Path) -> tuple[str | None, Fault | None]:
    """The generation CURRENT names, and the fault if it is missing (with generations on disk) or corrupt."""
    path = root / "CURRENT"
    try:
        generation = json.loads(path.read_text("utf-8"))["generation"]
        if not isinstance(generation, str) or not generation or "/" in generation:
            raise ValueError(f"not a generation name: {generation!r}")
        return generation, None
    except FileNotFoundError:
        if generation_names(root):
            return None, ("index_current_missing", f"{path} is missing")
        return None, None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, ("index_current_corrupt", f"{path} is corrupt ({exc})")


def write_current(root: Path, generation: str) -> None:
    """Makes ``generation`` the live one: CURRENT replaced by one rename."""
    write_atomic(root / "CURRENT", json.dumps({"generation": generation}))


def generation_names(root: Path) -> list[str]:
    """Every generation directory, oldest first (names start with their UTC creation time)."""
    generations = root / "generations"
    if not generations.is_dir():
        return []
    return sorted(p.name for p in generations.iterdir() if p.is_dir())


def newest_complete(root: Path, skip: str | None = None) -> tuple[str, IndexManifest] | None:
    for name in reversed(generation_names(root)):
        manifest = complete_manifest(root / "generations" / name) if name != skip else None
        if manifest is not None:
            return name, manifest
    return None


def live_generation(root: Path) -> tuple[str | None, IndexManifest | None, Fault | None]:
    """The generation CURRENT names and its manifest when it is complete; else the fault."""
    current, fault = read_current(root)
    if current is None:
        return None, None, fault
    manifest = complete_manifest(root / "generations" / current)
    if manifest is None:
        return (
            current,
            None,
            (
                "index_generation_corrupt",
                f"CURRENT names generation {current}, which is missing, half-built or has a corrupt manifest",
            ),
        )
    return current, manifest, None
