"""One real stack for the client and command-line tests: `lore-up` (gateway, docdb, gen, mem) on
embedded stores and loopback ports, in its own data folder, with the hashing embedder (it starts at
once) and the offline model, as on a laptop without a key."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lore_common.testing.processes import start_lore_up

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Stack:
    url: str
    data: Path
    env: dict[str, str]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("client-stack")
    # Folder sources (`lore source add --folder`) may read folders under data/sources.
    roots = {"LORE__DOCDB__SOURCES__FOLDER_ROOTS": str([str(data / "sources")])}
    running = start_lore_up(data, ROOT / "config", roots)
    try:
        yield Stack(running.url, data, running.env)
    finally:
        running.process.stop()
