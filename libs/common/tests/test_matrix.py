"""Unit rows and top-k indexes, as the embedders and BM25 use them."""

from __future__ import annotations

import numpy as np

from lore_common.matrix import normalise, top_rows


def test_normalise_makes_unit_rows_and_keeps_a_zero_row_zero() -> None:
    rows = normalise(np.asarray([[3, 4], [0, 0]], dtype=np.float64))
    assert rows.dtype == np.float32
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0, 0]])
    assert normalise(np.asarray([1.0, 0.0])).shape == (1, 2)


def test_top_rows_are_best_first_with_ties_in_row_order() -> None:
    scores = np.asarray([0.2, 0.9, 0.5, 0.9, 0.1], dtype=np.float32)
    assert top_rows(scores, 3).tolist() == [1, 3, 2]
    assert top_rows(scores, 10).tolist() == [1, 3, 2, 0, 4]
