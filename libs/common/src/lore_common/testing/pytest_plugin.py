"""Fixtures shared by every package's tests (registered in the repository's root conftest.py)."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore_common.testing.processes import ServerProcess, free_port

POSTGRES_ADMIN_URL = os.environ.get("LORE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


async def _postgres_available() -> bool:
    import asyncpg

    try:
        connection = await asyncio.wait_for(asyncpg.connect(POSTGRES_ADMIN_URL), 3)
    except Exception:
        return False
    await connection.close()
    return True


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def relational_url(request: pytest.FixtureRequest) -> str | None:
    """Runs a test twice: on the embedded SQLite store (None) and on a fresh PostgreSQL database (its
    URL). A test module opts in by deriving its `db_env` from it."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test (`postgresql+asyncpg://…`), dropped afterwards.

    Synchronous on purpose, so parametrised fixtures can ask for it with `request.getfixturevalue`."""
    if not asyncio.run(_postgres_available()):
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}, and CI requires it")
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}")
    name = f"lore_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _admin(statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(POSTGRES_ADMIN_URL)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An S3-compatible endpoint: moto's server mode on a loopback port."""
    port = free_port()
    log = Path(tmp_path_factory.mktemp("moto")) / "moto.log"
    server = ServerProcess(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], log_path=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        server.wait_healthy(f"{url}/moto-api/", timeout=30)
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fake_llm_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fake OpenAI-compatible model server, as a real process (base URL ends in /v1)."""
    port = free_port()
    log = Path(tmp_path_factory.mktemp("fake_llm")) / "fake_llm.log"
    server = ServerProcess(
        [sys.executable, "-m", "lore_common.testing.fake_llm", "--port", str(port), "--embedding-dim", "64"],
        log_path=log,
    )
    try:
        server.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=30)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.stop()
