"""An append-only table of unit vectors with exact top-k search: one matrix product, no server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


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
            grown = np.zeros((max(64, needed, self._matrix.shape[0] * 2), self.dim), dtype=np.float32)
            grown[: len(self.ids)] = self.matrix
            self._matrix = grown
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
        top = np.argpartition(-scores, min(limit, len(scores)) - 1)[:limit] if len(scores) > limit else None
        order = top[np.argsort(-scores[top])] if top is not None else np.argsort(-scores)
        return [(self.ids[i], float(scores[i])) for i in order]

    def vectors_bytes(self) -> bytes:
        return self.matrix.astype(np.float32).tobytes()
