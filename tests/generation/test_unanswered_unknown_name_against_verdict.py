"""Declining without a language model when retrieval says "insufficient" and the question names something
the book never contains: the passage evidence that may outweigh the verdict came from the question's
other words."""

from __future__ import annotations

from bookwise.generation.evidence import plan_passages
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import Passage
from conftest import SectionFactory

USE_DISPATCH = (
    "In order to dispatch actions from a component, we need access to the store's `dispatch` function. "
    "We get this by calling the `useDispatch` hook from React-Redux."
)


def test_a_strong_passage_answers_a_question_naming_what_the_book_lacks_against_the_verdict_regression(
    section: SectionFactory,
) -> None:
    """ "How do I dispatch a Redux action from a React 19 form action that uses the useActionState hook?"
    quoted the useDispatch passage (evidence 0.90, on "dispatch", "action" and "form") although
    retrieval judged the book insufficient and the book never names useActionState."""
    sources = [section("Dispatching the Post Added Action", USE_DISPATCH, 1)]
    strong = [ScoredPassage(Passage(0, USE_DISPATCH, ("prose",), 0), 0.86, dense=0.68, coverage=0.43)]
    assert plan_passages(strong, sources, (), retrieval_sufficient=False).sufficient
    plan = plan_passages(strong, sources, (), retrieval_sufficient=False, names_unknown=True)
    assert not plan.sufficient
    assert not plan.quoted
    # Every named term held does not outweigh it either; with retrieval's "sufficient", a good passage
    # still answers (the better bar such a question needs is pinned in test_evidence).
    full = [ScoredPassage(Passage(0, USE_DISPATCH, ("prose",), 0), 0.6, 0.2, 1.0, query_terms=3)]
    assert not plan_passages(full, sources, (), retrieval_sufficient=False, names_unknown=True).sufficient
    assert plan_passages(strong, sources, (), retrieval_sufficient=True, names_unknown=True).sufficient
