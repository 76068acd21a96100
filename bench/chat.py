"""Chat latency: a 10,000-chunk KB (mode 1, the local embedder `auto` chooses, or `--embedding-model`),
32 concurrent clients, the fake model server answering at 0 ms. Prints p50/p95 of `naive` and
`rerank` chat measured server-side (`query_info.timings_ms.total_ms`) and client-side, chats per
second, and the CPU time each chat costs in docdb (with its embedding and search processes) and in
the harness (the fake model and the load generator, which share the machine): the median of
`--rounds` rounds, with min and max. With `--sdk-share`, py-spy samples the service process during
the last round of each mode, and the share of its busy samples inside the model SDK (openai and the
HTTP stack under it) times the service's CPU per chat gives the SDK's CPU per chat; each process of
the tree is reported apart (the service, the local embedding model, vector search, the rest), and the
tree less the SDK's share and the embedding process is Lore's own (the issue's goal: at most 2.0 ms
per chat outside the SDK, which counts the local embedding model as Lore's).

With `--stream`, two docdb processes side by side, one with metrics on and one with them off (each
with its own copy of a smaller KB), answer streamed chats (`stream: true`) from a fake model that
writes a word every `--token-ms`: time to the first event, the first answer delta and the last event
(p50/p95), and the CPU each chat costs in docdb with and without metrics, rounds alternating between
the two. Goal: metrics add at most 5 % to docdb's CPU per chat.

    uv run python bench/chat.py [--chunks 10000] [--clients 32] [--requests 640] [--rounds 3]
    uv run python bench/chat.py --stream [--chunks 2000] [--clients 16] [--requests 320] [--rounds 4]

With `--baseline REF`, CPU is counted in instructions, which do not swing with the machine's load as
milliseconds do: REF is checked out beside this tree (`git worktree`, under /tmp) and for each of the
two, docdb runs under valgrind's callgrind (perf's hardware counters are not available in this VM)
with its code taken from that tree, builds the same small KB, answers warm-up chats, and then counts
the instructions of its own process over `--requests` `naive` chats from one client. The model is the
offline answerer (no SDK in the process) and the embedder runs in its own process, which is not
counted, nor are the vector engine's and the graph store's; what is counted is the service: HTTP,
retrieval, the answer and the stores' clients.

    uv run python bench/chat.py --baseline HEAD~3 [--chunks 300] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import psutil

from lore_common.testing.processes import ServerProcess, free_port, start_fake_llm, start_service, wait_task
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
# The model SDK's frames: the openai package and the HTTP stack under it (httpx over aiohttp's client;
# the service's own server is granian, so aiohttp here is the SDK's transport only).
SDK_PACKAGES = ("openai/", "httpx/", "httpx_aiohttp/", "aiohttp/")


# The docdb tree's processes by what they run: the local embedding model is a model call too, like the
# SDK's; the vector search process and the service are Lore's own.
PARTS = {"lore_common.providers.embed_worker": "embedding", "lore_common.vector_worker": "vector"}


def cpu_by_part(pid: int) -> dict[str, float]:
    """CPU seconds so far of the service process, its embedding process, its vector search process
    and the rest of its tree (the graph store, text extraction)."""
    service = psutil.Process(pid)
    seconds = {"service": sum(service.cpu_times()[:2]), "embedding": 0.0, "vector": 0.0, "other": 0.0}
    for child in service.children(recursive=True):
        try:
            cmdline, used = child.cmdline(), sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
        part = next((name for module, name in PARTS.items() if module in cmdline), "other")
        seconds[part] += used
    return seconds


def sdk_share(raw: Path) -> float:
    """The share of the service's busy samples (py-spy `raw` output: `frame;frame;… count`) spent
    inside the model SDK."""
    inside = total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack.strip():
            continue
        total += int(count)
        frames = [frame.rpartition(" (")[2] for frame in stack.split(";")]
        if any(frame.startswith(SDK_PACKAGES) for frame in frames):
            inside += int(count)
    return inside / total if total else 0.0


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


async def streamed(base: str, clients: int, total: int, rng: random.Random) -> dict[str, list[float]]:
    """Streamed chats by `clients` closed-loop clients: milliseconds to the first event (the
    passages), the first answer delta and the last event, per chat."""
    times: dict[str, list[float]] = {"first_event": [], "first_delta": [], "last_event": []}
    remaining = total
    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(limit=clients)) as http:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                body = {
                    "query": f"What {rng.choice(VERBS)} {rng.choice(TOPICS)}?",
                    "kb_id": "bench",
                    "user_id": "u",
                    "max_results": 5,
                    "stream": True,
                }
                started = time.perf_counter()
                seen: dict[str, float] = {}
                last = ""
                async with http.post("/api/v1/docdb/chat", json=body) as response:
                    async for raw in response.content:
                        line = raw.decode().strip()
                        if not line.startswith("event: "):
                            continue
                        last = line[7:]
                        now = (time.perf_counter() - started) * 1000
                        seen.setdefault("first_event", now)
                        if last == "delta":
                            seen.setdefault("first_delta", now)
                        seen["last_event"] = now
                if last != "done" or "first_delta" not in seen:
                    raise RuntimeError(f"stream ended with {last!r}: {seen}")
                for key, value in seen.items():
                    times[key].append(value)

        await asyncio.gather(*(worker() for _ in range(clients)))
    return times


def build_kb(base: str, chunks: int) -> int:
    rng = random.Random(3)
    with httpx.Client(base_url=base, timeout=600) as client:
        client.post(DS, json={"name": "notes"})
        for start in range(0, chunks, 500):
            files = [
                ("files", (f"n{i:05d}.txt", paragraph(rng, i).encode()))
                for i in range(start, min(chunks, start + 500))
            ]
            client.post(f"{DS}/notes/files", files=files).raise_for_status()
        client.post(KB, json={"name": "bench"})
        reply = client.post(f"{KB}/bench/parse", json={"datasets": ["notes"], "mode": 1}).json()
        wait_task(client, reply["data"]["tasks"][0]["task_id"])
        count: int = client.get(f"{KB}/bench/overview").json()["overview"]["chunk_count"]
        return count


def stream_bench(args: argparse.Namespace) -> None:
    rng = random.Random(5)
    work = Path(tempfile.mkdtemp(prefix="lore-bench-stream-"))
    llm, llm_url = start_fake_llm(work, "--token-ms", str(args.token_ms))
    env = {
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__MAX_CONCURRENT_REQUESTS": str(args.clients),
    }
    services = {}
    figures: dict[str, float] = {}
    try:
        for name, on in (("on", "true"), ("off", "false")):
            folder = work / f"metrics-{name}"
            folder.mkdir()
            services[name] = start_service("docdb", folder, {**env, "LORE__TELEMETRY__METRICS": on})
            chunks = build_kb(services[name][1], args.chunks)
            print(f"docdb with metrics {name}: KB ready, {chunks} chunks", flush=True)
        figures["chunks"] = chunks
        for _, base in services.values():
            asyncio.run(streamed(base, args.clients, args.clients * 2, rng))  # warm-up
        rounds: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
        for number in range(1, args.rounds + 1):
            # Alternate which goes first, so a drift of this machine's speed hits both alike.
            order = ("on", "off") if number % 2 else ("off", "on")
            for name in order:
                process, base = services[name]
                cpu_before = process.cpu_seconds()
                started = time.perf_counter()
                times = asyncio.run(streamed(base, args.clients, args.requests, rng))
                elapsed = time.perf_counter() - started
                figure = {
                    "cpu_ms_per_chat": (process.cpu_seconds() - cpu_before) * 1000 / args.requests,
                    "chats_per_s": args.requests / elapsed,
                    **{f"{k}_p50_ms": percentile(v, 0.5) for k, v in times.items()},
                    **{f"{k}_p95_ms": percentile(v, 0.95) for k, v in times.items()},
                }
                rounds[name].append(figure)
                shown = ", ".join(f"{k} {v:.1f}" for k, v in figure.items())
                print(f"round {number} metrics {name:3s}: {shown}", flush=True)
        for name, results in rounds.items():
            for key in results[0]:
                figures[f"metrics_{name}_{key}"] = round(statistics.median(r[key] for r in results), 2)
        on, off = figures["metrics_on_cpu_ms_per_chat"], figures["metrics_off_cpu_ms_per_chat"]
        figures["metrics_cpu_overhead_ratio"] = round(on / off - 1, 4)
        for key in ("first_event", "first_delta", "last_event"):
            print(
                f"time to {key.replace('_', ' ')}: p50 {figures[f'metrics_on_{key}_p50_ms']} ms, "
                f"p95 {figures[f'metrics_on_{key}_p95_ms']} ms",
                flush=True,
            )
        print(
            f"docdb CPU per streamed chat: {on} ms with metrics, {off} ms without "
            f"(overhead {figures['metrics_cpu_overhead_ratio']:+.1%}; goal at most +5 %)",
            flush=True,
        )
    finally:
        for process, _ in services.values():
            process.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    figures |= {"clients": args.clients, "token_ms": args.token_ms, "goal_metrics_overhead_ratio": 0.05}
    print(json.dumps(figures))


ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("libs/core/src", "libs/common/src", "services/docdb/src")


def callgrind_totals(path: Path) -> int:
    """The instructions (`Ir`) a callgrind dump counted."""
    for line in path.read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def wait_idle(pid: int, quiet_s: float = 2.0, timeout_s: float = 300.0) -> None:
    """Until the process has used under 5 % of a core for `quiet_s` seconds."""
    process = psutil.Process(pid)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        before = sum(process.cpu_times()[:2])
        time.sleep(quiet_s)
        if sum(process.cpu_times()[:2]) - before < 0.05 * quiet_s:
            return
    raise SystemExit(f"docdb (pid {pid}) stayed busy for {timeout_s:.0f} s after its KB was built")


@dataclass
class Count:
    """What callgrind counted in docdb's process: over the chats, and over a quiet window as long."""

    chats: int
    chat_s: float
    idle: int
    idle_s: float
    requests: int

    @property
    def idle_per_s(self) -> float:
        return self.idle / self.idle_s

    @property
    def raw_per_chat(self) -> float:
        return self.chats / self.requests

    @property
    def per_chat(self) -> float:
        """The chats' instructions less what the idle service runs in as long (its timers: job polls,
        heartbeats, scheduled-sync checks). Under valgrind a chat lasts 30 to 50 times longer than it
        does natively, so without this the timers' work, which is no chat's, swells each chat's share."""
        return (self.chats - self.idle_per_s * self.chat_s) / self.requests


