"""What every command shares: the client from the global options, `--json`, and errors as one line on
stderr with a non-zero exit code."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, ParamSpec, TypeVar

import msgspec
import typer
from rich.console import Console

from lore_client.errors import LoreError, TaskFailed
from lore_client.sync import Lore

P = ParamSpec("P")
R = TypeVar("R")

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # a message stays one line, whatever the width

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (for scripts).")]


class Settings:
    """The root options, read by each command through `client()`."""

    url: str | None = None
    api_key: str | None = None


@contextmanager
def client() -> Iterator[Lore]:
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
