"""The extractive answer's plan: which passages to quote, which sources to list, whether to decline.

Sources are renumbered in the order the answer quotes them, so the first quote is ``[1]``; the other
retrieved sections stay listed after them only when their best passage scores near the quoted ones
(a section far below is no evidence). A passage the reader was already shown in this conversation
is not quoted again: "how do I fix it?" should not repeat the previous answer.

Declining uses the passage evidence as well as retrieval's calibrated verdict: the book is taken to
answer when retrieval says so and the best passage is a fair match (its cosine plus half its term
coverage; a better one when the question names something no chunk of the book contains), or when
the best passage is a strong match on its own or holds every term the question
names ("What happens if R is too small?": a table row of the right section; the verdict misses some
answerable questions, and no unanswerable question of our sets had a passage with all its terms).
Neither overrides the verdict for a question that also names something the book never contains: the
passage then scores on the question's other words (on our sets, all 14 such questions were unanswerable).
Whatever the scores, the book does not answer a question about something it never mentions
(retrieval's ``asks_unknown``: "How does SLAM build a map of the room?" matched the frames passage
on "map" and "room").

A list of an exercise section is not quoted, whatever it says: an exercise that states its data
before it asks reads as an answer to a question about that data. (Only its lists: a FAQ heading such
as "Will having one state tree cause memory problems?" reads as an exercise heading.) A question that
asks for the exercises ("What are the exercises in the Kalman chapter?") is the exception: it leads
with them, when they score near the best passage, and still never with their solutions. A box that
warns (danger, warning, caution) is quoted after the best passage only when it holds the question's
terms as well as that passage does: the wall question's answer went on to the lab's "Real motors are
not simulations".

A question that asks what something is ("What is odometry?", "What does the baseUrl setting do?")
leads with the passage that defines it, when one scores near the best: a sentence "X is …", a bold
or italic introduction of X or a table row X heads, the book's entry on X (the first prose of a
section headed by X alone), or the opening of a section whose heading names X. "Odometry drifts,
so…" scored above "Odometry applies the forward kinematics to measured rather than commanded wheel
motion…". A question that asks for a formula ("kalman gain formula") leads with a passage that writes
one, when one scores near the best.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from bookwise.generation.citations import strip_markers
from bookwise.generation.extractive import Quoted, asks, choose, readable_lead_first, rows_asked_about
from bookwise.generation.prompts import Turn
from bookwise.generation.study import is_exercise_section
from bookwise.retrieval.measures import asks_for_formula, writes_formula
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import split_units
from bookwise.retrieval.snippets import flat
from bookwise.retrieval.topics import defined_terms, holds_symbol, is_symbol, spelled_apart, stems

FAR_BELOW = 0.3  # a source whose best passage scores this far under the best one is not listed
# Passage evidence: the best passage's cosine plus half its term coverage. Chosen on eval/ (redux-extra,
# docusaurus-docs, docusaurus-docs-extra)
# and the example book's questions (scripts/bench_passages.py --evidence); redux's own set measured.
COVERAGE_SHARE = 0.5
ANSWER_EVIDENCE = 0.5  # with retrieval's "sufficient", the book answers from this evidence up
STRONG_EVIDENCE = 0.8  # against retrieval's "insufficient", only from this evidence up…
FULL_COVERAGE_TERMS = 2  # …or when one passage holds every named term of a question with this many
# A question naming something the book never mentions ("deploy to Firebase", "write in AsciiDoc") is
# answered only from a better passage than others need: halfway between the two bars above.
UNKNOWN_NAME_EVIDENCE = (ANSWER_EVIDENCE + STRONG_EVIDENCE) / 2
_WARNING_BOX = re.compile(r"^\*\*(?:danger|warning|caution)\b", re.IGNORECASE)
# A passage that defines what the question asks about leads when it scores this close to the best one
# (the margin within which a further passage is quoted at all).
DEFINITION_MARGIN = 0.3
BARE_CODE_MARGIN = 0.1  # bare code leads unless a passage in words scores this close to it…
INTRODUCTION_MARGIN = 0.2  # …or the passage introducing it, right before it, scores this close
# A follow-up that names nothing of its own ("how do I fix it?") is answered from a passage the reader
# was just shown when the best new passage scores this far below it. On the example book: the drift
# passage 0.78 against a worked example of encoder ticks 0.54, the odometry section against the
# Kalman filter's tuning 0.98 against 0.76; a new passage that holds the fix ("To fix it, lower K")
# scores close to the passage it follows.
SHOWN_MARGIN = 0.15
# A passage of the page the reader asks from leads when it scores this close to the best one.
READER_PAGE_MARGIN = 0.1
EMPHASIS = re.compile(r"\*\*([^*\n]{1,60})\*\*|(?<![*\w])[*_]([^*_\n]{1,60})[*_](?![*\w])")
_IS = frozenset("is are means mean refers denotes describes".split())
_QUESTION_HEADING = frozenset("why how when what where which who should can does do".split())
_SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
# "show me the code", "give me some code": a request for code itself ("My C# code blocks render as
# plain text" asks about code blocks, and is answered as any question).
_ASKS_FOR_CODE = re.compile(
    r"^(?:show|give|send)(?: me| us)?(?: the| some| a| its)? (?:code|snippet|implementation|listing)\b",
    re.IGNORECASE,
)
# "What are the exercises in the Kalman chapter?", "any practice problems on PID?"
_ASKS_FOR_EXERCISES = re.compile(
    r"\b(?:exercises?|practice (?:problems?|questions?)|problems? to (?:solve|practi[cs]e)|homework)\b",
    re.IGNORECASE,
)
_FIRST_CELL = re.compile(r"^\|([^|\n]+)\|(?=[^\n]*\|)", re.MULTILINE)  # a table row's first cell
# Prose that opens with a word, not a box's bold label ("**Warning**") or an italic caption
# ("_Articles discussing ways to write reducer functions_" over a reading list).
_PLAIN_LEAD = re.compile(r"^\s*[^\W_]|^\s*[`\"'(]")


@dataclass(frozen=True)
class PassagePlan:
    sources: list[SectionResult]  # in the order shown; ``quoted`` numbers index this list
    quoted: list[Quoted]
    sufficient: bool
    best: ScoredPassage | None
    unknown_names: tuple[str, ...] = ()  # what the question asks about that the book never names


def _shown_before(history: Sequence[Turn]) -> str:
    # Without the citation markers: a passage of prose and code is quoted with its marker between them
    # ("… from a terminal: [1]" and then the fence), so the passage is not a run of the answer's text.
    return " ".join(_as_shown(t.content) for t in history if t.role == "assistant")


def _as_shown(text: str) -> str:
    return flat(strip_markers(text))  # both sides alike: code's `a[1]` loses its index in each


def _shown_far_ahead(quotable: Sequence[ScoredPassage], best: ScoredPassage | None, shown: str) -> bool:
    """Whether the best passage was shown before and the best new one scores ``SHOWN_MARGIN`` below it."""
    if not shown or not quotable or _as_shown(quotable[0].passage.text) not in shown:
        return False
    return best is None or best.score <= quotable[0].score - SHOWN_MARGIN


def _off_target_warning(passage: ScoredPassage, best: ScoredPassage) -> bool:
    return bool(_WARNING_BOX.match(passage.passage.text.lstrip())) and passage.coverage < best.coverage


def evidence(passage: ScoredPassage) -> float:
    return passage.dense + COVERAGE_SHARE * passage.coverage


def answers(
    best: ScoredPassage | None,
    *,
    retrieval_sufficient: bool,
    names_unknown: bool = False,
    asks_unknown: bool = False,
) -> bool:
    if best is None or asks_unknown:
        return False
    if retrieval_sufficient:
        return evidence(best) >= (UNKNOWN_NAME_EVIDENCE if names_unknown else ANSWER_EVIDENCE)
    if names_unknown:
        # Against retrieval's "insufficient", a passage's strength comes from the question's other
        # words: "dispatch a Redux action from a form" scored 0.90 for a question about
        # useActionState, which the book never names.
        return False
    holds_every_term = best.coverage >= 0.999 and best.query_terms >= FULL_COVERAGE_TERMS
    return evidence(best) >= STRONG_EVIDENCE or holds_every_term


def _within(run: Sequence[int], sequence: Sequence[int]) -> bool:
    n = len(run)
    return any(tuple(sequence[i : i + n]) == tuple(run) for i in range(len(sequence) - n + 1))


def defines(text: str, heading: str, first_of_section: bool, term: str, *, strict: bool = False) -> bool:
    """Whether ``text`` defines ``term``: "X is …" (or "X, the …, is …"), X in bold or italics, a
    table row that X heads (a reference table of settings or options), or the opening passage of a
    section whose heading names X ("The wheel odometry model"). A camelCase
    X may be spelled apart in the prose: "The base URL of your site is …" defines ``baseUrl``."""
    run = stems(term)
    if not run:
        return False
    # Code says nothing about what X is: "</Provider>," read as "X, the …, is".
    text = "\n\n".join(unit.text for unit in split_units(text) if unit.kind != "code")
    if is_symbol(term) and not holds_symbol(text, term):
        return False  # the stems are lower case: "Let `r` be the wheel radius" says nothing of `R`
    if is_symbol(term) and re.search(rf"`{re.escape(term)}\s*=(?!=)", text):
        return True  # an equation that names it: "computes the **error** `e = setpoint − measurement`"
    if any(cell.strip("` ").lower() == term.lower() for cell in _FIRST_CELL.findall(text)):
        return True  # a reference table's row: "| `BOOKWISE_DATA_DIR` | path | … | Where the index … |"
    runs = {run, stems(spelled_apart(term))}
    if any(stems(a or b) in runs for a, b in EMPHASIS.findall(text)):
        return True
    for sentence in _SENTENCE.split(text):
        lead = _ARTICLE.sub("", sentence.strip(" >*_#-`"))
        words = re.findall(r"[\w-]+|,", lead.lower())
        if words[:1] == ["let"] and is_symbol(term) and _lets(words[1:], term.lower()):
            return True  # a textbook names its symbols so: "Let `r` be the wheel radius"
        if not words or not stems(words[0]):
            continue  # "If `trailingSlash` is set to `false`, …" uses X; the sentence must open with X
        # "The proportional-integral-derivative controller is …" defines the "PID controller", and
        # "PID" too: an acronym names the compound with the noun it qualifies.
        initials = [_initials(word) for word in words]
        for end in range(1, min(len(words), 6)):
            spelled = stems(" ".join(words[:end])) in runs
            if not spelled and stems(" ".join(initials[:end])) not in runs:
                continue
            after = words[end] if end < len(words) else ""
            if after in _IS or after == ",":
                return True
            noun_then = words[end + 1] if end + 1 < len(words) else ""
            if not spelled and initials[end - 1] != words[end - 1] and noun_then in _IS:
                return True
    if strict:  # the text's own words only, not its heading
        return False
    named = stems(heading)
    asked = heading.split()[:1] and heading.split()[0].lower() in _QUESTION_HEADING
    return first_of_section and not asked and _within(run, named) and _within(run, stems(text))


def _lets(words: Sequence[str], symbol: str) -> bool:
    """Whether ``words`` (after "Let", lower case) name ``symbol`` itself and say what it is to be,
    first or in the list that follows: "r be the wheel radius", ", b the track width", "and φ_r the
    wheel speeds". "Let `e_y` be the sideways distance" names `e_y`, not `e`: the stems are alike."""
    for start in range(len(words) - 1):
        if start and words[start - 1] not in (",", "and"):
            continue
        if words[start] == symbol and words[start + 1] in ("be", "denote", "the"):
            return True
    return False


