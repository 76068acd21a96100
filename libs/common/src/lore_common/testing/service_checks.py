"""Checks every service's app must pass: healthy stores, every contract route in OpenAPI, honest 501s."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from litestar import Litestar
from litestar.testing import TestClient

from lore_core.settings import Settings, load_settings
from lore_core.web import PlannedRoute


def settings_in(tmp_path: Path, service: str) -> Settings:
    return load_settings(
        tmp_path, environ={f"LORE__{service.upper()}__SERVER__DATA_DIR": str(tmp_path / "data")}
    )


def check_health(create_app: Callable[[Settings], Litestar], service: str, tmp_path: Path) -> None:
    with TestClient(create_app(settings_in(tmp_path, service))) as client:
        response = client.get("/health")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["service"] == service
        assert body["checks"] and all(check["status"] == "up" for check in body["checks"].values())


def check_routes(
    create_app: Callable[[Settings], Litestar],
    service: str,
    planned: Sequence[PlannedRoute],
    built: Sequence[str],
    tmp_path: Path,
) -> None:
    """Planned routes answer 501; planned and built routes all appear in the OpenAPI document."""
    with TestClient(create_app(settings_in(tmp_path, service))) as client:
        paths = client.get("/schema/openapi.json").json()["paths"]
        for path in [*(p.path.replace(":str", "") for p in planned), *built]:
            assert path in paths, path
        for route in planned:
            concrete = route.path.replace("{", "").replace(":str}", "")
            for method in route.methods:
                response = client.request(method, concrete)
                assert response.status_code == 501, (method, concrete, response.text)
                assert "not built yet" in response.text
