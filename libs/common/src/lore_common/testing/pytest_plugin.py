"""Fixtures shared by every package's tests (registered in the repository's root conftest.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from lore_common.testing.processes import ServerProcess, free_port
from lore_core.settings import VectorStoreConfig

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


async def _admin(statement: str, url: str = POSTGRES_ADMIN_URL) -> None:
    import asyncpg

    connection = await asyncpg.connect(url)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


PGVECTOR_HELP = (
    "pgvector tests need PostgreSQL with the vector extension: install the server's package "
    "(Debian: postgresql-15-pgvector), or `pip install pgserver` (PostgreSQL 16 with pgvector, from "
    "PyPI; a dev dependency of this workspace), or set LORE_TEST_PGVECTOR_URL"
)


async def _has_pgvector(url: str) -> bool:
    import asyncpg

    try:
        connection = await asyncio.wait_for(asyncpg.connect(url), 3)
    except Exception:
        return False
    try:
        return bool(await connection.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"))
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[str]:
    """An admin URL (`postgresql://…`) of a PostgreSQL server that has pgvector, for the session:
    LORE_TEST_PGVECTOR_URL, else the server at 127.0.0.1:5432 when it has the extension, else a private
    pgserver (PostgreSQL 16 with pgvector, shipped on PyPI) on a unix socket in a temp dir."""
    configured = os.environ.get("LORE_TEST_PGVECTOR_URL")
    if configured:
        yield configured
        return
    if asyncio.run(_has_pgvector(POSTGRES_ADMIN_URL)):
        yield POSTGRES_ADMIN_URL
        return
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; it is harmless
        warnings.simplefilter("ignore")
        try:
            from pgserver.postgres_server import get_server
        except ImportError:
            if os.environ.get("CI"):
                pytest.fail(PGVECTOR_HELP)
            pytest.skip(PGVECTOR_HELP)
        # Not under pytest's basetemp: another pytest session started meanwhile rotates old basetemps
        # away, and the live server's data directory with them.
        # The workers of one xdist run share one server (pgserver counts the processes using a data
        # directory and the last one deletes it); a run without xdist has its own.
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
        if run:
            pgdata = Path(tempfile.gettempdir()) / f"lore-test-pgvector-{run}"
            server = get_server(pgdata, cleanup_mode="delete")
        else:
            pgdata = Path(tempfile.mkdtemp(prefix="lore-test-pgvector-"))
            server = get_server(pgdata, cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
        if not run:
            shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture
def pgvector_url(pgvector_server: str) -> Iterator[str]:
    """A fresh database with the vector extension (`postgresql+asyncpg://…`), dropped afterwards."""
    name = f"lore_vec_test_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(pgvector_server)
    url = urlunsplit(parts._replace(path=f"/{name}"))
    asyncio.run(_admin(f'CREATE DATABASE "{name}"', pgvector_server))
    try:
        asyncio.run(_admin("CREATE EXTENSION IF NOT EXISTS vector", url))
        yield url.replace("postgresql://", "postgresql+asyncpg://", 1)
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', pgvector_server))


@pytest.fixture(params=["qdrant", pytest.param("pgvector", marks=pytest.mark.postgres)])
def vector_store_config(request: pytest.FixtureRequest) -> VectorStoreConfig:
    """Runs a test twice: on the embedded Qdrant Edge store and on pgvector in a fresh database."""
    if request.param == "qdrant":
        return VectorStoreConfig()
    return VectorStoreConfig(provider="pgvector", url=request.getfixturevalue("pgvector_url"))


@dataclass(frozen=True)
class StoreProfile:
    """Where a service under test keeps its rows and vectors."""

    database_url: str | None
    vector_provider: str = "qdrant"

    def env(self, service: str) -> dict[str, str]:
        """The `LORE__<SERVICE>__…` settings that select this profile."""
        prefix = f"LORE__{service.upper()}__"
        env = {f"{prefix}VECTOR_STORE__PROVIDER": self.vector_provider}
        if self.database_url:
            env[f"{prefix}DATABASE__URL"] = self.database_url
        return env


@pytest.fixture(
    params=[
        "embedded",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("pgvector", marks=pytest.mark.postgres),
    ]
)
def store_profile(request: pytest.FixtureRequest) -> StoreProfile:
    """Runs a test three times: SQLite + Qdrant local (the embedded default), PostgreSQL + Qdrant local,
    and everything in one PostgreSQL database with pgvector."""
    if request.param == "embedded":
        return StoreProfile(None)
    if request.param == "postgres":
        return StoreProfile(request.getfixturevalue("postgres_url"))
    return StoreProfile(request.getfixturevalue("pgvector_url"), "pgvector")


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
