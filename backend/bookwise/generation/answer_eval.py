"""Answer evaluation: every golden question through the full answer path, scored as the reader sees it.

Each question is asked exactly as the API asks it (``Answerer.prepare`` then ``Answerer.stream``),
and the events are collected: ``sources``, the ``token`` texts (the answer) and ``done``
(``answer_kind``, ``citations``, ``quotes``). Selected-text questions run in selected-text mode on
the page of their first gold document; when ``done.widen`` offers a wider scope, the question is
asked again with it, as a reader clicking the offer would.

Metrics (answerable questions unless said otherwise; a declined or failed answer scores as a miss):

* ``first_cited_gold``: the first cited passage is from a gold section. The first ``[n]`` marker of
  the answer text names it (``done.citations[0]`` when the text has none), and ``sources[n-1]``'s
  ``(doc_path, heading)`` is matched with gold as the retrieval eval matches it.
* ``any_cited_gold``: some citation of ``done.citations`` is a gold section.
* ``key_facts``: the share of the question's ``must_contain`` terms found in the answer text, averaged
  over questions that have terms (``key_facts_all``: the share of those questions with every term).
  Matching is case-insensitive on normalised text: citation markers, Markdown emphasis, code and
  quote marks, heading marks and link targets removed, typographic quotes made straight, spaces
  collapsed (the terms are normalised the same way).
* ``fragment_rate``: over every quoted passage of every answer (each of the answer's ``>``
  blockquotes, and each ``done.quotes`` text), the share that starts or stops mid-sentence; see
  ``fragment_reason`` for the exact rule.
* ``declined``: the share of unanswerable questions declined (``answer_kind`` ``not_covered``, or
  ``not_in_selection`` with nothing left to widen to). ``false_declines``: the share of answerable
  questions declined. The outcome is read from ``done``, never from the answer's wording.
* ``supported`` (with an LLM judge): the share of judged answers in which the judge found every
  sentence supported by the source it cites; ``sentences_supported`` is the same per sentence.
"""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import jinja2

from bookwise.errors import BookwiseError, ConfigError
from bookwise.generation.answer import Answerer, ChatRequest, Page, Scope
from bookwise.generation.citations import cited_numbers, strip_markers
from bookwise.generation.llm import LLMClient
from bookwise.generation.prompts import Message, attribute, delimited
from bookwise.retrieval.evaluation import Question, SectionKey, first_hit, load_questions
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings

Outcome = Literal["answered", "declined", "error"]
DECLINED_KINDS = frozenset({"not_covered", "not_in_selection"})
MAX_WIDENINGS = 2  # selection → section → book
WIDER: dict[str, Scope] = {"section": "section", "book": "book"}  # what done.widen may offer
JUDGE_MAX_TOKENS = 2000  # one short verdict per sentence; reasoning models need room to think

# Questions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerQuestion:
    question: Question  # id, text, type, gold, selected_text: as the retrieval eval reads them
    must_contain: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.question.id


def load_answer_questions(path: Path) -> list[AnswerQuestion]:
    """The retrieval eval's questions (same validation), each with its ``must_contain`` terms."""
    questions = load_questions(path)
    # load_questions skips blank lines and rejects bad ones, so the remaining lines pair up in order.
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    paired = []
    for question, line in zip(questions, lines, strict=True):
        terms = json.loads(line).get("must_contain") or []
        if not isinstance(terms, list):
            raise ConfigError(f"{path}: question {question.id}: must_contain must be a list")
        paired.append(AnswerQuestion(question, tuple(str(t) for t in terms if str(t).strip())))
    return paired


# One answer, as the reader got it -------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    n: int
    key: SectionKey  # (doc_path, heading), as the sources event gives it
    text: str  # what the model was given (for the judge); never reported


