"""The common shape of a Lore service app: health, OpenAPI, request ids, errors, and honest 501s."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import msgspec
from litestar import Litestar, MediaType, Request, Response, get, route
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.config.app import AppConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.handlers import BaseRouteHandler
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse, OpenAPIType, Schema
from litestar.types import ControllerRouterHandler

from lore_core import __version__, internal, metrics, tracing
from lore_core.bounds import JSON_BODY_LIMIT as JSON_BODY_LIMIT  # the gateway names it here too
from lore_core.errors import error_body, exception_handlers
from lore_core.heap import frozen_after_startup
from lore_core.logging import RequestIdMiddleware, configure_logging
from lore_core.settings import Settings, load_settings
from lore_core.sse import EVENT_STREAM

HealthCheck = Callable[[], Awaitable[None]]
App = TypeVar("App")


class CheckResult(msgspec.Struct, omit_defaults=True):
    """One store's answer to the health probe: `up` with its latency, or `down` with the error."""

    status: str
    latency_ms: float | msgspec.UnsetType = msgspec.UNSET
    error: str | msgspec.UnsetType = msgspec.UNSET


class ModelsReport(msgspec.Struct, omit_defaults=True):
    """The models a service runs: chat model, default embedder (and its dimension), reranker URL
    (docdb, mem); gen has no embedder and reports the docdb it reads instead. Unset fields are left out."""

    llm: str
    embedder: str | msgspec.UnsetType = msgspec.UNSET
    embedding_dim: int | msgspec.UnsetType | None = msgspec.UNSET
    reranker: str | msgspec.UnsetType | None = msgspec.UNSET
    docdb_url: str | msgspec.UnsetType = msgspec.UNSET


class HealthReport(msgspec.Struct):
    status: str
    service: str
    version: str
    checks: dict[str, CheckResult]
    models: ModelsReport | None = None


@dataclass(frozen=True)
class PlannedRoute:
    """A contract route whose module is not built yet; it answers 501 naming what is missing."""

    methods: tuple[str, ...]
    path: str
    feature: str


def from_state(key: str) -> Provide:
    """A controller dependency: the service object the app's lifespan put in `app.state[key]`.

    Controllers declare `dependencies = {"datasets": from_state("datasets")}` and their handlers take
    `datasets: DatasetService`; a handler never reaches into `request.app.state` itself."""

    def provide(state: State) -> Any:
        return state[key]

    return Provide(provide, sync_to_thread=False)


def _operation_id(handler: Any, method: Any, components: list[str | Any]) -> str:
    parts = [str(getattr(c, "name", c)) for c in components]
    return f"{method.lower()}_" + "_".join(p.replace("-", "_") for p in parts if p) + "_not_built"


def planned_route_handlers(routes: Sequence[PlannedRoute]) -> list[BaseRouteHandler]:
    handlers: list[BaseRouteHandler] = []
    for planned in routes:
        message = f"{planned.feature} is not built yet in this version of Lore"

        def make(text: str) -> Callable[..., Awaitable[Response[Any]]]:
            async def not_built(request: Request[Any, Any, Any]) -> Response[Any]:
                return Response(error_body(501, text), status_code=501, media_type=MediaType.JSON)

            return not_built

        handler = route(
            planned.path,
            http_method=cast(Any, list(planned.methods)),
            name=f"planned:{','.join(planned.methods)}:{planned.path}",
            summary=f"Not built yet: {planned.feature}",
            description="Answers 501 until this module lands.",
            request_max_body_size=None,
            status_code=501,
            operation_id=_operation_id,
        )(make(message))
        handlers.append(handler)
    return handlers


async def run_health_checks(
    checks: dict[str, HealthCheck], limit_s: float = 2.0
) -> dict[str, dict[str, Any]]:
    async def one(name: str, check: HealthCheck) -> tuple[str, dict[str, Any]]:
        started = time.perf_counter()
        try:
            await asyncio.wait_for(check(), limit_s)
        except Exception as exc:  # a failing store is reported, never raised
            return name, {"status": "down", "error": f"{type(exc).__name__}: {exc}"}
        return name, {"status": "up", "latency_ms": round((time.perf_counter() - started) * 1000, 2)}

    results = await asyncio.gather(*(one(name, check) for name, check in checks.items()))
    return dict(results)


@get("/metrics", summary="Prometheus metrics", include_in_schema=False)
async def metrics_endpoint() -> Response[bytes]:
    """The process's metrics in the Prometheus text format (404 when `telemetry.metrics` is off)."""
    if not metrics.ENABLED:
        return Response(
            b"metrics are off (telemetry.metrics: false)\n", status_code=404, media_type="text/plain"
        )
    await metrics.refresh_queues()
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)


