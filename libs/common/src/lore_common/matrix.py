"""In-process vector tables with top-k search, no server.

`VectorTable` is append-only; `PointMirror` mirrors a Qdrant collection (points with payloads, put,
remove, filtered search) so that Qdrant local mode, which scans every point in Python, is only the
durable copy and never the search path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# A search first scans int8 codes of the rows for OVERSAMPLE × limit candidates (at least
# MIN_CANDIDATES), then ranks those by their exact float32 cosine. A float32 scan is bound by memory:
# 10,000 × 512 floats are 20 MB per batch of queries; the codes are a quarter of that and their dot
# products run as SIMD integer kernels, so a batch costs about half. This is Qdrant's scalar
# quantization with rescoring: scores, thresholds and ties are exact; among near-duplicates whose
# cosines differ by less than the rounding (~0.001) the scan may keep one and miss another.
OVERSAMPLE = 4
MIN_CANDIDATES = 32


def normalise(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Float32 rows scaled to unit length (a zero row stays zero), so a dot product is a cosine."""
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray[Any, np.dtype[np.float32]] = (rows / norms).astype(np.float32, copy=False)
    return result


class VectorTable:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self._matrix = np.zeros((0, dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def matrix(self) -> np.ndarray[Any, Any]:
        return self._matrix[: len(self.ids)]

    def add(self, ids: Sequence[str], vectors: np.ndarray[Any, Any]) -> None:
        """Append rows (normalised here); an id already present keeps its first vector."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        fresh = [(i, vid) for i, vid in enumerate(ids) if vid not in self.rows]
        if not fresh:
            return
        needed = len(self.ids) + len(fresh)
        if needed > self._matrix.shape[0]:
            self._matrix = _grown(self._matrix, max(64, needed, self._matrix.shape[0] * 2))
        for index, vid in fresh:
            row = vectors[index]
            norm = float(np.linalg.norm(row)) or 1.0
            self._matrix[len(self.ids)] = row / norm
            self.rows[vid] = len(self.ids)
            self.ids.append(vid)

    def search(self, vector: np.ndarray[Any, Any], limit: int) -> list[tuple[str, float]]:
        if not self.ids or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        scores = self.matrix @ query
        return [(self.ids[i], float(scores[i])) for i in top_rows(scores, limit)]

    def vectors_bytes(self) -> bytes:
        return self.matrix.astype(np.float32).tobytes()


def top_rows(scores: np.ndarray[Any, Any], limit: int) -> np.ndarray[Any, Any]:
    """Indexes of the `limit` highest scores, best first (argpartition, then a small sort)."""
    if len(scores) > limit:
        top = np.argpartition(-scores, limit - 1)[:limit]
        return top[np.argsort(-scores[top], kind="stable")]
    return np.argsort(-scores, kind="stable")


def top_k_rows(scores: np.ndarray[Any, Any], limit: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Per row of a (queries, points) score matrix: the column indexes of the `limit` highest scores,
    best first, and those scores. Ties keep the lower index first, as `top_rows` does."""
    count = scores.shape[1]
    limit = min(max(limit, 0), count)
    if limit == 0:
        empty = np.zeros((scores.shape[0], 0), dtype=np.int64)
        return empty, np.zeros((scores.shape[0], 0), dtype=scores.dtype)
    negated = -scores
    top = np.argpartition(negated, limit - 1, axis=1)[:, :limit] if count > limit else None
    if top is None:
        order = np.argsort(negated, axis=1, kind="stable")
        return order, np.take_along_axis(scores, order, axis=1)
    picked = np.take_along_axis(negated, top, axis=1)
    # Sort by score, then by index, so equal scores come out in index order.
    order = np.lexsort((top, picked), axis=1)
    top = np.take_along_axis(top, order, axis=1)
    return top, np.take_along_axis(scores, top, axis=1)


class PointMirror:
    """Points (id, unit vector, payload) with the payload keys in `keys` kept as columns for filters.
    A removed row is filled by the last one, so rows stay dense and a search is one product."""

    def __init__(self, dim: int, keys: Sequence[str]) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self.columns: dict[str, list[Any]] = {key: [] for key in keys}
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.codes = np.zeros((0, dim), dtype=np.int8)
        self.peak = 0.0  # the largest |component| of any row: codes are rint(row × 127 / peak)
        self.payloads: list[dict[str, Any]] = []

    def __len__(self) -> int:
        return len(self.ids)

    def put(
        self, point_id: str, vector: Sequence[float] | np.ndarray[Any, Any], payload: dict[str, Any]
    ) -> None:
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
        row = row / (float(np.linalg.norm(row)) or 1.0)
        index = self.rows.get(point_id)
        if index is None:
            index = len(self.ids)
            self.rows[point_id] = index
            self.ids.append(point_id)
            self.payloads.append(payload)
            for key, column in self.columns.items():
                column.append(payload.get(key))
            if index >= self.vectors.shape[0]:
                size = max(64, self.vectors.shape[0] * 2)
                self.vectors = _grown(self.vectors, size)
                self.codes = _grown(self.codes, size)
        else:
            self.payloads[index] = payload
            for key, column in self.columns.items():
                column[index] = payload.get(key)
        self.vectors[index] = row
        peak = float(np.abs(row).max(initial=0.0))
        if peak > self.peak:  # a wider range: every row's code changes (rare after the first rows)
            self.peak = peak
            self.codes[: len(self.ids)] = quantise(self.vectors[: len(self.ids)], peak)
        else:
            self.codes[index] = quantise(row, self.peak)

    def remove(self, point_id: str) -> None:
        index = self.rows.pop(point_id, None)
        if index is None:
            return
        last = len(self.ids) - 1
        if index != last:
            moved = self.ids[last]
            self.ids[index] = moved
            self.rows[moved] = index
            self.vectors[index] = self.vectors[last]
            self.codes[index] = self.codes[last]
            self.payloads[index] = self.payloads[last]
            for column in self.columns.values():
                column[index] = column[last]
        self.ids.pop()
        self.payloads.pop()
        for column in self.columns.values():
            column.pop()

    def rows_where(self, where: dict[str, Any]) -> np.ndarray[Any, Any]:
        mask = np.ones(len(self.ids), dtype=bool)
        for key, value in where.items():
            mask &= np.asarray(self.columns[key], dtype=object) == value
        return np.flatnonzero(mask)

    def search(
        self,
        vector: Sequence[float] | np.ndarray[Any, Any],
        limit: int,
        threshold: float | None = None,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[int, float]]:
        """(row, cosine) of the nearest points, best first, optionally only rows matching `where`."""
        return self.search_many(
            np.asarray(vector, dtype=np.float32).reshape(1, -1), [limit], [threshold], where
        )[0]

    def search_many(
        self,
        queries: np.ndarray[Any, Any],
        limits: Sequence[int],
        thresholds: Sequence[float | None],
        where: dict[str, Any] | None = None,
    ) -> list[list[tuple[int, float]]]:
        """`search` for several queries with one scan: the rows are read once per batch, not per query."""
        if not self.ids:
            return [[] for _ in limits]
        queries = np.asarray(queries, dtype=np.float32).reshape(len(limits), self.dim)
        queries = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
        rows = self.rows_where(where) if where else None
        if rows is not None and rows.size == 0:
            return [[] for _ in limits]
        top, top_scores = self._top(queries, max(limits), rows)
        kept = top_scores.tolist()
        ids = top.tolist()
        results = []
        for q, (limit, threshold) in enumerate(zip(limits, thresholds, strict=True)):
            hits: list[tuple[int, float]] = []
            for row, score in zip(ids[q][: max(limit, 0)], kept[q][: max(limit, 0)], strict=True):
                if threshold is not None and score < threshold:
                    break
                hits.append((row, score))
            results.append(hits)
        return results

    def _top(
        self, queries: np.ndarray[Any, Any], limit: int, rows: np.ndarray[Any, Any] | None
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """Rows and exact cosines of each query's `limit` nearest points (of `rows` when given)."""
        count = len(self.ids) if rows is None else len(rows)
        candidates = max(OVERSAMPLE * limit, MIN_CANDIDATES)
        if count <= candidates:  # few enough to score them all exactly
            matrix = self.vectors[rows] if rows is not None else self.vectors[:count]
            top, scores = top_k_rows(np.ascontiguousarray((matrix @ queries.T).T), limit)
            return (rows[top] if rows is not None else top), scores
        # Imported here: usearch takes 0.2 s to import, which a service that never scans should not pay.
        from usearch.compiled import MetricKind
        from usearch.index import search as scan

        codes = self.codes[rows] if rows is not None else self.codes[:count]
        found = scan(codes, quantise(queries, None), candidates, MetricKind.IP, exact=True, threads=1)
        # Candidates in row order, so that equal cosines keep the lower row first, as `top_k_rows` does.
        picked = np.sort(np.asarray(found.keys, dtype=np.int64).reshape(len(queries), -1), axis=1)
        if rows is not None:
            picked = rows[picked]
        exact = np.einsum("qcd,qd->qc", self.vectors[picked], queries)
        top, scores = top_k_rows(exact, limit)
        return np.take_along_axis(picked, top, axis=1), scores


def quantise(rows: np.ndarray[Any, Any], peak: float | None) -> np.ndarray[Any, np.dtype[np.int8]]:
    """int8 codes of float rows, `peak` mapping to 127; `None` scales each row to its own peak (a
    query: a positive factor per query leaves its ranking unchanged)."""
    if peak is None:
        peaks = np.abs(rows).max(axis=-1, keepdims=True)
        scale = np.divide(127.0, peaks, out=np.zeros_like(peaks), where=peaks > 0)
    else:
        scale = np.float32(127.0 / peak) if peak > 0 else np.float32(0.0)
    codes: np.ndarray[Any, np.dtype[np.int8]] = np.clip(np.rint(rows * scale), -127, 127).astype(np.int8)
    return codes


def _grown(matrix: np.ndarray[Any, Any], size: int) -> np.ndarray[Any, Any]:
    grown = np.zeros((size, matrix.shape[1]), dtype=matrix.dtype)
    grown[: matrix.shape[0]] = matrix
    return grown
