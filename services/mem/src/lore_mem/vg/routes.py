"""Routes of contract 4.11 (`vg` memory). Bodies follow mem0's, which users of this kind of API know."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post, put
from litestar.params import FromPath, FromQuery, JSONBody

from lore_mem.vg.models import AddRequest, Scope, SearchRequest, UpdateRequest
from lore_mem.vg.service import VgMemory


def vg_of(request: Request[Any, Any, Any]) -> VgMemory:
    service: VgMemory = request.app.state.vg
    return service


class VgController(Controller):
    path = "/api/v1/mem/vg"
    tags = ["vg memory"]

    @post("/add", status_code=200, summary="Extract facts from messages; ADD, UPDATE or DELETE memories")
    async def add(self, request: Request[Any, Any, Any], data: JSONBody[AddRequest]) -> dict[str, Any]:
        return await vg_of(request).add(data)

    @post("/search", status_code=200, summary="Memories of a scope by semantic similarity")
    async def search(self, request: Request[Any, Any, Any], data: JSONBody[SearchRequest]) -> dict[str, Any]:
        scope = Scope(user_id=data.user_id, agent_id=data.agent_id, run_id=data.run_id)
        return await vg_of(request).search(data.query, scope, data.limit, data.threshold)

    @get("/", summary="Memories of a scope: `{results: [...]}`")
    async def list_memories(
        self,
        request: Request[Any, Any, Any],
        user_id: FromQuery[str | None] = None,
        agent_id: FromQuery[str | None] = None,
        run_id: FromQuery[str | None] = None,
        limit: FromQuery[int] = 100,
    ) -> dict[str, Any]:
        return await vg_of(request).list_scope(
            Scope(user_id=user_id, agent_id=agent_id, run_id=run_id), limit
        )

    @delete("/", status_code=200, summary="Delete every memory of a scope (each recorded in history)")
    async def delete_scope(
        self,
        request: Request[Any, Any, Any],
        user_id: FromQuery[str | None] = None,
        agent_id: FromQuery[str | None] = None,
        run_id: FromQuery[str | None] = None,
    ) -> dict[str, Any]:
        return await vg_of(request).delete_all(Scope(user_id=user_id, agent_id=agent_id, run_id=run_id))

    @get("/{memory_id:str}", summary="One memory")
    async def get_memory(self, request: Request[Any, Any, Any], memory_id: FromPath[str]) -> dict[str, Any]:
        return await vg_of(request).get(memory_id)

    @get("/{memory_id:str}/history", summary="Every change of one memory")
    async def history(
        self, request: Request[Any, Any, Any], memory_id: FromPath[str]
    ) -> list[dict[str, Any]]:
        return await vg_of(request).history_of(memory_id)

    @put("/{memory_id:str}", summary="Replace the text of a memory (re-embedded; recorded as UPDATE)")
    async def update(
        self, request: Request[Any, Any, Any], memory_id: FromPath[str], data: JSONBody[UpdateRequest]
    ) -> dict[str, Any]:
        return await vg_of(request).update(memory_id, data.data)

    @delete("/{memory_id:str}", status_code=200, summary="Delete one memory (recorded as DELETE)")
    async def remove(self, request: Request[Any, Any, Any], memory_id: FromPath[str]) -> dict[str, Any]:
        return await vg_of(request).delete(memory_id)
