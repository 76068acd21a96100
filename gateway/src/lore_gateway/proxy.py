"""Streaming reverse proxy for `/api/v1/{docdb,gen,mem}/...`, HTTP and WebSocket, as raw ASGI.

Bodies are streamed both ways chunk by chunk (a 2 GB upload never sits in memory); the gateway adds no
body-size cap of its own. A downstream that cannot be reached answers 502 naming it within the
connect timeout.

A module may have several replicas: each request goes to the healthy one with the fewest requests in
flight. A replica that refuses a connection or fails a health probe is left out for a while. A request
moves to another replica only when that cannot run it twice: the first replica was never reached (the
connection was refused, so nothing was sent), or the method is idempotent and no body was sent yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec
import structlog
from yarl import URL

from lore_core import internal, metrics, tracing
from lore_core.errors import error_body
from lore_core.logging import REQUEST_ID_HEADER, request_id_from

log = structlog.get_logger("lore.gateway")

# Plain ASGI types: the proxy handles raw messages of both protocols, so Litestar's TypedDicts don't fit.
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"host",
    }
)
WS_SKIP = HOP_BY_HOP | {
    b"sec-websocket-key",
    b"sec-websocket-version",
    b"sec-websocket-extensions",
    b"sec-websocket-accept",
    b"sec-websocket-protocol",
    b"content-length",
}


# A client's own internal-credential header is dropped: only the gateway's reaches a service.
INTERNAL_HEADER = internal.HEADER.encode()
EVENT_STREAM = "text/event-stream"
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
MAX_RETRY_AFTER_S = 30.0


class ClientGone(Exception):
    """The client disconnected while its body was being forwarded."""


@dataclass
class Replica:
    url: str
    in_flight: int = 0
    failures: int = 0
    down_until: float = 0.0
    # Whether a probe ever found it up: one still starting (every `lore-up`) is not reported as down.
    seen_up: bool = False


class Upstream:
    """The replicas of one module and what the gateway knows of each."""

    def __init__(self, urls: Sequence[str], retry_after: float) -> None:
        self.replicas = [Replica(url.rstrip("/")) for url in urls]
        self.retry_after = retry_after
        self._turn = 0

    @property
    def url(self) -> str:
        """The module's address as users configured it (its replicas, comma-separated)."""
        return ", ".join(r.url for r in self.replicas)

    def pick(self, tried: Collection[str] = ()) -> Replica | None:
        """The healthy replica with the fewest requests in flight (ties in turn); when every replica is
        out, the one due back first, so that a recovered service is found without waiting."""
        now = time.monotonic()
        left = [r for r in self.replicas if r.url not in tried]
        if not left:
            return None
        healthy = [r for r in left if r.down_until <= now]
        if not healthy:
            return min(left, key=lambda r: r.down_until)
        fewest = min(r.in_flight for r in healthy)
        best = [r for r in healthy if r.in_flight == fewest]
        self._turn += 1
        return best[self._turn % len(best)]

    def failed(self, replica: Replica) -> None:
        replica.failures += 1
        wait = min(MAX_RETRY_AFTER_S, self.retry_after * 2 ** (replica.failures - 1))
        replica.down_until = time.monotonic() + wait

    @staticmethod
    def succeeded(replica: Replica) -> None:
        replica.failures = 0
        replica.down_until = 0.0


def _json(status: int, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    payload = msgspec.json.encode(body)
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
    }
    return start, {"type": "http.response.body", "body": payload, "more_body": False}


