import re

from bookwise.ingest.chunking import chunk_blocks
from bookwise.ingest.models import Block


def count(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def sentences(n: int, words: int = 9) -> str:
    return " ".join(
        f"Sentence {i} " + " ".join(f"w{i}x{j}" for j in range(words - 2)) + "." for i in range(n)
    )


def test_chunks_respect_the_budget_and_cover_all_text() -> None:
    blocks = (Block(sentences(40), 0, 100), Block(sentences(10), 100, 200))
    chunks = chunk_blocks(blocks, budget=60, overlap=12, min_tokens=5, hard_limit=60, count=count)
    assert len(chunks) > 3
    assert all(count(c.text) <= 60 for c in chunks)
    joined = " ".join(c.text for c in chunks)
    for i in range(40):
        assert f"Sentence {i} " in joined


def test_consecutive_chunks_overlap_by_trailing_sentences() -> None:
    chunks = chunk_blocks(
        (Block(sentences(30), 0, 1),), budget=50, overlap=15, min_tokens=0, hard_limit=50, count=count
    )
    for previous, current in zip(chunks, chunks[1:], strict=False):
        last_sentence = previous.text.split(". ")[-1].rstrip(".")
        assert last_sentence in current.text


def test_tiny_tail_is_merged_into_the_previous_chunk() -> None:
    blocks = (Block(sentences(5), 0, 1), Block("Tail.", 1, 2))
    chunks = chunk_blocks(blocks, budget=50, overlap=0, min_tokens=5, hard_limit=60, count=count)
    assert chunks[-1].text.endswith("Tail.")
    assert all(c.text != "Tail." for c in chunks)


def test_long_code_block_is_split_into_valid_fences() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(80)) + "\n```"
    chunks = chunk_blocks(
        (Block(code, 0, len(code), "code"),), budget=80, overlap=0, min_tokens=0, hard_limit=80, count=count
    )
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.text.startswith("```python\n") and chunk.text.endswith("\n```")
        assert count(chunk.text) <= 80


def test_a_giant_word_is_cut_by_characters() -> None:
    blob = "x" * 5000
    chunks = chunk_blocks(
        (Block(blob, 0, 5000),),
        budget=50,
        overlap=0,
        min_tokens=0,
        hard_limit=50,
        count=lambda s: len(s) // 10 + 1,
    )
    assert "".join(c.text.replace("\n", "") for c in chunks) == blob
    assert all(len(c.text) // 10 + 1 <= 50 for c in chunks)


def test_no_blocks_no_chunks() -> None:
    assert chunk_blocks((), budget=50, overlap=5, min_tokens=5, hard_limit=50, count=count) == []


def test_a_long_list_cut_inside_an_item_regression() -> None:
    """The Ecosystem page's table of contents (a nested list with no full stops) was cut between words
    when it outgrew a chunk: a quoted chunk ended on "  - ", its item's text in the next chunk. A long
    list is cut between its items, then between sentences within an item."""
    items = [f"- [Topic {i}](#topic-{i})\n  - [Sub {i}](#sub-{i})" for i in range(30)]
    items.append("- A long item. " + " ".join(f"Sentence {i} ends here." for i in range(20)))
    text = "\n".join(items)
    chunks = chunk_blocks(
        (Block(text, 0, len(text)),), budget=60, overlap=0, min_tokens=0, hard_limit=60, count=count
    )
    assert len(chunks) > 3
    item_start = re.compile(r"^\s*- \[(Topic|Sub) \d+\]\(#(topic|sub)-\d+\)$")
    for chunk in chunks:
        lines = chunk.text.split("\n")
        for line in lines:
            assert (
                item_start.match(line) or line.startswith("- A long item.") or line.startswith("Sentence")
            ), line
        assert count(chunk.text) <= 60
    assert any(c.text.startswith("Sentence") for c in chunks)  # the long item is cut between sentences


def test_overlap_opened_a_chunk_mid_list_item_regression() -> None:
    """The `future` options list was cut inside an item, and the next chunk opened on that item's last
    sentence ("Using a Node.js worker thread pool…") without its `- ssgWorkerThreads:` marker. The
    section read as a stray paragraph glued to the items after it, and was quoted as one. A chunk now
    ends before an item that does not fit, and the overlap starts at an item or is left out."""
    tail = "It takes a value. " + "More words here. " * 3
    items = [f"- `option{i}`: What option {i} does. {tail}" for i in range(12)]
    text = "\n".join(items)
    chunks = chunk_blocks(
        (Block(text, 0, len(text)),), budget=70, overlap=20, min_tokens=0, hard_limit=70, count=count
    )
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("- `option"), chunk.text[:60]
    for item in items:
        assert any(item.strip() in chunk.text for chunk in chunks), item


def test_overlap_repeats_whole_short_items() -> None:
    items = [f"- Item {i} says one thing. And one more." for i in range(30)]
    text = "\n".join(items)
    chunks = chunk_blocks(
        (Block(text, 0, len(text)),), budget=50, overlap=15, min_tokens=0, hard_limit=50, count=count
    )
    assert len(chunks) > 3
    for previous, current in zip(chunks, chunks[1:], strict=False):
        assert current.text.startswith("- Item ")
        assert previous.text.split("\n")[-1] in current.text


def test_a_paragraph_overlap_still_repeats_whole_sentences() -> None:
    text = sentences(30)
    chunks = chunk_blocks(
        (Block(text, 0, 1),), budget=50, overlap=15, min_tokens=0, hard_limit=50, count=count
    )
    assert all(c.text.startswith("Sentence ") for c in chunks)
    assert all(c.text.split(" ")[1] != chunks[0].text.split(" ")[1] for c in chunks[1:])


def test_a_chunk_opened_inside_a_code_span_regression() -> None:
    """The manual's "A client's own `X-Request-ID` (8 to 64 of `A-Z a-z 0-9 . _ -`) is for correlation
    only" was cut after "0-9 ." (a full stop, a space, then "_"), so a chunk and the quote taken from it
    opened on "_ -`) is for correlation only". A sentence never ends inside a code span."""
    target = "A client's own `X-Request-ID` (8 to 64 of `A-Z a-z 0-9 . _ -`) is for correlation only."
    paragraph = f"{sentences(1)} {target} {sentences(6)}"
    chunks = chunk_blocks(
        (Block(paragraph, 0, 1),), budget=45, overlap=0, min_tokens=0, hard_limit=60, count=count
    )
    assert not any(c.text.startswith("_ -`)") for c in chunks)
    assert [c.text for c in chunks if target in c.text][0].startswith(target)
