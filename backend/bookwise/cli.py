"""The `bookwise` command: a thin adapter from arguments to library calls."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bookwise import __version__
from bookwise.errors import BookwiseError
from bookwise.settings import Settings, describe_settings_error

if TYPE_CHECKING:
    from collections.abc import Callable

    from bookwise.generation.events import AnswerSummary
    from bookwise.ingest.site import SiteConfig

    Commands = argparse._SubParsersAction[argparse.ArgumentParser]  # what add_subparsers returns
    Run = Callable[[argparse.Namespace, Settings], int]  # a subcommand, given its arguments

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_MEANINGS = {
    EXIT_OK: "success",
    EXIT_ERRORS: "an error with a code (`bookwise: error [code]: ...`), a failed quality gate of `eval`, "
    "per-file errors under `ingest --strict`, or an answer that ended in an error",
    EXIT_USAGE: "a usage error (an unknown flag, a bad value) or invalid settings",
    EXIT_INTERNAL: "an unexpected error (a bug): one line, the traceback with `--debug`",
}
WORKER_HEALTHCHECK_S = 30


def _from_setting(name: str) -> str:
    """ "default: 8000, or BOOKWISE_API_PORT": the setting's own default, then where to change it."""
    return f"default: {Settings.model_fields[name].default}, or BOOKWISE_{name.upper()}"


