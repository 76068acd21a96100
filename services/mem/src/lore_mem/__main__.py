"""`python -m lore_mem`: serve the mem service under granian (the app is imported in the worker only);
`python -m lore_mem migrate`: bring its relational store to the latest schema, then exit;
`python -m lore_mem move --to DIR`: copy its data into the stores `DIR/lore.yaml` names."""

import sys
from pathlib import Path

from lore_core.serve import serve
from lore_core.settings import load_settings


def main() -> None:
    config = load_settings().mem
    if sys.argv[1:] == ["migrate"]:
        from lore_common.stores.migrate import migrate_command
        from lore_mem.database import SCHEMA

        migrate_command(config.database, Path(config.server.data_dir), SCHEMA)
        return
    if sys.argv[1:2] == ["move"]:
        from lore_common.stores.transfer import move_command
        from lore_mem.move import move

        move_command("mem", move)
        return
    serve("lore_mem.app:build_app", config.server)


if __name__ == "__main__":
    main()
