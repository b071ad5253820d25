"""Docs are part of the product: every setting is in the README's settings table."""

from __future__ import annotations

import re
from pathlib import Path

from bookwise.errors import BookwiseError
from bookwise.settings import Settings

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented_with_its_env_var() -> None:
    documented = set(re.findall(r"`(BOOKWISE_[A-Z0-9_]+)`", README))
    expected = {f"BOOKWISE_{name.upper()}" for name in Settings.model_fields}
    assert expected - documented == set(), "undocumented settings"
    assert documented - expected == set(), "documented settings that do not exist"


def test_every_error_code_is_documented() -> None:
    def codes(cls: type[BookwiseError]) -> set[str]:
        return {cls.code}.union(*(codes(sub) for sub in cls.__subclasses__()))

    missing = {c for c in codes(BookwiseError) if f"`{c}`" not in README}
    assert missing == set()
