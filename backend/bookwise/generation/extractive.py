"""The answer without a language model: the book's own passages that answer the question.

The passages (whole paragraphs, lists with their lead-in, code blocks with the sentence that
introduces them, tables, admonitions) are chosen by ``Retriever.rank_passages``; here they are picked
(best first, one to three, no passage twice) and written as Markdown quotes, each with its ``[n]``
citation, under a line that says this is the book's own text: nothing is paraphrased, so nothing
can be made up.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bookwise.retrieval.assemble import DELIMITER_ROW
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import is_tab_label, link_text, split_units
from bookwise.retrieval.snippets import flat, sentences, words
from bookwise.retrieval.topics import GREEK, defined_terms, symbols_named

EXTRACTIVE_LABEL = (
    "*From the book: no language model is configured, so this is the book's own text that best "
    "answers your question.*"
)
NOT_COVERED = "The book does not seem to cover this. The closest sections are listed in the sources."
NOTHING_FOUND = "The book does not seem to cover this. Ask about something it explains."


def not_covered_text(unknown_names: Sequence[str] = ()) -> str:
    """The decline, naming what the question asks about that the book never mentions, if anything."""
    if not unknown_names:
        return NOT_COVERED
    names = [f"“{name}”" for name in unknown_names]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return (
        f"The book does not seem to cover this: it never mentions {listed}. "
        "The closest sections are listed in the sources."
    )


MIN_WORDS = 4  # shorter sentences (headings, labels) make poor quotes
MAX_PASSAGES = 3
# A further passage is quoted only when it scores close to the best one: a weak second passage is
# noise under a good first one. On eval/docusaurus-docs a margin of 0.3 (vs 0.12, 0.2) put every key
# fact in 0.58 of answers (vs 0.53, 0.56) at the same first citation and fewer fragments.
FOLLOWING_MARGIN = 0.3
# Passages of the best one's section that score this close to it are as good an answer: the book's
# order reads better than the scores' (an introduction before what follows it).
READING_ORDER_MARGIN = 0.04
READABLE_LEAD_MARGIN = 0.05  # a best passage that points back gives way to one this close that does not
INTRODUCED_MAX_CHARS = 2400  # a longer code block or table is not pulled in behind its lead sentence
# The code right after the best passage is quoted second when it scores within this of it: code embeds
# poorly, so the block that shows what the lead passage describes ("… use the `truncate` marker" then
# the example) often ranks below passages that only restate the question. On eval/ (docusaurus-docs,
# docusaurus-docs-extra, redux-extra) 0.45 put every key fact in two more answers and cost none; 0.3
# gained one, 0.6 lost one (it pushed out a third passage that held a fact).
COMPLETING_MARGIN = 0.45
# A name of code in a question ("BOOKWISE_API_PORT", "`colorMode`", "trailingSlash"): a row it heads.
_IDENTIFIER = re.compile(r"`([^`]+)`|\b([A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*)\b")
# A reference table longer than this is quoted with only the rows the question asks about.
LONG_TABLE_ROWS = 4
MIN_ROW_WORDS = 2
# A list item's marker, where an item starts inside a list unit: each item is read as one line.
_ITEM_MARKER = re.compile(r"(?:^|\n)[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A further passage that opens by pointing back ("Its third column is why…") leans on a block the
# reader is not shown: it is quoted only right after the passage it continues. Only pronouns: a
# connective ("However, the last part of the id…") still reads on its own, and held key facts on eval/.
_LEANS_BACK = re.compile(
    r"^[>*_\s]*(?:its|it|this|that|these|those|they|their|them|such)\b",
    re.IGNORECASE,
)
# An opening that stands for something said before it, however it goes on: a pronoun, or a
# demonstrative that is the subject itself ("This is why…", "That means…").
_POINTS_BACK = re.compile(
    r"^[>*_\s]*(?:its|it|they|their|them|such|(?:this|that|these|those)(?=\s+(?:is|are|was|were|means?"
    r"|makes?|gives?|lets?|shows?|works?|will|would|can|could|also|in\s+turn|way)\b|\s*[,.;:]))\b",
    re.IGNORECASE,
)
# A passage that opens as a later step ("Then, add an item link…") or on what the step before it
# achieved ("And now, you can freely use `<Highlight>` in every page…") is read after the earlier step
# of its section when both are quoted, whichever scored higher.
_LATER_STEP = re.compile(
    r"^[>*_\s]*(?:then|next|after that|afterwards|finally|lastly|(?:and\s+)?now(?!\s+that))\b",
    re.IGNORECASE,
)
# As the best passage, one that opens on a step's result is not quoted without the block before it:
# alone it tells the reader that it can be done, not how. (A "Then, …" step still says what to do;
# bringing its earlier step in pushed the apiKey answer's "safe to commit" code out on eval/.)
_STEP_RESULT = re.compile(r"^[>*_\s]*(?:and\s+)?now(?!\s+that)\b", re.IGNORECASE)
# Passages whose ``asks`` verdict is kept: every answer reads it for each ranked passage (about 20),
# and the same passages come back for many questions.
ASKS_CACHE = 8192


@functools.lru_cache(maxsize=ASKS_CACHE)
def asks(text: str) -> bool:
    """Whether a passage only asks: a chapter's exercises ("1. Why does the P-only controller settle
    quickly but at the wrong speed? 2. …") quoted as the answer to that very question. Most of its
    sentences are questions (each list item read as one line) and it shows no code or table, which
    would answer them ("What happens if we dispatch now?" and the log it prints)."""
    units = split_units(text)
    if any(unit.kind in ("code", "table") for unit in units):
        return False
    lines = (" ".join(item.split()) for unit in units for item in _ITEM_MARKER.split(unit.text))
    said: list[str] = [s for line in lines for s in _SENTENCE_END.split(line) if s.strip()]
    questions = sum(s.rstrip("*_`) ").endswith("?") for s in said)
    return questions * 2 > len(said)


# A question that weighs the rows against each other ("Which range sensor works best outdoors?", "the
# cheapest", "compare"): its answer is in the rows it does not match as much as in those it does.
_WEIGHS_ROWS = re.compile(
    r"\b(?:best|worst|better|worse|most|least|compared?|comparison|versus|vs|pros|cons|trade-?offs?"
    r"|(?:fast|slow|cheap|long|short|high|low|larg|small|near|strong|weak|simpl|eas|hard|saf|quick|"
    r"accurat|precis|clos|light|heavi)(?:er|est))\b",
    re.IGNORECASE,
)


def rows_asked_about(markdown: str, question: str) -> str:
    """The passage with each long table (more than ``LONG_TABLE_ROWS`` rows) cut to its header and
    the rows that share most words with the question, and a "…" row for the others: "Why are my
    last-updated dates wrong on CI?" quoted 30 rows of plugin options to show one. A table where no
    row stands out (none shares ``MIN_ROW_WORDS`` words, or most rows match or are named by the
    question) is quoted whole, and so is a table whose rows a question weighs against each other
    without naming any ("Which range sensor works best outdoors in sunlight?" was cut to the depth
    camera, whose weakness is sunlight; "Is sonar better than lidar?" keeps their two rows). A table
    with a row headed by a term the question names ("what is BOOKWISE_DATA_DIR?") is cut to that row,
    however short (``_row_named``)."""
    wanted = words(question)
    weighs = bool(_WEIGHS_ROWS.search(question))
    code = [quoted or bare for quoted, bare in _IDENTIFIER.findall(question)]
    named = {term.lower() for term in [*defined_terms(question), *code]}
    units = split_units(markdown)
    cut = [
        "\n".join(
            _row_named(unit.text.split("\n"), named) or _matching_rows(unit.text.split("\n"), wanted, weighs)
        )
        if unit.kind == "table"
        else unit.text
        for unit in units
    ]
    if cut == [unit.text for unit in units]:
        return markdown
    return "\n\n".join(cut)


def _row_named(table: list[str], named: set[str]) -> list[str]:
    """The table cut to its header and the rows whose first cell is a term the question names
    ("what is BOOKWISE_DATA_DIR?": that setting's row of a settings table, however short the table),
    with a "…" row for the others; empty when no row is named so."""
    header, body = table[:2], table[2:]
    if not named or len(header) < 2 or not DELIMITER_ROW.match(header[1]):
        return []
    kept = [row for row in body if _first_cell(row).strip(" `").lower() in named]
    if not kept:
        return []
    return table if len(kept) == len(body) else _cut_to(header, kept)


def _matching_rows(table: list[str], wanted: set[str], weighs: bool) -> list[str]:
    header, body = table[:2], table[2:]
    if len(body) <= LONG_TABLE_ROWS or len(header) < 2 or not DELIMITER_ROW.match(header[1]):
        return table
    shared = [len(words(row) & wanted) for row in body]
    bar = max(MIN_ROW_WORDS, max(shared) - 1)
    # A row the question names (a word of its first cell: "how do sonar, an infrared ToF sensor and a
    # 2D lidar compare?") is kept whatever else it shares: a comparison keeps its table whole.
    named = [bool(words(_first_cell(row)) & wanted) for row in body]
    if weighs and not any(named):
        return table
    kept = [row for row, n, name in zip(body, shared, named, strict=True) if n >= bar or name]
    if not kept or len(kept) * 2 > len(body):
        return table
    return _cut_to(header, kept)


def _first_cell(row: str) -> str:
    return row.strip().strip("|").split("|")[0]


def _cut_to(header: list[str], kept: list[str]) -> list[str]:
    """A table's ``header`` and ``kept`` rows, then a "…" row for the rows left out."""
    columns = max(1, header[0].strip().strip("|").count("|") + 1)
    return [*header, *kept, "| … |" + " |" * (columns - 1)]


@dataclass(frozen=True)
class Quoted:
    source: int  # 1-based number in the sources list as shown
    text: str  # the passage's Markdown


def choose(ranked: Sequence[ScoredPassage], limit: int = MAX_PASSAGES) -> list[ScoredPassage]:
    """The best passage, then up to ``limit - 1`` more that score close to it and do not overlap it."""
    chosen: list[ScoredPassage] = []
    for candidate in ranked:
        if chosen and candidate.score < chosen[0].score - FOLLOWING_MARGIN:
            break
        if any(_overlaps(candidate, c) for c in chosen) or _said_before(candidate, chosen):
            continue
        repeated = next((i for i, c in enumerate(chosen) if _said_before(c, [candidate])), None)
        if repeated is not None:
            # A chosen passage says nothing this one does not: "In Redux, reducers are never allowed to
            # mutate…" on one page, and the same sentence with its example on another, read as the
            # answer repeating itself. The fuller one is quoted in its place.
            if not any(_overlaps(candidate, c) for c in chosen[:repeated] + chosen[repeated + 1 :]):
                chosen[repeated] = candidate
            continue
        if chosen and _needs_context(candidate) and not any(_continues(candidate, c) for c in chosen):
            continue
        grown = _with_what_it_introduces(candidate, ranked)
        chosen.append(grown if not any(_overlaps(grown, c) for c in chosen) else candidate)
        if len(chosen) == limit:
            break
    steps = _in_step_order(_with_completing_code(_with_step_before(chosen, ranked, limit), ranked, limit))
    return _ties_in_reading_order(steps)


def _ties_in_reading_order(chosen: list[ScoredPassage]) -> list[ScoredPassage]:
    """The best passage and the passages of its section that score within ``READING_ORDER_MARGIN``
    under it, in the book's order: "How do I slow down before a sharp turn?" quoted a note that ends
    "…as well" first, then the sentence after the limits, then the paragraph that introduces them
    (0.56, 0.54, 0.53)."""
    if not chosen:
        return chosen
    lead = chosen[0]
    tied = [
        p
        for p in chosen
        if p.passage.section == lead.passage.section
        and lead.score - READING_ORDER_MARGIN <= p.score <= lead.score
    ]
    rest = [p for p in chosen if p not in tied]
    return [*sorted(tied, key=lambda p: p.passage.position), *rest]


def readable_lead_first(ranked: list[ScoredPassage]) -> list[ScoredPassage]:
    """``ranked`` with a passage that reads on its own first, when the best one points back to a block
    the reader is not shown and that one scores within ``READABLE_LEAD_MARGIN`` of it: "what are the
    steps of the kalman filter" led with "Its third column is why heading uncertainty spreads…" (0.88)
    over "It then loops over two steps: 1. Predict… 2. Correct…" (0.86). Alone, the best is quoted
    whatever it opens with."""
    if not ranked or not _cannot_lead(ranked[0]):
        return ranked
    near = (p for p in ranked[1:] if p.score >= ranked[0].score - READABLE_LEAD_MARGIN)
    readable = next((p for p in near if not _needs_context(p)), None)
    return ranked if readable is None else [readable, *(p for p in ranked if p is not readable)]


def _with_step_before(
    chosen: list[ScoredPassage], ranked: Sequence[ScoredPassage], limit: int
) -> list[ScoredPassage]:
    """The chosen passages with the block before the best one quoted before it, when the best one
    opens on that block's result."""
    if not chosen or not _STEP_RESULT.match(chosen[0].passage.text):
        return chosen
    lead = chosen[0]
    steps = [p for p in ranked if _continues(lead, p) and len(p.passage.text) <= INTRODUCED_MAX_CHARS]
    if not steps:
        return chosen
    step = min(steps, key=lambda p: p.passage.position)  # the whole step: its sentence and its code
    rest = [c for c in chosen[1:] if not _overlaps(c, step)]
    return [step, lead, *rest][:limit]


def _in_step_order(chosen: list[ScoredPassage]) -> list[ScoredPassage]:
    """Passages of one section in reading order when a later one opens as the next step ("Then, …"):
    the steps read as the book gives them (their citation number is the same)."""
    ordered = list(chosen)
    for step in chosen:
        if not _LATER_STEP.match(step.passage.text):
            continue
        group = [
            p
            for p in ordered
            if p.passage.section == step.passage.section and p.passage.position <= step.passage.position
        ]
        at = min(ordered.index(p) for p in group)
        rest = [p for p in ordered if p not in group]
        ordered = rest[:at] + sorted(group, key=lambda p: p.passage.position) + rest[at:]
    return ordered


def _with_completing_code(
    chosen: list[ScoredPassage], ranked: Sequence[ScoredPassage], limit: int
) -> list[ScoredPassage]:
    """The chosen passages with the code block that follows the best one quoted second."""
    if not chosen:
        return chosen
    lead = chosen[0]
    for other in ranked:
        if other.score < lead.score - COMPLETING_MARGIN:
            break
        completes = (
            _continues(other, lead)
            and "code" in other.passage.kinds
            and len(other.passage.text) <= INTRODUCED_MAX_CHARS
        )
        if completes:
            if other in chosen or any(_overlaps(other, c) for c in chosen):
                return chosen
            return [lead, other, *chosen[1:]][:limit]
    return chosen


def _with_what_it_introduces(scored: ScoredPassage, ranked: Sequence[ScoredPassage]) -> ScoredPassage:
    """A paragraph quoted with the code block, table or list it leads into, when one follows it.

    "You can enable this feature that hides the navbar…" without the ``hideOnScroll: true`` after it
    tells a reader that there is a way, not what it is; alone it often outscores the pair because
    code embeds poorly.
    """
    if scored.passage.kinds != ("prose",):
        return scored
    for other in ranked:
        same_start = (other.passage.section, other.passage.position) == (
            scored.passage.section,
            scored.passage.position,
        )
        pair = len(other.passage.kinds) == 2 and other.passage.kinds[0] == "prose"
        if same_start and pair and len(other.passage.text) <= INTRODUCED_MAX_CHARS:
            return other
    return scored


def _needs_context(scored: ScoredPassage) -> bool:
    """A further passage that cannot be read on its own: it points back ("Its third column…"), or it is
    bare code, with no sentence to say what it shows (a table names its columns)."""
    return _leans_back(scored) or scored.passage.kinds == ("code",)


def _cannot_lead(scored: ScoredPassage) -> bool:
    """A best passage that cannot be read first: bare code, or an opening pronoun with nothing before
    it to stand for ("Its third column…", "This is why…"). "This plugin supports…" names its subject."""
    text = scored.passage.text
    return scored.passage.kinds == ("code",) or (
        scored.passage.kinds[0] == "prose" and bool(_POINTS_BACK.match(text))
    )


def _leans_back(scored: ScoredPassage) -> bool:
    return scored.passage.kinds[0] == "prose" and bool(_LEANS_BACK.match(scored.passage.text))


def _end(scored: ScoredPassage) -> int:
    """The block position just past the passage."""
    return scored.passage.position + len(scored.passage.kinds)


def _continues(a: ScoredPassage, b: ScoredPassage) -> bool:
    """Whether ``a`` is the block right after ``b``."""
    return a.passage.section == b.passage.section and a.passage.position == _end(b)


def _overlaps(a: ScoredPassage, b: ScoredPassage) -> bool:
    if a.passage.section != b.passage.section:
        return False
    return a.passage.position < _end(b) and b.passage.position < _end(a)


def _said_before(candidate: ScoredPassage, chosen: Sequence[ScoredPassage]) -> bool:
    """``candidate`` says nothing a chosen passage does not: the same warning on two pages (a migration
    guide and the feature's page), quoted twice, read as the answer repeating itself. A label only
    ever leads a passage (its first block, one line), so the body is what follows it."""
    passage = candidate.passage
    body = passage.text.partition("\n\n")[2] if passage.kinds[0] == "label" else passage.text
    said = flat(body)
    return bool(said) and any(said in flat(c.passage.text) for c in chosen)


def cite(markdown: str, n: int) -> str:
    """The passage with its ``[n]`` after its last line of prose (code and tables stay untouched), or at
    its end when it has none. A tab's label ("Python:" over the code) is no prose: "Python: [1]" read
    as if the label were what the book says. (A lead as short, "Run this:", is read as one too.)"""
    units = split_units(markdown)
    prose = [
        i for i, u in enumerate(units) if u.kind in ("prose", "list", "label") and not is_tab_label(units, i)
    ]
    parts = [_without_trailing_blank_lines(u.text) if u.kind == "code" else u.text for u in units]
    if prose:
        parts[prose[-1]] = f"{parts[prose[-1]]} [{n}]"
    else:
        parts.append(f"[{n}]")
    return "\n\n".join(parts)


def _without_trailing_blank_lines(fence: str) -> str:
    """A fenced block without the blank lines before its closing fence: a long program is stored in
    groups of lines, and a group that ends at a blank line showed an empty box under the code."""
    body, closing = fence.rstrip().rpartition("\n")[::2]
    return (
        f"{body.rstrip()}\n{closing}"
        if closing.startswith(("```", "~~~")) and "\n" in fence.strip()
        else fence
    )


def blockquote(markdown: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in markdown.split("\n"))


def passage_answer(quoted: Sequence[Quoted]) -> str:
    """Markdown: the label, then each passage as a quote with its citation."""
    if not quoted:
        return NOT_COVERED
    body = "\n\n".join(blockquote(cite(q.text, q.source)) for q in quoted)
    return f"{EXTRACTIVE_LABEL}\n\n{body}"


def quotable_sentences(text: str) -> list[str]:
    """Sentences of plain text (a reader's selection) that can stand alone as a quote."""
    plain = (link_text(s) for s in sentences(text))
    return [s for s in plain if len(s.split()) >= MIN_WORDS and s != "…"]


SELECTION_LABEL = (
    "*From your selection: no language model is configured, so these are the sentences of your "
    "selection that bear on the question.*"
)
EXPLAIN_NOTE = (
    "*A language model would explain this passage in other words. Without one, Bookwise can show "
    "what the section around it says: ask about the whole section.*"
)
# Words of requests about the passage itself ("explain this", "what does it mean?", "how does this
# work?"): they ask for the whole selection rather than for something in it.
GENERIC_ASK = frozenset(
    "explain explanation mean means meaning summarize summarise summary simplify clarify elaborate "
    "describe tell rephrase paraphrase passage selection selected text paragraph sentence part "
    "simply simple simpler words plain example code snippet block work works understand help me".split()
)
SELECTION_QUOTED = 3


def is_generic_ask(question: str) -> bool:
    """ "Explain this", "what does this mean?": a request about the passage, not a question in it.
    "what is Q?" names a symbol, which is a question in it."""
    return not (words(question) - GENERIC_ASK) and not symbols_named(question)


def _terms(text: str) -> set[str]:
    """``text``'s words, the Greek letters of its formulas ("what is κ here?" asks about κ) and its
    one-letter symbols ("what is P?" asks about the P term)."""
    return words(text) | (set(text) & GREEK) | set(symbols_named(text))


def _matching_sentences(question: str, text: str, limit: int) -> list[str]:
    wanted = _terms(question)
    scored = [(len(_terms(s) & wanted), -i, s) for i, s in enumerate(quotable_sentences(text))]
    best = sorted((item for item in scored if item[0] > 0), reverse=True)[:limit]
    return [s for _, _, s in sorted(best, key=lambda item: -item[1])]  # in reading order


CODE_SELECTION_LABEL = (
    "*From your selection: no language model is configured, so Bookwise cannot explain this code; "
    "here it is as the book gives it.*"
)
# A line of code rather than of prose: an operator, a bracket, a statement's end, or a comment.
_CODE_LINE = re.compile(r"[=;{}()\[\]<>]|^\s*(?:#|//)")


def is_code(text: str) -> bool:
    """Whether a selection is code (a code block's Ask sends its lines as they are): several lines,
    few ending as sentences do, and indented or most of them code-like."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2 or sum(line.rstrip().endswith((".", "!", "?")) for line in lines) * 3 > len(lines):
        return False
    indented = any(line[:1] in (" ", "\t") for line in lines)
    return indented or sum(bool(_CODE_LINE.search(line)) for line in lines) * 2 >= len(lines)


def _fenced(code: str) -> str:
    """``code`` as a fenced block, its indentation kept, behind a fence no line of it closes."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", code)), default=0))
    return f"{fence}\n{code.strip(chr(10))}\n{fence}"


def selection_answer(question: str, selection: SectionResult) -> str | None:
    """The selection's own sentences that answer; None when the selection does not bear on it.
    Selected code is shown as code, whole: its lines are no sentences."""
    if is_code(selection.text):
        if not is_generic_ask(question) and not words(question) & words(selection.text):
            return None
        return f"{CODE_SELECTION_LABEL}\n\n{_fenced(selection.text)}\n\n[1]\n\n{EXPLAIN_NOTE}"
    if is_generic_ask(question):
        quoted = quotable_sentences(selection.text) or [" ".join(selection.text.split())]
        statements = "\n".join(f"- {text}" for text in quoted)
        return f"{SELECTION_LABEL}\n\n{blockquote(statements)} [1]\n\n{EXPLAIN_NOTE}"
    matching = _matching_sentences(question, selection.text, SELECTION_QUOTED)
    if not matching:
        return None
    return SELECTION_LABEL + "\n\n" + "\n\n".join(f"> {text} [1]" for text in matching)
