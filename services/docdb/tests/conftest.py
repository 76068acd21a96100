from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from lore_common.settings import load_settings
from lore_docdb.app import create_app

ClientFactory = Callable[..., AbstractAsyncContextManager[AsyncTestClient[Litestar]]]


@pytest.fixture
def docdb_factory(tmp_path: Path) -> ClientFactory:
    """Builds a docdb app on this test's data dir (the same dir each call, so a 'restart' keeps data)."""

    @asynccontextmanager
    async def make(**env: str) -> AsyncIterator[AsyncTestClient[Litestar]]:
        environ = {
            "LORE__DOCDB__SERVER__DATA_DIR": str(tmp_path / "docdb"),
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
            **env,
        }
        app = create_app(load_settings(tmp_path / "config", environ=environ))
        async with AsyncTestClient(app, timeout=30) as client:
            yield client

    return make


@pytest.fixture
async def docdb(docdb_factory: ClientFactory) -> AsyncIterator[AsyncTestClient[Litestar]]:
    async with docdb_factory() as client:
        yield client
