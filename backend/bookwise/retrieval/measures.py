"""Questions that ask for a measure or a formula, and the passages that state one.

"How long should the lab take?" is answered by "Allow about an hour", which holds none of the
question's words but the lab: what the question asks for is a duration, and the passage states one.
A passage that states the measure asked for ("how long": a duration or a length; "how often": a rate;
"how fast": a speed; "how far": a distance; "how much": an amount, "400 MB") holds the question's word
for it, as term coverage counts; the word alone does not ("the figures move as much as between sizes").
A duration or a length counts in words ("an hour", "60 seconds", "12 metres"), not in a unit's symbol:
a technical book writes "0.02 s" and "100 ms" in every other paragraph, about the system, while how
long something takes the reader is written out.

A question that asks for a formula or an equation ("kalman gain formula") asks for a passage that
writes one: a line with "=" in a fence of text or math, or an equation in inline code or TeX with an
operator on its right side. "The **Kalman gain** `K` is between 0 and 1" names the gain; "correct:
K = P⁻ / (P⁻ + R)" is its formula. A program's assignments are not formulas, nor is "`Kp = 2`".
"""

from __future__ import annotations

import re

_NUMBER = r"(?:\d+(?:[.,]\d+)?|\d*\.\d+)(?:\s*(?:to|-|–)\s*\d+(?:[.,]\d+)?)?"
_SPELLED = r"(?:an?|one|two|three|four|five|ten|a few|several|half an?|about an?)"
_TIME_WORDS = r"(?:milliseconds?|seconds?|minutes?|hours?|days?|weeks?|months?|years?)"
_TIME_UNITS = rf"(?:{_TIME_WORDS}|ms|µs|us|ns|s|sec|secs|min|mins|h|hrs?)"
_LENGTH_WORDS = (
    r"(?:millimetres?|millimeters?|centimetres?|centimeters?|metres?|meters?|kilometres?|kilometers?"
    r"|inches|inch|feet|foot|miles?|characters?|words|lines|pages|tokens|pixels)"
)
_RATE_UNITS = r"(?:Hz|kHz|MHz|times (?:a|per) \w+|per (?:second|minute|hour|day|week|cycle|step)|/s\b)"
_SPEED_UNITS = r"(?:m/s|rad/s|km/h|mph|rpm|cm/s|mm/s|°/s|deg/s)"

_DURATION = re.compile(rf"(?:\b{_NUMBER}|\b{_SPELLED})\s+{_TIME_WORDS}\b", re.IGNORECASE)
_LENGTH = re.compile(rf"(?:\b{_NUMBER}|\b{_SPELLED})\s+{_LENGTH_WORDS}\b", re.IGNORECASE)
_RATE = re.compile(rf"\b{_NUMBER}\s*{_RATE_UNITS}|\bevery\s+(?:{_NUMBER}\s*)?{_TIME_UNITS}\b|\b\d+ times\b")
_SPEED = re.compile(rf"\b{_NUMBER}\s*{_SPEED_UNITS}")
# An amount: a number with its unit or a percentage ("400 MB", "190 bytes", "5 %", "$20"), not a bare
# number ("`Kp = 2`", "step 3").
_BYTES = r"(?:[KMGT]i?B|bytes?|kilobytes?|megabytes?|gigabytes?)"
_AMOUNT = re.compile(rf"[$€£]\s?{_NUMBER}|\b{_NUMBER}\s*(?:%|{_BYTES}\b)")

# The question's word for the measure ("how long"), and what states one.
_ASKED = {
    "long": (_DURATION, _LENGTH),
    "often": (_RATE,),
    "frequently": (_RATE,),
    "fast": (_SPEED, _RATE),
    "far": (_LENGTH,),
    "much": (_AMOUNT,),
}
_FORMULA_WORDS = ("formula", "formulas", "formulae", "equation", "equations")
_FORMULA = rf"(?:{'|'.join(_FORMULA_WORDS)})"
# Asked for ("the formula for κ", "what's the equation of the arc?", "what equations does the EKF
# use?", or typed as a search, "kalman gain formula"), not only named ("should I use degrees in the
# formulas?", "without any formulas").
_FORMULA_ASKED = re.compile(
    rf"\b{_FORMULA}\s+(?:for|of|that|to|behind)\b"
    rf"|^\W*(?:what(?:'s|\s+is|\s+are)?|which|give\s+me|show\s+me|write(?:\s+down)?)\s+"
    rf"(?:the\s+|a\s+)?{_FORMULA}\b",
    re.IGNORECASE,
)
_SEARCHED_FORMULA = re.compile(rf"^\W*(?:[\w-]+\s+){{1,4}}{_FORMULA}\W*$", re.IGNORECASE)
# A fence of text or math (or none) with a line "left = right"; inline code or TeX "x = a·b" with an
# operator on its right side.
_FORMULA_FENCE = re.compile(
    r"^```(?:text|math|latex|tex)?[ \t]*\n(?:(?!```)[^\n]*\n)*?[^\n`]*\S\s*=\s*\S", re.MULTILINE
)
# An operator: "+", "·", "×", "−", "√", a spaced "-" or "/", or "/" before a bracket; not a unit's
# "m/s" or "m²".
_OPERATOR = r"(?:[+*·×−√]|\s[-/]\s|/\s*\()"
_FORMULA_INLINE = re.compile(rf"(?:`|\$)[^`$\n]*\w\s*=\s*[^`$\n]*{_OPERATOR}[^`$\n]*(?:`|\$)")
_HOW = re.compile(rf"\bhow\s+({'|'.join(_ASKED)})\b", re.IGNORECASE)


def measures_asked(question: str) -> list[str]:
    """The words of ``question`` that ask for a measure: "long" in "how long does it take?"."""
    return list(dict.fromkeys(word.lower() for word in _HOW.findall(question)))


def states_measure(text: str, word: str) -> bool:
    """Whether ``text`` states the measure that "how ``word``" asks for."""
    return any(pattern.search(text) for pattern in _ASKED.get(word, ()))


def asks_for_formula(question: str) -> bool:
    """Whether ``question`` asks for a formula or an equation ("kalman gain formula")."""
    return bool(_FORMULA_ASKED.search(question) or _SEARCHED_FORMULA.match(question))


def writes_formula(text: str) -> bool:
    """Whether ``text`` writes a formula: "K = P⁻ / (P⁻ + R)" in a text fence, "`κ = 2·y_L / L²`"."""
    return bool(_FORMULA_FENCE.search(text) or _FORMULA_INLINE.search(text))
