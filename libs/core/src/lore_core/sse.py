"""Server-sent events: how a route streams an answer (`stream: true`). Which events a cited answer
sends, and in what order, is `lore_common.answers`'s business; this module only puts them on the wire."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar.response import Stream

EVENT_STREAM = "text/event-stream"
# No proxy cache, and nginx-style proxies told not to buffer, so each event leaves as it is produced.
HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def encode(name: str, payload: Any) -> bytes:
    """One event: its name and its payload as one line of JSON."""
    return b"event: " + name.encode() + b"\ndata: " + msgspec.json.encode(payload) + b"\n\n"


async def _encoded(events: AsyncIterator[tuple[str, Any]]) -> AsyncIterator[bytes]:
    async for name, payload in events:
        yield encode(name, payload)


class EventStream(Stream):
    """A stream whose content type stays `text/event-stream`: Litestar's `Stream` takes the route's
    media type first, and a route that answers JSON unless asked to stream has JSON as its own."""

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["media_type"] = EVENT_STREAM
        return super().to_asgi_response(*args, **kwargs)


def event_stream(events: AsyncIterator[tuple[str, Any]]) -> Stream:
    """A `text/event-stream` response of `(name, payload)` events. When the client goes away, Litestar
    cancels the iteration, which closes the generators under it (the model's stream included)."""
    return EventStream(_encoded(events), media_type=EVENT_STREAM, headers=HEADERS)
