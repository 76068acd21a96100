"""Raw files and chunked uploads in S3 (moto's server mode on loopback) when object storage is set."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from lore_common.stores.objects import MIN_PART_SIZE
from lore_common.testing.asgi import AppClient, running
from lore_common.testing.flows import CURIE, HOPPER
from lore_core.settings import load_settings
from lore_docdb.app import create_app

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"


def s3_env(endpoint: str, bucket: str) -> dict[str, str]:
    return {
        "LORE__DOCDB__OBJECT_STORAGE__BUCKET": bucket,
        "LORE__DOCDB__OBJECT_STORAGE__ENDPOINT_URL": endpoint,
        "LORE__DOCDB__OBJECT_STORAGE__ACCESS_KEY": "testing",
        "LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY": "testing",
    }


def s3(endpoint: str) -> Any:
    """A client of the test's own (the app's client lives on the test client's loop)."""
    import aioboto3  # here: every xdist worker collects this module, few run it

    session = aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    return session.client("s3", endpoint_url=endpoint)


async def keys(endpoint: str, bucket: str) -> list[str]:
    async with s3(endpoint) as client:
        listing = await client.list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listing.get("Contents", []))


async def test_upload_mirrors_to_s3_presigned_url_serves_it_and_delete_cleans_up(
    docdb_factory: Any, moto_s3: str
) -> None:
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    async with docdb_factory(**s3_env(moto_s3, bucket)) as client:
        await client.post(DS, json={"name": "papers"})
        await client.post(DS, json={"name": "other"})
        r = await client.post(f"{DS}/papers/files", files={"files": ("paper.pdf", b"%PDF-1.7 content")})
        assert r.status_code == 200
        await client.post(f"{DS}/other/files", files={"files": ("keep.txt", b"keep")})
        upload = await client.post(
            f"{DS}/papers/upload/init", json={"filename": "big.bin", "total_chunks": 1, "total_size": 3}
        )
        upload_id = upload.json()["upload_id"]
        await client.post(f"{DS}/papers/upload/{upload_id}/chunk?chunk_index=0", content=b"abc")
        assert (await client.post(f"{DS}/papers/upload/{upload_id}/complete")).status_code == 200
        assert await keys(moto_s3, bucket) == ["other/keep.txt", "papers/big.bin", "papers/paper.pdf"]

        async with s3(moto_s3) as presigner:
            url = await presigner.generate_presigned_url(
                "get_object", Params={"Bucket": bucket, "Key": "papers/paper.pdf"}, ExpiresIn=60
            )
        async with httpx.AsyncClient() as http:
            fetched = await http.get(url)
        assert fetched.status_code == 200 and fetched.content == b"%PDF-1.7 content"

        assert (await client.delete(f"{DS}/papers/files/paper.pdf")).status_code == 200
        assert await keys(moto_s3, bucket) == ["other/keep.txt", "papers/big.bin"]
        assert (await client.delete(f"{DS}/papers")).status_code == 200
        assert await keys(moto_s3, bucket) == ["other/keep.txt"]


async def test_s3_failure_removes_the_local_file_and_answers_500(
    docdb_factory: Any, moto_s3: str, tmp_path: Path
) -> None:
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    async with docdb_factory(**s3_env(moto_s3, bucket)) as client:
        await client.post(DS, json={"name": "papers"})
        async with s3(moto_s3) as admin:
            await admin.delete_bucket(Bucket=bucket)  # the store breaks after start-up
        r = await client.post(f"{DS}/papers/files", files={"files": ("paper.pdf", b"%PDF")})
        assert r.status_code == 500
        assert "object storage rejected papers/paper.pdf" in r.json()["message"]
        assert "nothing was stored" in r.json()["message"]
        assert not (tmp_path / "docdb" / "raw" / "papers" / "paper.pdf").exists()
        assert (await client.get(f"{DS}/papers/files")).json()["files"] == []
        # Deletion stays best effort: the local delete succeeds although the bucket is gone.
        await client.post(DS, json={"name": "gone"})
        assert (await client.delete(f"{DS}/gone")).status_code == 200


@contextlib.asynccontextmanager
async def replica(tmp_path: Path, name: str, **env: str) -> AsyncIterator[AppClient]:
    """A docdb app on its own data dir (as a pod with no shared volume)."""
    environ = {
        "LORE__DOCDB__SERVER__DATA_DIR": str(tmp_path / name),
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
        **env,
    }
    async with running(
        create_app(load_settings(tmp_path / "config", environ=environ)), "http://docdb.test"
    ) as c:
        yield c


