"""The test suite ignores the developer's environment: a `BOOKWISE_LLM_BASE_URL` exported
in the shell turned an extractive-answer test into a model call, and `bookwise.toml` was read from
the working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bookwise.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
EXTRACTIVE_TEST = (
    "tests/api/test_chat_stream.py::test_normal_extractive_answer_streams_meta_sources_tokens_done"
)


def test_settings_in_a_test_ignore_the_shell_and_the_working_directory() -> None:
    settings = Settings()
    assert settings.llm_base_url is None and settings.retrieval_top_k == 5
    assert settings.max_question_chars == 2000 and not Path("bookwise.toml").exists()


def test_an_exported_llm_url_and_a_bookwise_toml_in_cwd_do_not_reach_the_tests(tmp_path: Path) -> None:
    unreachable = "http://127.0.0.1:9/v1"  # would turn extractive answers into failing model calls
    (tmp_path / "bookwise.toml").write_text(f'llm_base_url = "{unreachable}"\nmax_question_chars = 5\n')
    env = os.environ | {"BOOKWISE_LLM_BASE_URL": unreachable, "BOOKWISE_RETRIEVAL_TOP_K": "1"}
    probe = (
        f"{ROOT}/tests/test_hermetic.py::test_settings_in_a_test_ignore_the_shell_and_the_working_directory"
    )
    run = subprocess.run(  # a temporary folder of its own: see test_harness
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'tmp'}",
         f"{ROOT}/{EXTRACTIVE_TEST}", probe],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "2 passed" in run.stdout