@dataclass(frozen=True)
class AnswerRun:
    scopes: tuple[str, ...]  # the scopes asked, in order (more than one after a widening)
    answer: str = ""
    answer_kind: str | None = None  # from done; None when the answer ended in an error
    sources: tuple[Source, ...] = ()
    citations: tuple[int, ...] = ()
    quotes: tuple[str, ...] = ()
    widen: Scope | None = None  # the scope done.widen offered
    error: str | None = None  # the error code (prepare refused, or the stream's error event)
    latency_ms: float = 0.0

    @property
    def outcome(self) -> Outcome:
        if self.error is not None or self.answer_kind is None:
            return "error"
        return "declined" if self.answer_kind in DECLINED_KINDS else "answered"

    def source(self, n: int) -> Source | None:
        return self.sources[n - 1] if 1 <= n <= len(self.sources) else None

    @property
    def first_cited(self) -> int | None:
        """The first ``[n]`` marker of the answer naming a source, else the first of done.citations."""
        if self.outcome != "answered":
            return None
        in_text = [n for n in cited_numbers(self.answer) if self.source(n) is not None]
        if in_text:
            return in_text[0]
        return self.citations[0] if self.citations else None


async def _ask(answerer: Answerer, request: ChatRequest) -> AnswerRun:
    """One request through prepare + stream, its events collected."""
    scopes = (request.effective_scope,)
    try:
        prepared = await answerer.prepare(request)
    except BookwiseError as refused:
        return AnswerRun(scopes, error=refused.code)
    texts = [section.text for section in prepared.sources]
    tokens: list[str] = []
    sources: tuple[Source, ...] = ()
    done: dict[str, Any] | None = None
    error: str | None = None
    async for event in answerer.stream(prepared):
        if event.name == "sources":
            sources = tuple(
                Source(s["n"], (s["doc_path"], s["heading"]), texts[s["n"] - 1])
                for s in event.data["sources"]
            )
        elif event.name == "token":
            tokens.append(event.data["text"])
        elif event.name == "done":
            done = event.data
        elif event.name == "error":
            error = str(event.data.get("code", "error"))
    if done is None:
        return AnswerRun(scopes, "".join(tokens), sources=sources, error=error or "no_done_event")
    widen = done.get("widen")
    return AnswerRun(
        scopes,
        "".join(tokens),
        answer_kind=str(done["answer_kind"]),
        sources=sources,
        citations=tuple(int(n) for n in done.get("citations", [])),
        quotes=tuple(str(q["text"]) for q in done.get("quotes", [])),
        widen=WIDER.get(str(widen["scope"])) if widen else None,
    )


async def _page_of(retriever: Retriever, question: Question) -> Page | None:
    """The reader's page for a selected-text question: where its first gold document is published."""
    if not question.selected_text or not question.gold:
        return None
    result = await retriever.asearch(
        question.selected_text, top_k=1, filters={"doc_path": question.gold[0][0]}
    )
    return Page(result.sections[0].page_url) if result.sections else None


async def answer_question(answerer: Answerer, question: Question) -> AnswerRun:
    started = time.monotonic()
    page = await _page_of(answerer.retriever, question)
    request = ChatRequest(
        question=question.question,
        mode="selected_text" if question.selected_text else "normal",
        selected_text=question.selected_text or "",
        page=page,
        request_id=f"eval-{question.id}",
    )
    scopes: tuple[str, ...] = ()
    run = await _ask(answerer, request)
    scopes += run.scopes
    for _ in range(MAX_WIDENINGS):
        if run.widen is None:
            break
        request = dataclasses.replace(request, scope=run.widen)  # as the reader accepting the offer
        run = await _ask(answerer, request)
        scopes += run.scopes
    return dataclasses.replace(run, scopes=scopes, latency_ms=(time.monotonic() - started) * 1000)


# Scoring -----------------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINE_MARKS = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)*(?:#{1,6}[ \t]+)?", re.MULTILINE)
_TYPOGRAPHY = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": None, "*": None, "_": None})


def normalise(text: str) -> str:
    """Text for key-fact matching: Markdown and citation markers removed, case and spaces folded."""
    plain = _LINE_MARKS.sub("", _LINK.sub(r"\1", strip_markers(text)))
    return " ".join(plain.translate(_TYPOGRAPHY).split()).casefold()


