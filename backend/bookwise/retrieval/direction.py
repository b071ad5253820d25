"""Questions that ask to go one way, and sections that go the other.

A textbook often derives a conversion both ways, in sections headed "From wheel speeds to body
velocity" and "From body velocity to wheel speeds", whose passages share every word. "How do I
convert wheel speeds to linear and angular velocity?" is answered by the first; the second gives
the inverse formula, which a reader would apply the wrong way round. A question asks for a direction
when it says "from X to Y", "convert (turn, map, transform) X to Y" or "compute (get, find, derive)
Y from X". A heading goes one way when it reads "From X to Y"; under a heading that reads none, a
passage goes the way its own prose says in one of those forms ("The driver node converts each command
into wheel speeds"). It goes the other way from the question when more of the question's source
words are in its target, and of the question's target words in its source, than the other way
about, and at least two: "velocity" alone does not make "from a path to velocity commands" the
inverse of "From body velocity to wheel speeds".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bookwise.retrieval.topics import stems

OTHER_WAY_WORDS = 2  # shared words that make a passage go a way: "velocity" alone does not
Way = Literal[-1, 0, 1]
AGAINST: Way = -1
NEITHER: Way = 0
ALONG: Way = 1
_SIDE = r"[^?.!;:,()]+?"  # one side of a conversion: words up to the end of the clause
_END = r"(?=\s*(?:[?.!;:,()]|$|\s(?:and then|so that|in order|with|using|for|when|if|by)\b))"
_CONVERT = r"(?:convert|turn|transform|translate|map)(?:s|ed|ing)?|mapping|mapped"
_DERIVE = (
    r"(?:compute|calculate|derive|estimate)[sd]?|(?:comput|calculat|deriv|estimat)ing|"
    r"(?:get|find|obtain|recover)s?|getting|finding|(?:obtain|recover)(?:ed|ing)|work(?:s|ed)? out"
)
_FROM_TO = re.compile(rf"\bfrom\s+(?P<source>{_SIDE})\s+(?:to|into)\s+(?P<target>{_SIDE}){_END}", re.I)
_CONVERTS = re.compile(
    rf"\b(?:{_CONVERT})\s+(?P<source>{_SIDE})\s+(?:to|into)\s+(?P<target>{_SIDE}){_END}", re.I
)
_DERIVES = re.compile(rf"\b(?:{_DERIVE})\s+(?P<target>{_SIDE})\s+from\s+(?P<source>{_SIDE}){_END}", re.I)
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# A docstring's first line, or a comment on a line of its own (#, //).
_COMMENT = re.compile(r'^[ \t]*(?:"""|\'\'\'|#|//)[ \t]*([^\n"\']+)', re.M)
_PARENTHESES = re.compile(r"\s*\([^()]*\)")
_COMMENT_WAY = re.compile(r"^\W*(?:from\s+)?(?P<source>.+?)\s+(?:to|into)\s+(?P<target>.+?)\W*$", re.I)
_HEADING = re.compile(r"^\W*from\s+(?P<source>.+?)\s+(?:to|into)\s+(?P<target>.+?)\W*$", re.I)
# "the other way round?", "and the reverse?", "vice versa?", "what about the inverse?"
_OTHER_WAY = re.compile(
    r"^\W*(?:and|but|now|ok(?:ay)?|so)?\W*(?:what about|how about|how do i do|can you do)?\s*"
    r"(?:the\s+)?(?:other way(?: a?round)?|reverse(?: direction)?|opposite(?: direction| way)?|"
    r"vice versa|inverse|other direction|backwards?)\W*$",
    re.I,
)


@dataclass(frozen=True)
class Direction:
    source: str  # as written: "wheel speeds"
    target: str

    def reversed(self) -> Direction:
        return Direction(self.target, self.source)

    def question(self) -> str:
        return f"from {self.source} to {self.target}"


def direction_asked(question: str) -> Direction | None:
    """The conversion ``question`` asks for, if any: "convert wheel speeds to body velocity" goes from
    wheel speeds to body velocity, and so does "compute body velocity from wheel speeds"."""
    found = (_read(pattern.search(question)) for pattern in (_FROM_TO, _CONVERTS, _DERIVES))
    return next((direction for direction in found if direction is not None), None)


def way_of(asked: Direction, heading: str, text: str = "") -> Way:
    """Which way a passage converts, against ``asked``: as its section's ``heading`` reads ("From X to
    Y"), or, under a heading that reads no direction, as its own prose says ("The driver node converts
    each command into wheel speeds"; "Going the other way, from world coordinates into the body frame,
    uses…") and its programs' docstrings and comments read ("Body velocity to wheel speeds"; not the
    code itself, whose names go every way). ``ALONG`` or ``AGAINST`` the question, or ``NEITHER`` (no
    direction, or both)."""
    went = _read(_HEADING.match(heading))
    if went is not None:
        return _way(asked, went)
    prose = _FENCE.sub(" ", text)
    said = [_read(found) for pattern in (_FROM_TO, _CONVERTS, _DERIVES) for found in pattern.finditer(prose)]
    said += [_read(_COMMENT_WAY.match(line)) for line in _comments(text)]
    ways = {_way(asked, went) for went in said if went is not None} - {NEITHER}
    return ways.pop() if len(ways) == 1 else NEITHER


def _read(found: re.Match[str] | None) -> Direction | None:
    """The direction a match of one of the patterns above reads, when both its sides name something."""
    if found is None:
        return None
    source, target = found.group("source").strip(), found.group("target").strip()
    return Direction(source, target) if stems(source) and stems(target) else None


def _comments(text: str) -> list[str]:
    """The first line of each docstring and the comments of ``text``'s code, without their
    parentheses: a program says which way it converts there ("Body velocity (m/s, rad/s) to wheel
    speeds (rad/s), returned as (left, right)." reads "Body velocity to wheel speeds")."""
    lines = [m.group(1) for fence in _FENCE.findall(text) for m in _COMMENT.finditer(fence)]
    return [_PARENTHESES.sub("", line).split(",")[0].strip() for line in lines]


def _way(asked: Direction, went: Direction) -> Way:
    source, target = set(stems(asked.source)), set(stems(asked.target))
    from_, to = set(stems(went.source)), set(stems(went.target))
    along = len(source & from_) + len(target & to)
    against = len(source & to) + len(target & from_)
    if against >= OTHER_WAY_WORDS and against > along:
        return AGAINST
    if along >= OTHER_WAY_WORDS and along > against:
        return ALONG
    return NEITHER


def asks_the_other_way(question: str) -> bool:
    """Whether ``question`` asks for the previous conversion reversed: "and the other way round?"."""
    return bool(_OTHER_WAY.match(question))
