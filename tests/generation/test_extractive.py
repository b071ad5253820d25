"""Extractive answers: the book's own passages, best first, quoted whole with their citations."""

from __future__ import annotations

from bookwise.generation.citations import cited_numbers
from bookwise.generation.extractive import (
    EXTRACTIVE_LABEL,
    NOT_COVERED,
    Quoted,
    choose,
    cite,
    is_generic_ask,
    not_covered_text,
    passage_answer,
    readable_lead_first,
    rows_asked_about,
    selection_answer,
)
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import Passage
from conftest import SectionFactory


def scored(section: int, position: int, score: float, kinds: tuple[str, ...] = ("prose",)) -> ScoredPassage:
    passage = Passage(section, f"passage {section}.{position}", kinds, position)  # type: ignore[arg-type]
    return ScoredPassage(passage, score, dense=score, coverage=score)


def test_the_citation_follows_the_last_prose_and_never_enters_code() -> None:
    built = "To build the site, run:\n\n```sh\nnpm run build\n```"
    assert cite(built, 2) == "To build the site, run: [2]\n\n```sh\nnpm run build\n```"
    assert cite("| a |\n| - |\n| 1 |", 1) == "| a |\n| - |\n| 1 |\n\n[1]"
    assert cite("Steps:\n\n1. one\n2. two", 3).endswith("2. two [3]")


def test_the_citation_followed_a_tabs_label_over_its_code_regression() -> None:
    # "Python: [1]" over the program read as if the tab's label were what the book says.
    introduced = (
        "The driver node converts each command into wheel speeds:\n\nPython:\n\n```python\nx = 1\n```"
    )
    assert cite(introduced, 1) == (
        "The driver node converts each command into wheel speeds: [1]\n\nPython:\n\n```python\nx = 1\n```"
    )
    # A tab quoted on its own: the citation follows its code.
    assert cite("Python:\n\n```python\nx = 1\n```", 2) == "Python:\n\n```python\nx = 1\n```\n\n[2]"


def test_a_quoted_programs_first_lines_ended_in_an_empty_box_regression() -> None:
    # A long program is stored in groups of lines; a group that ended at a blank line kept it.
    grouped = "A robot runs its controller in a loop:\n\n```python\nclass PID:\n    pass\n\n\n```"
    assert (
        cite(grouped, 1)
        == "A robot runs its controller in a loop: [1]\n\n```python\nclass PID:\n    pass\n```"
    )


def test_passages_are_quoted_whole_as_markdown_blockquotes() -> None:
    answer = passage_answer(
        [Quoted(1, "To build the site, run:\n\n```sh\nnpm run build\n```"), Quoted(2, "Done.")]
    )
    assert answer.startswith(EXTRACTIVE_LABEL)
    assert "> To build the site, run: [1]\n>\n> ```sh\n> npm run build\n> ```" in answer
    assert "> Done. [2]" in answer
    assert cited_numbers(answer) == [1, 2]
    assert passage_answer([]) == NOT_COVERED


def test_only_passages_close_to_the_best_follow_it_and_none_overlaps_another() -> None:
    ranked = [
        scored(0, 2, 1.0, ("prose", "code")),
        scored(0, 2, 0.98),  # the same paragraph without its code block: overlaps the first
        scored(1, 0, 0.95),
        scored(2, 0, 0.5),  # far below: not quoted
    ]
    assert [(c.passage.section, c.score) for c in choose(ranked)] == [(0, 1.0), (1, 0.95)]


def test_a_following_passage_that_points_back_to_an_unshown_block_is_not_quoted_regression() -> None:
    """The Kalman answer's third quote opened "Its third column is why…", about a matrix not shown."""

    def opening(section: int, position: int, text: str, score: float) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, ("prose",), position), score, dense=score, coverage=score)

    best = opening(0, 2, "The filter loops over two steps.", 1.0)
    leans = opening(1, 5, "Its third column is why heading uncertainty spreads.", 0.9)
    continues = opening(0, 3, "This is why the variance shrinks.", 0.85)
    stands = opening(2, 0, "The prediction step uses the motion model.", 0.8)
    assert [c.passage.text for c in choose([best, leans, continues, stands])] == [
        best.passage.text,
        continues.passage.text,  # it follows the quoted passage, so its "This" is shown
        stands.passage.text,
    ]
    far = opening(2, 0, "The prediction step uses the motion model.", 0.5)
    # With nothing close that reads alone, the best leads anyway.
    assert choose(readable_lead_first([leans, far])) == [leans]