def key_facts(answer: str, terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """(found, missing) ``must_contain`` terms."""
    text = normalise(answer)
    found = [term for term in terms if (needle := normalise(term)) and needle in text]  # "" is no fact
    return found, [term for term in terms if term not in found]


_QUOTE_LINE = re.compile(r"^[ \t]{0,3}>[ \t]?(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_BLOCK_LINE = re.compile(r"^(?:\s*(?:[-*+]|\d{1,3}[.)])\s|\s*\||\s*(?:```|~~~)| {4,}|\t)")
_OPENERS = "\"'“‘(*_["  # may precede a sentence's first letter
_CLOSERS = "\"'”’)*_]"  # may follow its final punctuation
_CUT = ("…", "...")
# A sentence may begin with a code identifier or a bolded name (`createStore` returns…, **redux-persist**):
# lowercase there is the term's own spelling, not a continuation.
_TERM_START = re.compile(r"^\s*(?:`[^`]+`|\*\*[^*]+\*\*)")
_TERMINAL = (".", "!", "?")


def quoted_passages(answer: str) -> list[str]:
    """The answer's ``>`` blockquotes, one passage each: a lead-in quoted with its list or code (a
    ``>`` blank line between them) is one passage, judged at its two ends."""
    passages: list[str] = []
    current: list[str] = []
    for line in [*answer.splitlines(), ""]:
        match = _QUOTE_LINE.match(line)
        if match is not None:
            current.append(match.group(1))
            continue
        if any(part.strip() for part in current):
            passages.append("\n".join(current).strip("\n"))
        current = []
    return passages


def fragment_reason(passage: str) -> str | None:
    """Why a quoted passage is a fragment, or None when it is whole.

    A passage is whole when it starts and stops at sentence boundaries. It *starts mid-sentence* when
    its first character (past opening quotes, brackets and emphasis marks) is a lowercase letter or
    one of ``, ; : )``, or it opens with ``…``/``...``; a first word in code or bold (an identifier, a
    package name) is spelled as it is and not checked. It *stops mid-sentence* when its last
    character (citation markers removed, past closing quotes, brackets and emphasis marks) is not
    ``.``, ``!`` or ``?``, or it ends with ``…``/``...`` (a cut). Blocks quoted whole are allowed:
    a first or last line that is a list item, a table row, a code fence or indented code is not
    checked at that end; a code fence left open is a fragment.
    """
    lines = [line for line in strip_markers(passage).strip().splitlines() if line.strip()]
    if not lines:
        return None
    if sum(bool(_FENCE.match(line)) for line in lines) % 2:
        return "unclosed_code"
    if not _BLOCK_LINE.match(lines[0]) and not _TERM_START.match(lines[0]):
        start = lines[0].strip().lstrip(_OPENERS)
        if start.startswith(_CUT):
            return "starts_with_cut"
        if start[:1].islower() or start[:1] in (",", ";", ":", ")"):
            return "starts_mid_sentence"
    if not _BLOCK_LINE.match(lines[-1]):
        end = lines[-1].rstrip().rstrip(_CLOSERS).rstrip()
        if end.endswith(_CUT):
            return "ends_with_cut"
        if not end.endswith(_TERMINAL):
            return "ends_mid_sentence"
    return None


@dataclass(frozen=True)
class Fragment:
    where: Literal["answer", "quote"]  # a > quote of the answer, or a done.quotes text
    text: str
    reason: str


def fragments_of(run: AnswerRun) -> tuple[int, list[Fragment]]:
    """(quoted passages, the fragments among them) of one answer."""
    in_answer = quoted_passages(run.answer)
    found = [Fragment("answer", p, reason) for p in in_answer if (reason := fragment_reason(p))]
    found += [Fragment("quote", q, reason) for q in run.quotes if (reason := fragment_reason(q))]
    return len(in_answer) + len(run.quotes), found


# The judge ---------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?][\"')\]”’*_]*(?:\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])*+(?=\s+[^a-z\s]|\s*$)")


def answer_sentences(answer: str) -> list[str]:
    """What the judge checks one by one: the answer's sentences, list items and table rows; a code
    block goes with the sentence before it (``Wrap it [1]:`` + the code), as it is that sentence's claim."""
    units: list[str] = []
    for block in _blocks(answer):
        if _FENCE.match(block) and units:
            units[-1] = f"{units[-1]}\n{block}"
        elif _FENCE.match(block):
            units.append(block)
        else:
            units.extend(_split_sentences(block))
    return units


_QUOTE_MARKS = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)+")
_ITEM_START = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s|^\s*\|")


def _blocks(answer: str) -> list[str]:
    """Paragraphs (hard-wrapped lines joined), list items and table rows, and whole fenced code
    blocks. Quote marks are dropped: a quoted sentence is a claim like any other."""
    blocks: list[str] = []
    paragraph: list[str] = []
    fence: list[str] | None = None

    def end_paragraph() -> None:
        if paragraph:
            blocks.append(" ".join(paragraph))
            paragraph.clear()

    for raw in answer.splitlines():
        line = _QUOTE_MARKS.sub("", raw)
        if fence is not None:
            fence.append(line)
            if _FENCE.match(line):
                blocks.append("\n".join(fence))
                fence = None
        elif _FENCE.match(line):
            end_paragraph()
            fence = [line]
        elif not line.strip() or _ITEM_START.match(line):
            end_paragraph()
            if line.strip():
                paragraph.append(line.strip())
        else:
            paragraph.append(line.strip())
    end_paragraph()
    if fence is not None:
        blocks.append("\n".join(fence))
    return blocks


def _split_sentences(line: str) -> list[str]:
    # A citation marker after the full stop still belongs to the sentence before it (the markers are
    # taken possessively: "One! [2] two" is not cut before "[2]" just because "two" is lowercase).
    cuts = [m.end() for m in _SENTENCE_END.finditer(line)]
    pieces = [line[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]
    return [p for p in pieces if p]


_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("prompts")),
    autoescape=False,  # a plain-text prompt; the untrusted answer and sources go through `delimited`
    undefined=jinja2.StrictUndefined,
)
_templates.filters["delimited"] = delimited
_templates.filters["attribute"] = attribute


def judge_messages(
    question: str, sentences: Sequence[str], sources: Sequence[Source], *, book_title: str
) -> list[Message]:
    prompt = _templates.get_template("judge.j2").render(
        book_title=book_title,
        question=question,
        sentences=json.dumps(list(sentences), ensure_ascii=False, indent=1),
        sources=sources,
    )
    return [{"role": "user", "content": prompt.strip()}]


@dataclass(frozen=True)
class JudgedSentence:
    n: int
    text: str
    supported: bool | None  # None: the judge said nothing usable about it
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    model: str
    sentences: tuple[JudgedSentence, ...] = ()
    error: str | None = None  # the judge failed or its reply could not be read

    @property
    def supported(self) -> bool | None:
        """True when every sentence is supported, False when one is not, None when unknown."""
        if self.error is not None or not self.sentences:
            return None
        values = [s.supported for s in self.sentences]
        if False in values:
            return False
        return None if None in values else True

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "supported": self.supported,
            "error": self.error,
            "sentences": [dataclasses.asdict(s) for s in self.sentences],
        }


