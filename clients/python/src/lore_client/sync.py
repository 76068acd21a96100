"""`Lore`: the same client for code without an event loop. One implementation: each method runs
`AsyncLore`'s on a private event loop in a daemon thread, so the sync and async clients cannot drift."""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from lore_client.aio import AsyncLore

P = ParamSpec("P")
T = TypeVar("T")


class _Portal:
    """An event loop in its own thread; `run` blocks the caller until a coroutine finishes there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="lore-client", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            coroutine.close()
            raise RuntimeError("a Lore method was called from one of its own callbacks; use AsyncLore there")
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C in the caller stops the work too
            raise

    def iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self.run(_next(items))
                except StopAsyncIteration:
                    return
        finally:
            close = getattr(items, "aclose", None)
            if close is not None:
                self.run(close())

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)
        if not self.thread.is_alive() and not self.loop.is_closed():
            self.loop.close()


async def _next(items: AsyncIterator[T]) -> T:
    return await anext(items)


class _Blocking(Generic[P, T]):
    def __init__(self, method: Callable[Concatenate[AsyncLore, P], Coroutine[Any, Any, T]]) -> None:
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, owner: None, kind: type[Lore]) -> Self: ...
    @overload
    def __get__(self, owner: Lore, kind: type[Lore]) -> Callable[P, T]: ...
    def __get__(self, owner: Lore | None, kind: type[Lore]) -> Self | Callable[P, T]:
        if owner is None:
            return self
        method, client, portal = self.method, owner.aio, owner._portal

        @functools.wraps(method)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return portal.run(method(client, *args, **kwargs))

        return call


class _Iterating(Generic[P, T]):
    def __init__(self, method: Callable[Concatenate[AsyncLore, P], AsyncIterator[T]]) -> None:
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, owner: None, kind: type[Lore]) -> Self: ...
    @overload
    def __get__(self, owner: Lore, kind: type[Lore]) -> Callable[P, Iterator[T]]: ...
    def __get__(self, owner: Lore | None, kind: type[Lore]) -> Self | Callable[P, Iterator[T]]:
        if owner is None:
            return self
        method, client, portal = self.method, owner.aio, owner._portal

        @functools.wraps(method)
        def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
            return portal.iterate(method(client, *args, **kwargs))

        return call


async def _open(base_url: str | None, api_key: str | None, seconds: float) -> AsyncLore:
    """Made on the portal's loop, where it will run."""
    return AsyncLore(base_url, api_key, timeout=seconds)


