"""What `/metrics` tells an operator: one content type, requests in flight, the build, and store errors
that are logged with their cause as well as counted."""

from __future__ import annotations

from typing import Any

import pytest
import structlog
from litestar import Litestar, get
from litestar.middleware import DefineMiddleware
from litestar.testing import TestClient
from prometheus_client import REGISTRY

from lore_core import __version__, metrics
from lore_core.logging import RequestIdMiddleware
from lore_core.web import metrics_endpoint


@get("/busy", sync_to_thread=False)
def busy() -> dict[str, Any]:
    return {"in_flight": REGISTRY.get_sample_value("lore_http_requests_in_flight")}


def app() -> Litestar:
    return Litestar([busy, metrics_endpoint], middleware=[DefineMiddleware(RequestIdMiddleware)])


def test_metrics_name_their_charset_once_and_the_build() -> None:
    with TestClient(app()) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].count("charset") == 1
    assert 'lore_build_info{python="' in response.text and f'version="{__version__}"}} 1.0' in response.text


def test_a_request_is_counted_in_flight_while_it_is_answered() -> None:
    with TestClient(app()) as client:
        before = REGISTRY.get_sample_value("lore_http_requests_in_flight") or 0
        assert client.get("/busy").json()["in_flight"] == before + 1
        assert REGISTRY.get_sample_value("lore_http_requests_in_flight") == before


def test_a_store_error_is_counted_and_logged_with_its_cause() -> None:
    labels = {"store": "vector", "operation": "search"}
    before = REGISTRY.get_sample_value("lore_store_errors_total", labels) or 0
    with (
        structlog.testing.capture_logs() as logs,
        pytest.raises(ConnectionError),
        metrics.store_call("vector", "search"),
    ):
        raise ConnectionError("connection refused by 127.0.0.1:6333")
    assert REGISTRY.get_sample_value("lore_store_errors_total", labels) == before + 1
    assert {
        "event": "store_error",
        "store": "vector",
        "operation": "search",
        "error": "ConnectionError: connection refused by 127.0.0.1:6333",
        "log_level": "warning",
    } in logs


class FakeQueue:
    kind = "parse_tasks"

    def __init__(self, waiting: int, running: int) -> None:
        self.counts = {"pending": waiting, "running": running}

    async def unfinished_counts(self) -> dict[str, int]:
        return self.counts


def test_queue_depth_is_read_from_each_watched_queue_when_scraped() -> None:
    queue = FakeQueue(waiting=4, running=1)
    metrics.watch_queue(queue)
    with TestClient(app()) as client:
        text = client.get("/metrics").text
        assert 'lore_jobs_unfinished{kind="parse_tasks",state="pending"} 4.0' in text
        assert 'lore_jobs_unfinished{kind="parse_tasks",state="running"} 1.0' in text
        queue.counts = {"pending": 0, "running": 2}  # the queue drained: the next scrape says so
        text = client.get("/metrics").text
    assert 'lore_jobs_unfinished{kind="parse_tasks",state="pending"} 0.0' in text
    assert 'lore_jobs_unfinished{kind="parse_tasks",state="running"} 2.0' in text