_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_in(reply: str) -> Any:
    """The JSON value in a reply that may wrap it in a code fence or in prose; None when there is none."""
    fenced = _JSON_FENCE.search(reply)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(reply)
    for text in candidates:
        text = text.strip()
        for opening, closing in (("{", "}"), ("[", "]")):
            start, end = text.find(opening), text.rfind(closing)
            if 0 <= start < end:
                try:
                    return json.loads(text[start : end + 1])
                except ValueError:
                    continue
    return None


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower().replace("_", " ")
        if word in ("true", "yes", "supported"):
            return True
        if word in ("false", "no", "unsupported", "not supported"):
            return False
    return None


def parse_verdict(reply: str, sentences: Sequence[str], *, model: str) -> Verdict:
    """The judge's reply read leniently: a ``{"sentences": [...]}`` object or a bare list, items
    matched by ``n`` (else by position); anything missing or unreadable is unknown, never supported."""
    data = _json_in(reply)
    items = data.get("sentences") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return Verdict(model, error="unreadable judge reply")
    said: dict[int, tuple[bool | None, str]] = {}
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            continue
        try:
            n = int(item.get("n", position))
        except (TypeError, ValueError):
            n = position
        said.setdefault(n, (_truth(item.get("supported")), str(item.get("reason", ""))))
    judged = tuple(
        JudgedSentence(n, text, *said.get(n, (None, ""))) for n, text in enumerate(sentences, start=1)
    )
    return Verdict(model, judged)


