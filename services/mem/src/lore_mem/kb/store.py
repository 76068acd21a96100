"""The `kb` store: local files under `data_dir/kb/`, held in memory for queries.

Layout:
- `segments/<seq>.seg`: what one insert added (chunks, entity and relation mentions, their vectors),
  msgpack, written to a temp file, fsynced and renamed: an insert is in the store whole or not at all.
- `snapshot.bin`: every segment up to `last_seq` merged; written the same way when segments pile up,
  after which the merged segment files are deleted (a crash in between only leaves segments the
  loader skips by sequence number).
- `communities.bin`: the latest communities with their summaries and summary vectors.
- `jobs/<id>.json`: insert jobs; `media/<id>/`: uploaded files until their job finishes.

Start-up loads the snapshot, then the newer segments in order; stray temp files are removed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import structlog

from lore_common.matrix import VectorTable
from lore_core.files import write_atomic
from lore_mem.kb.models import (
    ChunkRecord,
    Community,
    CommunityFile,
    EntityRecord,
    InsertJob,
    RelationRecord,
    Segment,
    Snapshot,
)

log = structlog.get_logger("lore.mem.kb")

MAX_DESCRIPTIONS = 8
COMPACT_AFTER_SEGMENTS = 256
MIN_NAME_CHARS = 3
MAX_NAME_WORDS = 6


def name_form(text: str) -> str:
    """The form names are matched in: lower-case words joined by one space, punctuation dropped."""
    return " ".join(re.findall(r"\w+", text.lower()))


def relation_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


class KbStore:
    def __init__(self, root: Path, dim: int) -> None:
        self.root = root
        self.dim = dim
        self.segments_dir = root / "segments"
        self.jobs_dir = root / "jobs"
        self.media_dir = root / "media"
        self.last_seq = 0
        self.chunks: dict[str, ChunkRecord] = {}
        self.entities: dict[str, EntityRecord] = {}
        self.relations: dict[tuple[str, str], RelationRecord] = {}
        self.neighbours: dict[str, set[str]] = defaultdict(set)
        self.names: dict[str, str] = {}  # name_form(name) → entity key
        self.chunk_vectors = VectorTable(dim)
        self.entity_vectors = VectorTable(dim)
        self.communities: list[Community] = []
        self.community_vectors = VectorTable(dim)
        self.communities_version = 0
        self._segment_files = 0

    # ------------------------------------------------------------------ loading

    def _vectors(self, data: bytes, count: int) -> np.ndarray[Any, Any]:
        matrix = np.frombuffer(data, dtype=np.float32)
        if matrix.size != count * self.dim:
            raise ValueError(
                f"the kb store holds {self.dim}-d vectors only if each record has one; found {matrix.size} "
                f"values for {count} records: the embedding model changed (mem.memorykb.embedding)?"
            )
        return matrix.reshape(count, self.dim)

    def load(self) -> None:
        for folder in (self.root, self.segments_dir, self.jobs_dir):
            folder.mkdir(parents=True, exist_ok=True)
            for temp in folder.glob(".*.tmp"):
                temp.unlink(missing_ok=True)
        snapshot_path = self.root / "snapshot.bin"
        if snapshot_path.exists():
            snapshot = msgspec.msgpack.decode(snapshot_path.read_bytes(), type=Snapshot)
            if snapshot.dim != self.dim:
                raise ValueError(
                    f"the kb store at {self.root} holds {snapshot.dim}-d vectors but the embedder makes "
                    f"{self.dim}-d ones: use the same mem.memorykb.embedding model or a new data_dir"
                )
            self._apply(
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
        for path in sorted(self.segments_dir.glob("*.seg")):
            segment = msgspec.msgpack.decode(path.read_bytes(), type=Segment)
            if segment.seq > self.last_seq:
                self._apply(segment)
            self._segment_files += 1
        communities_path = self.root / "communities.bin"
        if communities_path.exists():
            stored = msgspec.msgpack.decode(communities_path.read_bytes(), type=CommunityFile)
            self._set_communities(stored)
        log.info("kb_store_loaded", chunks=len(self.chunks), entities=len(self.entities), seq=self.last_seq)

    # ------------------------------------------------------------------ writing

    def next_seq(self) -> int:
        return self.last_seq + 1

    def write_segment(self, segment: Segment) -> None:
        """Durable first (this file, in a worker thread), then visible (`apply`, on the event loop)."""
        write_atomic(self.segments_dir / f"{segment.seq:012d}.seg", msgspec.msgpack.encode(segment))

    def apply(self, segment: Segment) -> None:
        self._apply(segment)
        self._segment_files += 1

    def needs_compaction(self) -> bool:
        return self._segment_files >= COMPACT_AFTER_SEGMENTS

    def _apply(self, segment: Segment) -> None:
        chunk_matrix = self._vectors(segment.chunk_vectors, len(segment.chunks))
        for chunk in segment.chunks:
            self.chunks[chunk.id] = chunk
        self.chunk_vectors.add([c.id for c in segment.chunks], chunk_matrix)
        entity_matrix = self._vectors(segment.entity_vectors, len(segment.vector_keys))
        for entity in segment.entities:
            known = self.entities.get(entity.key)
            if known is None:
                self.entities[entity.key] = EntityRecord(
                    key=entity.key,
                    name=entity.name,
                    type=entity.type,
                    descriptions=list(entity.descriptions[:MAX_DESCRIPTIONS]),
                    chunk_ids=list(entity.chunk_ids),
                )
                form = name_form(entity.name)
                if len(form) >= MIN_NAME_CHARS:
                    self.names.setdefault(form, entity.key)
            else:
                _merge(known.descriptions, entity.descriptions, MAX_DESCRIPTIONS)
                _merge(known.chunk_ids, entity.chunk_ids)
        self.entity_vectors.add(segment.vector_keys, entity_matrix)
        for relation in segment.relations:
            key = relation_key(relation.source, relation.target)
            known_relation = self.relations.get(key)
            if known_relation is None:
                self.relations[key] = RelationRecord(
                    source=key[0],
                    target=key[1],
                    descriptions=list(relation.descriptions[:MAX_DESCRIPTIONS]),
                    weight=relation.weight,
                    chunk_ids=list(relation.chunk_ids),
                )
            else:
                known_relation.weight += relation.weight
                _merge(known_relation.descriptions, relation.descriptions, MAX_DESCRIPTIONS)
                _merge(known_relation.chunk_ids, relation.chunk_ids)
            self.neighbours[key[0]].add(key[1])
            self.neighbours[key[1]].add(key[0])
        self.last_seq = max(self.last_seq, segment.seq)

    def snapshot(self) -> Snapshot:
        """Everything merged (built on the event loop, so no insert changes it meanwhile)."""
        return Snapshot(
            last_seq=self.last_seq,
            dim=self.dim,
            chunks=list(self.chunks.values()),
            chunk_vectors=self._rows_bytes(self.chunk_vectors, self.chunks.keys()),
            entities=list(self.entities.values()),
            entity_vectors=self._rows_bytes(self.entity_vectors, self.entities.keys()),
            relations=list(self.relations.values()),
        )

    def write_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the snapshot, then drop the segment files it covers."""
        write_atomic(self.root / "snapshot.bin", msgspec.msgpack.encode(snapshot))
        for path in self.segments_dir.glob("*.seg"):
            if int(path.stem) <= snapshot.last_seq:
                path.unlink(missing_ok=True)
        self._segment_files = 0

    @staticmethod
    def _rows_bytes(table: VectorTable, ids: Iterable[str]) -> bytes:
        rows = [table.rows[i] for i in ids]
        return table.matrix[rows].astype(np.float32).tobytes() if rows else b""

    def save_communities(self, communities: list[Community], vectors: np.ndarray[Any, Any]) -> None:
        stored = CommunityFile(
            version=self.communities_version + 1,
            communities=communities,
            vectors=np.asarray(vectors, dtype=np.float32).tobytes(),
        )
        write_atomic(self.root / "communities.bin", msgspec.msgpack.encode(stored))
        self._set_communities(stored)

    def _set_communities(self, stored: CommunityFile) -> None:
        table = VectorTable(self.dim)
        table.add([c.id for c in stored.communities], self._vectors(stored.vectors, len(stored.communities)))
        self.communities, self.community_vectors = stored.communities, table
        self.communities_version = stored.version

    # ------------------------------------------------------------------ jobs

    def save_job(self, job: InsertJob) -> None:
        write_atomic(self.jobs_dir / f"{job.id}.json", msgspec.json.encode(job))

    def read_job(self, job_id: str) -> InsertJob | None:
        path = self.jobs_dir / f"{job_id}.json"
        try:
            return msgspec.json.decode(path.read_bytes(), type=InsertJob)
        except FileNotFoundError:
            return None

    def unfinished_jobs(self) -> list[InsertJob]:
        jobs = []
        for path in self.jobs_dir.glob("*.json"):
            try:
                job = msgspec.json.decode(path.read_bytes(), type=InsertJob)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                continue
            if job.status in ("accepted", "processing"):
                jobs.append(job)
        return jobs

    # ------------------------------------------------------------------ reads

    def named_in(self, text: str) -> list[str]:
        """Keys of the entities whose names appear in the text as whole words, longest first."""
        words = name_form(text).split()
        found: list[str] = []
        for size in range(min(MAX_NAME_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                key = self.names.get(" ".join(words[start : start + size]))
                if key is not None and key not in found:
                    found.append(key)
        return found

    def entity_chunks(self, weights: dict[str, float]) -> dict[str, float]:
        """Chunk id → the summed weight of the entities it mentions, each damped by how many chunks
        mention it (an entity in every chunk says little about any one of them)."""
        scores: dict[str, float] = defaultdict(float)
        for key, weight in weights.items():
            entity = self.entities.get(key)
            if entity:
                share = weight / (1.0 + math.log1p(len(entity.chunk_ids)))
                for chunk_id in entity.chunk_ids:
                    scores[chunk_id] += share
        return scores


def _merge(target: list[str], extra: Iterable[str], cap: int | None = None) -> None:
    for item in extra:
        if item not in target and (cap is None or len(target) < cap):
            target.append(item)
