"""`python -m lore_gen`: serve the gen service under granian (the app is imported in the worker only);
`python -m lore_gen migrate`: bring its relational store to the latest schema, then exit;
`python -m lore_gen move --to DIR`: copy its data into the stores `DIR/lore.yaml` names."""

import sys
from pathlib import Path

from lore_core.serve import serve
from lore_core.settings import load_settings


def main() -> None:
    config = load_settings().gen
    if sys.argv[1:] == ["migrate"]:
        from lore_common.stores.migrate import migrate_command
        from lore_gen.database import SCHEMA

        migrate_command(config.database, Path(config.server.data_dir), SCHEMA)
        return
    if sys.argv[1:2] == ["move"]:
        from lore_common.stores.transfer import move_command
        from lore_gen.move import move

        move_command("gen", move)
        return
    serve("lore_gen.app:build_app", config.server)


if __name__ == "__main__":
    main()
