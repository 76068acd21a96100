"""Lore `vg` memory against mem0 on the same fake OpenAI-compatible server (0 ms) and the same
embedder (the server's /v1/embeddings), Qdrant local for both: prefill 10,000 memories, then 1,000
adds (with inference) and 1,000 searches. mem0ai is installed into its own venv (never into Lore's).

Goal: Lore >= 2x faster on search p50 and >= 1.5x on add p50.

    uv run python bench/memory_vs_mem0.py [--prefill 10000] [--ops 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from side_venv import run_driver, venv_python

from lore_common.testing.processes import start_fake_llm, start_service
from lore_common.testing.stats import percentile

DIM = 256
WORDS = (
    "coffee tea hiking Lisbon Berlin piano guitar cats dogs sushi pasta running chess novels jazz "
    "gardening cycling photography yoga painting swimming climbing baking kayaks opera"
).split()


def sentence(rng: random.Random, i: int) -> str:
    a, b = rng.sample(WORDS, 2)
    return f"Fact {i}: I like {a} and I often talk about {b} with friend number {rng.randint(1, 999)}."


def mem0_python(work: Path) -> Path:
    """A venv with mem0ai, separate from the workspace; reused between runs."""
    return venv_python("mem0", "mem0ai>=2,<3")


def run_mem0(python: Path, job: dict[str, Any]) -> dict[str, Any]:
    """Run the mem0 half in mem0's venv; returns what the driver printed."""
    return run_driver(python, "mem0_driver.py", job)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefill", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=1_000)
    args = parser.parse_args()
    rng = random.Random(11)
    prefill = [sentence(rng, i) for i in range(args.prefill)]
    adds = [sentence(rng, args.prefill + i) for i in range(args.ops)]
    queries = [f"Who talks about {rng.choice(WORDS)} and {rng.choice(WORDS)}?" for _ in range(args.ops)]
    work = Path(tempfile.mkdtemp(prefix="lore-bench-mem0-"))
    python = mem0_python(work)
    llm, llm_url = start_fake_llm(
        work, "--responder", "lore_common.testing.responders:memory", "--embedding-dim", str(DIM)
    )
    env = {
        "LORE__MEM__EMBEDDING_API__PROVIDER": "openai",
        "LORE__MEM__EMBEDDING_API__BASE_URL": llm_url,
        "LORE__MEM__EMBEDDING_API__DIM": str(DIM),
        "LORE__MEM__MEMORYVG__LLM__PROVIDER": "openai",
        "LORE__MEM__MEMORYVG__LLM__BASE_URL": llm_url,
    }
    mem, base = start_service("mem", work, env)
    figures: dict[str, float] = {}
    try:
        lore_add, lore_search = [], []
        with httpx.Client(base_url=base, timeout=60) as client:
            for text in prefill:
                r = client.post(
                    "/api/v1/mem/vg/add",
                    json={
                        "messages": [{"role": "user", "content": text}],
                        "user_id": "bench",
                        "infer": False,
                    },
                )
                r.raise_for_status()
            for text in adds:
                started = time.perf_counter()
                r = client.post(
                    "/api/v1/mem/vg/add",
                    json={"messages": [{"role": "user", "content": text}], "user_id": "bench"},
                )
                lore_add.append((time.perf_counter() - started) * 1000)
                r.raise_for_status()
            stored = len(
                client.get("/api/v1/mem/vg", params={"user_id": "bench", "limit": 100_000}).json()["results"]
            )
            for query in queries:
                started = time.perf_counter()
                r = client.post(
                    "/api/v1/mem/vg/search", json={"query": query, "user_id": "bench", "limit": 10}
                )
                lore_search.append((time.perf_counter() - started) * 1000)
                r.raise_for_status()
        print(f"Lore: {stored} memories stored", flush=True)
        job = {
            "llm_url": llm_url,
            "dim": DIM,
            "path": str(work / "mem0"),
            "user": "bench",
            "prefill": prefill,
            "adds": adds,
            "queries": queries,
        }
        mem0 = run_mem0(python, job)
    finally:
        mem.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    for system, add_ms, search_ms in (
        ("lore", lore_add, lore_search),
        ("mem0", mem0["add_ms"], mem0["search_ms"]),
    ):
        figures[f"{system}_add_p50_ms"] = round(percentile(add_ms, 0.5), 2)
        figures[f"{system}_add_p95_ms"] = round(percentile(add_ms, 0.95), 2)
        figures[f"{system}_search_p50_ms"] = round(percentile(search_ms, 0.5), 2)
        figures[f"{system}_search_p95_ms"] = round(percentile(search_ms, 0.95), 2)
    figures["search_p50_speedup"] = round(figures["mem0_search_p50_ms"] / figures["lore_search_p50_ms"], 3)
    figures["add_p50_speedup"] = round(figures["mem0_add_p50_ms"] / figures["lore_add_p50_ms"], 3)
    figures["prefill"] = args.prefill
    figures["ops"] = args.ops
    figures["goal_search_p50_speedup"] = 2.0
    figures["goal_add_p50_speedup"] = 1.5
    for system in ("lore", "mem0"):
        print(
            f"{system}: add p50 {figures[f'{system}_add_p50_ms']} ms "
            f"p95 {figures[f'{system}_add_p95_ms']} ms; "
            f"search p50 {figures[f'{system}_search_p50_ms']} ms p95 {figures[f'{system}_search_p95_ms']} ms"
        )
    print(
        f"Lore is {figures['search_p50_speedup']}x mem0 on search p50 (goal 2x), "
        f"{figures['add_p50_speedup']}x on add p50 (goal 1.5x); Lore measured over HTTP, mem0 in-process"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
