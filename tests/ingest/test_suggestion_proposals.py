"""Suggested questions proposed at ingest from the page alone: objectives, title,
headings, exercises; quiz pages by their questions, labs by what the reader will do."""

from __future__ import annotations

import pytest

from bookwise.ingest.pipeline import ChunkingParams, ingest_site
from bookwise.ingest.site import read_site_config
from bookwise.ingest.suggestions import PROPOSED, PageWords, Proposal, _about, propose
from conftest import SiteFactory

PAGES = {
    "docs/kalman.md": (
        "---\ntitle: The Kalman Filter\nlearning_objectives:\n  - Explain the predict and correct steps\n"
        "  - Compute the Kalman gain for one dimension\n  - {nested: mapping}\n---\n\n"
        "Intro text about fusing sensors with a Kalman filter.\n\n"
        "## Why not trust one sensor?\n\nBecause sensors drift.\n\n"
        "## Open loop versus closed loop\n\nClosed loops measure.\n\n## Choosing the noise parameters\n\n"
        "Q and R are knobs.\n\n## Exercises\n\n1. What is the gain?\n"
    ),
    "docs/check.md": (
        "---\ntitle: Check your understanding\ncontent_type: quiz\n---\n\n## Questions\n\n"
        "1. What does the filter store?\n\n**Answers**\n\n1. Only the estimate and its variance.\n"
    ),
    "docs/labs/lab-tuning.md": (
        "---\ntitle: 'Lab: Tuning a PID Loop'\n---\n\n## The simulated wheel\n\nA motor.\n"
    ),
    "docs/objective.md": "---\ntitle: One\nlearning_objectives: Describe odometry\n---\n\nText here.\n",
    "docs/long.md": (
        "---\ntitle: Many Headings\nlearning_objectives: [Explain a, Explain b, Explain c]\n---\n\n"
        + "".join(f"## Topic {n}\n\nText {n}.\n\n" for n in range(1, 9))
        + "## Exercises\n\n1. Why?\n"
    ),
}


@pytest.fixture
def documents(make_site: SiteFactory) -> dict[str, object]:
    site = make_site(PAGES)
    params = ChunkingParams(max_tokens=200, overlap_tokens=0, min_tokens=0, model_max_tokens=512,
                            count_tokens=lambda text: len(text.split()))  # fmt: skip
    result = ingest_site(read_site_config(site), params)
    return {d.doc_path: d for d in result.documents} | {"_chunks": result.chunks}


def questions(proposals: list[Proposal]) -> list[str]:
    return [p.question for p in proposals]


def test_learning_objectives_are_read_from_front_matter_and_lead_the_proposals(documents: dict) -> None:
    kalman = documents["kalman.md"]
    assert kalman.learning_objectives == (
        "Explain the predict and correct steps",
        "Compute the Kalman gain for one dimension",
    )  # the mapping is no objective
    assert questions(propose(kalman))[:2] == [
        "Can you explain the predict and correct steps?",
        "How do I compute the Kalman gain for one dimension?",
    ]
    assert documents["objective.md"].learning_objectives == ("Describe odometry",)


def test_headings_become_questions_and_exercises_are_asked_about_the_page(documents: dict) -> None:
    proposed = propose(documents["kalman.md"])
    found = questions(proposed)
    assert "What is the Kalman filter?" in found  # the page writes "Kalman" as a name, "filter" not
    assert "Why not trust one sensor?" in found
    assert "What is the difference between open loop and closed loop?" in found
    assert "How do I choose the noise parameters?" in found
    assert not any("Exercises" in q for q in found)
    page_question = next(p for p in proposed if p.question == "What are the exercises on this page?")
    assert page_question.check is False  # answered from the reader's page, not searched


def test_the_exercises_question_was_cut_on_a_page_with_objectives_and_many_headings(documents: dict) -> None:
    """The cap on proposals (questions to search at ingest) cut the page's exercises question, which
    is never searched: the example book's Kalman page lost it once it had learning objectives."""
    proposed = propose(documents["long.md"])
    assert sum(p.check for p in proposed) == PROPOSED
    assert proposed[-1] == Proposal("What are the exercises on this page?", check=False)


