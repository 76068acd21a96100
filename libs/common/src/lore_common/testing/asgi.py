"""An in-process HTTP client for a Lore app whose lifespan runs on the test's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
from litestar import Litestar

from lore_core.testing import app_lifespan


class AppClient(httpx.AsyncClient):
    """Talks to `app` through ASGI; tests can also inspect its stores (`client.app.state`) directly,
    since everything runs on one loop."""

    def __init__(self, app: Litestar, base_url: str = "http://app.test", **kwargs: Any) -> None:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]  # Litestar's typed ASGI signature
        super().__init__(transport=transport, base_url=base_url, timeout=30, **kwargs)
        self.app = app


@contextlib.asynccontextmanager
async def running(app: Litestar, base_url: str) -> AsyncIterator[AppClient]:
    """Start the app's lifespan, yield a client, shut the app down."""
    async with app_lifespan(app), AppClient(app, base_url) as client:
        yield client


async def wait_done(client: AppClient, path: str, limit: float = 20.0) -> dict[str, Any]:
    """Poll a gen or mem status path until its `status` is completed or failed."""
    async with asyncio.timeout(limit):
        while True:
            body: dict[str, Any] = (await client.get(path)).json()
            if body["status"] in ("completed", "failed"):
                return body
            await asyncio.sleep(0.02)
