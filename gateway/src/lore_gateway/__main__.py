"""`python -m lore_gateway`: serve the gateway under granian (the app is imported in the worker only)."""

from lore_core.serve import serve
from lore_core.settings import ServerConfig, load_settings


def main() -> None:
    gateway = load_settings().gateway
    serve("lore_gateway.app:build_app", ServerConfig(host=gateway.host, port=gateway.port))


if __name__ == "__main__":
    main()
