"""Citation markers in a streamed answer: ``[n]`` kept when source n exists, dropped otherwise.

The model's text arrives in small deltas, and a marker can be split across them (``"[1"`` then
``"2]"``). ``CitationFilter`` holds back only a trailing fragment that could still become a marker,
so text reaches the reader as soon as it is known to be safe; groups such as ``[1, 3]`` are split
into ``[1][3]`` with the invalid numbers removed. Markdown links (``[text](url)``) are untouched:
only brackets holding numbers count as markers.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_PARTIAL = re.compile(r"\[[\d,\s]{0,15}$")  # could still grow into a marker


class CitationFilter:
    def __init__(self, source_count: int) -> None:
        self.source_count = source_count
        self.used: list[int] = []  # valid source numbers, in order of first use
        self.dropped = 0  # markers (numbers) removed because no such source exists
        self._pending = ""
        self._last = ""  # the last character already shown

    def _rewrite(self, match: re.Match[str]) -> str:
        before = match.string[match.start() - 1] if match.start() else self._last
        numbers = [int(part) for part in match.group(1).split(",")]
        if (before.isalnum() or before == "_") and not all(1 <= n <= self.source_count for n in numbers):
            return match.group(0)  # ``items[0]``: an index in code, not a citation
        kept = []
        for number in numbers:
            if 1 <= number <= self.source_count:
                kept.append(number)
                if number not in self.used:
                    self.used.append(number)
            else:
                self.dropped += 1
        return "".join(f"[{n}]" for n in kept)

    def feed(self, delta: str) -> str:
        """The part of the text so far that can be shown, with markers checked."""
        text = self._pending + delta
        partial = _PARTIAL.search(text)
        if partial is not None:
            text, self._pending = text[: partial.start()], text[partial.start() :]
        else:
            self._pending = ""
        return self._shown(_MARKER.sub(self._rewrite, text))

    def flush(self) -> str:
        """The held-back tail at the end of the stream (an unfinished ``[12`` is plain text)."""
        text, self._pending = self._pending, ""
        return self._shown(_MARKER.sub(self._rewrite, text))

    def _shown(self, text: str) -> str:
        if text:
            self._last = text[-1]
        return text


def cited_numbers(text: str) -> list[int]:
    """Source numbers cited in a finished text, in order of first use."""
    seen: list[int] = []
    for match in _MARKER.finditer(text):
        for part in match.group(1).split(","):
            if int(part) not in seen:
                seen.append(int(part))
    return seen


def strip_markers(text: str) -> str:
    """The text without its citation markers (to compare it with the book's own sentences)."""
    return _MARKER.sub("", text)
