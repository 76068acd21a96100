"""The in-memory vector tables behind the search paths."""

from __future__ import annotations

import numpy as np
import pytest

from lore_common.matrix import PointMirror, top_k_rows, top_rows


def test_search_many_equals_one_search_per_query_with_filters_and_thresholds() -> None:
    rng = np.random.default_rng(7)
    mirror = PointMirror(16, ["dataset"])
    for i in range(300):
        mirror.put(f"p{i}", rng.normal(size=16), {"dataset": "a" if i % 3 else "b", "n": i})
    for i in range(0, 300, 7):
        mirror.remove(f"p{i}")
    queries = rng.normal(size=(5, 16)).astype(np.float32)
    limits, thresholds = [1, 5, 50, 400, 0], [None, 0.2, None, 0.0, None]
    many = mirror.search_many(queries, limits, thresholds)
    for q, limit, threshold, found in zip(queries, limits, thresholds, many, strict=True):
        alone = mirror.search(q, limit, threshold)
        assert [r for r, _ in found] == [r for r, _ in alone]
        assert [s for _, s in found] == pytest.approx([s for _, s in alone], abs=1e-5)
        brute = sorted(
            ((r, float(mirror.vectors[r] @ (q / np.linalg.norm(q)))) for r in range(len(mirror))),
            key=lambda pair: -pair[1],
        )
        expected = [(r, s) for r, s in brute if threshold is None or s >= threshold][:limit]
        assert [r for r, _ in found] == [r for r, _ in expected]
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-5)
    only_b = mirror.search(queries[0], 500, where={"dataset": "b"})
    assert only_b and all(mirror.payloads[r]["dataset"] == "b" for r, _ in only_b)
    assert len(only_b) == sum(1 for p in mirror.payloads if p["dataset"] == "b")
    assert "p7" not in mirror.rows and len(mirror) == 300 - len(range(0, 300, 7))


def test_batch_top_k_breaks_ties_by_row_like_a_single_search() -> None:
    scores = np.array([[0.5, 0.9, 0.5, 0.9, 0.1], [0.0, 0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    top, picked = top_k_rows(scores, 3)
    assert top.tolist() == [[1, 3, 0], [0, 1, 2]]
    assert picked.tolist()[0] == pytest.approx([0.9, 0.9, 0.5])
    assert top_k_rows(scores, 9)[0].tolist() == [[1, 3, 0, 2, 4], [0, 1, 2, 3, 4]]
    for row in scores:
        assert top_rows(row, 3).tolist() == top_k_rows(row[None, :], 3)[0][0].tolist()
