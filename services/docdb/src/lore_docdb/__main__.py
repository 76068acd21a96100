"""`python -m lore_docdb` (or `lore-docdb`): serve the docdb service.
`python -m lore_docdb migrate`: bring its relational store to the latest schema.
`python -m lore_docdb move --to DIR`: copy its data into the stores `DIR/lore.yaml` names.
(See `lore_common.commands`.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore_common import commands

if TYPE_CHECKING:
    from lore_common.stores.migrate import Schema


def schema() -> Schema:
    from lore_docdb.database import SCHEMA  # imported for `migrate` only

    return SCHEMA


def move() -> commands.Move:
    from lore_docdb.move import move  # imported for `move` only

    return move


def main() -> None:
    commands.main("docdb", schema=schema, move=move)


if __name__ == "__main__":
    main()
