"""Vector search in a process of its own (see `lore_common.workers` for why): cosine top-k over
in-memory mirrors of point sets, one scan per batch of queries (`PointMirror`: int8 candidates,
exact float32 rescoring).
`python -m lore_common.vector_worker`.

Requests, applied in the order they arrive (searches that arrive together run as one batch per set):
`("put", set, dim, ids, float32 bytes)`, `("remove", set, ids)`, `("drop", set)` and
`("search", set, float32 query bytes, limit, threshold | None)`, which answers `(ids, scores)`, best
first. A set this process does not hold has no points."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from lore_common.matrix import PointMirror
from lore_common.workers import Inbox, Reply, Request, failed, serve

MAX_BATCH = 256
_NO_PAYLOAD: dict[str, Any] = {}


class Mirrors:
    def __init__(self) -> None:
        self.sets: dict[str, PointMirror] = {}

    def apply(self, request: Request) -> None:
        op, name = request[1], str(request[2])
        if op == "put":
            dim, ids, body = int(request[3]), request[4], request[5]
            mirror = self.sets.get(name)
            if mirror is None or mirror.dim != dim:
                mirror = self.sets[name] = PointMirror(dim, ())
            rows = np.frombuffer(body, dtype=np.float32).reshape(len(ids), dim)
            for point, row in zip(ids, rows, strict=True):
                mirror.put(str(point), row, _NO_PAYLOAD)
        elif op == "remove":
            removing = self.sets.get(name)
            if removing is not None:
                for point in request[3]:
                    removing.remove(str(point))
        elif op == "drop":
            self.sets.pop(name, None)
        else:
            raise ValueError(f"unknown request {op!r}")

    def search(self, name: str, searches: list[Request]) -> list[Reply]:
        mirror = self.sets.get(name)
        if mirror is None:
            return [(int(r[0]), True, ([], [])) for r in searches]
        queries = np.stack([np.frombuffer(r[3], dtype=np.float32) for r in searches])
        found = mirror.search_many(queries, [int(r[4]) for r in searches], [r[5] for r in searches])
        return [
            (int(r[0]), True, ([mirror.ids[row] for row, _ in hits], [score for _, score in hits]))
            for r, hits in zip(searches, found, strict=True)
        ]

    def handle(self, inbox: Inbox) -> list[Reply]:
        """The next write alone, or every search waiting before the next write, batched per set."""
        first = inbox.requests.popleft()
        if first[1] != "search":
            try:
                self.apply(first)
            except Exception as exc:
                return [failed(first, exc)]
            return [(int(first[0]), True, None)]
        by_set: defaultdict[str, list[Request]] = defaultdict(list)
        by_set[str(first[2])].append(first)
        count = 1
        while inbox.requests and inbox.requests[0][1] == "search" and count < MAX_BATCH:
            request = inbox.requests.popleft()
            by_set[str(request[2])].append(request)
            count += 1
        replies: list[Reply] = []
        for name, searches in by_set.items():
            try:
                replies.extend(self.search(name, searches))
            except Exception as exc:
                replies.extend(failed(r, exc) for r in searches)
        return replies


def main() -> None:
    from threadpoolctl import threadpool_limits

    # One BLAS thread: the service's event loop needs the other core.
    threadpool_limits(1, "blas")
    serve(Mirrors().handle)


if __name__ == "__main__":
    main()
