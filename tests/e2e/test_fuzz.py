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


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    work = tmp_path_factory.mktemp("fuzz")
    ports = {name: free_port() for name in ("docdb", "gen", "mem", "gateway")}
    env = {
        "LORE_CONFIG_DIR": str(ROOT / "config"),
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
        for name in ("docdb", "gen", "mem", "gateway"):
            process = ServerProcess(python_module(f"lore_{name}"), env=env, log_path=work / f"{name}.log")
            processes.append(process)
            process.wait_healthy(f"http://127.0.0.1:{ports[name]}/health", timeout=120)
        yield {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    finally:
        for process in reversed(processes):
            process.stop()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("target", ["gen", "mem", "docdb", "gateway"])
def test_no_input_gets_a_server_error_and_every_response_matches_its_schema(
    stack: dict[str, str], target: str, tmp_path: Path
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


@pytest.mark.parametrize("template", PATHS)
def test_path_traversal_in_path_parameters_is_refused(stack: dict[str, str], template: str) -> None:
    for attempt in TRAVERSALS:
        for method in ("GET", "DELETE"):
            response = httpx.request(method, stack["gateway"] + template.replace("{x}", attempt), timeout=30)
            assert 400 <= response.status_code < 500 or response.status_code == 405, (attempt, response.text)
            assert "root:" not in response.text


@pytest.mark.parametrize(
    "path",
    ["/api/v1/docdb/chat", "/api/v1/gen/pipeline/submit", "/api/v1/mem/vg/add", "/api/v1/mem/kb/query"],
)
def test_oversize_json_bodies_are_413(stack: dict[str, str], path: str) -> None:
    body = b'{"query": "' + b"x" * (11 * 1024 * 1024) + b'"}'
    response = httpx.post(
        stack["gateway"] + path, content=body, headers={"content-type": "application/json"}, timeout=60
    )
    assert response.status_code == 413, response.text[:300]
