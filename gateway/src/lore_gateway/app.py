"""The gateway: `/`, `/health`, `/metrics`, a merged OpenAPI document, the `/api/v1/<module>` proxy,
the MCP server for agents at `/mcp`, and the web console at `/console/`.

Proxied paths never enter Litestar: a thin ASGI dispatcher sends them straight to the streaming proxy,
so the gateway adds as little latency as it can; everything else is a small Litestar app.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import aiohttp
import msgspec
from litestar import Litestar, MediaType, Request, Response, get
from litestar.datastructures import CacheControlHeader
from litestar.middleware import DefineMiddleware
from litestar.static_files import create_static_files_router

from lore_core import __version__, audit, metrics
from lore_core.errors import error_body, exception_handlers
from lore_core.heap import frozen_after_startup
from lore_core.labels import TYPE_LABELS
from lore_core.logging import REQUEST_ID_HEADER, RequestIdMiddleware, request_id_from
from lore_core.settings import DisplayConfig, GatewayConfig, Settings
from lore_core.tasks import background
from lore_core.web import build_from_environment, metrics_endpoint
from lore_gateway.access import Access, Grant, Refusal
from lore_gateway.guard import Guard, current_limits, own_workspace, with_caller
from lore_gateway.mcp_endpoint import MCP_PATH, McpEndpoint
from lore_gateway.models import (
    ConsoleLabels,
    GatewayHealth,
    KeySelf,
    Liveness,
    MemoryScopeLimits,
    OpenApiDocument,
    ServiceInfo,
)
from lore_gateway.openai_api import OpenAiRoutes, openai_router
from lore_gateway.proxy import Proxy, Receive, Scope, Send

NAME = "lore"
OPENAPI_PATH = "/schema/openapi.json"
CONSOLE = Path(__file__).with_name("console")


KEYS_SELF = "/api/v1/keys/self"


def gateway_openapi() -> tuple[dict[str, Any], dict[str, Any]]:
    """The gateway's own `/api/v1` routes for the merged OpenAPI document (its paths, its schemas): the
    gateway serves no document of its own, so a client learns them here with the services' routes."""
    (reply,), schemas = msgspec.json.schema_components([KeySelf], ref_template="#/components/schemas/{name}")
    paths = {
        KEYS_SELF: {
            "get": {
                "summary": "The calling key's scopes and limits",
                "description": "Never the key itself. Without keys configured, `auth` is false and "
                "everything is open. See docs/security.md.",
                "operationId": "KeysSelf",
                "tags": ["keys"],
                "responses": {
                    "200": {
                        "description": "the key's limits",
                        "content": {"application/json": {"schema": reply}},
                    },
                    "401": {"description": "a missing or wrong API key (the one error body)"},
                },
            }
        }
    }
    return paths, schemas


