"""Chat latency: a 10,000-chunk KB (mode 1, local embedder), 32 concurrent clients, the fake model
server answering at 0 ms. Prints p50/p95 of `naive` and `rerank` chat measured server-side
(`query_info.timings_ms.total_ms`) and client-side, chats per second, and the CPU time each chat costs
in docdb (with its embedding and search processes) and in the harness (the fake model and the load
generator, which share the machine): the median of `--rounds` rounds, with min and max. Goal:
server-side p50 < 50 ms.

    uv run python bench/chat.py [--chunks 10000] [--clients 32] [--requests 640] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx

from lore_common.testing.processes import start_fake_llm, start_service, wait_task
from lore_common.testing.stats import percentile

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TOPICS = [
    "protein folding",
    "quantum error correction",
    "coral reef bleaching",
    "battery cathodes",
    "jet streams",
    "graph neural networks",
    "antibiotic resistance",
    "exoplanet atmospheres",
    "soil microbiomes",
    "RNA splicing",
]
VERBS = ["improves", "reduces", "explains", "predicts", "depends on", "limits", "accelerates", "stabilises"]


def paragraph(rng: random.Random, i: int) -> str:
    a, b = rng.sample(TOPICS, 2)
    return (
        f"Finding {i}: research on {a} {rng.choice(VERBS)} our understanding of {b}, "
        f"according to experiment {rng.randint(1, 99999)} reported in volume {rng.randint(1, 300)}."
    )


stages: list[dict[str, float]] = []


async def load(
    base: str, mode: str, clients: int, total: int, rng: random.Random
) -> tuple[list[float], list[float]]:
    """`clients` closed-loop clients over aiohttp, the lightest load generator at hand: it shares the
    2 cores with the service, so its own cost would show up in the service's figures."""
    server, client_side = [], []
    remaining = total
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(base, connector=connector) as http:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                question = f"What {rng.choice(VERBS)} {rng.choice(TOPICS)}?"
                started = time.perf_counter()
                body = {
                    "query": question,
                    "kb_id": "bench",
                    "user_id": "u",
                    "query_mode": mode,
                    "max_results": 5,
                }
                async with http.post("/api/v1/docdb/chat", json=body) as response:
                    reply = await response.json()
                client_side.append((time.perf_counter() - started) * 1000)
                if reply["code"] != 200:
                    raise RuntimeError(reply)
                server.append(reply["query_info"]["timings_ms"]["total_ms"])
                stages.append(reply["query_info"]["timings_ms"])

        await asyncio.gather(*(worker() for _ in range(clients)))
    return server, client_side


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(3)
    work = Path(tempfile.mkdtemp(prefix="lore-bench-chat-"))
    llm, llm_url = start_fake_llm(work)
    env = {
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__MAX_CONCURRENT_REQUESTS": str(args.clients),
    }
    docdb, base = start_service("docdb", work, env)
    figures: dict[str, float] = {}
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            client.post(DS, json={"name": "notes"})
            for start in range(0, args.chunks, 500):
                files = [
                    ("files", (f"n{i:05d}.txt", paragraph(rng, i).encode()))
                    for i in range(start, min(args.chunks, start + 500))
                ]
                client.post(f"{DS}/notes/files", files=files).raise_for_status()
            client.post(KB, json={"name": "bench"})
            reply = client.post(f"{KB}/bench/parse", json={"datasets": ["notes"], "mode": 1}).json()
            task_id = reply["data"]["tasks"][0]["task_id"]
            task = wait_task(client, task_id)
            chunks = client.get(f"{KB}/bench/overview").json()["overview"]["chunk_count"]
            print(f"KB ready: {chunks} chunks ({task['status']})", flush=True)
        figures["chunks"] = chunks
        for mode in ("naive", "rerank"):
            asyncio.run(load(base, mode, args.clients, args.clients * 2, rng))  # warm-up
        # Rounds alternate the modes: this machine's speed drifts between runs, and a drift should
        # show as a spread in both modes, not as a difference between them.
        rounds: dict[str, list[dict[str, float]]] = {"naive": [], "rerank": []}
        for number in range(1, args.rounds + 1):
            for mode in ("naive", "rerank"):
                stages.clear()
                cpu_before = docdb.cpu_seconds(), llm.cpu_seconds(), time.process_time()
                started = time.perf_counter()
                server, client_side = asyncio.run(load(base, mode, args.clients, args.requests, rng))
                elapsed = time.perf_counter() - started
                used = [
                    (after - before) * 1000 / args.requests
                    for before, after in zip(
                        cpu_before, (docdb.cpu_seconds(), llm.cpu_seconds(), time.process_time()), strict=True
                    )
                ]
                names = sorted({name for timing in stages for name in timing})
                figure = {
                    "server_p50_ms": percentile(server, 0.5),
                    "server_p95_ms": percentile(server, 0.95),
                    "client_p50_ms": percentile(client_side, 0.5),
                    "client_p95_ms": percentile(client_side, 0.95),
                    "chats_per_s": args.requests / elapsed,
                    # CPU per chat: docdb with its embedding and search processes; the harness (the fake
                    # model and this load generator), which shares the same 2 cores.
                    "docdb_cpu_ms_per_chat": used[0],
                    "harness_cpu_ms_per_chat": used[1] + used[2],
                    **{n: percentile([t.get(n, 0.0) for t in stages], 0.5) for n in names},
                }
                rounds[mode].append(figure)
                shown = ", ".join(f"{k} {v:.1f}" for k, v in figure.items())
                print(f"round {number} {mode:7s} {shown}", flush=True)
        for mode, results in rounds.items():
            keys = ("server_p50_ms", "server_p95_ms", "client_p50_ms", "client_p95_ms", "chats_per_s")
            for key in (*keys, "docdb_cpu_ms_per_chat", "harness_cpu_ms_per_chat"):
                values = [r[key] for r in results]
                figures[f"{mode}_{key}"] = round(statistics.median(values), 2)
                figures[f"{mode}_{key}_min"] = round(min(values), 2)
                figures[f"{mode}_{key}_max"] = round(max(values), 2)
            print(
                f"{mode:7s} server p50 median {figures[f'{mode}_server_p50_ms']} ms "
                f"({figures[f'{mode}_server_p50_ms_min']}-{figures[f'{mode}_server_p50_ms_max']}), "
                f"p95 median {figures[f'{mode}_server_p95_ms']} ms, "
                f"{figures[f'{mode}_chats_per_s']} chats/s, "
                f"CPU per chat {figures[f'{mode}_docdb_cpu_ms_per_chat']} ms in docdb and "
                f"{figures[f'{mode}_harness_cpu_ms_per_chat']} ms in the harness",
                flush=True,
            )
        # The whole tree: the service, its embedding process and its vector search process.
        figures["docdb_tree_rss_mb"] = round(docdb.rss_bytes() / 2**20, 1)
        print(f"docdb RSS with its child processes: {figures['docdb_tree_rss_mb']} MB", flush=True)
    finally:
        docdb.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    figures["clients"] = args.clients
    figures["goal_server_p50_ms"] = 50
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
