"""Gateway overhead: p50/p99 latency and requests/s of a small GET, direct to docdb vs through the
gateway, at concurrency 1 and 32. Starts docdb and the gateway on loopback; stops them at the end.

Goals: added p50 <= 2 ms at concurrency 1; throughput through the gateway >= 0.5 x direct at 32.

    uv run python bench/gateway.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from lore_common.testing.processes import ServerProcess, free_port

PATH = "/api/v1/docdb/config/llm"


async def load(url: str, concurrency: int, total: int) -> dict[str, float]:
    latencies: list[float] = []
    remaining = total
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
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
    docdb_port, gateway_port = free_port(), free_port()
    env = {
        "LORE_CONFIG_DIR": str(work),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__DOCDB__SERVER__PORT": str(docdb_port),
        "LORE__DOCDB__SERVER__DATA_DIR": str(work / "docdb"),
        "LORE__GATEWAY__PORT": str(gateway_port),
        "LORE__GATEWAY__DOCDB_URL": f"http://127.0.0.1:{docdb_port}",
    }
    docdb = ServerProcess([sys.executable, "-m", "lore_docdb"], env=env, log_path=work / "docdb.log")
    gateway = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=work / "gateway.log")
    figures: dict[str, float] = {}
    try:
        docdb.wait_healthy(f"http://127.0.0.1:{docdb_port}/health", timeout=120)
        gateway.wait_healthy(f"http://127.0.0.1:{gateway_port}/", timeout=60)
        targets = {
            "direct": f"http://127.0.0.1:{docdb_port}{PATH}",
            "gateway": f"http://127.0.0.1:{gateway_port}{PATH}",
        }
        for concurrency in (1, 32):
            for name, url in targets.items():
                result = await load(url, concurrency, args.requests)
                for key, value in result.items():
                    figures[f"{name}_c{concurrency}_{key}"] = round(value, 3)
                print(
                    f"{name:8s} c={concurrency:<3d} p50 {result['p50_ms']:6.2f} ms  "
                    f"p99 {result['p99_ms']:6.2f} ms  {result['rps']:8.0f} req/s",
                    flush=True,
                )
    finally:
        gateway.stop()
        docdb.stop()
    figures["added_p50_ms_c1"] = round(figures["gateway_c1_p50_ms"] - figures["direct_c1_p50_ms"], 3)
    figures["throughput_ratio_c32"] = round(figures["gateway_c32_rps"] / figures["direct_c32_rps"], 3)
    figures["goal_added_p50_ms_c1"] = 2.0
    figures["goal_throughput_ratio_c32"] = 0.5
    print(
        f"added p50 at c=1: {figures['added_p50_ms_c1']:.2f} ms (goal <= 2 ms); "
        f"throughput ratio at c=32: {figures['throughput_ratio_c32']:.2f} (goal >= 0.5)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
