"""Prometheus metrics of a Lore process, served at `/metrics`.

Labels are low-cardinality by design: route templates (never paths with ids), providers and model
names, store kinds, task states. One process per service, so Prometheus's own `job`/`instance` labels
tell services and replicas apart. `configure` turns recording off (`telemetry.metrics: false`), which
the chat benchmark uses to measure what metrics cost.
"""

from __future__ import annotations

import functools
import platform
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, Protocol, TypeVar

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest

from lore_core import __version__, tracing

log = structlog.get_logger("lore.metrics")

ENABLED = True

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_MODEL_LATENCY = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
_STORE_LATENCY = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)

REQUESTS = Counter(
    "lore_http_requests",
    "HTTP requests answered, by route template and status",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "lore_http_request_duration_seconds",
    "Time to answer an HTTP request (a streamed answer: to its last byte)",
    ["method", "route"],
    buckets=_LATENCY,
)
IN_FLIGHT = Gauge("lore_http_requests_in_flight", "HTTP requests being answered now")
BUILD_INFO = Gauge(
    "lore_build_info", "Always 1: the Lore version and Python this process runs", ["version", "python"]
)
BUILD_INFO.labels(__version__, platform.python_version()).set(1)
MODEL_CALLS = Counter(
    "lore_model_calls",
    "Calls to a language model, by outcome (ok or error)",
    ["provider", "model", "outcome"],
)
MODEL_SECONDS = Histogram(
    "lore_model_call_duration_seconds",
    "Time of a model call, retries included",
    ["provider", "model"],
    buckets=_MODEL_LATENCY,
)
MODEL_TOKENS = Counter(
    "lore_model_tokens",
    "Tokens the provider reported, direction in or out",
    ["provider", "model", "direction"],
)
MODEL_COST = Counter(
    "lore_model_cost", "Cost of model calls by the configured price table", ["provider", "model"]
)
MODEL_CACHE_HITS = Counter(
    "lore_model_cache_hits", "Structured model replies served from the extraction cache", ["model"]
)
MODEL_RETRIES = Counter(
    "lore_model_retries", "Model calls retried after a 429, 5xx or time-out", ["provider", "model"]
)
EMBED_BATCH = Histogram(
    "lore_embedder_batch_size",
    "Texts per embedder call",
    ["model"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
)
EMBED_SECONDS = Histogram(
    "lore_embedder_duration_seconds", "Time of an embedder call", ["model"], buckets=_LATENCY
)
STORE_SECONDS = Histogram(
    "lore_store_call_duration_seconds",
    "Time of a call to a store (relational, vector, graph, object)",
    ["store", "operation"],
    buckets=_STORE_LATENCY,
)
STORE_ERRORS = Counter("lore_store_errors", "Store calls that raised", ["store", "operation"])
TASKS = Counter(
    "lore_task_transitions",
    "Background tasks entering a state (queued, running, done, failed…)",
    ["kind", "state"],
)
TASK_STAGE_SECONDS = Histogram(
    "lore_task_stage_duration_seconds",
    "Time a task spent in one stage of its pipeline",
    ["kind", "stage"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0),
)
QUEUE_DEPTH = Gauge(
    "lore_jobs_unfinished",
    "Background jobs accepted and not finished, by kind and state (submitted = waiting in the queue); "
    "read from the job store when /metrics is scraped",
    ["kind", "state"],
)
UPSTREAM_ERRORS = Counter(
    "lore_gateway_upstream_errors", "Requests the gateway could not hand to a service", ["module", "reason"]
)


# A service answers with the template of the route it matched, so that the gateway, which only sees paths,
# labels its proxied requests by route too (`/api/v1/docdb/files/raw-files/datasets/{dataset}/files`).
ROUTE_HEADER = "x-lore-route"


class JobQueueSource(Protocol):
    """What reports a queue's depth: its kind (the job table's name) and its unfinished jobs by state."""

    kind: str

    async def unfinished_counts(self) -> dict[str, int]: ...


_QUEUES: weakref.WeakSet[Any] = weakref.WeakSet()


def watch_queue(source: JobQueueSource) -> None:
    """Report `source` in `lore_jobs_unfinished` from now on (as long as it lives)."""
    _QUEUES.add(source)


async def refresh_queues() -> None:
    """Read each watched queue's depth into `lore_jobs_unfinished` (before an exposition)."""
    if not ENABLED:
        return
    for source in list(_QUEUES):
        try:
            counts = await source.unfinished_counts()
        except Exception as exc:  # a store away: the scrape still answers, with the last values
            log.warning("queue_depth_unread", kind=source.kind, error=str(exc))
            continue
        for state, count in counts.items():
            child(QUEUE_DEPTH, source.kind, state).set(count)


def configure(enabled: bool) -> None:
    global ENABLED
    ENABLED = enabled


# The web framework adds `charset=utf-8` to a text type itself; given it twice, clients saw it twice.
CONTENT_TYPE = CONTENT_TYPE_LATEST.replace("; charset=utf-8", "")


def exposition() -> tuple[bytes, str]:
    """The registry in the Prometheus text format, and its content type (without the charset)."""
    return generate_latest(REGISTRY), CONTENT_TYPE


_children: dict[tuple[object, tuple[str, ...]], Any] = {}


def child(metric: Any, *values: str) -> Any:
    """`metric.labels(*values)`, kept: prometheus_client checks the values and takes a lock on each call,
    and a chat asks for about ten children, the same ones every time."""
    key = (metric, values)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*values)
    return found


