"""The extractive plan: sources renumbered in the order quoted, far sources dropped, declining."""

from __future__ import annotations

from bookwise.generation.evidence import READER_PAGE_MARGIN, defines, headed_by, plan_passages
from bookwise.generation.prompts import Turn
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import Passage
from conftest import SectionFactory


def scored(section: int, text: str, score: float, coverage: float = 0.8, dense: float = 0.6) -> ScoredPassage:
    return ScoredPassage(Passage(section, text, ("prose",), 0), score, dense=dense, coverage=coverage)


def test_the_section_quoted_first_is_source_one_and_far_sources_are_not_listed(
    section: SectionFactory,
) -> None:
    sources = [
        section("Sitemap", "lastmod.", 1),
        section("trailingSlash", "Slash.", 2),
        section("Far", "x", 3),
    ]
    ranked = [scored(1, "Slash.", 1.2), scored(0, "lastmod.", 1.0), scored(2, "x", 0.5)]
    plan = plan_passages(ranked, sources, (), retrieval_sufficient=True)
    assert [s.heading for s in plan.sources] == ["trailingSlash", "Sitemap"]
    assert [(q.source, q.text) for q in plan.quoted] == [(1, "Slash."), (2, "lastmod.")]
    assert plan.sufficient


def test_a_passage_already_shown_is_not_quoted_again_regression(section: SectionFactory) -> None:
    """ "how do I fix it?" after an answer returned that same answer again."""
    sources = [section("A", "Gain.\n\nFix.", 1)]
    ranked = [scored(0, "The gain is K.", 1.0), scored(0, "To fix it, lower K.", 0.95)]
    history = (
        Turn("user", "What is the gain?"),
        Turn("assistant", "*From the book…*\n\n> The gain is K. [1]"),
    )
    plan = plan_passages(ranked, sources, history, retrieval_sufficient=True)
    assert [q.text for q in plan.quoted] == ["To fix it, lower K."]
    # So does a follow-up that names nothing of its own: the new passage scores close to the one shown.
    bare = plan_passages(ranked, sources, history, retrieval_sufficient=True, names_own_topic=False)
    assert [q.text for q in bare.quoted] == ["To fix it, lower K."]


def test_a_follow_up_naming_nothing_of_its_own_leads_with_the_passage_just_shown_regression(
    section: SectionFactory,
) -> None:
    """ "how do I fix that?" after the drift passage ("Systematic errors can be calibrated out first")
    led with a worked example of encoder ticks: the passage just shown was left out, and the best of
    the rest, far below it, still read as an answer."""
    drift = "Heading errors grow with distance. Systematic errors can be calibrated out first."
    ticks = "Starting from the origin, 80 left ticks and 100 right ticks give 24.5 mm and 30.7 mm."
    sources = [section("Why odometry drifts", drift, 1), section("The wheel odometry model", ticks, 2)]
    ranked = [scored(0, drift, 0.78, dense=0.53), scored(1, ticks, 0.54, dense=0.47)]
    history = (Turn("user", "Why does my robot drift?"), Turn("assistant", f"> {drift} [1]"))
    plan = plan_passages(ranked, sources, history, retrieval_sufficient=True, names_own_topic=False)
    assert [q.text for q in plan.quoted] == [drift, ticks]
    assert plan.sources[0].heading == "Why odometry drifts"
    # A follow-up that names its own topic ("why does it wind up?") is answered from what is new.
    named = plan_passages(ranked, sources, history, retrieval_sufficient=True)
    assert [q.text for q in named.quoted] == [ticks]


def test_declines_without_passage_evidence_and_answers_on_strong_evidence(section: SectionFactory) -> None:
    sources = [section("A", "text", 1)]
    weak = [scored(0, "Unrelated words.", 0.3, coverage=0.1, dense=0.3)]
    assert not plan_passages(weak, sources, (), retrieval_sufficient=True).sufficient
    strong = [scored(0, "Choosing Q and R.", 1.4, coverage=0.6, dense=0.6)]
    assert plan_passages(strong, sources, (), retrieval_sufficient=False).sufficient
    assert not plan_passages(weak, sources, (), retrieval_sufficient=False).quoted


