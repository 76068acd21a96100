"""gen table tasks whose process stopped run again at the next start (`gen.resume_interrupted`, on by
default) from their last stored step, asking the model nothing it had answered and stored; one
interrupted too often, or whose request cannot be read again, fails saying why."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import httpx

from lore_common.testing.asgi import wait_done
from lore_common.testing.replies import prompt_of, reply
from lore_gen.tasks.models import TaskRecord

SUBMIT = "/api/v1/gen/pipeline/submit"
STATUS = "/api/v1/gen/pipeline/status"
TREE_STATUS = "/api/v1/gen/tag-tree/status"
PORTS = [f"Port{i}" for i in range(8)]
QUESTION = "How many ships does each harbour berth: " + ", ".join(PORTS) + "?"


class Model:
    """The pipeline's three prompts; `hang_at` fills in, the model stops answering (the process is
    stopped while that call is under way). Records each call's prompt by kind."""

    def __init__(self, hang_at: int | None = None, hang_sql: bool = False) -> None:
        self.hang_at = hang_at
        self.hang_sql = hang_sql
        self.hang = asyncio.Event()
        self.asked: dict[str, list[str]] = {"design": [], "fill": [], "sql": []}

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        system, user = prompt_of(request)
        if system.startswith("You design"):
            self.asked["design"].append(user)
            return reply({"title": "Harbour berths", "entities": PORTS, "columns": ["Harbour", "Berths"]})
        if system.startswith("You fill"):
            self.asked["fill"].append(user)
            if self.hang_at is not None and len(self.asked["fill"]) >= self.hang_at:
                await self.hang.wait()
            entity = re.search(r"Entity: (\w+)", user)
            assert entity is not None
            return reply({"row": {"harbour": entity.group(1), "berths": 10 + int(entity.group(1)[4:])}})
        if system.startswith("You write"):
            self.asked["sql"].append(user)
            if self.hang_sql:
                await self.hang.wait()
            table = re.search(r'Table: "([^"]+)"', user)
            assert table is not None
            return reply({"sql": f'SELECT SUM("berths") AS total FROM "{table.group(1)}"'})
        raise AssertionError(f"unexpected prompt: {system[:80]}")


def table_of(status: dict[str, Any]) -> dict[str, Any]:
    """What the user reads of a completed table task, its usage aside."""
    result = dict(status["result"])
    result.pop("usage")
    return result


async def test_a_table_task_cut_off_mid_rows_resumes_at_restart_and_pays_for_no_call_twice(
    gen_factory: Any, tmp_path: Path
) -> None:
    model = Model(hang_at=4)
    body = {"question": QUESTION, "max_workers": 1}
    async with gen_factory(llm=model) as client:
        task_id = (await client.post(SUBMIT, json=body)).json()["task_id"]
        deadline = time.monotonic() + 20
        while len(model.asked["fill"]) < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert len(model.asked["fill"]) == 4
        running = (await client.get(f"{STATUS}/{task_id}")).json()
        assert running["status"] == "running" and running["progress"]["done"] == 3, running
    model.hang.set()
    model.hang_at = None
    async with gen_factory(llm=model) as client:  # the restart: the task runs again
        resumed = await wait_done(client, f"{STATUS}/{task_id}")
    assert resumed["status"] == "completed", resumed
    assert resumed["result"]["usage"]["cache_hits"] == 3  # the rows answered before the stop
    # The design was asked once; each row answered before the stop was not asked again, the one in
    # flight was; the SQL once.
    assert len(model.asked["design"]) == 1 and len(model.asked["sql"]) == 1
    fills = model.asked["fill"]
    assert len(fills) == len(PORTS) + 1 and len(set(fills)) == len(PORTS)
    assert fills[3] == fills[4]
    assert resumed["result"]["query_results"] == [{"total": sum(10 + i for i in range(8))}]

    # The same question run without a stop (another data dir, so no cache) gives the same table.
    whole = Model()
    async with gen_factory(llm=whole, LORE__GEN__SERVER__DATA_DIR=str(tmp_path / "uncut")) as client:
        uncut = await wait_done(
            client, f"{STATUS}/{(await client.post(SUBMIT, json=body)).json()['task_id']}"
        )
    assert uncut["status"] == "completed", uncut
    expected, got = table_of(uncut), table_of(resumed)
    assert expected["table_name"] != got["table_name"]  # each task builds its own table
    assert got["sql"] == expected["sql"].replace(expected["table_name"], got["table_name"])
    for result in (expected, got):
        del result["table_name"], result["sql"]
    assert got == expected


async def test_a_task_cut_off_after_its_table_was_built_builds_it_again_asking_only_for_the_sql(
    gen_factory: Any,
) -> None:
    model = Model(hang_sql=True)
    async with gen_factory(llm=model) as client:
        task_id = (await client.post(SUBMIT, json={"question": QUESTION})).json()["task_id"]
        deadline = time.monotonic() + 20
        while not model.asked["sql"] and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert (await client.get(f"{STATUS}/{task_id}")).json()["step_name"] == "sql"
    model.hang.set()
    model.hang_sql = False
    async with gen_factory(llm=model) as client:
        resumed = await wait_done(client, f"{STATUS}/{task_id}")
    assert resumed["status"] == "completed", resumed
    assert resumed["result"]["usage"]["cache_hits"] == len(PORTS)
    assert len(model.asked["design"]) == 1 and len(model.asked["fill"]) == len(PORTS)
    assert len(model.asked["sql"]) == 2  # the one in flight at the stop, asked again
    # The table left by the run that stopped was replaced, not added to: each row once.
    assert resumed["result"]["query_results"] == [{"total": sum(10 + i for i in range(8))}]


async def test_a_task_interrupted_too_often_or_unreadable_fails_saying_why_and_none_stays_running(
    gen_factory: Any,
) -> None:
    request = {"question": QUESTION, "max_workers": 1, "kb_name": None}
    async with gen_factory() as client:
        tasks = client.app.state.tables.tasks
        for record in (
            TaskRecord(task_id="loops", kind="table", status="running", request=request, resumed=3),
            TaskRecord(task_id="unreadable", kind="table", status="running", request={"top_k": 0}),
            TaskRecord(task_id="tree", kind="tag_tree", status="running", request={"topic": "t"}),
        ):
            await tasks.store.save(record, tasks.owner)
    async with gen_factory() as client:
        loops = (await client.get(f"{STATUS}/loops")).json()
        assert loops["status"] == "failed" and "interrupted 4 times" in loops["error"], loops
        unreadable = (await client.get(f"{STATUS}/unreadable")).json()
        assert unreadable["status"] == "failed", unreadable
        assert "interrupted" in unreadable["error"] and "cannot be read again" in unreadable["error"]
        tree = (await client.get(f"{TREE_STATUS}/tree")).json()
        assert tree["status"] == "failed" and tree["error"].startswith("interrupted"), tree
        assert await tasks_left_running(client) == []


async def tasks_left_running(client: Any) -> list[str]:
    store = client.app.state.tables.tasks.store
    return [r.task_id for r in await store.list_jobs(statuses=("pending", "running"))]
