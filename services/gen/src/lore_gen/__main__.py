"""`python -m lore_gen`: serve the gen service; `python -m lore_gen migrate`: bring its relational
store to the latest schema; `python -m lore_gen move --to DIR`: copy its data into the stores
`DIR/lore.yaml` names (see `lore_common.commands`)."""

from lore_common.commands import main

if __name__ == "__main__":
    main("gen")
