"""`AsyncLore`: the asynchronous client, one method per route plus the helpers users would otherwise write."""

from __future__ import annotations

from lore_client._core import decode
from lore_client._upload import Uploader
from lore_client._wait import Waiter
from lore_client.models import Health, Info, KeySelf


class AsyncLore(Uploader, Waiter):
    """The Lore API from asyncio code::

    async with AsyncLore("http://127.0.0.1:8000") as lore:
        await lore.upload("papers", ["papers/"])
        parse = await lore.parse("papers", ["papers"])
        await lore.wait(parse.tasks[0])
        answer = await lore.chat("papers", "What lowers blood pressure?")
    """

    async def info(self) -> Info:
        """The gateway's name and version (`GET /`)."""
        return await self._get("/", Info)

    async def health(self) -> Health:
        """The gateway's health and each service's with its stores (`GET /health`). A degraded stack
        answers 503, which is returned (`status` says what is down), not raised."""
        return decode(await self._send("GET", "/health", accept=(503,)), Health)

    async def keys_self(self) -> KeySelf:
        """The calling key's scopes and limits: modules, knowledge bases, datasets, memories and its
        workspace of the memory graph (`GET /api/v1/keys/self`; never the key)."""
        return await self._get("keys/self", KeySelf)
