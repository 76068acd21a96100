from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

DS = "/api/v1/docdb/files/raw-files/datasets"
Client = Any


async def dataset(client: Client, name: str = "media") -> str:
    await client.post(DS, json={"name": name})
    return f"{DS}/{name}"


async def init(client: Client, base: str, filename: str, chunks: int, size: int) -> str:
    r = await client.post(
        f"{base}/upload/init", json={"filename": filename, "total_chunks": chunks, "total_size": size}
    )
    assert r.status_code == 200, r.text
    assert r.json()["data"]["upload_id"] == r.json()["upload_id"]
    return str(r.json()["upload_id"])


def split(data: bytes, parts: int) -> list[bytes]:
    step = -(-len(data) // parts)
    return [data[i * step : (i + 1) * step] for i in range(parts)]


async def test_64_chunks_in_parallel_shuffled_give_a_byte_identical_file(
    docdb: Client, tmp_path: Path
) -> None:
    base = await dataset(docdb)
    payload = os.urandom(64 * 40_000 + 123)
    chunks = split(payload, 64)
    upload_id = await init(docdb, base, "video.bin", 64, len(payload))
    order = list(range(64))
    random.Random(7).shuffle(order)
    replies = await asyncio.gather(
        *(
            docdb.post(f"{base}/upload/{upload_id}/chunk", params={"chunk_index": i}, content=chunks[i])
            for i in order
        )
    )
    assert [r.status_code for r in replies] == [200] * 64
    done = await docdb.post(f"{base}/upload/{upload_id}/complete")
    assert done.status_code == 200
    assert done.json()["data"] == {"filename": "video.bin", "size": len(payload)}
    stored = (tmp_path / "docdb" / "raw" / "media" / "video.bin").read_bytes()
    assert hashlib.sha256(stored).digest() == hashlib.sha256(payload).digest()
    # The session is gone: chunk and complete now answer 404, and no hidden leftovers remain.
    assert (
        await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"x")
    ).status_code == 404
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 404
    assert list((tmp_path / "docdb" / "raw" / "media" / ".uploads").iterdir()) == []


async def test_resending_a_chunk_replaces_it(docdb: Client, tmp_path: Path) -> None:
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "a.txt", 2, 6)
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"XXX")
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"abc")
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=1", content=b"def")
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 200
    assert (tmp_path / "docdb" / "raw" / "media" / "a.txt").read_bytes() == b"abcdef"


async def test_complete_names_the_missing_chunks(docdb: Client) -> None:
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "a.txt", 5, 5)
    for i in (0, 2):
        await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index={i}", content=b"x")
    r = await docdb.post(f"{base}/upload/{upload_id}/complete")
    assert r.status_code == 400
    assert r.json()["detail"] == {"missing_chunks": [1, 3, 4]}
    assert "1, 3, 4" in r.json()["message"]


async def test_complete_with_a_wrong_total_size_is_400_and_keeps_the_session(docdb: Client) -> None:
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "a.txt", 1, 10)
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"short")
    r = await docdb.post(f"{base}/upload/{upload_id}/complete")
    assert r.status_code == 400 and r.json()["detail"] == {"merged_size": 5, "total_size": 10}
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"0123456789")
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 200
    listing = (await docdb.get(f"{base}/files")).json()["files"]
    assert [(f["name"], f["size"]) for f in listing] == [("a.txt", 10)]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"filename": "a.txt", "total_chunks": 0, "total_size": 1}, "total_chunks"),
        ({"filename": "a.txt", "total_chunks": 10001, "total_size": 1}, "total_chunks"),
        ({"filename": "a.txt", "total_chunks": 1, "total_size": 0}, "total_size"),
        ({"filename": "x" * 256, "total_chunks": 1, "total_size": 1}, "filename"),
        ({"filename": "../etc/passwd", "total_chunks": 1, "total_size": 1}, "filename"),
        ({"total_chunks": 1, "total_size": 1}, "filename"),
    ],
)
async def test_init_validation(docdb: Client, body: dict[str, Any], why: str) -> None:
    base = await dataset(docdb)
    r = await docdb.post(f"{base}/upload/init", json=body)
    assert r.status_code == 400, r.text
    assert why in r.text


