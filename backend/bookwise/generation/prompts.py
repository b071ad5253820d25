"""Chat messages for the LLM from jinja2 templates kept in ``prompts/``.

Everything that comes from the book or the reader (sources, selections, questions, history) is
untrusted: it is passed to the templates as variables and placed after the instructions inside
labelled blocks. The blocks' tags carry a random key drawn for each prompt (``<source-9f2c41d07a3b
n="1">`` … ``</source-9f2c41d07a3b>``), so retrieved text cannot close its block and pose as
instructions, however it spells a closing tag (``</ source>``, ``＜/source＞``, zero-width
characters, entities): a page written before the request cannot hold the key. The text itself is
left verbatim, so code (``<Provider store={store}>``, ``List<String>``) reaches the model, and its
answers, as the book has it; escaping every ``<`` would have mangled it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from bookwise.retrieval.models import SectionResult

NOT_IN_SELECTION = "The selected passage does not answer this question."
KEY_BYTES = 6  # 48 random bits per prompt

Message = dict[str, str]


@dataclass(frozen=True)
class Turn:
    role: str  # "user" or "assistant"
    content: str
    action: str = "ask"  # the study action that produced it (a quiz answer needs the quiz question's)


@dataclass(frozen=True)
class Tags:
    """One prompt's block tag names, keyed at random (see the module docstring)."""

    source: str
    selection: str


def block_tags(untrusted: Iterable[str]) -> Tags:
    """Tags whose key occurs in none of the untrusted texts (drawn again in the unlikely case)."""
    texts = list(untrusted)
    while True:
        key = secrets.token_hex(KEY_BYTES)
        if not any(key in text for text in texts):
            return Tags(source=f"source-{key}", selection=f"selection-{key}")


def attribute(value: object) -> str:
    """Untrusted text as a one-line attribute value: no quotes, tags or line breaks to escape with."""
    text = str(value).replace('"', "'").replace("<", "‹").replace(">", "›")
    return " ".join(text.split())


_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("prompts")),
    autoescape=False,  # plain-text prompts; untrusted text is fenced by keyed tags, attributes escaped
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=False,
)
_environment.filters["attribute"] = attribute


def _render(name: str, **values: object) -> str:
    return _environment.get_template(name).render(**values).strip()


def _history(history: Sequence[Turn]) -> list[Message]:
    return [{"role": t.role, "content": t.content} for t in history if t.role in ("user", "assistant")]


def normal_messages(
    question: str,
    sources: Sequence[SectionResult],
    *,
    book_title: str,
    sufficient: bool,
    history: Sequence[Turn] = (),
    unknown_names: Sequence[str] = (),
) -> list[Message]:
    """``unknown_names``: names in the question that no chunk of the book contains (retrieval's
    ``unknown_names``); the model is told, so that it does not answer about them from a neighbour."""
    tags = block_tags([question, *(f"{s.title} {s.heading_text} {s.text}" for s in sources)])
    system = _render(
        "system.j2", mode="normal", book_title=book_title, not_in_selection=NOT_IN_SELECTION, tags=tags
    )
    user = _render(
        "normal.j2",
        sources=sources,
        question=question,
        sufficient=sufficient,
        unknown_names=list(unknown_names),
        tags=tags,
    )
    return [{"role": "system", "content": system}, *_history(history), {"role": "user", "content": user}]


def selected_text_messages(
    question: str,
    selection: str,
    *,
    book_title: str,
    page_title: str = "",
    heading: str = "",
    history: Sequence[Turn] = (),
) -> list[Message]:
    """Only the selection reaches the model: no retrieved book text, by construction."""
    tags = block_tags([question, selection, page_title, heading])
    system = _render(
        "system.j2", mode="selected_text", book_title=book_title, not_in_selection=NOT_IN_SELECTION, tags=tags
    )
    user = _render(
        "selected_text.j2",
        selection=selection,
        question=question,
        page_title=page_title,
        heading=heading,
        tags=tags,
    )
    return [{"role": "system", "content": system}, *_history(history), {"role": "user", "content": user}]


def selection_action_messages(
    action: str,
    question: str,
    selection: str,
    *,
    book_title: str,
    page_title: str = "",
    heading: str = "",
    history: Sequence[Turn] = (),
    reader_answer: str | None = None,
) -> list[Message]:
    """A study action on a selection (explain, example, quiz): its own template, and as in
    ``selected_text_messages`` only the selection reaches the model. ``reader_answer``: a quiz turn
    that assesses the reader's answer to the question asked in the history's last turn."""
    tags = block_tags([question, selection, page_title, heading, reader_answer or ""])
    return _action_messages(
        action,
        "selected_text",
        book_title,
        tags,
        history,
        selection=selection,
        question=question,
        page_title=page_title,
        heading=heading,
        reader_answer=reader_answer,
    )


def page_action_messages(
    action: str,
    question: str,
    sources: Sequence[SectionResult],
    *,
    book_title: str,
    page_title: str,
    history: Sequence[Turn] = (),
    reader_answer: str | None = None,
) -> list[Message]:
    """A study action on the reader's page (summarize_page, quiz_page, a question about "this
    page"): the sources are the page's own sections, nothing else from the book."""
    tags = block_tags(
        [
            question,
            page_title,
            reader_answer or "",
            *(f"{s.title} {s.heading_text} {s.text}" for s in sources),
        ]
    )
    return _action_messages(
        action,
        "normal",
        book_title,
        tags,
        history,
        sources=sources,
        question=question,
        page_title=page_title,
        reader_answer=reader_answer,
    )


def _action_messages(
    action: str, mode: str, book_title: str, tags: Tags, history: Sequence[Turn], **material: object
) -> list[Message]:
    """A study action's messages: the system prompt of its mode, then the action's own template."""
    system = _render(
        "system.j2", mode=mode, book_title=book_title, not_in_selection=NOT_IN_SELECTION, tags=tags
    )
    user = _render(f"{action}.j2", tags=tags, **material)
    return [{"role": "system", "content": system}, *_history(history), {"role": "user", "content": user}]


def rewrite_messages(question: str, history: Sequence[Turn]) -> list[Message]:
    return [{"role": "user", "content": _render("rewrite.j2", question=question, history=history)}]
