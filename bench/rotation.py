"""Rotation of the internal credential under load: no request may fail.

Two mem replicas behind two gateways (each gateway balances both replicas), every process on the
token `old`. A load of concurrent memory reads and writes goes to the gateways in turn for `--seconds`
(at least until the rotation ends), while the rotation changes each process's tokens in three steps.
`--mode file` (the default, as the chart does it): each process reads its tokens from
`security.internal_token_file`, and the bench rewrites the files, one process after the other.
`--mode restart`: each process is restarted with its new tokens, one at a time, as a rolling update
would (a gateway leaves the client's rotation before it stops, as a pod leaves its Service):

1. the mem replicas get `old,new` (they accept both; the gateways still send old);
2. the gateways get `new,old` (they send new, which every replica accepts);
3. the replicas, then the gateways, get `new`.

At the end a call with `old` straight to a replica is refused and one with `new` answered.
Goal: 0 failed requests.

    uv run python bench/rotation.py [--seconds 60] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from lore_common.testing.processes import ServerProcess, free_port

OLD, NEW = "old-internal-token", "new-internal-token"


@dataclass
class Node:
    """One process: how to start it with a token, and the one running now."""

    name: str
    module: str
    port: int
    env: dict[str, str]
    log: Path
    process: ServerProcess | None = None
    health: str = "/health"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_file(self) -> Path:
        return self.log.with_suffix(".token")

    async def start(self, token: str, from_file: bool = False) -> None:
        if from_file:
            self.token_file.write_text(token)
            env = self.env | {"LORE__SECURITY__INTERNAL_TOKEN_FILE": str(self.token_file)}
        else:
            env = self.env | {"LORE__SECURITY__INTERNAL_TOKEN": token}
        self.process = ServerProcess([sys.executable, "-m", self.module], env=env, log_path=self.log)
        await asyncio.to_thread(self.process.wait_healthy, self.url + self.health, 120)

    async def stop(self) -> None:
        """SIGTERM to the server only, as a container's first process gets it: it finishes the requests
        it has and closes its own children; whatever is left afterwards goes."""
        if self.process is not None:
            process = self.process
            process.signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.process.wait, 20)
            await asyncio.to_thread(process.stop)


@dataclass
class Load:
    gateways: list[str]
    active: list[str] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    async def drain(self, url: str) -> None:
        """Take a gateway out of the rotation and wait for its requests to end."""
        self.active.remove(url)
        while self.in_flight.get(url, 0):
            await asyncio.sleep(0.01)

    async def worker(self, session: aiohttp.ClientSession, number: int, stop: asyncio.Event) -> None:
        turn = itertools.count(number)
        user = f"bench-{number}"
        while not stop.is_set():
            n = next(turn)
            url = self.active[n % len(self.active)]
            self.in_flight[url] = self.in_flight.get(url, 0) + 1
            started = time.perf_counter()
            try:
                if n % 5 == 0:
                    body = {
                        "messages": [{"role": "user", "content": f"note {n}"}],
                        "user_id": user,
                        "infer": False,
                    }
                    request = session.post(f"{url}/api/v1/mem/vg/add", json=body)
                else:
                    request = session.get(f"{url}/api/v1/mem/vg", params={"user_id": user, "limit": "5"})
                async with request as response:
                    await response.read()
                    if response.status == 200:
                        self.ok += 1
                    else:
                        self.failures.append(f"{response.status} {(await response.text())[:200]}")
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            finally:
                self.in_flight[url] -= 1
                self.latencies.append(time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--mode", choices=["file", "restart"], default="file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-rotation-"))
    common = {
        "LORE_CONFIG_DIR": str(work),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
        "LORE__MEM__MEMORYVG__EMBEDDER__PROVIDER": "hashing",
        # Probes every second: a replica that restarts is left out before many requests find it.
        "LORE__GATEWAY__HEALTH_INTERVAL": "1",
    }
    replicas = []
    for n in range(2):
        port = free_port()
        env = common | {
            "LORE__MEM__SERVER__PORT": str(port),
            "LORE__MEM__SERVER__DATA_DIR": str(work / f"mem-{n}"),
        }
        replicas.append(Node(f"mem-{n}", "lore_mem", port, env, work / f"mem-{n}.log"))
    urls = json.dumps([r.url for r in replicas])
    gateways = []
    for n in range(2):
        port = free_port()
        env = common | {"LORE__GATEWAY__PORT": str(port), "LORE__GATEWAY__MEM_URLS": urls}
        gateways.append(
            Node(f"gateway-{n}", "lore_gateway", port, env, work / f"gateway-{n}.log", health="/")
        )
    load = Load([g.url for g in gateways])
    steps: list[str] = []
    try:
        from_file = args.mode == "file"
        await asyncio.gather(*(r.start(OLD, from_file) for r in replicas))
        await asyncio.gather(*(g.start(OLD, from_file) for g in gateways))
        load.active = list(load.gateways)

        async def roll_replica(node: Node, token: str) -> None:
            # The gateways move a request off a replica that refuses connections; a stopping replica
            # finishes the requests it has.
            await node.stop()
            await node.start(token)
            await asyncio.sleep(1.5)  # the gateways' next probe finds it up
            steps.append(f"{node.name} -> {token}")

        async def roll_gateway(node: Node, token: str) -> None:
            await load.drain(node.url)
            await node.stop()
            await node.start(token)
            load.active.append(node.url)
            steps.append(f"{node.name} -> {token}")

        async def rewrite(node: Node, token: str) -> None:
            node.token_file.write_text(token)
            await asyncio.sleep(2.5)  # each process reads its file again within a second
            steps.append(f"{node.name} -> {token}")

        async def rotate_files() -> None:
            await asyncio.sleep(2)
            for step, nodes in (
                (f"{OLD},{NEW}", replicas),
                (f"{NEW},{OLD}", gateways),
                (NEW, replicas + gateways),
            ):
                for node in nodes:
                    await rewrite(node, step)

        async def rotate() -> None:
            if from_file:
                await rotate_files()
                return
            await asyncio.sleep(2)
            for replica in replicas:
                await roll_replica(replica, f"{OLD},{NEW}")
            for gateway in gateways:
                await roll_gateway(gateway, f"{NEW},{OLD}")
            for replica in replicas:
                await roll_replica(replica, NEW)
            for gateway in gateways:
                await roll_gateway(gateway, NEW)

        stop = asyncio.Event()
        started = time.monotonic()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            workers = [asyncio.create_task(load.worker(session, n, stop)) for n in range(args.concurrency)]
            await rotate()
            rotation_s = time.monotonic() - started
            await asyncio.sleep(max(0.0, args.seconds - (time.monotonic() - started)))
            stop.set()
            await asyncio.gather(*workers)
            elapsed = time.monotonic() - started
            replica = replicas[0].url + "/api/v1/mem/vg?user_id=bench-0"
            async with session.get(replica, headers={"x-lore-internal-token": OLD}) as response:
                old_refused = response.status == 401
            async with session.get(replica, headers={"x-lore-internal-token": NEW}) as response:
                new_answered = response.status == 200
    finally:
        for node in [*gateways, *replicas]:
            await node.stop()
    for step in steps:
        print(f"rolled {step}")
    for failure in load.failures[:10]:
        print(f"failed: {failure}")
    load.latencies.sort()
    figures = {
        "seconds": round(elapsed, 1),
        "rotation_seconds": round(rotation_s, 1),
        "requests": load.ok + len(load.failures),
        "failed": len(load.failures),
        # Refused for the credential (what a rotation could cause), apart from restarts' own errors.
        "failed_credential": sum(f.startswith(("401", "403")) for f in load.failures),
        "rps": round((load.ok + len(load.failures)) / elapsed, 1),
        "p99_ms": round(load.latencies[int(len(load.latencies) * 0.99) - 1] * 1000, 1),
        "old_token_refused_after": old_refused,
        "new_token_answered_after": new_answered,
        "mode": args.mode,
        "goal_failed": 0,
    }
    print(
        f"{figures['requests']} requests in {figures['seconds']} s during a {figures['rotation_seconds']} s "
        f"rotation: {figures['failed']} failed (goal 0)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