def test_a_passage_holding_every_named_term_answers_against_retrievals_verdict_regression(
    section: SectionFactory,
) -> None:
    """ "What happens if R is too small?" was declined although its section's table answers it."""
    sources = [section("Choosing the noise parameters Q and R", "| `R` too small | … |", 1)]
    full = [ScoredPassage(Passage(0, "| `R` too small |", ("table",), 0), 0.6, 0.17, 1.0, query_terms=2)]
    assert plan_passages(full, sources, (), retrieval_sufficient=False).sufficient
    one_term = [ScoredPassage(Passage(0, "| small |", ("table",), 0), 0.6, 0.17, 1.0, query_terms=1)]
    assert not plan_passages(one_term, sources, (), retrieval_sufficient=False).sufficient


def test_a_question_naming_what_the_book_never_mentions_needs_a_better_passage(
    section: SectionFactory,
) -> None:
    """ "How do I deploy to Firebase Hosting?" was answered from the deployment page's nearest passage."""
    sources = [section("Deployment", "Deploy to GitHub Pages.", 1)]
    fair = [scored(0, "Deploy to GitHub Pages.", 0.7, coverage=0.2, dense=0.5)]  # evidence 0.6
    assert plan_passages(fair, sources, (), retrieval_sufficient=True).sufficient
    assert not plan_passages(fair, sources, (), retrieval_sufficient=True, names_unknown=True).sufficient
    good = [scored(0, "Deploy to GitHub Pages.", 0.9, coverage=0.4, dense=0.6)]  # evidence 0.8
    assert plan_passages(good, sources, (), retrieval_sufficient=True, names_unknown=True).sufficient


def test_a_chapters_exercises_quoted_as_the_answer_regression(section: SectionFactory) -> None:
    """ "Why does my speed controller with only a P gain settle below the target?" led with the lab's
    questions ("1. Why does the P-only controller settle quickly but at the wrong speed? 2. …"): a
    passage that only asks is never quoted. A question that leads its answer, or the code it asks
    about, still is."""
    exercises = (
        "1. Why does the P-only controller settle quickly but at the wrong speed?\n"
        "2. `Kp = 1, Ki = 4` gives no overshoot. What is\n   special about the ratio `Ki / Kp = 4`?\n"
        "3. How did the Ziegler–Nichols gains compare with yours?"
    )
    answer = "The P term alone leaves a steady-state error."
    faq = "**Why is it called swizzling?**\n\nThe name comes from Objective-C. It means to swap."
    shown = "What happens if we dispatch now?\n\n```js\nstore.dispatch(action)\n// log: '1'\n```"
    sources = [section("Lab questions", exercises, 1), section("Proportional", answer, 2)]
    ranked = [scored(0, exercises, 1.0), scored(1, answer, 0.9)]
    plan = plan_passages(ranked, sources, (), retrieval_sufficient=True)
    assert [(q.source, q.text) for q in plan.quoted] == [(1, answer)]
    assert [s.heading for s in plan.sources] == ["Proportional", "Lab questions"]  # listed, not quoted
    for kept in (faq, shown):
        plan = plan_passages([scored(0, kept, 1.0)], sources, (), retrieval_sufficient=True)
        assert [q.text for q in plan.quoted] == [kept]


def test_a_strong_passage_answers_a_question_about_what_the_book_never_mentions_regression(
    section: SectionFactory,
) -> None:
    """ "How does SLAM build a map of the room?" quoted the frames passage (evidence 0.79, on "map" and
    "room"); SLAM is named nowhere in the book, so no passage of it answers."""
    sources = [section("The world, body and sensor frames", "frames", 1)]
    strong = [scored(0, "A map is drawn in a fixed frame attached to the building.", 1.2, coverage=0.6)]
    assert plan_passages(strong, sources, (), retrieval_sufficient=True).sufficient
    assert not plan_passages(strong, sources, (), retrieval_sufficient=True, asks_unknown=True).sufficient


