import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

# The suite imports the whole workspace in each worker and starts services as processes many times:
# cache compiled modules even where PYTHONDONTWRITEBYTECODE is set (as the services themselves do).
sys.dont_write_bytecode = False

pytest_plugins = ["lore_common.testing.pytest_plugin"]

ROOT = Path(__file__).resolve().parent
SPREAD = re.compile(r"^pytestmark = pytest\.mark\.spread\b", re.MULTILINE)
TOGETHER = re.compile(r"^pytestmark = pytest\.mark\.together\(\"([\w-]+)\"\)", re.MULTILINE)


@cache
def _spread(module: str) -> bool:
    """Whether the test module says its tests share nothing (`pytestmark = pytest.mark.spread`)."""
    path = ROOT / module
    return path.suffix == ".py" and path.exists() and bool(SPREAD.search(path.read_text(encoding="utf-8")))


@cache
def _together(module: str) -> str | None:
    """The group a test module joins (`pytestmark = pytest.mark.together("name")`), if any."""
    path = ROOT / module
    if path.suffix != ".py" or not path.exists():
        return None
    found = TOGETHER.search(path.read_text(encoding="utf-8"))
    return found.group(1) if found else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` (the justfile's test recipe), except that a module marked `spread` is handed
    out test by test, and the modules marked `together` with one name are one unit. A module's tests
    otherwise run on one worker, so a stack it starts once serves them all; a long module of
    independent tests no longer runs end to end on one worker while the others wait; modules sharing
    a session-scoped stack start it once, not once on each worker they land on. (xdist's own
    `loadgroup` cannot do this on pytest 9: it renames items by a nodeid attribute that pytest 9 no
    longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModuleScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if _spread(module):
                return nodeid
            return _together(module) or module

    return ModuleScheduling(config, log)
