"""Source-list snippets: the sentences that share most query words, short and readable."""

from __future__ import annotations

from bookwise.retrieval.snippets import make_snippet


def test_picks_the_sentences_with_the_query_words() -> None:
    text = "Intro sentence here. Reducers must be pure functions. Another unrelated line."
    assert (
        make_snippet(text, "why must reducers be pure?", max_chars=40) == "Reducers must be pure functions."
    )


def test_bold_markers_fences_and_pipes_are_dropped_but_code_kept() -> None:
    text = "**The `<Provider>` component** wraps the app.\n```js\n| a | b |"
    assert make_snippet(text, "provider") == "The `<Provider>` component wraps the app. a b"


def test_long_text_is_cut_at_a_word_with_an_ellipsis() -> None:
    snippet = make_snippet("word " * 200, "word", max_chars=50)
    assert len(snippet) <= 50 and snippet.endswith("…")


def test_empty_text() -> None:
    assert make_snippet("", "anything") == ""