def test_a_follow_up_declined_although_its_answer_was_just_shown_regression(section: SectionFactory) -> None:
    """ "how do I fix it?" after the windup passage, whose last sentence is the cure: the passage was left
    out as already shown and the rest did not answer, so the follow-up was declined."""
    windup = "This is integral windup; clamping the integral to a fixed range is one cure."
    sources = [section("Windup, noise and saturation", windup, 1)]
    ranked = [scored(0, windup, 0.8, coverage=0.5, dense=0.4), scored(0, "Timing matters.", 0.3, 0.1, 0.3)]
    history = (Turn("user", "Why does my wheel overshoot?"), Turn("assistant", f"> {windup} [1]"))
    plan = plan_passages(ranked, sources, history, retrieval_sufficient=True)
    assert plan.sufficient
    assert [q.text for q in plan.quoted] == [windup]


def test_an_exercise_that_states_its_data_first_is_quoted_from_another_chapter_regression(
    section: SectionFactory,
) -> None:
    """ "how do I choose L?" quoted the differential-drive exercises second ("1. A robot with `b = 0.30 m`
    commands… What are `v` and `ω`? 2. … Find `v_l` and `v_r`."): half its sentences state data, so it
    did not read as a list of questions, but exercises are never quoted."""
    exercise = (
        "1. A robot with `b = 0.30 m` commands `v_r = 0.2 m/s`. What are `v` and `ω`?\n"
        "2. The same robot should follow a circle of radius 2 m. Find `v_l` and `v_r`."
    )
    sources = [section("Choosing the lookahead distance", "L", 1), section("Exercises", exercise, 2)]
    ranked = [
        scored(0, "The lookahead `L` is the main tuning parameter.", 0.9, coverage=0.6),
        ScoredPassage(Passage(1, exercise, ("list",), 0), 0.85, dense=0.5, coverage=0.6),
    ]
    plan = plan_passages(ranked, sources, (), retrieval_sufficient=True)
    assert [q.source for q in plan.quoted] == [1]
    assert "A robot with" not in " ".join(q.text for q in plan.quoted)


def test_exercises_lead_only_when_the_question_asks_for_them(section: SectionFactory) -> None:
    exercise = "1. What is the Kalman gain when `P⁻ = 0.04`?\n2. Why does the variance not depend on `z`?"
    overview = "The Kalman filter chapter shows how to blend a prediction with measurements."
    sources = [section("Module 2: Sensing", overview, 1), section("Exercises", exercise, 2)]
    ranked = [
        scored(0, overview, 0.9, coverage=0.6),
        ScoredPassage(Passage(1, exercise, ("list",), 0), 0.7, dense=0.5, coverage=0.4),
    ]
    asked = plan_passages(ranked, sources, (), retrieval_sufficient=True, question="What are the exercises?")
    assert [q.text for q in asked.quoted] == [exercise, overview]
    other = plan_passages(ranked, sources, (), retrieval_sufficient=True, question="What does the filter do?")
    assert [q.text for q in other.quoted] == [overview]


def test_a_danger_box_is_quoted_after_the_answer_although_it_does_not_answer_regression(
    section: SectionFactory,
) -> None:
    """The wall question's answer went on to the lab's "Danger: Real motors are not simulations"."""
    sources = [section("Windup", "Windup.", 1), section("Before you start", "Danger.", 2)]
    windup = scored(0, "This is integral windup, and the wall is why.", 1.0, coverage=0.6)
    danger = ScoredPassage(
        Passage(
            1,
            "**Danger: Real motors are not simulations**\n\nPut the robot on a stand.",
            ("label", "prose"),
            0,
        ),
        0.9,
        dense=0.6,
        coverage=0.3,
    )
    plan = plan_passages([windup, danger], sources, (), retrieval_sufficient=True)
    assert [q.text for q in plan.quoted] == [windup.passage.text]
    on_topic = ScoredPassage(danger.passage, 0.9, dense=0.6, coverage=0.7)
    plan = plan_passages([windup, on_topic], sources, (), retrieval_sufficient=True)
    assert len(plan.quoted) == 2


