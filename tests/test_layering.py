"""The package layout is the data flow: a stage never imports a later one, and the runtime never
imports the evaluation that measures it (only the CLI and the scripts may)."""

from __future__ import annotations

import ast
from pathlib import Path

import bookwise

STAGES = ["ingest", "index", "retrieval", "generation", "insights", "api"]
EVALUATION = "evaluation"  # beside the stages: it depends on them, never the reverse
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
            if len(parts) > 1 and parts[0] == "bookwise" and parts[1] in [*STAGES, EVALUATION]:
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


def test_nothing_but_the_cli_imports_the_evaluation() -> None:
    runtime = [*(p for stage in STAGES for p in (ROOT / stage).rglob("*.py")), *ROOT.glob("*.py")]
    importers = [
        str(path.relative_to(ROOT))
        for path in runtime
        if path.name != "cli.py" and EVALUATION in imported_stages(path)
    ]
    assert importers == []


def test_the_evaluation_is_checked_and_the_cli_may_use_it() -> None:
    """The check above can fail: the evaluation is there, and the CLI imports it."""
    assert len(list((ROOT / EVALUATION).rglob("*.py"))) > 5
    assert EVALUATION in imported_stages(ROOT / "cli.py")
