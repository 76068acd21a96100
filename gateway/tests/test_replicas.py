"""The gateway in front of two replicas of a service: balanced by requests in flight, a dead replica
left out without a failed request, a request moved to another replica only when it cannot run twice."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from lore_common.testing.processes import ServerProcess, free_port

HERE = Path(__file__).parent


def start_sink(name: str, port: int, log: Path) -> ServerProcess:
    sink = ServerProcess(
        [sys.executable, "-m", "granian", "--interface", "asgi", "--port", str(port), "sink_app:app"],
        env={"PYTHONPATH": str(HERE), "SINK_NAME": name},
        log_path=log,
    )
    sink.wait_healthy(f"http://127.0.0.1:{port}/health")
    return sink


@dataclass
class Pair:
    url: str
    ports: dict[str, int]
    tmp: Path
    sinks: dict[str, ServerProcess] = field(default_factory=dict)

    def restart(self, name: str) -> None:
        self.sinks[name].stop()
        self.sinks[name] = start_sink(name, self.ports[name], self.tmp / f"{name}-again.log")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    chosen: set[int] = set()
    while len(chosen) < 3:  # free_port may hand out the same port twice before anything binds it
        chosen.add(free_port())
    port_a, port_b, gateway_port = sorted(chosen)
    ports = {"a": port_a, "b": port_b}
    running = Pair(f"http://127.0.0.1:{gateway_port}", ports, tmp_path)
    gateway: ServerProcess | None = None
    try:
        for name, port in ports.items():
            running.sinks[name] = start_sink(name, port, tmp_path / f"{name}.log")
        gateway = ServerProcess(
            [sys.executable, "-m", "lore_gateway"],
            env={
                "LORE_CONFIG_DIR": str(tmp_path),
                "LORE__GATEWAY__PORT": str(gateway_port),
                "LORE__GATEWAY__DOCDB_URLS": f'["http://127.0.0.1:{ports["a"]}", "http://127.0.0.1:{ports["b"]}"]',
                # gen and mem: one replica each (the sink a), so that /health speaks of docdb alone.
                "LORE__GATEWAY__GEN_URL": f"http://127.0.0.1:{ports['a']}",
                "LORE__GATEWAY__MEM_URL": f"http://127.0.0.1:{ports['a']}",
                "LORE__GATEWAY__HEALTH_INTERVAL": "0.2",
                "LORE__GATEWAY__REPLICA_RETRY_AFTER": "0.2",
            },
            log_path=tmp_path / "gateway.log",
        )
        gateway.wait_healthy(f"{running.url}/")
        yield running
    finally:
        if gateway is not None:
            gateway.stop()
        for sink in running.sinks.values():
            sink.stop()


def names(url: str, count: int) -> list[str]:
    with httpx.Client(base_url=url, timeout=10) as client:
        return [client.get("/api/v1/docdb/whoami").json()["name"] for _ in range(count)]


async def concurrent_names(url: str, count: int, wait: float) -> list[str]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        replies = await asyncio.gather(
            *(client.get("/api/v1/docdb/whoami", params={"wait": wait}) for _ in range(count))
        )
    return [r.json()["name"] for r in replies]


def test_requests_go_to_the_replica_with_the_fewest_in_flight(pair: Pair) -> None:
    assert set(names(pair.url, 10)) == {"a", "b"}
    for _ in range(3):
        # Two slow requests at once: the second goes to the replica that is not busy with the first.
        assert sorted(asyncio.run(concurrent_names(pair.url, 2, 0.5))) == ["a", "b"]
    # Health lists each replica.
    health = httpx.get(f"{pair.url}/health", timeout=10).json()["services"]["docdb"]
    assert health["status"] == "up" and [r["status"] for r in health["replicas"]] == ["up", "up"]


def test_a_dead_replica_costs_no_request_and_a_returning_one_gets_traffic_again(pair: Pair) -> None:
    pair.sinks["b"].stop()
    # Right away, before any health probe: a refused connection moves the request (even a POST,
    # which never reached b) to a.
    assert names(pair.url, 10) == ["a"] * 10
    posted = httpx.post(f"{pair.url}/api/v1/docdb/sink", content=b"x" * 1000, timeout=10)
    assert posted.status_code == 200 and posted.json()["size"] == 1000
    health = httpx.get(f"{pair.url}/health", timeout=10)
    assert health.status_code == 200  # the module is up while one replica is
    replicas = health.json()["services"]["docdb"]["replicas"]
    assert [r["status"] for r in replicas] == ["up", "down"]

    pair.restart("b")
    deadline = time.monotonic() + 10
    while "b" not in names(pair.url, 4):
        assert time.monotonic() < deadline, "the returning replica got no traffic"
        time.sleep(0.2)


def test_a_post_that_reached_a_replica_is_never_sent_to_another(pair: Pair) -> None:
    response = httpx.post(f"{pair.url}/api/v1/docdb/die", timeout=10)
    assert response.status_code == 502 and "docdb" in response.json()["message"]
    # Exactly one replica died; the survivor never saw the request.
    deadline = time.monotonic() + 5
    while all(s.process.poll() is None for s in pair.sinks.values()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    survivors = [name for name, s in pair.sinks.items() if s.process.poll() is None]
    assert len(survivors) == 1
    port = pair.ports[survivors[0]]
    assert "die" not in httpx.get(f"http://127.0.0.1:{port}/api/v1/docdb/seen", timeout=5).json()["seen"]
    # Later requests avoid the dead one.
    assert set(names(pair.url, 6)) == set(survivors)