def test_the_best_passage_pointed_back_to_a_block_not_shown_regression() -> None:
    """ "what are the steps of the kalman filter" led with "Its third column is why heading uncertainty
    spreads…" (0.88) over "It then loops over two steps" (0.86): a passage that reads on its own and
    scores as close leads."""

    def opening(section: int, position: int, text: str, score: float) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, ("prose",), position), score, dense=score, coverage=score)

    leans = opening(0, 5, "Its third column is why heading uncertainty spreads.", 0.88)
    steps = opening(1, 2, "The filter loops over two steps: predict, then correct.", 0.86)
    assert choose(readable_lead_first([leans, steps])) == [steps]
    names_its_subject = opening(2, 0, "This plugin supports the PNG and JPG formats only.", 0.88)
    assert choose(readable_lead_first([names_its_subject, steps]))[0] is names_its_subject


def test_a_selection_that_does_not_bear_on_the_question_gives_none(section: SectionFactory) -> None:
    selection = section("Feeding", "Quokkas eat leaves and grasses at night. They rarely drink water.")
    assert selection_answer("How many joeys per litter?", selection) is None
    answer = selection_answer("What do quokkas eat?", selection)
    assert answer is not None and "> Quokkas eat leaves and grasses at night. [1]" in answer


def test_explain_this_gives_the_statements_and_says_what_a_model_would_add(section: SectionFactory) -> None:
    selection = section("Feeding", "Quokkas eat leaves and grasses at night. They rarely drink water.")
    answer = selection_answer("Explain this simply", selection)
    assert answer is not None
    assert "> - Quokkas eat leaves and grasses at night.\n> - They rarely drink water. [1]" in answer
    assert "language model would explain" in answer


def test_how_does_this_work_on_a_selection_said_the_selection_does_not_answer_regression(
    section: SectionFactory,
) -> None:
    """ "How does this work?" on a selection was taken for a question about something in it ("work"),
    which the selection never names: "The selected passage does not answer this question". It asks
    about the passage itself, as "explain this" does; "how does the integral work?" still names a topic."""
    selection = section("Feeding", "Quokkas eat leaves and grasses at night. They rarely drink water.")
    for question in ("How does this work?", "Help me understand this"):
        assert is_generic_ask(question), question
        answer = selection_answer(question, selection)
        assert answer is not None and "> - Quokkas eat leaves and grasses at night." in answer
    assert not is_generic_ask("How does the integral work?")


def test_a_paragraph_that_leads_into_code_is_quoted_with_it_regression() -> None:
    """ "How do I make the navbar hide on scroll?" quoted "You can enable this cool UI feature…" without
    the ``hideOnScroll: true`` block after it: alone, the sentence outscored the pair."""
    lead_alone = scored(0, 4, 1.0)
    with_code = scored(0, 4, 0.8, ("prose", "code"))
    elsewhere = scored(1, 0, 0.9)
    chosen = choose([lead_alone, elsewhere, with_code])
    assert [(c.passage.section, c.passage.kinds) for c in chosen] == [(0, ("prose", "code")), (1, ("prose",))]


def test_a_paragraph_is_not_pulled_into_a_huge_code_block() -> None:
    lead_alone = scored(0, 4, 1.0)
    huge = ScoredPassage(
        Passage(0, "Run:\n\n```\n" + "x\n" * 2000 + "```", ("prose", "code"), 4), 0.8, 0.8, 0.8
    )
    assert choose([lead_alone, huge])[0] is lead_alone


def test_the_code_block_right_after_the_best_passage_is_quoted_second_regression() -> None:
    """ "How do I control where a blog post's preview is cut?" quoted the paragraph about summaries and
    two passages restating the question, not the example with the ``truncate`` marker right after it
    (code embeds poorly, so it ranked fourth)."""
    lead = scored(0, 0, 1.0)
    restating = [scored(0, 5, 0.9), scored(3, 0, 0.85)]
    example = scored(0, 1, 0.6, ("prose", "code"))
    chosen = choose([lead, *restating, example])
    assert [(c.passage.section, c.passage.position) for c in chosen] == [(0, 0), (0, 1), (0, 5)]


