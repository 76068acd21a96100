"""What `lore` prints without a server: help text as written, ids whole in piped output, one progress
line per step of a table."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from lore_client.cli import app
from lore_client.cli.knowledge import _task_table
from lore_client.cli.mem import _memories
from lore_client.models import Memory, Table, TableEvent, Task
from lore_client.sync import Lore

runner = CliRunner()


def _help(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group under `group`, by the words that call it."""
    found: list[tuple[tuple[str, ...], Any]] = []
    for name, command in getattr(group, "commands", {}).items():
        found.append(((*path, name), command))
        found.extend(_commands(command, (*path, name)))
    return found


def test_square_brackets_in_help_text_are_printed_not_taken_for_markup() -> None:
    assert "cites its passages as [n]" in _help("chat")
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 15
    for path, command in commands:
        written = re.findall(r"\[[a-z]\w*\]", (command.help or "").replace("\\[", "["))
        shown = _help(*path)
        assert all(token in shown for token in written), (path, written)


def test_group_help_names_the_commands_as_they_are_typed() -> None:
    kb = _help("kb")
    assert "ls, show, rm" in kb and "list" not in kb.split("Commands")[0]
    mem = _help("mem")
    assert "update" in mem.split("Commands")[0] and "update" in mem.split("Commands")[1]
    for verb in ("add", "search", "ls", "history", "update", "rm"):
        assert re.search(rf"│ {verb}\s", mem), verb


def _printed(renderable: Any) -> str:
    out = Console(file=io.StringIO(), width=80)  # what a pipe or a file gets
    out.print(renderable)
    value = out.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(value, str)
    return value


def test_ids_stay_whole_in_80_columns() -> None:
    memory = Memory(
        id="6f1c0d8e-93b4-4b8e-a6d2-1f0e5b7c9a31",
        memory="I am allergic to peanuts and moved to Lisbon in the spring of 2023 with my two cats.",
        created_at="2023-05-08T13:56:00.123456+00:00",
        updated_at="2023-05-09T08:00:00.654321+00:00",
        score=0.91,
    )
    assert memory.id in _printed(_memories([memory], scored=True))
    task = Task(
        task_id="0c9a4d62-5b6e-4f3a-9d1e-7a2b8c4d6e10",
        metadata={"kb_name": "a-long-knowledge-base-name", "dataset": "a-long-dataset-name"},
        status="completed",
        stage="graph",
        updated_at="2023-05-09T08:00:00.654321",
    )
    assert task.task_id in _printed(_task_table([task]))


def test_a_table_prints_one_line_per_step_not_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lore table` printed a progress line for each of a table's rows; it prints where each step ended."""
    events = [
        TableEvent(type="progress", step=1, name="design"),
        TableEvent(type="progress", step=2, name="entities"),
        *(TableEvent(type="progress", step=3, name="rows", done=n, total=40) for n in range(1, 41)),
        TableEvent(type="progress", step=4, name="sql"),
        TableEvent(
            type="result",
            data=Table(
                table_name="people", csv_data=[{"name": "Marie Curie"}], sql="SELECT name FROM people"
            ),
        ),
    ]
    monkeypatch.setattr(Lore, "table_stream", lambda *_, **__: iter(events))
    result = runner.invoke(app, ["table", "every person and their discovery"])
    assert result.exit_code == 0, result.output
    steps = [line.split() for line in result.output.splitlines() if line.startswith("step ")]
    assert steps == [
        ["step", "1", "design"],
        ["step", "2", "entities"],
        ["step", "3", "rows", "40/40"],
        ["step", "4", "sql"],
    ]
    assert "Marie Curie" in result.output and "SELECT name FROM people" in result.output
