"""docdb's success envelope (see docs/docdb.md): every successful reply says `success: true`, then
an optional `message`, then the route's own fields. A reply is a Struct that subclasses `Success`."""

from __future__ import annotations

import msgspec


class Success(msgspec.Struct, kw_only=True):
    """The envelope of typed replies: a reply Struct subclasses it and never sets `success`."""

    success: bool = True


class Message(Success, kw_only=True):
    """A reply that only says what was done: `{success, message}`."""

    message: str
