"""`python -m lore_<service> [migrate | move --to DIR]`, the same for every service: serve it under
granian (the app is imported in the worker only), bring its relational store to the latest schema, or
copy its data into other stores.

Each service's `__main__` hands over its schema and its move as functions that import them, so that
serving (the common case) loads neither SQLAlchemy's migrations nor the other stores' clients.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore_core.serve import serve
from lore_core.settings import Settings, load_settings

if TYPE_CHECKING:
    from lore_common.stores.migrate import Schema

Move = Callable[[Settings, Settings], Coroutine[Any, Any, dict[str, Any]]]


def main(service: str, *, schema: Callable[[], Schema], move: Callable[[], Move]) -> None:
    config = getattr(load_settings(), service)
    command = sys.argv[1:2]
    if command == ["migrate"]:
        from lore_common.stores.migrate import migrate_command

        migrate_command(config.database, Path(config.server.data_dir), schema())
    elif command == ["move"]:
        from lore_common.stores.transfer import move_command

        move_command(service, move())
    else:
        serve(f"lore_{service}.app:build_app", config.server)