def test_only_code_that_continues_the_best_passage_and_scores_near_it_is_pulled_up() -> None:
    lead = scored(0, 0, 1.0)
    others = [scored(0, 5, 0.9), scored(3, 0, 0.85)]
    not_next = scored(0, 2, 0.7, ("prose", "code"))  # a block further down the section
    far_below = scored(0, 1, 0.5, ("code",))  # the next block, but far under the lead
    plain_next = scored(0, 1, 0.8)  # the next block, but no code
    for extra in (not_next, far_below, plain_next):
        chosen = choose(sorted([lead, *others, extra], key=lambda s: -s.score))
        assert [(c.passage.section, c.passage.position) for c in chosen] == [(0, 0), (0, 5), (3, 0)]


def test_the_decline_names_what_the_book_never_mentions() -> None:
    assert not_covered_text(()) == NOT_COVERED
    assert "it never mentions “Firebase”." in not_covered_text(("Firebase",))
    assert "it never mentions “IPFS”, “Fleek” or “Pinata”." in not_covered_text(("IPFS", "Fleek", "Pinata"))


def test_the_same_warning_from_two_pages_quoted_twice_regression() -> None:
    """ "Which remark-math should I install?" quoted "Make sure to use `remark-math 6`…" from the
    migration guide, then again under **Warning** from the math page: the answer repeated itself."""

    def passage(section: int, text: str, kinds: tuple[str, ...], score: float) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, kinds, 0), score, dense=score, coverage=score)  # type: ignore[arg-type]

    warning = "Make sure to use `remark-math 6` and `rehype-katex 7`.\nOther versions may not work."
    best = passage(0, f"{warning}\n\n```diff\n+ remark-math\n```", ("prose", "code"), 1.0)
    again = passage(1, f"**Warning**\n\n{' '.join(warning.split())}", ("label", "prose"), 0.95)
    steps = passage(1, "Install the `remark-math` and `rehype-katex` plugins.", ("prose",), 0.9)
    assert [c.passage.text for c in choose([best, again, steps])] == [best.passage.text, steps.passage.text]


def test_a_sentence_quoted_again_with_its_example_from_another_page_regression() -> None:
    """ "can I mutate state in a reducer" quoted "In Redux, reducers are never allowed to mutate…" from
    one tutorial, then the same sentence with its example from another: the answer repeated itself.
    The fuller passage is quoted in the place of the one it repeats."""

    def passage(section: int, text: str, kinds: tuple[str, ...], score: float) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, kinds, 0), score, dense=score, coverage=score)  # type: ignore[arg-type]

    rule = "In Redux, **our reducers are _never_ allowed to mutate the original state values!**"
    alone = passage(0, rule, ("prose",), 1.0)
    other = passage(1, "Reducers are just functions.", ("prose",), 0.97)
    example = passage(2, f"{rule}\n\n```js\nstate.value = 123\n```", ("prose", "code"), 0.95)
    assert [c.passage.text for c in choose([alone, other, example])] == [
        example.passage.text,
        other.passage.text,
    ]


def test_passages_of_one_section_that_score_alike_are_quoted_in_the_books_order() -> None:
    note, after, intro = scored(0, 3, 1.0), scored(0, 2, 0.98), scored(0, 1, 0.97)
    elsewhere = scored(1, 0, 0.99)
    assert choose([note, elsewhere, after, intro]) == [after, note, elsewhere]  # three at most, best first
    assert choose([note, after, intro]) == [intro, after, note]
    far = scored(0, 1, 0.8)  # scores well under the best: the best still leads
    assert choose([note, far])[0] is note


def test_a_later_step_quoted_before_the_step_it_follows_regression() -> None:
    """ "How do I add a blog?" quoted "Then, add an item link to your blog…" before "To set up your
    site's blog, start by creating a `blog` directory.": steps of one section read in the book's order."""

    def passage(section: int, position: int, text: str, score: float) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, ("prose",), position), score, dense=score, coverage=score)

    then = passage(0, 4, "Then, add an item link to your blog.", 1.0)
    other = passage(1, 0, "You can add another blog with a second plugin.", 0.95)
    first = passage(0, 1, "To set up your site's blog, start by creating a `blog` directory.", 0.9)
    assert [c.passage.text for c in choose([then, other, first])] == [
        first.passage.text,
        then.passage.text,
        other.passage.text,
    ]
    # Without the earlier step, or when it already leads, nothing moves.
    assert choose([then, other]) == [then, other]
    assert choose([first, then]) == [first, then]


