"""`python -m lore_docdb`: serve the docdb service under granian (the app is imported in the worker only)."""

from lore_core.serve import serve
from lore_core.settings import load_settings


def main() -> None:
    serve("lore_docdb.app:build_app", load_settings().docdb.server)


if __name__ == "__main__":
    main()