def test_what_is_x_opens_with_a_passage_that_only_uses_x_regression(section: SectionFactory) -> None:
    """ "What is odometry?" opened with "Odometry drifts, so…" over the sentence that defines it."""
    sources = [section("Introduction", "Odometry drifts.", 1), section("The wheel odometry model", "x", 2)]
    uses = scored(0, "Odometry drifts, so a robot must also look at its surroundings.", 1.0)
    defining = scored(1, "Odometry applies the forward kinematics to measured wheel motion.", 0.9)
    plan = plan_passages(
        [uses, defining], sources, (), retrieval_sufficient=True, question="What is odometry?"
    )
    assert plan.quoted[0].text.startswith("Odometry applies")
    assert plan.sources[0].heading == "The wheel odometry model"
    # Another question about odometry keeps the best-scored passage first.
    plan = plan_passages(
        [uses, defining], sources, (), retrieval_sufficient=True, question="Why does odometry drift?"
    )
    assert plan.quoted[0].text.startswith("Odometry drifts")


def test_defining_sentences_are_told_from_sentences_that_use_the_term() -> None:
    assert defines("The **Kalman gain** `K` is between 0 and 1.", "Correct", False, "Kalman gain")
    assert defines("A rigid transform is a rotation and a translation.", "Points", False, "rigid transform")
    assert defines("Odometry, the sum of wheel motion, is smooth.", "Odometry", False, "odometry")
    assert defines("Odometry applies the forward kinematics.", "The wheel odometry model", True, "odometry")
    assert not defines("Odometry never gets better on its own.", "Why odometry drifts", True, "odometry")
    assert not defines("Odometry drifts, so a robot must look around.", "Module 2", True, "odometry")


def test_let_r_be_the_wheel_radius_defines_r_and_not_capital_r() -> None:
    """A textbook names its symbols with "Let X be": "what is r?" should lead with that sentence, and
    "what is R?" not (the stems are lower case, the symbols are not)."""
    let = "Let `r` be the wheel radius, `b` the track width."
    assert defines(let, "From wheel speeds to body velocity", False, "r", strict=True)
    assert not defines(let, "From wheel speeds to body velocity", False, "R", strict=True)
    assert defines(let, "From wheel speeds to body velocity", False, "b", strict=True)  # the list after it
    assert not defines("Let `r` be the radius of `v`.", "Speeds", False, "v", strict=True)
    assert not defines("Let the robot be still for a second.", "Calibration", False, "robot", strict=True)


def test_what_does_e_mean_led_with_let_e_y_be_regression() -> None:
    """ "what does e mean?" on the PID page led with path following's "Let `e_y` be the robot's sideways
    distance": `e_y` and `e` have the same stems. The sentence that computes "the **error** `e =
    setpoint − measurement`" was not read as saying what `e` is."""
    let = "Let `e_y` be the robot's sideways distance and `e_θ` its heading error."
    assert not defines(let, "Correcting cross-track and heading error", False, "e", strict=True)
    error = "A closed-loop controller computes the **error** `e = setpoint − measurement`."
    assert defines(error, "Open loop versus closed loop", False, "e", strict=True)
    assert not defines("It stops when `e == 0`.", "Stopping", False, "e", strict=True)  # a test, not a name
    assert not defines("The gain `K = P / (P + R)`.", "Gain", False, "R", strict=True)  # on the right side


def test_if_x_is_set_to_false_does_not_define_x_regression() -> None:
    """ "What does the trailingSlash option do?" led with routing's "If `trailingSlash` is set to `false`,
    the build would emit …" (stop words dropped, it read as "trailingSlash is") over the option's own
    reference."""
    sentence = "If `trailingSlash` is set to `false`, the build would emit `intro.html`."
    assert not defines(sentence, "Routes become HTML files", False, "trailingSlash")
    assert not defines("When odometry is all you have, drift wins.", "Drift", False, "odometry")
    assert defines("`trailingSlash` is a boolean that adds a slash.", "Options", False, "trailingSlash")


