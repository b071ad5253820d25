"""Which words of a question are spelled as names (what the book may never mention)."""

from __future__ import annotations

import pytest

from bookwise.retrieval.topics import (
    defined_terms,
    derived_forms,
    greek_letters_asked,
    holds_symbol,
    is_symbol,
    joined_forms,
    letters_named,
    named_words,
    names_a_topic,
    probed_words,
    spelled_apart,
    stems,
    symbols_named,
    topic_phrases,
    topic_text,
    topic_words,
    with_parts_named,
    without_role,
)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        (
            "How do I publish my site to IPFS, for example through Fleek or Pinata?",
            ["IPFS", "Fleek", "Pinata"],
        ),
        (
            "Can I write pages in AsciiDoc or reStructuredText instead of Markdown/MDX?",
            ["AsciiDoc", "reStructuredText", "Markdown", "MDX"],
        ),
        ("Does it run on Node.js or C++?", ["Node.js", "C++"]),
        ("What is a Kalman filter? Kalman filters are neat.", ["Kalman"]),  # not at a sentence's start only
        ("Can I use S3? I think so.", ["S3"]),  # "I" is no name
        ("how do i deploy to firebase", []),  # typed in lower case: no names
        ("What does `Provider` do?", []),  # code spans are not read as names
        # A question in Spanish was declined as one about "Qu": a word is a name whole or not at all,
        # and "¿" opens a sentence.
        ("¿Qué es la odometría? ¿Y el filtro de Kalman?", ["Kalman"]),
        ("Can Müller's robot use SLAM?", ["SLAM"]),
    ],
)
def test_named_words(question: str, names: list[str]) -> None:
    assert named_words(question) == names


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        ("How do I tune a model predictive controller?", [("model", "predictive", "controller")]),
        ("How does a particle filter work?", [("particle", "filter")]),
        # A hyphenated word, a stop word, a generic word or a joining word ends a run.
        ("I call my createSelector-based selector", []),
        (
            "How do I put a danger callout inside an info callout?",
            [("danger", "callout"), ("info", "callout")],
        ),
    ],
)
def test_runs_of_topic_words_that_may_name_one_thing(question: str, phrases: list[tuple[str, ...]]) -> None:
    assert topic_phrases(question) == phrases


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        # A word spelled as a participle after a noun starts a clause: "log file" stays a name.
        ("Is there a log file holding the traces of each run?", [("log", "file")]),
        ("The cache folder stored under the home directory keeps old builds", [("cache", "folder")]),
        # ... but a participle that opens a run modifies the noun after it, and "string" or "speed"
        # only end like one.
        ("How is the rolling average computed?", [("rolling", "average")]),
        ("Where is the query string parsed?", [("query", "string")]),
        ("What sets the motor speed limit?", [("motor", "speed", "limit")]),
        # In a do-support question the verb closes its clause ...
        ("Which bytes does a compressed image header contain, and why?", [("compressed", "image", "header")]),
        ("What does the theme switcher rely on?", [("theme", "switcher")]),
        ("Why does the battery voltage sag?", [("battery", "voltage")]),
        ("Why does the pump motor spin down?", [("pump", "motor")]),
        # ... stands before its object ...
        ("Does the page router cache them?", [("page", "router")]),
        ("How does the map server load the tile index?", [("map", "server"), ("tile", "index")]),
        # ... or follows a pronoun subject, and the object's name stays whole.
        ("How do we calibrate a wheel encoder?", [("wheel", "encoder")]),
        # A word after a modal, or after a modal and its subject, is a verb.
        ("The build server must rebuild stale pages", [("build", "server"), ("stale", "pages")]),
        ("Could we cache search results?", [("search", "results")]),
        # A determiner or a subordinating word is no part of a name.
        ("Which fields does a token carry if every request header is signed?", [("request", "header")]),
    ],
)
def test_a_phrase_is_a_noun_phrase_and_stops_before_a_verb(
    question: str, phrases: list[tuple[str, ...]]
) -> None:
    assert topic_phrases(question) == phrases