def test_and_now_quoted_without_the_step_it_follows_regression() -> None:
    """ "How can I make <Highlight> available everywhere without an import line?" led with "And now,
    you can freely use `<Highlight>` in every page…": that it can be done, not how. A best passage
    that opens as a later step brings the block before it, and the section's passages read in order."""

    def passage(
        section: int, position: int, text: str, kinds: tuple[str, ...], score: float
    ) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, kinds, position), score, dense=score, coverage=score)  # type: ignore[arg-type]

    result = passage(0, 7, "And now, you can freely use `<Highlight>` in every page:", ("prose",), 1.0)
    scope = passage(0, 0, "A third way is to register it to the global scope.", ("prose",), 0.9)
    other = passage(1, 0, "Import the component in each file.", ("prose",), 0.85)
    wrapper = passage(0, 6, "```js\nexport default {...MDXComponents, Highlight};\n```", ("code",), 0.6)
    unrelated = passage(0, 2, "It compiles to a React component.", ("prose",), 0.5)
    assert [c.passage.text for c in choose([result, scope, other, wrapper, unrelated])] == [
        scope.passage.text,
        wrapper.passage.text,
        result.passage.text,
    ]
    # "Now that…" opens a new topic, not a step's result; a passage with no block before it stays alone.
    now_that = passage(0, 7, "Now that you have a wrapper, use it anywhere.", ("prose",), 1.0)
    assert choose([now_that, wrapper]) == [now_that]
    first = passage(0, 0, "Now, you can use it.", ("prose",), 1.0)
    assert choose([first, other]) == [first, other]
    # A "Then, …" step says what to do: its earlier step is not brought in ("Is the Algolia apiKey
    # safe to commit?" led with the install steps before the config that says so).
    then = passage(0, 7, "Then, add an `algolia` field to your config.", ("prose",), 1.0)
    assert choose([then, other, wrapper]) == [then, other]


def test_bare_code_from_another_section_quoted_as_a_further_passage_regression() -> None:
    """The global-components answer's second quote was a lone code block from another page
    (`import Highlight from …`), with no sentence to say what it shows. A further passage that is
    bare code is quoted only right after the passage it continues; a table names its columns."""

    def passage(
        section: int, position: int, text: str, kinds: tuple[str, ...], score: float
    ) -> ScoredPassage:
        return ScoredPassage(Passage(section, text, kinds, position), score, dense=score, coverage=score)  # type: ignore[arg-type]

    best = passage(0, 0, "Register the component in the global scope.", ("prose",), 1.0)
    bare = passage(
        1, 3, "```md\nimport Highlight from '@site/src/components/Highlight';\n```", ("code",), 0.95
    )
    table = passage(2, 0, "| Name | Default |\n| --- | --- |\n| `a` | 1 |", ("table",), 0.9)
    prose = passage(3, 0, "And now you can use it in every page.", ("prose",), 0.85)
    assert [c.passage.section for c in choose([best, bare, table, prose])] == [0, 2, 3]
    follows = passage(0, 1, "```js\nexport default {...MDXComponents};\n```", ("code",), 0.7)
    assert [c.passage.section for c in choose([best, follows, prose])] == [0, 0, 3]


def test_thirty_rows_of_options_quoted_to_show_one_regression() -> None:
    """ "Why are my 'last updated' dates wrong when built in GitHub Actions?" quoted the docs plugin's
    whole options table to show the `showLastUpdateTime` row. A long table is quoted with its header,
    the rows the question asks about and a "…" row; a short one, or one where no row stands out, whole."""
    header = "| Name | Type | Description |\n| --- | --- | --- |"
    rows = [f"| `option{i}` | `boolean` | Whether to enable feature {i}. |" for i in range(8)]
    asked = (
        "| `showLastUpdateTime` | `boolean` | The last date updated; needs git history, "
        "so use `fetch-depth: 0` in GitHub Actions. |"
    )
    table = "\n".join([header, *rows[:4], asked, *rows[4:]])
    question = "Why are the last updated dates wrong when built in GitHub Actions?"
    assert rows_asked_about(f"Options:\n\n{table}", question) == f"Options:\n\n{header}\n{asked}\n| … | | |"
    short = "\n".join([header, rows[0], asked])
    assert rows_asked_about(short, question) == short
    assert rows_asked_about(table, "How do I enable it?") == table  # no row shares two of its words
    assert rows_asked_about("Just prose.", question) == "Just prose."


