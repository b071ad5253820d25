"""One version: ``bookwise.__version__`` is the source; the widget's and the plugin's package.json carry the
same string, the built widget bundle says it, and ``/api/config`` reports it (the widget compares it
with the plugin's and its own, and says so when they do not go together)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import local_http
from apiserver import running_api
from bookwise import __version__
from bookwise.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def package_version(folder: str) -> str:
    version: str = json.loads((ROOT / folder / "package.json").read_text(encoding="utf-8"))["version"]
    return version


def test_widget_and_plugin_packages_carry_the_python_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert package_version("widget") == __version__
    assert package_version("website-plugin") == __version__


def test_the_served_widget_bundle_was_built_from_this_version() -> None:
    bundle = (ROOT / "backend" / "bookwise" / "api" / "static" / "widget.js").read_text(encoding="utf-8")
    banner = re.match(r"/\*! Bookwise widget (\S+) ", bundle)
    assert banner is not None
    assert banner.group(1) == __version__, "rebuild the widget: cd widget && node build.mjs"


def test_api_config_reports_the_version_beside_the_limits(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path, embedding_provider="hash")  # type: ignore[call-arg]
    with running_api(settings) as url:
        served = local_http.get(f"{url}/api/config", timeout=10).json()
    assert served["version"] == __version__
    assert set(served["limits"]) >= {"max_question_chars", "max_history_chars"}


VERSIONED = [
    "backend/bookwise/__init__.py",
    "widget/package.json",
    "widget/package-lock.json",
    "website-plugin/package.json",
    "website-plugin/package-lock.json",
    "website-plugin/example/package-lock.json",
]


def copy_versioned(into: Path) -> None:
    for name in VERSIONED:
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_bytes((ROOT / name).read_bytes())


def set_version(root: Path, version: str) -> None:
    script = ROOT / "scripts" / "set-version"
    subprocess.run([sys.executable, str(script), version, "--root", str(root), "--no-build"], check=True)


def test_set_version_writes_every_place_npm_and_python_read(tmp_path: Path) -> None:
    copy_versioned(tmp_path)
    set_version(tmp_path, "7.8.9")
    assert '__version__ = "7.8.9"' in (tmp_path / "backend/bookwise/__init__.py").read_text(encoding="utf-8")
    for folder in ("widget", "website-plugin"):
        assert (
            json.loads((tmp_path / folder / "package.json").read_text(encoding="utf-8"))["version"] == "7.8.9"
        )
        lock = json.loads((tmp_path / folder / "package-lock.json").read_text(encoding="utf-8"))
        assert (lock["version"], lock["packages"][""]["version"]) == ("7.8.9", "7.8.9")
    example = json.loads((tmp_path / "website-plugin/example/package-lock.json").read_text(encoding="utf-8"))
    assert example["packages"][".."]["version"] == "7.8.9"


def test_set_version_to_the_current_version_changes_no_byte(tmp_path: Path) -> None:
    """It writes JSON the way npm does, so a release's diff is the version lines and nothing else."""
    copy_versioned(tmp_path)
    set_version(tmp_path, __version__)
    assert [name for name in VERSIONED if (tmp_path / name).read_bytes() != (ROOT / name).read_bytes()] == []
