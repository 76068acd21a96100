"""docdb's success envelope (see docs/docdb.md): every successful reply says `success: true`, then
an optional `message`, then the route's own fields."""

from __future__ import annotations

from typing import Any

import msgspec


def ok(message: str | None = None, **fields: Any) -> dict[str, Any]:
    """An untyped envelope; kept only for handlers not yet typed (docdb chat's error replies)."""
    body: dict[str, Any] = {"success": True}
    if message is not None:
        body["message"] = message
    body.update(fields)
    return body


class Success(msgspec.Struct, kw_only=True):
    """The envelope of typed replies: a reply Struct subclasses it and never sets `success`."""

    success: bool = True


class Message(Success, kw_only=True):
    """A reply that only says what was done: `{success, message}`."""

    message: str
