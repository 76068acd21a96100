"""`lore-up`: run gateway, docdb, gen and mem together in the foreground until Ctrl-C.

Each service is its own granian process (as in production); this launcher starts them, waits for
their health, restarts one that dies (after 1 s, doubling up to 30 s while it keeps dying young), and
on Ctrl-C/SIGTERM stops them all, process group by process group, so nothing is left behind. A
service that cannot start at all stops the launch.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lore_core.settings import Settings, load_settings

STOP_GRACE_S = 15.0
START_TIMEOUT_S = 240.0
RESTART_FIRST_S = 1.0
RESTART_MAX_S = 30.0
# A child that ran this long before dying is restarted after the first delay again.
STABLE_AFTER_S = 60.0


@dataclass
class Child:
    name: str
    module: str
    health_url: str
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_delay: float = RESTART_FIRST_S
    restart_at: float | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            [sys.executable, "-m", self.module], start_new_session=True, env={**os.environ, **self.env}
        )
        self.started_at = time.monotonic()
        self.restart_at = None

    def watch(self) -> None:
        """Schedule a restart of a child that died, and carry it out when it is due."""
        now = time.monotonic()
        if self.restart_at is not None:
            if now >= self.restart_at:
                print(f"lore: restarting {self.name}", file=sys.stderr, flush=True)
                self.start()
            return
        if self.process is None or self.process.poll() is None:
            return
        if now - self.started_at >= STABLE_AFTER_S:
            self.restart_delay = RESTART_FIRST_S
        print(
            f"lore: {self.name} exited with code {self.process.returncode}; "
            f"restarting in {self.restart_delay:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        _kill_group(self)  # whatever it left behind (workers, an embedded store) goes first
        self.restart_at = now + self.restart_delay
        self.restart_delay = min(RESTART_MAX_S, self.restart_delay * 2)


def _kill_group(child: Child) -> None:
    if child.process is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own loopback URL
            return bool(response.status == 200)
    except Exception:
        return False


def _stop(children: list[Child]) -> None:
    # The gateway first, so no new requests arrive; then the services, each given time to close stores.
    for child in reversed(children):
        if child.process and child.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for child in reversed(children):
        if child.process is None:
            continue
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.wait(max(0.1, deadline - time.monotonic()))
        # Whatever is left in the group (workers, embedded store servers) goes too.
        _kill_group(child)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.wait(2)


# Replica n (from 0) of a service listens on its port + REPLICA_PORT_STEP × n: docdb 8101, 8201, …
REPLICA_PORT_STEP = 100
REPLICATED = ("docdb", "gen", "mem")


def shared_stores_missing(settings: Settings) -> list[str]:
    """What keeps the services from running as several processes on one machine."""
    docdb, gen, mem = settings.docdb, settings.gen, settings.mem
    missing = []
    if not docdb.database.url:
        missing.append("docdb.database.url (PostgreSQL)")
    if docdb.vector_store.provider == "qdrant" and not docdb.vector_store.url:
        missing.append("docdb.vector_store (pgvector or a Qdrant server; Qdrant local allows one process)")
    if docdb.graph_store.enabled and not docdb.graph_store.url:
        missing.append("docdb.graph_store.url (a FalkorDB server)")
    if not gen.database.url:
        missing.append("gen.database.url (PostgreSQL)")
    if not mem.database.url:
        missing.append("mem.database.url (PostgreSQL)")
    if mem.vector_store.provider == "qdrant" and not mem.vector_store.url:
        missing.append("mem.vector_store (pgvector or a Qdrant server; Qdrant local allows one process)")
    vg_graph = mem.memoryvg.graph_store
    if vg_graph.enabled and not (vg_graph.url or mem.graph_store.url):
        missing.append("mem.graph_store.url (a FalkorDB server, for the vg graph)")
    return missing


def own_disk(settings: Settings, service: str) -> bool:
    """Whether replicas of `service` can each have their own data dir (as pods without a shared
    volume): gen and mem keep nothing there that another replica reads, nor does docdb once its raw
    files are in object storage; without it docdb's replicas share one folder (a ReadWriteMany volume)."""
    return service != "docdb" or bool(settings.docdb.object_storage.bucket)


