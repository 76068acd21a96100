"""The offline model's answers to `vg`'s prompts: fact extraction (one fact per informative user
sentence) and the ADD/UPDATE/NONE decision against existing memories, by keyword overlap."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import keywords, sentences

_INFORMATIVE = re.compile(r"\b(i|my|i'm|i am|me|we|our)\b|我", re.I)


def extract_facts(messages: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """One fact per informative user sentence: long enough, about the speaker, not a bare question."""
    facts: list[str] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        for sentence in sentences(str(message.get("content", ""))):
            cleaned = sentence.strip().rstrip(".!。！")
            if len(keywords(cleaned)) < 2 or cleaned.endswith(("?", "？")):
                continue
            if not _INFORMATIVE.search(cleaned) and len(cleaned) < 20:
                continue
            if cleaned not in facts:
                facts.append(cleaned)
    return {"facts": facts}


def _similarity(a: str, b: str) -> float:
    ta, tb = set(keywords(a)), set(keywords(b))
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def update_memory(
    facts: Sequence[str], existing: Sequence[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """ADD new facts, UPDATE an existing memory a fact clearly restates, NONE for exact repeats."""
    decisions: list[dict[str, Any]] = []
    seen = {hashlib.md5(str(e["text"]).encode(), usedforsecurity=False).hexdigest(): e for e in existing}
    next_id = len(existing)
    for fact in facts:
        digest = hashlib.md5(fact.encode(), usedforsecurity=False).hexdigest()
        if digest in seen:
            item = seen[digest]
            decisions.append({"id": str(item["id"]), "text": item["text"], "event": "NONE"})
            continue
        best = max(existing, key=lambda e: _similarity(fact, str(e["text"])), default=None)
        if best is not None and _similarity(fact, str(best["text"])) >= 0.5:
            decisions.append(
                {"id": str(best["id"]), "text": fact, "event": "UPDATE", "old_memory": best["text"]}
            )
        else:
            decisions.append({"id": str(next_id), "text": fact, "event": "ADD"})
            next_id += 1
    return {"memory": decisions}


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "extract_facts": lambda inputs: extract_facts(inputs.get("messages") or []),
    "update_memory": lambda inputs: update_memory(
        strings(inputs.get("facts")), list(inputs.get("existing") or [])
    ),
}
