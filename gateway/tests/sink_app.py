"""A stand-in downstream for gateway tests: counts streamed bodies, echoes headers and WebSocket text."""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any

from litestar import Litestar, Request, WebSocket, delete, get, post, websocket
from litestar.middleware import DefineMiddleware

from lore_core.logging import RequestIdMiddleware


@get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@post("/api/v1/docdb/sink", request_max_body_size=None, status_code=200)
async def sink(request: Request[Any, Any, Any]) -> dict[str, Any]:
    digest = hashlib.sha256()
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        digest.update(chunk)
    return {"size": size, "sha256": digest.hexdigest()}


@get("/api/v1/docdb/echo-headers")
async def echo_headers(request: Request[Any, Any, Any]) -> dict[str, Any]:
    return {"headers": dict(request.headers), "query": dict(request.query_params)}


@post("/api/v1/docdb/chat", status_code=200)
async def chat() -> dict[str, bool]:
    return {"success": True}


@delete("/api/v1/docdb/thing", status_code=200)
async def remove_thing() -> dict[str, bool]:
    return {"deleted": True}


@get("/api/v1/gen/big")
async def big(size: int) -> bytes:
    return b"x" * size


@websocket("/api/v1/gen/pipeline/stream")
async def echo(socket: WebSocket[Any, Any, Any]) -> None:
    await socket.accept()
    while True:
        text = await socket.receive_text()
        if text == "bye":
            await socket.close(code=1000)
            return
        if text == "query":  # what reached the service of the URL's query string
            await socket.send_text(socket.scope["query_string"].decode())
            continue
        await socket.send_text(f"echo:{text}")


NAME = os.environ.get("SINK_NAME", "sink")
SEEN: list[str] = []


@get("/api/v1/docdb/whoami")
async def whoami(wait: float = 0.0) -> dict[str, str]:
    SEEN.append("whoami")
    await asyncio.sleep(wait)
    return {"name": NAME}


@post("/api/v1/docdb/die", status_code=200)
async def die() -> None:
    """Exits mid-request: the caller's request reached this replica and got no answer."""
    SEEN.append("die")
    os._exit(1)


@get("/api/v1/docdb/seen")
async def seen() -> dict[str, Any]:
    return {"name": NAME, "seen": SEEN}


@get("/api/v1/docdb/items/{item_id:str}")
async def item(item_id: str) -> dict[str, str]:
    return {"id": item_id}


app = Litestar(
    route_handlers=[health, sink, chat, remove_thing, echo_headers, big, echo, whoami, die, seen, item],
    # As in every Lore service: request ids, and the matched route's template on each answer.
    middleware=[DefineMiddleware(RequestIdMiddleware)],
    logging_config=None,
)
