import inspect
import sys
from pathlib import Path

import pytest

# The suite imports the whole workspace in each worker and starts services as processes many times:
# cache compiled modules even where PYTHONDONTWRITEBYTECODE is set (as the services themselves do).
sys.dont_write_bytecode = False

pytest_plugins = ["lore_common.testing.pytest_plugin"]

ROOT = Path(__file__).resolve().parent
SHARED_SCOPES = ("module", "package", "class")


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses one of this workspace's fixtures that lives longer than a test (a whole
    stack started once per module, a browser): such tests must run on the worker that holds it."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for definitions in info.name2fixturedefs.values():
        for definition in definitions:
            if definition.scope not in SHARED_SCOPES:
                continue
            source = Path(inspect.getfile(definition.func))
            if source.is_relative_to(ROOT) and ".venv" not in source.parts:
                return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """For `--dist loadgroup` (the justfile's test recipe): a module's tests run on one worker, as
    `--dist loadfile` would, unless the module is marked `spread` (its tests share nothing, so a long
    module is handed out test by test); even then, tests that use one of the module's longer-lived
    fixtures (a stack started once per module) stay together. A test's own `xdist_group` mark wins
    (test_fuzz.py groups by the service it fuzzes)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.get_closest_marker("spread") is None or _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
