"""A parse whose docdb process died runs again at the next start (`docdb.resume_interrupted`, on by
default), but not for ever: one interrupted more than `docdb.resume_attempts` times fails."""

from __future__ import annotations

from typing import Any

from lore_common.testing.flows import CURIE, KB, TASKS, parse, upload, wait_task
from lore_docdb.parse.models import Task


async def test_a_parse_left_running_runs_again_at_restart_unless_it_was_interrupted_too_often(
    docdb_factory: Any,
) -> None:
    async with docdb_factory() as client:
        await upload(client, "d1", {"a.txt": CURIE.encode()})
        await client.post(KB, json={"name": "kb"})
        [first] = await parse(client, "kb", ["d1"])
        assert (await wait_task(client, first))["status"] == "completed"
        await client.app.state.parse.stop()  # no worker: what is added below stays as written
        tasks = client.app.state.parse.store
        # Two tasks a killed process left running: one for the first time, one for the fourth.
        await tasks.add(Task(task_id="t-again", status="running", kb_name="kb", dataset="d1", stage="graph"))
        await tasks.add(Task(task_id="t-loops", status="running", kb_name="kb", dataset="d1", resumed=3))
    async with docdb_factory() as client:
        again = await wait_task(client, "t-again")
        assert again["status"] == "completed" and again["error"] is None, again
        loops = (await client.get(f"{TASKS}/t-loops")).json()
        assert loops["status"] == "failed" and "interrupted 4 times" in loops["error"], loops
    async with docdb_factory(LORE__DOCDB__RESUME_INTERRUPTED="false") as client:
        await client.app.state.parse.stop()
        await client.app.state.parse.store.add(
            Task(task_id="t-off", status="running", kb_name="kb", dataset="d1")
        )
    async with docdb_factory(LORE__DOCDB__RESUME_INTERRUPTED="false") as client:
        off = (await client.get(f"{TASKS}/t-off")).json()
        assert off["status"] == "failed" and off["error"].startswith("interrupted:"), off
