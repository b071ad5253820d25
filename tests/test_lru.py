"""The bounded LRU the caches share: the least recently used entry goes first, and a value taken out
is taken once."""

from __future__ import annotations

import threading

from bookwise.lru import Lru


def test_the_least_recently_used_entry_is_forgotten_past_the_capacity() -> None:
    kept: Lru[str, int] = Lru(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1  # used: "b" is the oldest now
    kept.put("c", 3)
    assert (kept.get("a"), kept.get("b"), kept.get("c"), len(kept)) == (1, None, 3, 2)
    kept.capacity = 1  # read at the next insertion
    kept.put("d", 4)
    assert (kept.get("c"), kept.get("d"), len(kept)) == (None, 4, 1)


def test_a_batch_lookup_uses_what_it_finds_and_names_each_missing_key_once() -> None:
    kept: Lru[str, int] = Lru(3)
    for key, value in (("a", 1), ("b", 2), ("c", 3)):
        kept.put(key, value)
    found, missing = kept.get_many(["x", "a", "y", "x", "a"])
    assert (found, missing) == ({"a": 1}, ["x", "y"])
    kept.put("d", 4)  # "a" was used by the lookup: "b" is the oldest
    assert (kept.get("a"), kept.get("b"), len(kept)) == (1, None, 3)
    kept.clear()
    assert (kept.get("a"), len(kept), kept.get_many(["a"])) == (None, 0, ({}, ["a"]))


def test_a_value_popped_by_several_threads_at_once_is_taken_by_one() -> None:
    kept: Lru[str, bool] = Lru(10)
    kept.put("answer", True)
    start = threading.Barrier(8)
    taken: list[bool | None] = []

    def take() -> None:
        start.wait()
        taken.append(kept.pop("answer"))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken, key=bool) == [None] * 7 + [True]
    assert kept.pop("answer") is None and len(kept) == 0
