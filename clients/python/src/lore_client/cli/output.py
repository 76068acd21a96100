"""What every command shares: the client from the global options, `--json`, and errors as one line on
stderr with a non-zero exit code."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.table import Column

from lore_client.errors import LoreError, TaskFailed

if TYPE_CHECKING:
    from lore_client.sync import Lore

P = ParamSpec("P")
R = TypeVar("R")

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # a message stays one line, whatever the width

# Output to a pipe or a file has no width to fit: Rich would assume 80 columns and cut or squeeze what
# does not fit, ids included. Lines there are as long as their content (up to this).
PIPE_WIDTH = 4096


def fit_output() -> None:
    """Called once per command: a terminal keeps its width, a pipe or a file gets `PIPE_WIDTH`."""
    if not console.is_terminal:  # whatever COLUMNS says: it describes a terminal this output is not on
        console.width = PIPE_WIDTH


def id_column(header: str, ids: list[str]) -> Column:
    """A column of ids that is never cut or wrapped: an id is copied into the next command, and piped
    or redirected output is 80 columns wide, so the other columns give way instead."""
    return Column(header, no_wrap=True, min_width=max((len(i) for i in ids), default=len(header)))


JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (for scripts).")]


class Settings:
    """The root options, read by each command through `client()`."""

    url: str | None = None
    api_key: str | None = None


@contextmanager
def client() -> Iterator[Lore]:
    from lore_client.sync import Lore  # httpx loads only for a command that calls the gateway

    lore = Lore(Settings.url, Settings.api_key)
    try:
        yield lore
    finally:
        lore.close()


def emit(value: Any) -> None:
    """JSON on stdout: Structs, lists of them and plain data alike."""
    sys.stdout.write(json.dumps(msgspec.to_builtins(value), ensure_ascii=False, indent=2) + "\n")


def fail(message: str, code: int = 1) -> typer.Exit:
    errors.print(f"[red]error:[/red] {message}", highlight=False, markup=True)
    return typer.Exit(code)


def handled(command: Callable[P, R]) -> Callable[P, R]:
    """A server's or a task's failure becomes its message on stderr and exit code 1."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except TaskFailed as exc:
            raise fail(str(exc)) from None
        except LoreError as exc:
            raise fail(str(exc)) from None
        except FileNotFoundError as exc:
            raise fail(str(exc), 2) from None

    return run
