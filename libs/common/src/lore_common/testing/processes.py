"""Start real server processes on free loopback ports, wait for health, stop them without leftovers."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# Under pytest-xdist each worker takes ports from a range of its own, below the kernel's ephemeral
# ports (32768 and up): a port picked by `bind(0)` is free only until someone binds it, and with eight
# workers starting stacks at once another worker's pick, or any outgoing connection, took it first.
PORTS_PER_WORKER = 1000
FIRST_WORKER_PORT = 20000
_picked = itertools.count()


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not worker[2:].isdigit() or int(worker[2:]) >= 12:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
            return port
    first = FIRST_WORKER_PORT + int(worker[2:]) * PORTS_PER_WORKER
    usable = PORTS_PER_WORKER - REPLICA_PORT_STEP  # room for a second replica's port + 100
    for _ in range(usable):
        candidate = first + next(_picked) % usable
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return candidate
    raise RuntimeError(f"no free port in {first}-{first + usable} for xdist worker {worker}")


def wait_http(url: str, timeout: float = 60.0, process: subprocess.Popen[bytes] | None = None) -> None:
    """Poll `url` until it answers 200, the process dies, or `timeout` passes."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except Exception as exc:
            last = str(exc)
        time.sleep(0.1)
    raise TimeoutError(f"{url} not healthy after {timeout} s: {last}")


class ServerProcess:
    """A child process in its own process group; `stop()` ends the whole group."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        log_path: Path | None = None,
    ) -> None:
        merged = dict(os.environ)
        merged.update(env or {})
        self.log_path = log_path
        self._log: IO[bytes] | None = log_path.open("ab") if log_path else None
        self.process = subprocess.Popen(  # noqa: S603 - argv built by the caller's code
            list(argv),
            env=merged,
            cwd=cwd,
            stdout=self._log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_healthy(self, url: str, timeout: float = 60.0) -> None:
        try:
            wait_http(url, timeout, self.process)
        except Exception as exc:
            raise RuntimeError(f"{exc}\n--- log ---\n{self.log_tail()}") from exc

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def tree_pids(self) -> list[int]:
        import psutil

        try:
            parent = psutil.Process(self.pid)
            return [self.pid, *(child.pid for child in parent.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def _read_tree(self, read: Callable[[Any], float]) -> list[float]:
        """`read(psutil.Process)` for the process and each living descendant."""
        import psutil

        values = []
        for pid in self.tree_pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                values.append(read(psutil.Process(pid)))
        return values

    def rss_bytes(self) -> int:
        """Resident memory of the process and all its descendants."""
        return int(sum(self._read_tree(lambda p: p.memory_info().rss)))

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by the process and its living descendants."""
        return sum(self._read_tree(lambda p: p.cpu_times().user + p.cpu_times().system))

    def largest_rss_bytes(self) -> int:
        """Resident memory of the biggest single process in the tree (the service worker, usually)."""
        return int(max(self._read_tree(lambda p: p.memory_info().rss), default=0))

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def stop(self, grace: float = 10.0) -> int | None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        if self._log:
            self._log.close()
            self._log = None
        return self.process.returncode


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def start_fake_llm(work: Path, *args: str) -> tuple[ServerProcess, str]:
    """The fake model server on a free port; returns it and its OpenAI base URL (…/v1)."""
    port = free_port()
    server = ServerProcess(
        [sys.executable, "-m", "lore_common.testing.fake_llm", "--port", str(port), *args],
        log_path=work / "llm.log",
    )
    server.wait_healthy(f"http://127.0.0.1:{port}/health")
    return server, f"http://127.0.0.1:{port}/v1"


def start_service(
    service: str,
    work: Path,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    timeout: float = 120,
) -> tuple[ServerProcess, str]:
    """A Lore service (`docdb`, `gen`, `mem`) as a real granian process on loopback, its data under `work`."""
    port = port or free_port()
    prefix = f"LORE__{service.upper()}__SERVER__"
    full = {
        "LORE_CONFIG_DIR": str(work / "config"),
        "LORE__LOGGING__LEVEL": "WARNING",
        f"{prefix}PORT": str(port),
        f"{prefix}DATA_DIR": str(work / service),
        **(env or {}),
    }
    process = ServerProcess(python_module(f"lore_{service}"), env=full, log_path=work / f"{service}.log")
    process.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=timeout)
    return process, f"http://127.0.0.1:{port}"


HASHING_EMBEDDERS = {
    "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
    "LORE__GEN__EMBEDDING_API__PROVIDER": "hashing",
    "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
    "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
}


@dataclass
class LoreUp:
    """`lore-up` (gateway, docdb, gen, mem) running on loopback; `env` is what started it."""

    process: ServerProcess
    url: str
    env: dict[str, str]