def test_regression_noun_followed_by_a_verb_read_as_a_name_the_book_never_uses() -> None:
    """A noun then its verb ("feed arriving", "crawler fetch", "table show") was read as one name
    that the book never uses, and the question was declined though the book answers it."""
    question = "I have a feed arriving from a partner site. Does the crawler fetch it?"
    assert topic_phrases(question) == [("partner", "site")]
    assert topic_phrases("What columns does the status table show, and in what order?") == [
        ("status", "table")
    ]


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("What is odometry?", ["odometry"]),
        ("What's the Kalman gain?", ["Kalman gain"]),
        ("What is the difference between bias and noise in a sensor reading?", ["bias", "noise"]),
        ("What does Ku mean?", ["Ku"]),
        ("What does PID stand for?", ["PID"]),
        ("What is a step-by-step way to pick the gains of the wheel speed loop?", []),
        ("How does the integral term work?", []),
        ("What does the integral term do in a PID controller?", ["integral"]),
        ("What does the slug option do for versioned docs?", ["slug"]),
        ("What does the integral term do when the output saturates?", []),
        # A term typed alone, as into a search box, asks what it is; chat and letters do not.
        ("pid?", ["pid"]),
        ("Kalman gain", ["Kalman gain"]),
        ("integral windup.", ["integral windup"]),
        ("thanks!", []),
        ("k", []),
        ("exclude tag pages from sitemap.xml", []),
        ("tune the PID loop quickly now", []),
    ],
)
def test_the_terms_a_question_asks_the_definition_of(question: str, terms: list[str]) -> None:
    assert defined_terms(question) == terms


def test_stems_join_a_plural_to_its_singular_and_skip_stop_words() -> None:
    assert stems("the particle filters") == stems("particle filter")
    assert stems("sensors that measure") == stems("sensor measures")


def test_a_snake_case_name_has_the_stems_of_its_parts_regression() -> None:
    """ "What does BOOKWISE_LLM_BASE_URL do?" asked the definition of nothing: BM25 reads the name as
    four words, and a word of several BM25 terms had no stem, so the settings row was never looked up."""
    assert stems("BOOKWISE_LLM_BASE_URL") == stems("bookwise llm base url")
    assert stems("cmd_vel topic") == stems("cmd vel topic")
    assert defined_terms("What does BOOKWISE_LLM_BASE_URL do?") == ["BOOKWISE_LLM_BASE_URL"]


@pytest.mark.parametrize(
    ("question", "word", "form"),
    [
        ("How do I keep the integral term from winding up?", "winding", "windup"),
        ("How do I set up the site?", "set", "setup"),
        ("What happens when setting up a new locale?", "setting", "setup"),
        ("Where do I plug in my own component?", "plug", "plugin"),
        ("How do I roll back a deploy?", "roll", "rollback"),
        ("Can readers log in?", "log", "login"),
    ],
)
def test_a_verb_and_its_particle_may_be_one_word_in_the_book(question: str, word: str, form: str) -> None:
    assert form in joined_forms(question)[word]


def test_only_a_word_before_a_particle_has_joined_forms() -> None:
    assert joined_forms("How does the integral term grow over time?") == {"grow": ("growover",)}
    assert joined_forms("What is a rigid transform?") == {}


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("What does the baseUrl setting do?", ["baseUrl"]),
        ("What does the derivative term do?", ["derivative"]),
        ("What does useBaseUrl do?", ["useBaseUrl"]),
    ],
)
def test_what_a_thing_does_asks_what_its_name_is_for(question: str, terms: list[str]) -> None:
    assert defined_terms(question) == terms


def test_a_phrase_without_the_word_that_says_what_kind_of_thing_it_names() -> None:
    assert without_role(("swizzle", "command")) == ("swizzle",)
    assert without_role(("trace", "options")) == ("trace",)
    assert without_role(("particle", "filter")) == ("particle", "filter")


def test_a_camel_case_name_spelled_apart_as_prose_spells_it() -> None:
    assert spelled_apart("baseUrl") == "base Url"
    assert spelled_apart("onBrokenLinks") == "on Broken Links"
    assert spelled_apart("odometry") == "odometry"


def test_a_greek_letters_name_is_written_as_the_letter_where_the_text_has_only_the_letter() -> None:
    written = {"κ", "Δ", "theta", "θ"}
    holds = written.__contains__
    assert letters_named("what is kappa here?", holds) == "what is κ here?"
    assert letters_named("why Delta s?", holds) == "why Δ s?"  # the capital, where only it is written
    assert letters_named("what is theta?", holds) == "what is theta?"  # the text says "theta" itself
    assert letters_named("what is omega?", holds) == "what is omega?"  # no ω to write it as
    assert letters_named("a kappaX alphabet", holds) == "a kappaX alphabet"  # whole words only


def test_one_capital_letter_names_a_symbol_but_i_and_a_are_words() -> None:
    assert symbols_named("what is Q? And is Q the same as R in case A, as I think?") == ["Q", "R"]
    assert symbols_named("What is the Kalman gain?") == []
    assert [is_symbol(t) for t in ("L", "I", "A", "Kp", "q", "a", "i")] == [
        True, False, False, False, True, False, False
    ]  # fmt: skip