def instructions_per_chat(tree: Path, args: argparse.Namespace) -> Count:
    """docdb from `tree`'s sources under callgrind: instructions of its process per `naive` chat."""
    work = Path(tempfile.mkdtemp(prefix="lore-bench-instr-"))
    port = free_port()
    env = {
        "PYTHONPATH": os.pathsep.join(str(tree / source) for source in SOURCES),
        "LORE_CONFIG_DIR": str(work / "config"),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__DOCDB__SERVER__PORT": str(port),
        "LORE__DOCDB__SERVER__DATA_DIR": str(work / "docdb"),
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
        "LORE__DOCDB__LLM__PROVIDER": "offline",
        # One string hash for both trees: with a random one, sets and dicts order and probe differently
        # from run to run, and the count moved by a few percent for the same code.
        "PYTHONHASHSEED": "0",
    }
    if args.embedding_model:
        env["LORE__DOCDB__EMBEDDING_API__MODEL"] = args.embedding_model
    out = work / "callgrind.out"
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    docdb = ServerProcess([*argv, sys.executable, "-m", "lore_docdb"], env=env, log_path=work / "docdb.log")
    base = f"http://127.0.0.1:{port}"
    control = ["callgrind_control", str(docdb.pid)]

    def dump() -> int:
        """The instructions counted since the last dump (each dump starts a new count)."""
        subprocess.run([*control, "--dump"], check=True, capture_output=True)
        dumps = sorted(work.glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime)
        return callgrind_totals(dumps[-1])

    try:
        docdb.wait_healthy(f"{base}/health", timeout=900)
        chunks = build_kb(base, args.chunks)
        rng = random.Random(5)
        asyncio.run(load(base, "naive", 1, 10, rng))  # warm-up: imports, caches, connections
        # What a parse does after its task reads completed (the check for files changed under it, the
        # heap trim's full collection) runs for seconds under valgrind: counted, it added 0.8 to 2 M
        # instructions to every chat.
        wait_idle(docdb.pid)
        subprocess.run([*control, "--instr=on"], check=True, capture_output=True)
        started = time.monotonic()
        asyncio.run(load(base, "naive", 1, args.requests, rng))
        chats = dump()
        chat_s = time.monotonic() - started
        started = time.monotonic()
        time.sleep(chat_s)
        idle = dump()
        count = Count(chats, chat_s, idle, time.monotonic() - started, args.requests)
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"  {tree}: {chunks} chunks, {count.per_chat / 1e6:.2f} M instructions per chat "
        f"({count.raw_per_chat / 1e6:.2f} M with the idle service's {count.idle_per_s / 1e6:.2f} M/s "
        f"over {count.chat_s:.1f} s)",
        flush=True,
    )
    return count


