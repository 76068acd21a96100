"""The vector search child's requests, handled in-process (the real process: docdb's test_vectors)."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import pytest

from lore_common.providers.embed_worker import next_batch
from lore_common.vector_worker import Mirrors
from lore_common.workers import Inbox


def unit(*values: float) -> bytes:
    row = np.asarray(values, dtype=np.float32)
    return (row / np.linalg.norm(row)).tobytes()


def inbox(*requests: tuple[Any, ...]) -> Inbox:
    box = Inbox(-1)
    box.requests = deque(requests)
    return box


def test_writes_apply_in_order_and_waiting_searches_run_as_one_batch() -> None:
    mirrors = Mirrors()
    vectors = np.asarray([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32)
    box = inbox(
        (1, "put", "kb", 2, ["a", "b", "c"], vectors.tobytes()),
        (2, "search", "kb", unit(1, 0), 2, None),
        (3, "search", "kb", unit(0, 1), 5, 0.5),
        (4, "search", "other", unit(1, 0), 5, None),
        (5, "remove", "kb", ["a"]),
        (6, "search", "kb", unit(1, 0), 2, None),
    )
    assert mirrors.handle(box) == [(1, True, None)]
    replies = mirrors.handle(box)  # the three searches before the next write, together
    assert [r[0] for r in replies] == [2, 3, 4]
    assert replies[0][2][0] == ["a", "b"] and replies[0][2][1] == pytest.approx([1.0, 0.8])
    assert replies[1][2][0] == ["c", "b"]  # a scores 0 < threshold 0.5
    assert replies[2][2] == ([], [])  # a set this process does not hold
    assert mirrors.handle(box) == [(5, True, None)]
    assert mirrors.handle(box)[0][2][0] == ["b", "c"]


def test_a_bad_request_fails_alone() -> None:
    mirrors = Mirrors()
    assert mirrors.handle(inbox((1, "explode", "kb")))[0][:2] == (1, False)
    wrong_size = (2, "put", "kb", 3, ["a"], unit(1, 0))
    reply = mirrors.handle(inbox(wrong_size))[0]
    assert reply[:2] == (2, False) and "reshape" in reply[2]
    box = inbox((3, "put", "kb", 2, ["a"], unit(1, 0)), (4, "search", "kb", unit(1, 0), 1, None))
    mirrors.handle(box)
    assert mirrors.handle(box)[0][2][0] == ["a"]


def test_embedding_batches_take_waiting_queries_first_up_to_the_limit() -> None:
    box = inbox(
        (1, "embed", False, ["passage one", "passage two"]),
        (2, "embed", True, ["q1"]),
        (3, "embed", True, ["q2", "q3"]),
        (4, "embed", True, ["q4", "q5", "q6"]),
        (5, "embed", False, ["passage three"]),
    )
    assert [r[0] for r in next_batch(box, 4)] == [2, 3]  # 1 + 2 texts; request 4 would make 6
    assert [r[0] for r in next_batch(box, 4)] == [4]
    assert [r[0] for r in next_batch(box, 4)] == [1, 5]
    assert not box.requests
    # A request larger than the limit still goes, alone.
    assert [r[0] for r in next_batch(inbox((6, "embed", True, ["x"] * 9)), 4)] == [6]
