"""gen: tables (submit, status, the WebSocket stream) and tag trees (see docs/gen.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec

from lore_client._core import API, Core
from lore_client.errors import Unreachable, error_for
from lore_client.models import TableEvent, TableTask, TreeTask


class Gen(Core):
    async def submit_table(
        self,
        question: str,
        *,
        kb_name: str | None = None,
        sql_question: str | None = None,
        top_k: int = 5,
        threshold: float = 0.5,
        max_workers: int = 16,
    ) -> TableTask:
        """Start a table for `question` (grounded in `kb_name`'s passages); `wait()` on it or read
        `table_status()`."""
        body = _table_body(question, kb_name, sql_question, top_k, threshold, max_workers)
        return await self._post("gen/pipeline/submit", TableTask, body)

    async def table_status(self, task_id: str) -> TableTask:
        return await self._get(f"gen/pipeline/status/{task_id}", TableTask)

    async def table_stream(
        self,
        question: str,
        *,
        kb_name: str | None = None,
        sql_question: str | None = None,
        top_k: int = 5,
        threshold: float = 0.5,
        max_workers: int = 16,
    ) -> AsyncIterator[TableEvent]:
        """Build a table over the WebSocket: `progress` events per step (step 2 with `done`/`total`
        rows), then `result` (its `data` is the table) or `error`. Leaving early lets the task run on."""
        # websockets loads here, for the one stream that needs it, not with every client (or `lore chat`).
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus, WebSocketException

        body = _table_body(question, kb_name, sql_question, top_k, threshold, max_workers)
        url = "ws" + self.base_url.removeprefix("http") + f"{API}/gen/pipeline/stream"
        headers = (
            {"authorization": self._headers["authorization"]} if "authorization" in self._headers else {}
        )
        try:
            async with connect(url, additional_headers=headers, max_size=64 * 1024 * 1024) as socket:
                await socket.send(msgspec.json.encode(body).decode())
                async for message in socket:
                    event = msgspec.json.decode(message, type=TableEvent)
                    yield event
                    if event.type in ("result", "error"):
                        return
        except InvalidStatus as exc:
            status = exc.response.status_code
            try:
                reply: Any = msgspec.json.decode(exc.response.body or b"null")
            except msgspec.DecodeError:
                reply = None
            raise error_for(status, reply, f"the table stream was refused (HTTP {status})") from exc
        except (OSError, WebSocketException) as exc:
            raise Unreachable(f"table stream at {url} failed: {exc}") from exc

    async def generate_tree(
        self, topic: str, *, mode: str = "pure_llm", kb_name: str | None = None
    ) -> TreeTask:
        """Start a tag tree on `topic`: `pure_llm`, or `kb` (grounded in `kb_name`'s entities)."""
        return await self._post(
            "gen/tag-tree/generate", TreeTask, {"topic": topic, "mode": mode, "kb_name": kb_name}
        )

    async def import_tree(
        self,
        path: str | Path,
        *,
        tree_name: str = "tag_tree",
        tree_description: str = "",
        sheet_name: str | int = 0,
    ) -> TreeTask:
        """A tree from a spreadsheet (.xlsx/.xls): each row a path from its first cell to its last."""
        source = Path(path)
        form = {"tree_name": tree_name, "tree_description": tree_description, "sheet_name": str(sheet_name)}
        content = await asyncio.to_thread(source.read_bytes)
        files = {"file": (source.name, content)}
        return await self._post("gen/tag-tree/submit", TreeTask, data=form, files=files)

    async def tree_status(self, task_id: str) -> TreeTask:
        return await self._get(f"gen/tag-tree/status/{task_id}", TreeTask)


def _table_body(
    question: str,
    kb_name: str | None,
    sql_question: str | None,
    top_k: int,
    threshold: float,
    max_workers: int,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "question": question,
        "top_k": top_k,
        "threshold": threshold,
        "max_workers": max_workers,
    }
    if kb_name is not None:
        body["kb_name"] = kb_name
    if sql_question is not None:
        body["sql_question"] = sql_question
    return body