def baseline_bench(args: argparse.Namespace) -> None:
    """Instructions per chat of this tree and of `args.baseline`, one after the other in one run."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", args.baseline], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    worktree = Path(tempfile.mkdtemp(prefix=f"lore-baseline-{commit}-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(worktree), commit], cwd=ROOT, check=True)
    try:
        baseline = instructions_per_chat(worktree, args)
        current = instructions_per_chat(ROOT, args)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    ratio = current.per_chat / baseline.per_chat
    print(
        f"instructions per chat: this tree {current.per_chat / 1e6:.2f} M, {commit} "
        f"{baseline.per_chat / 1e6:.2f} M ({ratio:.2f}x; counted with the idle service's timers: "
        f"{current.raw_per_chat / 1e6:.2f} M and {baseline.raw_per_chat / 1e6:.2f} M)",
        flush=True,
    )
    print(
        json.dumps(
            {
                "baseline": commit,
                "chunks": args.chunks,
                "requests": args.requests,
                "instructions_per_chat": round(current.per_chat),
                "baseline_instructions_per_chat": round(baseline.per_chat),
                "ratio_to_baseline": round(ratio, 3),
                "instructions_per_chat_with_idle": round(current.raw_per_chat),
                "baseline_instructions_per_chat_with_idle": round(baseline.raw_per_chat),
                "idle_instructions_per_s": round(current.idle_per_s),
                "baseline_idle_instructions_per_s": round(baseline.idle_per_s),
                "goal_ratio_to_last_wave": 1.0,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream", action="store_true", help="streamed chats, metrics on and off")
    parser.add_argument("--chunks", type=int, default=None, help="10000; 2000 with --stream")
    parser.add_argument("--clients", type=int, default=None, help="32; 16 with --stream")
    parser.add_argument("--requests", type=int, default=None, help="640; 320 with --stream")
    parser.add_argument("--rounds", type=int, default=None, help="3; 4 with --stream")
    parser.add_argument("--token-ms", type=float, default=5.0, help="the fake model's pause between words")
    parser.add_argument("--embedding-model", default=None, help="the KB's embedder (default: auto)")
    parser.add_argument(
        "--sdk-share", action="store_true", help="sample docdb with py-spy in the last round: the SDK's CPU"
    )
    parser.add_argument("--baseline", default=None, help="a commit: instructions per chat, it and this tree")
    args = parser.parse_args()
    if args.baseline:
        args.chunks, args.requests = args.chunks or 300, args.requests or 200
        baseline_bench(args)
        return
    defaults = (2000, 16, 320, 4) if args.stream else (10_000, 32, 640, 3)
    for key, value in zip(("chunks", "clients", "requests", "rounds"), defaults, strict=True):
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.stream:
        stream_bench(args)
        return
    rng = random.Random(3)
    work = Path(tempfile.mkdtemp(prefix="lore-bench-chat-"))
    llm, llm_url = start_fake_llm(work)
    env = {
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__MAX_CONCURRENT_REQUESTS": str(args.clients),
    }
    if args.embedding_model:
        env["LORE__DOCDB__EMBEDDING_API__MODEL"] = args.embedding_model
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
                profile = work / f"profile-{mode}-{number}.txt"
                spy = None
                if args.sdk_share and number == args.rounds:
                    # The last round of each mode is sampled (the service process only, 100 Hz).
                    command = ["py-spy", "record", "-p", str(docdb.pid), "-r", "100", "-f", "raw"]
                    spy = subprocess.Popen(
                        [*command, "--nonblocking", "-o", str(profile)], stdout=subprocess.DEVNULL
                    )
                    time.sleep(1.0)
                parts_before = cpu_by_part(docdb.pid)
                cpu_before = docdb.cpu_seconds(), llm.cpu_seconds(), time.process_time()
                started = time.perf_counter()
                server, client_side = asyncio.run(load(base, mode, args.clients, args.requests, rng))
                elapsed = time.perf_counter() - started
                parts_after = cpu_by_part(docdb.pid)
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
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(timeout=60)
                    part_ms = {
                        name: (parts_after[name] - parts_before[name]) * 1000 / args.requests
                        for name in parts_after
                    }
                    service_ms = part_ms["service"]
                    sdk_ms = sdk_share(profile) * service_ms
                    # Lore's own: the tree less the two model calls (the chat SDK's share of the service
                    # process, and the local embedding model's process).
                    lore_ms = used[0] - sdk_ms - part_ms["embedding"]
                    figures[f"{mode}_service_cpu_ms_per_chat"] = round(service_ms, 2)
                    figures[f"{mode}_sdk_cpu_ms_per_chat"] = round(sdk_ms, 2)
                    figures[f"{mode}_embedding_cpu_ms_per_chat"] = round(part_ms["embedding"], 2)
                    figures[f"{mode}_vector_cpu_ms_per_chat"] = round(part_ms["vector"], 2)
                    figures[f"{mode}_other_cpu_ms_per_chat"] = round(part_ms["other"], 2)
                    figures[f"{mode}_outside_sdk_cpu_ms_per_chat"] = round(used[0] - sdk_ms, 2)
                    figures[f"{mode}_outside_models_cpu_ms_per_chat"] = round(lore_ms, 2)
                    print(
                        f"round {number} {mode:7s} sampled: docdb tree {used[0]:.2f} ms CPU per chat: the "
                        f"service process {service_ms:.2f} ms (the model SDK {sdk_ms:.2f} ms of it), the "
                        f"embedding process {part_ms['embedding']:.2f} ms, vector search "
                        f"{part_ms['vector']:.2f} ms, the rest {part_ms['other']:.2f} ms; outside the SDK "
                        f"{used[0] - sdk_ms:.2f} ms (goal <= 2.0), outside both models {lore_ms:.2f} ms",
                        flush=True,
                    )
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