def _initials(word: str) -> str:
    """A hyphenated compound as the acronym of its parts ("proportional-integral-derivative": "pid")."""
    parts = [part for part in word.split("-") if part]
    return "".join(part[0] for part in parts) if len(parts) > 1 else word


def _definition_first(
    fresh: list[ScoredPassage],
    sources: Sequence[SectionResult],
    question: str,
    reader_page: Collection[str] = (),
) -> list[ScoredPassage]:
    """``fresh`` with the best passage that defines what ``question`` asks about first, if any; of
    passages that define it alike, one of the reader's page (``reader_page``) first."""
    terms = defined_terms(question)
    if not terms or not fresh:
        return fresh
    firsts = _first_positions(fresh)
    openings = _first_positions(
        p for p in fresh if "prose" in p.passage.kinds and _PLAIN_LEAD.match(p.passage.text)
    )
    near = [p for p in fresh if p.score >= fresh[0].score - DEFINITION_MARGIN]
    near.sort(key=lambda p: sources[p.passage.section].page_url not in reader_page)

    def says_it(p: ScoredPassage) -> bool:
        heading = sources[p.passage.section].known_as
        return any(defines(p.passage.text, heading, False, term, strict=True) for term in terms)

    def says_it_under_it(p: ScoredPassage) -> bool:
        heading = stems(sources[p.passage.section].known_as)
        return any(_within(stems(term), heading) for term in terms) and says_it(p)

    def opens_its_reference(p: ScoredPassage) -> bool:
        heading = sources[p.passage.section].known_as
        opening = p.passage.position == openings.get(p.passage.section)
        return opening and any(headed_by(heading, term) for term in terms)

    def opens_a_section_on_it(p: ScoredPassage) -> bool:
        heading = sources[p.passage.section].known_as
        first = p.passage.position == firsts[p.passage.section]
        return any(defines(p.passage.text, heading, first, term) for term in terms)

    # A passage that says what the term is ("MDX is a major dependency …") under a heading that holds
    # it ("Upgrading MDX"); then the book's entry on the term, the first prose of a section headed by
    # it alone ("### `baseUrl`": "The base URL of your site is the path segment …", after its "- Type:"
    # line), over another section's sentence that happens to read "the base URL is one level above …";
    # then such a sentence anywhere ("A **reducer** is a function …"); then the opening of a section
    # whose heading merely holds the term ("Customizing Behavior with Higher-Order Reducers").
    for test in (says_it_under_it, opens_its_reference, says_it, opens_a_section_on_it):
        for p in near:
            if test(p):
                return _leading(p, fresh)
    return fresh


