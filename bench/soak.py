"""Soak: the whole product (`lore-up`, embedded stores, default local embedder, offline model) under
mixed traffic through the gateway at a bounded rate: uploads, parses, chats, vg adds and searches, kb
inserts and queries. Prints errors, p50/p99 per operation for each minute, and the RSS of every
process at start and end. Goal: 0 errors, p99 within 2x from the first to the last minute, RSS growth
under 10 %.

With `--faults`, the relational stores are PostgreSQL (127.0.0.1:5432, fresh databases) and docdb's
graph a FalkorDB server, each behind a TCP proxy that the bench cuts for `--fault-for` seconds every
`--fault-every` seconds, PostgreSQL and FalkorDB in turn. Then an error is expected only from an
operation that overlapped an outage (and should be a 503 naming the store, not a 500); every
acknowledged write (upload, vg add, kb insert, parse) is checked afterwards: parses and inserts must
complete, files and memories must be there. Goals: 0 errors outside the outages, 0 server errors
during them, 0 lost or failed acknowledged writes, RSS growth under 10 %.

    uv run just soak            # 10 minutes
    uv run just soak --faults   # 10 minutes, a store dropped for 20 s every 3 minutes
    uv run python bench/soak.py --minutes 1 --rate 4
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psutil

from lore_common.servers import SERVICES, SYSTEM_POSTGRES, database_url, falkordb
from lore_common.stores.pgvector import plain_dsn
from lore_common.testing.processes import ServerProcess, drop_stack_databases, free_port, pg_rows
from lore_common.testing.stats import percentile
from lore_common.testing.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parents[1]
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
MEM = "/api/v1/mem"
WEIGHTS = {"chat": 35, "vg_search": 20, "vg_add": 15, "upload": 10, "kb_insert": 8, "kb_query": 8, "parse": 4}
# The processes of the stack by a word of their command line (workers before the services they serve).
PROCESS_NAMES = [
    ("embed_worker", "embedders"),
    ("vector_worker", "vectors"),
    *((f"lore_{n}", n) for n in ("gateway", "docdb", "gen", "mem")),
]
TOPICS = ["tides", "glaciers", "volcanoes", "coral", "monsoons", "deserts", "aurora", "rivers"]


def rss_by_process(launcher: ServerProcess) -> dict[str, float]:
    out: dict[str, float] = {}
    for pid in launcher.tree_pids():
        try:
            process = psutil.Process(pid)
            line = " ".join(process.cmdline())
            name = next((n for marker, n in PROCESS_NAMES if marker in line), process.name())
            out[name] = out.get(name, 0.0) + process.memory_info().rss / 2**20
        except psutil.Error:
            continue
    return {k: round(v, 1) for k, v in sorted(out.items())}


@dataclass
class Outcome:
    """What the load did: each operation's timing and result, and the writes it was told were kept."""

    timings: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    # (started, ended, kind, HTTP status, detail) of each failed operation, in monotonic seconds.
    failures: list[tuple[float, float, str, int, str]] = field(default_factory=list)
    uploads: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    memories: list[str] = field(default_factory=list)
    inserts: list[str] = field(default_factory=list)
    parses: list[str] = field(default_factory=list)
    # RSS (MiB) of each process of the stack, sampled each minute from the end of the warm-up.
    rss: list[dict[str, float]] = field(default_factory=list)


@dataclass
class Faults:
    """Cuts one proxied store after another on a schedule, remembering when each was away."""

    stores: list[tuple[str, TcpProxy]]
    every: float
    down_for: float
    windows: list[tuple[float, float, str]] = field(default_factory=list)

    async def run(self, start: float, end: float) -> None:
        turn = 0
        while (at := start + self.every * (turn + 1)) + self.down_for < end:
            await asyncio.sleep(at - time.monotonic())
            name, proxy = self.stores[turn % len(self.stores)]
            await asyncio.to_thread(proxy.stop)
            dropped = time.monotonic()
            print(f"  {dropped - start:6.0f} s: {name} dropped for {self.down_for:g} s", flush=True)
            await asyncio.sleep(self.down_for)
            await asyncio.to_thread(proxy.start)
            self.windows.append((dropped, time.monotonic(), name))
            turn += 1

    def during(self, started: float, ended: float) -> bool:
        return any(started <= up and ended >= down for down, up, _ in self.windows)