async def test_chunk_errors(docdb: Client) -> None:
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "a.txt", 3, 30)
    empty = await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"")
    assert empty.status_code == 400 and "empty" in empty.json()["message"]
    for index in (3, -1):
        r = await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index={index}", content=b"x")
        assert r.status_code == 400 and "out of range" in r.json()["message"]
    missing_index = await docdb.post(f"{base}/upload/{upload_id}/chunk", content=b"x")
    assert missing_index.status_code == 400 and "chunk_index" in missing_index.text
    unknown = await docdb.post(f"{base}/upload/{'0' * 32}/chunk?chunk_index=0", content=b"x")
    assert unknown.status_code == 404
    traversal = await docdb.post(f"{base}/upload/..%2F..%2Fx/chunk?chunk_index=0", content=b"x")
    assert traversal.status_code in (400, 404)
    too_big = await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=1", content=b"y" * 31)
    assert too_big.status_code == 400


async def test_init_on_a_missing_dataset_is_404(docdb: Client) -> None:
    r = await docdb.post(
        f"{DS}/ghost/upload/init", json={"filename": "a", "total_chunks": 1, "total_size": 1}
    )
    assert r.status_code == 404


async def test_abort_removes_the_session_and_its_chunks(docdb: Client, tmp_path: Path) -> None:
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "a.txt", 2, 2)
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"a")
    session = tmp_path / "docdb" / "raw" / "media" / ".uploads" / upload_id
    assert session.is_dir()
    assert (await docdb.delete(f"{base}/upload/{upload_id}")).status_code == 200
    assert not session.exists()
    assert (await docdb.delete(f"{base}/upload/{upload_id}")).status_code == 404
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 404


async def test_a_session_survives_a_restart(docdb_factory: Any, tmp_path: Path) -> None:
    payload = os.urandom(3000)
    parts = split(payload, 3)
    async with docdb_factory() as first:
        base = await dataset(first)
        upload_id = await init(first, base, "doc.pdf", 3, len(payload))
        await first.post(f"{base}/upload/{upload_id}/chunk?chunk_index=2", content=parts[2])
        await first.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=parts[0])
    async with docdb_factory() as second:
        await second.post(f"{base}/upload/{upload_id}/chunk?chunk_index=1", content=parts[1])
        r = await second.post(f"{base}/upload/{upload_id}/complete")
        assert r.status_code == 200
    assert (tmp_path / "docdb" / "raw" / "media" / "doc.pdf").read_bytes() == payload


async def test_completed_upload_follows_the_renaming_rule(docdb: Client) -> None:
    base = await dataset(docdb)
    await docdb.post(f"{base}/files", files={"files": ("a.txt", b"first")})
    upload_id = await init(docdb, base, "a.txt", 1, 6)
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"second")
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).json()["data"]["filename"] == "a_1.txt"


async def test_idle_sessions_expire_in_the_sweep(docdb: Client, tmp_path: Path) -> None:
    base = await dataset(docdb)
    old = await init(docdb, base, "old.bin", 2, 2)
    fresh = await init(docdb, base, "new.bin", 2, 2)
    uploads = tmp_path / "docdb" / "raw" / "media" / ".uploads"
    stale = time.time() - 2 * 24 * 3600
    os.utime(uploads / old, (stale, stale))
    removed = await docdb.app.state.uploads.sweep(24 * 3600)
    assert removed == 1
    assert not (uploads / old).exists() and (uploads / fresh).exists()
    assert (await docdb.post(f"{base}/upload/{old}/chunk?chunk_index=0", content=b"x")).status_code == 404


async def test_uneven_chunks_are_merged_in_order(docdb: Client, tmp_path: Path) -> None:
    """Chunks of the even-split size are written in place; others are kept apart; both merge in order."""
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "mixed.bin", 3, 10)
    for index, body in ((2, b"ccc"), (0, b"aaaa"), (1, b"bbb")):
        r = await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index={index}", content=body)
        assert r.status_code == 200
    session = tmp_path / "docdb" / "raw" / "media" / ".uploads" / upload_id
    assert {p.name for p in session.iterdir()} >= {"0.ok", "1.part", "2.part"}
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 200
    assert (tmp_path / "docdb" / "raw" / "media" / "mixed.bin").read_bytes() == b"aaaabbbccc"


