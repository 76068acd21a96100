"""Import of the file store earlier versions kept under `data_dir/kb/` (snapshot, segments, communities,
jobs) into the relational and vector stores. Each insert is replayed through the same commit as a new
one; the folder is renamed `kb.imported` afterwards, so nothing is imported twice.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import numpy as np
import structlog

from lore_common.jobs import JobStore
from lore_mem.kb.models import (
    INTERRUPTED,
    ChunkRecord,
    Community,
    EntityRecord,
    InsertJob,
    RelationRecord,
    Segment,
)
from lore_mem.kb.store import KbStore

log = structlog.get_logger("lore.mem.kb")


class Snapshot(msgspec.Struct, kw_only=True):
    last_seq: int
    dim: int
    chunks: list[ChunkRecord]
    chunk_vectors: bytes
    entities: list[EntityRecord]
    entity_vectors: bytes
    relations: list[RelationRecord]


class CommunityFile(msgspec.Struct, kw_only=True):
    version: int
    communities: list[Community]
    vectors: bytes


def _read_segments(root: Path) -> list[Segment]:
    segments: list[Segment] = []
    last_seq = 0
    snapshot_path = root / "snapshot.bin"
    if snapshot_path.exists():
        snapshot = msgspec.msgpack.decode(snapshot_path.read_bytes(), type=Snapshot)
        last_seq = snapshot.last_seq
        segments.append(
            Segment(
                seq=snapshot.last_seq,
                job_id="snapshot",
                chunks=snapshot.chunks,
                chunk_vectors=snapshot.chunk_vectors,
                entities=snapshot.entities,
                vector_keys=[e.key for e in snapshot.entities],
                entity_vectors=snapshot.entity_vectors,
                relations=snapshot.relations,
            )
        )
    for path in sorted((root / "segments").glob("*.seg")):
        segment = msgspec.msgpack.decode(path.read_bytes(), type=Segment)
        if segment.seq > last_seq:  # older ones are in the snapshot already
            segments.append(segment)
    return segments


def _read_jobs(root: Path) -> list[InsertJob]:
    jobs = []
    for path in (root / "jobs").glob("*.json"):
        try:
            job = msgspec.json.decode(path.read_bytes(), type=InsertJob)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            log.warning("kb_job_unreadable", path=str(path))
            continue
        if job.status in ("accepted", "processing"):
            job.status, job.error = "failed", INTERRUPTED
        jobs.append(job)
    return jobs


def found(root: Path) -> bool:
    return any((root / name).exists() for name in ("snapshot.bin", "segments", "communities.bin", "jobs"))


async def import_file_store(root: Path, store: KbStore, jobs: JobStore[InsertJob]) -> int:
    """Replay the file store at `root` into `store`; returns the inserts imported."""
    if not await asyncio.to_thread(found, root):
        return 0
    segments = await asyncio.to_thread(_read_segments, root)
    for segment in segments:
        await store.commit(segment)
    communities_path = root / "communities.bin"
    if await asyncio.to_thread(communities_path.exists):
        raw = await asyncio.to_thread(communities_path.read_bytes)
        stored = msgspec.msgpack.decode(raw, type=CommunityFile)
        vectors = np.frombuffer(stored.vectors, dtype=np.float32).reshape(len(stored.communities), store.dim)
        by_id = {c.id: vectors[i] for i, c in enumerate(stored.communities)}
        await store.save_communities(stored.communities, by_id, await store.counter("changes"))
    await jobs.add_missing(await asyncio.to_thread(_read_jobs, root))
    await asyncio.to_thread(root.rename, root.with_name(f"{root.name}.imported"))
    log.info("kb_file_store_imported", inserts=len(segments), path=str(root))
    return len(segments)
