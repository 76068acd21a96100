"""Row arithmetic shared by the embedders and BM25: unit rows, and the indexes of the best scores."""

from __future__ import annotations

from typing import Any

import numpy as np


def normalise(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Float32 rows scaled to unit length (a zero row stays zero), so a dot product is a cosine."""
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray[Any, np.dtype[np.float32]] = (rows / norms).astype(np.float32, copy=False)
    return result


def top_rows(scores: np.ndarray[Any, Any], limit: int) -> np.ndarray[Any, Any]:
    """Indexes of the `limit` highest scores, best first (argpartition, then a small sort)."""
    if len(scores) > limit:
        top = np.argpartition(-scores, limit - 1)[:limit]
        return top[np.argsort(-scores[top], kind="stable")]
    return np.argsort(-scores, kind="stable")
