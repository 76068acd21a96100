"""Python client for the Lore API: `Lore` (blocking) and `AsyncLore` (asyncio), typed replies and errors.

Names are imported on first use (PEP 562): `lore --help` and `from lore_client.models import …` do not
load httpx and the transport until a client is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore_client.aio import AsyncLore
    from lore_client.errors import (
        AuthenticationError,
        BadRequest,
        Conflict,
        LoreError,
        NotFound,
        PayloadTooLarge,
        RateLimited,
        ServerError,
        TaskFailed,
        Unprocessable,
        Unreachable,
    )
    from lore_client.sync import Lore

_HOMES = {"AsyncLore": "lore_client.aio", "Lore": "lore_client.sync"}

__all__ = [
    "AsyncLore",
    "AuthenticationError",
    "BadRequest",
    "Conflict",
    "Lore",
    "LoreError",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ServerError",
    "TaskFailed",
    "Unprocessable",
    "Unreachable",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'lore_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES.get(name, "lore_client.errors")), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
