"""The fake model's answers to LightRAG's prompts (bench/lightrag_compare.py): LightRAG parses them in its
own formats, so a reply it cannot parse would make the side-by-side bench measure nothing."""

from __future__ import annotations

import json

from lore_common.testing.responders import COMPLETE, TUPLE, lightrag

TEXT = "Ada Park moved to Lisbon in 2001 to lead project KX00001 at Helix Labs."


def chat(system: str, user: str) -> dict[str, object]:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def test_extraction_rows_use_lightrags_delimiters_and_name_the_texts_entities() -> None:
    user = f"---Task---\nExtract entities.\n---Input Text---\n```\n{TEXT}\n```\n\n---Output---\n"
    reply = lightrag(chat("---Role---\nYou are a Knowledge Graph Specialist ...", user))
    rows = reply.splitlines()
    assert rows[-1] == COMPLETE
    entities = [r.split(TUPLE) for r in rows if r.startswith("entity")]
    relations = [r.split(TUPLE) for r in rows if r.startswith("relation")]
    assert all(len(parts) == 4 for parts in entities)  # entity, name, type, description
    assert all(len(parts) == 5 for parts in relations)  # relation, source, target, keywords, description
    assert {"Ada Park", "Lisbon", "Helix Labs"} <= {parts[1] for parts in entities}


def test_the_gleaning_pass_adds_nothing_and_keywords_are_json() -> None:
    assert lightrag(chat("Knowledge Graph Specialist", "Based on the last extraction task, ...")) == COMPLETE
    reply = json.loads(
        lightrag(chat("", "You are an expert keyword extractor...\nUser Query: Where is Ada Park?\n"))
    )
    assert set(reply) == {"high_level_keywords", "low_level_keywords"}
    assert "Ada Park" in reply["low_level_keywords"]


def test_prompts_of_lore_go_to_lores_responders() -> None:
    docdb = json.loads(lightrag(chat("You extract entities and relations from a text ...", TEXT)))
    assert "Lisbon" in {e["name"] for e in docdb["entities"]}
