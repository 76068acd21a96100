"""Run a service factory under granian, the one server every Lore process uses.

`python -m lore_<service>` runs one worker inside its own process, on granian's embedded server: a
supervisor process with a single child would cost ~30 MB of RSS per service for nothing. Containers
run the granian command line instead, where `LORE_WORKERS` > 1 uses granian's process supervisor."""

from __future__ import annotations

import asyncio
import importlib
import signal
import sys
from collections.abc import Callable
from typing import Any

from granian.constants import Interfaces
from granian.server.embed import Server

from lore_core.settings import ServerConfig


def _load(target: str) -> Callable[[], Any]:
    module, _, name = target.partition(":")
    factory: Callable[[], Any] = getattr(importlib.import_module(module), name)
    return factory


async def _serve(target: str, server: ServerConfig) -> None:
    embedded = Server(
        _load(target),
        address=server.host,
        port=server.port,
        interface=Interfaces.ASGI,
        factory=True,
        log_access=False,
        websockets=True,
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, embedded.stop)
    await embedded.serve()


def keep_bytecode() -> None:
    """Cache compiled modules even where PYTHONDONTWRITEBYTECODE is set (common in containers and CI).

    Without the cache every start compiles each module it imports again: about 7 CPU-seconds for one
    service, 24 for the stack, against 2.4 and 8 with it. Only modules actually imported are written
    (into the environment and the workspace's `__pycache__` folders, which git ignores)."""
    sys.dont_write_bytecode = False


def serve(target: str, server: ServerConfig) -> None:
    """Serve `module:factory` on the configured address; blocks until SIGINT/SIGTERM."""
    keep_bytecode()
    asyncio.run(_serve(target, server))
