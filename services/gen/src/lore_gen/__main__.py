"""`python -m lore_gen`: serve the gen service under granian (the app is imported in the worker only)."""

from lore_core.serve import serve
from lore_core.settings import load_settings


def main() -> None:
    serve("lore_gen.app:build_app", load_settings().gen.server)


if __name__ == "__main__":
    main()
