"""The release artifacts, as `scripts/release` makes them, built once per run.

The owner's path and the lean server both install the wheel; building it (an isolated build
environment, the sdist, the wheel, `npm pack`) costs about as much as either install. The first
process to need the artifacts builds them under a lock; the others wait and read the same folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from examplesite import made_once

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600


def release_env() -> dict[str, str]:
    """A shell without the checkout on PYTHONPATH or test settings, as a maintainer's would be."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOOKWISE_", "PYTHON"))}
    return env | {"PYTHON": sys.executable}


def release_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding this checkout's wheel, sdist and plugin tarball; read it, never write."""
    return made_once(tmp_path_factory, "release", _release)


def _release(into: Path) -> None:
    done = subprocess.run(
        [str(ROOT / "scripts" / "release"), str(into)],
        cwd=ROOT,
        env=release_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"scripts/release exited {done.returncode}\n{done.stdout}\n{done.stderr}"
