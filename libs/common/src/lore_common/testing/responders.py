"""Scripted behaviour for the fake model server (`--responder lore_common.testing.responders:NAME`)."""

from __future__ import annotations

import json
from typing import Any

from lore_common.providers.offline import extract_entities

REASK = "Your reply was not valid"  # lore_common.providers.chat's re-ask after a malformed reply


def _last_user_text(body: dict[str, Any]) -> str:
    """The last user message, not counting a re-ask (a model answers the question it was asked)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and not str(message.get("content", "")).startswith(REASK):
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


TUPLE = "<|#|>"
COMPLETE = "<|COMPLETE|>"


def _fenced_input(user: str) -> str:
    """LightRAG's extraction prompt puts the text between ``` fences after `---Input Text---`."""
    part = user.split("---Input Text---", 1)[-1]
    pieces = part.split("```")
    return pieces[1].strip() if len(pieces) >= 3 else part


def lightrag(body: dict[str, Any]) -> str:
    """Answers LightRAG's prompts in the formats it parses (entity rows with its tuple delimiter, keyword
    JSON, summaries, answers) and, for anything else, Lore's `kb` and docdb prompts: one model server
    for both systems in bench/lightrag_compare.py, with the same offline extractor's findings for both."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages and messages[0].get("role") == "system" else ""
    user = _last_user_text(body)
    prompt = system + "\n" + user
    if system.startswith("You extract entities"):  # docdb's extraction (mode 0)
        return entities(body)
    if "synthesize a list of descriptions" in prompt:  # merging an entity's descriptions
        listed = prompt.rsplit("Description List", 1)[-1].strip().splitlines()
        return " ".join(line.strip() for line in listed[1:4])[:500] or "merged"
    if "Based on the last extraction task" in user:
        return COMPLETE  # the gleaning pass: nothing was missed
    if "Knowledge Graph Specialist" in prompt and "---Input Text---" in user:
        found = extract_entities(_fenced_input(user))
        rows = [f"entity{TUPLE}{e['name']}{TUPLE}Other{TUPLE}{e['description']}" for e in found["entities"]]
        rows += [
            f"relation{TUPLE}{r['source']}{TUPLE}{r['target']}{TUPLE}related{TUPLE}{r['description']}"
            for r in found["relations"]
        ]
        return "\n".join([*rows, COMPLETE])
    if "expert keyword extractor" in prompt:
        query = prompt.rsplit("User Query:", 1)[-1].split("\n", 1)[0]
        names = [e["name"] for e in extract_entities(query)["entities"]]
        words = [w.strip("?.,") for w in query.split() if len(w.strip("?.,")) > 3]
        return json.dumps({"high_level_keywords": words[:3], "low_level_keywords": names or words[:3]})
    if "expert AI assistant" in prompt:  # LightRAG's answers: the first line of context that says much
        lines = [line for line in prompt.split("Context", 1)[-1].splitlines() if len(line) > 40]
        return lines[0][:400] if lines else "I do not know."
    return kb(body)


def everything(body: dict[str, Any]) -> str:
    """One server for docdb's extraction, mem `kb`'s prompts and gen's table prompts at once (the model
    fault benchmark runs all three against it)."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    if system.startswith(("You design", "You fill", "You write")):
        return table(body)
    return lightrag(body)
