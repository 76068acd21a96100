"""`lore --help` starts fast: the transport (httpx, websockets) and pygments load only for a command
that needs them (websockets only for a table stream), and the package's names are still all there for
`from lore_client import …`."""

from __future__ import annotations

import subprocess
import sys

import lore_client


def loaded_by(statement: str) -> set[str]:
    probe = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_the_command_line_loads_no_transport_until_a_command_calls_the_gateway() -> None:
    loaded = loaded_by("import lore_client.cli")
    assert not {"httpx", "websockets", "pygments", "lore_client.aio"} & loaded


def test_a_client_loads_websockets_only_when_it_streams_a_table() -> None:
    # `lore chat`, `lore ingest`: the blocking client, whose table stream is the one user of websockets.
    loaded = loaded_by("from lore_client import Lore; import lore_client.sync")
    assert "httpx" in loaded
    assert "websockets" not in loaded


def test_every_exported_name_still_imports_from_the_package() -> None:
    for name in lore_client.__all__:
        assert getattr(lore_client, name).__name__ == name
    assert "httpx" in loaded_by("from lore_client import Lore")
