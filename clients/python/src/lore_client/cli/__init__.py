"""The `lore` command: `lore --help`. Configure it with `--url`/`LORE_URL` and `--api-key`/`LORE_API_KEY`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lore_client.cli import gen, knowledge, mem, sources
from lore_client.cli.labels import Shown
from lore_client.cli.output import JsonFlag, Settings, client, console, emit, fit_output, handled

app = typer.Typer(
    name="lore",
    help="Lore from the command line: ingest documents, chat with citations, build tables, manage memories.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def root(
    url: Annotated[str | None, typer.Option(envvar="LORE_URL", help="The gateway's address.")] = None,
    api_key: Annotated[
        str | None, typer.Option(envvar="LORE_API_KEY", help="Bearer key, if the gateway asks.")
    ] = None,
    labels: Annotated[
        str, typer.Option(envvar="LORE_LABELS", help="Entity types in en or zh (--json keeps the values).")
    ] = "en",
) -> None:
    Settings.url, Settings.api_key, Shown.language = url, api_key, labels
    fit_output()


@app.command()
@handled
def health(as_json: JsonFlag = False) -> None:
    """Whether the gateway, each service and its stores are up (exit 1 if not)."""
    with client() as lore:
        report = lore.health()
    if as_json:
        emit(report)
    else:
        table = Table("service", "status", "stores")
        for name, service in report.services.items():
            stores = ", ".join(f"{k} {v.get('status')}" for k, v in (service.get("checks") or {}).items())
            table.add_row(escape(name), str(service.get("status")), escape(stores))
        console.print(f"Lore {report.version}: [bold]{report.status}[/bold]")
        console.print(table)
    if report.status != "ok":
        raise typer.Exit(1)


app.command()(knowledge.ingest)
app.command()(knowledge.tasks)
app.command()(knowledge.cancel)
app.command()(knowledge.chat)
app.command()(gen.table)
app.add_typer(knowledge.kb_app, name="kb")
app.add_typer(gen.tree_app, name="tree")
app.add_typer(mem.mem_app, name="mem")
app.add_typer(sources.source_app, name="source")


def main() -> None:
    app()


__all__ = ["app", "client", "main"]
