"""Python client for the Lore API: `Lore` (blocking) and `AsyncLore` (asyncio), typed replies and errors."""

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