async def run(
    base: str, minutes: float, rate: float, sample: Callable[[], dict[str, float]], faults: Faults | None
) -> Outcome:
    rng = random.Random(11)
    outcome = Outcome()
    # Uploads fill the current batch dataset; a parse op parses that batch into the KB and opens the
    # next one: steady work per operation while the KB keeps growing (as new documents arrive).
    batch = {"current": 0}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await client.post(DS, json={"name": "soak-0"})
        await client.post(KB, json={"name": "soak"})

        async def op(kind: str, minute: int, n: int) -> None:
            topic = rng.choice(TOPICS)
            started = time.perf_counter()
            began = time.monotonic()
            try:
                r = await send(kind, topic, n)
                ok = ok_reply(kind, r)
                status, detail = r.status_code, r.text[:200]
            except httpx.HTTPError as exc:
                ok, status, detail = False, 0, f"{type(exc).__name__}: {exc}"
            outcome.timings[kind][minute].append((time.perf_counter() - started) * 1000)
            if not ok:
                outcome.failures.append((began, time.monotonic(), kind, status, detail))

        async def send(kind: str, topic: str, n: int) -> httpx.Response:
            if kind == "chat":
                return await client.post(
                    "/api/v1/docdb/chat",
                    json={"query": f"What about {topic}?", "kb_id": "soak", "user_id": "s"},
                )
            if kind == "vg_search":
                return await client.post(f"{MEM}/vg/search", json={"query": topic, "user_id": f"u{n % 20}"})
            if kind == "vg_add":
                content = f"I study {topic} and visited site {n}."
                body = {"messages": [{"role": "user", "content": content}], "user_id": f"u{n % 20}"}
                r = await client.post(f"{MEM}/vg/add", json=body)
                if r.status_code == 200:
                    outcome.memories += [m["id"] for m in r.json()["results"] if m.get("event") == "ADD"]
                return r
            if kind == "upload":
                name = f"note-{n}.txt"
                text = f"Report {n} on {topic}: measurements at station {n % 17} rose by {n % 9} percent."
                dataset = f"soak-{batch['current']}"
                r = await client.post(f"{DS}/{dataset}/files", files={"files": (name, text.encode())})
                if r.status_code == 200:
                    outcome.uploads[dataset].append(name)
                return r
            if kind == "kb_insert":
                r = await client.post(
                    f"{MEM}/kb/insert", files={"query": (None, f"Station {n} watches {topic}.")}
                )
                if r.status_code == 202:
                    outcome.inserts.append(r.json()["id"])
                return r
            if kind == "kb_query":
                return await client.post(f"{MEM}/kb/query", json={"query": f"Which station watches {topic}?"})
            # parse the current batch, open the next one
            dataset = f"soak-{batch['current']}"
            made = await client.post(DS, json={"name": f"soak-{batch['current'] + 1}"})  # exists before use
            if made.status_code not in (200, 409):
                return made
            batch["current"] += 1
            r = await client.post(f"{KB}/soak/parse", json={"datasets": [dataset]})
            if r.status_code == 200 and outcome.uploads.get(dataset):  # an empty batch fails, rightly
                outcome.parses += [t["task_id"] for t in r.json()["data"]["tasks"]]
            return r

        # Warm-up (models load lazily on first use), not measured; then the baseline RSS.
        for number, kind in enumerate(WEIGHTS):
            await op(kind, -1, 100_000 + number)
        await asyncio.sleep(2)
        outcome.timings.clear()
        outcome.failures.clear()
        start = time.monotonic()
        end = start + minutes * 60

        async def sampler() -> None:  # RSS at the start of each minute, and at the end
            while True:
                outcome.rss.append(await asyncio.to_thread(sample))
                if time.monotonic() >= end:
                    return
                await asyncio.sleep(min(60.0, end - time.monotonic()))

        sampling = asyncio.create_task(sampler())
        injector = asyncio.create_task(faults.run(start, end)) if faults else None
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
        await sampling
        if injector is not None:
            await injector
    return outcome


