"""Small-to-big assembly: reading order, overlap and duplicates removed, the budget spent near the hits."""

from __future__ import annotations

from bookwise.retrieval.assemble import GAP, SectionChunk, assemble, join_overlapping


def words(text: str) -> int:
    return len(text.split())


def test_join_drops_the_text_the_next_chunk_repeats() -> None:
    previous = "One sentence here. Two sentence here. Three sentence here."
    following = "Two sentence here. Three sentence here. Four sentence here."
    assert join_overlapping(previous, following) == (
        "One sentence here. Two sentence here. Three sentence here. Four sentence here."
    )


def test_join_without_overlap_keeps_both_whole() -> None:
    assert join_overlapping("Alpha beta gamma.", "Delta epsilon.") == "Alpha beta gamma.\n\nDelta epsilon."


def test_join_ignores_a_repeat_that_is_not_a_suffix() -> None:
    previous = "Install it with npm. Then run the build. Done."
    following = "Install it with npm. Something else entirely."
    assert join_overlapping(previous, following) == previous + "\n\n" + following


SECTION = [
    SectionChunk(0, "Apples are red. Apricots are orange."),
    SectionChunk(1, "Apricots are orange. Bananas are yellow."),
    SectionChunk(2, "Bananas are yellow. Cherries are dark."),
    SectionChunk(3, "Cherries are dark. Dates are sweet."),
]


def test_whole_section_in_reading_order_whatever_the_input_order() -> None:
    shuffled = [SECTION[2], SECTION[0], SECTION[3], SECTION[1]]
    built = assemble(shuffled, [2], budget_tokens=1000, count_tokens=words)
    assert (
        built.text
        == "Apples are red. Apricots are orange. Bananas are yellow. Cherries are dark. Dates are sweet."
    )
    assert built.chunk_indices == (0, 1, 2, 3)
    assert not built.truncated


def test_duplicate_chunks_are_read_once() -> None:
    copies = [
        *SECTION,
        SectionChunk(2, "Bananas are yellow. Cherries are dark."),
        SectionChunk(9, "Cherries are dark. Dates are sweet.", ""),
    ]
    # index 9 repeats chunk 3's text: the same words twice in one section read once.
    built = assemble(copies, [2], budget_tokens=1000, count_tokens=words)
    assert (
        built.text
        == "Apples are red. Apricots are orange. Bananas are yellow. Cherries are dark. Dates are sweet."
    )


def test_budget_keeps_hits_then_nearest_neighbours_and_marks_gaps() -> None:
    # Each chunk costs 6 words: a budget of 12 holds the hit and one neighbour (the later one first).
    built = assemble(SECTION, [1], budget_tokens=12, count_tokens=words)
    assert built.chunk_indices == (1, 2)
    assert built.text == "…\n\nApricots are orange. Bananas are yellow. Cherries are dark.\n\n…"
    assert built.truncated


def test_two_distant_hits_are_joined_by_an_ellipsis() -> None:
    built = assemble(SECTION, [3, 0], budget_tokens=12, count_tokens=words)
    assert built.chunk_indices == (0, 3)
    assert built.text == "Apples are red. Apricots are orange." + GAP + "Cherries are dark. Dates are sweet."


def test_a_hit_larger_than_the_budget_is_still_returned() -> None:
    built = assemble(SECTION, [2], budget_tokens=1, count_tokens=words)
    assert built.chunk_indices == (2,)


TABLE_SECTION = [
    SectionChunk(0, "Options of the plugin:\n\n| Name | Default |\n| --- | --- |\n| `a` | 1 |\n| `b` | 2 |"),
    SectionChunk(1, "| `c` | 3 |\n| `d` | 4 |"),
    SectionChunk(2, "| `e` | 5 |\n| `f` | 6 |"),
    SectionChunk(3, "Some closing words about the options."),
]


def test_table_rows_without_their_header_regression() -> None:
    """A long front matter table, split by rows, was quoted from its middle without the header row:
    no Markdown table, and no column names. A run that starts inside a table gets its header back."""
    built = assemble(TABLE_SECTION, [2], budget_tokens=16, count_tokens=words)
    assert built.chunk_indices == (2, 3)
    assert built.text.startswith("…\n\n| Name | Default |\n| --- | --- |\n| `e` | 5 |")