def create_service_app(
    *,
    service: str,
    route_handlers: Sequence[ControllerRouterHandler],
    planned: Sequence[PlannedRoute] = (),
    lifespan: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]] = (),
    health_checks: Callable[[Litestar], dict[str, HealthCheck]] | None = None,
    state: dict[str, Any] | None = None,
    description: str = "",
) -> Litestar:
    """Build a service: its own routes plus `/health`, `/schema`, request ids and one error shape."""

    @get("/health", summary="Service health")
    async def health(request: Request[Any, Any, Any]) -> Response[HealthReport]:
        checks = health_checks(request.app) if health_checks else {}
        results = await run_health_checks(checks)
        ok = all(item["status"] == "up" for item in results.values())
        providers = getattr(request.app.state, "providers", None)
        report = HealthReport(
            status="ok" if ok else "degraded",
            service=service,
            version=__version__,
            checks=msgspec.convert(results, dict[str, CheckResult]),
            models=msgspec.convert(providers.describe(), ModelsReport) if providers is not None else None,
        )
        return Response(report, status_code=200 if ok else 503)

    @get("/livez", summary="Liveness: the process answers", include_in_schema=False)
    async def livez() -> dict[str, str]:
        """For a liveness probe: answers while the process serves, whatever its stores do, so that a
        store outage (which `/health` reports as 503) never restarts healthy pods in a loop."""
        return {"status": "alive", "service": service}

    config = AppConfig(
        route_handlers=[
            health,
            livez,
            metrics_endpoint,
            *route_handlers,
            *planned_route_handlers(planned),
        ],
        middleware=[DefineMiddleware(RequestIdMiddleware)],
        exception_handlers=exception_handlers(),
        # Entered in order, so the freeze comes after the service's own start-up.
        lifespan=[*lifespan, frozen_after_startup],
        # JSON bodies are small; routes that take files set their own limit (or none, when they stream).
        request_max_body_size=JSON_BODY_LIMIT,
        openapi_config=OpenAPIConfig(
            title=f"Lore {service}",
            version=__version__,
            description=description or None,
            path="/schema",
            render_plugins=[ScalarRenderPlugin()],
        ),
        debug=False,
        # structlog owns our log lines; Litestar's own stdlib handler would double them.
        logging_config=None,
    )
    app = Litestar.from_config(config)
    for key, value in (state or {}).items():
        app.state[key] = value
    document_errors(app)
    document_streams(app)
    return app


# One server-sent event as a client parses it: its name and its data, one line of JSON.
SSE_EVENT = Schema(
    type=OpenAPIType.OBJECT,
    description=(
        "server-sent events, in order: `passages`, `delta` (answer text as the model writes it), "
        "`citations`, then `done` with the body the same request without `stream` answers; a failure "
        "is an `error` event `{code, message}`, then `done`"
    ),
    properties={
        "event": Schema(type=OpenAPIType.STRING, enum=["passages", "delta", "citations", "error", "done"]),
        "data": Schema(type=OpenAPIType.STRING, description="the event's payload as JSON"),
    },
    required=["event", "data"],
)


def document_streams(app: Litestar) -> None:
    """A route that answers JSON or, with `stream: true`, an event stream (`Model | Stream`): Litestar
    documents it as `oneOf [Model, {}]`, which every body matches twice. Say what it is instead: the
    JSON model, or `text/event-stream`."""
    openapi = app.plugins.get(OpenAPIPlugin).provide_openapi()
    for item in (openapi.paths or {}).values():
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method, None)
            for response in (operation.responses or {}).values() if operation else ():
                if not isinstance(response, OpenAPIResponse) or not response.content:
                    continue
                json_body = response.content.get("application/json")
                schema = json_body.schema if json_body else None
                alternatives = getattr(schema, "one_of", None) or []
                if len(alternatives) == 2 and Schema() in alternatives:
                    model = next(a for a in alternatives if a != Schema())
                    response.content = {
                        "application/json": OpenAPIMediaType(schema=model),
                        EVENT_STREAM: OpenAPIMediaType(schema=SSE_EVENT),
                    }


ERROR_STATUSES = ("400", "404", "500")


def error_schema() -> Schema:
    """The one error body (`lore_core.errors.error_body`) as the OpenAPI documents show it."""
    return Schema(
        type=OpenAPIType.OBJECT,
        required=["success", "code", "message"],
        properties={
            "success": Schema(type=OpenAPIType.BOOLEAN),
            "code": Schema(type=OpenAPIType.INTEGER),
            "message": Schema(type=OpenAPIType.STRING),
            "detail": Schema(),
        },
    )


def document_errors(app: Litestar) -> None:
    """Every operation documents the error body it really sends (our shape, not Litestar's default
    `{status_code, detail, extra}`), for 400/404/500 and any other error status it lists."""
    openapi = app.plugins.get(OpenAPIPlugin).provide_openapi()
    body = {"application/json": OpenAPIMediaType(schema=error_schema())}
    for path, item in (openapi.paths or {}).items():
        if path in ("/health", "/livez") or path.startswith("/schema"):
            continue
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method, None)
            if operation is None:
                continue
            responses = dict(operation.responses or {})
            for status in {*ERROR_STATUSES, *(code for code in responses if code[:1] in "45")}:
                known = responses.get(status)
                description = known.description if isinstance(known, OpenAPIResponse) else "Error"
                responses[status] = OpenAPIResponse(description=description, content=body)
            operation.responses = responses


def build_from_environment(service: str, create_app: Callable[[Settings], App]) -> App:
    """The body of every process's granian factory: settings from `$LORE_CONFIG_DIR` (default ./config)
    and `LORE__*`, logging, metrics and tracing set up for `service`, then the app."""
    settings = load_settings()
    configure_logging(settings.logging, service=service)
    metrics.configure(settings.telemetry.metrics)
    tracing.configure(settings.telemetry, service)
    internal.configure(settings.security)
    app = create_app(settings)
    # The services answer only callers holding the internal credential; the gateway answers clients.
    if service != "gateway":
        app = internal.guarded(app, settings.security, service)
    return cast(App, tracing.wrap_asgi(app))
