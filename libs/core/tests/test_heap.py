"""A running service keeps its start-up objects out of the garbage collector's full walks."""

from __future__ import annotations

import gc

from lore_core.testing import app_lifespan
from lore_core.web import create_service_app


async def test_a_service_freezes_what_start_up_built_and_gives_it_back_when_it_stops() -> None:
    app = create_service_app(service="probe", route_handlers=[])
    assert gc.get_freeze_count() == 0
    walked_before = len(gc.get_objects(generation=2))
    async with app_lifespan(app):
        # The imported libraries alone are tens of thousands of objects; a full collection skips them.
        assert gc.get_freeze_count() > 10_000
        assert len(gc.get_objects(generation=2)) < walked_before / 4
    assert gc.get_freeze_count() == 0
    assert len(gc.get_objects(generation=2)) >= walked_before / 2