async def test_replicas_without_a_shared_disk_share_datasets_uploads_and_parsing_through_s3(
    tmp_path: Path, moto_s3: str, postgres_url: str
) -> None:
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    env = {**s3_env(moto_s3, bucket), "LORE__DOCDB__DATABASE__URL": postgres_url}
    async with contextlib.AsyncExitStack() as a_stack, replica(tmp_path, "b", **env) as b:
        a = await a_stack.enter_async_context(replica(tmp_path, "a", **env))
        assert (await a.post(DS, json={"name": "people"})).status_code == 200
        assert (await b.post(DS, json={"name": "people"})).status_code == 409
        assert (await b.get(DS)).json()["data"] == ["people"]
        body = f"{CURIE}\n\n{HOPPER}\n".encode()
        assert (await a.post(f"{DS}/people/files", files={"files": ("people.txt", body)})).status_code == 200
        # The same name through the other replica gets the next free name.
        again = await b.post(f"{DS}/people/files", files={"files": ("people.txt", b"other")})
        assert again.json()["files"] == [{"filename": "people_1.txt", "size": 5}]

        # Chunks at both replicas, complete at either.
        init = await a.post(
            f"{DS}/people/upload/init", json={"filename": "notes.txt", "total_chunks": 3, "total_size": 9}
        )
        upload_id = init.json()["upload_id"]
        for index, client in enumerate((a, b)):
            r = await client.post(f"{DS}/people/upload/{upload_id}/chunk?chunk_index={index}", content=b"abc")
            assert r.status_code == 200, r.text
        # Either replica tells a resuming client which chunks are held.
        held = (await b.get(f"{DS}/people/upload/{upload_id}")).json()["data"]
        assert (held["received_chunks"], held["received_bytes"]) == ([0, 1], 6)
        r = await a.post(f"{DS}/people/upload/{upload_id}/chunk?chunk_index=2", content=b"abc")
        assert r.status_code == 200, r.text
        done = await b.post(f"{DS}/people/upload/{upload_id}/complete")
        assert done.json()["data"] == {"filename": "notes.txt", "size": 9}
        assert (await a.post(f"{DS}/people/upload/{upload_id}/complete")).status_code == 404

        listed = {f["name"]: f["size"] for f in (await a.get(f"{DS}/people/files")).json()["files"]}
        assert listed == {"people.txt": len(body), "people_1.txt": 5, "notes.txt": 9}
        assert await keys(moto_s3, bucket) == ["people/notes.txt", "people/people.txt", "people/people_1.txt"]
        assert not (tmp_path / "a" / "raw").exists() and not (tmp_path / "b" / "raw").exists()

        # Replica B parses what A stored (it has never seen the bytes) and answers from it.
        assert (await b.delete(f"{DS}/people/files/people_1.txt")).status_code == 200
        assert (await a.post(KB, json={"name": "people"})).status_code == 200
        # A stops, so B's worker claims the task: each replica here keeps its own embedded vectors.
        await a_stack.aclose()
        parse = (await b.post(f"{KB}/people/parse", json={"datasets": ["people"]})).json()
        task = await wait(b, parse["data"]["tasks"][0]["task_id"])
        assert task["status"] == "completed", task
        answer = await b.post(
            "/api/v1/docdb/chat",
            json={"query": "Who developed the first compiler?", "kb_id": "people", "user_id": "u"},
        )
        assert "Grace Hopper" in answer.json()["response"]
        assert {c["source_file"] for c in answer.json()["citations"]} <= {"people.txt", "notes.txt"}
        assert not list((tmp_path / "b" / "staging").iterdir())  # the parse's download is gone


async def test_large_chunks_are_joined_inside_the_object_store(docdb_factory: Any, moto_s3: str) -> None:
    """Chunks of S3's minimum part size become one object by server-side copies; the bytes are whole."""
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    part = MIN_PART_SIZE
    chunks = [bytes([65 + i]) * part for i in range(2)] + [b"tail"]
    async with docdb_factory(**s3_env(moto_s3, bucket)) as client:
        await client.post(DS, json={"name": "big"})
        total = sum(map(len, chunks))
        init = await client.post(
            f"{DS}/big/upload/init", json={"filename": "big.bin", "total_chunks": 3, "total_size": total}
        )
        upload_id = init.json()["upload_id"]
        for index in (2, 0, 1):
            r = await client.post(
                f"{DS}/big/upload/{upload_id}/chunk?chunk_index={index}", content=chunks[index]
            )
            assert r.status_code == 200
        done = await client.post(f"{DS}/big/upload/{upload_id}/complete")
        assert done.json()["data"] == {"filename": "big.bin", "size": total}
        async with s3(moto_s3) as admin:
            stored = await (await admin.get_object(Bucket=bucket, Key="big/big.bin"))["Body"].read()
        assert stored == b"".join(chunks)
        assert await keys(moto_s3, bucket) == ["big/big.bin"]  # the parts are gone


async def test_a_local_raw_area_moves_into_object_storage_at_start(
    docdb_factory: Any, moto_s3: str, tmp_path: Path
) -> None:
    """An install that kept raw files on disk and turns object storage on keeps every dataset."""
    async with docdb_factory() as client:
        await client.post(DS, json={"name": "old"})
        await client.post(DS, json={"name": "empty"})
        await client.post(f"{DS}/old/files", files={"files": ("a.txt", b"alpha")})
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    async with docdb_factory(**s3_env(moto_s3, bucket)) as client:
        assert (await client.get(DS)).json()["data"] == ["empty", "old"]
        files = (await client.get(f"{DS}/old/files")).json()["files"]
        assert [(f["name"], f["size"]) for f in files] == [("a.txt", 5)]
        assert await keys(moto_s3, bucket) == ["old/a.txt"]
    assert (tmp_path / "docdb" / "raw.imported" / "old" / "a.txt").read_bytes() == b"alpha"
    assert not (tmp_path / "docdb" / "raw").exists()


async def test_a_write_that_never_finished_is_swept(docdb_factory: Any, moto_s3: str) -> None:
    """A crash between claiming a name and writing its object leaves an unlisted row; the sweep frees
    the name."""
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    async with docdb_factory(**s3_env(moto_s3, bucket)) as client:
        await client.post(DS, json={"name": "d"})
        raw = client.app.state.datasets.raw
        await raw._claim("d", "x.txt")  # as a replica that died right after claiming
        assert (await client.get(f"{DS}/d/files")).json()["files"] == []
        assert await raw.sweep(0) >= 1
        r = await client.post(f"{DS}/d/files", files={"files": ("x.txt", b"x")})
        assert r.json()["files"][0]["filename"] == "x.txt"


async def wait(client: AppClient, task_id: str) -> dict[str, Any]:
    for _ in range(600):
        task: dict[str, Any] = (await client.get(f"/api/v1/docdb/files/processing/tasks/{task_id}")).json()
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        await asyncio.sleep(0.1)
    raise AssertionError(task)
