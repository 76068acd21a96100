"""The offline model's answer to the tag-tree prompt: one node per entity type (its English label)
under the topic, the KB's entities as leaves; with no entities it says it cannot invent a taxonomy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lore_common.entities import type_label
from lore_common.providers.offline import OfflineSkill


def tag_tree(topic: str, entities: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One node per entity type under the topic, the entities as leaves. Without entities (no KB) the
    offline model cannot invent a taxonomy, and the single root node says so."""
    if not entities:
        return {
            "description": "offline model: no language model is configured, so no taxonomy was generated",
            "nodes": [{"node_name": topic, "description": "configure gen.llm to generate sub-topics"}],
        }
    groups: dict[str, list[dict[str, Any]]] = {}
    for entity in entities:
        # Categories are what a person reads: the English label, not the contract's type value.
        groups.setdefault(type_label(str(entity.get("type") or "entity")), []).append(entity)
    children = [
        {
            "node_name": kind,
            "description": f"{len(members)} entities of type {kind}",
            "children": [
                {"node_name": str(m["name"]), "description": str(m.get("description") or "")[:300]}
                for m in members
            ],
        }
        for kind, members in groups.items()
    ]
    return {
        "description": f"entities of the knowledge base grouped by type (offline model) for {topic}",
        "nodes": [{"node_name": topic, "description": "", "children": children}],
    }


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "tag_tree": lambda inputs: tag_tree(str(inputs.get("topic", "")), list(inputs.get("entities") or [])),
}
