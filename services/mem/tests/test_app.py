from __future__ import annotations

from pathlib import Path

from lore_common.testing.service_checks import check_health, check_routes
from lore_mem.app import create_app

BUILT = [
    "/api/v1/mem/kb/insert",
    "/api/v1/mem/kb/insert/{job_id}",
    "/api/v1/mem/kb/query",
    "/api/v1/mem/vg/add",
    "/api/v1/mem/vg/search",
    "/api/v1/mem/vg",
    "/api/v1/mem/vg/{memory_id}",
    "/api/v1/mem/vg/{memory_id}/history",
]


def test_health_reports_its_stores_up(tmp_path: Path) -> None:
    check_health(create_app, "mem", tmp_path)


def test_every_contract_route_is_documented(tmp_path: Path) -> None:
    check_routes(create_app, "mem", [], BUILT, tmp_path)
