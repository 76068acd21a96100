"""Run a service factory under granian, the one server every Lore process uses."""

from __future__ import annotations

from granian.constants import Interfaces
from granian.server import Server

from lore_common.settings import ServerConfig


def serve(target: str, server: ServerConfig, workers: int = 1) -> None:
    """Serve `module:factory` on the configured address; blocks until SIGINT/SIGTERM."""
    Server(
        target,
        address=server.host,
        port=server.port,
        interface=Interfaces.ASGI,
        factory=True,
        workers=workers,
        log_access=False,
        websockets=True,
    ).serve()
