"""The directory every serving process writes its metrics to (prometheus-client's multiprocess mode),
its lifecycle, and the registry that sums it.

The mode is chosen when ``prometheus_client`` is first imported, so ``prepare_metrics_dir`` runs
before that, in the serving process, before workers start: hence the lazy imports.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bookwise.api.metrics.access import check_metrics_config
from bookwise.errors import ConfigError
from bookwise.settings import MetricsSettings

if TYPE_CHECKING:  # at run time it comes later: see the module's docstring
    from prometheus_client import CollectorRegistry

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_PRIVATE_PREFIX = "bookwise-metrics-"
_LIVE_GAUGE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")


@functools.cache
def registry() -> CollectorRegistry:
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    path = os.environ.get(MULTIPROC_ENV)
    if path is None:
        return REGISTRY  # one process: the default registry, with its process and GC collectors
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    return registry


def forget_dead_processes() -> None:
    """A worker that crashed never said goodbye: its live gauges (slots in use) would count for ever."""
    path = os.environ.get(MULTIPROC_ENV)
    if path is None:
        return
    from prometheus_client.multiprocess import mark_process_dead

    for file in Path(path).glob("gauge_live*.db"):
        match = _LIVE_GAUGE_FILE.fullmatch(file.name)
        if match and not _alive(int(match.group(1))):
            mark_process_dead(int(match.group(1)), path)  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def prepare_metrics_dir(settings: MetricsSettings) -> Path | None:
    """Called by ``bookwise serve`` before the app (and its workers) start: the directory every process
    writes its metrics to, or None when metrics are off.

    ``PROMETHEUS_MULTIPROC_DIR`` set by the operator is used as it is (several ``bookwise serve`` on one
    machine may share it; emptying it between runs is theirs to do). Otherwise a private directory is
    made, handed to the workers through the environment, and removed at exit (or by the next start).
    """
    check_metrics_config(settings)
    if not settings.metrics:
        return None
    given = os.environ.get(MULTIPROC_ENV)
    if "prometheus_client" in sys.modules and given is None:
        raise RuntimeError("prepare_metrics_dir must run before prometheus_client is imported")
    if given is not None:
        if not Path(given).is_dir():
            raise ConfigError(f"{MULTIPROC_ENV} is not a directory: {given}")
        return Path(given)
    path = _private_dir()
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def _private_dir() -> Path:
    """A new directory, removed at exit; one left by a server that died without exiting (uvicorn ends
    on SIGTERM by raising it again, so atexit does not run) is removed by the next start."""
    root = Path(tempfile.gettempdir())
    for stale in root.glob(f"{_PRIVATE_PREFIX}*-*"):
        pid = stale.name.removeprefix(_PRIVATE_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)) or stale.is_symlink() or not stale.is_dir():
            continue
        if stale.stat().st_uid == os.getuid():
            shutil.rmtree(stale, ignore_errors=True)
    path = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
