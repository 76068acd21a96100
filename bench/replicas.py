"""Throughput with 1 and with 2 replicas of each service behind the gateway, side by side in one run.

Each round starts the stack on shared stores (`lore-servers --replicas N`: PostgreSQL with pgvector,
one FalkorDB server, moto's S3, the local embedder, the offline model), parses a KB of `--docs` short
documents, then drives closed-loop clients through the gateway for `--seconds` each: `POST
/api/v1/docdb/chat` (naive) and `POST /api/v1/mem/vg/search` (vg memories in pgvector). Prints
requests per second and p50/p95 per round, and the ratio of 2 replicas to 1. On this 2-core machine
expect little gain: two processes of each service and docdb's embedding workers share the same two
cores; the point is that replicas answer correctly, and the figure.

    uv run python bench/replicas.py [--docs 300] [--clients 16] [--seconds 20] [--postgres-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import httpx

from lore_common.servers import postgres
from lore_common.testing.processes import start_servers_stack, wait_task
from lore_common.testing.stats import percentile

ROOT = Path(__file__).resolve().parents[1]
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TOPICS = ["harbours", "glaciers", "orchards", "lighthouses", "canals", "vineyards", "observatories", "mills"]


def document(rng: random.Random, i: int) -> str:
    topic = rng.choice(TOPICS)
    return (
        f"Report {i} on {topic}: the {topic} of district {rng.randint(1, 40)} were surveyed in "
        f"{rng.randint(1900, 2020)} and counted {rng.randint(2, 900)} sites kept by "
        f"{rng.choice(['Ada', 'Ben', 'Cleo', 'Dan'])}."
    )


async def drive(
    url: str, path: str, bodies: list[dict[str, object]], clients: int, seconds: float
) -> dict[str, float]:
    """Closed-loop clients posting bodies in turn until the time is up."""
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client(session: aiohttp.ClientSession, offset: int) -> None:
        nonlocal errors
        n = offset
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            async with session.post(f"{url}{path}", json=bodies[n % len(bodies)]) as response:
                await response.read()
                if response.status != 200:
                    errors += 1
            latencies.append(time.perf_counter() - started)
            n += clients

    started = time.perf_counter()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        await asyncio.gather(*(client(session, i) for i in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "errors": errors,
        "requests": len(latencies),
    }


def round_with(replicas: int, admin_url: str, args: argparse.Namespace) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix=f"lore-bench-replicas{replicas}-"))
    prefix = f"lore_bench_{uuid.uuid4().hex[:8]}"
    stack = start_servers_stack(work, ROOT / "config", admin_url, prefix, replicas=replicas)
    url = stack.url
    try:
        rng = random.Random(7)
        with httpx.Client(base_url=url, timeout=600) as client:
            client.post(DS, json={"name": "reports"}).raise_for_status()
            files = [("files", (f"r{i}.txt", document(rng, i).encode())) for i in range(args.docs)]
            client.post(f"{DS}/reports/files", files=files).raise_for_status()
            client.post(KB, json={"name": "reports"}).raise_for_status()
            task = client.post(f"{KB}/reports/parse", json={"datasets": ["reports"], "mode": 1}).json()
            done = wait_task(client, task["data"]["tasks"][0]["task_id"], timeout=600)
            if done["status"] != "completed":
                raise SystemExit(f"parse failed: {done}")
            for i in range(40):
                said = f"I keep {rng.choice(TOPICS)} records number {i} in my notebook."
                body = {"messages": [{"role": "user", "content": said}], "user_id": "bench", "infer": False}
                client.post("/api/v1/mem/vg/add", json=body).raise_for_status()
        chats = [
            {
                "query": f"How many sites were counted for the {t} of district {d}?",
                "kb_id": "reports",
                "user_id": "u",
            }
            for t in TOPICS
            for d in range(1, 6)
        ]
        searches = [{"query": f"{t} records", "user_id": "bench"} for t in TOPICS]
        # A short warm-up, so that embedding workers and connection pools exist on every replica.
        asyncio.run(drive(url, "/api/v1/docdb/chat", chats, args.clients, 3))
        chat = asyncio.run(drive(url, "/api/v1/docdb/chat", chats, args.clients, args.seconds))
        vg = asyncio.run(drive(url, "/api/v1/mem/vg/search", searches, args.clients, args.seconds))
        print(
            f"{replicas} replica(s): chat {chat['rps']} req/s (p50 {chat['p50_ms']} ms, "
            f"p95 {chat['p95_ms']} ms, {chat['errors']} errors); vg search {vg['rps']} req/s "
            f"(p50 {vg['p50_ms']} ms, {vg['errors']} errors)",
            flush=True,
        )
        return {**{f"chat_{k}": v for k, v in chat.items()}, **{f"vg_{k}": v for k, v in vg.items()}}
    finally:
        stack.process.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server with pgvector")
    args = parser.parse_args()
    figures: dict[str, float] = {"docs": args.docs, "clients": args.clients, "seconds": args.seconds}
    with (
        tempfile.TemporaryDirectory(prefix="lore-bench-pg-") as scratch,
        postgres(args.postgres_url, Path(scratch)) as admin,
    ):
        for replicas in (1, 2):
            figures |= {f"r{replicas}_{k}": v for k, v in round_with(replicas, admin, args).items()}
    figures["chat_rps_ratio_2_vs_1"] = round(figures["r2_chat_rps"] / figures["r1_chat_rps"], 3)
    figures["vg_rps_ratio_2_vs_1"] = round(figures["r2_vg_rps"] / figures["r1_vg_rps"], 3)
    print(
        f"chat throughput with 2 replicas / 1: {figures['chat_rps_ratio_2_vs_1']}; "
        f"vg search: {figures['vg_rps_ratio_2_vs_1']}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