class Judge:
    """Asks a model whether each sentence of an answer is supported by the sources it cites."""

    def __init__(self, client: LLMClient, *, book_title: str, timeout_s: float) -> None:
        self.client = client
        self.book_title = book_title
        self.timeout_s = timeout_s

    async def judge(self, question: str, run: AnswerRun) -> Verdict:
        sentences = answer_sentences(run.answer)
        cited = [s for s in run.sources if s.n in run.citations]
        messages = judge_messages(question, sentences, cited, book_title=self.book_title)
        try:
            reply = await self.client.complete(
                messages, timeout_s=self.timeout_s, max_tokens=JUDGE_MAX_TOKENS
            )
        except BookwiseError as error:
            return Verdict(self.client.model, error=error.code)
        return parse_verdict(reply, sentences, model=self.client.model)


# Outcomes and the summary ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerOutcome:
    question: AnswerQuestion
    run: AnswerRun
    verdict: Verdict | None = None

    @property
    def answerable(self) -> bool:
        return self.question.question.answerable

    def _is_gold(self, n: int) -> bool:
        source = self.run.source(n)
        return source is not None and first_hit([source.key], self.question.question.gold) == 0

    @property
    def first_cited_gold(self) -> bool:
        first = self.run.first_cited
        return first is not None and self._is_gold(first)

    @property
    def any_cited_gold(self) -> bool:
        return self.run.outcome == "answered" and any(self._is_gold(n) for n in self.run.citations)

    def to_dict(self) -> dict[str, Any]:
        q, run = self.question.question, self.run
        found, missing = key_facts(run.answer, self.question.must_contain)
        passages, fragments = fragments_of(run)
        first = run.source(run.first_cited) if run.first_cited is not None else None
        return {
            "id": q.id,
            "type": q.type,
            "question": q.question,
            "mode": "selected_text" if q.selected_text else "normal",
            "scopes": list(run.scopes),
            "outcome": run.outcome,
            "answer_kind": run.answer_kind,
            "error": run.error,
            "answer": run.answer,
            "citations": [{"n": n, "section": list(s.key)} for n in run.citations if (s := run.source(n))],
            "quotes": list(run.quotes),
            "gold": [list(g) for g in q.gold],
            "first_cited": list(first.key) if first else None,
            "first_cited_gold": self.first_cited_gold,
            "any_cited_gold": self.any_cited_gold,
            "key_facts": {"found": found, "missing": missing},
            "quoted_passages": passages,
            "fragments": [dataclasses.asdict(f) for f in fragments],
            "judge": self.verdict.to_dict() if self.verdict else None,
            "latency_ms": round(run.latency_ms, 1),
        }


@dataclass(frozen=True)
class Rate:
    count: float
    of: int

    @property
    def value(self) -> float | None:
        return round(self.count / self.of, 4) if self.of else None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "count": round(self.count, 4), "of": self.of}


def _key_fact_rates(outcomes: Sequence[AnswerOutcome]) -> tuple[Rate, Rate]:
    with_terms = [o for o in outcomes if o.answerable and o.question.must_contain]
    shares = [
        len(key_facts(o.run.answer, o.question.must_contain)[0]) / len(o.question.must_contain)
        for o in with_terms
    ]
    return Rate(sum(shares), len(shares)), Rate(sum(s == 1.0 for s in shares), len(shares))


def _judge_rates(outcomes: Sequence[AnswerOutcome]) -> tuple[Rate, Rate]:
    verdicts = [o.verdict for o in outcomes if o.verdict is not None]
    known = [v.supported for v in verdicts if v.supported is not None]
    sentences = [s.supported for v in verdicts for s in v.sentences if s.supported is not None]
    return Rate(sum(known), len(known)), Rate(sum(sentences), len(sentences))


def metrics(outcomes: Sequence[AnswerOutcome]) -> dict[str, Rate]:
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    key, key_all = _key_fact_rates(outcomes)
    fragment_counts = [fragments_of(o.run) for o in outcomes]
    supported, sentences = _judge_rates(outcomes)
    return {
        "first_cited_gold": Rate(sum(o.first_cited_gold for o in answerable), len(answerable)),
        "any_cited_gold": Rate(sum(o.any_cited_gold for o in answerable), len(answerable)),
        "key_facts": key,
        "key_facts_all": key_all,
        "fragment_rate": Rate(sum(len(f) for _, f in fragment_counts), sum(n for n, _ in fragment_counts)),
        "declined": Rate(sum(o.run.outcome == "declined" for o in unanswerable), len(unanswerable)),
        "false_declines": Rate(sum(o.run.outcome == "declined" for o in answerable), len(answerable)),
        "supported": supported,
        "sentences_supported": sentences,
    }


