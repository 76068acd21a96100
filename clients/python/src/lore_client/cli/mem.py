"""`lore mem …`: `vg` memories per user, agent or run, and `lore mem kb …` for the knowledge-graph memory."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import typer
from rich.markup import escape
from rich.table import Table

from lore_client.cli.output import JsonFlag, client, console, emit, fail, handled, id_column
from lore_client.models import Memory

if TYPE_CHECKING:
    pass

mem_app = typer.Typer(
    help="Agent memory (vg): add, search, ls, history, update, rm; kb insert, ls, rm and query.",
    no_args_is_help=True,
)
kb_memory_app = typer.Typer(
    help="The knowledge-graph memory: insert text, list and forget inserts, query it.", no_args_is_help=True
)
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


def _text(text: str | None, file: Path | None) -> str:
    """The text to insert: as given, `-` for stdin, `@PATH` or `--file PATH` for a file's text."""
    if file is not None and text is not None:
        raise fail("give the text or --file, not both", 2)
    if file is None and text is not None and text.startswith("@") and len(text) > 1:
        file = Path(text[1:])
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(f"cannot read {file}: {exc.strerror if isinstance(exc, OSError) else exc}", 2) from exc
    elif text == "-":
        text = sys.stdin.read()
    if text is None:
        raise fail("give the text to remember, `-` to read it from stdin, or --file PATH", 2)
    if not text.strip():
        raise fail("nothing to insert: the text is empty", 2)
    return text


@kb_memory_app.command("insert")
@handled
def kb_insert(
    text: Annotated[
        str | None,
        typer.Argument(help="The text to remember; `-` reads it from stdin, `@PATH` a file's text."),
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Insert this file's text (UTF-8).", dir_okay=False)
    ] = None,
    wait: Annotated[bool, typer.Option(help="Wait until it is queryable.")] = True,
    workspace: Workspace = None,
    as_json: JsonFlag = False,
) -> None:
    """Insert text into the knowledge-graph memory (`lore mem kb insert - < notes.txt`)."""
    body = _text(text, file)
    with client() as lore:
        job = lore.kb_insert(body, workspace=workspace)
        if wait:
            with console.status("inserting", spinner="dots"):
                job = lore.wait_insert(job)
    if as_json:  # the job without the text it was sent (it may be long): its length instead
        shown = {k: v for k, v in msgspec.to_builtins(job).items() if k != "query"}
        emit({**shown, "chars": len(body)})
    else:
        counts = (
            f": {job.chunks} chunk(s), {job.entities} entities, {job.relations} relations"
            if job.chunks
            else ""
        )
        console.print(f"insert {job.id} {job.status}{counts}")


@kb_memory_app.command("ls")
@handled
def kb_list(
    workspace: Workspace = None,
    limit: Annotated[int, typer.Option(help="At most this many.", min=1, max=1000)] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many (newest first).", min=0)] = 0,
    as_json: JsonFlag = False,
) -> None:
    """The inserts of the knowledge-graph memory, newest first."""
    with client() as lore:
        page = lore.kb_inserts(offset=offset, limit=limit, workspace=workspace)
    if as_json:
        emit(page)
        return
    table = Table(id_column("id", [i.id for i in page.inserts]), "status", "created", "chunks", "text")
    for i in page.inserts:
        table.add_row(i.id, i.status, i.created_at, str(i.chunks), escape(i.preview))
    console.print(table)
    count = len(page.inserts)
    shown = f"{offset + 1}-{offset + count} of " if page.inserts and count < page.total else ""
    console.print(f"{shown}{page.total} insert(s)", highlight=False)


@kb_memory_app.command("rm")
@handled
def kb_remove(
    insert_id: Annotated[str, typer.Argument(help="The insert (its id from `lore mem kb ls`).")],
    workspace: Workspace = None,
    as_json: JsonFlag = False,
) -> None:
    """Forget one insert: its text, and the entities and relations only it brought."""
    with client() as lore:
        gone = lore.kb_forget(insert_id, workspace=workspace)
    if as_json:
        emit(gone)
        return
    console.print(
        f"deleted {gone.id}: {gone.chunks} chunk(s), {gone.entities} entities no other insert "
        f"mentions; {gone.communities} communities to recompute",
        highlight=False,
    )


_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def _sources(answer: str, rag_memory: str) -> list[str]:
    """The passages the answer cites, as `[n] opening…` lines: the numbers point to something shown."""
    passages = {int(n): text for n, text in _PASSAGE.findall(rag_memory)}
    cited = dict.fromkeys(int(n) for n in re.findall(r"\[(\d+)\]", answer) if int(n) in passages)
    return [f"[{n}] {passages[n][:160]}{'…' if len(passages[n]) > 160 else ''}" for n in cited]


@kb_memory_app.command("query")
@handled
def kb_query(
    query: str,
    mode: Annotated[str, typer.Option(help="hybrid, local, global or naive.")] = "hybrid",
    workspace: Workspace = None,
    as_json: JsonFlag = False,
) -> None:
    r"""Ask the knowledge-graph memory; the passages the answer cites as \[n] are listed under Sources."""
    with client() as lore:
        answer = lore.kb_query(query, mode=mode, workspace=workspace)
    if as_json:
        emit(answer)
        return
    console.print(answer.final_answer, highlight=False, markup=False)
    sources = _sources(answer.final_answer, answer.rag_memory)
    if sources:
        console.print("\nSources:", highlight=False)
        for line in sources:
            console.print(line, highlight=False, markup=False)
