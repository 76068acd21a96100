"""Raw files mirrored to S3 (moto's server mode on loopback)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import aioboto3
import httpx

DS = "/api/v1/docdb/files/raw-files/datasets"


def s3_env(endpoint: str, bucket: str) -> dict[str, str]:
    return {
        "LORE__DOCDB__OBJECT_STORAGE__BUCKET": bucket,
        "LORE__DOCDB__OBJECT_STORAGE__ENDPOINT_URL": endpoint,
        "LORE__DOCDB__OBJECT_STORAGE__ACCESS_KEY": "testing",
        "LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY": "testing",
    }


def s3(endpoint: str) -> Any:
    """A client of the test's own (the app's client lives on the test client's loop)."""
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