def _first_positions(passages: Iterable[ScoredPassage]) -> dict[int, int]:
    """Each section's first position among ``passages``."""
    firsts: dict[int, int] = {}
    for p in passages:
        key = p.passage.section
        firsts[key] = min(firsts.get(key, p.passage.position), p.passage.position)
    return firsts


def _leading(chosen: ScoredPassage, fresh: list[ScoredPassage]) -> list[ScoredPassage]:
    return [chosen, *(p for p in fresh if p is not chosen)]


def _near_best_first(
    fresh: list[ScoredPassage], wanted: Callable[[ScoredPassage], bool], margin: float = DEFINITION_MARGIN
) -> list[ScoredPassage]:
    """``fresh`` with its best ``wanted`` passage first, when one scores within ``margin`` of the best:
    code asked for, a formula asked for, the exercises asked for, a passage of the reader's page."""
    near = (p for p in fresh if p.score >= fresh[0].score - margin)
    found = next((p for p in near if wanted(p)), None)
    return fresh if found is None else _leading(found, fresh)


def _code_first(fresh: list[ScoredPassage], question: str) -> list[ScoredPassage]:
    """``fresh`` with the best passage that shows code first, when ``question`` asks for code and one
    scores near the best: "show me the code" after a question about the discrete PID quoted the book's
    note on how it writes formulas ("… plain text or inline code …") over the PID's listing."""
    if not _ASKS_FOR_CODE.match(question.strip()):
        return fresh
    return _near_best_first(fresh, lambda p: "code" in p.passage.kinds)


