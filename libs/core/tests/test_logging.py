from __future__ import annotations

import json
from typing import Any

import pytest
import structlog
from litestar import get
from litestar.params import FromQuery
from litestar.testing import create_test_client

from lore_core.errors import NotFound
from lore_core.logging import RequestIdMiddleware, configure_logging
from lore_core.settings import LoggingConfig
from lore_core.web import PlannedRoute, create_service_app


def test_log_lines_are_json_with_request_id_and_no_secret(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(LoggingConfig(format="json"), service="test")
    log = structlog.get_logger()

    @get("/work")
    async def work() -> dict[str, str]:
        log.info("working", api_key="sk-secret", url="postgresql://u:pw@h/db")
        return {"ok": "yes"}

    from litestar.middleware import DefineMiddleware

    with create_test_client(
        [work], middleware=[DefineMiddleware(RequestIdMiddleware)], logging_config=None
    ) as client:
        response = client.get("/work", headers={"x-request-id": "rid-42"})
    assert response.headers["x-request-id"] == "rid-42"
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    entry = next(line for line in lines if line["event"] == "working")
    assert entry["request_id"] == "rid-42"
    assert entry["service"] == "test"
    assert entry["api_key"] == "***"
    assert entry["url"] == "postgresql://u:***@h/db"


def _app() -> Any:
    @get("/missing")
    async def missing() -> None:
        raise NotFound("dataset 'x' does not exist")

    @get("/boom")
    async def boom() -> None:
        raise RuntimeError("kaput")

    @get("/typed")
    async def typed(limit: FromQuery[int]) -> int:
        return limit

    return create_service_app(
        service="t",
        route_handlers=[missing, boom, typed],
        planned=[PlannedRoute(("GET", "POST"), "/api/v1/t/later", "the later feature")],
    )


def test_every_error_has_the_one_envelope() -> None:
    with _client() as client:
        r = client.get("/missing")
        assert r.status_code == 404
        assert r.json() == {
            "success": False,
            "code": 404,
            "message": "dataset 'x' does not exist",
            "detail": "dataset 'x' does not exist",  # the message again: clients of `{detail}` read it
        }
        r = client.get("/typed", params={"limit": "many"})
        assert r.status_code == 400
        assert r.json()["success"] is False
        assert "limit" in json.dumps(r.json()["detail"])
        assert r.json()["message"] == "limit must be an integer, not a string"
        r = client.post("/api/v1/t/later")
        assert r.status_code == 501
        assert "the later feature is not built yet" in r.json()["message"]


def test_500_and_unknown_routes_have_the_envelope_without_leaking_a_trace() -> None:
    with _client() as client:
        r = client.get("/boom")
        assert r.status_code == 500
        assert "Traceback" not in r.text
        assert r.json()["success"] is False and r.json()["code"] == 500
        r = client.get("/api/v1/t/later")
        assert r.status_code == 501
        assert r.json()["message"].startswith("the later feature")
        r = client.get("/no/such/route")
        assert r.status_code == 404
        assert "no route GET /no/such/route" in r.json()["message"]


def test_health_and_openapi_are_served() -> None:
    with _client() as client:
        r = client.get("/health")
        assert r.status_code == 200
        assert r.json()["status"] == "ok"
        schema = client.get("/schema/openapi.json").json()
        assert "/api/v1/t/later" in schema["paths"]


def _client() -> Any:
    from litestar.testing import TestClient

    return TestClient(_app())
