"""`lore ingest`, `lore kb …`, `lore tasks`, `lore chat`: documents into knowledge bases, and questions."""

from __future__ import annotations

import difflib
import hashlib
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from lore_client.cli.labels import shown
from lore_client.cli.output import JsonFlag, client, console, emit, errors, fail, handled, id_column
from lore_client.errors import (
    NAME_RULE,
    Conflict,
    LoreError,
    NotFound,
    PayloadTooLarge,
    TaskFailed,
    Unreachable,
)
from lore_client.models import PARSE_STAGES, FileInfo, PutFileResult, Task, TaskProgress

if TYPE_CHECKING:
    from lore_client.sync import Lore

kb_app = typer.Typer(help="Knowledge bases: ls, show, rm.", no_args_is_help=True)
ACTIVE = ("pending", "running", "cancelling")
MIB = 1024 * 1024
# A file up to this goes in one request; a larger one in chunks (docdb caps one request, 512 MiB by
# default, and a file over its cap in one request is refused after the bytes are sent).
PUT_MAX = 64 * MIB
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the API's naming rule of datasets and knowledge bases


@handled
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (walked recursively).")],
    kb: Annotated[str, typer.Option("--kb", "-k", help="Knowledge base (created if missing).")],
    dataset: Annotated[
        str | None,
        typer.Option("--dataset", "-d", help="Dataset (created if missing); default: the KB's name."),
    ] = None,
    mode: Annotated[
        int | None,
        typer.Option(help="0: vectors + knowledge graph, 1: vectors only; default: the KB's, else 0."),
    ] = None,
    schema: Annotated[str | None, typer.Option(help="Entity schema for the graph (mode 0).")] = None,
    delete: Annotated[
        bool, typer.Option("--delete", help="Delete the dataset's files that are not in the folders.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="With --delete: delete even half the dataset or more.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only print what would be uploaded and deleted.")
    ] = False,
    chunk_mib: Annotated[
        int, typer.Option(help=f"Files over {PUT_MAX // MIB} MiB go in chunks of this size (MiB).")
    ] = 8,
    parallel: Annotated[int, typer.Option(help="Streams of chunks of one large file.")] = 4,
    embedding_model: Annotated[
        str | None,
        typer.Option(help="Embedder of a KB created here (auto, usem3, minilm…); default: the server's."),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait for the parse (and a parse already running).")
    ] = True,
    as_json: JsonFlag = False,
) -> None:
    """Sync files into a dataset, parse it into a knowledge base and wait until it is done.

    A file is its path under the folder given (`guide/README.md`) and its content (sha256): a new path
    is added, a changed file replaces its old version, an unchanged one is not sent, and with
    `--delete` a file gone from the folders is deleted from the dataset (more than half of its files
    only with `--yes` or when confirmed). The dataset is parsed again only when something changed.
    While a parse of the dataset runs, the files are uploaded and the change is parsed after it
    (waited for, unless `--no-wait`).
    """
    dataset = dataset or kb
    check_name("knowledge base", kb)
    check_name("dataset", dataset)
    local = local_files(paths)
    if not local:
        raise fail("no files to ingest", 2)
    with client() as lore:
        exists = dataset in lore.list_datasets()
        held = {f.path or f.name: f for f in lore.list_files(dataset)} if exists else {}
        todo = []
        unchanged = []
        for path, file in local.items():
            known = held.get(path)
            if known is not None and known.sha256 == sha256_file(file):
                unchanged.append(str(file))
            else:
                todo.append((path, file))
        gone = sorted(path for path in held if path not in local)
        if dry_run:
            _print_plan(todo, held, unchanged, gone, delete, as_json)
            return
        if delete:
            _check_deletes(gone, len(held), yes)
        if not exists:
            lore.create_dataset(dataset)
        uploaded = _send(lore, dataset, todo, chunk_mib * MIB, parallel, quiet=as_json)
        deleted = []
        if delete:
            for path in gone:
                lore.delete_file(dataset, held[path].name)
                deleted.append(path)
        if kb not in {k.name for k in lore.list_knowledge_bases()}:
            lore.create_knowledge_base(kb, embedding_model)
        if mode is None:  # the KB's datasets share one mode: a KB parsed in mode 1 stays in it
            mode = lore.get_knowledge_base(kb).process_mode or 0
        task: Task | None = None
        running: Task | None = None
        changed = any(u.status != "unchanged" for u in uploaded) or bool(deleted)
        if changed or not _parsed(lore, kb, dataset):
            task, running = _parse(lore, kb, dataset, mode, schema, wait=wait, quiet=as_json)
        chunks = lore.overview(kb, top_nodes=1, sample_relations=1).chunk_count
    summary: dict[str, Any] = {
        "kb": kb,
        "dataset": dataset,
        # Each file sent: its stored name (`filename`), its path, size and status (added or replaced).
        "uploaded": [{"filename": u.name, **u.to_dict()} for u in uploaded if u.status != "unchanged"],
        "unchanged": unchanged + [u.path for u in uploaded if u.status == "unchanged"],
        "deleted": deleted,
        # Without --delete: the dataset's files not among the paths given (kept; --delete removes them).
        "not_in_folder": [] if delete else gone,
        "task": task.to_dict() if task else None,
        # With --no-wait: the parse of the dataset that was running; docdb parses the change after it.
        "running_task": running.to_dict() if running else None,
        "skipped_files": task.skipped_files if task else [],
        "chunk_count": chunks,
    }
    if as_json:
        emit(summary)
    else:
        _print_summary(summary)
    if task is not None and task.status not in ("completed", *ACTIVE):
        raise typer.Exit(1)