def test_an_acronym_is_defined_by_the_compound_it_abbreviates_regression() -> None:
    """ "What is a PID controller?" on the example book opened with the introduction's "The PID control
    chapter introduces feedback", and "what's PID?" with a code listing, over "The
    proportional-integral-derivative controller is by far the most widely used feedback law": the
    book spells the acronym out as a hyphenated compound."""
    sentence = "The proportional-integral-derivative controller is by far the most widely used feedback law."
    assert defines(sentence, "The PID controller", False, "PID controller", strict=True)
    assert defines(sentence, "The PID controller", False, "PID", strict=True)
    assert not defines(sentence, "The PID controller", False, "PD", strict=True)
    assert not defines("The PID control chapter introduces feedback.", "Module 3", False, "PID", strict=True)


def test_a_camel_case_name_is_defined_by_prose_that_spells_it_apart() -> None:
    assert defines("The base URL is the path segment after the url.", "Routing", False, "baseUrl")
    assert not defines("Set `baseUrl` to '/metro/'.", "Routing", False, "baseUrl")


def test_what_is_x_opens_with_the_passage_that_says_what_x_is_before_one_under_a_heading_holding_x(
    section: SectionFactory,
) -> None:
    """ "What is a reducer?" on redux opened with "… a _higher-order reducer_ is …", the first passage
    of "Customizing Behavior with Higher-Order Reducers" (a heading that holds the term), over the
    passage that says what a reducer is."""
    sources = [
        section("Customizing Behavior with Higher-Order Reducers", "x", 1),
        section("Splitting Up Reducer Logic", "y", 2),
    ]
    headed = scored(0, "As defined elsewhere, a higher-order reducer takes a reducer and returns one.", 1.0)
    defining = scored(1, "- **reducer**: any function with the signature `(state, action) -> newState`", 0.9)
    plan = plan_passages(
        [headed, defining], sources, (), retrieval_sufficient=True, question="What is a reducer?"
    )
    assert plan.quoted[0].text.startswith("- **reducer**")
    # Without a passage that says it, the heading's opening passage still leads.
    plan = plan_passages([headed], sources, (), retrieval_sufficient=True, question="What is a reducer?")
    assert plan.quoted[0].text.startswith("As defined")


def test_what_does_an_option_do_leads_with_its_reference_entry_regression(section: SectionFactory) -> None:
    """ "What does the trailingSlash option do?" quoted the tip "Refer to the deployment guide …", and
    "What is the baseUrl?" routing's "the base URL is one level above …", over the first prose of the
    option's own reference section, which does not repeat its name."""
    sources = [section("`trailingSlash`", "x", 1), section("Routes become HTML files", "y", 2)]

    def at(
        n: int, text: str, score: float, position: int, kinds: tuple[str, ...] = ("prose",)
    ) -> ScoredPassage:
        return ScoredPassage(Passage(n, text, kinds, position), score, dense=0.5, coverage=0.3)  # type: ignore[arg-type]

    tip = at(0, "Refer to the deployment guide to choose the appropriate setting.", 0.69, 5)
    elsewhere = at(1, "Note: the trailing slash is one level above the routing system.", 0.6, 3)
    kind = at(0, "- Type: `boolean | undefined`", 0.49, 0, ("list",))
    box = at(0, "**Tip**\n\nEach host serves files differently.", 0.55, 1)
    opening = at(0, "Allow to customize the presence of a trailing slash:\n\n- `true`: add", 0.51, 2)
    ranked = [tip, elsewhere, box, opening, kind]
    question = "What does the trailingSlash option do?"
    plan = plan_passages(ranked, sources, (), retrieval_sufficient=True, question=question)
    assert plan.quoted[0].text.startswith("Allow to customize")
    # Another question keeps the best-scored passage first.
    plan = plan_passages(ranked, sources, (), retrieval_sufficient=True, question="How do I pick a host?")
    assert plan.quoted[0].text.startswith("Refer to")


def test_a_heading_is_the_books_entry_on_a_term_when_it_names_the_term_alone_or_asks_what_it_is() -> None:
    assert headed_by("`trailingSlash`", "trailingSlash")
    assert headed_by("Reducers", "reducer")
    assert headed_by('What is a "thunk"?', "thunk")
    assert headed_by("The base URL", "baseUrl")
    assert not headed_by("Using thunks", "thunk")
    assert not headed_by("Upgrading MDX", "MDX")
    assert not headed_by("What is a thunk for?", "thunk")


