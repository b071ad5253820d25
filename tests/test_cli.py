"""`bookwise ingest` as users and CI run it: a real subprocess, exit codes, JSON report."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bookwise.cli import build_parser
from conftest import SiteFactory
from fakellm import FakeLLM


def bookwise(*args: str, data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BOOKWISE_EMBEDDING_PROVIDER": "hash", "BOOKWISE_DATA_DIR": str(data_dir)}
    env |= {f"BOOKWISE_{name.upper()}": value for name, value in settings.items()}
    return subprocess.run(
        [sys.executable, "-m", "bookwise.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_ingest_json_report_then_nothing_to_embed(make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site({"docs/a.md": "## A\n\nAlpha.\n", "docs/b.md": "## B\n\nBeta.\n"})
    first = bookwise("ingest", str(site), "--json", data_dir=tmp_path / "d")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert (report["docs_processed"], report["created"], report["embedded"], report["errors"]) == (
        2,
        2,
        2,
        [],
    )
    second = json.loads(bookwise("ingest", str(site), "--json", data_dir=tmp_path / "d").stdout)
    assert (second["embedded"], second["unchanged"], second["switched"]) == (0, 2, False)


def test_errors_are_reported_and_strict_fails_the_run(make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site({"docs/a.md": "## A\n\nAlpha.\n", "docs/bad.md": "---\ntitle: [x\n---\n## B\n"})
    lenient = bookwise("ingest", str(site), data_dir=tmp_path / "d")
    assert lenient.returncode == 0
    assert "error: docs/bad.md:2:" in lenient.stdout and "front_matter_invalid" in lenient.stdout
    strict = bookwise("ingest", str(site), "--strict", "--json", data_dir=tmp_path / "d")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["errors"][0]["path"] == "docs/bad.md"


def test_strict_ingest_that_fails_switches_nothing(make_site: SiteFactory, tmp_path: Path) -> None:
    # A CI run that "fails the deploy" with --strict used to have switched the API's index already.
    site = make_site({"docs/a.md": "## A\n\nAlpha.\n"})
    assert bookwise("ingest", str(site), data_dir=tmp_path / "d").returncode == 0
    live = (tmp_path / "d" / "index" / "CURRENT").read_text()
    (site / "docs" / "a.md").write_text("## A\n\nAlpha, rewritten.\n")
    (site / "docs" / "bad.md").write_text("---\ntitle: [x\n---\n## B\n")
    strict = bookwise("ingest", str(site), "--strict", "--json", data_dir=tmp_path / "d")
    report = json.loads(strict.stdout)
    assert strict.returncode == 1 and report["held_back"] is True
    assert (report["switched"], report["updated"]) == (False, 1)  # what would have changed, unwritten
    assert (tmp_path / "d" / "index" / "CURRENT").read_text() == live
    text = bookwise("ingest", str(site), "--strict", data_dir=tmp_path / "d")
    assert text.returncode == 1 and "--strict found errors: nothing written" in text.stdout
    lenient = json.loads(bookwise("ingest", str(site), "--json", data_dir=tmp_path / "d").stdout)
    assert (lenient["held_back"], lenient["switched"]) == (False, True)  # without --strict: as before
    assert (tmp_path / "d" / "index" / "CURRENT").read_text() != live


def test_dry_run_writes_no_index(make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site({"docs/a.md": "## A\n\nAlpha.\n"})
    out = bookwise("ingest", str(site), "--dry-run", "--json", data_dir=tmp_path / "d")
    assert json.loads(out.stdout)["dry_run"] is True
    assert not (tmp_path / "d" / "index" / "CURRENT").exists()


def test_flags_set_urls_for_configs_that_cannot_be_read(make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site(
        {
            "docs/01-intro.md": "## Start\n\nGo.\n",
            "docusaurus.config.ts": "export default {baseUrl: process.env.BASE}",
        }
    )
    out = bookwise(
        "ingest",
        str(site),
        "--base-url",
        "/book/",
        "--route-base-path",
        "/",
        "--json",
        data_dir=tmp_path / "d",
    )
    assert out.returncode == 0, out.stderr
    from bookwise.index.edge.store import EdgeStore
    from bookwise.index.store import HybridQuery

    reader = EdgeStore(tmp_path / "d").open_reader()
    try:
        hits = reader.hybrid(HybridQuery([1.0] + [0.0] * 383, reader_query("start"), limit=1, prefetch=5))
        assert hits.fused[0].payload["url"] == "/book/intro#start"
    finally:
        reader.close()


def reader_query(text: str):  # type: ignore[no-untyped-def]
    from bookwise.index.sparse import Bm25Encoder

    return Bm25Encoder().query(text)


def test_missing_site_and_bad_settings_exit_with_clear_messages(tmp_path: Path) -> None:
    missing = bookwise("ingest", str(tmp_path / "nope"), data_dir=tmp_path / "d")
    assert missing.returncode == 1 and "site folder not found" in missing.stderr
    env = {**os.environ, "BOOKWISE_CHUNK_MAX_TOKENS": "three"}
    bad = subprocess.run(
        [sys.executable, "-m", "bookwise.cli", "ingest", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 2 and "BOOKWISE_CHUNK_MAX_TOKENS: Input should be a valid integer" in bad.stderr


def test_search_and_eval_as_a_ci_gate(make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site(
        {
            "docs/store.md": "## Store\n\nThe store holds the state tree.\n",
            "docs/actions.md": "## Actions\n\nActions are plain objects with a type field.\n",
        }
    )
    data = tmp_path / "d"
    assert bookwise("ingest", str(site), data_dir=data).returncode == 0

    found = bookwise("search", "what holds the state tree", "--top-k", "1", "--json", data_dir=data)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert [(s["doc_path"], s["heading"]) for s in result["sections"]] == [("store.md", "Store")]
    assert isinstance(result["sufficient_context"], bool) and result["index_version"]
    human = bookwise("search", "plain objects type field", data_dir=data)
    assert "[1] actions › Actions" in human.stdout and "/docs/actions#actions" in human.stdout

    questions = tmp_path / "q.jsonl"
    gold = [{"doc_path": "actions.md", "heading": "Actions", "heading_level": 2}]
    questions.write_text(
        json.dumps(
            {"id": "a", "question": "plain objects with a type field", "type": "factoid", "gold": gold}
        )
        + "\n"
        + json.dumps({"id": "u", "question": "How do I deploy to Mars?", "type": "unanswerable", "gold": []})
        + "\n"
    )
    report = bookwise("eval", str(questions), "--json", "--details", data_dir=data)
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["section"]["recall@1"] == 1.0 and summary["gate"]["passed"]
    assert summary["details"][0]["ranked"][0] == ["actions.md", "Actions"]
    gate = bookwise("eval", str(questions), "--min-recall", "1.0", "--max-false-refusal", "-1", data_dir=data)
    assert gate.returncode == 1 and "gate failed: false refusal rate" in gate.stderr


def test_search_without_an_index_says_to_ingest(tmp_path: Path) -> None:
    out = bookwise("search", "anything", data_dir=tmp_path / "empty")
    assert out.returncode == 1 and "index_not_found" in out.stderr and "bookwise ingest" in out.stderr


def test_eval_answers_scores_what_readers_get_and_gates_ci(
    make_site: SiteFactory, tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    site = make_site(
        {
            "docs/store.md": "## Store\n\nThe store holds the state tree.\n",
            "docs/actions.md": "## Actions\n\nActions are plain objects with a type field.\n",
        }
    )
    data = tmp_path / "d"
    assert bookwise("ingest", str(site), data_dir=data).returncode == 0
    gold = [{"doc_path": "actions.md", "heading": "Actions", "heading_level": 2}]
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "a",
                "question": "What are actions: plain objects with a type field?",
                "type": "factoid",
                "gold": gold,
                "must_contain": ["type field"],
            }
        )
        + "\n"
    )

    extractive = bookwise("eval", str(questions), "--answers", "--json", data_dir=data)
    assert extractive.returncode == 0, extractive.stderr
    report = json.loads(extractive.stdout)
    assert (report["answer_mode"], report["judge_model"]) == ("extractive", None)
    (detail,) = report["details"]
    assert detail["outcome"] == "answered" and detail["first_cited"] == ["actions.md", "Actions"]
    assert detail["key_facts"] == {"found": ["type field"], "missing": []} and report["gate"]["passed"]

    def wrong_model(body: dict[str, object]) -> list[str]:
        prompt = str(body["messages"][-1]["content"])  # type: ignore[index]
        if "Sentences of the answer:" in prompt:  # the judge
            return ['{"sentences": [{"n": 1, "supported": false, "reason": "not in [2]"}]}']
        store = 1 if "The store holds" in re.split(r"</source-[0-9a-f]+>", prompt)[0] else 2
        return [f"The store holds the state [{store}].\n\n> holds the state tree [{store}]"]

    fake.respond = wrong_model
    gated = bookwise(
        "eval", str(questions), "--answers", "--min-first-cited", "1", "--max-fragments", "0",
        "--min-supported", "1", "--max-false-declines", "0", data_dir=data,
        llm_base_url=llm_server[1], eval_judge_model="judge-1",
    )  # fmt: skip
    assert gated.returncode == 1, gated.stderr
    assert "judge: judge-1" in gated.stdout and "first cited passage is from a gold section" in gated.stdout
    failed = [line for line in gated.stderr.splitlines() if line.startswith("gate failed:")]
    assert failed == [
        "gate failed: first_cited_gold 0.0000 < 1.0",
        "gate failed: fragment_rate 0.5000 > 0.0",  # the cut quote; done.quotes adds a whole one
        "gate failed: supported 0.0000 < 1.0",
    ]
    assert [r["model"] for r in fake.requests if not r.get("stream")] == ["judge-1"]

    misuse = bookwise("eval", str(questions), "--min-first-cited", "0.5", data_dir=data)
    assert misuse.returncode == 1 and "need --answers" in misuse.stderr


def test_deeply_nested_manifest_is_manifest_invalid_not_a_traceback(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    site = make_site({"docs/a.md": "## A\n\nAlpha.\n"})
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    in_a_field = tmp_path / "in-a-field.json"
    in_a_field.write_text(
        '{"manifest_version": 1, "docs": [{"doc_path": ' + "[" * 100_000 + "]" * 100_000 + "}]}"
    )
    for manifest in (nested, in_a_field):
        run = bookwise("ingest", str(site), "--manifest", str(manifest), "--json", data_dir=tmp_path / "d")
        assert run.returncode == 1, run.stderr
        assert "Traceback" not in run.stderr and "[manifest_invalid]" in run.stderr
        error = json.loads(run.stdout)["error"]  # --json: the failure is JSON on stdout too
        assert error["code"] == "manifest_invalid" and "nested too deeply" in error["message"]


def test_insights_until_the_last_representable_day_is_a_clear_error(tmp_path: Path) -> None:
    run = bookwise("insights", "--json", "--until", "9999-12-31", data_dir=tmp_path / "d")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "9999-12-30" in run.stderr  # argparse's usage error names the last day that works


def test_unexpected_error_is_one_line_and_exit_3_traceback_only_with_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import bookwise.cli as cli

    def broken(args: object, settings: object) -> int:
        raise ZeroDivisionError("a bug somewhere")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_search", broken)
    assert cli.main(["search", "anything", "--json"]) == cli.EXIT_INTERNAL == 3
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == "bookwise: internal error [ZeroDivisionError]: a bug somewhere"
    assert "Traceback" not in err and "--debug" in err
    assert json.loads(out)["error"]["code"] == "internal_error"
    assert cli.main(["--debug", "search", "anything"]) == 3
    out, err = capsys.readouterr()
    assert "Traceback (most recent call last)" in err and "ZeroDivisionError: a bug somewhere" in err
    assert out == ""


def test_every_subcommand_runs_the_handler_its_parser_names() -> None:
    """The subcommands are listed once, in build_parser: each sets the function main runs."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    handlers = {name: sub.get_default("run") for name, sub in commands.choices.items()}
    assert all(callable(handler) for handler in handlers.values()), handlers
    assert len(set(handlers.values())) == len(handlers)  # no two commands share one by mistake
    assert parser.parse_args(["search", "a question"]).run is handlers["search"]


def test_serve_help_said_the_port_defaults_to_a_variable_not_to_8000_regression(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Asked "what port does bookwise serve on?", `bookwise serve --help` and the manual's CLI page
    said "(default: BOOKWISE_API_PORT)". The help gives the setting's default, then its variable."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default: 8000, or BOOKWISE_API_PORT)" in help_text
    assert "(default: 127.0.0.1, or BOOKWISE_API_HOST)" in help_text
    assert "(default: 1, or BOOKWISE_API_WORKERS)" in help_text
