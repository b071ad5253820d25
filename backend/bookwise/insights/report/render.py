"""The report as one self-contained HTML page: no script, no CDN, no web font; charts are inline SVG.

Questions are readers' input, hence hostile: the template autoescapes everything, and a URL becomes a
link only when it is http(s) or site-relative (never ``javascript:`` or ``data:``). The pages readers
asked from are their input too: only their path is shown, linked on the book's own site.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import jinja2

from bookwise.insights.records import site_path
from bookwise.insights.report import charts
from bookwise.insights.report.build import Report

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("bookwise.insights.report", "templates"),
    autoescape=True,  # every value, whatever the template's name
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def safe_href(url: str | None, base: str = "") -> str | None:
    """The URL if a browser may follow it from the report, else None (shown as text).

    A site-relative URL is joined to the site's address (``base``) when known: the report is often
    opened from a file, where ``/docs/x`` would lead nowhere.
    """
    if not url:
        return None
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return url
    if not parts.scheme and not parts.netloc and url.startswith("/"):
        return urljoin(base, url) if safe_href(base) else url
    return None


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


_ENV.filters["href"] = safe_href
_ENV.filters["percent"] = _percent
_ENV.filters["site_path"] = site_path  # rows logged before pages were kept as paths, too


def render_html(report: Report, *, title: str = "Bookwise insights") -> str:
    """The whole report as one HTML document (write it to a file, or serve it as text/html)."""
    return _ENV.get_template("report.html.j2").render(
        title=title,
        report=report,
        s=report.summary,
        per_day=charts.questions_per_day(report.days),
        outcomes=charts.outcomes_per_day(report.days),
        pages=charts.page_bars(report.cited_pages[:12]),
        colours=charts.OUTCOME_COLOURS,
    )
