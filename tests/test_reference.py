"""The reference pages (settings, errors, the CLI, the HTTP API) are generated from the code and must
be current: a change to a setting, an error class, a flag or a request model without regenerating
them fails here, naming the command that fixes it."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bookwise.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen = load_generator()


@pytest.fixture(scope="module")
def pages() -> dict[Path, str]:
    return gen.generate()  # type: ignore[no-any-return]


def test_the_reference_pages_are_current(pages: dict[Path, str]) -> None:
    stale = [path.name for path, page in pages.items() if path.read_text(encoding="utf-8") != page]
    assert stale == [], f"stale reference pages {stale}: run `{gen.COMMAND}` and commit them"


def test_every_setting_and_error_has_a_description() -> None:
    """The pages are only as good as the code's text: every field and error class says what it is."""
    assert [name for name, field in Settings.model_fields.items() if not field.description] == []
    assert [cls.__name__ for cls in gen.error_tree() if not gen.docstring(cls)] == []


def test_every_setting_error_command_and_route_is_on_its_page(pages: dict[Path, str]) -> None:
    page = {path.name: text for path, text in pages.items()}
    for name in Settings.model_fields:
        assert f"| `BOOKWISE_{name.upper()}` |" in page["settings.md"]
    for cls in gen.error_tree():
        assert f"| `{cls.code}` | {cls.status_code} |" in page["errors.md"]
    for command in ("ingest", "search", "eval", "serve", "ask", "llms", "mcp", "publish", "insights"):
        assert f"## `bookwise {command}`" in page["cli.md"]
    assert "`--forget-before DATE`" in page["cli.md"]
    for route in ("POST /api/chat", "POST /api/search", "POST /api/feedback", "PUT /api/admin/index"):
        assert f"### `{route}`" in page["http-api.md"]
    assert "| `done` |" in page["http-api.md"] and "`answer_kind`" in page["http-api.md"]


def test_the_pages_are_mdx_safe(pages: dict[Path, str]) -> None:
    """Docusaurus reads `.md` as MDX: a bare `<` opens a tag and `{` an expression, outside code."""
    for path, text in pages.items():
        if path.suffix != ".md":
            continue  # the events' JSON Schema, for the widget's tests
        body, fenced = text.split("\n", 1)[1], False
        for line in body.splitlines():
            if line.startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            prose = re.sub(r"(`+)(?:(?!\1).)+?\1", "", line)
            assert re.search(r"(?<!\\)[<{}]", prose) is None, f"{path.name}: {line}"


def test_prose_is_escaped_but_code_is_not() -> None:
    assert gen.text("a <b> {c} `<d> {e}`") == "a \\<b> \\{c\\} `<d> {e}`"
    assert gen.cell("x | `a | b`\n y") == "x \\| `a \\| b` y"


def test_the_check_names_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for path, page in gen.generate().items():
        (tmp_path / path.name).write_text(page, encoding="utf-8")
    monkeypatch.setattr(gen, "DOCS", tmp_path)
    assert gen.main(["--check"]) == 0
    errors = tmp_path / "errors.md"
    errors.write_text(errors.read_text(encoding="utf-8").replace("`disk_full`", "`disk_gone`"))
    assert gen.main(["--check"]) == 1
    assert capsys.readouterr().out == f"stale: docs/errors.md (run: {gen.COMMAND})\n"