def test_adjacent_chunks_and_tables_with_their_own_header_are_left_as_they_are() -> None:
    whole = assemble(TABLE_SECTION, [1], budget_tokens=1000, count_tokens=words)
    assert whole.text.count("| Name | Default |") == 1
    own = [SectionChunk(0, "Intro."), SectionChunk(1, "Prose.\n\n| x | y |\n| - | - |\n| 1 | 2 |")]
    assert "| Name" not in assemble(own, [1], budget_tokens=3, count_tokens=words).text
    prose_first = [SectionChunk(0, "Intro words here."), SectionChunk(1, "| 1 | 2 |")]
    assert assemble(prose_first, [1], budget_tokens=5, count_tokens=words).text == "…\n\n| 1 | 2 |"


def test_a_long_code_block_quoted_as_three_snippets_regression() -> None:
    """The reducer-manager answer led with the tail of a function as its own code block: the chunker
    closes each line group of a long block into a fence, and assembling kept the three fences. Chunks
    that continue one block join into one fence again; two blocks of the section stay two."""
    first = (
        "Create the manager:\n\n```js\nexport function createReducerManager() {\n  const reducers = {}\n```"
    )
    middle = "```js\n  add: (key, reducer) => {\n    reducers[key] = reducer\n  },\n```"
    last = "```js\n  return {add}\n}\n```"
    chunks = [
        SectionChunk(0, first, "a", char_start=0, char_end=400),
        SectionChunk(1, middle, "b", char_start=20, char_end=400),
        SectionChunk(2, last, "c", char_start=20, char_end=400),
        SectionChunk(3, "```js\nconst store = createStore(reduce)\n```", "d", char_start=401, char_end=450),
    ]
    built = assemble(chunks, [2], budget_tokens=1000, count_tokens=lambda t: len(t.split()))
    assert built.text == (
        "Create the manager:\n\n```js\nexport function createReducerManager() {\n  const reducers = {}\n"
        "  add: (key, reducer) => {\n    reducers[key] = reducer\n  },\n  return {add}\n}\n```\n\n"
        "```js\nconst store = createStore(reduce)\n```"
    )


def test_an_admonition_label_read_twice_regression() -> None:
    """The chunker repeats a chunk's last block in the next one; a "**Tip**" label is shorter than the
    smallest overlap that was looked for, so the assembled section read "**Tip**" twice over its
    body. A block repeated whole is the overlap, however short."""
    chunks = [
        SectionChunk(0, "Install the package.\n\n**Tip**", "a", char_start=0, char_end=40),
        SectionChunk(1, "**Tip**\n\nPlease use the most recent version.", "b", char_start=30, char_end=80),
    ]
    built = assemble(chunks, [1], budget_tokens=1000, count_tokens=words)
    assert built.text == "Install the package.\n\n**Tip**\n\nPlease use the most recent version."
    # Two labels in a row that are not the same block are both kept.
    other = [SectionChunk(0, "Intro.\n\n**Tip**"), SectionChunk(1, "**Tip** and more words.")]
    assert assemble(other, [1], budget_tokens=1000, count_tokens=words).text.count("**Tip**") == 2


def test_a_table_cut_by_rows_read_as_two_tables_regression() -> None:
    """An option table whose rows are longer than the overlap was cut with nothing repeated, and the
    chunks were joined by a blank line: the rows after it were a second table without a header, which
    renders as text full of pipes. Chunks that continue one block join as that block: rows by a line
    break, list items by a line break, a paragraph's sentences by a space."""
    header = "| Name | Description |\n| --- | --- |\n| `limit` | Limits the feed. |"
    table = [
        SectionChunk(0, f"Options:\n\n{header}", "a", char_start=10, char_end=500),
        SectionChunk(1, "| `type` | Which feeds to write. |", "b", char_start=10, char_end=500),
    ]
    assert assemble(table, [1], budget_tokens=1000, count_tokens=words).text == (
        f"Options:\n\n{header}\n| `type` | Which feeds to write. |"
    )
    items = [
        SectionChunk(0, "Flags:\n\n- `a`: first.\n- `b`: second.", "a", char_start=0, char_end=90),
        SectionChunk(1, "- `c`: third.", "b", char_start=8, char_end=90),
    ]
    assert assemble(items, [1], budget_tokens=1000, count_tokens=words).text.endswith(
        "second.\n- `c`: third."
    )
    prose = [
        SectionChunk(0, "A long paragraph starts.", "a", char_start=0, char_end=90),
        SectionChunk(1, "It goes on here.", "b", char_start=0, char_end=90),
    ]
    assert assemble(prose, [1], budget_tokens=1000, count_tokens=words).text == (
        "A long paragraph starts. It goes on here."
    )
    apart = [
        SectionChunk(0, "One block.", "a", char_start=0, char_end=10),
        SectionChunk(1, "| a | b |", "b", char_start=12, char_end=20),
    ]
    assert assemble(apart, [1], budget_tokens=1000, count_tokens=words).text == "One block.\n\n| a | b |"
