from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from lore_common.testing.asgi import AppClient, running
from lore_core.settings import load_settings
from lore_docdb.app import create_app

ClientFactory = Callable[..., AbstractAsyncContextManager[AppClient]]


@pytest.fixture
def db_env() -> dict[str, str]:
    """Extra settings naming the relational store; a test module overrides it to run on PostgreSQL."""
    return {}


@pytest.fixture
def docdb_factory(tmp_path: Path, db_env: dict[str, str]) -> ClientFactory:
    """Builds a docdb app on this test's data dir (the same dir each call, so a 'restart' keeps data)."""

    @asynccontextmanager
    async def make(**env: str) -> AsyncIterator[AppClient]:
        environ = {
            "LORE__DOCDB__SERVER__DATA_DIR": str(tmp_path / "docdb"),
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
            "LORE__DOCDB__TASK_HEARTBEAT_INTERVAL": "0.2",
            **db_env,
            **env,
        }
        app = create_app(load_settings(tmp_path / "config", environ=environ))
        async with running(app, "http://docdb.test") as client:
            yield client

    return make


@pytest.fixture
async def docdb(docdb_factory: ClientFactory) -> AsyncIterator[AppClient]:
    async with docdb_factory() as client:
        yield client
