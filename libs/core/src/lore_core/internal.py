"""The credential between Lore's own processes: a service answers the gateway (and docdb answers gen),
not whoever reaches its port.

With `security.internal_token` set (one token, or two comma-separated during a rotation), docdb, gen
and mem refuse with 401 every request that does not carry one of the tokens in `x-lore-internal-token`,
except `/livez`, `/health` and `/metrics` (probes and scrapers hold no token). The gateway sends the
first token on every call it makes for a client, and gen sends it to docdb. Unset, a service accepts
every caller, as on a laptop; `lore-up` generates a token at start and hands it to every child.

Rotation without a failed request: (1) every process gets `new,old` except the senders, which keep
`old,new` (each accepts both, the senders still send old); (2) the senders get `new,old` (they send
new, which every service accepts); (3) every process gets `new`. With `security.internal_token_file`
(the chart mounts its Secret there) each process re-reads the file within a second of a change, so the
three steps need no restart at all.
"""

from __future__ import annotations

import hmac
import json
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from lore_core import audit
from lore_core.settings import SecurityConfig

HEADER = "x-lore-internal-token"
# The API key a call is made for, as the gateway names it, on the calls of keys limited to knowledge
# bases: gen records it on the tasks such a call starts and shows them to that caller only (stored with
# the task, so every gateway and gen replica agrees). The gateway drops a client's own.
CALLER_HEADER = "x-lore-caller"
OPEN_PATHS = frozenset({"/livez", "/health", "/metrics"})

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RELOAD_EVERY_S = 1.0


class Tokens:
    """The accepted tokens, the first of which is sent: fixed, or read from a file and read again
    (at most once a second) when the file changes."""

    def __init__(self, fixed: Sequence[str] = (), path: str | None = None) -> None:
        self.fixed = list(fixed)
        self.path = path
        self._read: list[str] = []
        self._stamp: tuple[float, int] | None = None
        self._checked = 0.0
        self.current()

    @classmethod
    def of(cls, security: SecurityConfig) -> Tokens:
        return cls(security.internal_tokens(), security.internal_token_file)

    def current(self) -> list[str]:
        if self.path is None:
            return self.fixed
        now = time.monotonic()
        if now - self._checked >= RELOAD_EVERY_S or self._stamp is None:
            self._checked = now
            try:
                status = os.stat(self.path)
                stamp = (status.st_mtime, status.st_size)
                if stamp != self._stamp:
                    text = Path(self.path).read_text(encoding="utf-8")
                    self._read = [t.strip() for t in text.replace("\n", ",").split(",") if t.strip()]
                    self._stamp = stamp
            except OSError:
                pass  # a file being replaced: keep the tokens read last
        return self._read or self.fixed

    @property
    def configured(self) -> bool:
        return bool(self.fixed or self.path)


# The tokens of this process: it sends the first on its calls to other Lore processes.
_tokens = Tokens()
# The TLS context of calls to other Lore services when they serve certificates of a private CA.
_client_ssl: ssl.SSLContext | None = None


def configure(security: SecurityConfig) -> None:
    """Remember the tokens this process sends (`outgoing_headers`) and the CA it trusts (`client_ssl`);
    called once at start."""
    global _tokens, _client_ssl
    _tokens = Tokens.of(security)
    _client_ssl = ssl.create_default_context(cafile=security.tls_ca) if security.tls_ca else None


def client_ssl() -> ssl.SSLContext | None:
    """The TLS context for `https://` calls to Lore's services (`security.tls_ca`); None: the system's."""
    return _client_ssl


def outgoing_headers() -> dict[str, str]:
    """The header a call to another Lore service carries: `{x-lore-internal-token: …}`, or {} when none
    is configured."""
    tokens = _tokens.current()
    return {HEADER: tokens[0]} if tokens else {}


def accepted(offered: str | None, tokens: Sequence[str]) -> bool:
    """Whether `offered` is one of `tokens`, compared in constant time."""
    if not offered:
        return False
    found = False
    for token in tokens:
        found |= hmac.compare_digest(offered.encode(), token.encode())
    return found


def _offered(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    name = HEADER.encode()
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class InternalAuth:
    """ASGI wrapper of a service: requests without an accepted internal token are answered 401 (a
    WebSocket is closed with 1008) before they reach the app."""

    def __init__(self, app: ASGIApp, tokens: Tokens, service: str) -> None:
        self.app = app
        self.tokens = tokens
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if (
            kind not in ("http", "websocket")
            or scope["path"].rstrip("/") in OPEN_PATHS
            or accepted(_offered(scope.get("headers", [])), self.tokens.current())
        ):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        audit.record(
            "internal_credential",
            "refused",
            service=self.service,
            route=scope["path"],
            method=scope.get("method", "WEBSOCKET"),
            client=str(client[0]) if client else None,
        )
        message = (
            f"the {self.service} service answers only Lore's gateway: this call carries no valid "
            f"internal credential ({HEADER}); call the gateway instead"
        )
        if kind == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": "internal credential required"})
            return
        body = json.dumps({"success": False, "code": 401, "message": message, "detail": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def guarded(app: Any, security: SecurityConfig, service: str) -> Any:
    """`app` behind `InternalAuth` when tokens are configured, else `app` itself."""
    tokens = Tokens.of(security)
    return InternalAuth(app, tokens, service) if tokens.configured else app
