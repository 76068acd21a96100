"""A model slow enough that a fault can land while a task waits for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lore_common.testing.processes import start_fake_llm


@pytest.fixture
def slow_llm(tmp_path: Path) -> Iterator[str]:
    """An OpenAI-compatible fake answering tables' and extraction's questions after 1.5 s."""
    server, url = start_fake_llm(
        tmp_path, "--latency-ms", "1500", "--responder", "lore_common.testing.responders:table"
    )
    yield url
    server.stop()
