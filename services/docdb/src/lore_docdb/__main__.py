"""`python -m lore_docdb`: serve the docdb service under granian (the app is imported in the worker only);
`python -m lore_docdb migrate`: bring its relational store to the latest schema, then exit;
`python -m lore_docdb move --to DIR`: copy its data into the stores `DIR/lore.yaml` names."""

import sys
from pathlib import Path

from lore_core.serve import serve
from lore_core.settings import load_settings


def main() -> None:
    config = load_settings().docdb
    if sys.argv[1:] == ["migrate"]:
        from lore_common.stores.migrate import migrate_command
        from lore_docdb.database import SCHEMA

        migrate_command(config.database, Path(config.server.data_dir), SCHEMA)
        return
    if sys.argv[1:2] == ["move"]:
        from lore_common.stores.transfer import move_command
        from lore_docdb.move import move

        move_command("docdb", move)
        return
    serve("lore_docdb.app:build_app", config.server)


if __name__ == "__main__":
    main()
