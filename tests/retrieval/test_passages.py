"""Passages are whole blocks of a section: never cut at a source line break or inside a list or fence."""

from __future__ import annotations

from bookwise.retrieval.passages import passages_of, split_units

FRAMES = (
    "The body frame (often `base_link`) is attached to the robot, with its origin midway between the\n"
    "wheels and x pointing forward.\n\n"
    "The world frame (often `odom` or `map`) is fixed to the ground."
)
KALMAN = (
    "A Kalman filter keeps a best guess and a variance. It then loops over two steps:\n\n"
    "1. **Predict.** Move the estimate forward using the motion model (odometry). Motion adds uncertainty,\n"
    "   so the variance grows.\n"
    "2. **Correct.** Compare a measurement with the prediction and move the estimate part of the way toward\n"
    "   the measurement.\n\n"
    "The filter never stores old measurements."
)


def test_a_paragraph_broken_across_source_lines_is_one_passage_regression() -> None:
    """The example book's quote stopped at "with its origin midway between the" (a source line end)."""
    texts = [p.text for p in passages_of(FRAMES)]
    assert texts == [FRAMES.split("\n\n")[0], FRAMES.split("\n\n")[1]]


def test_a_list_comes_with_its_lead_in_and_the_lead_in_never_alone_regression() -> None:
    """ "It then loops over two steps:" was quoted without the steps."""
    texts = [p.text for p in passages_of(KALMAN)]
    assert texts[0].startswith("A Kalman filter keeps") and texts[0].endswith("the measurement.")
    assert "1. **Predict.**" in texts[0] and "2. **Correct.**" in texts[0]
    assert not any(t.endswith("two steps:") for t in texts)
    assert texts[1] == "The filter never stores old measurements."


def test_a_code_block_is_whole_with_the_sentence_that_introduces_it() -> None:
    text = (
        'Create the store like this:\n\n```js title="store.js"\nconst store = createStore(reducer)\n\n'
        "store.dispatch({ type: 'x' })\n```\n\nThat is all."
    )
    first = passages_of(text)[0]
    assert first.kinds == ("prose", "code")
    assert first.text.startswith("Create the store like this:\n\n```js")
    assert first.text.endswith("store.dispatch({ type: 'x' })\n```")  # the blank line inside stays in


def test_loose_list_items_and_their_indented_paragraphs_are_one_list() -> None:
    text = "- one item\n\n- two item\n\n  more about two\n\n- three item"
    assert [u.kind for u in split_units(text)] == ["list"]


def test_tables_and_admonitions_are_whole_units() -> None:
    text = "**Tip: Tuning**\n\nStart with a small gain.\n\n| a | b |\n| - | - |\n| 1 | 2 |"
    units = split_units(text)
    assert [u.kind for u in units] == ["label", "prose", "table"]
    first = passages_of(text)[0]
    assert first.text == "**Tip: Tuning**\n\nStart with a small gain." and first.kinds == ("label", "prose")


def test_cut_marks_and_paragraph_tails_are_no_passages() -> None:
    text = "…\n\nand then the rest of a sentence.\n\nA whole sentence here.\n\n…"
    assert [p.text for p in passages_of(text)] == ["A whole sentence here."]


def test_links_and_images_keep_only_their_text_regression() -> None:
    """Quotes showed `[differential drive](../01-foundations/x.mdx)`: a source path is no site URL,
    and a quoted image would load from anywhere."""
    text = (
        "The [differential drive](../01-foundations/02-differential-drive.mdx#odometry-model) chapter "
        "showed the wheel speeds. A ![robot](http://127.0.0.1:9/x.png) drives straight."
    )
    assert passages_of(text)[0].text == (
        "The differential drive chapter showed the wheel speeds. A robot drives straight."
    )


def test_a_list_item_that_introduces_code_is_quoted_with_the_code_regression() -> None:
    """A redux answer ended at "…pushing to the middlewares array inside an if statement:"."""
    text = (
        "- Both arrays are defined first.\n\n  For example, push to the array inside an if statement:\n\n"
        "```js\nif (dev) middlewares.push(logger)\n```"
    )
    texts = [p.text for p in passages_of(text)]
    assert all(not t.rstrip().endswith(":") for t in texts)
    assert texts[0].endswith("```") and "inside an if statement:" in texts[0]


