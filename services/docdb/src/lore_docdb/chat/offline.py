"""The offline model's answers to chat's own prompts: query rewriting (`rewriter` mode) and the evidence
judge (`multihop` mode), by keyword overlap. Handed to the chat model in `app.py`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import keywords


def rewrite(query: str, n: int = 3) -> dict[str, list[str]]:
    terms = keywords(query)
    variants = [
        " ".join(terms),
        " ".join(reversed(terms)),
        " ".join(sorted(set(terms), key=len, reverse=True)[:3]),
    ]
    unique: list[str] = []
    for variant in [*variants, query]:
        if variant and variant not in unique:
            unique.append(variant)
    while len(unique) < n:
        unique.append(query)
    return {"queries": unique[:n]}


def judge(question: str, evidence: Sequence[str]) -> dict[str, Any]:
    wanted = set(keywords(question))
    covered = set(keywords(" ".join(evidence)))
    missing = [t for t in keywords(question) if t not in covered]
    coverage = 1.0 if not wanted else len(wanted & covered) / len(wanted)
    sufficient = coverage >= 0.6 or not missing
    return {
        "sufficient": sufficient,
        "next_question": None if sufficient else " ".join(dict.fromkeys(missing)),
    }


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "rewrite": lambda inputs: rewrite(str(inputs.get("query", "")), int(inputs.get("n", 3))),
    "judge": lambda inputs: judge(str(inputs.get("question", "")), strings(inputs.get("evidence"))),
}
