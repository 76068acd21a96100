"""A gen task started for a caller (the gateway's `x-lore-caller`, one key's name) is that caller's: a
call naming another caller is answered 404, as for a task that does not exist, on every replica (the
caller is stored with the task); a call naming none sees every task."""

from __future__ import annotations

from typing import Any

from lore_common.testing.asgi import AppClient
from lore_core.internal import CALLER_HEADER

from .test_tag_trees import ROWS, SUBMIT, XLSX, xlsx

GENERATE = "/api/v1/gen/tag-tree/generate"
TREE_STATUS = "/api/v1/gen/tag-tree/status"
A, B = {CALLER_HEADER: "team-a"}, {CALLER_HEADER: "team-b"}


async def _status(client: AppClient, task_id: str, headers: dict[str, str] | None = None) -> int:
    return (await client.get(f"{TREE_STATUS}/{task_id}", headers=headers or {})).status_code


async def test_a_callers_task_is_not_found_by_another_caller(gen_factory: Any) -> None:
    async with gen_factory() as client:
        sheet = await client.post(SUBMIT, files={"file": ("t.xlsx", xlsx(ROWS), XLSX)}, headers=A)
        generated = await client.post(GENERATE, json={"topic": "vaults", "mode": "pure_llm"}, headers=A)
        unnamed = await client.post(SUBMIT, files={"file": ("t.xlsx", xlsx(ROWS), XLSX)})
        tasks = [sheet.json()["task_id"], generated.json()["task_id"]]
        for task_id in tasks:
            assert await _status(client, task_id, A) == 200
            assert await _status(client, task_id, B) == 404
            assert await _status(client, task_id) == 200  # a call naming no caller: an open key
        body = (await client.get(f"{TREE_STATUS}/{tasks[0]}", headers=B)).json()
        assert "does not exist" in body["message"] and "result" not in body
        # A task started without a caller is no limited key's.
        assert await _status(client, unnamed.json()["task_id"], A) == 404
    async with gen_factory() as restarted:  # stored with the task: another replica, or a restart, agrees
        assert await _status(restarted, tasks[0], A) == 200
        assert await _status(restarted, tasks[0], B) == 404
