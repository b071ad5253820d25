"""One set of request rules (bookwise.validation), one code per failure, whoever sends the request."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookwise import validation
from bookwise.errors import InvalidRequestError
from conftest import SiteFactory
from test_cli import bookwise

LIMITS = validation.RequestLimits(
    max_question_chars=20,
    max_selection_chars=30,
    max_history_turns=1,
    max_history_chars=10,
    default_top_k=5,
    max_top_k=8,
)


def chat(**overrides: object) -> None:
    request: dict[str, object] = {
        "asked": "what is it",
        "mode": "normal",
        "scope": None,
        "selected_text": "",
        "history": [],
        "top": None,
        "wanted": None,
    }
    validation.chat(**(request | overrides), limits=LIMITS)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"asked": "  "}, "question is empty"),
        ({"asked": "q" * 21}, "question is too long"),
        ({"mode": "selected_text", "selected_text": "s" * 31}, "selected_text is too long"),
        ({"history": ["a", "b"]}, "history has 2 turns"),
        ({"history": ["h" * 11]}, "history turn is too long"),
        ({"selected_text": "a passage"}, "normal mode"),
        ({"scope": "section"}, "normal mode"),
        ({"mode": "selected_text", "scope": "section"}, "section scope needs the selected text"),
        ({"mode": "selected_text"}, "selection scope needs the selected text"),
        ({"top": 9}, "top_k must be between 1 and 8"),
        ({"top": True}, "top_k must be between"),
        ({"wanted": {"colour": "red"}}, "unknown filter field"),
    ],
)
def test_every_chat_rule_is_one_invalid_request(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message) as raised:
        chat(**overrides)
    assert raised.value.code == "invalid_request" and raised.value.status_code == 422


def test_a_valid_chat_and_search_pass() -> None:
    chat(mode="selected_text", selected_text="a passage", scope="section", top=8, history=["h"])
    assert validation.search(" a  query ", None, {"tags": "x"}, LIMITS) == ("a query", 5, {"tags": ["x"]})


def test_the_retriever_bounds_no_query_it_builds_itself() -> None:
    # A question widened by its selection is longer than a client may send: only emptiness is refused.
    assert validation.retrieval("w " * 50, 2, None, LIMITS) == (("w " * 50).strip(), 2, None)
    with pytest.raises(InvalidRequestError, match="query is too long"):
        validation.search("w " * 50, 2, None, LIMITS)


def test_ask_scope_section_without_a_selection_is_refused_not_answered_from_the_whole_book(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    site = make_site({"docs/store.md": "## Store\n\nThe store holds the state tree.\n"})
    data = tmp_path / "d"
    assert bookwise("ingest", str(site), data_dir=data).returncode == 0
    answered = bookwise("ask", "what holds the state tree", "--scope", "section", data_dir=data)
    assert answered.returncode == 1
    assert (
        "[invalid_request]" in answered.stderr and "section scope needs the selected text" in answered.stderr
    )
    assert "Sources:" not in answered.stdout and "store" not in answered.stdout.lower()
    book = bookwise("ask", "what holds the state tree", "--scope", "book", data_dir=data)
    assert book.returncode == 0 and "store.md" not in book.stderr and "Sources:" in book.stdout


def test_the_cli_refuses_with_the_api_codes(tmp_path: Path) -> None:
    # Checked before the index is opened: no index is needed to be told what is wrong.
    for args, says in [
        (("search", "   "), "query is empty"),
        (("search", "x", "--top-k", "99"), "top_k must be between 1 and 20"),
        (("ask", "  "), "question is empty"),
        (("ask", "q" * 2001), "question is too long"),
    ]:
        out = bookwise(*args, data_dir=tmp_path / "none")
        assert out.returncode == 1 and f"[invalid_request]: {says}" in out.stderr, (args, out.stderr)
