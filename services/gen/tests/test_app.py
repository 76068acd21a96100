from __future__ import annotations

from pathlib import Path

from lore_common.testing.service_checks import check_health, check_routes
from lore_gen.app import create_app

BUILT = [
    "/api/v1/gen/pipeline/submit",
    "/api/v1/gen/pipeline/status/{task_id}",
    "/api/v1/gen/tag-tree/generate",
    "/api/v1/gen/tag-tree/submit",
    "/api/v1/gen/tag-tree/status/{task_id}",
]


def test_health_reports_its_stores_up(tmp_path: Path) -> None:
    check_health(create_app, "gen", tmp_path)


def test_every_contract_route_is_documented(tmp_path: Path) -> None:
    check_routes(create_app, "gen", [], BUILT, tmp_path)
