"""schemathesis against the gateway's merged OpenAPI document (each service's own document is fuzzed by
test_fuzz_docdb.py, test_fuzz_gen.py and test_fuzz_mem.py, which pytest-xdist runs beside this one): for
every operation, generated and mutated inputs (a bounded number per operation) must never get a 5xx, and
every response must match the schema documented for its status. Then path traversal and oversize bodies
through the gateway."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore_common.testing.fuzzing import schemathesis, services

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with services("gateway", tmp_path_factory.mktemp("fuzz"), ROOT / "config") as urls:
        yield urls


@pytest.mark.timeout(600)
def test_no_input_gets_a_server_error_and_every_response_matches_its_schema(
    stack: dict[str, str], tmp_path: Path
) -> None:
    result = schemathesis(stack["gateway"], 3, tmp_path)
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
    message = response.json().get("message") or response.json().get("detail") or ""
    assert "10 MB" in message and "upload/init" in message, message  # the limit, and the way round it
