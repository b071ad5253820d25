"""Answer evaluation: every golden question through the full answer path, scored as the reader sees it.

Each question is asked exactly as the API asks it (``Answerer.prepare`` then ``Answerer.stream``),
and its events are folded into the answer's summary as the API's are (``generation.events``):
``sources``, the ``token`` texts (the answer) and ``done`` (``answer_kind``, ``citations``,
``quotes``). Selected-text questions run in selected-text mode on the page of their first gold
document; when ``done.widen`` offers a wider scope, the question is asked again with it, as a reader
clicking the offer would.

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

The parts: ``questions`` (the golden file), ``run`` (asking one question), ``checks`` (key facts and
fragments in an answer's text), ``sentences`` and ``judge`` (the LLM judge), ``scoring`` (outcomes and
metrics), ``gate`` (CI thresholds), ``report`` (the report and its terminal lines), ``harness`` (running
it all).
"""

from bookwise.evaluation.answers.checks import (
    Fragment,
    fragment_reason,
    fragments_of,
    key_facts,
    normalise,
    quoted_passages,
)
from bookwise.evaluation.answers.gate import AnswerGate
from bookwise.evaluation.answers.harness import evaluate_answers, run_answer_eval
from bookwise.evaluation.answers.judge import (
    JUDGE_MAX_TOKENS,
    Judge,
    JudgedSentence,
    Verdict,
    judge_messages,
    parse_verdict,
)
from bookwise.evaluation.answers.questions import AnswerQuestion, load_answer_questions
from bookwise.evaluation.answers.report import SUMMARY_ROWS, AnswerEval, detail_lines, summary_lines
from bookwise.evaluation.answers.run import (
    MAX_WIDENINGS,
    WIDER,
    AnswerRun,
    Outcome,
    Source,
    answer_question,
)
from bookwise.evaluation.answers.scoring import AnswerOutcome, Rate, metrics
from bookwise.evaluation.answers.sentences import answer_sentences
from bookwise.generation.events import DECLINED_KINDS

__all__ = [
    "DECLINED_KINDS",
    "JUDGE_MAX_TOKENS",
    "MAX_WIDENINGS",
    "SUMMARY_ROWS",
    "WIDER",
    "AnswerEval",
    "AnswerGate",
    "AnswerOutcome",
    "AnswerQuestion",
    "AnswerRun",
    "Fragment",
    "Judge",
    "JudgedSentence",
    "Outcome",
    "Rate",
    "Source",
    "Verdict",
    "answer_question",
    "answer_sentences",
    "detail_lines",
    "evaluate_answers",
    "fragment_reason",
    "fragments_of",
    "judge_messages",
    "key_facts",
    "load_answer_questions",
    "metrics",
    "normalise",
    "parse_verdict",
    "quoted_passages",
    "run_answer_eval",
    "summary_lines",
]
