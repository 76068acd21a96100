"""The embedded vector engine in a process of its own: Qdrant Edge shards (Qdrant's Rust engine as a
library, HNSW index, keyword payload indexes, a write-ahead log) under one folder, one shard per
collection. `python -m lore_common.vector_worker FOLDER`; `lore_common.stores.edge.EdgeStore` is the
service's side.

Why a process (see also `lore_common.workers`): building a shard's HNSW index holds the GIL for as long
as it runs (a minute and more for 100,000 points on two cores), which would stop the service's event
loop; here it only delays this process's next answers.

Requests (`(id, op, *args)`, answered in the order they arrive):
`("create", name, dim, keys)`, `("drop", name)`, `("dimension", name)` -> int | None,
`("upsert", name, ids, float32 bytes, payloads)`, `("delete", name, ids)`, `("delete_where", name, where)`,
`("count", name, where | None)` -> int, `("search", name, float32 bytes, limit, threshold | None,
where | None, ef | None)` -> [(id, score, payload)], `("scroll", name, where, limit)` -> [(id, payload)],
`("retrieve", name, ids)` -> [(id, payload)], `("page", name, offset | None, limit)` -> (ids, float32
bytes, payloads, next offset | None), `("optimize", name)`.

An upsert or delete is answered once the shard has applied it and written it to its log, so a write
that was acknowledged survives the process being killed (the log is replayed when the shard opens).
Points are indexed in batches: after `INDEX_AFTER` points written since the last index build, the
shard builds the index of what it holds (searches of the points not yet indexed are exact)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from lore_common.workers import Inbox, Reply, Request, failed, serve
from lore_core.heap import release_freed_memory

# Points written to a shard since its last index build that start the next one.
INDEX_AFTER = 20_000
META = "lore-collection.json"
# The HNSW graph: links per point and candidates while linking. Qdrant's defaults (16, 100) reached
# recall@10 0.84 at `ef` 256 and 0.92 at 1,024 on 100,000 hashing-embedded sentence pairs; (32, 200)
# reached 0.92 and 0.96, and built in 70 s against 15 s (one run on a busy 2-core machine).
HNSW_M = 32
HNSW_EF_CONSTRUCT = 200
# Below this many KB of vectors a segment is searched exactly rather than through its graph.
FULL_SCAN_KB = 10_000


def _point_id(value: Any) -> str:
    return str(value)


class Shards:
    """The shards under one folder, opened on first use."""

    def __init__(self, root: Path) -> None:
        from qdrant_edge import EdgeShard

        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.open: dict[str, tuple[EdgeShard, int]] = {}
        self.written: dict[str, int] = {}

    def _folder(self, name: str) -> Path:
        return self.root / name

    def shard(self, name: str) -> Any | None:
        """The collection's shard, or None when it does not exist."""
        from qdrant_edge import EdgeShard

        found = self.open.get(name)
        if found is not None:
            return found[0]
        folder = self._folder(name)
        meta = folder / META
        if not meta.exists():
            if folder.exists():  # a create that did not finish
                shutil.rmtree(folder)
            return None
        dim = int(json.loads(meta.read_text())["dim"])
        shard = EdgeShard.load(str(folder / "shard"))
        self.open[name] = (shard, dim)
        return shard

    def dimension(self, name: str) -> int | None:
        return self.open[name][1] if self.shard(name) is not None else None

    def create(self, name: str, dim: int, keys: list[str]) -> None:
        from qdrant_edge import (
            Distance,
            EdgeConfig,
            EdgeShard,
            EdgeVectorParams,
            HnswIndexConfig,
            KeywordIndexParams,
            Memory,
            ScalarQuantizationConfig,
            ScalarType,
            UpdateOperation,
        )

        if self.shard(name) is not None:
            return
        folder = self._folder(name)
        config = EdgeConfig(
            vectors=EdgeVectorParams(size=dim, distance=Distance.Cosine, memory=Memory.Cold),
            # int8 copies in memory for the graph walk, the float32 vectors on disk for rescoring:
            # a quarter of the memory of float32 vectors in RAM, at 1,000,000 points and beyond.
            quantization_config=ScalarQuantizationConfig(
                type=ScalarType.Int8, quantile=0.99, always_ram=True
            ),
            hnsw_config=HnswIndexConfig(
                m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=FULL_SCAN_KB
            ),
            payload_memory=Memory.Cold,
        )
        shard = EdgeShard.create(str(folder / "shard"), config)
        # The keyword indexes stay in their files, mapped and read into the page cache when the shard
        # opens, rather than rebuilt as hash maps in the engine's own memory: at 1,000,000 points (one
        # file name each) that took half of the opening's CPU and 170 MB.
        for key in keys:
            shard.update(UpdateOperation.create_field_index(key, KeywordIndexParams(memory=Memory.Cached)))
        shard.flush()
        written = folder / (META + ".tmp")
        written.write_text(json.dumps({"dim": dim, "keys": keys}))
        os.replace(written, folder / META)  # the collection exists from here on
        self.open[name] = (shard, dim)

    def drop(self, name: str) -> None:
        found = self.open.pop(name, None)
        if found is not None:
            found[0].close()
        folder = self._folder(name)
        if folder.exists():
            (folder / META).unlink(missing_ok=True)  # gone at once, even if the removal is cut short
            shutil.rmtree(folder)

    @staticmethod
    def _filter(where: dict[str, str] | None) -> Any:
        from qdrant_edge import FieldCondition, Filter, MatchValue

        if not where:
            return None
        return Filter(must=[FieldCondition(key=k, match=MatchValue(value=v)) for k, v in where.items()])

    def update(self, name: str, operation: Any, points: int) -> None:
        shard = self.shard(name)
        if shard is None:
            raise ValueError(f"collection {name!r} does not exist")
        shard.update(operation)
        self.written[name] = self.written.get(name, 0) + points
        if self.written[name] >= INDEX_AFTER:
            self.optimize(name)

    def optimize(self, name: str) -> None:
        shard = self.shard(name)
        if shard is not None:
            shard.optimize()
            shard.flush()  # a short log to replay at the next start
            # The segments an optimize merged away stay in the C heap's RSS otherwise: 60,000 points
            # held 209 MB after their load and 120 MB after the trim.
            release_freed_memory()
        self.written[name] = 0

    def upsert(self, name: str, ids: list[str], body: bytes, payloads: list[dict[str, Any]]) -> None:
        from qdrant_edge import Point, UpdateOperation

        dim = self.dimension(name)
        if dim is None:
            raise ValueError(f"collection {name!r} does not exist")
        rows = np.frombuffer(body, dtype=np.float32).reshape(len(ids), dim)
        points = [
            Point(uuid.UUID(i), row.tolist(), payload)
            for i, row, payload in zip(ids, rows, payloads, strict=True)
        ]
        self.update(name, UpdateOperation.upsert_points(points), len(points))

    def delete(self, name: str, ids: list[str]) -> None:
        from qdrant_edge import UpdateOperation

        wanted: list[int | uuid.UUID | str] = [uuid.UUID(i) for i in ids if _is_uuid(i)]
        if wanted and self.shard(name) is not None:
            self.update(name, UpdateOperation.delete_points(wanted), 0)

    def delete_where(self, name: str, where: dict[str, str]) -> None:
        from qdrant_edge import UpdateOperation

        if where and self.shard(name) is not None:
            self.update(name, UpdateOperation.delete_points_by_filter(self._filter(where)), 0)

    def count(self, name: str, where: dict[str, str] | None) -> int:
        from qdrant_edge import CountRequest

        shard = self.shard(name)
        return 0 if shard is None else int(shard.count(CountRequest(exact=True, filter=self._filter(where))))

    def search(
        self,
        name: str,
        body: bytes,
        limit: int,
        threshold: float | None,
        where: dict[str, str] | None,
        ef: int | None,
    ) -> list[tuple[str, float, dict[str, Any]]]:
        from qdrant_edge import QuantizationSearchParams, Query, SearchParams, SearchRequest

        shard = self.shard(name)
        if shard is None or limit <= 0:
            return []
        query = np.frombuffer(body, dtype=np.float32).tolist()
        # The int8 copies find twice the candidates, the float32 vectors order them.
        quantised = QuantizationSearchParams(rescore=True, oversampling=2.0)
        request = SearchRequest(
            query=Query.Nearest(query),
            limit=limit,
            filter=self._filter(where),
            params=SearchParams(hnsw_ef=ef, quantization=quantised),
            with_payload=True,
            score_threshold=threshold,
        )
        return [(_point_id(p.id), float(p.score), p.payload or {}) for p in shard.search(request)]

    def scroll(self, name: str, where: dict[str, str], limit: int) -> list[tuple[str, dict[str, Any]]]:
        from qdrant_edge import ScrollRequest

        shard = self.shard(name)
        if shard is None:
            return []
        points, _ = shard.scroll(ScrollRequest(limit=limit, filter=self._filter(where), with_payload=True))
        return [(_point_id(p.id), p.payload or {}) for p in points]

    def retrieve(self, name: str, ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
        shard = self.shard(name)
        wanted = [uuid.UUID(i) for i in ids if _is_uuid(i)]
        if shard is None or not wanted:
            return []
        return [
            (_point_id(p.id), p.payload or {})
            for p in shard.retrieve(wanted, with_payload=True, with_vector=False)
        ]

    def page(
        self, name: str, offset: str | None, limit: int
    ) -> tuple[list[str], bytes, list[dict[str, Any]], str | None]:
        from qdrant_edge import ScrollRequest

        shard = self.shard(name)
        if shard is None:
            return [], b"", [], None
        start = uuid.UUID(offset) if offset else None
        points, following = shard.scroll(
            ScrollRequest(offset=start, limit=limit, with_payload=True, with_vector=True)
        )
        vectors = np.asarray([p.vector for p in points], dtype=np.float32)
        return (
            [_point_id(p.id) for p in points],
            vectors.tobytes(),
            [p.payload or {} for p in points],
            None if following is None else _point_id(following),
        )

    def close(self) -> None:
        for shard, _ in self.open.values():
            shard.flush()
            shard.close()
        self.open.clear()

    def handle(self, inbox: Inbox) -> list[Reply]:
        request: Request = inbox.requests.popleft()
        op, args = str(request[1]), request[2:]
        try:
            method = getattr(self, op) if op in OPS else None
            if method is None:
                raise ValueError(f"unknown request {op!r}")
            result = method(*args)
        except Exception as exc:
            return [failed(request, exc)]
        return [(int(request[0]), True, result)]


OPS = frozenset(
    {"create", "drop", "dimension", "upsert", "delete", "delete_where", "count"}
    | {"search", "scroll", "retrieve", "page", "optimize"}
)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def main() -> None:
    shards = Shards(Path(sys.argv[1]))
    try:
        serve(shards.handle)
    finally:
        shards.close()


if __name__ == "__main__":
    main()
