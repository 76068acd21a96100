"""`lore mem …`: `vg` memories per user, agent or run, and `lore mem kb …` for the knowledge-graph memory."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from lore_client.cli.output import JsonFlag, client, console, emit, fail, handled, id_column
from lore_client.models import Memory

mem_app = typer.Typer(
    help="Agent memory (vg): add, search, ls, history, update, rm; kb insert and query.", no_args_is_help=True
)
kb_memory_app = typer.Typer(help="The knowledge-graph memory: insert text, query it.", no_args_is_help=True)
mem_app.add_typer(kb_memory_app, name="kb")

User = Annotated[str | None, typer.Option("--user", "-u", help="The user the memories belong to.")]
Agent = Annotated[str | None, typer.Option("--agent", help="The agent the memories belong to.")]
Run = Annotated[str | None, typer.Option("--run", help="The run the memories belong to.")]


def _scope(user: str | None, agent: str | None, run: str | None) -> dict[str, Any]:
    if not (user or agent or run):
        raise fail("name a scope: --user, --agent or --run", 2)
    return {"user_id": user, "agent_id": agent, "run_id": run}


def _memories(found: list[Memory], scored: bool = False) -> Table:
    table = Table(id_column("id", [m.id for m in found]), "memory", *(["score"] if scored else []), "updated")
    for m in found:
        score = [f"{m.score:.3f}" if m.score is not None else ""] if scored else []
        table.add_row(m.id, escape(m.memory), *score, m.updated_at or m.created_at or "")
    return table


@mem_app.command("add")
@handled
def add(
    text: str,
    user: User = None,
    agent: Agent = None,
    run: Run = None,
    infer: Annotated[bool, typer.Option(help="Extract facts with the model (else store the text).")] = True,
    when: Annotated[
        str | None,
        typer.Option("--when", help="When it was said: ISO 8601 (2023-05-08T13:56:00Z); default now."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Remember what a user said."""
    with client() as lore:
        result = lore.add_memory(text, **_scope(user, agent, run), infer=infer, timestamp=when)
    if as_json:
        emit(result)
        return
    for item in result.results:
        console.print(f"{item.event:<7} {item.id}  {escape(item.memory)}")
    if not result.results:
        console.print("nothing new to remember")


@mem_app.command("search")
@handled
def search(
    query: str,
    user: User = None,
    agent: Agent = None,
    run: Run = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 10,
    as_json: JsonFlag = False,
) -> None:
    """The memories nearest to a query, best first."""
    with client() as lore:
        found = lore.search_memories(query, **_scope(user, agent, run), limit=limit)
    emit(found) if as_json else console.print(_memories(found, scored=True))


@mem_app.command("ls")
@handled
def list_(
    user: User = None,
    agent: Agent = None,
    run: Run = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """A scope's memories."""
    with client() as lore:
        found = lore.list_memories(**_scope(user, agent, run), limit=limit)
    emit(found) if as_json else console.print(_memories(found))


@mem_app.command("history")
@handled
def history(memory_id: str, as_json: JsonFlag = False) -> None:
    """Every change of one memory."""
    with client() as lore:
        records = lore.memory_history(memory_id)
    if as_json:
        emit(records)
        return
    table = Table("when", "event", "before", "after")
    for r in records:
        table.add_row(r.created_at, r.event, escape(r.old_memory or ""), escape(r.new_memory or ""))
    console.print(table)


@mem_app.command("update")
@handled
def update(
    memory_id: str,
    text: Annotated[str, typer.Argument(help="The memory's new text (it is embedded again).")],
    as_json: JsonFlag = False,
) -> None:
    """Replace one memory's text; the change is kept in its history."""
    with client() as lore:
        result = lore.update_memory(memory_id, text)
    if as_json:
        emit(result)
        return
    console.print(f"UPDATE  {result.id}  {escape(result.memory)}", highlight=False)


@mem_app.command("rm")
@handled
def remove(
    memory_id: Annotated[
        str | None, typer.Argument(help="One memory; leave out to delete a whole scope.")
    ] = None,
    user: User = None,
    agent: Agent = None,
    run: Run = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before deleting a scope.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete one memory, or every memory of a scope."""
    with client() as lore:
        if memory_id:
            lore.delete_memory(memory_id)
            emit({"deleted": 1}) if as_json else console.print(f"deleted {memory_id}")
            return
        scope = _scope(user, agent, run)
        if not yes and not typer.confirm(f"Delete every memory of {scope}?"):
            raise typer.Exit(1)
        count = lore.delete_memories(**scope)
    emit({"deleted": count}) if as_json else console.print(f"deleted {count} memories")


Workspace = Annotated[
    str | None,
    typer.Option(help="The memory graph's workspace (default: the default one, or your API key's own)."),
]


@kb_memory_app.command("insert")
@handled
def kb_insert(
    text: str,
    wait: Annotated[bool, typer.Option(help="Wait until it is queryable.")] = True,
    workspace: Workspace = None,
    as_json: JsonFlag = False,
) -> None:
    """Insert text into the knowledge-graph memory."""
    with client() as lore:
        job = lore.kb_insert(text, workspace=workspace)
        if wait:
            with console.status("inserting", spinner="dots"):
                job = lore.wait_insert(job)
    if as_json:
        emit(job)
    else:
        counts = (
            f": {job.chunks} chunk(s), {job.entities} entities, {job.relations} relations"
            if job.chunks
            else ""
        )
        console.print(f"insert {job.id} {job.status}{counts}")


@kb_memory_app.command("query")
@handled
def kb_query(
    query: str,
    mode: Annotated[str, typer.Option(help="hybrid, local, global or naive.")] = "hybrid",
    workspace: Workspace = None,
    as_json: JsonFlag = False,
) -> None:
    """Ask the knowledge-graph memory."""
    with client() as lore:
        answer = lore.kb_query(query, mode=mode, workspace=workspace)
    emit(answer) if as_json else console.print(answer.final_answer, highlight=False, markup=False)