def test_what_is_r_in_small_letters_was_declined_as_naming_nothing_regression() -> None:
    """ "what is r?" got "The book does not seem to cover this" on the example book, which says "Let `r`
    be the wheel radius": a small letter standing alone as a word names a symbol too, but not the "s"
    of "it's", the letters of "e.g." or the "x" of "x86"."""
    assert symbols_named("what is r?") == ["r"] and names_a_topic("what is r?")
    assert symbols_named("what are x and y, e.g. in `(x, y, θ)`?") == ["x", "y"]
    assert symbols_named("it's fine, i.e. on x86 as a rule") == []
    # Chat is not a question about `u` or `k`: a small letter names a topic when asked about or in code.
    assert not names_a_topic("u there?") and not names_a_topic("k thanks")
    assert names_a_topic("what is u?") and names_a_topic("why is `v` negative?")


@pytest.mark.parametrize(
    ("text", "symbol", "held"),
    [
        ("the variance P⁻ grows", "P", True),
        ("Q_k is the noise", "Q", True),
        ("noise variance (R)", "R", True),
        ("Quokkas eat leaves", "Q", False),
        ("the AQB bus", "Q", False),
        ("`v_r` is the right wheel's speed", "r", False),  # a subscript, not the symbol
        ("Let `r` be the wheel radius", "r", True),
    ],
)
def test_a_text_writes_a_symbol_standing_alone(text: str, symbol: str, held: bool) -> None:
    assert holds_symbol(text, symbol) is held


def test_a_symbol_is_something_to_look_up() -> None:
    assert names_a_topic("What is Q?")
    assert not names_a_topic("thanks!") and not names_a_topic("Why? A hello")


MODULES = ["Module 1: Foundations", "Module 2: Sensing", "Module 3: Control", "PID Control", "Python 3.9"]


@pytest.mark.parametrize(
    ("question", "searched"),
    [
        ("Give me a summary of chapter 3", "Give me a summary of Module 3: Control"),
        ("What is chapter 2 about?", "What is Module 2: Sensing about?"),
        ("what does module 1 cover", "what does Module 1: Foundations cover"),
        # A topic of its own: the part only says where, and searching its label finds its overview.
        ("What does module 1 say about angles?", "What does module 1 say about angles?"),
        ("What is chapter 7 about?", "What is chapter 7 about?"),  # no such part
    ],
)
def test_a_part_of_the_book_named_by_its_number_is_searched_as_the_book_labels_it(
    question: str, searched: str
) -> None:
    assert with_parts_named(question, MODULES) == searched


def test_a_number_several_labels_hold_is_the_one_that_also_holds_the_word_asked() -> None:
    labels = ["Part 3: Hooks", "Chapter 3: State", "Chapter 4: Effects"]
    assert with_parts_named("summarize chapter 3", labels) == "summarize Chapter 3: State"
    assert with_parts_named("summarize unit 3", labels) == "summarize unit 3"  # neither says "unit"


def test_stand_for_asks_what_a_name_means_and_stand_out_names_something() -> None:
    assert topic_words("What does Tu stand for?") == {"tu"}
    assert topic_text("What does Tu stand for?") == "Tu"
    assert "stand" in topic_words("Can untranslated strings stand out on the site?")


def test_the_greek_letters_a_question_names() -> None:
    assert greek_letters_asked("What does Theta mean, and omega?") == {"theta": "θ", "omega": "ω"}
    assert greek_letters_asked("What is the beta version?") == {"beta": "β"}
    assert greek_letters_asked("What is a thetastic pose?") == {}


@pytest.mark.parametrize(
    ("question", "word", "form"),
    [
        ("How do I slow down before a sharp turn?", "sharp", "sharply"),
        ("Why does the loop oscillate?", "oscillate", "oscillatory"),
        ("How accurate is the encoder?", "accurate", "accuracy"),
        ("Is the filter stable?", "stable", "stability"),
        ("Why is my sensor noisy?", "noisy", "noise"),
        ("Why does it turn so sharply?", "sharply", "sharp"),
    ],
)
def test_a_word_is_held_in_the_forms_derived_from_it(question: str, word: str, form: str) -> None:
    assert form in derived_forms(probed_words(question))[word]


def test_a_short_stem_has_no_derived_forms() -> None:
    # "apply" is not "app" with -ly, nor "copy" "cope".
    assert "app" not in derived_forms(["apply"]).get("apply", ())
    assert "cope" not in derived_forms(["copy"]).get("copy", ())