def check_name(what: str, name: str) -> None:
    if not NAME.fullmatch(name):
        raise fail(f"{what} name {escape(repr(name))}: {NAME_RULE}", 2)


def missing_kb(lore: Lore, name: str) -> typer.Exit | None:
    """When `name` is no knowledge base: the error that says so, with the names it may have meant."""
    names = [k.name for k in lore.list_knowledge_bases()]
    if name in names:
        return None
    lowered = {n.lower(): n for n in names}
    close = [lowered[n] for n in difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)]
    if close:
        hint = "did you mean " + " or ".join(close) + "?"
    elif names:
        hint = "the knowledge bases are " + ", ".join(names[:10]) + (", …" if len(names) > 10 else "")
    else:
        hint = "there are none yet (lore ingest creates one)"
    return fail(escape(f"knowledge base {name!r} does not exist; {hint}"))


def _print_plan(
    todo: list[tuple[str, Path]],
    held: dict[str, FileInfo],
    unchanged: list[str],
    gone: list[str],
    delete: bool,
    as_json: bool,
) -> None:
    """`--dry-run`: each path to upload (added or changed) and to delete, nothing done."""
    upload = [{"path": path, "status": "changed" if path in held else "added"} for path, _ in todo]
    plan = {"upload": upload, "unchanged": len(unchanged), "delete": gone if delete else []}
    if not delete:
        plan["not_in_folder"] = gone
    if as_json:
        emit(plan)
        return
    console.print(f"would upload {len(upload)} file(s), {len(unchanged)} unchanged")
    for item in upload:
        console.print(f"  {item['status']} {escape(item['path'])}")
    if delete:
        console.print(f"would delete {len(gone)} file(s) from the dataset")
        for path in gone:
            console.print(f"  delete {escape(path)}")
    elif gone:
        console.print(_not_in_folder(len(gone)))


def _not_in_folder(count: int) -> str:
    return f"{count} file(s) in the dataset are not in the folder(s) given; --delete removes them"


def _check_deletes(gone: list[str], held: int, yes: bool) -> None:
    """A mistyped folder with `--delete` would empty the dataset: deleting more than half of its files
    is asked on a terminal and refused elsewhere, unless `--yes`."""
    if yes or len(gone) * 2 <= held:
        return
    shown = gone[:20] + ([f"… and {len(gone) - 20} more"] if len(gone) > 20 else [])
    listing = "".join(f"\n  {path}" for path in shown)
    question = f"--delete would delete {len(gone)} of the dataset's {held} files:{listing}\n"
    if sys.stdin.isatty():
        errors.print(escape(question), end="", highlight=False)
        if typer.confirm("Delete them?"):
            return
        raise typer.Exit(1)
    raise fail(escape(question) + "add --yes to delete them (--dry-run shows the whole plan)", 2)