def _formula_first(fresh: list[ScoredPassage], question: str) -> list[ScoredPassage]:
    """``fresh`` with the best passage that writes a formula first, when ``question`` asks for one and
    it scores near the best: "kalman gain formula" quoted "The **Kalman gain** `K` is between 0 and 1…"
    over the update it names, "K = P⁻ / (P⁻ + R)", which says "gain" nowhere."""
    if not asks_for_formula(question):
        return fresh
    return _near_best_first(fresh, lambda p: writes_formula(p.passage.text))


def _said_first(fresh: list[ScoredPassage], question: str) -> list[ScoredPassage]:
    """``fresh`` with the best passage of the same section that says something in words first, when the
    best is bare code and ``question`` does not ask for code: "flag the line that throws with a red
    background, using a comment like `// This will error`" quoted a CSS rule alone first and the book's
    "You can declare custom magic comments through theme config", with its config, last. Only from the
    code's own section: a sentence of another section that scores near is about something else (the
    nginx question's `bookwise serve` command gave way to the security page's client addresses)."""
    if not fresh or fresh[0].passage.kinds != ("code",) or _ASKS_FOR_CODE.match(question.strip()):
        return fresh
    code = fresh[0].passage
    # The passage that ends right before the code introduces it: "Each control cycle, convert the tick
    # counts into distances…" and the update's formulas, then `update_pose`.
    introduction = next(
        (
            p
            for p in fresh
            if p.passage.section == code.section
            and p.passage.has_prose
            and p.passage.position + len(p.passage.kinds) == code.position
        ),
        None,
    )
    if introduction is not None and introduction.score >= fresh[0].score - INTRODUCTION_MARGIN:
        return _leading(introduction, fresh)
    near = (p for p in fresh if p.score >= fresh[0].score - BARE_CODE_MARGIN)
    said = next((p for p in near if p.passage.has_prose and p.passage.section == code.section), None)
    return fresh if said is None else _leading(said, fresh)


def _reader_page_first(
    fresh: list[ScoredPassage], sources: Sequence[SectionResult], reader_page: Collection[str]
) -> list[ScoredPassage]:
    """``fresh`` with the best passage of the reader's page first, when one answers and scores within
    ``READER_PAGE_MARGIN`` of the best: the page says which of two close answers the reader means. "One
    Markdown doc needs an extra CSS class on <body> and a custom browser-tab title", asked on the page
    on head metadata, led with the tabs page's `className` prop."""
    if not reader_page or not fresh or sources[fresh[0].passage.section].page_url in reader_page:
        return fresh

    def on_page(p: ScoredPassage) -> bool:
        return sources[p.passage.section].page_url in reader_page and evidence(p) >= ANSWER_EVIDENCE

    return _near_best_first(fresh, on_page, READER_PAGE_MARGIN)


