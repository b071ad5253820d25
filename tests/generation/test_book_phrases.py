"""What the book's own text says about a question's phrase: whether a word of it is one the book uses
only as a verb."""

from __future__ import annotations

from bookwise.generation.coverage import BookPhrases, asks_about, says_what, spelling_variant

BOOK = BookPhrases.of(
    [
        "The scheduler dispatched the job. Dispatching waits for a free worker.",
        "Each worker dispatches one job at a time and reports its state.",
        "A report lists the failed jobs. The worker reported them as late.",
        "Tap water runs through a filter. The filtered water is stored in a tank.",
    ],
    labels=[],
)


def test_a_word_the_book_inflects_as_a_verb_and_never_puts_after_a_determiner_is_a_verb() -> None:
    assert BOOK.verb_only("dispatch")  # "dispatched", "dispatching", never "the dispatch"
    assert not BOOK.verb_only("report")  # "reported", but also "a report"
    assert not BOOK.verb_only("filter")  # "filtered", but also "a filter"
    assert not BOOK.verb_only("worker")  # no verb form at all
    assert not BOOK.verb_only("deploy")  # a word the book never uses: no claim


def test_a_phrase_stops_before_a_word_the_book_uses_only_as_a_verb() -> None:
    assert BOOK.noun_phrase(("worker", "dispatch")) == ("worker",)
    assert BOOK.noun_phrase(("job", "report", "worker")) == ("job", "report", "worker")
    # The first word may modify the noun after it: only a later word ends the name.
    assert BOOK.noun_phrase(("dispatch", "queue")) == ("dispatch", "queue")


def test_a_question_that_asks_about_more_than_a_phrase_was_declined_for_the_phrase_regression() -> None:
    """A phrase the book never uses declined questions that asked about more than it, though their
    other words found the section that answers (readers paraphrase what a book names otherwise: a
    "sponsor banner" where the book says "a custom sidebar item"). Only a question about the phrase
    itself, and what to do with it, is declined for it."""
    assert asks_about("How do I tune a model predictive controller?", ("model", "predictive", "controller"))
    assert asks_about("How does a particle filter work?", ("particle", "filter"))
    question = "How can I put a sponsor banner between the entries of my sidebar?"
    assert not asks_about(question, ("sponsor", "banner"))
    question = "Can my diagrams use another colour scheme when the site is dark?"
    assert not asks_about(question, ("colour", "scheme"))


def test_a_readers_typo_is_told_from_a_word_the_book_never_uses() -> None:
    assert BOOK.spelled_as("shceduler") == "scheduler"  # two letters swapped
    assert BOOK.spelled_as("schedler") == "scheduler"  # one too few
    assert BOOK.spelled_as("dispatchedd") == "dispatched"  # one too many
    assert BOOK.spelled_as("schedulor") == "scheduler"  # one wrong, in a long word
    assert BOOK.spelled_as("Schedler") is None  # capitalised: a name, not a typo
    assert BOOK.spelled_as("tenk") is None  # too short to tell ("poem", "gzip")
    assert BOOK.spelled_as("xcheduler") is None  # the first letter is never the typo
    assert BOOK.spelled_as("deploy") is None


def test_american_and_british_spellings_are_one_word() -> None:
    for american, british in [
        ("colors", "colours"),
        ("behavior", "behaviour"),
        ("customize", "customise"),
        ("analyzed", "analysed"),
        ("organization", "organisation"),
        ("center", "centre"),
        ("canceled", "cancelled"),
    ]:
        assert spelling_variant(american, british) and spelling_variant(british, american)
    for word, other in [
        ("four", "for"),
        ("tour", "tor"),
        ("size", "sise"),
        ("httpd", "http"),
        ("color", "color"),
    ]:
        assert not spelling_variant(word, other)


def test_the_names_a_book_says_what_they_are() -> None:
    text = (
        "🧐 Docusaurus is a **static-site generator**. It builds a site. A **reducer** is a function.\n"
        "We think this is a bug, and Node.js is the runtime. Use it; the store is a plain object."
    )
    # Each at a sentence's start ("We think this" is one, and harmless: no question asks about it).
    assert says_what(text) == ["Docusaurus", "reducer", "We think this"]
    assert says_what("x" * 200 + ". Redux is a library for state.") == ["Redux"]


def test_a_phrase_a_sentence_opens_with_is_its_subject_not_a_name_in_passing() -> None:
    book = BookPhrases.of(
        [
            "A quadrature encoder with 256 lines produces 1024 counts per revolution.",
            "Unscented Kalman filters and particle filters are the usual next step.",
        ],
        labels=[],
    )
    assert book.opens_a_sentence(("quadrature", "encoder"))
    assert not book.opens_a_sentence(("particle", "filter"))
    assert book.mentions(("particle", "filter")) == (1, False)