def _parsed(lore: Lore, kb: str, dataset: str) -> bool:
    return any(d.name == dataset and d.parsed for d in lore.get_knowledge_base(kb).datasets)


def _parse(
    lore: Lore, kb: str, dataset: str, mode: int, schema: str | None, *, wait: bool, quiet: bool
) -> tuple[Task | None, Task | None]:
    """Start the parse of the dataset's changes and wait for it: (the task, None). A parse of the
    dataset already running is a 409; the upload stands, and docdb parses the change after it. With
    `wait` that parse is waited for and the parse started again (docdb may have queued it: then it is
    running, and waited for too); without, (None, the running task) says so."""
    for _ in range(5):
        try:
            started = lore.parse(
                kb, [dataset], mode=mode, schema_name=schema, incremental=_parsed(lore, kb, dataset)
            )
        except Conflict:
            running = next(
                (
                    t
                    for t in lore.list_tasks(limit=200)
                    if t.status in ACTIVE and t.kb_name == kb and t.dataset == dataset
                ),
                None,
            )
            if running is None:  # another conflict (the KB's mode): the server's message says which
                raise
            if not wait:
                return None, running
            if not quiet:
                console.print(
                    f"a parse of {escape(dataset)} into {escape(kb)} is running (task {running.task_id}): "
                    "waiting for it, then parsing the change"
                )
            _wait(lore, running.task_id, quiet=quiet)
            continue
        task_id = started.tasks[0].task_id
        return (_wait(lore, task_id, quiet=quiet) if wait else lore.get_task(task_id)), None
    raise fail(f"the dataset {dataset!r} is being parsed again and again in {kb!r}; try later")


def local_files(paths: list[Path]) -> dict[str, Path]:
    """Each file to sync by its path in the dataset: under a folder given, its path from that folder
    (`guide/README.md`); a file given alone, its name. Hidden files and folders are left out."""
    found: dict[str, Path] = {}
    for entry in paths:
        if entry.is_dir():
            pairs = [
                (p.relative_to(entry).as_posix(), p)
                for p in sorted(entry.rglob("*"))
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(entry).parts)
            ]
        elif entry.is_file():
            pairs = [(entry.name, entry)]
        else:
            raise fail(f"{entry}: no such file or folder", 2)
        for path, file in pairs:
            if path in found and found[path].resolve() != file.resolve():
                raise fail(f"{found[path]} and {file} would both be {path!r} in the dataset", 2)
            found[path] = file
    return found


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


def _send(
    lore: Lore, dataset: str, files: list[tuple[str, Path]], chunk_size: int, parallel: int, quiet: bool
) -> list[PutFileResult]:
    if not files:
        return []
    total = sum(f.stat().st_size for _, f in files)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    results = []
    with Progress(*columns, console=console, disable=quiet, transient=True) as progress:
        overall = progress.add_task("all files", total=total)
        done = 0
        for path, file in files:
            progress.update(overall, description=escape(path))

            def sent(count: int, base: int = done) -> None:
                progress.update(overall, completed=base + count)

            result = None
            if file.stat().st_size <= PUT_MAX:
                try:
                    result = lore.put_file(dataset, path, file, on_sent=sent)
                except (PayloadTooLarge, Unreachable):  # over docdb's cap: a 413, or a cut connection
                    result = None
            if result is None:  # in chunks: no cap (a server that is down fails here too, and says so)
                result = lore.put_large_file(
                    dataset, path, file, chunk_size=chunk_size, parallel=parallel, on_sent=sent
                )
            results.append(result)
            done += file.stat().st_size
            progress.update(overall, completed=done)
    return results


def _wait(lore: Lore, task_id: str, quiet: bool) -> Task:
    """The task's stage on one live line until it ends (a failed task is returned, not raised)."""
    with console.status(f"parse {task_id[:8]}: queued", spinner="dots") as status:

        def show(p: TaskProgress) -> None:
            if not quiet:
                status.update(
                    f"parse {task_id[:8]}: {p.status}, stage {p.stage or '-'} "
                    f"({p.step or 0}/{len(PARSE_STAGES)})"
                )

        try:
            return lore.wait(task_id, on_progress=show)
        except TaskFailed as exc:
            if isinstance(exc.task, Task):
                return exc.task
            raise


