"""The example textbook built and indexed with the local embedder once per session, for the answer
tests and the browser tests that show passage answers."""

from __future__ import annotations

import pytest

from bookwise.settings import Settings
from examplesite import build_example, index_example_locally


@pytest.fixture(scope="session")
def example_local(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return index_example_locally(tmp_path_factory.mktemp("example-local"), build_example())
