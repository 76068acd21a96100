"""docdb's success envelope (contract section 7): every successful reply says `success: true`, then
an optional `message`, then the route's own fields."""

from __future__ import annotations

from typing import Any

import msgspec


def ok(message: str | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"success": True}
    if message is not None:
        body["message"] = message
    body.update(fields)
    return body


class Success(msgspec.Struct, kw_only=True):
    """The same envelope for typed replies: a reply Struct subclasses it and never sets `success`."""

    success: bool = True