def _print_summary(summary: dict[str, Any]) -> None:
    task = summary["task"]
    console.print(f"[bold]{escape(summary['kb'])}[/bold] ← dataset [bold]{escape(summary['dataset'])}[/bold]")
    line = f"  uploaded {len(summary['uploaded'])} file(s), {len(summary['unchanged'])} unchanged"
    console.print(line + (f", deleted {len(summary['deleted'])}" if summary["deleted"] else ""))
    if summary["not_in_folder"]:
        console.print("  " + _not_in_folder(len(summary["not_in_folder"])))
    running = summary["running_task"]
    if running is not None:
        console.print(
            f"  a parse of the dataset is running (task {running['task_id']}): the change will be parsed "
            "after it (lore tasks --watch follows it)"
        )
    elif task is None:
        console.print("  already parsed and nothing new: up to date")
    elif task["status"] in ACTIVE:
        console.print(f"  parse {task['task_id']}: {task['status']} (lore tasks --watch follows it)")
    else:
        colour = "green" if task["status"] == "completed" else "red"
        line = f"  parse {task['task_id']}: [{colour}]{task['status']}[/{colour}]"
        console.print(line + (f" ({escape(task['error'])})" if task.get("error") else ""))
    for skipped in summary["skipped_files"]:
        console.print(f"  skipped {escape(str(skipped.get('file')))}: {escape(str(skipped.get('reason')))}")
    console.print(f"  {summary['chunk_count']} chunk(s) in the knowledge base")


@kb_app.command("ls")
@handled
def kb_list(as_json: JsonFlag = False) -> None:
    """Every knowledge base with its status."""
    with client() as lore:
        kbs = lore.list_knowledge_bases()
    if as_json:
        emit(kbs)
        return
    table = Table("name", "status", "created")
    for kb in kbs:
        table.add_row(escape(kb.name), kb.status, kb.created_at)
    console.print(table)


@kb_app.command("show")
@handled
def kb_show(name: str, as_json: JsonFlag = False) -> None:
    """A knowledge base: its datasets, query modes and most connected entities."""
    with client() as lore:
        try:
            kb = lore.get_knowledge_base(name)
        except NotFound:
            if (missing := missing_kb(lore, name)) is not None:
                raise missing from None
            raise
        overview = lore.overview(name, top_nodes=10, sample_relations=5)
        files = lore.kb_files(name, limit=2000)
    if as_json:
        emit({"knowledge_base": kb, "overview": overview, "files": files})
        return
    console.print(
        f"[bold]{escape(kb.name)}[/bold]  {kb.status}  mode {kb.process_mode}  "
        f"{overview.chunk_count} chunk(s)"
    )
    for d in kb.datasets:
        console.print(
            f"  dataset {escape(d.name)}: {'parsed ' + (d.parsed_at or '') if d.parsed else 'not parsed'}"
        )
    skipped = [f for f in files.files if f.skipped]
    console.print(
        f"  files: {files.total} read, {len(skipped)} skipped"
        + (" (of the first 2,000)" if files.total > len(files.files) else "")
    )
    for f in skipped:
        console.print(f"    skipped {escape(f.dataset)}/{escape(f.path)}: {escape(f.skipped or '')}")
    console.print("  query modes: " + ", ".join(m.id for m in kb.available_query_modes))
    if overview.top_entities:
        console.print(
            "  top entities: "
            + ", ".join(f"{escape(e.name)} ({shown(e.type)}, {e.degree})" for e in overview.top_entities)
        )