def ok_reply(kind: str, r: httpx.Response) -> bool:
    if kind == "chat":  # docdb's chat answers 200 with its outcome in `code`; 400: KB not parsed yet
        return r.status_code == 200 and r.json().get("code") in (200, 400)
    if kind == "kb_insert":
        return r.status_code == 202
    if kind == "parse":
        return r.status_code in (200, 409)  # 409: two parse ops raced for one batch
    return r.status_code == 200


async def acknowledged_kept(base: str, outcome: Outcome, limit: float = 900) -> dict[str, int]:
    """Every write the load was told was kept: parses and inserts end completed, files and memories
    are there."""
    lost = {"parses_failed": 0, "inserts_failed": 0, "uploads_missing": 0, "memories_missing": 0}
    deadline = time.monotonic() + limit
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:

        async def final(path: str, done: set[str]) -> str:
            while True:
                status = str((await client.get(path)).json().get("status"))
                if status in done or time.monotonic() > deadline:
                    return status
                await asyncio.sleep(1)

        for task_id in outcome.parses:
            state = await final(f"/api/v1/docdb/files/processing/tasks/{task_id}", {"completed", "failed"})
            lost["parses_failed"] += state != "completed"
        for job_id in outcome.inserts:
            lost["inserts_failed"] += await final(f"{MEM}/kb/insert/{job_id}", {"done", "failed"}) != "done"
        for dataset, names in outcome.uploads.items():
            held = {f["name"] for f in (await client.get(f"{DS}/{dataset}/files")).json()["files"]}
            lost["uploads_missing"] += len(set(names) - held)
        for memory_id in outcome.memories:
            lost["memories_missing"] += (await client.get(f"{MEM}/vg/{memory_id}")).status_code != 200
    return lost


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=4.0, help="operations started per second")
    parser.add_argument("--faults", action="store_true", help="cut PostgreSQL and FalkorDB on a schedule")
    parser.add_argument("--fault-every", type=float, default=180.0, help="seconds between outages")
    parser.add_argument("--fault-for", type=float, default=20.0, help="seconds each outage lasts")
    parser.add_argument("--postgres-url", default=os.environ.get("LORE_TEST_POSTGRES_URL", SYSTEM_POSTGRES))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-soak-"))
    ports = {name: free_port() for name in ("gateway", "docdb", "gen", "mem")}
    env = {"LORE_CONFIG_DIR": str(ROOT / "config"), "LORE__LOGGING__LEVEL": "WARNING"}
    env["LORE__GATEWAY__PORT"] = str(ports["gateway"])
    for name in SERVICES:
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    prefix = f"soak_{os.getpid()}"
    with contextlib.ExitStack() as stack:
        faults = None
        if args.faults:
            pg = urlsplit(plain_dsn(args.postgres_url))
            pg_proxy = TcpProxy(pg.hostname or "127.0.0.1", pg.port or 5432).start()
            stack.callback(pg_proxy.close)
            proxied_admin = urlunsplit(pg._replace(netloc=f"{pg.username or ''}@127.0.0.1:{pg_proxy.port}"))
            for name in SERVICES:
                pg_rows(proxied_admin, f'CREATE DATABASE "{prefix}_{name}"')
            stack.callback(drop_stack_databases, args.postgres_url, prefix)
            graph_port = free_port()
            stack.enter_context(falkordb(work, graph_port))
            graph_proxy = TcpProxy("127.0.0.1", graph_port).start()
            stack.callback(graph_proxy.close)
            for name in SERVICES:
                env[f"LORE__{name.upper()}__DATABASE__URL"] = database_url(proxied_admin, f"{prefix}_{name}")
            env["LORE__DOCDB__GRAPH_STORE__URL"] = f"falkordb://127.0.0.1:{graph_proxy.port}"
            env["LORE__DOCDB__GRAPH_STORE__ENABLED"] = "true"
            faults = Faults(
                [("postgresql", pg_proxy), ("falkordb", graph_proxy)], args.fault_every, args.fault_for
            )
        launcher = ServerProcess(
            [sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=work, log_path=work / "lore.log"
        )
        stack.callback(launcher.stop)
        base = f"http://127.0.0.1:{ports['gateway']}"
        launcher.wait_healthy(f"{base}/health", timeout=240)
        outcome = asyncio.run(run(base, args.minutes, args.rate, lambda: rss_by_process(launcher), faults))
        lost = asyncio.run(acknowledged_kept(base, outcome))
    shutil.rmtree(work, ignore_errors=True)  # kept, with the services' log, when the run failed
    report(args, outcome, faults, lost)


def report(
    args: argparse.Namespace,
    outcome: Outcome,
    faults: Faults | None,
    lost: dict[str, int],
) -> None:
    during = [f for f in outcome.failures if faults and faults.during(f[0], f[1])]
    outside = [f for f in outcome.failures if not (faults and faults.during(f[0], f[1]))]
    # During an outage a failure should say so: a 503 (or chat's code 500) naming the store.
    server_errors = [f for f in during if not (f[3] == 503 or "unavailable" in f[4])]
    total = sum(len(v) for minutes in outcome.timings.values() for v in minutes.values())
    figures: dict[str, float] = {
        "operations": float(total),
        "errors": float(len(outcome.failures)),
        "errors_outside_outages": float(len(outside)),
        "errors_during_outages": float(len(during)),
        "unexplained_errors_during_outages": float(len(server_errors)),
        "outages": float(len(faults.windows) if faults else 0),
        "minutes": args.minutes,
        "rate_per_s": args.rate,
        **{k: float(v) for k, v in lost.items()},
        "acknowledged_parses": float(len(outcome.parses)),
        "acknowledged_inserts": float(len(outcome.inserts)),
        "acknowledged_uploads": float(sum(len(v) for v in outcome.uploads.values())),
        "acknowledged_memories": float(len(outcome.memories)),
    }
    print(f"{total} operations, {len(outcome.failures)} errors")
    if faults:
        for down, up, name in faults.windows:
            hit = [f for f in during if f[0] <= up and f[1] >= down]
            print(f"  outage of {name} ({up - down:.0f} s): {len(hit)} operations failed")
        print(f"  outside the outages: {len(outside)} errors; unexplained during them: {len(server_errors)}")
    for _, _, kind, status, detail in (outside + server_errors)[:8]:
        print(f"  {kind}: HTTP {status} {detail}")
    print("acknowledged writes: " + ", ".join(f"{k} {v}" for k, v in lost.items()))
    worst_ratio = 0.0
    for kind in WEIGHTS:
        minutes = outcome.timings.get(kind, {})
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
    # Growth over the whole run and over its second half: a leak keeps growing, a warm-up (allocator
    # arenas, caches filling to their bound) levels off.
    start, middle, end = outcome.rss[0], outcome.rss[len(outcome.rss) // 2], outcome.rss[-1]
    print(
        "RSS MiB per minute: "
        + "; ".join(f"{k} " + "/".join(f"{s.get(k, 0):.0f}" for s in outcome.rss) for k in start)
    )
    growth = {k: (end.get(k, 0) - v) / v for k, v in start.items() if v}
    late = {k: (end.get(k, 0) - v) / v for k, v in middle.items() if v}
    figures["p99_last_over_first_worst"] = round(worst_ratio, 2)
    figures["rss_growth_worst"] = round(max(growth.values()), 3)
    figures["rss_growth_second_half_worst"] = round(max(late.values()), 3)
    for k in start:
        figures[f"rss_start_{k}_mib"] = start[k]
        figures[f"rss_end_{k}_mib"] = end.get(k, 0.0)
        figures[f"rss_growth_{k}"] = round(growth.get(k, 0.0), 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
