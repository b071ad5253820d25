"""github-slugger 1.5.0, as Docusaurus 3 uses it for heading ids (one instance per MDX file)."""

from __future__ import annotations

import unicodedata

_REMOVED_CATEGORIES = frozenset(
    {
        "No",
        "Pe",
        "Pf",
        "Pi",
        "Ps",
        "Po",
        "Pd",
        "Sc",
        "Sk",
        "Sm",
        "So",
        "Cc",
        "Co",
        "Cf",
        "Cn",
        "Cs",
        "Zl",
        "Zp",
        "Zs",
    }
)
# Symbols (So) that Unicode also marks Alphabetic; github-slugger's regex keeps them.
_KEPT_SYMBOL_RANGES = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


def _is_removed(ch: str) -> bool:
    if ch in " -":
        return False
    cp = ord(ch)
    if any(lo <= cp <= hi for lo, hi in _KEPT_SYMBOL_RANGES):
        return False
    return unicodedata.category(ch) in _REMOVED_CATEGORIES


def slugify(value: str, *, maintain_case: bool = False) -> str:
    """The slug of one string, without duplicate tracking."""
    text = value if maintain_case else value.lower()
    return "".join(ch for ch in text if not _is_removed(ch)).replace(" ", "-")


class GithubSlugger:
    """Tracks slugs already produced so duplicates get ``-1``, ``-2``… exactly as github-slugger does."""

    def __init__(self) -> None:
        self._occurrences: dict[str, int] = {}

    def slug(self, value: str, *, maintain_case: bool = False) -> str:
        slug = slugify(value, maintain_case=maintain_case)
        original = slug
        while slug in self._occurrences:
            self._occurrences[original] += 1
            slug = f"{original}-{self._occurrences[original]}"
        self._occurrences[slug] = 0
        return slug
