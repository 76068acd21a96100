from __future__ import annotations

from pathlib import Path

from lore_common.testing.service_checks import check_health, check_routes
from lore_gen.app import PLANNED, create_app


def test_health_reports_its_stores_up(tmp_path: Path) -> None:
    check_health(create_app, "gen", tmp_path)


def test_contract_routes_are_documented_and_unbuilt_ones_say_501(tmp_path: Path) -> None:
    check_routes(create_app, "gen", PLANNED, [], tmp_path)
