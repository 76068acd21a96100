"""schemathesis against each service's OpenAPI document and the gateway's merged one: for every
operation, generated and mutated inputs (a bounded number per operation) must never get a 5xx, and
every response must match the schema documented for its status."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore_common.testing.processes import ServerProcess, free_port, python_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {"docdb": 12, "gen": 25, "mem": 20, "gateway": 3}


NEEDS = {
    "docdb": ("docdb",),
    "mem": ("mem",),
    "gen": ("docdb", "gen"),
    "gateway": ("docdb", "gen", "mem", "gateway"),
}


class Stack:
    """The services of one worker's share of this module, each started on first use with what it needs
    (gen calls docdb; the gateway routes to all three), so the fuzz runs spread over workers (each
    target is its own `xdist_group`) and none starts a service it never calls."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.ports = {name: free_port() for name in ("docdb", "gen", "mem", "gateway")}
        self.env = {
            "LORE_CONFIG_DIR": str(ROOT / "config"),
            "LORE__LOGGING__LEVEL": "WARNING",
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
            "LORE__GEN__DOCDB_URL": f"http://127.0.0.1:{self.ports['docdb']}",
            "LORE__GATEWAY__PORT": str(self.ports["gateway"]),
        }
        for name in ("docdb", "gen", "mem"):
            self.env[f"LORE__{name.upper()}__SERVER__PORT"] = str(self.ports[name])
            self.env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / name)
            self.env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{self.ports[name]}"
        self.processes: dict[str, ServerProcess] = {}

    def __getitem__(self, target: str) -> str:
        for name in NEEDS[target]:
            if name not in self.processes:
                process = ServerProcess(
                    python_module(f"lore_{name}"), env=self.env, log_path=self.work / f"{name}.log"
                )
                self.processes[name] = process
                process.wait_healthy(f"http://127.0.0.1:{self.ports[name]}/health", timeout=120)
        return f"http://127.0.0.1:{self.ports[target]}"

    def stop(self) -> None:
        for process in reversed(self.processes.values()):
            process.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    services = Stack(tmp_path_factory.mktemp("fuzz"))
    try:
        yield services
    finally:
        services.stop()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "target",
    [
        pytest.param(name, marks=pytest.mark.xdist_group(f"fuzz-{name}"))
        for name in ("gen", "mem", "docdb", "gateway")
    ],
)
def test_no_input_gets_a_server_error_and_every_response_matches_its_schema(
    stack: Stack, target: str, tmp_path: Path
) -> None:
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st, "schemathesis is a dev dependency"
    result = subprocess.run(
        [
            st, "run", f"{stack[target]}/schema/openapi.json",
            "--checks", "not_a_server_error,response_schema_conformance",
            "--max-examples", str(EXAMPLES[target]),
            "--generation-deterministic",
            "--request-timeout", "60",
            "--max-failures", "10",
            "--report-dir", str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=540,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-12000:] + result.stderr[-2000:]


TRAVERSALS = ["..%2F..%2Fetc%2Fpasswd", "..", "%2e%2e%2f%2e%2e%2fetc", "a%00b", "..%5C..%5Cwindows"]
PATHS = [
    "/api/v1/docdb/files/raw-files/datasets/{x}/files",
    "/api/v1/docdb/files/raw-files/datasets/demo/files/{x}",
    "/api/v1/docdb/files/knowledge-bases/{x}",
    "/api/v1/docdb/files/processing/tasks/{x}",
    "/api/v1/docdb/config/{x}",
    "/api/v1/gen/pipeline/status/{x}",
    "/api/v1/gen/tag-tree/status/{x}",
    "/api/v1/mem/vg/{x}",
    "/api/v1/mem/vg/{x}/history",
    "/api/v1/mem/kb/insert/{x}",
]


@pytest.mark.xdist_group("fuzz-gateway")
@pytest.mark.parametrize("template", PATHS)
def test_path_traversal_in_path_parameters_is_refused(stack: Stack, template: str) -> None:
    for attempt in TRAVERSALS:
        for method in ("GET", "DELETE"):
            response = httpx.request(method, stack["gateway"] + template.replace("{x}", attempt), timeout=30)
            assert 400 <= response.status_code < 500 or response.status_code == 405, (attempt, response.text)
            assert "root:" not in response.text


@pytest.mark.xdist_group("fuzz-gateway")
@pytest.mark.parametrize(
    "path",
    ["/api/v1/docdb/chat", "/api/v1/gen/pipeline/submit", "/api/v1/mem/vg/add", "/api/v1/mem/kb/query"],
)
def test_oversize_json_bodies_are_413(stack: Stack, path: str) -> None:
    body = b'{"query": "' + b"x" * (11 * 1024 * 1024) + b'"}'
    response = httpx.post(
        stack["gateway"] + path, content=body, headers={"content-type": "application/json"}, timeout=60
    )
    assert response.status_code == 413, response.text[:300]
