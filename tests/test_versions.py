"""One version: ``bookwise.__version__`` is the source; the widget's and the plugin's package.json carry the
same string, the built widget bundle says it, and ``/api/config`` reports it (the widget compares it
with the plugin's and its own, and says so when they do not go together)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

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
        served = httpx.get(f"{url}/api/config", timeout=10).json()
    assert served["version"] == __version__
    assert set(served["limits"]) >= {"max_question_chars", "max_history_chars"}
