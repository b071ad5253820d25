"""The package layout is the data flow: a stage never imports a later one."""

from __future__ import annotations

import ast
from pathlib import Path

import bookwise

STAGES = ["ingest", "index", "retrieval", "generation", "insights", "api"]
ROOT = Path(bookwise.__file__).parent


def imported_stages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else ([a.name for a in node.names] if isinstance(node, ast.Import) else [])
        )
        for name in names:
            parts = name.split(".")
            if len(parts) > 1 and parts[0] == "bookwise" and parts[1] in STAGES:
                found.add(parts[1])
    return found


def test_no_stage_imports_a_later_stage() -> None:
    checked = 0
    for stage_index, stage in enumerate(STAGES):
        for path in (ROOT / stage).rglob("*.py"):
            later = imported_stages(path) & set(STAGES[stage_index + 1 :])
            assert not later, f"{path.relative_to(ROOT)} imports later stage(s) {sorted(later)}"
            checked += 1
    assert checked > 10
