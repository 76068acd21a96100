"""`lore` (and `python -m lore_client`): the command line, which needs the `cli` extra."""

from __future__ import annotations

import sys


def main() -> None:
    # Compiled modules are cached even where PYTHONDONTWRITEBYTECODE is set: without the cache each
    # `lore` run compiles typer, rich and httpx again (about a second).
    sys.dont_write_bytecode = False
    try:
        from lore_client.cli import main as run
    except ModuleNotFoundError as exc:  # typer or rich missing
        sys.exit(f"the lore command needs {exc.name}: pip install 'lore-client[cli]'")
    run()


if __name__ == "__main__":
    main()
