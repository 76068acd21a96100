"""schemathesis against mem's own OpenAPI document (see test_fuzz.py): no input gets a 5xx, and every
response matches the schema documented for its status."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore_common.testing.fuzzing import schemathesis, services

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_no_input_gets_a_server_error_and_every_response_matches_its_schema(tmp_path: Path) -> None:
    with services("mem", tmp_path / "stack", ROOT / "config") as urls:
        result = schemathesis(urls["mem"], 20, tmp_path / "report")
    assert result.returncode == 0, result.stdout[-12000:] + result.stderr[-2000:]
