"""mem: `vg` fact memories per user, agent or run; the memory graph (`kb`; see docs/mem.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import msgspec

from lore_client._core import Core
from lore_client.models import (
    AddResult,
    ChatEvent,
    HistoryRecord,
    InsertJob,
    KbAnswer,
    KbInsertDeleted,
    KbInsertPage,
    Memory,
    SearchResult,
    UpdateResult,
)


class Listed(msgspec.Struct):
    results: list[Memory]


class Deleted(msgspec.Struct):
    deleted: int = 0


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, str]:
    return {
        k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v is not None
    }


class Mem(Core):
    async def add_memory(
        self,
        messages: str | list[dict[str, str]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        timestamp: datetime | float | str | None = None,
    ) -> AddResult:
        """Remember a conversation (or one user message given as a string). With `infer` the model
        extracts facts and decides ADD, UPDATE or DELETE against what is stored; without it each
        message is stored as it is. At least one scope id is required (Unprocessable otherwise).
        `timestamp` (a datetime or ISO 8601 text, naive = UTC, or Unix seconds) says when the
        conversation took place: its memories are dated then, and searches that name a time ("in May
        2023") find them."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        body: dict[str, Any] = {
            "messages": messages,
            **_scope(user_id, agent_id, run_id),
            "metadata": metadata,
            "infer": infer,
        }
        if timestamp is not None:
            body["timestamp"] = timestamp.isoformat() if isinstance(timestamp, datetime) else timestamp
        return await self._post("mem/vg/add", AddResult, body)

    async def search_memories(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        threshold: float | None = None,
    ) -> list[Memory]:
        """The scope's memories nearest to `query`, best first, each with its `score`."""
        body = {"query": query, **_scope(user_id, agent_id, run_id), "limit": limit, "threshold": threshold}
        return (await self._post("mem/vg/search", SearchResult, body)).results

    async def list_memories(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
    ) -> list[Memory]:
        return (await self._get("mem/vg", Listed, **_scope(user_id, agent_id, run_id), limit=limit)).results

    async def get_memory(self, memory_id: str) -> Memory:
        return await self._get(f"mem/vg/{memory_id}", Memory)

    async def memory_history(self, memory_id: str) -> list[HistoryRecord]:
        """Every ADD, UPDATE and DELETE of one memory, oldest first."""
        return await self._get(f"mem/vg/{memory_id}/history", list[HistoryRecord])

    async def update_memory(self, memory_id: str, data: str) -> UpdateResult:
        """Replace a memory's text (it is embedded again); recorded in its history."""
        response = await self._send("PUT", f"mem/vg/{memory_id}", json_body={"data": data})
        return msgspec.json.decode(response.content, type=UpdateResult)

    async def delete_memory(self, memory_id: str) -> None:
        await self._send("DELETE", f"mem/vg/{memory_id}")

    async def delete_memories(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> int:
        """Delete every memory of a scope; returns how many went."""
        response = await self._send("DELETE", "mem/vg", params=_scope(user_id, agent_id, run_id))
        return msgspec.json.decode(response.content, type=Deleted).deleted

    async def kb_insert(
        self,
        text: str,
        *,
        video: str | Path | None = None,
        audio: str | Path | None = None,
        image: str | Path | None = None,
        workspace: str | None = None,
    ) -> InsertJob:
        """Queue text (and media, transcribed or captioned first) for the knowledge-graph memory, in
        `workspace` (None: the default one, or the one the API key is given); returns the job at once
        (`wait_insert()` on it)."""
        media = {name: Path(p) for name, p in (("video", video), ("audio", audio), ("image", image)) if p}
        # Always multipart (the route's encoding), even with text alone.
        files: dict[str, Any] = {"query": (None, text.encode())}
        for name, path in media.items():
            files[name] = (path.name, await asyncio.to_thread(path.read_bytes))
        job = await self._post("mem/kb/insert", InsertJob, files=files, params=_workspace(workspace))
        if workspace:  # the 202 names no workspace; following the job needs it
            job = msgspec.structs.replace(job, workspace=workspace)
        return job

    async def kb_insert_status(self, job_id: str, *, workspace: str | None = None) -> InsertJob:
        return await self._get(f"mem/kb/insert/{job_id}", InsertJob, **_workspace(workspace))

    async def kb_inserts(
        self, *, offset: int = 0, limit: int = 100, workspace: str | None = None
    ) -> KbInsertPage:
        """The memory graph's inserts, newest first, each with its text's opening."""
        return await self._get(
            "mem/kb/inserts", KbInsertPage, offset=offset, limit=limit, **_workspace(workspace)
        )

    async def kb_forget(self, insert_id: str, *, workspace: str | None = None) -> KbInsertDeleted:
        """Forget one insert: its chunks, and the entities and relations only it brought."""
        response = await self._send("DELETE", f"mem/kb/insert/{insert_id}", params=_workspace(workspace))
        return msgspec.json.decode(response.content, type=KbInsertDeleted)

    async def kb_query(
        self, query: str, *, mode: str = "hybrid", use_pm: bool = False, workspace: str | None = None
    ) -> KbAnswer:
        """An answer from the knowledge-graph memory (`workspace`'s; None: the default one, or the one
        the API key is given): `hybrid`, `local`, `global` or `naive`."""
        return await self._post(
            "mem/kb/query",
            KbAnswer,
            {"query": query, "mode": mode, "use_pm": use_pm},
            params=_workspace(workspace),
        )

    async def kb_query_stream(
        self, query: str, *, mode: str = "hybrid", use_pm: bool = False, workspace: str | None = None
    ) -> AsyncIterator[ChatEvent]:
        """`kb_query` as server-sent events: `passages`, `delta`…, `citations`, then `done` with the body
        `kb_query` returns; a failure is `error {code, message}`, then `done` with `{detail}`."""
        path = "mem/kb/query" + (f"?{urlencode(_workspace(workspace))}" if workspace else "")
        async for name, data in self._events(
            path, {"query": query, "mode": mode, "use_pm": use_pm, "stream": True}
        ):
            yield ChatEvent(event=name, data=data)


def _workspace(workspace: str | None) -> dict[str, str]:
    """The memory graph's `?workspace=` (none: the default one, or the one the gateway gives the key)."""
    return {"workspace": workspace} if workspace else {}