def test_stray_markup_is_no_passage_regression() -> None:
    """A redux answer quoted "&nbsp; [3]"."""
    assert [p.text for p in passages_of("&nbsp;\n\nThe store holds the state.")] == [
        "The store holds the state."
    ]


def test_a_paragraph_that_runs_into_its_code_block_is_quoted_with_it_regression() -> None:
    """ "The classic PID rules are then [1]" was quoted without the rules (a code block)."""
    text = "At about `Ku = 4.6` it oscillates. The classic PID\nrules are then\n\n```text\nKp = 0.6·Ku\n```"
    assert [p.kinds for p in passages_of(text)] == [("prose", "code")]


def test_a_numbered_list_broken_by_an_example_is_one_list_regression() -> None:
    """ "How do I drop an old docs version?" quoted steps 2 and 3 without step 1 (`versions.json`): the
    source's unindented "Example:" and code block split its list in two."""
    text = (
        "You can delete/remove versions as well.\n\n1. Remove the version from `versions.json`.\n\n"
        'Example:\n\n```diff\n[\n- "1.8.0"\n]\n```\n\n'
        "2. Delete the versioned docs directory.\n3. Delete the versioned sidebars file."
    )
    steps = [p for p in passages_of(text) if "2. Delete" in p.text]
    assert len(steps) == 1 and steps[0].kinds[-1] == "list"
    assert "1. Remove the version from `versions.json`." in steps[0].text
    assert '- "1.8.0"' in steps[0].text


def test_a_list_that_starts_at_one_again_is_another_list() -> None:
    text = "1. Install.\n\nThen, later:\n\n1. Configure the plugin.\n2. Build the site."
    assert [u.kind for u in split_units(text)] == ["list", "prose", "list"]


def test_question_line_quoted_alone_regression() -> None:
    """ "What is swizzling?" was answered with "Why is it called swizzling?", a <details> summary
    quoted as a passage of its own: a question on a line of its own heads the answer below it."""
    text = (
        "Why is it called swizzling?\n\n"
        "**The name comes from Objective-C**: method swizzling changes an existing method.\n\n"
        "Is it safe? Mostly, as the next section explains."
    )
    found = passages_of(text)
    assert [p.kinds for p in found] == [("label", "prose"), ("prose",)]
    assert found[0].text.startswith("Why is it called swizzling?\n\n**The name comes from")
    assert all(p.text != "Why is it called swizzling?" for p in found)
    # A file name's dot is no sentence end: still one question.
    assert split_units("Can I edit docusaurus.config.js?")[0].kind == "label"


def test_the_sentence_before_tabs_dropped_regression() -> None:
    """ "How can I deploy my site to GitHub Pages?" never quoted "Finally, to deploy your site to
    GitHub Pages, run:": the tabs' label ("Bash:") stood between it and the command, so the sentence
    introduced nothing. It introduces the first tab's label and block."""
    text = (
        "Finally, to deploy your site to GitHub Pages, run:\n\n"
        "Bash: \n\n```bash\nGIT_USER=me yarn deploy\n```\n\n"
        "Windows: \n\n```batch\ncmd /C yarn deploy\n```"
    )
    found = passages_of(text)
    assert found[0].kinds == ("prose", "prose", "code")
    assert found[0].text.startswith("Finally, to deploy your site to GitHub Pages, run:\n\nBash:")
    assert found[0].text.endswith("GIT_USER=me yarn deploy\n```")
    # A longer paragraph ending in a colon is no tab label: the sentence is still not quoted alone.
    prose = "Run this:\n\nThe next command builds the site and serves it:\n\nSome words."
    assert all(not p.text.startswith("Run this:") for p in passages_of(prose))


def test_a_link_shown_as_code_was_cut_to_its_text_regression() -> None:
    """ "For example, a link `[page](../plugins)` on a page with URL `/docs/advanced/routing` will link
    to `/docs/plugins`" was quoted as "a link `page` on a page…": links are quoted as their text, and
    that ran inside code spans too, where the link is the example. A code span is left whole; a link
    whose text is code still loses its source path."""
    text = (
        "For example, a link `[page](../plugins)` on a page with URL `/docs/advanced/routing` will link "
        "to `/docs/plugins`. See [`theme-classic`](../themes/theme-classic.mdx) and ``a ` tick [x](y.md)``."
    )
    (passage,) = passages_of(text)
    assert "`[page](../plugins)`" in passage.text
    assert "See `theme-classic` and" in passage.text
    assert "``a ` tick [x](y.md)``" in passage.text