def test_a_page_whose_headings_mention_problems_is_not_asked_for_its_exercises_regression(
    make_site: SiteFactory,
) -> None:
    """Any heading with "problems" in it offered "What are the exercises on this page?": Docusaurus's
    upgrade guide ("Common MDX problems"), Redux's store setup ("Problems with this approach") and
    performance FAQ ("Will caching remote data cause memory problems?") have no exercises, and the
    question took the place of one about the page. A heading names exercises by its first words."""
    pages = {
        "docs/upgrade.md": "# Upgrade\n\n## Common MDX problems\n\nBraces.\n\n"
        "## Problems with this approach\n\nBoilerplate.\n\n"
        "### Will caching remote data cause memory problems?\n\nNo.\n",
        "docs/gain.md": "# Gain\n\n## Tuning\n\nText.\n\n### Quiz: the gain\n\n1. Why?\n",
        "docs/drill.md": "# Drill\n\n## Practice\n\n1. Solve it.\n",
        "docs/check.md": "# Check\n\n## Check your understanding\n\n1. Why?\n",
    }
    params = ChunkingParams(max_tokens=200, overlap_tokens=0, min_tokens=0, model_max_tokens=512,
                            count_tokens=lambda text: len(text.split()))  # fmt: skip
    found = {
        d.doc_path: questions(propose(d))
        for d in ingest_site(read_site_config(make_site(pages)), params).documents
    }
    assert "What are the exercises on this page?" not in found["upgrade.md"]
    for doc_path in ("gain.md", "drill.md", "check.md"):
        assert found[doc_path][-1] == "What are the exercises on this page?", doc_path


def test_a_quiz_page_is_offered_by_its_questions_not_its_answers(documents: dict) -> None:
    assert propose(documents["check.md"]) == [Proposal("What are the questions on this page?", check=False)]


def test_a_lab_is_offered_as_something_to_do(documents: dict) -> None:
    found = questions(propose(documents["labs/lab-tuning.md"]))
    assert found[0] == "Summarize this lab" and "What is the simulated wheel?" in found


def test_proposals_and_objectives_travel_in_the_payload(documents: dict) -> None:
    chunks = [c for c in documents["_chunks"] if c.payload["doc_path"] == "kalman.md"]
    first = min(chunks, key=lambda c: c.chunk_index)
    assert first.payload["suggestions"][0] == {"question": "Can you explain the predict and correct steps?",
                                               "check": True}  # fmt: skip
    assert all("suggestions" not in c.payload for c in chunks if c is not first)
    assert all(len(c.payload["learning_objectives"]) == 2 for c in chunks)


# Headings of the three corpora (docusaurus-docs, redux, the example book) and the questions they
# became: before, "What is generate a new site?"-like questions for tasks, code names and emoji.
READ_BADLY = [
    ("Generate a new site", "What is generate a new site?", "How do I generate a new site?"),
    ("Index your site", "What is index your site?", "How do I index my site?"),  # a word before "your"
    ("Behind the scenes", "What are behind the scenes?", "What does “Behind the scenes” cover?"),
    ("Create a doc", "What is create a doc?", "How do I create a doc?"),
    ("Configure your site", "What is configure your site?", "How do I configure my site?"),
    ("Add a Markdown page", "What is Add a Markdown page?", "How do I add a Markdown page?"),
    ("customize the sidebar items generator", "What are…", "How do I customize the sidebar items generator?"),
    ("Using Plugins", "What does “Using Plugins” cover?", "How do I use plugins?"),
    ("Setting Up the Redux Store", "What does “…” cover?", "How do I set up the Redux store?"),
    ("Inserting and Removing Items in Arrays", "What does …?", "How do I insert and remove items in arrays?"),
    ("Rotating and translating points", "What does “…” cover?", "How do I rotate and translate points?"),
    ("Choosing a hosting provider", "What does “…” cover?", "How do I choose a hosting provider?"),
    ("Guiding Principles", "What does “…” cover?", "What should I know about guiding principles?"),
    ("Tuning procedure", "What does “Tuning procedure” cover?", "What should I know about tuning procedure?"),
    ("Store API", "What is Store API?", "What is store API?"),
    ("getClientModules()", "What is getClientModules()?", "What does getClientModules() do?"),
    ("async loadContent()", "What is async loadContent()?", "What does loadContent() do?"),
    ("📦 plugin-content-blog", "What is 📦 plugin-content-blog?", "What is plugin-content-blog?"),
    ("i18n - Using Crowdin", "What is i18n - Using Crowdin?", "How do I use Crowdin?"),
    ("Authors File", "What are Authors File?", "What is authors file?"),
    ("Table of Contents", "What are Table of Contents?", "What is table of contents?"),
    ("Kálmán's insight", "What is Kálmán's insight?", "What is Kálmán's insight?"),  # never lower-cased
    ("When Not To Use It", "Can you explain When Not To Use It?", "Can you explain when not to use it?"),
    ("Redux Essentials, Part 1", "What are …, Part 1?", "What does “Redux Essentials, Part 1” cover?"),
    ("Something else doesn't work", "What does “…” cover?", "What does “Something else doesn't work” cover?"),
    ("Problems?", "Problems?", ""),
]  # fmt: skip