async def test_a_chunk_resent_in_place_replaces_its_part_file(docdb: Client, tmp_path: Path) -> None:
    base = await dataset(docdb)
    upload_id = await init(docdb, base, "x.bin", 2, 8)
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"zz")  # uneven: kept apart
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=0", content=b"1234")  # even: in place
    await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index=1", content=b"5678")
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 200
    assert (tmp_path / "docdb" / "raw" / "media" / "x.bin").read_bytes() == b"12345678"


@pytest.mark.parametrize("offset", [None, 5])
async def test_buffered_writes_survive_short_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offset: int | None
) -> None:
    """A vectored write may store fewer bytes than asked; the writer resumes where it stopped."""
    from lore_docdb.datasets import files as datasets_service

    real_writev, real_pwritev = os.writev, os.pwritev

    def short_writev(fd: int, buffers: list[memoryview]) -> int:
        return real_writev(fd, [bytes(buffers[0][:3])])

    def short_pwritev(fd: int, buffers: list[memoryview], at: int) -> int:
        return real_pwritev(fd, [bytes(buffers[0][:3])], at)

    monkeypatch.setattr(datasets_service.os, "writev", short_writev)
    monkeypatch.setattr(datasets_service.os, "pwritev", short_pwritev)
    target = tmp_path / "out.bin"
    target.write_bytes(b"#" * 5)
    pieces = [b"alpha-", b"", b"beta-", b"gamma" * 3]
    fd = os.open(target, os.O_WRONLY if offset is not None else os.O_WRONLY | os.O_APPEND)
    try:
        writer = datasets_service.BufferedWriter(fd, offset)
        for piece in pieces:
            await writer.add(piece)
        await writer.flush()
    finally:
        os.close(fd)
    assert writer.written == len(b"".join(pieces))
    assert target.read_bytes() == b"#" * 5 + b"".join(pieces)


async def test_progress_lists_the_chunks_held_so_a_client_can_resume(docdb: Client, tmp_path: Path) -> None:
    base = await dataset(docdb)
    payload = os.urandom(5 * 1000 + 7)
    chunks = split(payload, 5)
    upload_id = await init(docdb, base, "resume.bin", 5, len(payload))
    # Chunk 1 in place (its expected size), chunk 3 shorter than expected (kept apart as a part file).
    await docdb.post(f"{base}/upload/{upload_id}/chunk", params={"chunk_index": 1}, content=chunks[1])
    await docdb.post(f"{base}/upload/{upload_id}/chunk", params={"chunk_index": 3}, content=chunks[3][:10])
    status = await docdb.get(f"{base}/upload/{upload_id}")
    assert status.status_code == 200, status.text
    data = status.json()["data"]
    assert data["received_chunks"] == [1, 3]
    assert data["received_bytes"] == len(chunks[1]) + 10
    assert (data["filename"], data["total_chunks"], data["total_size"]) == ("resume.bin", 5, len(payload))
    # Resume: send what is missing (and the short chunk again), then complete.
    for index in (0, 2, 3, 4):
        await docdb.post(f"{base}/upload/{upload_id}/chunk?chunk_index={index}", content=chunks[index])
    held = (await docdb.get(f"{base}/upload/{upload_id}")).json()["data"]["received_chunks"]
    assert held == [0, 1, 2, 3, 4]
    assert (await docdb.post(f"{base}/upload/{upload_id}/complete")).status_code == 200
    stored = (tmp_path / "docdb" / "raw" / "media" / "resume.bin").read_bytes()
    assert stored == payload
    gone = await docdb.get(f"{base}/upload/{upload_id}")
    assert gone.status_code == 404 and "does not exist" in gone.json()["message"]
    assert (await docdb.get(f"{DS}/nowhere/upload/{upload_id}")).status_code == 404
