"""Table-pipeline concurrency: the fake model answers every call after 200 ms; a question naming 20
entities goes through gen (a real granian process) without KB grounding, so the wall time is all model
time. Ideal = ceil(entities / max_workers) × 1 row call × latency + 2 fixed calls (schema, SQL) × latency.
Goal: ideal / wall ≥ 0.8 at the default max_workers (16).

    uv run python bench/gen.py [--entities 20] [--latency-ms 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from lore_common.testing.processes import start_fake_llm, start_service

SUBMIT = "/api/v1/gen/pipeline/submit"
STATUS = "/api/v1/gen/pipeline/status"


def run_once(client: httpx.Client, entities: int, max_workers: int) -> float:
    names = ", ".join(f"Entity{i:02d}" for i in range(entities))
    started = time.perf_counter()
    task_id = client.post(SUBMIT, json={"question": f"Compare: {names}", "max_workers": max_workers}).json()[
        "task_id"
    ]
    while True:
        status = client.get(f"{STATUS}/{task_id}").json()
        if status["status"] in ("completed", "failed"):
            break
        time.sleep(0.005)
    wall = time.perf_counter() - started
    if status["status"] != "completed":
        raise SystemExit(f"pipeline failed: {status.get('error')}")
    result = status["result"]
    assert len(result["csv_data"]) == entities, result["csv_data"]
    assert result["query_results"][0]["n"] == entities
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entities", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-gen-"))
    llm, llm_url = start_fake_llm(
        work, "--latency-ms", str(args.latency_ms), "--responder", "lore_common.testing.responders:table"
    )
    gen, gen_url = start_service(
        "gen",
        work,
        {
            "LORE__GEN__LLM__PROVIDER": "openai",
            "LORE__GEN__LLM__BASE_URL": llm_url,
            "LORE__GEN__LLM__API_KEY": "bench",
            # The model client must not be the bottleneck: max_workers is what is measured.
            "LORE__GEN__LLM__MAX_CONCURRENT_REQUESTS": "64",
        },
    )
    figures: dict[str, float] = {}
    latency = args.latency_ms / 1000
    try:
        with httpx.Client(base_url=gen_url, timeout=60) as client:
            run_once(client, 2, 16)  # warm-up: connections, imports
            print(f"{args.entities} entities, model latency {args.latency_ms:.0f} ms\n")
            print(f"{'max_workers':>11} {'ideal s':>8} {'wall s (median)':>16} {'ideal/wall':>11}")
            for workers in (4, 8, 16):
                walls = [run_once(client, args.entities, workers) for _ in range(args.repeats)]
                wall = statistics.median(walls)
                ideal = (math.ceil(args.entities / workers) + 2) * latency
                figures[f"w{workers}_wall_s"] = round(wall, 3)
                figures[f"w{workers}_ideal_s"] = round(ideal, 3)
                figures[f"w{workers}_ratio"] = round(ideal / wall, 3)
                print(f"{workers:>11} {ideal:>8.3f} {wall:>16.3f} {ideal / wall:>11.3f}")
        figures["ratio"] = figures["w16_ratio"]
        figures["goal_ratio"] = 0.8
        print(f"\ngoal: ideal/wall >= 0.8 at max_workers 16 -> {figures['ratio']:.3f}")
    finally:
        gen.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
