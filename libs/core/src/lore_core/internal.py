"""The credential between Lore's own processes: a service answers the gateway (and docdb answers gen),
not whoever reaches its port.

With `security.internal_token` set (one token, or two comma-separated during a rotation), docdb, gen
and mem refuse with 401 every request that does not carry one of the tokens in `x-lore-internal-token`,
except `/livez`, `/health` and `/metrics` (probes and scrapers hold no token). The gateway sends the
first token on every call it makes for a client, and gen sends it to docdb. Unset, a service accepts
every caller, as on a laptop; `lore-up` generates a token at start and hands it to every child.

Rotation without a failed request: (1) every process gets `new,old` except the senders, which keep
`old,new` (each accepts both, the senders still send old); (2) the senders get `new,old` (they send
new, which every service accepts); (3) every process gets `new`.
"""

from __future__ import annotations

import hmac
import json
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from lore_core import audit
from lore_core.settings import SecurityConfig

HEADER = "x-lore-internal-token"
OPEN_PATHS = frozenset({"/livez", "/health", "/metrics"})

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The token this process sends on its calls to other Lore processes (the first configured one).
_sending: str | None = None


# The TLS context of calls to other Lore services when they serve certificates of a private CA.
_client_ssl: ssl.SSLContext | None = None


def configure(security: SecurityConfig) -> None:
    """Remember the token this process sends (`outgoing_headers`) and the CA it trusts (`client_ssl`);
    called once at start."""
    global _sending, _client_ssl
    tokens = security.internal_tokens()
    _sending = tokens[0] if tokens else None
    _client_ssl = ssl.create_default_context(cafile=security.tls_ca) if security.tls_ca else None


def client_ssl() -> ssl.SSLContext | None:
    """The TLS context for `https://` calls to Lore's services (`security.tls_ca`); None: the system's."""
    return _client_ssl


def outgoing_headers() -> dict[str, str]:
    """The header a call to another Lore service carries: `{x-lore-internal-token: …}`, or {} when none
    is configured."""
    return {HEADER: _sending} if _sending else {}


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

    def __init__(self, app: ASGIApp, tokens: Sequence[str], service: str) -> None:
        self.app = app
        self.tokens = list(tokens)
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if (
            kind not in ("http", "websocket")
            or not self.tokens
            or scope["path"].rstrip("/") in OPEN_PATHS
            or accepted(_offered(scope.get("headers", [])), self.tokens)
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
    tokens = security.internal_tokens()
    return InternalAuth(app, tokens, service) if tokens else app
