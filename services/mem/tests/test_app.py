from __future__ import annotations

from pathlib import Path

from litestar.testing import TestClient

from lore_common.settings import Settings, load_settings
from lore_mem.app import PLANNED, create_app


def settings_in(tmp_path: Path) -> Settings:
    return load_settings(tmp_path, environ={"LORE__MEM__SERVER__DATA_DIR": str(tmp_path / "data")})


def test_health_reports_its_stores_up(tmp_path: Path) -> None:
    with TestClient(create_app(settings_in(tmp_path))) as client:
        response = client.get("/health")
        assert response.status_code == 200
        body = response.json()
        assert body["service"] == "mem"
        assert body["checks"] and all(check["status"] == "up" for check in body["checks"].values())


def test_openapi_lists_every_contract_route(tmp_path: Path) -> None:
    with TestClient(create_app(settings_in(tmp_path))) as client:
        paths = client.get("/schema/openapi.json").json()["paths"]
    for planned in PLANNED:
        assert planned.path.replace(":str", "") in paths


def test_unbuilt_routes_answer_501_never_a_fake_success(tmp_path: Path) -> None:
    with TestClient(create_app(settings_in(tmp_path))) as client:
        for planned in PLANNED:
            path = planned.path.replace("{", "").replace(":str}", "")
            for method in planned.methods:
                response = client.request(method, path)
                assert response.status_code == 501, (method, path)
