from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from lore_common.testing.asgi import AppClient, running
from lore_core.settings import load_settings
from lore_mem.app import create_app


@pytest.fixture
def db_env() -> dict[str, str]:
    return {}


@pytest.fixture
def mem_factory(
    tmp_path: Path, db_env: dict[str, str]
) -> Callable[..., AbstractAsyncContextManager[AppClient]]:
    @asynccontextmanager
    async def make(**env: str) -> AsyncIterator[AppClient]:
        environ = {
            "LORE__MEM__SERVER__DATA_DIR": str(tmp_path / "mem"),
            "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__MEM__EMBEDDING_API__DIM": "256",
            "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
            "LORE__MEM__MEMORYKB__EMBEDDING__DIM": "256",
            "LORE__MEM__MEMORYKB__COMMUNITY_INTERVAL": "0.05",
            **db_env,
            **env,
        }
        app = create_app(load_settings(tmp_path / "config", environ=environ))
        async with running(app, "http://mem.test") as client:
            yield client

    return make


@pytest.fixture
async def mem(mem_factory: Callable[..., AbstractAsyncContextManager[AppClient]]) -> AsyncIterator[AppClient]:
    async with mem_factory() as client:
        yield client