def start_lore_up(
    data: Path, config_dir: Path, env: Mapping[str, str] | None = None, timeout: float = 180
) -> LoreUp:
    """The whole stack on embedded stores under `data`, every port free, logs in `data/lore.log`; the
    hashing embedder unless `env` names another. Stop it with `.process.stop()`."""
    port = free_port()
    full = {
        "LORE_CONFIG_DIR": str(config_dir),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__GATEWAY__PORT": str(port),
        # Known (in `.env`), so a test may start a second gateway in front of the same services.
        "LORE__SECURITY__INTERNAL_TOKEN": TEST_INTERNAL_TOKEN,
        **HASHING_EMBEDDERS,
    }
    for name in ("docdb", "gen", "mem"):
        service = free_port()
        full[f"LORE__{name.upper()}__SERVER__PORT"] = str(service)
        full[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(data / name)
        full[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{service}"
    full["LORE__GEN__DOCDB_URL"] = full["LORE__GATEWAY__DOCDB_URL"]
    full.update(env or {})
    data.mkdir(parents=True, exist_ok=True)
    process = ServerProcess(
        python_module("lore_gateway.launch"), env=full, cwd=data, log_path=data / "lore.log"
    )
    url = f"http://127.0.0.1:{port}"
    try:
        process.wait_healthy(f"{url}/health", timeout=timeout)
    except BaseException:
        process.stop()
        raise
    return LoreUp(process, url, full)


# The internal credential of the stacks these helpers start (lore-up would make a random one).
TEST_INTERNAL_TOKEN = "lore-test-internal-token"  # noqa: S105 - a test stack on loopback

REPLICA_PORT_STEP = 100  # lore-up puts replica n of a service on its port + 100 × n


def free_port_pair() -> int:
    """A port p such that p and p + REPLICA_PORT_STEP are both free (a service and its second replica)."""
    while True:
        port = free_port()
        if port + REPLICA_PORT_STEP >= 65536:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + REPLICA_PORT_STEP))
            except OSError:
                continue
        return port


@dataclass
class ServersStack:
    """`lore-servers` (the stack on PostgreSQL + pgvector, one FalkorDB server and S3) on free ports."""

    process: ServerProcess
    url: str
    ports: dict[str, int]

    def replica_urls(self, service: str, count: int) -> list[str]:
        return [f"http://127.0.0.1:{self.ports[service] + REPLICA_PORT_STEP * n}" for n in range(count)]


def pg_rows(url: str, query: str) -> list[Any]:
    """Run one query on PostgreSQL (any URL form Lore accepts) and return its rows."""
    import asyncio

    import asyncpg

    from lore_common.stores.pgvector import plain_dsn

    async def run() -> list[Any]:
        connection = await asyncpg.connect(plain_dsn(url))
        try:
            return list(await connection.fetch(query))
        finally:
            await connection.close()

    return asyncio.run(run())


def drop_stack_databases(admin_url: str, prefix: str) -> None:
    """Remove the databases `start_servers_stack` made (`<prefix>_docdb`, `_gen`, `_mem`)."""
    for service in ("docdb", "gen", "mem"):
        pg_rows(admin_url, f'DROP DATABASE IF EXISTS "{prefix}_{service}" WITH (FORCE)')


def start_servers_stack(
    work: Path,
    config_dir: Path,
    admin_url: str,
    prefix: str,
    *,
    s3_endpoint: str | None = None,
    replicas: int = 1,
    env: Mapping[str, str] | None = None,
    timeout: float = 240,
) -> ServersStack:
    """Start `lore-servers` with its data under `work`, databases `<prefix>_*` on `admin_url`, and wait
    until the gateway and every replica answer `/health`."""
    ports = {
        "gateway": free_port(),
        "docdb": free_port_pair(),
        "gen": free_port_pair(),
        "mem": free_port_pair(),
    }
    full = {
        "LORE_CONFIG_DIR": str(config_dir),
        "LORE__LOGGING__FORMAT": "json",
        "LORE__GATEWAY__PORT": str(ports["gateway"]),
    }
    for name in ("docdb", "gen", "mem"):
        full[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        full[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / "data" / name)
    command = python_module(
        "lore_common.servers",
        "--postgres-url", admin_url,
        "--database-prefix", prefix,
        "--data-dir", str(work / "servers"),
        "--replicas", str(replicas),
        *(["--s3-endpoint", s3_endpoint] if s3_endpoint else []),
    )  # fmt: skip
    process = ServerProcess(command, env={**full, **(env or {})}, cwd=work, log_path=work / "lore.log")
    stack = ServersStack(process, f"http://127.0.0.1:{ports['gateway']}", ports)
    try:
        process.wait_healthy(f"{stack.url}/health", timeout=timeout)
        # The gateway is up once one replica of each service is; wait for all of them.
        for service in ("docdb", "gen", "mem"):
            for url in stack.replica_urls(service, replicas):
                process.wait_healthy(f"{url}/health", timeout=timeout)
    except BaseException:
        process.stop()
        raise
    return stack


def wait_task(client: Any, task_id: str, timeout: float = 600, poll: float = 0.2) -> dict[str, Any]:
    """Poll a docdb processing task (sync httpx client on docdb or the gateway) until it ends."""
    path = f"/api/v1/docdb/files/processing/tasks/{task_id}"
    return poll_status(client, path, {"completed", "failed", "cancelled"}, timeout, poll)


def poll_status(
    client: Any, path: str, done: set[str], limit: float = 60.0, every: float = 0.05
) -> dict[str, Any]:
    """GET `path` until its `status` is one of `done` or `limit` seconds pass; the last body."""
    deadline = time.monotonic() + limit
    while True:
        body: dict[str, Any] = client.get(path).json()
        if body["status"] in done or time.monotonic() > deadline:
            return body
        time.sleep(every)


def model_env(prefix: str, url: str) -> dict[str, str]:
    """Settings (as environment variables under `prefix`) for an OpenAI-compatible model at `url`."""
    return {
        f"{prefix}__PROVIDER": "openai",
        f"{prefix}__BASE_URL": url,
        f"{prefix}__API_KEY": "fault-test",
        f"{prefix}__MAX_RETRIES": "0",
    }
