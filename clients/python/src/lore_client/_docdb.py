"""docdb: datasets and files, chunked uploads, knowledge bases, parse tasks, schemas, configuration,
chat and retrieval (see the API reference at `/schema`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import msgspec

from lore_client._core import Core, decode
from lore_client.errors import error_for
from lore_client.models import (
    CancelResult,
    ChatEvent,
    ChatResult,
    FileInfo,
    GraphPage,
    KbFilePage,
    KnowledgeBase,
    KnowledgeBaseSummary,
    Overview,
    ParseResult,
    PutFileResult,
    RetrieveResult,
    Schema,
    SchemaSummary,
    SourceInfo,
    SyncTask,
    Task,
    UploadedFile,
    UploadProgress,
    UploadSession,
)

T = TypeVar("T")
DATASETS = "docdb/files/raw-files/datasets"
KBS = "docdb/files/knowledge-bases"
TASKS = "docdb/files/processing/tasks"


class Data(msgspec.Struct, Generic[T]):
    """docdb's envelope around a route's `data`."""

    data: T


class Files(msgspec.Struct):
    files: list[FileInfo]


class Uploaded(msgspec.Struct):
    files: list[UploadedFile]


class OverviewReply(msgspec.Struct):
    overview: Overview


class ChatReply(ChatResult):
    success: bool = True


class Docdb(Core):
    # ------------------------------------------------------------ datasets and files

    async def list_datasets(self) -> list[str]:
        """The names of every dataset."""
        return (await self._get(DATASETS, Data[list[str]])).data

    async def create_dataset(self, name: str) -> str:
        """Create an empty dataset (names: letters, digits, `_` and `-`). Conflict if it exists."""
        await self._post(DATASETS, Data[dict[str, Any]], {"name": name})
        return name

    async def delete_dataset(self, name: str) -> None:
        """Delete a dataset and its files. Conflict while a parse of it is active."""
        await self._send("DELETE", f"{DATASETS}/{name}")

    async def list_files(self, dataset: str) -> list[FileInfo]:
        return (await self._get(f"{DATASETS}/{dataset}/files", Files)).files

    async def upload_files(self, dataset: str, paths: Iterable[str | Path]) -> list[UploadedFile]:
        """One simple (multipart) upload of small files; a taken name becomes `<name>_<n>.<ext>`.
        For large files use `upload()`, which sends them in chunks."""
        files = [("files", (Path(p).name, await asyncio.to_thread(Path(p).read_bytes))) for p in paths]
        return (await self._post(f"{DATASETS}/{dataset}/files", Uploaded, files=files)).files

    async def put_file(
        self,
        dataset: str,
        path: str,
        content: bytes | str | Path,
        *,
        on_sent: Callable[[int], None] | None = None,
    ) -> PutFileResult:
        """Write the file at `path` in the dataset (`guide/README.md`: folders allowed), replacing the
        file there; the same content writes nothing (`status` `unchanged`). `content` is the bytes or a
        local file, streamed (`on_sent` hears the bytes sent so far)."""
        body = content if isinstance(content, bytes) else _stream(Path(content), on_sent)
        reply = await self._send(
            "PUT",
            f"{DATASETS}/{dataset}/files",
            params={"path": path},
            content=body,
            headers={"content-type": "application/octet-stream"},
        )
        return decode(reply, Data[PutFileResult]).data

    async def delete_file(self, dataset: str, filename: str) -> None:
        """Delete a file by its listed `name`."""
        await self._send("DELETE", f"{DATASETS}/{dataset}/files/{quote(filename, safe='')}")

    # ------------------------------------------------------------ sources and syncs

    async def set_source(self, dataset: str, source: dict[str, Any]) -> SourceInfo:
        """Give the dataset a source: `{"kind": "folder", "path": …}`, `{"kind": "s3", "bucket": …,
        "prefix": …}`, `{"kind": "git", "url": …, "branch": …}` or `{"kind": "web", "urls": […]}`
        (or `"sitemap"`), with an optional `interval` (seconds) and `auto_parse` (default true)."""
        return await self._send_json("PUT", f"{DATASETS}/{dataset}/source", SourceInfo, source)

    async def get_source(self, dataset: str) -> SourceInfo:
        return await self._get(f"{DATASETS}/{dataset}/source", SourceInfo)

    async def delete_source(self, dataset: str) -> None:
        """Remove the dataset's source (its files stay)."""
        await self._send("DELETE", f"{DATASETS}/{dataset}/source")

    async def list_sources(self) -> list[SourceInfo]:
        return (await self._get("docdb/files/raw-files/sources", Data[list[SourceInfo]])).data

    async def sync(self, dataset: str) -> SyncTask:
        """Start a sync of the dataset from its source; `wait_sync()` for its report."""
        return (await self._post(f"{DATASETS}/{dataset}/sync", Data[SyncTask])).data

    async def get_sync(self, dataset: str, task_id: str) -> SyncTask:
        return (await self._get(f"{DATASETS}/{dataset}/syncs/{task_id}", Data[SyncTask])).data

    async def list_syncs(self, dataset: str, limit: int = 20) -> list[SyncTask]:
        return (await self._get(f"{DATASETS}/{dataset}/syncs", Data[list[SyncTask]], limit=limit)).data

    async def wait_sync(self, dataset: str, task_id: str, poll: float = 0.5) -> SyncTask:
        """Poll a sync until it completes or fails (a failed sync is returned, its `error` says why)."""
        while True:
            task = await self.get_sync(dataset, task_id)
            if task.status in ("completed", "failed"):
                return task
            await asyncio.sleep(poll)

    async def _send_json(self, method: str, path: str, kind: type[T], body: Any) -> T:
        return decode(await self._send(method, path, json_body=body), kind)

    # ------------------------------------------------------------ chunked upload

    async def init_upload(
        self, dataset: str, filename: str, total_chunks: int, total_size: int
    ) -> UploadSession:
        body = {"filename": filename, "total_chunks": total_chunks, "total_size": total_size}
        return (await self._post(f"{DATASETS}/{dataset}/upload/init", Data[UploadSession], body)).data

    async def upload_chunk(self, dataset: str, upload_id: str, index: int, content: bytes) -> int:
        """Send chunk `index` (zero-based) as the raw body; returns its size as stored."""
        reply = await self._post(
            f"{DATASETS}/{dataset}/upload/{upload_id}/chunk",
            Data[dict[str, Any]],
            params={"chunk_index": index},
            content=content,
            headers={"content-type": "application/octet-stream"},
        )
        return int(reply.data["size"])

    async def upload_status(self, dataset: str, upload_id: str) -> UploadProgress:
        """The chunks the server holds (to resume an interrupted upload, send the others)."""
        return (await self._get(f"{DATASETS}/{dataset}/upload/{upload_id}", Data[UploadProgress])).data

    async def complete_upload(self, dataset: str, upload_id: str) -> UploadedFile:
        return (
            await self._post(f"{DATASETS}/{dataset}/upload/{upload_id}/complete", Data[UploadedFile])
        ).data

    async def abort_upload(self, dataset: str, upload_id: str) -> None:
        await self._send("DELETE", f"{DATASETS}/{dataset}/upload/{upload_id}")

    # ------------------------------------------------------------ knowledge bases

    async def list_knowledge_bases(self) -> list[KnowledgeBaseSummary]:
        return (await self._get(KBS, Data[list[KnowledgeBaseSummary]])).data

    async def create_knowledge_base(
        self, name: str, embedding_model: str | None = None
    ) -> KnowledgeBaseSummary:
        """A new, empty KB. `embedding_model` fixes the model of its vectors for its life (`auto`,
        `usem3`, `minilm`, …); by default the server's, which under `auto` its first parse chooses."""
        body: dict[str, Any] = {"name": name}
        if embedding_model is not None:
            body["embedding_model"] = embedding_model
        return (await self._post(KBS, Data[KnowledgeBaseSummary], body)).data

    async def get_knowledge_base(self, name: str) -> KnowledgeBase:
        """A KB with its datasets and the query modes its pipeline supports."""
        return await self._get(f"{KBS}/{name}", KnowledgeBase)

    async def overview(self, name: str, top_nodes: int = 20, sample_relations: int = 15) -> Overview:
        """The KB's most connected entities, sample relations and a prompt describing it."""
        path = f"{KBS}/{name}/overview"
        reply = await self._get(path, OverviewReply, top_nodes=top_nodes, sample_relations=sample_relations)
        return reply.overview

    async def graph(self, name: str, offset: int = 0, limit: int = 500) -> GraphPage:
        """A page of the KB's knowledge graph (`limit` 1-2000 entities from `offset`)."""
        return await self._get(f"{KBS}/{name}/graph", GraphPage, offset=offset, limit=limit)

    async def kb_files(self, name: str, offset: int = 0, limit: int = 500) -> KbFilePage:
        """A page of the files the KB's parses read (`limit` 1-2000 from `offset`), each with its chunks
        or the reason it has none."""
        return await self._get(f"{KBS}/{name}/files", KbFilePage, offset=offset, limit=limit)

    async def delete_knowledge_base(self, name: str, purge_db: bool = True) -> str:
        """Start deleting a KB (it goes on in the background); returns its status (`deleting`)."""
        response = await self._send("DELETE", f"{KBS}/{name}", params={"purge_db": purge_db})
        return str(decode(response, Data[dict[str, Any]]).data.get("status", ""))

    async def remove_dataset(self, kb: str, dataset: str) -> None:
        """Remove a parsed dataset from a KB (its chunks, vectors and graph share)."""
        await self._send("DELETE", f"{KBS}/{kb}/datasets/{dataset}")

    async def parse(
        self,
        kb: str,
        datasets: list[str],
        mode: int = 0,
        schema_name: str | None = None,
        force: bool = False,
        incremental: bool = False,
    ) -> ParseResult:
        """Start one parse task per dataset (mode 0: vectors + graph, 1: vectors only); `wait()` on
        the task ids. Each reads only the files added or changed since the KB's last parse of it
        (`force`: every file). Conflict if a dataset is already parsed, unless `force` or `incremental`."""
        body: dict[str, Any] = {"datasets": datasets, "mode": mode, "schema_name": schema_name}
        body["force"] = force
        if incremental:  # sent only when set: a docdb from before incremental parsing refuses the field
            body["incremental"] = True
        return (await self._post(f"{KBS}/{kb}/parse", Data[ParseResult], body)).data

    # ------------------------------------------------------------ parse tasks

    async def list_tasks(self, status: str | None = None, limit: int = 50) -> list[Task]:
        return await self._get(TASKS, list[Task], status=status, limit=limit)

    async def get_task(self, task_id: str) -> Task:
        return await self._get(f"{TASKS}/{task_id}", Task)

    async def cancel_task(self, task_id: str) -> CancelResult:
        """`cancelled` for a pending task, `cancelling` for a running one; BadRequest once it ended."""
        return (await self._post(f"{TASKS}/{task_id}/cancel", Data[CancelResult])).data

    async def processing_config(self) -> dict[str, Any]:
        return (await self._get("docdb/files/processing/config", Data[dict[str, Any]])).data

    # ------------------------------------------------------------ schemas and configuration

    async def create_schema(self, name: str, entities: list[dict[str, Any]]) -> SchemaSummary:
        """`entities`: `[{type, subtype, attributes}]`; Unprocessable for an unknown `type`."""
        return (
            await self._post("docdb/schemas", Data[SchemaSummary], {"name": name, "entities": entities})
        ).data

    async def list_schemas(self) -> list[SchemaSummary]:
        return await self._get("docdb/schemas", list[SchemaSummary])

    async def get_schema(self, name: str) -> Schema:
        return await self._get(f"docdb/schemas/{name}", Schema)

    async def delete_schema(self, name: str) -> None:
        await self._send("DELETE", f"docdb/schemas/{name}")

    async def config(self, section: str | None = None) -> dict[str, Any]:
        """docdb's configuration (secrets redacted), or one section of it."""
        path = f"docdb/config/{section}" if section else "docdb/config"
        return (await self._get(path, Data[dict[str, Any]])).data

    async def reload_config(self) -> dict[str, Any]:
        return (await self._post("docdb/config/reload", Data[dict[str, Any]])).data

    # ------------------------------------------------------------ chat and retrieval

    async def chat(
        self,
        kb: str,
        query: str,
        *,
        mode: str = "naive",
        user_id: str = "lore-client",
        max_results: int = 20,
        top_k: int | None = None,
    ) -> ChatResult:
        """An answer with numbered `[n]` citations, the passages it used and `query_info` (timings,
        candidates). A failed chat raises the typed error for its `code` (400 or 500)."""
        body = _chat_body(kb, query, mode, user_id, max_results, top_k)
        reply = await self._post("docdb/chat", ChatReply, body)
        if not reply.success:
            raise error_for(reply.code, {"message": reply.message, "code": reply.code})
        return reply

    async def chat_stream(
        self,
        kb: str,
        query: str,
        *,
        mode: str = "naive",
        user_id: str = "lore-client",
        max_results: int = 20,
        top_k: int | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """The answer as it is written: `passages`, `delta`…, `citations`, then `done` holding the
        body `chat()` returns (an `error` event comes before `done` when the chat fails)."""
        body = {**_chat_body(kb, query, mode, user_id, max_results, top_k), "stream": True}
        async for name, data in self._events("docdb/chat", body):
            yield ChatEvent(event=name, data=data)

    async def retrieve(
        self, kb: str, query: str, *, mode: str = "rerank", max_results: int = 20, top_k: int | None = None
    ) -> RetrieveResult:
        """The passages a chat would use, without a model call."""
        body: dict[str, Any] = {"query": query, "kb_id": kb, "mode": mode, "max_results": max_results}
        if top_k is not None:
            body["top_k"] = top_k
        return await self._post("docdb/retrieve", RetrieveResult, body)


STREAM_BLOCK = 1024 * 1024


async def _stream(path: Path, on_sent: Callable[[int], None] | None) -> AsyncIterator[bytes]:
    sent = 0
    handle = await asyncio.to_thread(path.open, "rb")
    try:
        while block := await asyncio.to_thread(handle.read, STREAM_BLOCK):
            sent += len(block)
            yield block
            if on_sent is not None:
                on_sent(sent)
    finally:
        handle.close()


def _chat_body(
    kb: str, query: str, mode: str, user_id: str, max_results: int, top_k: int | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "query": query,
        "kb_id": kb,
        "user_id": user_id,
        "query_mode": mode,
        "max_results": max_results,
    }
    if top_k is not None:
        body["top_k"] = top_k
    return body