def test_a_comparison_of_three_sensors_quoted_as_two_rows_regression() -> None:
    """ "How do sonar, an infrared ToF sensor and a 2D lidar compare?" was cut to the lidar and depth
    camera rows, the two that shared most words: rows the question names by their first cell stay."""
    table = "\n".join(
        [
            "| Sensor | Range | Weaknesses |",
            "| --- | --- | --- |",
            "| Ultrasonic (sonar) | 0.02 to 4 m | wide beam |",
            "| Infrared time-of-flight | 0.03 to 2 m | sunlight |",
            "| 2D scanning lidar | 0.15 to 12 m | glass, mirrors, distance |",
            "| Depth camera | 0.3 to 5 m | walls, distance |",
            "| GNSS | global | outdoors only |",
        ]
    )
    question = "How do sonar, an infrared ToF sensor and a 2D lidar compare in distance for walls?"
    assert rows_asked_about(table, question) == table


def test_ask_on_a_code_block_showed_its_lines_as_a_bullet_list_regression(section: SectionFactory) -> None:
    """A code block's Ask sends its lines; without a model they came back as "sentences" in a bulleted
    quote, indentation lost. The code stays one fenced block, each line as the book indents it."""
    code = (
        "class PID:\n    def update(self, setpoint, meas, dt):\n        error = setpoint - meas\n"
        "        return self.kp * error"
    )
    selection = section("A discrete-time PID in code", code)
    for question in ("Explain this passage.", "What does this code do?", "What does update return?"):
        answer = selection_answer(question, selection)
        assert answer is not None, question
        assert f"```\n{code}\n```" in answer and "> - " not in answer
    assert selection_answer("How do I tune a Kalman filter?", selection) is None
    prose = section("Feeding", "Quokkas eat leaves at night.\nThey rarely drink water.")
    assert "```" not in (selection_answer("Explain this", prose) or "")


def test_which_sensor_works_best_was_cut_to_the_one_row_it_rules_out_regression() -> None:
    """ "Which range sensor works best outdoors in sunlight?" was cut to the depth camera row, the one
    sharing most words ("range", "sunlight": its weakness). A question that weighs the rows against
    each other keeps the table whole; one that asks about a row is still cut to it."""
    table = "\n".join(
        [
            "| Sensor | Typical range | Main weaknesses |",
            "| --- | --- | --- |",
            "| Ultrasonic (sonar) | 0.02 to 4 m | wide beam |",
            "| Infrared time-of-flight | 0.03 to 2 m | sunlight, dark surfaces |",
            "| 2D scanning lidar | 0.15 to 12 m | glass, mirrors |",
            "| Depth camera | about 1% of range at 1 m | sunlight, featureless walls |",
            "| GNSS (consumer) | global, outdoors only | buildings, trees |",
        ]
    )
    for question in (
        "Which range sensor works best outdoors in sunlight?",
        "Which is the most accurate sensor?",
        "What are the pros and cons of each sensor?",
        "Which sensor has the longest range?",
    ):
        assert rows_asked_about(table, question) == table, question
    assert "Ultrasonic" not in rows_asked_about(table, "What is the typical range of a depth camera?")
    named = rows_asked_about(table, "Is sonar better than lidar?")
    assert "Ultrasonic" in named and "2D scanning lidar" in named and "Depth camera" not in named


def test_what_is_a_setting_quoted_the_row_before_it_too_regression() -> None:
    """ "what is BOOKWISE_TRUSTED_PROXIES" quoted `BOOKWISE_ALLOWED_HOSTS` first: the passage was a
    short piece of the settings table, and only a long table was cut. The manual promises the header
    and the row the asked term heads, whatever the table's length."""
    header = "| variable | type | default | meaning |\n|---|---|---|---|"
    hosts = "| `BOOKWISE_ALLOWED_HOSTS` | list of text | `[]` | Host names for the Origin check. |"
    proxies = "| `BOOKWISE_TRUSTED_PROXIES` | list of text | `[]` | Addresses of your reverse proxies. |"
    table = "\n".join([header, hosts, proxies])
    cut = f"{header}\n{proxies}\n| … | | | |"
    assert rows_asked_about(table, "what is BOOKWISE_TRUSTED_PROXIES") == cut
    assert rows_asked_about(table, "What does `BOOKWISE_TRUSTED_PROXIES` default to?") == cut
    assert rows_asked_about(table, "How do I run behind a proxy?") == table  # no row named
    assert (
        rows_asked_about(f"{header}\n{proxies}", "what is BOOKWISE_TRUSTED_PROXIES") == f"{header}\n{proxies}"
    )