@contextmanager
def in_flight() -> Iterator[None]:
    """Counts a request in `lore_http_requests_in_flight` while it is answered."""
    if not ENABLED:
        yield
        return
    IN_FLIGHT.inc()
    try:
        yield
    finally:
        IN_FLIGHT.dec()


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    if ENABLED:
        child(REQUESTS, method, route, str(status)).inc()
        child(REQUEST_SECONDS, method, route).observe(seconds)


class ModelCall:
    """One model call's figures: created when it starts, closed by `done` or `failed`."""

    __slots__ = ("model", "provider", "started")

    def __init__(self, provider: str, model: str) -> None:
        self.provider, self.model = provider, model
        self.started = time.perf_counter()

    def done(self, tokens_in: int, tokens_out: int) -> None:
        if not ENABLED:
            return
        child(MODEL_CALLS, self.provider, self.model, "ok").inc()
        child(MODEL_SECONDS, self.provider, self.model).observe(time.perf_counter() - self.started)
        if tokens_in:
            child(MODEL_TOKENS, self.provider, self.model, "in").inc(tokens_in)
        if tokens_out:
            child(MODEL_TOKENS, self.provider, self.model, "out").inc(tokens_out)

    def failed(self) -> None:
        if ENABLED:
            child(MODEL_CALLS, self.provider, self.model, "error").inc()
            child(MODEL_SECONDS, self.provider, self.model).observe(time.perf_counter() - self.started)


def model_cost(provider: str, model: str, cost: float) -> None:
    if ENABLED:
        child(MODEL_COST, provider, model).inc(cost)


def model_cache_hit(model: str) -> None:
    if ENABLED:
        child(MODEL_CACHE_HITS, model).inc()


def observe_embedding(model: str, batch: int, seconds: float) -> None:
    if ENABLED:
        child(EMBED_BATCH, model).observe(batch)
        child(EMBED_SECONDS, model).observe(seconds)


@contextmanager
def store_call(store: str, operation: str) -> Iterator[None]:
    """Times a store call (a span too, when tracing is on) and counts it when it raises."""
    started = time.perf_counter()
    try:
        with tracing.span(f"{store}.{operation}", {"db.system": store, "db.operation": operation}):
            yield
    except Exception as exc:
        if ENABLED:
            child(STORE_ERRORS, store, operation).inc()
        # The counter says how many; the log says why (a counted error with no cause helps nobody).
        log.warning("store_error", store=store, operation=operation, error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if ENABLED:
            child(STORE_SECONDS, store, operation).observe(time.perf_counter() - started)


P = ParamSpec("P")
R = TypeVar("R")


def timed(store: str, operation: str) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """An async store method timed by `store_call`."""

    def decorate(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(method)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            with store_call(store, operation):
                return await method(*args, **kwargs)

        return wrapper

    return decorate


def task_state(kind: str, state: str) -> None:
    if ENABLED:
        child(TASKS, kind, state).inc()


def task_stage(kind: str, stage: str, seconds: float) -> None:
    if ENABLED:
        child(TASK_STAGE_SECONDS, kind, stage).observe(seconds)


def upstream_error(module: str, reason: str) -> None:
    if ENABLED:
        child(UPSTREAM_ERRORS, module, reason).inc()
