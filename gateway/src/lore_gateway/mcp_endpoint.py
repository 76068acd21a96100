"""`/mcp`, started on its first request: the MCP SDK and what it brings (Starlette, pydantic models)
cost the gateway ~35 MB and half a second of start-up, which an install that never serves an agent
should not pay."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lore_gateway.guard import Guard
from lore_gateway.proxy import Proxy, Receive, Scope, Send

MCP_PATH = "/mcp"


class McpEndpoint:
    def __init__(self, proxy: Proxy, guard: Guard) -> None:
        self.proxy = proxy
        self.guard = guard
        self._app: Any = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    async def _start(self) -> Any:
        async with self._lock:
            if self._app is None:
                from lore_gateway.agent_tools import AgentTools

                tools = await asyncio.to_thread(AgentTools, self.proxy, MCP_PATH, self.guard)
                ready = asyncio.Event()
                self._runner = asyncio.create_task(self._serve(tools, ready), name="mcp-sessions")
                await ready.wait()
                self._app = tools.app
        return self._app

    async def _serve(self, tools: Any, ready: asyncio.Event) -> None:
        """The SDK's session manager lives in one task (its task group must be left where entered)."""
        async with tools.server.session_manager.run():
            ready.set()
            await self._stop.wait()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app or await self._start()
        await app(scope, receive, send)

    @asynccontextmanager
    async def lifespan(self, _: Any = None) -> AsyncIterator[None]:
        try:
            yield
        finally:
            self._stop.set()
            if self._runner is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(self._runner, 5)
