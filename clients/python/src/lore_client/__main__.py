"""`lore` (and `python -m lore_client`): the command line, which needs the `cli` extra."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from lore_client.cli import main as run
    except ModuleNotFoundError as exc:  # typer or rich missing
        sys.exit(f"the lore command needs {exc.name}: pip install 'lore-client[cli]'")
    run()


if __name__ == "__main__":
    main()
