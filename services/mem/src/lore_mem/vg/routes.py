"""Routes of `vg` fact memory (see docs/mem.md). Bodies follow mem0's, which users of this kind of API
know."""

from __future__ import annotations

from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from lore_core.bounds import LimitParam
from lore_core.web import from_state
from lore_mem.vg.models import (
    Added,
    AddRequest,
    Deleted,
    Found,
    HistoryEntry,
    Listed,
    MemoryItem,
    Scope,
    ScopeDeleted,
    SearchRequest,
    Updated,
    UpdateRequest,
)
from lore_mem.vg.service import VgService


class VgController(Controller):
    path = "/api/v1/mem/vg"
    tags = ["vg memory"]
    dependencies = {"vg": from_state("vg")}

    @post("/add", status_code=200, summary="Extract facts from messages; ADD, UPDATE or DELETE memories")
    async def add(self, vg: NamedDependency[VgService], data: JSONBody[AddRequest]) -> Added:
        return await vg.add(data)

    @post("/search", status_code=200, summary="Memories of a scope by semantic similarity")
    async def search(self, vg: NamedDependency[VgService], data: JSONBody[SearchRequest]) -> Found:
        scope = Scope(user_id=data.user_id, agent_id=data.agent_id, run_id=data.run_id)
        return await vg.search(data.query, scope, data.limit, data.threshold)

    @get("/", summary="Memories of a scope: `{results: [...]}`")
    async def list_memories(
        self,
        vg: NamedDependency[VgService],
        user_id: FromQuery[str | None] = None,
        agent_id: FromQuery[str | None] = None,
        run_id: FromQuery[str | None] = None,
        limit: LimitParam = 100,
    ) -> Listed:
        return await vg.list_scope(Scope(user_id=user_id, agent_id=agent_id, run_id=run_id), limit)

    @delete("/", status_code=200, summary="Delete every memory of a scope (each recorded in history)")
    async def delete_scope(
        self,
        vg: NamedDependency[VgService],
        user_id: FromQuery[str | None] = None,
        agent_id: FromQuery[str | None] = None,
        run_id: FromQuery[str | None] = None,
    ) -> ScopeDeleted:
        return await vg.delete_all(Scope(user_id=user_id, agent_id=agent_id, run_id=run_id))

    @get("/{memory_id:str}", summary="One memory")
    async def get_memory(self, vg: NamedDependency[VgService], memory_id: FromPath[str]) -> MemoryItem:
        return await vg.get(memory_id)

    @get("/{memory_id:str}/history", summary="Every change of one memory")
    async def history(self, vg: NamedDependency[VgService], memory_id: FromPath[str]) -> list[HistoryEntry]:
        return await vg.history_of(memory_id)

    @put("/{memory_id:str}", summary="Replace the text of a memory (re-embedded; recorded as UPDATE)")
    async def update(
        self, vg: NamedDependency[VgService], memory_id: FromPath[str], data: JSONBody[UpdateRequest]
    ) -> Updated:
        return await vg.update(memory_id, data.data)

    @delete("/{memory_id:str}", status_code=200, summary="Delete one memory (recorded as DELETE)")
    async def remove(self, vg: NamedDependency[VgService], memory_id: FromPath[str]) -> Deleted:
        return await vg.delete(memory_id)