def plan(settings: Settings, replicas: int) -> list[Child]:
    """The processes to run: `replicas` of each service on its shared stores, each with its own data
    dir where it can (`own_disk`), and the gateway, which balances across the replicas."""
    g = settings.gateway
    shared: dict[str, str] = {}
    if not settings.security.internal_tokens():
        # Each start has its own internal credential, shared by these children only (in their
        # environment, never this process's): a process on this machine that is not one of them
        # cannot call a service past the gateway's keys.
        shared["LORE__SECURITY__INTERNAL_TOKEN"] = secrets.token_urlsafe(32)
    children: list[Child] = []
    urls: dict[str, list[str]] = {}
    for name in ("docdb", "gen", "mem"):
        server = getattr(settings, name).server
        count = replicas if name in REPLICATED else 1
        for n in range(count):
            port = server.port + REPLICA_PORT_STEP * n
            url = f"http://{server.host}:{port}"
            urls.setdefault(name, []).append(url)
            env = {f"LORE__{name.upper()}__SERVER__PORT": str(port)} if n else {}
            if n and own_disk(settings, name):
                env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = f"{server.data_dir}-{n + 1}"
            label = name if count == 1 else f"{name}-{n + 1}"
            children.append(Child(label, f"lore_{name}", f"{url}/health", shared | env))
    # The gateway finds the services where this launcher starts them.
    gateway_env = {f"LORE__GATEWAY__{name.upper()}_URL": found[0] for name, found in urls.items()}
    if replicas > 1:
        gateway_env |= {f"LORE__GATEWAY__{name.upper()}_URLS": json.dumps(urls[name]) for name in REPLICATED}
    children.append(
        Child("gateway", "lore_gateway", f"http://{g.host}:{g.port}/health", shared | gateway_env)
    )
    # gen talks to the docdb this launcher starts: through the gateway when there are several (it
    # balances them; unless API keys guard it), else straight to the one.
    docdb_url = urls["docdb"][0]
    if replicas > 1 and not g.api_keys:
        docdb_url = f"http://{g.host}:{g.port}"
    os.environ.setdefault("LORE__GEN__DOCDB_URL", docdb_url)
    return children


def each_service(*command: str) -> int:
    """Run a command of each service (`python -m lore_<service> …`), in turn; the first failure stops."""
    for name in ("docdb", "gen", "mem"):
        done = subprocess.run([sys.executable, "-m", f"lore_{name}", *command], check=False)  # noqa: S603 - fixed argv
        if done.returncode != 0:
            print(f"lore: {name} {command[0]} failed (exit code {done.returncode})", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "command",
        nargs="?",
        choices=["up", "migrate", "move", "backup", "restore"],
        default="up",
        help="up (default): start everything; migrate: bring each service's relational store to the "
        "latest schema, then exit (start-up does it too); move --to DIR: copy every service's data "
        "into the (empty) stores DIR/lore.yaml names; backup PATH: copy the embedded stores to a new "
        "folder while the stack serves; restore PATH: copy a backup into empty data folders",
    )
    parser.add_argument("path", nargs="?", default=None, help="backup/restore: the backup's folder")
    parser.add_argument("--to", default=None, help="move: folder holding the target's lore.yaml")
    parser.add_argument("--config-dir", default=None, help="folder holding lore.yaml and pipeline.yaml")
    parser.add_argument(
        "--replicas", type=int, default=1, help="processes of each service (needs shared stores)"
    )
    args = parser.parse_args(argv)
    if args.config_dir:
        os.environ["LORE_CONFIG_DIR"] = args.config_dir
    if args.command == "migrate":
        return each_service("migrate")
    if args.command in ("backup", "restore"):
        if not args.path:
            parser.error(f"{args.command} needs PATH (the backup's folder)")
        # In lore-common's process: the gateway itself carries no store client.
        argv = [sys.executable, "-m", "lore_common.backup", args.command, str(Path(args.path).resolve())]
        return subprocess.run(argv, check=False).returncode  # noqa: S603 - our own module
    if args.command == "move":
        if not args.to:
            parser.error("move needs --to DIR (the folder of the target's lore.yaml)")
        return each_service("move", "--to", str(Path(args.to).resolve()))
    settings = load_settings()
    g = settings.gateway
    if args.replicas < 1:
        parser.error("--replicas takes 1 or more")
    missing = shared_stores_missing(settings) if args.replicas > 1 else []
    if missing:
        print(
            "lore: --replicas needs stores that several processes share; not set: "
            + "; ".join(missing)
            + ". `just up-postgres --replicas N` starts them.",
            file=sys.stderr,
        )
        return 2
    children = plan(settings, args.replicas)
    stopping = False

    def on_signal(signum: int, _: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    exit_code = 0
    try:
        for child in children:
            child.start()
        names = ", ".join(child.name for child in children)
        print(f"lore: starting {names} …", file=sys.stderr, flush=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = {child.name for child in children}
        while pending and not stopping and time.monotonic() < deadline:
            for child in children:
                if child.process and child.process.poll() is not None:
                    raise SystemExit(f"lore: {child.name} exited with code {child.process.returncode}")
                if child.name in pending and _healthy(child.health_url):
                    pending.discard(child.name)
            time.sleep(0.25)
        if pending and not stopping:
            raise SystemExit(f"lore: not healthy after {START_TIMEOUT_S:.0f} s: {', '.join(sorted(pending))}")
        if not stopping:
            print(
                f"lore: up at http://{g.host}:{g.port} (Ctrl-C stops everything)", file=sys.stderr, flush=True
            )
        while not stopping:
            for child in children:
                child.watch()
            time.sleep(0.25)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        exit_code = 1
    finally:
        print("lore: stopping …", file=sys.stderr, flush=True)
        _stop(children)
        print("lore: stopped", file=sys.stderr, flush=True)
    return exit_code


if __name__ == "__main__":
    raise SystemExit(main())
