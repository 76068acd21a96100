"""`kb` memory at 500 documents: mem as a real granian process with the default local embedder, the
fake model server answering at 0 ms (extraction, summaries, answers).

1. capacity: 500 short documents inserted by 16 concurrent clients; inserts/s until all are done;
2. searchability: 100 more inserted at a steady `--rate`; time from the insert request until a naive
   query for the document's unique code returns it (p50/p95). Goal p95 < 5 s;
3. query p50 per mode (hybrid, local, global, naive) at that size. Goal < 100 ms.

    uv run python bench/kb_memory.py [--documents 500] [--rate 10] [--queries 60]
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

import httpx

from lore_common.testing.processes import start_fake_llm, start_service
from lore_common.testing.stats import percentile

INSERT = "/api/v1/mem/kb/insert"
QUERY = "/api/v1/mem/kb/query"
QUERYABLE_LIMIT_S = 60.0
POLL_S = 0.05  # how often a client looks again (job status, the query that should find the insert)
PEOPLE = ["Ada Park", "Bruno Silva", "Chen Wei", "Dara Okafor", "Elena Rossi", "Farid Haddad", "Greta Lund"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Perth", "Bergen", "Cusco"]
ORGS = ["Helix Labs", "Northwind Shipping", "Orchid Bank", "Tidewater Energy", "Lumen Press"]


def document(rng: random.Random, i: int) -> tuple[str, str]:
    code = f"KX{i:05d}"
    text = (
        f"{rng.choice(PEOPLE)} moved to {rng.choice(CITIES)} in {rng.randint(1990, 2024)} to lead project "
        f"{code} at {rng.choice(ORGS)}. "
        f"The project studies {rng.choice(['tides', 'soil', 'bridges', 'bees'])}."
    )
    return code, text


async def insert_until_queryable(client: httpx.AsyncClient, code: str, text: str) -> float:
    started = time.perf_counter()
    job = (await client.post(INSERT, files={"query": (None, text)})).json()
    while (await client.get(f"{INSERT}/{job['id']}")).json()["status"] not in ("done", "failed"):
        await asyncio.sleep(POLL_S)
    while time.perf_counter() - started < QUERYABLE_LIMIT_S:
        # The default mode: the code is an entity name the query names, so local recall finds it.
        answer = (await client.post(QUERY, json={"query": f"What is project {code}?"})).json()
        if code in answer["rag_memory"]:
            return time.perf_counter() - started
        await asyncio.sleep(POLL_S)
    return float("inf")


async def run(base: str, args: argparse.Namespace) -> dict[str, float]:
    rng = random.Random(7)
    figures: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        docs = [document(rng, i) for i in range(args.documents)]
        queue = list(docs)
        done_latencies: list[float] = []

        async def worker() -> None:
            while queue:
                _, text = queue.pop()
                started = time.perf_counter()
                job = (await client.post(INSERT, files={"query": (None, text)})).json()
                while (await client.get(f"{INSERT}/{job['id']}")).json()["status"] not in ("done", "failed"):
                    await asyncio.sleep(POLL_S)
                done_latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(16)))
        wall = time.perf_counter() - started
        figures["capacity_inserts_per_s"] = round(args.documents / wall, 1)
        figures["capacity_done_p50_s"] = round(percentile(done_latencies, 0.5), 3)
        figures["capacity_done_p95_s"] = round(percentile(done_latencies, 0.95), 3)
        print(
            f"capacity: {args.documents} inserts in {wall:.1f} s = {args.documents / wall:.1f}/s", flush=True
        )

        paced = [document(rng, args.documents + i) for i in range(100)]
        tasks = []
        for code, text in paced:
            tasks.append(asyncio.create_task(insert_until_queryable(client, code, text)))
            await asyncio.sleep(1 / args.rate)
        queryable = await asyncio.gather(*tasks)
        figures["never_queryable"] = sum(1 for q in queryable if q == float("inf"))
        figures["queryable_p50_s"] = round(percentile(queryable, 0.5), 3)
        figures["queryable_p95_s"] = round(percentile(queryable, 0.95), 3)
        print(
            f"searchability at {args.rate}/s: insert → queryable p50 {figures['queryable_p50_s']} s, "
            f"p95 {figures['queryable_p95_s']} s",
            flush=True,
        )
        await asyncio.sleep(2)  # let the last community update land
        for mode in ("hybrid", "local", "global", "naive"):
            times = []
            for i in range(args.queries):
                person, city = PEOPLE[i % len(PEOPLE)], CITIES[i % len(CITIES)]
                t0 = time.perf_counter()
                answer = await client.post(
                    QUERY, json={"query": f"What did {person} do in {city}?", "mode": mode}
                )
                times.append((time.perf_counter() - t0) * 1000)
                assert answer.status_code == 200 and answer.json()["rag_memory"], answer.text
            figures[f"query_{mode}_p50_ms"] = round(statistics.median(times), 1)
            figures[f"query_{mode}_p95_ms"] = round(percentile(times, 0.95), 1)
            p50, p95 = figures[f"query_{mode}_p50_ms"], figures[f"query_{mode}_p95_ms"]
            print(f"query {mode:>6}: p50 {p50} ms, p95 {p95} ms", flush=True)
    figures["goal_queryable_p95_s"] = 5.0
    figures["goal_query_p50_ms"] = 100.0
    figures["queryable_ratio"] = round(5.0 / figures["queryable_p95_s"], 2)
    figures["query_ratio"] = round(
        100.0 / max(figures[f"query_{m}_p50_ms"] for m in ("hybrid", "local", "global", "naive")), 2
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-kb-"))
    llm, llm_url = start_fake_llm(work, "--responder", "lore_common.testing.responders:kb")
    mem, mem_url = start_service(
        "mem",
        work,
        {
            "LORE__MEM__MEMORYKB__LLM__PROVIDER": "openai",
            "LORE__MEM__MEMORYKB__LLM__BASE_URL": llm_url,
            "LORE__MEM__MEMORYKB__LLM__API_KEY": "bench",
        },
    )
    try:
        figures = asyncio.run(run(mem_url, args))
    finally:
        mem.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
