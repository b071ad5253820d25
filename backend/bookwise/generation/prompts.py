"""Chat messages for the LLM from jinja2 templates kept in ``prompts/``.

Everything that comes from the book or the reader (sources, selections, questions, history) is
untrusted: it is passed to the templates as variables, placed after the instructions inside
labelled blocks, and any text that would close or open such a block is neutralised, so retrieved
text cannot step out of its ``<source>`` and pose as instructions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from bookwise.retrieval.models import SectionResult

NOT_IN_SELECTION = "The selected passage does not answer this question."
_TAG = re.compile(r"<(/?)(source|selection)\b", re.IGNORECASE)

Message = dict[str, str]


@dataclass(frozen=True)
class Turn:
    role: str  # "user" or "assistant"
    content: str


def delimited(value: object) -> str:
    """Untrusted text that cannot open or close a ``<source>``/``<selection>`` block."""
    return _TAG.sub(lambda m: f"‹{m.group(1)}{m.group(2)}", str(value))


def attribute(value: object) -> str:
    """Untrusted text as a one-line attribute value: no quotes, tags or line breaks to escape with."""
    return " ".join(delimited(value).replace('"', "'").replace(">", "›").split())


_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("prompts")),
    autoescape=False,  # plain-text prompts; untrusted values go through `delimited`
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=False,
)
_environment.filters["delimited"] = delimited
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
) -> list[Message]:
    system = _render("system.j2", mode="normal", book_title=book_title, not_in_selection=NOT_IN_SELECTION)
    user = _render("normal.j2", sources=sources, question=question, sufficient=sufficient)
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
    system = _render(
        "system.j2", mode="selected_text", book_title=book_title, not_in_selection=NOT_IN_SELECTION
    )
    user = _render(
        "selected_text.j2", selection=selection, question=question, page_title=page_title, heading=heading
    )
    return [{"role": "system", "content": system}, *_history(history), {"role": "user", "content": user}]


def rewrite_messages(question: str, history: Sequence[Turn]) -> list[Message]:
    return [{"role": "user", "content": _render("rewrite.j2", question=question, history=history)}]
