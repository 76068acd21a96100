"""schemathesis against a service's OpenAPI document, on services started for it (tests/e2e/test_fuzz*.py).

Each service's fuzz run is its own test module, so pytest-xdist runs the four side by side; each module
starts only the services it calls (gen calls docdb; the gateway routes to all three)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lore_common.testing.processes import ServerProcess, free_port, python_module

NEEDS = {
    "docdb": ("docdb",),
    "mem": ("mem",),
    "gen": ("docdb", "gen"),
    "gateway": ("docdb", "gen", "mem", "gateway"),
}


@contextmanager
def services(target: str, work: Path, config_dir: Path) -> Iterator[dict[str, str]]:
    """The services `target` needs, on the embedded stores in `work`; yields each one's base URL."""
    work.mkdir(parents=True, exist_ok=True)
    ports = {name: free_port() for name in ("docdb", "gen", "mem", "gateway")}
    env = {
        "LORE_CONFIG_DIR": str(config_dir),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
        "LORE__GEN__DOCDB_URL": f"http://127.0.0.1:{ports['docdb']}",
        "LORE__GATEWAY__PORT": str(ports["gateway"]),
    }
    for name in ("docdb", "gen", "mem"):
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    processes = []
    try:
        for name in NEEDS[target]:
            process = ServerProcess(python_module(f"lore_{name}"), env=env, log_path=work / f"{name}.log")
            processes.append(process)
            process.wait_healthy(f"http://127.0.0.1:{ports[name]}/health", timeout=120)
        yield {name: f"http://127.0.0.1:{ports[name]}" for name in NEEDS[target]}
    finally:
        for process in reversed(processes):
            process.stop()


def schemathesis(url: str, examples: int, report_dir: Path) -> subprocess.CompletedProcess[str]:
    """`st run` over every operation of the document at `url`: no 5xx for any input, every response as
    documented for its status; deterministic, `examples` inputs per operation."""
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st, "schemathesis is a dev dependency"
    return subprocess.run(  # noqa: S603 - our own tool on loopback
        [
            st, "run", f"{url}/schema/openapi.json",
            "--checks", "not_a_server_error,response_schema_conformance",
            "--max-examples", str(examples),
            "--generation-deterministic",
            "--request-timeout", "60",
            "--max-failures", "10",
            "--report-dir", str(report_dir),
        ],
        capture_output=True,
        text=True,
        timeout=540,
    )  # fmt: skip
