"""Chart geometry for the HTML report: plain rectangles and ticks, drawn as inline SVG by the template.

The numbers are computed here (testable, no JavaScript in the report); the template only places
them, escaped like everything else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bookwise.insights.report.aggregate import Cited, Day

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 10, 30  # margins for the axes' labels
OUTCOME_COLOURS = {
    "answered": "#2e7d32",
    "not_covered": "#c62828",
    "not_in_selection": "#ef6c00",
    "error": "#6a1b9a",
    "client_disconnected": "#9e9e9e",
}


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    value: int
    label: str  # the day, or the page
    series: str = ""  # the outcome of a stacked segment
    colour: str = "#1565c0"


@dataclass(frozen=True)
class Tick:
    position: float
    text: str
    anchor: str = "end"


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    baseline: float  # the y of the x axis
    left: float


def _step(value: int) -> int:
    """A round tick step (1, 2 or 5 × 10ⁿ) giving at most four steps up to ``value``."""
    quarter = max(value, 1) / 4
    magnitude: int = 10 ** max(int(math.floor(math.log10(quarter))), 0) if quarter >= 1 else 1
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= quarter)


def _nice_max(value: int) -> int:
    """The top of the y axis: ``value`` rounded up to a whole number of round steps."""
    step = _step(value)
    return max(step * math.ceil(max(value, 1) / step), 1)


def _y_ticks(top: int, plot_height: float) -> list[Tick]:
    step = _step(top)
    return [Tick(TOP + plot_height - plot_height * v / top, str(v)) for v in range(0, top + 1, step)]


def _x_ticks(days: Sequence[Day], slot: float) -> list[Tick]:
    if not days:
        return []
    picks = sorted({0, len(days) // 2, len(days) - 1}) if len(days) > 2 else list(range(len(days)))
    return [Tick(LEFT + slot * (i + 0.5), days[i].day.isoformat(), _anchor(i, len(days))) for i in picks]


def _anchor(index: int, count: int) -> str:
    # The first and last dates sit at the plot's edges: aligned inward, they are not cut off.
    if count > 2 and index == 0:
        return "start"
    return "end" if count > 2 and index == count - 1 else "middle"


def questions_per_day(days: Sequence[Day]) -> Chart:
    """Bars of questions per day (empty days included, as gaps in the bars)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = _nice_max(max((d.total for d in days), default=0))
    slot = plot_w / max(len(days), 1)
    bars = [
        Bar(
            x=LEFT + slot * i + slot * 0.1,
            y=TOP + plot_h - plot_h * d.total / top,
            width=max(slot * 0.8, 0.5),
            height=plot_h * d.total / top,
            value=d.total,
            label=d.day.isoformat(),
        )
        for i, d in enumerate(days)
    ]
    return Chart(WIDTH, HEIGHT, bars, _x_ticks(days, slot), _y_ticks(top, plot_h), TOP + plot_h, LEFT)


def outcomes_per_day(days: Sequence[Day]) -> Chart:
    """Stacked bars: each day's answers split by outcome, answered at the bottom."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = _nice_max(max((d.total for d in days), default=0))
    slot = plot_w / max(len(days), 1)
    bars = []
    for i, d in enumerate(days):
        base = float(TOP + plot_h)
        for outcome, colour in OUTCOME_COLOURS.items():
            count = d.outcomes.get(outcome, 0)
            if not count:
                continue
            height = plot_h * count / top
            base -= height
            x = LEFT + slot * i + slot * 0.1
            bars.append(Bar(x, base, max(slot * 0.8, 0.5), height, count, d.day.isoformat(), outcome, colour))
    return Chart(WIDTH, HEIGHT, bars, _x_ticks(days, slot), _y_ticks(top, plot_h), TOP + plot_h, LEFT)


def page_bars(rows: Sequence[Cited], *, width: int = WIDTH, row_height: int = 22) -> Chart:
    """Horizontal bars, one per page, longest first (the label is drawn by the template)."""
    label_w = 260
    plot_w = width - label_w - 50
    top = max((r.count for r in rows), default=1)
    bars = [
        Bar(
            x=label_w,
            y=n * row_height + 4,
            width=max(plot_w * r.count / top, 1.0),
            height=row_height - 8,
            value=r.count,
            label=r.title,
            series=r.url,
        )
        for n, r in enumerate(rows)
    ]
    return Chart(width, row_height * max(len(rows), 1) + 4, bars, [], [], 0.0, label_w)
