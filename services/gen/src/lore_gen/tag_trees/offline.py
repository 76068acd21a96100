"""The offline model's answer to the tag-tree prompt: the entities of the passages retrieved for the
topic (of their sentences that share a word with the topic, when some do), one node per entity type
(its English label) under the topic, each entity a leaf described by one line of the sentence that
names it. The KB's most connected entities are no taxonomy of a topic: a KB about football and IBM
answered "Football career of Iwan Roberts" with IBM, Ohio and Asia. With no passage it says it cannot
invent a taxonomy."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lore_common.entities import TYPE_OF_KIND, find_entities, type_label
from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import keywords, sentences

MAX_LEAVES = 40
LINE = 120  # one line of a description
SENTENCE = 300  # longer units are mostly infoboxes and tables read as one sentence
# Dates, code names and terms are no branch of a topic's taxonomy.
_LEAF_KINDS = frozenset({"person", "organisation", "place", "product", "name", "title", "event"})
_REFERENCE = re.compile(r"https?://|\bwww\.|\bRetrieved\b|\bISBN\b")


def _line(sentence: str) -> str:
    text = " ".join(sentence.split())
    return text if len(text) <= LINE else text[: LINE - 1].rsplit(" ", 1)[0] + "…"


def tag_tree(topic: str, entities: Sequence[dict[str, Any]], passages: Sequence[str] = ()) -> dict[str, Any]:
    """One node per entity type under the topic, the topic's entities as leaves."""
    wanted = set(keywords(topic))
    units = [s for p in passages for s in sentences(p) if not _REFERENCE.search(s)]
    on_topic = [s for s in units if wanted & set(keywords(s))] or units
    found, _, _ = find_entities("\n\n".join(on_topic)) if on_topic else ({}, None, None)
    counts = Counter({key: e.mentions for key, e in found.items() if e.kind in _LEAF_KINDS})
    if not counts:
        return {
            "description": "offline model: no language model is configured and no passage names an "
            "entity of the topic, so no taxonomy was generated",
            "nodes": [{"node_name": topic, "description": "configure gen.llm to generate sub-topics"}],
        }
    kb_types = {str(e.get("name", "")).lower(): str(e.get("type") or "") for e in entities}
    groups: dict[str, list[dict[str, str]]] = {}
    for key, _ in counts.most_common(MAX_LEAVES):
        entity = found[key]
        # The KB's type for a name it knows, so that one name keeps one type.
        kind = kb_types.get(key) or TYPE_OF_KIND.get(entity.kind, "")
        # The first sentence of the topic that names it and reads as one (not an infobox run together).
        said = next((u for u in on_topic if len(u) <= SENTENCE and entity.name in u), entity.sentence)
        leaf = {"node_name": entity.name, "description": _line(said)}
        groups.setdefault(type_label(kind or "entity"), []).append(leaf)
    children = [
        {"node_name": kind, "description": f"{len(members)} entities of type {kind}", "children": members}
        for kind, members in groups.items()
    ]
    return {
        "description": f"entities of the passages retrieved for {topic}, grouped by type (offline model)",
        "nodes": [{"node_name": topic, "description": "", "children": children}],
    }


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "tag_tree": lambda inputs: tag_tree(
        str(inputs.get("topic", "")), list(inputs.get("entities") or []), strings(inputs.get("passages"))
    ),
}