@dataclass(frozen=True)
class AnswerGate:
    """CI thresholds on the answer metrics: any one missed fails the run."""

    min_first_cited: float | None = None
    min_any_cited: float | None = None
    min_key_facts: float | None = None
    max_fragments: float | None = None
    min_declined: float | None = None
    max_false_declines: float | None = None
    min_supported: float | None = None

    def failures(self, rates: dict[str, Rate]) -> list[str]:
        checks = [
            ("first_cited_gold", self.min_first_cited, "min"),
            ("any_cited_gold", self.min_any_cited, "min"),
            ("key_facts", self.min_key_facts, "min"),
            ("fragment_rate", self.max_fragments, "max"),
            ("declined", self.min_declined, "min"),
            ("false_declines", self.max_false_declines, "max"),
            ("supported", self.min_supported, "min"),
        ]
        failed = []
        for name, bound, kind in checks:
            value = rates[name].value
            if bound is None:
                continue
            if value is None:
                # Nothing measured: a minimum cannot be shown (no judge reply, no unanswerable question),
                # a maximum holds (no quoted passage is no fragment).
                if kind == "min":
                    failed.append(f"{name} not measured (gate {bound})")
            elif (kind == "min" and value < bound) or (kind == "max" and value > bound):
                failed.append(f"{name} {value:.4f} {'<' if kind == 'min' else '>'} {bound}")
        return failed


@dataclass
class AnswerEval:
    outcomes: list[AnswerOutcome]
    answer_mode: str  # "llm" or "extractive"
    model: str | None
    judge_model: str | None
    index_version: str

    def report(self, gate: AnswerGate) -> dict[str, Any]:
        rates = metrics(self.outcomes)
        failures = gate.failures(rates)
        latencies = [o.run.latency_ms for o in self.outcomes]
        counts = {
            kind: sum(o.run.outcome == kind for o in self.outcomes)
            for kind in ("answered", "declined", "error")
        }
        return {
            "questions": len(self.outcomes),
            "answerable": sum(o.answerable for o in self.outcomes),
            "unanswerable": sum(not o.answerable for o in self.outcomes),
            "answer_mode": self.answer_mode,
            "model": self.model,
            "judge_model": self.judge_model,
            "index_version": self.index_version,
            "outcomes": counts,
            "judge": _judge_counts(self.outcomes),
            "metrics": {name: rate.to_dict() for name, rate in rates.items()},
            "by_type": _by_type(self.outcomes),
            "latency_ms": {
                "p50": round(statistics.median(latencies), 1) if latencies else 0.0,
                "max": round(max(latencies), 1) if latencies else 0.0,
            },
            "gate": {"passed": not failures, "failures": failures},
            "details": [o.to_dict() for o in self.outcomes],
        }


def _judge_counts(outcomes: Sequence[AnswerOutcome]) -> dict[str, int]:
    """Answers judged, and those without a verdict (the judge failed, or left a sentence unjudged)."""
    verdicts = [o.verdict for o in outcomes if o.verdict is not None]
    return {"judged": len(verdicts), "unknown": sum(v.supported is None for v in verdicts)}


def _by_type(outcomes: Sequence[AnswerOutcome]) -> dict[str, dict[str, Any]]:
    by_type = {}
    for kind in sorted({o.question.question.type for o in outcomes}):
        rates = metrics([o for o in outcomes if o.question.question.type == kind])
        by_type[kind] = {"questions": sum(o.question.question.type == kind for o in outcomes)} | {
            name: rates[name].value
            for name in ("first_cited_gold", "key_facts", "declined", "false_declines")
        }
    return by_type


# Running it ------------------------------------------------------------------------------------------


async def evaluate_answers(
    answerer: Answerer, questions: Sequence[AnswerQuestion], *, judge: Judge | None, concurrency: int
) -> list[AnswerOutcome]:
    """Every question answered (and judged), ``concurrency`` at a time; outcomes in question order."""
    outcomes: list[AnswerOutcome | None] = [None] * len(questions)
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(index: int, question: AnswerQuestion) -> None:
        async with limiter:
            run = await answer_question(answerer, question.question)
            verdict = None
            if judge is not None and run.outcome == "answered":
                verdict = await judge.judge(question.question.question, run)
            outcomes[index] = AnswerOutcome(question, run, verdict)

    async with anyio.create_task_group() as group:
        for index, question in enumerate(questions):
            group.start_soon(one, index, question)
    return [outcome for outcome in outcomes if outcome is not None]


