"""The rules of a request, written once: the API's schemas, ``bookwise ask``/``search`` and the
Retriever all apply these, so a request is refused the same way, with the same code, wherever it
comes from.

The API's schemas own the shape (types, closed enums, unknown fields, valid Unicode); these are the
rules on content that every entry shares: text present and bounded, ``top_k`` in range, known filter
fields, and a scope that has what it needs. Every failure is ``invalid_request`` (422), naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from bookwise.errors import InvalidRequestError
from bookwise.settings import RequestSettings

# Study actions: what the reader asks Bookwise to do. The selection actions work on the
# highlighted passage (selected_text mode), the page actions on the reader's page (``page.url``).
ACTIONS = ("ask", "explain", "example", "quiz", "summarize_page", "quiz_page")
SELECTION_ACTIONS = ("explain", "example", "quiz")
PAGE_ACTIONS = ("summarize_page", "quiz_page")
QUIZ_ACTIONS = ("quiz", "quiz_page")
FILTER_FIELDS = ("module", "chapter", "content_type", "tags", "version", "locale", "doc_path")
Filters = dict[str, list[str]]  # field → accepted values (any of); fields are ANDed


@dataclass(frozen=True)
class RequestLimits:
    """The limits a client must respect: public (``/api/config`` serves them to the widget)."""

    max_question_chars: int
    max_selection_chars: int
    max_history_turns: int
    max_history_chars: int
    default_top_k: int
    max_top_k: int

    @classmethod
    def from_settings(cls, settings: RequestSettings) -> RequestLimits:
        return cls(
            max_question_chars=settings.max_question_chars,
            max_selection_chars=settings.max_selection_chars,
            max_history_turns=settings.max_history_turns,
            max_history_chars=settings.max_history_chars,
            default_top_k=settings.retrieval_top_k,
            max_top_k=settings.retrieval_max_top_k,
        )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def bounded(name: str, text: str, most: int) -> None:
    """Refuse ``text`` longer than ``most`` characters, naming the field: every length rule's message."""
    if len(text) > most:
        raise InvalidRequestError(f"{name} is too long: {len(text)} characters, at most {most}")


def text(value: str, *, name: str = "query") -> str:
    """``value`` with its whitespace collapsed; refused when empty."""
    collapsed = " ".join(value.split())
    if not collapsed:
        raise InvalidRequestError(f"{name} is empty")
    return collapsed


def question(value: str, limits: RequestLimits, *, name: str = "question") -> str:
    """A client's question (or search query), collapsed; refused when empty or too long."""
    bounded(name, value, limits.max_question_chars)
    return text(value, name=name)


def top_k(value: int | None, limits: RequestLimits) -> int:
    """The sections to return: the default when unset; refused out of range (or not an integer)."""
    if value is None:
        return limits.default_top_k
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limits.max_top_k:
        raise InvalidRequestError(f"top_k must be between 1 and {limits.max_top_k}")
    return value


def filters(given: Mapping[str, Sequence[str] | str] | None) -> Filters | None:
    """Known fields only; a single value may be given as a string; empty values are dropped."""
    if not given:
        return None
    unknown = sorted(set(given) - set(FILTER_FIELDS))
    if unknown:
        raise InvalidRequestError(f"unknown filter field(s) {unknown}; allowed: {', '.join(FILTER_FIELDS)}")
    clean = {
        field: [values] if isinstance(values, str) else [str(v) for v in values]
        for field, values in given.items()
        if values
    }
    return clean or None


def search(
    query: str, top: int | None, wanted: Mapping[str, Sequence[str] | str] | None, limits: RequestLimits
) -> tuple[str, int, Filters | None]:
    """A client's search request (API, ``bookwise search``): its query, ``top_k`` and filters."""
    return question(query, limits, name="query"), top_k(top, limits), filters(wanted)


def retrieval(
    query: str, top: int | None, wanted: Mapping[str, Sequence[str] | str] | None, limits: RequestLimits
) -> tuple[str, int, Filters | None]:
    """The Retriever's own check: ``search``'s rules but the length, which bounds what a client may
    send, not the queries built from it (a follow-up rewritten, a question widened by its selection)."""
    return text(query), top_k(top, limits), filters(wanted)


def chat(
    *,
    asked: str,
    mode: str,
    scope: str | None,
    selected_text: str,
    history: Sequence[str],
    top: int | None,
    wanted: Mapping[str, Sequence[str] | str] | None,
    limits: RequestLimits,
    action: str = "ask",
    page_url: str | None = None,
) -> None:
    """A chat request's rules. ``history`` is the earlier turns' texts.

    A study action may come without a question (the widget's button says what to do); ``ask`` and
    a quiz answer need one.
    """
    if action == "ask" or asked.strip():
        question(asked, limits)
    study_action(action, mode=mode, scope=scope, selected_text=selected_text, page_url=page_url)
    bounded("selected_text", selected_text, limits.max_selection_chars)
    if len(history) > limits.max_history_turns:
        raise InvalidRequestError(f"history has {len(history)} turns, at most {limits.max_history_turns}")
    for content in history:
        bounded("a history turn", content, limits.max_history_chars)
    if mode == "normal" and (scope not in (None, "book") or selected_text):
        raise InvalidRequestError(
            "normal mode takes no selected_text and no scope but book; use mode selected_text"
        )
    if mode == "selected_text" and scope != "book" and not selected_text.strip():
        raise InvalidRequestError(
            f"the {scope or 'selection'} scope needs the selected text (selected_text mode)"
        )
    top_k(top, limits)
    filters(wanted)


def study_action(
    action: str, *, mode: str, scope: str | None, selected_text: str, page_url: str | None
) -> None:
    """What each action needs: a selection (explain, example, quiz) or the reader's page
    (summarize_page, quiz_page), and nothing that would widen it."""
    if action not in ACTIONS:
        raise InvalidRequestError(f"unknown action {action!r}; allowed: {', '.join(ACTIONS)}")
    if action in SELECTION_ACTIONS and (
        mode != "selected_text" or scope not in (None, "selection") or not selected_text.strip()
    ):
        raise InvalidRequestError(
            f"the {action} action works on a selection: mode selected_text, the selected_text, "
            "and no scope but selection"
        )
    if action in PAGE_ACTIONS:
        if mode != "normal" or selected_text or scope not in (None, "book"):
            raise InvalidRequestError(
                f"the {action} action works on the reader's page: mode normal, no selection"
            )
        if not (page_url or "").strip():
            raise InvalidRequestError(f"the {action} action needs page.url, the page the reader is on")
