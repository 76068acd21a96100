"""Scripted behaviour for the fake model server (`--responder lore_common.testing.responders:NAME`)."""

from __future__ import annotations

import json
from typing import Any

from lore_common.providers.offline import extract_entities


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def entities(body: dict[str, Any]) -> str:
    """Realistic entity-extraction replies: the offline extractor's findings for the user's text."""
    return json.dumps(extract_entities(_last_user_text(body)), ensure_ascii=False)


def memory(body: dict[str, Any]) -> str:
    """Answers both mem0's and Lore's memory prompts, each in the format it expects: the last user text
    (the conversation's newest line) is the one fact to remember, and it is always new."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    user = _last_user_text(body)
    if "New facts:" in user and "Existing memories:" in user:  # Lore's ADD/UPDATE/DELETE decision
        facts = json.loads(user.split("New facts:", 1)[1].strip() or "[]")
        return json.dumps(
            {"memory": [{"id": str(i), "text": f, "event": "ADD"} for i, f in enumerate(facts)]}
        )
    if "facts worth remembering" in system:  # Lore's fact extraction
        line = user.strip().splitlines()[-1].split(":", 1)[-1].strip()
        return json.dumps({"facts": [line] if line else []})
    # mem0's single additive extraction call: {"memory": [{"text": ...}]}
    line = _newest_line(user)
    return json.dumps({"memory": [{"text": line}] if line else []})


def _newest_line(prompt: str) -> str:
    for raw in reversed(prompt.strip().splitlines()):
        line = raw.strip()
        if line.lower().startswith("user:"):
            return line.split(":", 1)[1].strip()
    return prompt.strip().splitlines()[-1].strip() if prompt.strip() else ""


def table(body: dict[str, Any]) -> str:
    """Answers gen's table prompts: the entities named in the question (comma-separated after a colon),
    a row with a deterministic number per entity, and an aggregate SQL query over the table."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    user = _last_user_text(body)
    if system.startswith("You design"):
        question = user.split("Question:", 1)[1].split("\n", 1)[0]
        names = [n.strip(" ?.") for n in question.split(":", 1)[-1].split(",") if n.strip(" ?.")]
        columns = ["name", "score", "note"]
        return json.dumps({"title": "Benchmark table", "entities": names, "columns": columns})
    if system.startswith("You fill"):
        entity = user.split("Entity:", 1)[1].split("\n", 1)[0].strip()
        score = sum(ord(ch) for ch in entity) % 1000
        return json.dumps({"row": {"name": entity, "score": score, "note": f"{entity} noted"}})
    if system.startswith("You write"):
        table_name = user.split('Table: "', 1)[1].split('"', 1)[0]
        # gen's guard validates this like any model-written query.
        sql = f'SELECT COUNT(*) AS n, MAX("score") AS top FROM "{table_name}"'  # noqa: S608
        return json.dumps({"sql": sql})
    return json.dumps({"error": "unexpected prompt"})


def kb(body: dict[str, Any]) -> str:
    """Answers mem `kb`'s prompts: extraction (the offline extractor's findings), community summaries
    (the first lines given) and answers (the first context passage)."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    user = _last_user_text(body)
    if system.startswith("Extract"):
        return entities(body)
    if system.startswith("You summarise"):
        return " ".join(user.splitlines()[:3])
    context = user.split("Context:", 1)[-1].strip().splitlines()
    return context[0] if context else "I do not know."
