"""One real stack for the client and command-line tests: `lore-up` (gateway, docdb, gen, mem) on
embedded stores and loopback ports, in its own data folder. The embedder is the hashing one, which
starts at once; the model is the offline one, as on a laptop without a key."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lore_common.testing.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Stack:
    url: str
    data: Path
    env: dict[str, str]


def stack_env(data: Path, gateway_port: int) -> dict[str, str]:
    env = {
        "LORE_CONFIG_DIR": str(ROOT / "config"),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__GATEWAY__PORT": str(gateway_port),
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__GEN__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
    }
    for name in ("docdb", "gen", "mem"):
        port = free_port()
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(port)
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(data / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{port}"
    env["LORE__GEN__DOCDB_URL"] = env["LORE__GATEWAY__DOCDB_URL"]
    return env


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("client-stack")
    port = free_port()
    env = stack_env(data, port)
    launcher = ServerProcess(
        [sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=data, log_path=data / "lore.log"
    )
    url = f"http://127.0.0.1:{port}"
    try:
        launcher.wait_healthy(f"{url}/health", timeout=120)
        yield Stack(url, data, env)
    finally:
        launcher.stop()
