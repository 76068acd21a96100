"""Two docdb replicas on one PostgreSQL and one bucket, each with its own disk: they share the raw
files and the parse queue and elect one sweeper."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore_common.testing.processes import ServerProcess, start_service, wait_task

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
DATASETS = [f"part{i:02d}" for i in range(20)]

pytestmark = pytest.mark.postgres


def events(log: Path, event: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    return [x for x in lines if x.get("event") == event]


def replica(work: Path, postgres_url: str, s3_url: str, bucket: str) -> tuple[ServerProcess, str]:
    return start_service(
        "docdb",
        work,
        {
            "LORE__LOGGING__LEVEL": "INFO",
            "LORE__LOGGING__FORMAT": "json",
            "LORE__DOCDB__DATABASE__URL": postgres_url,
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__DOCDB__EMBEDDING_API__DIM": "64",
            "LORE__DOCDB__UPLOAD_SWEEP_INTERVAL": "0.2",
            "LORE__DOCDB__TASK_HEARTBEAT_INTERVAL": "0.2",
            "LORE__PARSE_MAX_WORKERS": "2",
            "LORE__DOCDB__OBJECT_STORAGE__BUCKET": bucket,
            "LORE__DOCDB__OBJECT_STORAGE__ENDPOINT_URL": s3_url,
            "LORE__DOCDB__OBJECT_STORAGE__ACCESS_KEY": "testing",
            "LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY": "testing",
        },
    )


def test_replicas_claim_each_task_once_and_one_of_them_sweeps(
    tmp_path: Path, postgres_url: str, moto_s3: str
) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    (a, url_a), (b, url_b) = (replica(tmp_path / n, postgres_url, moto_s3, bucket) for n in ("a", "b"))
    try:
        text = " ".join(f"Sentence {n} of a long report about harbour number {n % 13}." for n in range(1000))
        # Every file reaches one replica only; both parse them (from object storage).
        for index, name in enumerate(DATASETS):
            with httpx.Client(base_url=(url_a, url_b)[index % 2], timeout=30) as client:
                assert client.post(DS, json={"name": name}).status_code == 200
                files = {"files": (f"{name}.txt", f"{name}: {text}".encode())}
                assert client.post(f"{DS}/{name}/files", files=files).status_code == 200
        with httpx.Client(base_url=url_a, timeout=30) as client:
            assert client.post(KB, json={"name": "shared"}).status_code == 200
            parse = client.post(f"{KB}/shared/parse", json={"datasets": DATASETS}).json()
            task_ids = [t["task_id"] for t in parse["data"]["tasks"]]
            assert len(task_ids) == 20
            for task_id in task_ids:
                assert wait_task(client, task_id, timeout=300)["status"] == "completed"
        claims = {
            name: [e["job_id"] for e in events(p.log_path, "job_claimed")] for name, p in (("a", a), ("b", b))
        }
        counted = Counter(claims["a"] + claims["b"])
        assert set(counted) == set(task_ids) and set(counted.values()) == {1}, counted
        assert claims["a"] and claims["b"], claims  # the queue really was shared

        sweeps = {name: events(p.log_path, "periodic_job_ran") for name, p in (("a", a), ("b", b))}
        sweepers = [name for name, ran in sweeps.items() if ran]
        assert len(sweepers) == 1, {k: len(v) for k, v in sweeps.items()}
        # The sweeper stops; the other replica takes over the sweeps.
        leader, other = (a, b) if sweepers == ["a"] else (b, a)
        leader.stop()
        deadline = time.monotonic() + 20
        while not events(other.log_path, "periodic_job_ran"):
            assert time.monotonic() < deadline, "no replica took over the sweeps"
            time.sleep(0.2)
    finally:
        a.stop()
        b.stop()