def test_what_does_an_option_do_leads_with_its_row_of_the_options_table_regression(
    section: SectionFactory,
) -> None:
    """ "What does the sidebarCollapsible option do?" opened with a note that only mentions it, and "What
    does BOOKWISE_LLM_BASE_URL do?" with a sentence of the evaluation page, over the reference table
    whose row the name heads."""
    table = (
        "| Name | Type | Default | Description |\n| --- | --- | --- | --- |\n"
        "| `sidebarCollapsible` | `boolean` | `true` | Whether sidebar categories are collapsible. |"
    )
    assert defines(table, "Configuration", False, "sidebarCollapsible", strict=True)
    assert not defines(table, "Configuration", False, "boolean", strict=True)  # a cell, not the name
    assert not defines("Set `sidebarCollapsible` to `false`.", "Notes", False, "sidebarCollapsible")
    sources = [section("Collapsible categories", "x", 1), section("Configuration", "y", 2)]
    note = scored(0, "**Note**\n\nThe option in `sidebars.js` wins over `sidebarCollapsible`.", 0.8)
    plan = plan_passages(
        [note, scored(1, table, 0.6)],
        sources,
        (),
        retrieval_sufficient=True,
        question="What does the sidebarCollapsible option do?",
    )
    assert plan.quoted[0].text.startswith("| Name |")


def test_code_does_not_define_a_term_regression() -> None:
    """ "What does the Provider component do?" (redux) led with a code listing: its line "</Provider>,"
    read as the appositive "X, the …, is"."""
    listing = (
        "First, let's look at the original file:\n\n"
        "```js\nrender(\n  <Provider store={store}>\n    <App />\n  </Provider>,\n  root\n)\n```"
    )
    assert not defines(listing, "Creating the store", False, "Provider", strict=True)
    assert defines("`Provider`, a component, is what makes the store available.", "x", False, "Provider")


def test_show_me_the_code_leads_with_a_passage_of_code_regression(section: SectionFactory) -> None:
    """ "show me the code" after "What's the derivative kick?" quoted the book's note on how it writes
    formulas ("… plain text or inline code …") over the PID's listing, which scored a little lower."""
    sources = [section("Conventions", "x", 1), section("A discrete-time PID in code", "y", 2)]
    note = scored(0, "Formulas are written as plain text or inline code.", 0.8)
    listing = ScoredPassage(
        Passage(1, "```python\nclass PID:\n    pass\n```", ("code",), 1), 0.6, dense=0.5, coverage=0.3
    )
    plan = plan_passages(
        [note, listing], sources, (), retrieval_sufficient=True, question="show me the code PID"
    )
    assert plan.quoted[0].text.startswith("```python")
    for question in ("How are formulas written?", "My code blocks render as plain text"):
        plan = plan_passages([note, listing], sources, (), retrieval_sufficient=True, question=question)
        assert plan.quoted[0].text.startswith("Formulas"), question


def test_bare_code_quoted_first_over_the_sentence_that_says_how_regression(section: SectionFactory) -> None:
    """ "In code samples I'd like to flag the line that throws with a red background, using a comment like
    `// This will error`" (docusaurus-docs) quoted a CSS rule alone first, then the example's Markdown,
    and "You can declare custom magic comments through theme config" last, though it scored close.
    Bare code leads only when nothing said in words scores near it, or when code is asked for."""
    sources = [section("Custom magic comments", "x", 3)]
    css = ScoredPassage(
        Passage(0, "```css\n.code-block-error-line {\n  color: red;\n}\n```", ("code",), 3),
        0.68,
        dense=0.55,
        coverage=0.24,
    )
    said = ScoredPassage(
        Passage(0, "You can declare custom magic comments through theme config.", ("prose",), 0),
        0.62,
        dense=0.51,
        coverage=0.19,
    )
    question = "I'd like to flag the line that throws with a red background. Is that possible?"
    plan = plan_passages([css, said], sources, (), retrieval_sufficient=True, question=question)
    assert plan.quoted[0].text.startswith("You can declare custom magic comments")
    plan = plan_passages([css, said], sources, (), retrieval_sufficient=True, question="show me the code")
    assert plan.quoted[0].text.startswith("```css")
    far = ScoredPassage(said.passage, 0.5, dense=0.4, coverage=0.1)
    plan = plan_passages([css, far], sources, (), retrieval_sufficient=True, question=question)
    assert plan.quoted[0].text.startswith("```css")
    # A sentence of another section is about something else: "How do I put Bookwise behind an nginx
    # proxy?" gave the deploying section's command up for the security page's client addresses.
    elsewhere = [section("Custom magic comments", "x", 3), section("Client addresses", "y", 2)]
    other = ScoredPassage(Passage(1, "The limits count clients by address.", ("prose",), 0), 0.62, 0.5, 0.2)
    plan = plan_passages([css, other], elsewhere, (), retrieval_sufficient=True, question=question)
    assert plan.quoted[0].text.startswith("```css")


