"""`python -m lore_docdb`: serve the docdb service; `python -m lore_docdb migrate`: bring its relational
store to the latest schema; `python -m lore_docdb move --to DIR`: copy its data into the stores
`DIR/lore.yaml` names (see `lore_common.commands`)."""

from lore_common.commands import main

if __name__ == "__main__":
    main("docdb")
