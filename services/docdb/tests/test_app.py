from __future__ import annotations

from pathlib import Path

from lore_common.testing.service_checks import check_health, check_routes
from lore_docdb.app import PLANNED, create_app

BUILT = [
    "/api/v1/docdb/files/raw-files/datasets",
    "/api/v1/docdb/files/raw-files/datasets/{dataset}/upload/{upload_id}/chunk",
    "/api/v1/docdb/files/knowledge-bases/{kb_name}/parse",
    "/api/v1/docdb/files/processing/tasks/{task_id}/cancel",
    "/api/v1/docdb/files/processing/config",
    "/api/v1/docdb/schemas/{name}",
    "/api/v1/docdb/config/{section}",
]


def test_health_reports_its_stores_up(tmp_path: Path) -> None:
    check_health(create_app, "docdb", tmp_path)


def test_contract_routes_are_documented_and_unbuilt_ones_say_501(tmp_path: Path) -> None:
    check_routes(create_app, "docdb", PLANNED, BUILT, tmp_path)
