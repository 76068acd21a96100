"""`python -m lore_mem`: serve the mem service under granian (the app is imported in the worker only)."""

from lore_core.serve import serve
from lore_core.settings import load_settings


def main() -> None:
    serve("lore_mem.app:build_app", load_settings().mem.server)


if __name__ == "__main__":
    main()