def _bool(value: str) -> bool:
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _workers(value: str) -> int:
    workers = int(value)
    if not 1 <= workers <= 64:
        raise argparse.ArgumentTypeError(f"between 1 and 64, not {workers}")
    return workers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bookwise",
        description="Chat with a Docusaurus book.",
        epilog="exit status: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_MEANINGS.items()),
    )
    parser.add_argument("--version", action="version", version=f"bookwise {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="print the traceback of an unexpected error (a bug report's)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        _add_ingest_command,
        _add_search_command,
        _add_eval_command,
        _add_serve_command,
        _add_ask_command,
        _add_llms_command,
        _add_mcp_command,
        _add_publish_command,
        _add_insights_command,
    ):
        add(commands)
    return parser


def _add_ingest_command(commands: Commands) -> None:
    ingest = commands.add_parser("ingest", help="index a Docusaurus site (incremental, atomic switch)")
    ingest.add_argument("site_dir", type=Path, help="the site folder (with docusaurus.config.* and docs/)")
    ingest.add_argument("--url", help="site URL (config `url`)")
    ingest.add_argument("--base-url", help="config `baseUrl`, e.g. /mysite/")
    ingest.add_argument("--docs-path", help="docs folder relative to the site (docs plugin `path`)")
    ingest.add_argument("--route-base-path", help="docs plugin `routeBasePath` (`/` for docs-only sites)")
    ingest.add_argument("--trailing-slash", type=_bool, help="config `trailingSlash` (true/false)")
    ingest.add_argument(
        "--docs-commit", help="commit the docs were built from (default: git HEAD of the site)"
    )
    ingest.add_argument(
        "--manifest",
        type=Path,
        action="append",
        help="build manifest of docusaurus-plugin-bookwise (repeat per locale): checked, and its "
        "permalinks and heading ids preferred to Bookwise's own",
    )
    ingest.add_argument(
        "--no-llms",
        action="store_true",
        help="with --manifest, do not write llms.txt and the .md twins into the manifest's build folder",
    )
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    ingest.add_argument("--dry-run", action="store_true", help="report what would change; write nothing")
    ingest.add_argument("--strict", action="store_true", help="exit non-zero on any per-file error")
    ingest.add_argument(
        "--reindex", action="store_true", help="rebuild from scratch (e.g. after a model change)"
    )
    ingest.add_argument(
        "--adapt",
        action="store_true",
        help="adapt the local embedder to the site again and rebuild (after large content changes)",
    )
    ingest.set_defaults(run=_ingest)


def _add_search_command(commands: Commands) -> None:
    search = commands.add_parser("search", help="ranked sections for a question, with citations")
    search.add_argument("question")
    search.add_argument("--top-k", type=int, help=f"sections to return ({_from_setting('retrieval_top_k')})")
    _add_filter_flags(search)
    search.add_argument("--json", action="store_true", help="print the result as JSON")
    search.set_defaults(run=_search)


def _add_eval_command(commands: Commands) -> None:
    evaluate = commands.add_parser(
        "eval", help="retrieval (or, with --answers, answer) metrics on golden questions (a CI gate)"
    )
    evaluate.add_argument("questions", type=Path, help="a questions.jsonl file (corpora README format)")
    evaluate.add_argument("--k", type=int, default=5, help="depth of the headline recall (default 5)")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--details", action="store_true", help="add each question's ranked sections")
    evaluate.add_argument("--min-recall", type=float, help="fail (exit 1) if section recall@k is lower")
    evaluate.add_argument("--min-mrr", type=float, help="fail if section MRR@10 is lower")
    evaluate.add_argument("--min-refusal", type=float, help="fail if the unanswerable refusal rate is lower")
    evaluate.add_argument(
        "--max-false-refusal", type=float, help="fail if the false refusal rate (answerable) is higher"
    )
    _add_answer_eval_flags(evaluate)
    evaluate.set_defaults(run=_eval)


def _add_serve_command(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the HTTP API (SSE answers, search, feedback, widget)")
    serve.add_argument("--host", help=f"address to listen on ({_from_setting('api_host')})")
    serve.add_argument("--port", type=int, help=f"port to listen on ({_from_setting('api_port')})")
    serve.add_argument("--site", type=Path, help="also serve this built site at / (BOOKWISE_SITE_DIR)")
    serve.add_argument(
        "--workers", type=_workers, help=f"API processes on this port ({_from_setting('api_workers')})"
    )
    serve.set_defaults(run=_serve)


def _add_ask_command(commands: Commands) -> None:
    ask = commands.add_parser("ask", help="stream an answer in the terminal (the API's code path)")
    ask.add_argument("question")
    ask.add_argument("--selected-text", help="answer only from this passage (selected-text mode)")
    ask.add_argument(
        "--page-url",
        help="the page the question is asked from, as the widget sends the reader's (it settles what a "
        "short question means, and locates a selected passage's section for the citation)",
    )
    ask.add_argument("--heading-id", help="the heading id above the passage")
    ask.add_argument(
        "--scope", choices=["selection", "section", "book"], help="widen a selected-text question"
    )
    ask.add_argument("--top-k", type=int, help=f"sections to retrieve ({_from_setting('retrieval_top_k')})")
    ask.add_argument(
        "--action",
        choices=["ask", "explain", "example", "quiz", "summarize_page", "quiz_page"],
        default="ask",
        help="a study action: on --selected-text (explain, example, quiz) or on --page-url (summarize_page, "
        "quiz_page); the question may then be empty",
    )
    _add_filter_flags(ask)
    ask.add_argument("--json", action="store_true", help="print the events as JSON lines")
    ask.set_defaults(run=_ask)


def _add_llms_command(commands: Commands) -> None:
    llms = commands.add_parser("llms", help="write llms.txt, llms-full.txt and .md twins into a built site")
    llms.add_argument("site_dir", type=Path, help="the site folder (with docusaurus.config.* and docs/)")
    llms.add_argument("--out", type=Path, required=True, help="the built site folder (e.g. build/)")
    llms.add_argument(
        "--manifest",
        type=Path,
        action="append",
        help="build manifest of docusaurus-plugin-bookwise (default: OUT/bookwise-manifest.json if present)",
    )
    llms.add_argument("--title", help="llms.txt title (default: the config's `title`)")
    llms.add_argument("--summary", help="llms.txt summary (default: the config's `tagline`)")
    llms.add_argument("--json", action="store_true", help="print the report as JSON")
    llms.set_defaults(run=_llms)


def _add_mcp_command(commands: Commands) -> None:
    mcp = commands.add_parser(
        "mcp", help="serve the book to AI agents over MCP on stdin/stdout (for an editor)"
    )
    mcp.set_defaults(run=_mcp)


def _add_publish_command(commands: Commands) -> None:
    publish = commands.add_parser(
        "publish",
        help="upload this data dir's live index generation to a running server (the embedded index); "
        "the token is BOOKWISE_ADMIN_TOKEN",
    )
    publish.add_argument(
        "--server", required=True, help="the server's base URL, e.g. https://bot.example.com"
    )
    publish.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the upload and the server's checks"
    )
    publish.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    publish.set_defaults(run=_publish)


ANSWER_GATES = {
    "--min-first-cited": "fail if fewer answers' first cited passage is from a gold section",
    "--min-any-cited": "fail if fewer answers cite a gold section",
    "--min-key-facts": "fail if the share of must_contain terms present is lower",
    "--max-fragments": "fail if the share of quoted passages that are fragments is higher",
    "--min-declined": "fail if fewer unanswerable questions are declined",
    "--max-false-declines": "fail if more answerable questions are declined",
    "--min-supported": "fail if fewer judged answers have every sentence supported (LLM judge)",
}


def _add_answer_eval_flags(parser: argparse.ArgumentParser) -> None:
    answers = parser.add_argument_group("answers (--answers: the full answer path, as the API answers)")
    answers.add_argument("--answers", action="store_true", help="answer every question and score the answers")
    answers.add_argument("--concurrency", type=int, default=4, help="questions answered at once (default 4)")
    answers.add_argument("--limit", type=int, help="only the first N questions (a cheap trial run)")
    answers.add_argument("--no-judge", action="store_true", help="skip the LLM judge of supported sentences")
    answers.add_argument(
        "--reader-page",
        choices=("none", "gold", "other"),
        default="none",
        help="ask each question from a page, as the widget sends the reader's: a page of its gold "
        "sections, or another page of the book (default none)",
    )
    for flag, meaning in ANSWER_GATES.items():
        answers.add_argument(flag, type=float, help=meaning)


def _add_insights_report_flags(parser: argparse.ArgumentParser) -> None:
    report = parser.add_argument_group("the report (from the question log, BOOKWISE_QUESTION_LOG)")
    report.add_argument(
        "--out", type=Path, metavar="FILE", help="write the HTML report (one self-contained file)"
    )
    report.add_argument(
        "--json",
        nargs="?",
        const=Path("-"),
        type=Path,
        metavar="FILE",
        help="the report as JSON (stdout without FILE)",
    )
    report.add_argument(
        "--csv",
        nargs="?",
        const=Path("-"),
        type=Path,
        metavar="FILE",
        help="the log as CSV, one answer a row",
    )
    report.add_argument(
        "--export-questions",
        type=Path,
        metavar="FILE",
        help="thumbs-down and not-covered questions as a questions.jsonl for `bookwise eval`, to label",
    )
    report.add_argument("--since", type=_day, metavar="DATE", help="from this UTC day (YYYY-MM-DD), included")
    report.add_argument(
        "--until", type=_last_day, metavar="DATE", help="to this UTC day (YYYY-MM-DD), included"
    )
    report.add_argument("--version", metavar="VERSION", help="only answers about this docs version")
    report.add_argument("--locale", metavar="LOCALE", help="only answers in this locale")


def _add_filter_flags(parser: argparse.ArgumentParser) -> None:
    for name in ("module", "chapter", "content-type", "tag", "version", "locale"):
        parser.add_argument(
            f"--{name}", action="append", metavar="VALUE", help=f"only this {name} (repeatable)"
        )


def _filters(args: argparse.Namespace) -> dict[str, list[str]]:
    fields = {"module": "module", "chapter": "chapter", "content_type": "content_type", "tag": "tags"}
    fields |= {"version": "version", "locale": "locale"}
    return {field: getattr(args, flag) for flag, field in fields.items() if getattr(args, flag)}


def _search(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise import validation
    from bookwise.retrieval.retriever import Retriever

    # The API's rules, before the index is opened (the Retriever checks them again).
    validation.search(
        args.question, args.top_k, _filters(args), validation.RequestLimits.from_settings(settings)
    )
    retriever = Retriever.open(settings)
    try:
        result = retriever.search(args.question, top_k=args.top_k, filters=_filters(args))
    finally:
        retriever.close()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    verdict = "yes" if result.sufficient_context else "no — the book may not answer this"
    print(f"sufficient context: {verdict} (p={result.sufficiency.score:.2f})")
    for n, section in enumerate(result.sections, start=1):
        where = " › ".join(
            [*section.breadcrumb, section.heading_text] if section.heading_text else [section.title]
        )
        print(f"\n[{n}] {where}  ({section.score:.3f})\n    {section.url}\n    {section.snippet}")
    return EXIT_OK


def _print_eval(summary: dict[str, Any]) -> None:
    k, answerable, unanswerable = summary["k"], summary["answerable"], summary["unanswerable"]
    refusal, latency = summary["refusal"], summary["latency_ms"]
    lines = [
        f"questions: {summary['questions']} ({answerable} answerable, {unanswerable} unanswerable)",
        "section:  " + "  ".join(f"{name} {value:.3f}" for name, value in summary["section"].items()),
        f"document: recall@{k} {summary['document'][f'recall@{k}']:.3f}",
    ]
    if refusal["refusal_rate"] is not None:
        lines.append(f"refusal:  {refusal['refused']}/{unanswerable} unanswerable refused")
    if refusal["false_refusal_rate"] is not None:
        lines.append(f"          {refusal['false_refusals']}/{answerable} answerable wrongly refused")
    for kind, m in summary["by_type"].items():
        lines.append(
            f"  {kind:16} n={m['questions']:<3} recall@{k} {m[f'recall@{k}']:.3f}  mrr@10 {m['mrr@10']:.3f}"
        )
    lines.append(
        f"latency:  p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms (query embedding included)"
    )
    print("\n".join(lines))


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.evaluation.retrieval import Gate, evaluate, load_questions, summarize
    from bookwise.retrieval.retriever import Retriever

    if args.answers:
        return _eval_answers(args, settings)
    if any(getattr(args, flag[2:].replace("-", "_")) is not None for flag in ANSWER_GATES):
        raise BookwiseError("the answer gates (--min-first-cited, ...) need --answers")
    if args.k < 1:
        raise BookwiseError("--k must be at least 1")
    questions = load_questions(args.questions)
    retriever = Retriever.open(settings)
    try:
        outcomes = evaluate(
            questions,
            lambda q, depth: retriever.search(q, top_k=min(depth, settings.retrieval_max_top_k)),
            k=args.k,
        )
        summary = summarize(outcomes, k=args.k)
        summary["index_version"] = retriever.index_version
    finally:
        retriever.close()
    gate = Gate(args.min_recall, args.min_mrr, args.min_refusal, args.max_false_refusal)
    failures = gate.failures(summary)
    summary["gate"] = {"passed": not failures, "failures": failures}
    if args.details:
        summary["details"] = [o.to_dict() for o in outcomes]
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_eval(summary)
        for failure in failures:
            print(f"gate failed: {failure}", file=sys.stderr)
    return EXIT_ERRORS if failures else EXIT_OK


def _eval_answers(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.evaluation.answers import (
        AnswerGate,
        detail_lines,
        load_answer_questions,
        run_answer_eval,
        summary_lines,
    )

    retrieval_gates = (args.min_recall, args.min_mrr, args.min_refusal, args.max_false_refusal)
    if any(bound is not None for bound in retrieval_gates):
        raise BookwiseError("the retrieval gates (--min-recall, ...) apply without --answers")
    if args.limit is not None and args.limit < 1:
        raise BookwiseError("--limit must be at least 1")
    questions = load_answer_questions(args.questions)[: args.limit]
    evaluation = run_answer_eval(
        settings,
        questions,
        judge=not args.no_judge,
        concurrency=args.concurrency,
        reader_page=args.reader_page,
    )
    gate = AnswerGate(
        min_first_cited=args.min_first_cited,
        min_any_cited=args.min_any_cited,
        min_key_facts=args.min_key_facts,
        max_fragments=args.max_fragments,
        min_declined=args.min_declined,
        max_false_declines=args.max_false_declines,
        min_supported=args.min_supported,
    )
    report = evaluation.report(gate)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print("\n".join([*(detail_lines(report) + [""] if args.details else []), *summary_lines(report)]))
        for failure in report["gate"]["failures"]:
            print(f"gate failed: {failure}", file=sys.stderr)
    return EXIT_ERRORS if report["gate"]["failures"] else EXIT_OK


def _print_report(report: dict[str, Any]) -> None:
    mode = " (dry run: nothing written)" if report["dry_run"] else ""
    if report["held_back"]:
        mode = " (--strict found errors: nothing written, the live index is unchanged)"
    lines = [
        f"docs: {report['docs_processed']} processed, {report['docs_skipped']} skipped{mode}",
        f"chunks: {report['chunks']} total — {report['created']} created, {report['updated']} updated, "
        f"{report['deleted']} deleted, {report['unchanged']} unchanged; {report['embedded']} embedded",
        f"index: {report['generation'] or '-'}" + (" (switched)" if report["switched"] else " (unchanged)"),
        f"embedder: {report['embed_model']}"
        + (f" (adapted to this site in {report['adapt_s']:.0f} s)" if report["adapt_s"] is not None else ""),
        f"duration: {report['duration_s']:.2f} s",
        *([_suggestions_line(report["suggestions_step"])] if "suggestions_step" in report else []),
    ]
    for error in report["errors"]:
        where = f"{error['path']}:{error['line']}" if error["line"] else error["path"]
        lines.append(f"error: {where}: {error['message']} [{error['code']}]")
    for warning in report["warnings"]:  # data-directory faults the ingest recovered from
        lines.append(f"warning: {warning['message']} [{warning['code']}]")
    if report["manifest"] is not None:
        lines.extend(_manifest_lines(report["manifest"]))
    print("\n".join(lines))


def _suggestions_line(step: dict[str, Any]) -> str:
    line = f"suggested questions: {step['kept']} on {step['pages']} pages ({step['searches']} searches, "
    line += f"{step['duration_s']:.0f} s)"
    return line + ("; stopped at BOOKWISE_SUGGESTED_QUESTIONS_MAX_SEARCHES" if step["capped"] else "")


def _manifest_lines(check: dict[str, Any]) -> list[str]:
    lines = [
        f"manifest: {check['docs_agreeing']}/{check['docs']} docs and "
        f"{check['headings_agreeing']}/{check['headings']} heading ids agree with the build"
        + (f"; {check['corrected']} docs take the build's URLs" if check["corrected"] else "")
    ]
    for m in check["mismatches"]:
        lines.append(
            f"mismatch: {m['doc_path']}: {m['kind']} (ours {m['ours'] or '-'}, build {m['build'] or '-'})"
        )
    return lines


class _Progress:
    """A one-line progress display on a terminal; silent otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def file(self, path: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\x1b[Kreading {path[-70:]}")
            sys.stderr.flush()

    def embed(self, done: int, total: int) -> None:
        if self.enabled:
            width = 30
            filled = width * done // max(total, 1)
            sys.stderr.write(f"\r\x1b[Kembedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
            sys.stderr.flush()

    def adapt(self, pairs: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\x1b[Kadapting the embedder to this site ({pairs} passages)…")
            sys.stderr.flush()

    def end(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.index.build import Hooks
    from bookwise.ingest.manifest import load_manifests
    from bookwise.ingest.site import read_site_config
    from bookwise.retrieval.book_ingest import ingest_book

    if not args.site_dir.is_dir():
        raise BookwiseError(f"site folder not found: {args.site_dir}")
    site = read_site_config(args.site_dir, extra_roots=tuple(settings.ingest_extra_roots)).with_overrides(
        url=args.url,
        base_url=args.base_url,
        docs_path=args.docs_path,
        route_base_path=args.route_base_path,
        trailing_slash=args.trailing_slash,
    )
    built = load_manifests(args.manifest) if args.manifest else None
    progress = _Progress(sys.stderr.isatty() and not args.json)
    try:
        report = ingest_book(
            settings,
            site,
            dry_run=args.dry_run,
            reindex=args.reindex,
            adapt=args.adapt,
            docs_commit=args.docs_commit,
            hooks=Hooks(on_file=progress.file, on_embed=progress.embed, on_adapt=progress.adapt),
            built=built,
            strict=args.strict,
        ).to_dict()
    finally:
        progress.end()
    if not report["dry_run"] and report.get("generation") and settings.suggested_questions:
        step = _suggest(settings)
        report["suggestions"] = step["kept"]
        report["suggestions_step"] = step
    # The manifest lies in the build: the agents' Markdown (llms.txt, .md twins) is written beside it in
    # the same CI step, so a deploy never ships pages whose "Copy page" twin is missing or stale.
    build_dir = args.manifest[0].parent if args.manifest and not args.no_llms else None
    if build_dir is not None and not report["dry_run"] and (build_dir / "index.html").is_file():
        report["llms"] = _write_llms(settings, site, build_dir, args.manifest)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report)
        if build_dir is not None and "llms" in report:
            print(_llms_line(report["llms"], build_dir))
    failed = report["errors"] or (report["manifest"] and report["manifest"]["mismatches"])
    return EXIT_ERRORS if args.strict and failed else EXIT_OK


def _suggest(settings: Settings) -> dict[str, Any]:
    """Check the new generation's proposed questions with retrieval and store them."""
    from bookwise.retrieval.suggestions import SuggestionsReport, suggest_for_live_index

    try:
        return suggest_for_live_index(settings).to_dict()  # opened like any reader: refused on a full disk
    except BookwiseError as error:  # the index is built and switched: only the suggestions are missing
        print(f"bookwise: suggested questions not built: [{error.code}] {error}", file=sys.stderr)
        return SuggestionsReport().to_dict()


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from bookwise.api.app import create_app
    from bookwise.api.logs import configure_logging
    from bookwise.api.metrics.directory import prepare_metrics_dir
    from bookwise.api.metrics.listener import start_metrics_listener
    from bookwise.api.server import ensure_file_limit, uvicorn_options
    from bookwise.api.workers import WORKER_APP, WORKER_PROTOCOL

    if args.site is not None:
        if not (args.site / "index.html").is_file():
            raise BookwiseError(f"not a built site (no index.html): {args.site}")
        settings = settings.model_copy(update={"site_dir": args.site})
    workers = settings.api_workers if args.workers is None else args.workers
    prepare_metrics_dir(settings)  # first: every process (workers too) then writes its metrics there
    configure_logging()
    ensure_file_limit(settings)  # inherited by the worker processes
    start_metrics_listener(settings)  # BOOKWISE_METRICS_PORT: one listener, whatever the workers
    options: dict[str, Any] = {
        "host": args.host or settings.api_host,
        "port": settings.api_port if args.port is None else args.port,
        "log_level": "warning",
        "timeout_graceful_shutdown": 5,
        **uvicorn_options(settings),  # h11, connection caps and timeouts (bookwise/api/server.py)
    }
    if workers == 1:
        uvicorn.run(create_app(settings), **options)
        return EXIT_OK
    # Worker processes are spawned: each imports the app factory and reads the settings once
    # itself (the same environment and bookwise.toml; --site is handed down as BOOKWISE_SITE_DIR).
    if args.site is not None:
        os.environ["BOOKWISE_SITE_DIR"] = str(args.site.resolve())
    # The supervisor kills a worker that misses a 5 s health ping (uvicorn's default), and its open
    # answers with it: a CPU-starved machine can miss one, so it is given longer.
    options |= {"http": WORKER_PROTOCOL, "timeout_worker_healthcheck": WORKER_HEALTHCHECK_S}
    uvicorn.run(WORKER_APP, factory=True, workers=workers, **options)
    return EXIT_OK


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from bookwise import validation
    from bookwise.generation.answer import Answerer, checked
    from bookwise.generation.events import AnswerTrace, Token
    from bookwise.generation.llm import LLMClient
    from bookwise.generation.models import ChatRequest, Page
    from bookwise.retrieval.retriever import Retriever

    # A selection or section scope is selected-text mode: without --selected-text it is refused
    # (the shared rules), never quietly answered from the whole book.
    selected = args.selected_text is not None or args.scope in ("selection", "section")
    # The rules the API applies, checked before the index is opened.
    request = checked(
        ChatRequest(
            action=args.action,
            question=args.question,
            mode="selected_text" if selected else "normal",
            scope=args.scope,
            selected_text=args.selected_text or "",
            page=Page(args.page_url, args.heading_id) if args.page_url else None,
            filters=_filters(args) or None,
            top_k=args.top_k,
            request_id="cli",
        ),
        validation.RequestLimits.from_settings(settings),
    )

    async def run() -> AnswerSummary:
        llm = LLMClient(settings) if settings.llm_base_url else None
        retriever = await anyio.to_thread.run_sync(Retriever.open, settings)
        trace = AnswerTrace()
        try:
            answerer = Answerer(settings, retriever, llm)
            async for event in answerer.stream(await answerer.prepare(request)):
                trace.add(event)
                if args.json:
                    print(
                        json.dumps({"event": event.name, "data": event.data}, ensure_ascii=False), flush=True
                    )
                elif isinstance(event, Token):
                    print(event.text, end="", flush=True)
        finally:
            retriever.close()
            if llm is not None:
                await llm.aclose()
        return trace.summary

    answer = anyio.run(run)
    if not args.json:
        _print_answer_end(answer)
    return EXIT_OK if answer.done is not None else EXIT_ERRORS


def _print_answer_end(answer: AnswerSummary) -> None:
    print()
    if answer.error is not None:
        print(f"bookwise: error [{answer.error.code}]: {answer.error.message}", file=sys.stderr)
        return
    done, cited = answer.done, set(answer.citations)
    if done is None:  # a stream always ends with done or error
        return
    print("\nSources:")
    for source in answer.sources:
        mark = "*" if source.n in cited else " "
        shown = source.heading_text and source.heading_text != source.title
        heading = f" › {source.heading_text}" if shown else ""
        print(f" {mark}[{source.n}] {source.title}{heading}  {source.url}")
    for quote in done.quotes:
        print(f'   [{quote.n}] "{quote.text}"')
    if done.widen:
        print(f"\n{done.widen.label}: ask again with --scope {done.widen.scope}")


def _llms(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.ingest.site import read_site_config

    if not args.site_dir.is_dir() or not args.out.is_dir():
        raise BookwiseError(f"site or build folder not found: {args.site_dir}, {args.out}")
    site = read_site_config(args.site_dir, extra_roots=tuple(settings.ingest_extra_roots))
    default_manifest = args.out / "bookwise-manifest.json"
    manifests = args.manifest or ([default_manifest] if default_manifest.is_file() else [])
    report = _write_llms(settings, site, args.out, manifests, title=args.title, summary=args.summary)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_llms_line(report, args.out))
        for error in report["errors"]:
            print(f"  error {error['path']}: [{error['code']}] {error['message']}", file=sys.stderr)
    return EXIT_OK


def _write_llms(
    settings: Settings,
    site: SiteConfig,
    out: Path,
    manifests: list[Path],
    *,
    title: str | None = None,
    summary: str | None = None,
) -> dict[str, Any]:
    """llms.txt, llms-full.txt and the .md twins of every doc, written into the built site ``out``."""
    from dataclasses import replace

    from bookwise.ingest.llms import read_book, write_llms
    from bookwise.ingest.manifest import load_manifests
    from bookwise.ingest.pipeline import ChunkingParams, ingest_site

    # Chunks are not used; a word count keeps chunking cheap.
    params = ChunkingParams(10_000, 0, 0, 10_000, lambda text: len(text.split()))
    result = ingest_site(site, params, built=load_manifests(manifests) if manifests else None)
    book = read_book(site, settings.book_title)
    book = replace(book, title=title or book.title, summary=summary or book.summary)
    report = write_llms(result.documents, site, book, out, settings.llms_max_chars).to_dict()
    report["errors"] = [e.to_dict() for e in result.errors]
    return report


def _llms_line(report: dict[str, Any], out: Path) -> str:
    return (
        f"llms.txt ({report['llms_chars']} chars, {report['listed']} pages, fallback {report['fallback']}), "
        f"llms-full.txt ({report['full_chars']} chars), {report['pages']} .md twins in {out}"
    )


def _insights_report(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.insights.factory import open_insights_store
    from bookwise.insights.records import LogFilter
    from bookwise.insights.report.run import Outputs, write_report
    from bookwise.retrieval.retriever import Retriever

    outputs = Outputs(html=args.out, json=args.json, csv=args.csv, export=args.export_questions)
    if outputs == Outputs():
        raise BookwiseError(
            "say what to do: --out report.html, --json, --csv, --export-questions FILE, "
            "or --forget-before DATE"
        )
    log_filter = LogFilter(
        since=datetime.combine(args.since, time(), tzinfo=UTC) if args.since else None,
        # --until names the last day included; the filter's end is exclusive.
        until=datetime.combine(args.until + timedelta(days=1), time(), tzinfo=UTC) if args.until else None,
        version=args.version,
        locale=args.locale,
    )
    needs_index = outputs.html is not None or outputs.json is not None
    store = open_insights_store(settings.resolved_insights_db, max_bytes=settings.feedback_max_bytes)
    retriever = Retriever.open(settings) if needs_index else None
    try:
        printed = write_report(store, log_filter, outputs, retriever=retriever)
    finally:
        store.close()
        if retriever is not None:
            retriever.close()
    for text in printed.values():
        sys.stdout.write(text)
    return EXIT_OK


def _publish(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.errors import PublishError
    from bookwise.index.publish import publish
    from bookwise.retrieval.suggestions import SuggestionStore

    if settings.admin_token is None:
        raise BookwiseError("set BOOKWISE_ADMIN_TOKEN to the server's admin token")
    try:
        answer = publish(
            settings.data_dir,
            args.server,
            settings.admin_token.get_secret_value(),
            timeout_s=args.timeout,
            suggestions=SuggestionStore(settings.data_dir).path,
        )
    except PublishError as error:
        if args.json and error.answer is not None:
            print(json.dumps(error.answer, indent=2))
        raise
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print(
            f"installed index {answer['index_version']} on {args.server}: {answer['points']} chunks, "
            f"{answer['embed_model']}, {answer['archive_bytes'] / 1e6:.1f} MB uploaded; "
            f"serving {answer['serving'] or '(not yet)'}"
        )
    return EXIT_OK


def _mcp(_args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.api.mcp import serve_stdio

    serve_stdio(settings)
    return EXIT_OK


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a day as YYYY-MM-DD, got {value!r}") from None


def _last_day(value: str) -> date:
    day = _day(value)
    if day == date.max:  # its end, the next midnight, is past the last date there is
        raise argparse.ArgumentTypeError("the last day it can be is 9999-12-30 (or leave it out)")
    return day


def _add_insights_command(commands: Commands) -> None:
    """``bookwise insights``: the question log, for the book's authors."""
    insights = commands.add_parser(
        "insights", help="what readers ask (the question log): the authors' report; delete old rows"
    )
    insights.add_argument(
        "--forget-before",
        type=_day,
        metavar="DATE",
        help="delete the questions and ratings logged before this UTC day (YYYY-MM-DD), then exit",
    )
    _add_insights_report_flags(insights)
    insights.set_defaults(run=_insights)


def _insights(args: argparse.Namespace, settings: Settings) -> int:
    from bookwise.insights.factory import open_insights_store

    store = open_insights_store(settings.resolved_insights_db, max_bytes=settings.feedback_max_bytes)
    try:
        if args.forget_before is not None:
            gone = store.forget_before(datetime.combine(args.forget_before, time(), tzinfo=UTC))
            print(f"deleted {gone} questions and ratings logged before {args.forget_before} (UTC)")
            return EXIT_OK
    finally:
        store.close()
    return _insights_report(args, settings)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"bookwise: invalid settings:\n{describe_settings_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    run: Run = args.run  # set by the subcommand's parser
    try:
        return run(args, settings)
    except BookwiseError as exc:
        print(f"bookwise: error [{exc.code}]: {exc.message}", file=sys.stderr)
        _print_json_error(args, exc)
        return EXIT_ERRORS
    except Exception as exc:  # a bug: one line, not a traceback, unless asked for (--debug)
        if args.debug:
            traceback.print_exc()
        print(f"bookwise: internal error [{type(exc).__name__}]: {exc}", file=sys.stderr)
        if not args.debug:
            print("bookwise: run again with --debug (before the command) for the traceback", file=sys.stderr)
        _print_json_error(args, BookwiseError(f"{type(exc).__name__}: {exc}"))
        return EXIT_INTERNAL


def _print_json_error(args: argparse.Namespace, error: BookwiseError) -> None:
    """A command asked for JSON on stdout gets its failure there too, in the one error shape."""
    answered = getattr(error, "answer", None) is not None  # publish printed the server's answer
    if getattr(args, "json", None) in (True, Path("-")) and not answered:
        # The CLI's reader is the operator: the full message, not the public one an API body shows.
        print(json.dumps({"error": {**error.to_dict(), "message": error.message}}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
