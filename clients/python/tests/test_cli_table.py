"""`lore table --json` prints the task's status body, which a script can follow by its id."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lore_client.cli import app
from lore_client.models import Table, TableEvent, TableTask
from lore_client.sync import Lore

runner = CliRunner()
TABLE = Table(table_name="gen_people_1", csv_data=[{"name": "Marie Curie"}], sql="SELECT * FROM people")


def test_table_json_is_the_status_body_with_the_task_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """It printed the WebSocket's last message, whose `task_id` is null."""
    events = [
        TableEvent(type="progress", step=1, name="schema", task_id="t-42"),
        TableEvent(type="result", data=TABLE),
    ]
    asked: list[str] = []

    def status(_: Lore, task_id: str) -> TableTask:
        asked.append(task_id)
        return TableTask(task_id=task_id, status="completed", result=TABLE)

    monkeypatch.setattr(Lore, "table_stream", lambda *_, **__: iter(events))
    monkeypatch.setattr(Lore, "table_status", status)
    result = runner.invoke(app, ["table", "What do we know about Marie Curie?", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["task_id"] == "t-42" and printed["status"] == "completed"
    assert printed["result"]["csv_data"] == [{"name": "Marie Curie"}]
    assert asked == ["t-42"]


def test_a_failed_table_prints_its_status_with_the_error_and_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [
        TableEvent(type="progress", step=1, name="schema", task_id="t-7"),
        TableEvent(type="error", message="the model found no entities"),
    ]
    failed = TableTask(task_id="t-7", status="failed", error="the model found no entities")
    monkeypatch.setattr(Lore, "table_stream", lambda *_, **__: iter(events))
    monkeypatch.setattr(Lore, "table_status", lambda _, task_id: failed)
    result = runner.invoke(app, ["table", "every river", "--json"])
    assert result.exit_code == 1
    assert '"task_id": "t-7"' in result.output and '"status": "failed"' in result.output
