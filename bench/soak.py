"""Soak: the whole product (`lore-up`, embedded stores, default local embedder, offline model) under
mixed traffic through the gateway at a bounded rate: uploads, parses, chats, vg adds and searches, kb
inserts and queries. Prints errors, p50/p99 per operation for each minute, and the RSS of every
process at start and end. Goal: 0 errors, p99 within 2x from the first to the last minute, RSS growth
under 10 %.

    uv run just soak            # 10 minutes
    uv run python bench/soak.py --minutes 1 --rate 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from lore_common.testing.processes import ServerProcess, free_port
from lore_common.testing.stats import percentile

ROOT = Path(__file__).resolve().parents[1]
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
WEIGHTS = {"chat": 35, "vg_search": 20, "vg_add": 15, "upload": 10, "kb_insert": 8, "kb_query": 8, "parse": 4}
TOPICS = ["tides", "glaciers", "volcanoes", "coral", "monsoons", "deserts", "aurora", "rivers"]


def rss_by_process(launcher: ServerProcess) -> dict[str, float]:
    out: dict[str, float] = {}
    for pid in launcher.tree_pids():
        try:
            process = psutil.Process(pid)
            line = " ".join(process.cmdline())
            name = next(
                (n for n in ("gateway", "docdb", "gen", "mem") if f"lore_{n}" in line), process.name()
            )
            out[name] = out.get(name, 0.0) + process.memory_info().rss / 2**20
        except psutil.Error:
            continue
    return {k: round(v, 1) for k, v in sorted(out.items())}


async def run(
    base: str, minutes: float, rate: float, on_warm: Callable[[], None]
) -> tuple[dict[str, dict[int, list[float]]], list[str]]:
    rng = random.Random(11)
    timings: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    errors: list[str] = []
    # Uploads fill the current batch dataset; a parse op parses that batch into the KB and opens the
    # next one: steady work per operation while the KB keeps growing (as new documents arrive).
    batch = {"current": 0}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await client.post(DS, json={"name": "soak-0"})
        await client.post(KB, json={"name": "soak"})

        async def op(kind: str, minute: int, n: int) -> None:
            topic = rng.choice(TOPICS)
            started = time.perf_counter()
            if kind == "chat":
                r = await client.post(
                    "/api/v1/docdb/chat",
                    json={"query": f"What about {topic}?", "kb_id": "soak", "user_id": "s"},
                )
                ok = r.status_code == 200 and r.json().get("code") in (200, 400)  # 400: KB not parsed yet
            elif kind == "vg_search":
                r = await client.post("/api/v1/mem/vg/search", json={"query": topic, "user_id": f"u{n % 20}"})
                ok = r.status_code == 200
            elif kind == "vg_add":
                content = f"I study {topic} and visited site {n}."
                body = {"messages": [{"role": "user", "content": content}], "user_id": f"u{n % 20}"}
                r = await client.post("/api/v1/mem/vg/add", json=body)
                ok = r.status_code == 200
            elif kind == "upload":
                name = f"note-{n}.txt"
                text = f"Report {n} on {topic}: measurements at station {n % 17} rose by {n % 9} percent."
                dataset = f"soak-{batch['current']}"
                r = await client.post(f"{DS}/{dataset}/files", files={"files": (name, text.encode())})
                ok = r.status_code == 200
            elif kind == "kb_insert":
                r = await client.post(
                    "/api/v1/mem/kb/insert", files={"query": (None, f"Station {n} watches {topic}.")}
                )
                ok = r.status_code == 202
            elif kind == "kb_query":
                r = await client.post(
                    "/api/v1/mem/kb/query", json={"query": f"Which station watches {topic}?"}
                )
                ok = r.status_code == 200
            else:  # parse the current batch, open the next one
                dataset = f"soak-{batch['current']}"
                await client.post(DS, json={"name": f"soak-{batch['current'] + 1}"})  # exists before use
                batch["current"] += 1
                r = await client.post(f"{KB}/soak/parse", json={"datasets": [dataset]})
                ok = r.status_code in (200, 409)  # 409: two parse ops raced for one batch
            timings[kind][minute].append((time.perf_counter() - started) * 1000)
            if not ok:
                errors.append(f"{kind}: HTTP {r.status_code} {r.text[:200]}")

        # Warm-up (models load lazily on first use), not measured; then the baseline RSS.
        for number, kind in enumerate(WEIGHTS):
            await op(kind, -1, 100_000 + number)
        await asyncio.sleep(2)
        timings.clear()
        on_warm()
        start = time.monotonic()
        end = start + minutes * 60
        pending: set[asyncio.Task[None]] = set()
        n = 0
        kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
        while time.monotonic() < end:
            minute = int((time.monotonic() - start) // 60)
            task = asyncio.create_task(op(rng.choices(kinds, weights)[0], minute, n))
            pending.add(task)
            task.add_done_callback(pending.discard)
            n += 1
            await asyncio.sleep(1 / rate)
        await asyncio.gather(*pending)
    return timings, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=4.0, help="operations started per second")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-soak-"))
    ports = {name: free_port() for name in ("gateway", "docdb", "gen", "mem")}
    env = {"LORE_CONFIG_DIR": str(ROOT / "config"), "LORE__LOGGING__LEVEL": "WARNING"}
    env["LORE__GATEWAY__PORT"] = str(ports["gateway"])
    for name in ("docdb", "gen", "mem"):
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    launcher = ServerProcess(
        [sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=work, log_path=work / "lore.log"
    )
    base = f"http://127.0.0.1:{ports['gateway']}"
    try:
        launcher.wait_healthy(f"{base}/health", timeout=240)
        rss_start: dict[str, float] = {}
        timings, errors = asyncio.run(
            run(base, args.minutes, args.rate, lambda: rss_start.update(rss_by_process(launcher)))
        )
        rss_end = rss_by_process(launcher)
    finally:
        launcher.stop()
        shutil.rmtree(work, ignore_errors=True)
    figures: dict[str, float] = {
        "errors": float(len(errors)),
        "minutes": args.minutes,
        "rate_per_s": args.rate,
    }
    print(f"{len(errors)} errors" + (": " + "; ".join(errors[:5]) if errors else ""))
    worst_ratio = 0.0
    for kind in WEIGHTS:
        minutes = timings.get(kind, {})
        if not minutes:
            continue
        first, last = min(minutes), max(minutes)
        p99_first, p99_last = percentile(minutes[first], 0.99), percentile(minutes[last], 0.99)
        row = " ".join(
            f"m{m}:{percentile(v, 0.5):.0f}/{percentile(v, 0.99):.0f}" for m, v in sorted(minutes.items())
        )
        print(f"{kind:>10} p50/p99 ms per minute: {row}")
        ratio = p99_last / p99_first if p99_first else 0.0
        worst_ratio = max(worst_ratio, ratio)
        figures[f"{kind}_p99_first_ms"] = round(p99_first, 1)
        figures[f"{kind}_p99_last_ms"] = round(p99_last, 1)
    growth = max((rss_end.get(k, 0) - v) / v for k, v in rss_start.items() if v) if rss_start else 0.0
    print(f"RSS MiB start {rss_start} end {rss_end}")
    figures["p99_last_over_first_worst"] = round(worst_ratio, 2)
    figures["rss_growth_worst"] = round(growth, 3)
    figures.update({f"rss_start_{k}_mib": v for k, v in rss_start.items()})
    figures.update({f"rss_end_{k}_mib": v for k, v in rss_end.items()})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
