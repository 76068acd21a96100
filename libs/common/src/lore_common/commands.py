"""`python -m lore_<service> [migrate | move --to DIR]`, the same for every service: serve it under
granian (the app is imported in the worker only), bring its relational store to the latest schema, or
copy its data into other stores."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

from lore_core.serve import serve
from lore_core.settings import load_settings


def main(service: str) -> None:
    config = getattr(load_settings(), service)
    command = sys.argv[1:2]
    if command == ["migrate"]:
        from lore_common.stores.migrate import migrate_command

        schema = import_module(f"lore_{service}.database").SCHEMA
        migrate_command(config.database, Path(config.server.data_dir), schema)
    elif command == ["move"]:
        from lore_common.stores.transfer import move_command

        move_command(service, import_module(f"lore_{service}.move").move)
    else:
        serve(f"lore_{service}.app:build_app", config.server)