@pytest.mark.parametrize(("heading", "before", "after"), READ_BADLY)
def test_suggested_questions_read_badly_regression(heading: str, before: str, after: str) -> None:
    """Suggested questions read "What is generate a new site?": a task, a function, a heading that
    was already a question or that starts with an emoji, all put as "What is …?"."""
    page = PageWords(names=frozenset({"redux", "markdown", "crowdin"}))
    assert _about(heading, page) == after, before


def test_a_heading_the_page_uses_as_a_noun_is_not_asked_as_a_task() -> None:
    page = PageWords(prose="the update rate of each sensor is set by the driver.")
    assert _about("Update rate and latency", page) == "What are update rate and latency?"
    assert _about("Update the rate", PageWords()) == "How do I update the rate?"


# Headings of the corpora and the manual, asked as "What is …?" without the article their page gives
# them, or of a part any page has, asked alone.
ARTICLE_OF_THE_PAGE = [
    ("Default sidebar", "the default sidebar is built from the docs folder.", "What is the default sidebar?"),
    ("Rate limiter", "requests over the limit are refused by the rate limiter.", "What is the rate limiter?"),
    ("Authors file", "declare them in a yaml authors file.", "What is an authors file?"),
    ("PID control", "with pid control, the error drives it. pid control is common.", "What is PID control?"),
    ("Pure pursuit", "steer with pure pursuit. the pure pursuit law is simple.", "What is pure pursuit?"),
    ("Differential drive kinematics", "the differential drive kinematics are linear.",
     "What is differential drive kinematics?"),
    ("Redux Toolkit", "the redux toolkit package is the standard.", "What is Redux Toolkit?"),
    ("Lifecycle APIs", "", "What are lifecycle APIs?"),
    ("Routes become HTML files", "", "What does “Routes become HTML files” cover?"),
]  # fmt: skip


@pytest.mark.parametrize(("heading", "prose", "question"), ARTICLE_OF_THE_PAGE)
def test_suggested_questions_lacked_the_article_regression(heading: str, prose: str, question: str) -> None:
    """ "What is default sidebar?", "What is lifecycle APIs?", "What are routes become HTML files?": a
    noun phrase was asked bare whatever its page wrote, an acronym's plural was read as singular."""
    page = PageWords(names=frozenset({"pid", "redux", "toolkit"}), prose=prose)
    assert _about(heading, page) == question


def test_a_heading_in_code_is_asked_as_a_name() -> None:
    page = PageWords(prose="the bookwise ingest is run by ci.")
    assert _about("bookwise ingest", page, code=True) == "What is bookwise ingest?"


def test_a_heading_of_a_part_any_page_has_was_suggested_alone_regression(make_site: SiteFactory) -> None:
    """ "What are goals?", "What is overview?", "What are arguments?", "What is Crowdin overview?": a
    heading naming a part any page may have says nothing of its page asked alone."""
    page = (
        "---\ntitle: i18n - Using Crowdin\n---\n\nSites are translated with Crowdin.\n\n"
        "## Overview\n\nText.\n\n## Crowdin overview\n\nText.\n\n## Caveats\n\nText.\n\n"
        "## Rule details\n\nText.\n\n## Main themes\n\nThe themes.\n\n## Sync the translations\n\nText.\n"
    )
    site = make_site({"docs/crowdin.md": page})
    params = ChunkingParams(max_tokens=200, overlap_tokens=0, min_tokens=0, model_max_tokens=512,
                            count_tokens=lambda text: len(text.split()))  # fmt: skip
    (document,) = ingest_site(read_site_config(site), params).documents
    assert questions(propose(document)) == [
        "How do I use Crowdin?",
        "What are main themes?",
        "How do I sync the translations?",
    ]