class Gateway:
    """ASGI entry: proxied modules go to `Proxy`, the rest to the Litestar app."""

    def __init__(self, config: GatewayConfig, display: DisplayConfig | None = None) -> None:
        self.config = config
        self.display = display or DisplayConfig()
        self.proxy = Proxy(config.upstreams(), config.connect_timeout, config.replica_retry_after)
        self.guard = Guard(self.proxy)
        self.mcp = McpEndpoint(self.proxy, self.guard)
        self.access = Access(config)
        self.openai = OpenAiRoutes(self.proxy, self.access)
        self.app = self._build_litestar()

    @staticmethod
    async def _refuse(refusal: Refusal, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": refusal.detail[:120]})
            return
        body = json.dumps(error_body(refusal.status, refusal.detail)).encode()
        request_id = request_id_from(scope.get("headers", []))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (REQUEST_ID_HEADER.encode(), request_id.encode()),
        ]
        if refusal.status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="lore"'))
        if refusal.retry_after is not None:
            headers.append((b"retry-after", str(refusal.retry_after).encode()))
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _admit(self, scope: Scope, module: str | None) -> tuple[Grant | None, Refusal | None]:
        """Without keys everything passes; with them, `/api/v1/…` and `/mcp` need a Bearer key whose
        scopes, modules and rate allow the request. A browser cannot set headers on a WebSocket, so a
        WebSocket may offer the key as the `access_token` query parameter instead; it is removed
        before the request goes on."""
        if not self.access.enabled:
            return None, None
        token = ""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                kind, _, offered = value.decode("latin-1").partition(" ")
                if kind.lower() == "bearer":
                    token = offered.strip()
        if not token and scope["type"] == "websocket":
            token = _take_query_token(scope)
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        return self.access.check(token, module, method, scope["path"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
            grant, refusal = self._admit(scope, None)
            if refusal is not None:
                await self._refuse(refusal, scope, receive, send)
                return
            scope["path"] = MCP_PATH
            # The tools call the services themselves, within this key's limits (guard.current_limits).
            limited = current_limits.set(grant.limits if grant is not None and grant.limits.limited else None)
            try:
                await self._counted(MCP_PATH, self.mcp, scope, receive, send)
            finally:
                current_limits.reset(limited)
            return
        if scope["type"] in ("http", "websocket"):
            module = self.proxy.module_of(scope["path"])
            if module is not None:
                scope = with_caller(scope, None)  # only the guard names the caller (gen's task owner)
                grant, refusal = self._admit(scope, module)
                if refusal is not None:
                    await self._refuse(refusal, scope, receive, send)
                    return
                limits = grant.limits if grant is not None and grant.limits.limits_module(module) else None
                if scope["type"] == "http":
                    action = _admin_action(scope)
                    if action is not None:
                        send = _audited(send, action, grant, scope)
                    route = f"/api/v1/{module}"
                    forward = partial(self._counted, route, partial(self.proxy.http, module))
                    if limits is not None:
                        await self.guard.http(limits, module, scope, receive, send, forward)
                    else:
                        await forward(scope, receive, send)
                elif limits is not None:
                    await self.guard.websocket(
                        limits, module, scope, receive, send, partial(self.proxy.websocket, module)
                    )
                else:
                    await self.proxy.websocket(module, scope, receive, send)
                return
        await self.app(scope, receive, send)  # type: ignore[arg-type]

    @staticmethod
    async def _counted(
        route: str,
        handler: Callable[[Scope, Receive, Send], Awaitable[None]],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """A request outside Litestar (the proxy, `/mcp`), counted and timed under its route template:
        the one the service names in its answer (`x-lore-route`), else `route` (the module's prefix, for
        what no service answered)."""
        if not metrics.ENABLED:
            await handler(scope, receive, send)
            return
        status = 0
        marker = metrics.ROUTE_HEADER.encode()

        async def counted(message: dict[str, Any]) -> None:
            nonlocal status, route
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = message.get("headers") or []
                named = [value for key, value in headers if key.lower() == marker]
                if named:
                    route = named[0].decode("latin-1")
                    message["headers"] = [(k, v) for k, v in headers if k.lower() != marker]
            await send(message)

        started = time.perf_counter()
        try:
            with metrics.in_flight():
                await handler(scope, receive, counted)
        finally:
            metrics.observe_request(scope["method"], route, status, time.perf_counter() - started)

    # ------------------------------------------------------------ own routes

    async def downstream_health(self) -> dict[str, dict[str, Any]]:
        """Each module's health: up when one of its replicas is; with several replicas, each one's."""

        async def one(name: str) -> tuple[str, dict[str, Any]]:
            upstream = self.proxy.downstreams[name]
            probes = await asyncio.gather(
                *(self.proxy.probe(r, upstream, self.config.health_timeout) for r in upstream.replicas)
            )
            if len(probes) == 1:
                return name, probes[0]
            up = [p for p in probes if p["status"] == "up"]
            result: dict[str, Any] = {
                "status": "up" if up else "down",
                "url": upstream.url,
                "replicas": probes,
            }
            if up:
                result["latency_ms"] = min(p["latency_ms"] for p in up)
                result["checks"] = up[0].get("checks", {})
            return name, result

        return dict(await asyncio.gather(*(one(name) for name in self.proxy.downstreams)))

    async def watch_replicas(self) -> None:
        """Probe every replica of a module that has several, so one that died is left out before a
        request finds it, and one that came back gets requests again."""
        while True:
            await asyncio.sleep(self.config.health_interval)
            probes = [
                self.proxy.probe(replica, upstream, self.config.health_timeout)
                for upstream in self.proxy.downstreams.values()
                if len(upstream.replicas) > 1
                for replica in upstream.replicas
            ]
            await asyncio.gather(*probes)

    async def merged_openapi(self) -> OpenApiDocument:
        """The three services' OpenAPI documents as one; a service that is down is listed as missing."""
        merged = OpenApiDocument(
            openapi="3.1.0",
            info={"title": "Lore API", "version": __version__},
            paths={
                "/": {
                    "get": {
                        "summary": "Service name and version",
                        "responses": {"200": {"description": "ok"}},
                    }
                },
                "/health": {
                    "get": {
                        "summary": "Gateway and downstream health",
                        "responses": {
                            "200": {"description": "all up"},
                            "503": {"description": "one is down"},
                        },
                    }
                },
            },
            components={"schemas": {}},
        )
        own_paths, own_schemas = gateway_openapi()
        merged.paths.update(own_paths)
        merged.components["schemas"].update(own_schemas)
        missing: list[str] = []
        timeout = aiohttp.ClientTimeout(total=self.config.health_timeout * 2)
        for name, upstream in self.proxy.downstreams.items():
            replica = upstream.pick()
            assert replica is not None
            try:
                async with self.proxy.session.get(
                    f"{replica.url}{OPENAPI_PATH}", timeout=timeout
                ) as response:
                    response.raise_for_status()
                    document = await response.json(content_type=None)
            except Exception:
                missing.append(name)
                continue
            for path, item in document.get("paths", {}).items():
                if path.startswith("/api/"):
                    merged.paths[path] = item
            for schema_name, schema in document.get("components", {}).get("schemas", {}).items():
                merged.components["schemas"].setdefault(schema_name, schema)
        if missing:
            merged.info["x-missing-services"] = missing
        return merged

    def key_self(self, request: Request[Any, Any, Any]) -> Response[KeySelf]:
        """The calling key's limits; 401 (in the one error shape) for a missing or unknown key."""
        if not self.access.enabled:
            open_key = KeySelf(
                auth=False,
                name=None,
                scope="admin",
                modules=[],
                knowledge_bases=[],
                datasets=[],
                memory=None,
                rate_per_second=None,
            )
            return Response(open_key)
        kind, _, offered = request.headers.get("authorization", "").partition(" ")
        grant = self.access.grant(offered.strip() if kind.lower() == "bearer" else "")
        if grant is None:
            message = "missing or wrong API key: send `Authorization: Bearer <key>`"
            audit.record("refused", "401", key=None, route=request.url.path, method="GET")
            return Response(
                error_body(401, message),  # type: ignore[arg-type]  # the one error body, not KeySelf
                status_code=401,
                headers={"www-authenticate": 'Bearer realm="lore"'},
            )
        memory = grant.limits.memory
        return Response(
            KeySelf(
                auth=True,
                name=grant.name,
                scope=grant.scope,
                modules=sorted(grant.modules),
                knowledge_bases=list(grant.limits.knowledge_bases),
                datasets=list(grant.limits.datasets),
                memory=None
                if memory is None
                else MemoryScopeLimits(
                    user_id=memory.user_id,
                    agent_id=memory.agent_id,
                    run_id=memory.run_id,
                    kb=memory.kb,
                    workspace=(memory.workspace or own_workspace(memory)) if memory.kb else None,
                ),
                rate_per_second=grant.rate_per_second,
            )
        )

    def replica_watch(self, _: Litestar) -> AbstractAsyncContextManager[None]:
        return background(self.watch_replicas(), "replica-watch")

    def _build_litestar(self) -> Litestar:
        gateway = self

        @get("/", summary="Service name and version")
        async def index() -> ServiceInfo:
            return ServiceInfo(name=NAME, version=__version__)

        @get("/health", summary="Gateway and downstream health")
        async def health() -> Response[GatewayHealth]:
            services = await gateway.downstream_health()
            failing = sorted(name for name, item in services.items() if item["status"] != "up")
            body = GatewayHealth(
                status="ok" if not failing else "degraded",
                version=__version__,
                gateway={"status": "up"},
                services=services,
            )
            if failing:
                body.failing = failing
                body.detail = f"downstream down: {', '.join(failing)}"
            return Response(body, status_code=503 if failing else 200, media_type=MediaType.JSON)

        @get(KEYS_SELF, summary="The calling key's scopes and limits")
        async def key_self(request: Request[Any, Any, Any]) -> Response[KeySelf]:
            return gateway.key_self(request)

        @get("/livez", summary="Liveness: the process answers", include_in_schema=False)
        async def livez() -> Liveness:
            return Liveness(status="alive", service="gateway")

        @get(OPENAPI_PATH, summary="OpenAPI document of the whole API", include_in_schema=False)
        async def openapi(request: Request[Any, Any, Any]) -> OpenApiDocument:
            return await gateway.merged_openapi()

        @get("/schema", summary="The API reference, rendered", include_in_schema=False)
        async def reference() -> Response[str]:
            document = await gateway.merged_openapi()
            return Response(render_reference(document), media_type=MediaType.HTML)

        @get("/console/labels.json", summary="The labels the console shows", include_in_schema=False)
        async def console_labels() -> ConsoleLabels:
            language = gateway.display.language
            return ConsoleLabels(language=language, types=TYPE_LABELS[language])

        # The console: static files (no build step, libraries vendored) that call the public API.
        console = create_static_files_router(
            "/console",
            directories=[CONSOLE],
            html_mode=True,
            name="console",
            cache_control=CacheControlHeader(no_cache=True),
        )
        return Litestar(
            route_handlers=[
                index,
                reference,
                health,
                livez,
                openapi,
                metrics_endpoint,
                console_labels,
                key_self,
                console,
                openai_router(self.openai),
            ],
            middleware=[DefineMiddleware(RequestIdMiddleware)],
            exception_handlers=exception_handlers(),
            on_shutdown=[gateway.proxy.close],
            lifespan=[gateway.replica_watch, gateway.mcp.lifespan, frozen_after_startup],
            openapi_config=None,
            logging_config=None,
        )


def render_reference(document: OpenApiDocument) -> str:
    """The merged OpenAPI document as one HTML page: each route, its method and summary, grouped by
    module, with a link to the JSON document (no script, so it needs nothing from the internet)."""
    rows: list[str] = []
    for path, item in sorted(document.paths.items()):
        for method, operation in item.items():
            if not isinstance(operation, dict):
                continue
            summary = html.escape(str(operation.get("summary") or ""))
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                f"<td>{summary}</td></tr>"
            )
    missing = document.info.get("x-missing-services")
    note = f"<p>Not reachable now: {html.escape(', '.join(missing))}.</p>" if missing else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Lore API reference</title></head><body>"
        f"<h1>Lore API {html.escape(str(document.info.get('version', '')))}</h1>{note}"
        f"<p>The whole document: <a href='{OPENAPI_PATH}'>{OPENAPI_PATH}</a> (OpenAPI 3.1).</p>"
        "<table><tr><th>method</th><th>path</th><th>what it does</th></tr>" + "".join(rows) + "</table>"
        "</body></html>"
    )


def _admin_action(scope: Scope) -> str | None:
    """The audited admin action a proxied request is: a delete or a configuration reload."""
    if scope["method"] == "DELETE":
        return "delete"
    if scope["path"].rstrip("/").endswith("/config/reload"):
        return "config_reload"
    return None


def _audited(send: Send, action: str, grant: Grant | None, scope: Scope) -> Send:
    """`send`, noting the answer's status in the audit trail."""

    async def audited(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status = int(message["status"])
            audit.record(
                action,
                "ok" if status < 400 else str(status),
                key=grant.name if grant is not None else None,
                route=scope["path"],
                method=scope["method"],
                status=status,
            )
        await send(message)

    return audited


def _take_query_token(scope: Scope) -> str:
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    token = next((value for name, value in pairs if name == "access_token"), "")
    scope["query_string"] = urlencode([(n, v) for n, v in pairs if n != "access_token"]).encode("latin-1")
    return token


def create_app(settings: Settings) -> Gateway:
    return Gateway(settings.gateway, settings.display)


def build_app() -> Gateway:
    return build_from_environment("gateway", create_app)