def _exercises_first(fresh: list[ScoredPassage], asked_for: set[int]) -> list[ScoredPassage]:
    """``fresh`` with the best passage of an exercise section first, when the question asks for the
    exercises (``asked_for``: those sections) and it scores near the best one."""
    return _near_best_first(fresh, lambda p: p.passage.section in asked_for)


def headed_by(heading: str, term: str) -> bool:
    """Whether ``heading`` names ``term`` and nothing else: "`trailingSlash`", "Odometry", "The
    wheel odometry model" for "wheel odometry model", or asks what it is: 'What is a "thunk"?'."""
    asked = defined_terms(heading.replace('"', ""))
    named = _ARTICLE.sub("", asked[0] if len(asked) == 1 else heading.strip())
    named_stems = stems(named)
    # Every word counts: "Using thunks" is a section about thunks, not the book's entry on them.
    whole = bool(named_stems) and len(named_stems) == len(re.findall(r"[^\W_]+", named))
    return whole and named_stems in {stems(term), stems(spelled_apart(term))}


def plan_passages(
    ranked: Sequence[ScoredPassage],
    sources: Sequence[SectionResult],
    history: Sequence[Turn],
    *,
    retrieval_sufficient: bool,
    names_unknown: bool = False,
    asks_unknown: bool = False,
    question: str = "",
    names_own_topic: bool = True,
    reader_page: Collection[str] = (),
) -> PassagePlan:
    """``names_own_topic``: false for a follow-up that names nothing of its own ("how do I fix it?"),
    which asks about what the previous answers showed. ``reader_page``: the ``page_url`` forms of the
    page the reader asks from."""
    shown = _shown_before(history)
    exercises = {n for n, source in enumerate(sources) if is_exercise_section(source)}
    asked_for = exercises if _ASKS_FOR_EXERCISES.search(question) else set()

    def quotable_passage(p: ScoredPassage) -> bool:
        if p.passage.section in asked_for:
            return True
        return not asks(p.passage.text) and not (p.passage.section in exercises and "list" in p.passage.kinds)

    quotable = [p for p in ranked if quotable_passage(p)]
    fresh = [p for p in quotable if not shown or _as_shown(p.passage.text) not in shown]
    best = fresh[0] if fresh else None
    verdict = {"retrieval_sufficient": retrieval_sufficient, "names_unknown": names_unknown}
    if shown and quotable and not answers(best, **verdict, asks_unknown=asks_unknown):
        # "how do I fix it?" after the windup passage, whose last sentence is the cure: the answer is
        # what the reader was just shown, so it is quoted again rather than declined.
        fresh, best = quotable, quotable[0]
    elif not names_own_topic and _shown_far_ahead(quotable, best, shown):
        # The same when the follow-up names nothing of its own and a passage just shown is far ahead of
        # the rest: after the drift passage ("calibrated out", "a Kalman filter to correct the drift"),
        # "how do I fix that?" led with a worked example of encoder ticks. It leads, then what is new.
        best = quotable[0]
        fresh = [best, *fresh]
    if not answers(best, **verdict, asks_unknown=asks_unknown):
        return PassagePlan(list(sources), [], False, best)
    assert best is not None
    # Code the reader asked for leads even bare; otherwise a best passage that cannot be read first
    # gives way to one that can ("Its third column…").
    # The reader's page first, so that a definition the question asks for still leads over it.
    on_page = _reader_page_first(fresh, sources, reader_page)
    said = readable_lead_first(
        _said_first(_definition_first(on_page, sources, question, reader_page), question)
    )
    lead = _code_first(said, question)
    lead = _formula_first(lead, question)
    lead = _exercises_first(lead, asked_for)
    chosen = choose([p for p in lead if p is lead[0] or not _off_target_warning(p, lead[0])])
    order = list(dict.fromkeys(p.passage.section for p in chosen))
    best_of: dict[int, float] = {}
    for scored in ranked:
        best_of.setdefault(scored.passage.section, scored.score)
    order += [
        n
        for n in range(len(sources))
        if n not in order and best_of.get(n, float("-inf")) >= best.score - FAR_BELOW
    ]
    number = {section: i for i, section in enumerate(order, start=1)}
    quoted = [Quoted(number[p.passage.section], rows_asked_about(p.passage.text, question)) for p in chosen]
    return PassagePlan([sources[n] for n in order], quoted, True, best)
