"""Tag trees: generated from a topic (pure_llm, or grounded in a docdb KB's entities) or from a sheet.

KB mode gives the model the KB's most connected entities (docdb's overview) and the passages retrieved
for the topic, and asks it to name nodes after those entities; the result reports how many nodes carry
a KB entity's name. The offline model takes the entities of those passages only (tag_trees.offline).
`category` is always computed here from the ancestors, and the tree is bounded in depth and size so
that a runaway reply cannot exhaust memory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest, complete_structured
from lore_core.errors import BadRequest
from lore_core.naming import check_name
from lore_gen.docdb.client import DocdbClient
from lore_gen.tag_trees.models import GenerateRequest, NodeReply, TreeReply
from lore_gen.tag_trees.spreadsheet import read_paths
from lore_gen.tasks.models import Checkpoint, Report, TaskRecord
from lore_gen.tasks.service import TaskService

MAX_DEPTH = 12
MAX_NODES = 20_000
KB_TOP_NODES = 50
KB_SAMPLE_RELATIONS = 30
KB_PASSAGES = 8

TREE_SYSTEM = (
    "You build a hierarchical tag tree (a taxonomy) for a topic. Reply with one JSON object "
    '{"description": str, "nodes": [{"node_name": str, "description": str, "children": [...]}]}, '
    "children nested the same way, 2 to 4 levels deep. When knowledge-base entities are given, build the "
    "tree from them and use their exact names for the nodes they match."
)


def build_nodes(
    replies: Sequence[NodeReply], ancestors: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], int]:
    """The nodes as the status reports them (`category` = ancestors joined by ` -> `, see docs/gen.md)
    and how many there are in all."""
    nodes: list[dict[str, Any]] = []
    count = 0
    for reply in replies:
        name = reply.node_name.strip()
        if not name or count >= MAX_NODES:
            continue
        children, below = (
            build_nodes(reply.children, (*ancestors, name)) if len(ancestors) + 1 < MAX_DEPTH else ([], 0)
        )
        nodes.append(
            {
                "node_name": name,
                "category": " -> ".join(ancestors),
                "description": reply.description.strip(),
                "children": children,
            }
        )
        count += 1 + below
    return nodes, count


def nodes_from_paths(paths: Sequence[Sequence[str]]) -> list[NodeReply]:
    """Merge row paths into a tree, keeping the order in which names first appear."""
    roots: dict[str, tuple[NodeReply, dict[str, Any]]] = {}
    for path in paths:
        level = roots
        for name in path[:MAX_DEPTH]:
            if name not in level:
                level[name] = (NodeReply(node_name=name, children=[]), {})
            level = level[name][1]

    def materialise(level: dict[str, tuple[NodeReply, dict[str, Any]]]) -> list[NodeReply]:
        out = []
        for node, below in level.values():
            node.children = materialise(below)
            out.append(node)
        return out

    return materialise(roots)


def _names(nodes: Sequence[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for node in nodes:
        found.append(node["node_name"])
        found.extend(_names(node["children"]))
    return found


class TagTreeService:
    """Generates tag trees as persisted tasks, and builds them from spreadsheets in the request."""

    def __init__(self, *, llm: ChatModel, docdb: DocdbClient, tasks: TaskService) -> None:
        self.llm = llm
        self.docdb = docdb
        self.tasks = tasks

    async def generate(self, request: GenerateRequest, caller: str | None = None) -> TaskRecord:
        topic = request.topic.strip()
        if not topic:
            raise BadRequest("topic is empty: name the subject of the tree")
        kb_name = None
        if request.mode == "kb":
            if not request.kb_name:
                raise BadRequest("kb_name is required when mode is 'kb' (or use mode 'pure_llm')")
            kb_name = check_name("knowledge base", request.kb_name)
            await self.docdb.require_kb(kb_name)

        async def body(report: Report, _checkpoint: Checkpoint) -> dict[str, Any]:
            return await self._generate(topic, kb_name, report)  # not resumed: a single model call

        return await self.tasks.submit(
            "tag_tree", body, {"topic": topic, "mode": request.mode, "kb_name": kb_name}, caller=caller
        )

    async def _generate(self, topic: str, kb_name: str | None, report: Report) -> dict[str, Any]:
        await report(1, "context")
        entities: list[dict[str, Any]] = []
        relations: list[dict[str, Any]] = []
        passages: list[str] = []
        if kb_name:
            overview, found = await asyncio.gather(
                self.docdb.overview(kb_name, KB_TOP_NODES, KB_SAMPLE_RELATIONS),
                self.docdb.retrieve(kb_name, topic, KB_PASSAGES, 0.0),
            )
            entities = [
                {"name": e.get("name"), "type": e.get("type"), "description": e.get("description")}
                for e in overview.get("top_entities", [])
                if e.get("name")
            ]
            relations = list(overview.get("sample_relations", []))
            passages = [p.content for p in found]
        await report(2, "tree")
        context = ""
        if kb_name:
            context = (
                f"\n\nKnowledge-base entities:\n{json.dumps(entities, ensure_ascii=False)}"
                f"\n\nRelations:\n{json.dumps(relations, ensure_ascii=False)}"
                "\n\nPassages:\n" + "\n".join(f"- {p[:600]}" for p in passages)
            )
        reply = await complete_structured(
            self.llm,
            ChatRequest(
                messages=[
                    ChatMessage("system", TREE_SYSTEM),
                    ChatMessage("user", f"Topic: {topic}{context}"),
                ],
                task="tag_tree",
                inputs={"topic": topic, "entities": entities, "passages": passages},
            ),
            TreeReply,
        )
        nodes, count = build_nodes(reply.nodes)
        result: dict[str, Any] = {
            "tree_name": topic,
            "tree_description": reply.description.strip() or f"tag tree for {topic}",
            "node_count": count,
            "nodes": nodes,
        }
        if kb_name:
            known = {str(e["name"]).lower() for e in entities}
            result["kb_name"] = kb_name
            result["kb_entity_nodes"] = sum(1 for name in _names(nodes) if name.lower() in known)
        return result

    async def from_spreadsheet(
        self,
        filename: str,
        content: bytes,
        tree_name: str,
        tree_description: str,
        sheet_name: str,
        caller: str | None = None,
    ) -> TaskRecord:
        paths = await asyncio.to_thread(read_paths, filename, content, sheet_name.strip() or "0")
        if not paths:
            raise BadRequest(
                f"sheet {sheet_name!r} of {filename!r} has no rows with a value in the first column"
            )
        nodes, count = build_nodes(nodes_from_paths(paths))
        result = {
            "tree_name": tree_name,
            "tree_description": tree_description,
            "node_count": count,
            "nodes": nodes,
        }
        request = {"filename": filename, "tree_name": tree_name, "sheet_name": sheet_name}
        return await self.tasks.complete_now("tag_tree", result, request, caller)

    async def status(self, task_id: str, caller: str | None = None) -> TaskRecord:
        return await self.tasks.get("tag_tree", task_id, caller)
