"""`lore table` and `lore tree …`: tables from questions, tag trees from topics or spreadsheets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from lore_client.cli.labels import shown
from lore_client.cli.output import JsonFlag, client, console, emit, fail, handled
from lore_client.models import TableEvent, TreeNode, TreeTask

tree_app = typer.Typer(
    help="Tag trees: generate from a topic, import a spreadsheet, show.", no_args_is_help=True
)


@handled
def table(
    question: str,
    kb: Annotated[
        str | None, typer.Option("--kb", "-k", help="Ground the rows in this knowledge base.")
    ] = None,
    sql_question: Annotated[
        str | None, typer.Option(help="The question the SQL answers, if not QUESTION.")
    ] = None,
    top_k: Annotated[int, typer.Option(help="Passages retrieved per entity.")] = 5,
    max_workers: Annotated[int, typer.Option(help="Rows filled at once.")] = 16,
    as_json: JsonFlag = False,
) -> None:
    """Build a table for a question: its steps live, then the rows and the SQL that selected them
    (with --json, the task's status body: `task_id`, `status`, `result`, as `lore`'s API answers it)."""
    events: list[TableEvent] = []
    with client() as lore, console.status("table: connecting", spinner="dots") as status:
        stream = lore.table_stream(
            question, kb_name=kb, sql_question=sql_question, top_k=top_k, max_workers=max_workers
        )
        for event in stream:
            events.append(event)
            if event.type == "progress" and not as_json:
                rows = f" ({event.done}/{event.total} rows)" if event.total is not None else ""
                status.update(f"table: step {event.step}/4 {event.name or ''}{rows}")
        # The stream's last message carries no task id; its progress messages do.
        task_id = next((e.task_id for e in events if e.task_id), None)
        if as_json and task_id:
            emit(lore.table_status(task_id))  # a script keeps the id, and the error of a failed task
    last = events[-1] if events else None
    if as_json and not task_id:
        emit(last)
    if last is None or last.type == "error" or last.data is None:
        raise fail(last.message if last and last.message else "the table stream ended without a result")
    if as_json:
        return
    result = last.data
    for event in last_of_each_step(events[:-1]):
        console.print(
            f"[dim]step {event.step} {escape(event.name or '')}"
            + (f" {event.done}/{event.total}" if event.total is not None else "")
            + "[/dim]"
        )
    found = result.query_results if isinstance(result.query_results, list) else result.csv_data
    lines: list[dict[str, Any]] = [line for line in found if isinstance(line, dict)]
    columns = list(lines[0]) if lines else []
    console.print(f"[bold]{escape(result.table_name)}[/bold]: {len(lines)} row(s)")
    grid = Table(*columns)
    for line in lines:
        grid.add_row(*(shown("" if line.get(c) is None else str(line.get(c))) for c in columns))
    console.print(grid)
    if console.is_terminal:
        from rich.syntax import Syntax  # pygments loads only where SQL is highlighted

        console.print(Syntax(result.sql, "sql", word_wrap=True))
    else:  # Syntax pads every line to the width with spaces
        console.print(result.sql, markup=False, highlight=False)


def last_of_each_step(events: list[TableEvent]) -> list[TableEvent]:
    """One line per step, where it ended (a step that fills rows reports once per row)."""
    last: dict[Any, TableEvent] = {}
    for event in events:
        if event.type == "progress":
            last.pop(event.step, None)  # keep the order in which steps ended
            last[event.step] = event
    return list(last.values())


def _show_tree(task: TreeTask, as_json: bool) -> None:
    if as_json:
        emit(task)
        return
    if task.result is None:
        console.print(
            f"tree {task.task_id}: {task.status}" + (f" ({task.node_count} nodes)" if task.node_count else "")
        )
        return
    root = Tree(f"[bold]{escape(task.result.tree_name)}[/bold] ({task.result.node_count} nodes)")

    def add(branch: Tree, node: TreeNode) -> None:
        label = shown(node.node_name) + (f" [dim]{shown(node.description)}[/dim]" if node.description else "")
        child = branch.add(label)
        for sub in node.children:
            add(child, sub)

    for node in task.result.nodes:
        add(root, node)
    console.print(root)


@tree_app.command("generate")
@handled
def tree_generate(
    topic: str,
    kb: Annotated[
        str | None, typer.Option("--kb", "-k", help="Ground the tree in this KB's entities.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """A tag tree on a topic (from a knowledge base's entities with --kb), shown when done."""
    with client() as lore, console.status("tree: generating", spinner="dots"):
        started = lore.generate_tree(topic, mode="kb" if kb else "pure_llm", kb_name=kb)
        done = lore.wait_tree(started)
    _show_tree(done, as_json)


@tree_app.command("import")
@handled
def tree_import(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="An .xlsx or .xls workbook.")],
    name: Annotated[str, typer.Option(help="The tree's name.")] = "tag_tree",
    description: Annotated[str, typer.Option(help="The tree's description.")] = "",
    sheet: Annotated[str, typer.Option(help="Sheet name or zero-based index.")] = "0",
    as_json: JsonFlag = False,
) -> None:
    """A tag tree from a spreadsheet: each row is a path from its first cell to its last."""
    with client() as lore:
        started = lore.import_tree(file, tree_name=name, tree_description=description, sheet_name=sheet)
        done = lore.tree_status(started.task_id)
    _show_tree(done, as_json)


@tree_app.command("show")
@handled
def tree_show(task_id: str, as_json: JsonFlag = False) -> None:
    """A tag tree by its task id."""
    with client() as lore:
        _show_tree(lore.tree_status(task_id), as_json)
