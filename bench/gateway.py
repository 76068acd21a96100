"""Gateway overhead: p50/p99 latency and requests/s of a small GET, direct to docdb vs through the
gateway, at concurrency 1 and 32; then the same through a second gateway with API keys, where the key
is limited to knowledge bases, datasets and memories (`keyed`), on that GET and on the knowledge-base
list, which the limits filter. Every process holds the internal credential. Starts docdb and the two
gateways on loopback; stops them at the end.

Goals: added p50 <= 2 ms at concurrency 1; throughput through the gateway >= 0.5 x direct at 32;
throughput with keys and resource limits >= 0.9 x without them at 32.

    uv run python bench/gateway.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from lore_common.testing.processes import ServerProcess, free_port

PATH = "/api/v1/docdb/config/llm"
LIST = "/api/v1/docdb/files/knowledge-bases"
INTERNAL_TOKEN = "bench-internal-token"
KEY = "bench-limited-key"


async def load(
    url: str, concurrency: int, total: int, headers: dict[str, str] | None = None
) -> dict[str, float]:
    latencies: list[float] = []
    remaining = total
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        for _ in range(50):  # warm the connections and the server
            async with session.get(url) as response:
                await response.read()

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                async with session.get(url) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"{url} answered {response.status}")
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "rps": len(latencies) / elapsed,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-gw-"))
    docdb_port, gateway_port, keyed_port = free_port(), free_port(), free_port()
    env = {
        "LORE_CONFIG_DIR": str(work),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__SECURITY__INTERNAL_TOKEN": INTERNAL_TOKEN,
        "LORE__DOCDB__SERVER__PORT": str(docdb_port),
        "LORE__DOCDB__SERVER__DATA_DIR": str(work / "docdb"),
        "LORE__GATEWAY__PORT": str(gateway_port),
        "LORE__GATEWAY__DOCDB_URL": f"http://127.0.0.1:{docdb_port}",
    }
    limited = {
        "name": "bench",
        "key_sha256": hashlib.sha256(KEY.encode()).hexdigest(),
        "scopes": ["write"],
        "knowledge_bases": ["bench-*", "other-*"],
        "datasets": ["bench-*"],
        "memory": {"user_id": "bench-*"},
    }
    keyed_env = env | {
        "LORE__GATEWAY__PORT": str(keyed_port),
        "LORE__GATEWAY__API_KEYS": json.dumps([limited]),
    }
    docdb = ServerProcess([sys.executable, "-m", "lore_docdb"], env=env, log_path=work / "docdb.log")
    gateway = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=work / "gateway.log")
    keyed = ServerProcess([sys.executable, "-m", "lore_gateway"], env=keyed_env, log_path=work / "keyed.log")
    figures: dict[str, float] = {}
    internal = {"x-lore-internal-token": INTERNAL_TOKEN}
    bearer = {"Authorization": f"Bearer {KEY}"}
    try:
        docdb.wait_healthy(f"http://127.0.0.1:{docdb_port}/health", timeout=120)
        gateway.wait_healthy(f"http://127.0.0.1:{gateway_port}/", timeout=60)
        keyed.wait_healthy(f"http://127.0.0.1:{keyed_port}/", timeout=60)
        async with aiohttp.ClientSession(headers=internal) as session:  # a few KBs for the list to filter
            for name in ("bench-a", "bench-b", "other-c", "hidden-d", "hidden-e"):
                async with session.post(f"http://127.0.0.1:{docdb_port}{LIST}", json={"name": name}) as r:
                    await r.read()
        targets = {
            "direct": (f"http://127.0.0.1:{docdb_port}{PATH}", internal),
            "gateway": (f"http://127.0.0.1:{gateway_port}{PATH}", None),
            "keyed": (f"http://127.0.0.1:{keyed_port}{PATH}", bearer),
            "gateway_list": (f"http://127.0.0.1:{gateway_port}{LIST}", None),
            "keyed_list": (f"http://127.0.0.1:{keyed_port}{LIST}", bearer),
        }
        for concurrency in (1, 32):
            for name, (url, headers) in targets.items():
                result = await load(url, concurrency, args.requests, headers)
                for key, value in result.items():
                    figures[f"{name}_c{concurrency}_{key}"] = round(value, 3)
                print(
                    f"{name:12s} c={concurrency:<3d} p50 {result['p50_ms']:6.2f} ms  "
                    f"p99 {result['p99_ms']:6.2f} ms  {result['rps']:8.0f} req/s",
                    flush=True,
                )
    finally:
        keyed.stop()
        gateway.stop()
        docdb.stop()
    figures["added_p50_ms_c1"] = round(figures["gateway_c1_p50_ms"] - figures["direct_c1_p50_ms"], 3)
    figures["throughput_ratio_c32"] = round(figures["gateway_c32_rps"] / figures["direct_c32_rps"], 3)
    figures["keys_ratio_c32"] = round(figures["keyed_c32_rps"] / figures["gateway_c32_rps"], 3)
    figures["keys_list_ratio_c32"] = round(figures["keyed_list_c32_rps"] / figures["gateway_list_c32_rps"], 3)
    figures["goal_added_p50_ms_c1"] = 2.0
    figures["goal_throughput_ratio_c32"] = 0.5
    figures["goal_keys_ratio_c32"] = 0.9
    print(
        f"added p50 at c=1: {figures['added_p50_ms_c1']:.2f} ms (goal <= 2 ms); "
        f"throughput ratio at c=32: {figures['throughput_ratio_c32']:.2f} (goal >= 0.5); "
        f"with keys and limits / without at c=32: {figures['keys_ratio_c32']:.2f}, "
        f"filtered list {figures['keys_list_ratio_c32']:.2f} (goal >= 0.9)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