@kb_app.command("rm")
@handled
def kb_remove(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    keep_data: Annotated[
        bool, typer.Option(help="Keep its chunks, vectors and graph (purge_db false).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete a knowledge base (in the background)."""
    with client() as lore:
        if (missing := missing_kb(lore, name)) is not None:
            raise missing
        if not yes and not typer.confirm(f"Delete knowledge base {name!r}?"):
            raise typer.Exit(1)
        status = lore.delete_knowledge_base(name, purge_db=not keep_data)
    if as_json:
        emit({"name": name, "status": status})
    else:
        console.print(f"{escape(name)}: {status}")


@handled
def tasks(
    status: Annotated[str | None, typer.Option(help="Only tasks in this state.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh until no task is active.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Parse tasks with their state and stage."""
    with client() as lore:
        if as_json or not watch:
            found = lore.list_tasks(status=status, limit=limit)
            emit(found) if as_json else console.print(_task_table(found))
            return
        with Live(console=console, refresh_per_second=4) as live:
            while True:
                found = lore.list_tasks(status=status, limit=limit)
                live.update(_task_table(found))
                if not any(t.status in ACTIVE for t in found):
                    return
                time.sleep(1)


@handled
def cancel(
    task_id: Annotated[str, typer.Argument(help="The parse task (its id from `lore tasks`).")],
    as_json: JsonFlag = False,
) -> None:
    """Cancel a parse task: a pending one at once; a running one stops at its next step and takes back
    what it wrote (`cancelling`, then `cancelled`)."""
    with client() as lore:
        result = lore.cancel_task(task_id)
    if as_json:
        emit(result)
    else:
        console.print(f"task {result.task_id}: {result.status}", highlight=False)


def _task_table(found: list[Task]) -> Table:
    table = Table(
        id_column("task", [t.task_id for t in found]), "kb", "dataset", "status", "stage", "updated"
    )
    for t in found:
        table.add_row(t.task_id, escape(t.kb_name), escape(t.dataset), t.status, t.stage or "", t.updated_at)
    return table


@handled
def chat(
    kb: str,
    question: str,
    mode: Annotated[str, typer.Option(help="naive, rerank, rewriter, multihop or direct.")] = "naive",
    user: Annotated[str, typer.Option(help="Who asks (the contract's user_id).")] = "lore-cli",
    max_results: Annotated[int, typer.Option(help="Passages to use.")] = 20,
    stream: Annotated[bool, typer.Option(help="Print the answer as it is written.")] = False,
    as_json: JsonFlag = False,
) -> None:
    r"""Ask a knowledge base; the answer cites its passages as \[n], listed with their files."""
    with client() as lore:
        try:
            if stream and not as_json:
                _chat_stream(lore, kb, question, mode, user, max_results)
                return
            answer = lore.chat(kb, question, mode=mode, user_id=user, max_results=max_results)
        except LoreError:
            if (missing := missing_kb(lore, kb)) is not None:
                raise missing from None
            raise
    if as_json:
        emit(answer)
        return
    console.print(answer.response or "(no answer)", highlight=False, markup=False)
    _print_sources([c.to_dict() for c in answer.citations or []])


def _chat_stream(lore: Lore, kb: str, question: str, mode: str, user: str, max_results: int) -> None:
    done: dict[str, Any] = {}
    for event in lore.chat_stream(kb, question, mode=mode, user_id=user, max_results=max_results):
        if event.event == "delta":  # the pieces join to exactly the answer
            sys.stdout.write(event.data.get("text", ""))
            sys.stdout.flush()
        elif event.event == "error":
            raise missing_kb(lore, kb) or fail(str(event.data.get("message")))
        elif event.event == "done":
            done = event.data
    console.print()
    _print_sources(done.get("citations") or [])


# a presentation's pages are its slides (PowerPoint's macro-enabled decks, shows and templates too)
SLIDE_SUFFIXES = (
    ".pptx",
    ".pptm",
    ".ppsx",
    ".ppsm",
    ".potx",
    ".potm",
    ".ppt",
    ".pps",
    ".pot",
    ".odp",
    ".otp",
)


def _print_sources(citations: list[dict[str, Any]]) -> None:
    if citations:
        console.print("\n[bold]Sources[/bold]")
    for c in citations:
        page, last = c.get("page"), c.get("page_end")
        one, many = (
            ("slide", "slides") if c["source_file"].lower().endswith(SLIDE_SUFFIXES) else ("p.", "pp.")
        )
        pages = (
            "" if page is None else f", {one} {page}" if last in (None, page) else f", {many} {page}-{last}"
        )
        console.print(
            f"  [{c['index']}] {escape(c['source_file'])}{pages} (dataset {escape(c.get('dataset') or '')})"
        )
