"""The widget's copies of the server's limits, checked against their source.

The widget reads the request limits from ``GET /api/config``; its own copy is what it uses until, or if
never, the server has told (widget/src/limits.js ``DEFAULT_LIMITS``), so it must be the server's
defaults. The feedback answer's length is not served: the widget cuts to the API schema's bound.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bookwise.api.schemas import FeedbackBody
from bookwise.settings import Settings
from bookwise.validation import RequestLimits

LIMITS_JS = Path(__file__).resolve().parents[2] / "widget" / "src" / "limits.js"
READ = """
const { DEFAULT_LIMITS, FEEDBACK_ANSWER_CHARS } = await import(process.argv[1]);
console.log(JSON.stringify({ defaults: DEFAULT_LIMITS, feedback: FEEDBACK_ANSWER_CHARS }));
"""


def widget_limits() -> dict[str, object]:
    done = subprocess.run(
        ["node", "--input-type=module", "-e", READ, LIMITS_JS.as_uri()],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    read: dict[str, object] = json.loads(done.stdout)
    return read


def test_the_widgets_fallback_limits_are_the_servers_defaults() -> None:
    served = RequestLimits.from_settings(Settings.model_construct()).to_dict()
    defaults = widget_limits()["defaults"]
    assert isinstance(defaults, dict) and defaults, defaults
    assert defaults == {name: served[name] for name in defaults}


def test_the_widget_cuts_a_voted_answer_to_what_the_feedback_api_takes() -> None:
    answer = FeedbackBody.model_json_schema()["properties"]["answer"]
    assert widget_limits()["feedback"] == answer["maxLength"]
