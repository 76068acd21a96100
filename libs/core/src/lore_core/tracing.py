"""OpenTelemetry traces, off unless an OTLP endpoint is configured.

When on: a server span per request (the ASGI instrumentation), the W3C `traceparent` sent on every
aiohttp call (gateway to service, service to service, the model SDKs), a span per SQL statement
(the SQLAlchemy instrumentation), and our own spans for model calls, vector, graph and object store
calls and parse stages. Every server span carries the request's `lore.request_id`. When off, `span` is
a no-op that costs a function call, and nothing is instrumented.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lore_core.settings import TelemetryConfig

ENABLED = False


def endpoint_of(config: TelemetryConfig) -> str | None:
    return config.otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None


def configure(config: TelemetryConfig, service: str) -> bool:
    """Start exporting spans when an endpoint is set; idempotent within a process."""
    global ENABLED
    endpoint = endpoint_of(config)
    if ENABLED or not endpoint:
        return ENABLED
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        resource=Resource.create({"service.name": f"lore-{service}", "service.namespace": "lore"}),
        sampler=ParentBased(TraceIdRatioBased(max(0.0, min(1.0, config.sample_ratio)))),
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=_traces_url(endpoint))))
    trace.set_tracer_provider(provider)
    AioHttpClientInstrumentor().instrument()
    try:
        from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
    except ImportError:  # the gateway has no relational store
        pass
    else:
        SQLAlchemyInstrumentor().instrument(enable_commenter=False)
    ENABLED = True
    return True


def _traces_url(endpoint: str) -> str:
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


def wrap_asgi(app: Any) -> Any:
    """The app inside a server span per request (health probes and metrics scrapes are left out)."""
    if not ENABLED:
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(
        app, excluded_urls="/health,/livez,/metrics", exclude_spans=["receive", "send"]
    )


def annotate_request(request_id: str) -> None:
    """Put the request id on the current server span, so a trace and a log line find each other."""
    if ENABLED:
        from opentelemetry import trace

        trace.get_current_span().set_attribute("lore.request_id", request_id)


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[None]:
    if not ENABLED:
        yield
        return
    from opentelemetry import trace

    with trace.get_tracer("lore").start_as_current_span(name, attributes=dict(attributes or {})):
        yield


class _NoSpan:
    def end(self) -> None:
        return None


def start_span(name: str, attributes: Mapping[str, Any] | None = None) -> Any:
    """A span that is ended by hand (`.end()`), for work whose boundaries are not one block: the
    stages of a parse. A no-op object when tracing is off."""
    if not ENABLED:
        return _NoSpan()
    from opentelemetry import trace

    return trace.get_tracer("lore").start_span(name, attributes=dict(attributes or {}))


def shutdown() -> None:
    """Flush spans still queued (at process exit)."""
    if ENABLED:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        flush = getattr(provider, "force_flush", None)
        if flush is not None:
            flush()
