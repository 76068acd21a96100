"""structlog set-up shared by every process: JSON off a terminal, one request id per request."""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

import structlog
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from lore_core import metrics, tracing
from lore_core.settings import LoggingConfig, is_secret_key, redact, redact_url

REQUEST_ID_HEADER = "x-request-id"
_MAX_REQUEST_ID = 128


def _redact_event(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Secrets never reach a log line, whatever a caller passed."""
    for key, value in list(event.items()):
        if is_secret_key(key) and value not in (None, ""):
            event[key] = "***"
        elif isinstance(value, dict | list):
            event[key] = redact(value)
        elif isinstance(value, str):
            event[key] = redact_url(value)
    return event


def configure_logging(config: LoggingConfig | None = None, service: str = "lore") -> None:
    config = config or LoggingConfig()
    level = logging.getLevelName(config.level.upper())
    if not isinstance(level, int):
        level = logging.INFO
    use_json = config.format == "json" or (config.format == "auto" and not sys.stderr.isatty())
    # Libraries log through the standard library: their warnings and errors reach stderr too.
    logging.basicConfig(level=max(level, logging.WARNING), format="%(levelname)s %(name)s: %(message)s")
    renderer: Any = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Look stderr up at each logger's creation, so a redirected stream (tests, daemons) is honoured.
        # WriteLogger writes a line and its newline in one call: `print` wrote them in two, and a
        # library's log line from another thread could land between them, joining two lines.
        logger_factory=lambda *_: structlog.WriteLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.bind_contextvars(service=service)


def get_logger(name: str | None = None) -> Any:
    return structlog.get_logger(name)


def request_id_from(headers: list[tuple[bytes, bytes]] | Any) -> str:
    """The caller's `x-request-id` when it is sane, else a fresh UUID."""
    for key, value in headers:
        if key.lower() == b"x-request-id":
            text = value.decode("latin-1").strip()
            if text and len(text) <= _MAX_REQUEST_ID and text.isprintable():
                return text
    return str(uuid.uuid4())


class RequestIdMiddleware:
    """ASGI middleware: binds the request id to every log line, returns it, and logs each request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.log = structlog.get_logger("lore.access")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(scope.get("headers", []))
        scope.setdefault("state", {})["request_id"] = request_id
        header = (REQUEST_ID_HEADER.encode(), request_id.encode())
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [h for h in message.get("headers", []) if h[0].lower() != header[0]]
                headers.append(header)
                if scope.get("path_template"):  # the gateway labels its metrics with it
                    headers.append((metrics.ROUTE_HEADER.encode(), str(scope["path_template"]).encode()))
                message["headers"] = headers
            await send(message)

        started = time.perf_counter()
        tracing.annotate_request(request_id)
        with structlog.contextvars.bound_contextvars(request_id=request_id):
            try:
                with metrics.in_flight():
                    await self.app(scope, receive, send_with_id)
            finally:
                seconds = time.perf_counter() - started
                route = str(scope.get("path_template") or "unmatched")
                metrics.observe_request(str(scope.get("method", "WS")), route, status, seconds)
                if scope["path"] not in ("/health", "/metrics"):
                    self.log.info(
                        "request",
                        method=scope.get("method", "WS"),
                        path=scope["path"],
                        status=status,
                        duration_ms=round(seconds * 1000, 2),
                    )


def current_request_id(scope: Scope | Any) -> str:
    state = scope.get("state", {}) if isinstance(scope, dict) else {}
    value = state.get("request_id")
    return str(value) if value else str(uuid.uuid4())