class Proxy:
    """Forwards requests to the downstream that owns the module segment of the path."""

    def __init__(
        self, downstreams: dict[str, list[str]], connect_timeout: float, retry_after: float = 2.0
    ) -> None:
        self.downstreams = {name: Upstream(urls, retry_after) for name, urls in downstreams.items()}
        self.connect_timeout = connect_timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is not None and not self._session.closed:
            # The internal credential may change while the gateway runs (security.internal_token_file).
            headers = self._session.headers
            for name, value in internal.outgoing_headers().items():
                if headers.get(name) != value:
                    headers[name] = value
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=0, ttl_dns_cache=300, enable_cleanup_closed=True, ssl=internal.client_ssl() or True
                ),
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=self.connect_timeout, sock_connect=self.connect_timeout
                ),
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
                cookie_jar=aiohttp.DummyCookieJar(),
                # The internal credential (`security.internal_token`) on every call to a service: the
                # proxied ones, MCP's tools, the OpenAI routes, health probes and the OpenAPI merge.
                headers=internal.outgoing_headers(),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    def module_of(self, path: str) -> str | None:
        # /api/v1/<module>/... → <module>
        parts = path.split("/", 4)
        if len(parts) >= 4 and parts[1] == "api" and parts[2] == "v1" and parts[3] in self.downstreams:
            return parts[3]
        return None

    @staticmethod
    def _target(base: str, scope: Scope, websocket: bool = False) -> URL:
        if websocket:
            base = "ws" + base[4:] if base.startswith("http") else base
        raw_path = scope.get("raw_path") or scope["path"].encode()
        target = base + raw_path.decode("latin-1")
        query = scope.get("query_string", b"")
        if query:
            target += "?" + query.decode("latin-1")
        return URL(target, encoded=True)

    @staticmethod
    def _forward_headers(
        scope: Scope, request_id: str, skip: frozenset[bytes] = HOP_BY_HOP
    ) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = []
        host = ""
        for key, value in scope.get("headers", []):
            name = key.lower()
            if name == b"host":
                host = value.decode("latin-1")
            if name in skip or name == REQUEST_ID_HEADER.encode() or name == INTERNAL_HEADER:
                continue
            headers.append((key.decode("latin-1"), value.decode("latin-1")))
        headers.append((REQUEST_ID_HEADER, request_id))
        client = scope.get("client")
        if client:
            headers.append(("x-forwarded-for", str(client[0])))
        if host:
            headers.append(("x-forwarded-host", host))
        headers.append(("x-forwarded-proto", str(scope.get("scheme", "http"))))
        return headers

    @staticmethod
    def _has_body(scope: Scope) -> bool:
        for key, value in scope.get("headers", []):
            name = key.lower()
            if name == b"transfer-encoding":
                return True
            if name == b"content-length":
                return value.strip() not in (b"0", b"")
        return False

    async def _alive(self, base: str) -> bool:
        """Whether the service still answers (it refused a body) or is gone (it died mid-request)."""
        try:
            timeout = aiohttp.ClientTimeout(total=2)
            async with self.session.get(f"{base}/health", timeout=timeout) as response:
                return response.status < 500 or response.status == 503
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def probe(self, replica: Replica, upstream: Upstream, limit_s: float) -> dict[str, Any]:
        """One `/health` probe; a replica that fails it gets no requests until it is due back."""
        started = time.perf_counter()
        try:
            client_timeout = aiohttp.ClientTimeout(total=limit_s)
            async with self.session.get(f"{replica.url}/health", timeout=client_timeout) as response:
                body = await response.json(content_type=None)
                up = response.status == 200
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            if not replica.failures and replica.seen_up:  # say it once, when the replica goes down
                log.warning("replica_down", url=replica.url, error=error)
            upstream.failed(replica)
            return {"status": "down", "url": replica.url, "error": error}
        if up:
            if replica.failures and replica.seen_up:
                log.info("replica_up", url=replica.url)
            replica.seen_up = True
            upstream.succeeded(replica)
        else:
            if not replica.failures and replica.seen_up:
                log.warning("replica_down", url=replica.url, status=response.status)
            upstream.failed(replica)
        result: dict[str, Any] = {
            "status": "up" if up else "down",
            "url": replica.url,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
        }
        if isinstance(body, dict) and "checks" in body:
            result["checks"] = body["checks"]
        return result

    async def http(self, module: str, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = request_id_from(scope.get("headers", []))
        tracing.annotate_request(request_id)
        upstream = self.downstreams[module]
        headers = self._forward_headers(scope, request_id)
        body_sent = False
        # Set once the request body is read to its end: only then may the event relay listen for the
        # client's disconnect, since two receive() calls at once (aiohttp still sending the body's last,
        # empty part while the service already answers) can hand the relay a disconnect that never was.
        body_read = asyncio.Event()

        async def body() -> AsyncIterator[bytes]:
            nonlocal body_sent
            chunk: bytes
            while True:
                message = await receive()
                body_sent = True
                if message["type"] == "http.disconnect":
                    body_read.set()
                    raise ClientGone
                chunk = message.get("body", b"")
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    body_read.set()
                    return

        has_body = self._has_body(scope)
        tried: set[str] = set()
        while True:
            replica = upstream.pick(tried)
            assert replica is not None  # an upstream has at least one replica; `tried` grows by one a turn
            tried.add(replica.url)
            url = self._target(replica.url, scope)
            data = body() if has_body else None
            if not has_body:
                body_read.set()
            replica.in_flight += 1
            try:
                try:
                    response = await self.session.request(
                        scope["method"], url, headers=headers, data=data, allow_redirects=False, compress=None
                    )
                except ClientGone:
                    return
                except (aiohttp.ClientConnectionError, TimeoutError, OSError) as exc:
                    never_reached = isinstance(exc, aiohttp.ClientConnectorError)
                    if never_reached:
                        upstream.failed(replica)
                    movable = not body_sent and (never_reached or scope["method"] in IDEMPOTENT)
                    if movable and upstream.pick(tried) is not None:
                        log.warning(
                            "downstream_replica_skipped",
                            module=module,
                            url=replica.url,
                            error=str(exc) or type(exc).__name__,
                            request_id=request_id,
                        )
                        continue
                    await self._failed(module, replica.url, exc, has_body, request_id, send)
                    return
                upstream.succeeded(replica)
                if response.content_type == EVENT_STREAM:
                    await self._relay_events(module, response, request_id, send, receive, body_read)
                else:
                    await self._relay(module, response, request_id, send)
                return
            finally:
                replica.in_flight -= 1

    async def _failed(
        self, module: str, base: str, exc: BaseException, has_body: bool, request_id: str, send: Send
    ) -> None:
        if has_body and _closed_while_sending(exc) and await self._alive(base):
            # The service answered early (413) and closed while the body was still arriving; the
            # HTTP client cannot read that early answer, so say what it was.
            metrics.upstream_error(module, "body_refused")
            start, end = _json(
                413,
                error_body(
                    413,
                    f"the {module} service refused the request body before it was fully sent: it is "
                    "larger than this route accepts. JSON bodies may hold up to 10 MB; a file larger "
                    "than one request may carry (docdb.max_upload_size, 512 MiB unless set) goes in "
                    "chunks, which have no size limit: POST …/datasets/{dataset}/upload/init, each "
                    "chunk, then …/complete (lore ingest and the client's upload do so)",
                    {"service": module},
                )
                | {"service": module},  # also where clients of earlier versions read it
            )
        else:
            reason = str(exc) or type(exc).__name__
            metrics.upstream_error(module, "timeout" if isinstance(exc, TimeoutError) else "unreachable")
            log.warning(
                "downstream_unreachable", module=module, url=base, error=reason, request_id=request_id
            )
            start, end = _json(
                502,
                error_body(
                    502, f"the {module} service is unreachable at {base}: {reason}", {"service": module}
                )
                | {"service": module},
            )
        start["headers"].append((REQUEST_ID_HEADER.encode(), request_id.encode()))
        await send(start)
        await send(end)

    async def _relay_events(
        self,
        module: str,
        response: aiohttp.ClientResponse,
        request_id: str,
        send: Send,
        receive: Receive,
        body_read: asyncio.Event,
    ) -> None:
        """An event stream, relayed event by event as the service sends it; when the client goes away,
        the connection to the service is dropped, so that it stops (and stops its model call)."""

        async def client_gone() -> None:
            await body_read.wait()
            while (await receive())["type"] != "http.disconnect":
                pass

        relay = asyncio.ensure_future(self._relay(module, response, request_id, send))
        watch = asyncio.ensure_future(client_gone())
        try:
            await asyncio.wait((relay, watch), return_when=asyncio.FIRST_COMPLETED)
        finally:
            left = watch.done() and not watch.cancelled() and watch.exception() is None
            for task in (relay, watch):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if left:
                log.info("client_left_stream", module=module, request_id=request_id)
                response.close()

    @staticmethod
    async def _relay(module: str, response: aiohttp.ClientResponse, request_id: str, send: Send) -> None:
        async with response:
            out_headers = [
                (key.lower(), value) for key, value in response.raw_headers if key.lower() not in HOP_BY_HOP
            ]
            if not any(key == REQUEST_ID_HEADER.encode() for key, _ in out_headers):
                out_headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
            await send({"type": "http.response.start", "status": response.status, "headers": out_headers})
            try:
                async for chunk in response.content.iter_any():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except aiohttp.ClientPayloadError as exc:
                metrics.upstream_error(module, "body_broken")
                log.warning("downstream_body_broken", module=module, error=str(exc), request_id=request_id)
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def websocket(self, module: str, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = request_id_from(scope.get("headers", []))
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        protocols: Iterable[str] = scope.get("subprotocols") or ()
        replicas = self.downstreams[module]
        tried: set[str] = set()
        upstream: aiohttp.ClientWebSocketResponse | None = None
        while upstream is None and (replica := replicas.pick(tried)) is not None:
            tried.add(replica.url)
            try:
                upstream = await self.session.ws_connect(
                    self._target(replica.url, scope, websocket=True),
                    headers=self._forward_headers(scope, request_id, WS_SKIP),
                    protocols=tuple(protocols),
                    autoping=True,
                    max_msg_size=0,
                    timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=5.0),
                )
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                log.warning(
                    "downstream_ws_unreachable",
                    module=module,
                    url=replica.url,
                    error=str(exc),
                    request_id=request_id,
                )
                metrics.upstream_error(module, "websocket")
                if not isinstance(exc, aiohttp.ClientConnectorError):
                    break  # the replica was reached and refused: another would refuse too
                replicas.failed(replica)  # never reached: a handshake carries no work, try the next
        if upstream is None:
            await send({"type": "websocket.accept"})
            await send(
                {"type": "websocket.close", "code": 1011, "reason": f"{module} service unreachable"[:120]}
            )
            return
        accept: dict[str, Any] = {
            "type": "websocket.accept",
            "headers": [(b"x-request-id", request_id.encode())],
        }
        if upstream.protocol:
            accept["subprotocol"] = upstream.protocol
        await send(accept)

        async def client_to_upstream() -> None:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    await upstream.close(code=sendable_close_code(message.get("code")))
                    return
                if message.get("text") is not None:
                    await upstream.send_str(message["text"])
                elif message.get("bytes") is not None:
                    await upstream.send_bytes(message["bytes"])

        async def upstream_to_client() -> None:
            async for message in upstream:
                if message.type == aiohttp.WSMsgType.TEXT:
                    await send({"type": "websocket.send", "text": message.data})
                elif message.type == aiohttp.WSMsgType.BINARY:
                    await send({"type": "websocket.send", "bytes": message.data})
                elif message.type in (aiohttp.WSMsgType.ERROR, aiohttp.WSMsgType.CLOSE):
                    break

        from_client = asyncio.create_task(client_to_upstream())
        from_upstream = asyncio.create_task(upstream_to_client())
        try:
            done, _ = await asyncio.wait((from_client, from_upstream), return_when=asyncio.FIRST_COMPLETED)
            for task in (from_client, from_upstream):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if from_upstream in done:
                # The service ended the conversation: pass its close code on to the client.
                with contextlib.suppress(Exception):
                    code = sendable_close_code(upstream.close_code)
                    await send({"type": "websocket.close", "code": code, "reason": ""})
        finally:
            await upstream.close()


def sendable_close_code(code: int | None) -> int:
    """A close code one side reported, as one that may be sent on: 1005 (no code given) and 1006 (the
    connection dropped) only describe a closure, and a browser fails a connection closed with them."""
    if code is None or code == 1005:
        return 1000
    if code in (1004, 1006, 1015) or not 1000 <= code <= 4999:
        return 1011
    return code


def _closed_while_sending(exc: BaseException) -> bool:
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, OSError) and current.errno in (errno.EPIPE, errno.ECONNRESET):
            return True
        current = current.__cause__ or current.__context__
    return False
