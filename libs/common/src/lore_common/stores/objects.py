"""Optional S3-compatible object storage through aioboto3 (absent when no bucket is configured)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from lore_core.metrics import timed
from lore_core.settings import ObjectStorageConfig

_DELETE_BATCH = 1000
# S3 refuses multipart parts below 5 MiB, except the last one.
MIN_PART_SIZE = 5 * 1024 * 1024


class ObjectStore:
    def __init__(self, config: ObjectStorageConfig, client: Any) -> None:
        self.config = config
        self.bucket = config.bucket or ""
        self.client = client

    async def ensure_bucket(self) -> None:
        try:
            await self.client.head_bucket(Bucket=self.bucket)
        except Exception:
            await self.client.create_bucket(Bucket=self.bucket)

    @timed("object", "put_file")
    async def put_file(self, key: str, path: Path) -> None:
        await self.client.upload_file(str(path), self.bucket, key)

    @timed("object", "download")
    async def download(self, key: str, path: Path) -> None:
        """Stream the object to `path` (never whole in memory)."""
        await self.client.download_file(self.bucket, key, str(path))

    @timed("object", "size")
    async def size(self, key: str) -> int | None:
        """The object's size, or None when there is no such object."""
        try:
            head = await self.client.head_object(Bucket=self.bucket, Key=key)
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return int(head["ContentLength"])

    @timed("object", "concatenate")
    async def concatenate(self, sources: list[str], key: str) -> None:
        """Write the objects `sources`, in order, as the object `key` without moving their bytes through
        this process (a multipart upload whose parts are server-side copies). Every source but the last
        must hold at least MIN_PART_SIZE bytes."""
        started = await self.client.create_multipart_upload(Bucket=self.bucket, Key=key)
        upload_id = started["UploadId"]
        try:
            parts = []
            for number, source in enumerate(sources, start=1):
                copied = await self.client.upload_part_copy(
                    Bucket=self.bucket,
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=number,
                    CopySource={"Bucket": self.bucket, "Key": source},
                )
                parts.append({"PartNumber": number, "ETag": copied["CopyPartResult"]["ETag"]})
            await self.client.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise

    @timed("object", "get_bytes")
    async def get_bytes(self, key: str) -> bytes:
        response = await self.client.get_object(Bucket=self.bucket, Key=key)
        async with response["Body"] as body:
            data: bytes = await body.read()
        return data

    @timed("object", "delete")
    async def delete(self, key: str) -> None:
        await self.client.delete_object(Bucket=self.bucket, Key=key)

    @timed("object", "delete_prefix")
    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix`, page by page; returns how many went."""
        deleted = 0
        paginator = self.client.get_paginator("list_objects_v2")
        batch: list[dict[str, str]] = []
        async for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                batch.append({"Key": item["Key"]})
                if len(batch) == _DELETE_BATCH:
                    await self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch})
                    deleted += len(batch)
                    batch = []
        if batch:
            await self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch})
            deleted += len(batch)
        return deleted

    @timed("object", "presigned_get")
    async def presigned_get(self, key: str) -> str:
        url: str = await self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=self.config.presign_expiry
        )
        return url

    async def ping(self) -> None:
        await self.client.head_bucket(Bucket=self.bucket)


@contextlib.asynccontextmanager
async def open_object_store(config: ObjectStorageConfig) -> Any:
    """Yields an `ObjectStore`, or None when object storage is not configured."""
    if not config.bucket:
        yield None
        return
    import aioboto3  # only when configured: it weighs ~15 MB of memory

    session = aioboto3.Session(
        aws_access_key_id=config.access_key,
        aws_secret_access_key=config.secret_key,
        region_name=config.region,
    )
    async with session.client("s3", endpoint_url=config.endpoint_url) as client:
        store = ObjectStore(config, client)
        await store.ensure_bucket()
        yield store