def test_the_odometry_code_was_quoted_before_the_sentence_and_formulas_introducing_it_regression(
    section: SectionFactory,
) -> None:
    """ "How do I compute the robot's pose from encoder ticks?" quoted `odometry.py` bare first; "Each
    control cycle, convert the tick counts into distances…", with the update's formulas, ends right before
    it and scored 0.17 lower. The passage that introduces bare code leads when it scores this close; a
    sentence further up the section does not."""
    sources = [section("The wheel odometry model", "x", 1)]
    code = ScoredPassage(
        Passage(0, "```python\ndef update_pose(pose):\n    pass\n```", ("code",), 3), 0.74, 0.55, 0.46
    )
    introduction = ScoredPassage(
        Passage(0, "Each control cycle, update the pose:\n\n```text\nx ← x + Δs\n```", ("prose", "code"), 1),
        0.57,
        dense=0.43,
        coverage=0.29,
    )
    above = ScoredPassage(
        Passage(0, "Odometry adds up the motion of the robot.", ("prose",), 0), 0.63, 0.44, 0.46
    )
    question = "How do I compute the robot's pose from encoder ticks?"
    plan = plan_passages(
        [code, above, introduction], sources, (), retrieval_sufficient=True, question=question
    )
    assert plan.quoted[0].text.startswith("Each control cycle")
    plan = plan_passages([code, above], sources, (), retrieval_sufficient=True, question=question)
    assert plan.quoted[0].text.startswith("```python")  # 0.11 below, and not the code's introduction
    far = ScoredPassage(introduction.passage, 0.5, dense=0.4, coverage=0.1)
    plan = plan_passages([code, far], sources, (), retrieval_sufficient=True, question=question)
    assert plan.quoted[0].text.startswith("```python")


def test_a_passage_of_the_readers_page_leads_when_it_scores_near_the_best(section: SectionFactory) -> None:
    """The page a reader asks from says what a short question means ("what is the gain?" on the Kalman
    filter's page): its passage leads within ``READER_PAGE_MARGIN`` of the best, not beyond it."""
    lab = "The Ziegler–Nichols method starts from the ultimate gain Ku."
    kalman = "The Kalman gain K is between 0 and 1."
    sources = [section("Ultimate gain", lab, 1), section("A one-dimensional Kalman filter", kalman, 2)]
    near = [scored(0, lab, 0.80), scored(1, kalman, 0.80 - READER_PAGE_MARGIN + 0.01)]
    far = [scored(0, lab, 0.80), scored(1, kalman, 0.80 - READER_PAGE_MARGIN - 0.01)]

    def first(ranked: list[ScoredPassage], reader_page: tuple[str, ...]) -> str:
        plan = plan_passages(ranked, sources, (), retrieval_sufficient=True, reader_page=reader_page)
        return plan.quoted[0].text

    assert first(near, ()) == lab
    assert first(near, ("/p2",)) == kalman
    assert first(far, ("/p2",)) == lab
    # A passage of the page that would not answer on its own does not lead.
    weak = [scored(0, lab, 0.80), scored(1, kalman, 0.75, coverage=0.0, dense=0.3)]
    assert first(weak, ("/p2",)) == lab
