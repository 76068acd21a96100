"""`lore source add|sync|ls|rm`: datasets that sync from a folder on the server, an S3 prefix, a git
branch or web pages (see docs/sources.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from lore_client.cli.output import JsonFlag, client, console, emit, errors, fail, handled
from lore_client.errors import Conflict

source_app = typer.Typer(
    help="Dataset sources: add, sync, ls, rm (a folder on the server, S3, git, web pages).",
    no_args_is_help=True,
)


@source_app.command("add")
@handled
def add(
    dataset: Annotated[str, typer.Argument(help="The dataset (created if missing).")],
    folder: Annotated[str | None, typer.Option(help="A folder on the server (under folder_roots).")] = None,
    s3: Annotated[str | None, typer.Option(help="An S3 bucket, with --prefix.")] = None,
    prefix: Annotated[str, typer.Option(help="The S3 prefix.")] = "",
    endpoint: Annotated[str | None, typer.Option(help="The S3 endpoint (S3-compatible stores).")] = None,
    access_key: Annotated[str | None, typer.Option(envvar="LORE_SOURCE_ACCESS_KEY")] = None,
    secret_key: Annotated[str | None, typer.Option(envvar="LORE_SOURCE_SECRET_KEY")] = None,
    git: Annotated[str | None, typer.Option(help="A git repository: https URL or server path.")] = None,
    branch: Annotated[str | None, typer.Option(help="The git branch (default: the remote's).")] = None,
    subdir: Annotated[str, typer.Option(help="Git: only the files under this folder.")] = "",
    token: Annotated[str | None, typer.Option(envvar="LORE_SOURCE_TOKEN", help="git https token.")] = None,
    url: Annotated[list[str] | None, typer.Option("--url", help="A web page to start from (repeat).")] = None,
    sitemap: Annotated[str | None, typer.Option(help="A sitemap listing the web pages.")] = None,
    depth: Annotated[int, typer.Option(help="Web: links followed from the start pages.")] = 1,
    max_pages: Annotated[int, typer.Option(help="Web: pages fetched at most.")] = 100,
    interval: Annotated[int | None, typer.Option(help="Sync every this many seconds.")] = None,
    auto_parse: Annotated[
        bool, typer.Option(help="Parse the dataset again in its KBs after a sync that changed it.")
    ] = True,
    max_delete: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="The largest share of the dataset's files one sync may delete (server default 0.5; "
            "1: no limit). A sync that would delete more fails and changes nothing.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Give a dataset its source (one of --folder, --s3, --git, --url/--sitemap); `lore source sync`
    runs it."""
    chosen = [name for name, value in (("folder", folder), ("s3", s3), ("git", git)) if value]
    if url or sitemap:
        chosen.append("web")
    if len(chosen) != 1:
        raise fail("name one source: --folder, --s3, --git, or --url/--sitemap", 2)
    spec: dict[str, Any] = {"kind": chosen[0], "auto_parse": auto_parse}
    if interval is not None:
        spec["interval"] = interval
    if max_delete is not None:
        spec["max_delete"] = max_delete
    if folder:
        spec["path"] = folder
    elif s3:
        spec |= {"bucket": s3, "prefix": prefix, "endpoint_url": endpoint}
        spec |= {"access_key": access_key, "secret_key": secret_key}
    elif git:
        spec |= {"url": git, "branch": branch, "subdir": subdir or None, "token": token}
    else:
        spec |= {"urls": url or [], "sitemap": sitemap, "max_depth": depth, "max_pages": max_pages}
    with client() as lore:
        if dataset not in lore.list_datasets():
            lore.create_dataset(dataset)
        info = lore.set_source(dataset, {k: v for k, v in spec.items() if v is not None})
    if as_json:
        emit(info)
    else:
        console.print(f"{escape(dataset)}: source {escape(_describe(info.source))} set")
        interval_s = info.source.get("interval")
        if interval_s:
            console.print(f"  first sync within seconds, then every {interval_s} s (see `lore source ls`)")
        else:
            console.print(f"  no schedule: sync it with `lore source sync {escape(dataset)}`")


@source_app.command("sync")
@handled
def sync(
    dataset: str,
    wait: Annotated[bool, typer.Option(help="Wait for the sync's report.")] = True,
    as_json: JsonFlag = False,
) -> None:
    """Sync a dataset from its source now and print the report (exit 1 if the sync failed)."""
    with client() as lore:
        try:
            task = lore.sync(dataset)
        except Conflict as exc:  # a sync already runs (the first scheduled one, say): wait for it
            active = exc.detail.get("active_tasks") if isinstance(exc.detail, dict) else None
            if not (wait and active):
                raise
            errors.print(f"sync {active[0]} of {escape(dataset)} is already running; waiting for it")
            task = lore.get_sync(dataset, str(active[0]))
        if wait:
            with console.status(f"sync {task.task_id[:8]} of {escape(dataset)}", spinner="dots"):
                task = lore.wait_sync(dataset, task.task_id)
    if as_json:
        emit(task)
    else:
        error = f" ({escape(task.error)})" if task.error else ""
        console.print(f"sync {task.task_id}: {task.status}{error}")
        report = task.report
        if report is not None:
            console.print(
                f"  added {len(report.added)}, changed {len(report.changed)}, deleted {len(report.deleted)}, "
                f"unchanged {report.unchanged}, failed {len(report.failed)}"
            )
            for failure in report.failed:
                console.print(f"  failed {escape(failure.path)}: {escape(failure.reason)}")
        if task.parse_tasks:
            console.print("  parses queued: " + ", ".join(task.parse_tasks))
    if task.status == "failed":
        raise typer.Exit(1)


@source_app.command("ls")
@handled
def list_sources(as_json: JsonFlag = False) -> None:
    """Every dataset's source, its next scheduled sync and its last sync."""
    with client() as lore:
        sources = lore.list_sources()
    if as_json:
        emit(sources)
        return
    table = Table("dataset", "source", "every", "last sync", "report")
    for info in sources:
        last = info.last_sync
        report = last.report if last else None
        summary = (
            f"+{len(report.added)} ~{len(report.changed)} -{len(report.deleted)} ={report.unchanged}"
            + (f" !{len(report.failed)}" if report.failed else "")
            if report
            else (last.error or "")
            if last
            else ""
        )
        interval = info.source.get("interval")
        table.add_row(
            escape(info.dataset),
            escape(_describe(info.source)),
            f"{interval} s" if interval else "",
            f"{last.status} {last.updated_at}" if last else "never",
            escape(summary),
        )
    console.print(table)


@source_app.command("rm")
@handled
def remove(dataset: str) -> None:
    """Remove a dataset's source (its files stay)."""
    with client() as lore:
        lore.delete_source(dataset)
    console.print(f"{escape(dataset)}: no source")


def _describe(source: dict[str, Any]) -> str:
    kind = source.get("kind")
    if kind == "folder":
        return f"folder {source.get('path')}"
    if kind == "s3":
        return f"s3://{source.get('bucket')}/{source.get('prefix', '')}"
    if kind == "git":
        subdir = f" {source['subdir']}/" if source.get("subdir") else ""
        return f"git {source.get('url')}{subdir}" + (f" ({source['branch']})" if source.get("branch") else "")
    return f"web {source.get('sitemap') or ', '.join(source.get('urls') or [])}"
