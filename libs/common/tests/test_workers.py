"""The worker children's requests, handled in-process (the real processes: docdb's test_vectors, the
stores' contract in test_vector_stores)."""

from __future__ import annotations

import uuid
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from lore_common.providers.embed_worker import next_batch
from lore_common.vector_worker import Shards
from lore_common.workers import Inbox


def unit(*values: float) -> bytes:
    row = np.asarray(values, dtype=np.float32)
    return (row / np.linalg.norm(row)).tobytes()


def inbox(*requests: tuple[Any, ...]) -> Inbox:
    box = Inbox(-1)
    box.requests = deque(requests)
    return box


def test_engine_requests_answer_in_order_and_a_bad_one_fails_alone(tmp_path: Path) -> None:
    shards = Shards(tmp_path)
    vectors = np.asarray([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(3)]
    box = inbox(
        (1, "create", "kb", 2, ["dataset"]),
        (2, "upsert", "kb", ids, vectors.tobytes(), [{"dataset": "a"}, {"dataset": "a"}, {"dataset": "b"}]),
        (3, "search", "kb", unit(1, 0), 2, None, None, None),
        (4, "search", "kb", unit(1, 0), 5, None, {"dataset": "b"}, None),
        (5, "explode", "kb"),
        (6, "upsert", "kb", ids[:1], unit(1, 0, 0), [{}]),  # 3 numbers for a 2-d collection
        (7, "search", "other", unit(1, 0), 5, None, None, None),
        (8, "count", "kb", {"dataset": "a"}),
    )
    replies = [shards.handle(box)[0] for _ in range(8)]
    assert [r[:2] for r in replies] == [
        (1, True),
        (2, True),
        (3, True),
        (4, True),
        (5, False),
        (6, False),
        (7, True),
        (8, True),
    ]
    assert [(i, round(s, 3)) for i, s, _ in replies[2][2]] == [(ids[0], 1.0), (ids[1], 0.8)]
    assert [i for i, _, _ in replies[3][2]] == [ids[2]]
    assert "unknown request" in replies[4][2] and "reshape" in replies[5][2]
    assert replies[6][2] == [] and replies[7][2] == 2
    shards.close()


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
