"""mem `kb` workspaces: each is a graph of its own (inserts, jobs, every query mode, streamed too, and
communities), the default workspace is the graph of earlier releases, and a bad name is a 400."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import text

from lore_common.stores.migrate import upgrade
from lore_common.stores.sql import create_engine
from lore_common.testing.asgi import AppClient
from lore_common.testing.flows import INSERT, QUERY
from lore_core.settings import DatabaseConfig
from lore_mem.database import SCHEMA
from lore_mem.kb.store import collection_name

SECRETS = {"team-a": "Quorvalith", "team-b": "Zembrathine"}
MODES = ("naive", "local", "global", "hybrid")


def _fact(secret: str) -> str:
    # The same lighthouse in both workspaces: each keeps its own entity and descriptions.
    return f"Captain {secret} Varga has kept the Zanzibar lighthouse burning since 1923."


async def _insert(mem: AppClient, workspace: str) -> str:
    r = await mem.post(INSERT, params={"workspace": workspace}, data={"query": _fact(SECRETS[workspace])})
    assert r.status_code == 202, r.text
    job_id = str(r.json()["id"])
    async with asyncio.timeout(20):
        while (job := (await mem.get(f"{INSERT}/{job_id}", params={"workspace": workspace})).json())[
            "status"
        ] not in ("done", "failed"):
            await asyncio.sleep(0.02)
    assert job["status"] == "done" and job["workspace"] == workspace, job
    return job_id


async def _communities(mem: AppClient, workspace: str) -> None:
    store = await mem.app.state.kb.store.in_workspace(workspace)
    async with asyncio.timeout(10):
        while not (await store.counts())["communities"]:
            await asyncio.sleep(0.02)


async def _answers(mem: AppClient, workspace: str | None) -> list[str]:
    """Every mode's answer, plain and streamed, as text."""
    params = {"workspace": workspace} if workspace else {}
    found = []
    for mode in MODES:
        for stream in (False, True):
            r = await mem.post(
                QUERY,
                params=params,
                json={
                    "query": "Who keeps the Zanzibar lighthouse burning?",
                    "mode": mode,
                    "stream": stream,
                },
            )
            assert r.status_code == 200, r.text
            found.append(r.text)
    return found


async def test_each_workspace_reads_and_writes_only_its_own_graph(mem: AppClient) -> None:
    jobs = {workspace: await _insert(mem, workspace) for workspace in SECRETS}
    for workspace in SECRETS:
        await _communities(mem, workspace)
    for workspace, secret in SECRETS.items():
        other = next(s for w, s in SECRETS.items() if w != workspace)
        answers = await _answers(mem, workspace)
        assert all(other not in answer for answer in answers), workspace
        assert all(secret in answer for answer in answers), workspace
        # Another workspace's insert job is not told of, nor is it in the default workspace.
        other_job = next(j for w, j in jobs.items() if w != workspace)
        r = await mem.get(f"{INSERT}/{other_job}", params={"workspace": workspace})
        assert r.status_code == 404
    assert (await mem.get(f"{INSERT}/{jobs['team-a']}")).status_code == 404
    for answer in await _answers(mem, None):  # the default workspace holds neither
        assert not any(secret in answer for secret in SECRETS.values())
    # Asking a workspace nothing was inserted into finds nothing, and makes no vector collections.
    for answer in await _answers(mem, "team-c"):
        assert not any(secret in answer for secret in SECRETS.values())
    assert await mem.app.state.kb.store.vectors.dimension(collection_name("kb_chunks", "team-c")) is None
    assert (await mem.app.state.kb.store.counts())["chunks"] == 0


async def test_a_workspace_name_with_control_characters_is_refused(mem: AppClient) -> None:
    r = await mem.post(QUERY, params={"workspace": "a\nb"}, json={"query": "who?"})
    assert r.status_code == 400
    r = await mem.post(INSERT, params={"workspace": ""}, data={"query": "text"})
    assert r.status_code == 400


async def test_the_graph_of_earlier_releases_is_the_default_workspace(tmp_path: Path) -> None:
    engine = create_engine(DatabaseConfig(), tmp_path, "mem")
    try:
        await upgrade(engine, SCHEMA, "0003")
        async with engine.begin() as connection:
            await connection.execute(
                text("INSERT INTO lore_kb_entities VALUES ('vault', 'Vault', 'place', 'vault', '[]', 'j1')")
            )
            await connection.execute(text("INSERT INTO lore_kb_chunks VALUES ('j1:0', 'j1', 'The vault.')"))
            await connection.execute(text("INSERT INTO lore_kb_counters VALUES ('changes', 1)"))
        await upgrade(engine, SCHEMA)
        async with engine.begin() as connection:
            rows: list[Any] = list(
                await connection.execute(text("SELECT workspace, key FROM lore_kb_entities"))
            )
            assert [tuple(r) for r in rows] == [("default", "vault")]
            # The same entity may now be known to another workspace as well.
            await connection.execute(
                text(
                    "INSERT INTO lore_kb_entities (workspace, key, name, type, name_form, descriptions, "
                    "job_id) VALUES ('team-a', 'vault', 'Vault', 'place', 'vault', '[]', 'j2')"
                )
            )
            chunks = list(await connection.execute(text("SELECT workspace FROM lore_kb_chunks")))
            assert [tuple(r) for r in chunks] == [("default",)]
    finally:
        await engine.dispose()


async def test_naming_the_default_workspace_is_the_same_as_naming_none(mem: AppClient) -> None:
    r = await mem.post(INSERT, data={"query": _fact("Ostrevane")})
    job_id = r.json()["id"]
    r = await mem.get(f"{INSERT}/{job_id}", params={"workspace": "default"})
    assert r.status_code == 200 and r.json()["workspace"] == "default"


async def test_inserts_arriving_together_in_a_new_workspace_all_land_there(mem: AppClient) -> None:
    async def one(n: int) -> str:
        text = f"Lamp {n} of the Brightwater pier is lit by Keeper Oonagh{n}."
        r = await mem.post(INSERT, params={"workspace": "team-new"}, data={"query": text})
        assert r.status_code == 202, r.text
        return str(r.json()["id"])

    ids = await asyncio.gather(*(one(n) for n in range(4)))
    async with asyncio.timeout(20):
        for job_id in ids:
            params = {"workspace": "team-new"}
            while (job := (await mem.get(f"{INSERT}/{job_id}", params=params)).json())["status"] not in (
                "done",
                "failed",
            ):
                await asyncio.sleep(0.02)
            assert job["status"] == "done", job
    store = await mem.app.state.kb.store.in_workspace("team-new")
    assert (await store.counts())["chunks"] == 4