def test_an_html_comment_shown_as_code_was_quoted_as_empty_code_regression() -> None:
    """ "Use the `<!--truncate-->` marker in your blog post" was quoted as "Use the `` marker": HTML
    comments are dropped from quotes, and that ran inside code spans too. A comment in prose still goes."""
    text = "Use the `<!--truncate-->` marker<!-- a note -->. Above ``<!-- x -->`` is the summary."
    (passage,) = passages_of(text)
    assert passage.text == "Use the `<!--truncate-->` marker. Above ``<!-- x -->`` is the summary."


def test_a_quote_stops_at_the_formula_before_the_sentence_that_defines_its_terms_regression() -> None:
    """ "A simple but powerful model of a sensor is", `z = x + bias + noise`, then "where `x` is the
    true value, the **bias** is…": the last part opens in lower case and was never quoted."""
    text = (
        "A simple but powerful model of a sensor is\n\n```text\nz = x + bias + noise\n```\n\n"
        "where `x` is the true value, the **bias** is an offset that stays roughly constant, and the\n"
        "**noise** changes randomly from one reading to the next.\n\n"
        "Noise is usually described by its standard deviation."
    )
    found = passages_of(text)
    assert found[0].kinds == ("prose", "code", "prose")
    assert found[0].text.endswith("from one reading to the next.")
    assert [p.text for p in found[1:]] == ["Noise is usually described by its standard deviation."]


def test_an_image_alone_is_no_passage_regression() -> None:
    """ "How do I change the widget's colors?" quoted the manual's screenshot caption, "The Bookwise widget
    on the example textbook, light theme": an image's alt text read as something the book says."""
    markdown = (
        "Bookwise answers questions on the page.\n\n"
        "![The Bookwise widget on the example textbook, light theme](../widget/screenshots/light.png)\n\n"
        "[![build status](badge.svg)](https://ci.example.org)\n\n"
        "Click the ![launcher](icon.png) button to open the panel."
    )
    assert [unit.text for unit in split_units(markdown)] == [
        "Bookwise answers questions on the page.",
        "Click the launcher button to open the panel.",
    ]


def test_a_list_of_links_alone_was_quoted_as_titles_that_point_nowhere_regression() -> None:
    """ "Why should reducers be pure?" (redux) quoted "**Discussions** - Reddit: Why Redux Needs Reducers
    To Be Pure Functions", a FAQ's "Further information" list: quotes keep a link's text only, so a list
    of links alone says nothing and leads nowhere. A list that says something beside its links stays."""
    text = (
        "Reducers must be pure functions with no side effects.\n\n**Discussions**\n\n"
        "- [Reddit: Why Redux Needs Reducers To Be Pure Functions](https://www.reddit.com/r/x)\n"
        "- [Stack Overflow: Pure reducers](https://stackoverflow.com/q/1).\n\n"
        "1. [First](a.md)\n2. [Second](b.md)\n\n"
        "- [Immer](https://immerjs.github.io), which lets reducers mutate a draft"
    )
    assert [p.text for p in passages_of(text)] == [
        "Reducers must be pure functions with no side effects.",
        "- Immer, which lets reducers mutate a draft",
    ]


def test_a_pointer_to_another_page_outranked_the_page_it_points_to_regression() -> None:
    """ "How do I put Bookwise behind an nginx proxy?" on the manual quoted the container page's "Put a
    reverse proxy in front for TLS (Deploying behind nginx)" first, not the section it links to: its link
    text held every word of the question. A link to another page of the book says where to read on, so
    its words are not what the passage says (``said``, what term coverage reads); a link off the site,
    and a link shown as code, are the passage's own words."""
    text = (
        "Put a reverse proxy in front for TLS ([Deploying behind nginx](operations.md#nginx)). "
        "See [the nginx docs](https://nginx.org/en/docs/) and `[a](b.md)`.\n\n"
        "- [Proxy headers](operations.md#headers), set by nginx"
    )
    first, second = passages_of(text)
    assert first.text.startswith("Put a reverse proxy in front for TLS (Deploying behind nginx).")
    assert first.pointers == ("Deploying behind nginx",)
    assert "Deploying" not in first.said and "the nginx docs" in first.said and "`[a](b.md)`" in first.said
    assert second.pointers == ("Proxy headers",) and second.said.strip().endswith(", set by nginx")