def run_answer_eval(
    settings: Settings, questions: Sequence[AnswerQuestion], *, judge: bool = True, concurrency: int = 4
) -> AnswerEval:
    """The configured index and model (extractive without one), as ``bookwise serve`` would answer."""
    if concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    judge_model = settings.eval_judge_model or settings.llm_model

    async def run() -> AnswerEval:
        llm = LLMClient(settings) if settings.llm_base_url else None
        judge_client = None
        if llm is not None and judge:
            judge_client = LLMClient(settings.model_copy(update={"llm_model": judge_model}))
        try:
            retriever = await anyio.to_thread.run_sync(Retriever.open, settings)
            try:
                judged = (
                    Judge(
                        judge_client, book_title=settings.book_title, timeout_s=settings.llm_total_timeout_s
                    )
                    if judge_client is not None
                    else None
                )
                outcomes = await evaluate_answers(
                    Answerer(settings, retriever, llm), questions, judge=judged, concurrency=concurrency
                )
                version = retriever.index_version
            finally:
                retriever.close()
        finally:
            for client in (llm, judge_client):
                if client is not None:
                    await client.aclose()
        return AnswerEval(
            outcomes,
            answer_mode="llm" if llm is not None else "extractive",
            model=llm.model if llm is not None else None,
            judge_model=judge_client.model if judge_client is not None else None,
            index_version=version,
        )

    return anyio.run(run)


# The report on a terminal -----------------------------------------------------------------------------

SUMMARY_ROWS = (
    ("first_cited_gold", "first cited passage is from a gold section"),
    ("any_cited_gold", "a gold section is cited"),
    ("key_facts", "key facts present (share of terms)"),
    ("key_facts_all", "answers with every key fact"),
    ("fragment_rate", "quoted passages that are fragments"),
    ("declined", "unanswerable questions declined"),
    ("false_declines", "answerable questions declined"),
    ("supported", "judge: answers fully supported"),
    ("sentences_supported", "judge: sentences supported"),
)


def summary_lines(report: dict[str, Any]) -> list[str]:
    outcomes, latency, judged = report["outcomes"], report["latency_ms"], report["judge"]
    mode = f"{report['answer_mode']} ({report['model']})" if report["model"] else report["answer_mode"]
    lines = [
        f"questions: {report['questions']} ({report['answerable']} answerable, "
        f"{report['unanswerable']} unanswerable); answers: {mode}; judge: {report['judge_model'] or 'off'}",
        f"outcomes:  {outcomes['answered']} answered, {outcomes['declined']} declined, "
        f"{outcomes['error']} errors; latency p50 {latency['p50']:.0f} ms, max {latency['max']:.0f} ms",
    ]
    if report["judge_model"]:
        lines.append(f"judged:    {judged['judged']} answers, {judged['unknown']} without a verdict")
    lines += ["", f"{'metric':44} {'value':>6}  {'count':>9}"]
    for name, label in SUMMARY_ROWS:
        rate = report["metrics"][name]
        value = "-" if rate["value"] is None else f"{rate['value']:.3f}"
        lines.append(f"{label:44} {value:>6}  {rate['count']:>5g}/{rate['of']}")
    lines.append("")
    for kind, row in report["by_type"].items():
        shown = "  ".join(
            f"{name} {value:.2f}" for name, value in row.items() if name != "questions" and value is not None
        )
        lines.append(f"  {kind:16} n={row['questions']:<3} {shown}")
    return lines


def detail_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for d in report["details"]:
        facts = d["key_facts"]
        judged = d["judge"]["supported"] if d["judge"] else None
        verdict = "-" if judged is None else ("ok" if judged else "unsupported")
        lines.append(
            f"{d['id']:10} {d['type']:15} {d['outcome']:8}"
            f"  first cited gold {'yes' if d['first_cited_gold'] else 'no':3}"
            f"  facts {len(facts['found'])}/{len(facts['found']) + len(facts['missing'])}"
            f"  fragments {len(d['fragments'])}/{d['quoted_passages']}  judge {verdict}"
            + (f"  error {d['error']}" if d["error"] else "")
        )
    return lines