class Lore:
    """The Lore API from plain Python::

        with Lore("http://127.0.0.1:8000") as lore:
            lore.create_dataset("papers")
            lore.upload("papers", ["papers/"], on_progress=print)
            task = lore.parse("papers", ["papers"]).tasks[0]
            lore.wait(task)
            print(lore.chat("papers", "What lowers blood pressure?").response)

    Every method is `AsyncLore`'s, with the same arguments, run to completion.
    """

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 60.0
    ) -> None:
        self._portal = _Portal()
        self._finalizer = weakref.finalize(self, self._portal.stop)
        self.aio = self._portal.run(_open(base_url, api_key, timeout))
        self.base_url = self.aio.base_url

    def close(self) -> None:
        if self._finalizer.alive:
            self._portal.run(self.aio.close())
            self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # system
    info = _Blocking(AsyncLore.info)
    health = _Blocking(AsyncLore.health)
    keys_self = _Blocking(AsyncLore.keys_self)
    # docdb: datasets, files and uploads
    list_datasets = _Blocking(AsyncLore.list_datasets)
    create_dataset = _Blocking(AsyncLore.create_dataset)
    delete_dataset = _Blocking(AsyncLore.delete_dataset)
    list_files = _Blocking(AsyncLore.list_files)
    upload_files = _Blocking(AsyncLore.upload_files)
    put_file = _Blocking(AsyncLore.put_file)
    put_large_file = _Blocking(AsyncLore.put_large_file)
    set_source = _Blocking(AsyncLore.set_source)
    get_source = _Blocking(AsyncLore.get_source)
    delete_source = _Blocking(AsyncLore.delete_source)
    list_sources = _Blocking(AsyncLore.list_sources)
    sync = _Blocking(AsyncLore.sync)
    get_sync = _Blocking(AsyncLore.get_sync)
    list_syncs = _Blocking(AsyncLore.list_syncs)
    wait_sync = _Blocking(AsyncLore.wait_sync)
    delete_file = _Blocking(AsyncLore.delete_file)
    init_upload = _Blocking(AsyncLore.init_upload)
    upload_chunk = _Blocking(AsyncLore.upload_chunk)
    upload_status = _Blocking(AsyncLore.upload_status)
    complete_upload = _Blocking(AsyncLore.complete_upload)
    abort_upload = _Blocking(AsyncLore.abort_upload)
    upload = _Blocking(AsyncLore.upload)
    # docdb: knowledge bases, tasks, schemas, configuration
    list_knowledge_bases = _Blocking(AsyncLore.list_knowledge_bases)
    create_knowledge_base = _Blocking(AsyncLore.create_knowledge_base)
    get_knowledge_base = _Blocking(AsyncLore.get_knowledge_base)
    overview = _Blocking(AsyncLore.overview)
    graph = _Blocking(AsyncLore.graph)
    kb_files = _Blocking(AsyncLore.kb_files)
    delete_knowledge_base = _Blocking(AsyncLore.delete_knowledge_base)
    remove_dataset = _Blocking(AsyncLore.remove_dataset)
    parse = _Blocking(AsyncLore.parse)
    list_tasks = _Blocking(AsyncLore.list_tasks)
    get_task = _Blocking(AsyncLore.get_task)
    cancel_task = _Blocking(AsyncLore.cancel_task)
    processing_config = _Blocking(AsyncLore.processing_config)
    wait = _Blocking(AsyncLore.wait)
    create_schema = _Blocking(AsyncLore.create_schema)
    list_schemas = _Blocking(AsyncLore.list_schemas)
    get_schema = _Blocking(AsyncLore.get_schema)
    delete_schema = _Blocking(AsyncLore.delete_schema)
    config = _Blocking(AsyncLore.config)
    reload_config = _Blocking(AsyncLore.reload_config)
    # docdb: chat and retrieval
    chat = _Blocking(AsyncLore.chat)
    chat_stream = _Iterating(AsyncLore.chat_stream)
    retrieve = _Blocking(AsyncLore.retrieve)
    # gen
    submit_table = _Blocking(AsyncLore.submit_table)
    table_status = _Blocking(AsyncLore.table_status)
    table_stream = _Iterating(AsyncLore.table_stream)
    wait_table = _Blocking(AsyncLore.wait_table)
    generate_tree = _Blocking(AsyncLore.generate_tree)
    import_tree = _Blocking(AsyncLore.import_tree)
    tree_status = _Blocking(AsyncLore.tree_status)
    wait_tree = _Blocking(AsyncLore.wait_tree)
    # mem
    add_memory = _Blocking(AsyncLore.add_memory)
    search_memories = _Blocking(AsyncLore.search_memories)
    list_memories = _Blocking(AsyncLore.list_memories)
    get_memory = _Blocking(AsyncLore.get_memory)
    memory_history = _Blocking(AsyncLore.memory_history)
    update_memory = _Blocking(AsyncLore.update_memory)
    delete_memory = _Blocking(AsyncLore.delete_memory)
    delete_memories = _Blocking(AsyncLore.delete_memories)
    kb_insert = _Blocking(AsyncLore.kb_insert)
    kb_insert_status = _Blocking(AsyncLore.kb_insert_status)
    kb_inserts = _Blocking(AsyncLore.kb_inserts)
    kb_forget = _Blocking(AsyncLore.kb_forget)
    wait_insert = _Blocking(AsyncLore.wait_insert)
    kb_query = _Blocking(AsyncLore.kb_query)
    kb_query_stream = _Iterating(AsyncLore.kb_query_stream)
