"""The in-memory vector tables behind the search paths."""

from __future__ import annotations

import numpy as np
import pytest

from lore_common.matrix import PointMirror, quantise, top_k_rows, top_rows


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


def brute_force(mirror: PointMirror, query: np.ndarray, limit: int) -> list[int]:
    unit = query / np.linalg.norm(query)
    scores = mirror.vectors[: len(mirror)] @ unit
    return sorted(range(len(mirror)), key=lambda r: (-scores[r], r))[:limit]


def test_the_int8_scan_finds_the_exact_neighbours_of_spread_out_points() -> None:
    rng = np.random.default_rng(5)
    mirror = PointMirror(64, ["group"])
    for i in range(3000):
        mirror.put(f"p{i}", rng.normal(size=64), {"group": i % 2})
    queries = rng.normal(size=(8, 64))
    for query, hits in zip(queries, mirror.search_many(queries, [10] * 8, [None] * 8), strict=True):
        assert [r for r, _ in hits] == brute_force(mirror, query, 10)
    odd = mirror.search(queries[0], 10, where={"group": 1})
    expected = [r for r in brute_force(mirror, queries[0], 3000) if mirror.payloads[r]["group"] == 1][:10]
    assert [r for r, _ in odd] == expected


def test_among_near_duplicates_the_scan_misses_only_near_ties_and_scores_stay_exact() -> None:
    # Clusters of near-duplicates (many versions of one text embed like this): their cosines differ
    # by less than the int8 rounding, so the scan may swap them; what it returns is scored exactly,
    # and anything it misses scores within 0.002 of the last hit. An exact copy of a query comes first.
    rng = np.random.default_rng(11)
    centres = rng.normal(size=(20, 128))
    mirror = PointMirror(128, [])
    for i in range(4000):
        mirror.put(f"p{i}", centres[i % 20] + rng.normal(scale=0.05, size=128), {})
    queries = centres[:8] + rng.normal(scale=0.05, size=(8, 128))
    mirror.put("copy", queries[3], {})
    found = mirror.search_many(queries, [10] * 8, [None] * 8)
    for number, (query, hits) in enumerate(zip(queries, found, strict=True)):
        unit = query / np.linalg.norm(query)
        scores = [s for _, s in hits]
        assert scores == pytest.approx([float(mirror.vectors[r] @ unit) for r, _ in hits], abs=1e-6)
        assert scores == sorted(scores, reverse=True) and len(hits) == 10
        true_last = float(mirror.vectors[brute_force(mirror, query, 10)[-1]] @ unit)
        assert scores[-1] >= true_last - 0.002
        if number == 3:
            assert hits[0] == (mirror.rows["copy"], pytest.approx(1.0))


def test_codes_follow_puts_removals_and_a_wider_range() -> None:
    rng = np.random.default_rng(3)
    mirror = PointMirror(32, [])
    for i in range(200):
        mirror.put(f"p{i}", rng.normal(size=32), {})
    first_peak = mirror.peak
    spike = np.zeros(32)
    spike[5] = 1.0  # a component of 1.0 is beyond every earlier row's range
    mirror.put("spike", spike, {})
    for i in range(0, 200, 3):
        mirror.remove(f"p{i}")
    mirror.put("p1", rng.normal(size=32), {})  # an update in place
    assert mirror.peak == 1.0 > first_peak
    count = len(mirror)
    assert np.array_equal(mirror.codes[:count], quantise(mirror.vectors[:count], mirror.peak))
    assert mirror.search(spike, 1)[0] == (mirror.rows["spike"], pytest.approx(1.0))
    query = rng.normal(size=32)
    assert [r for r, _ in mirror.search(query, 5)] == brute_force(mirror, query, 5)
