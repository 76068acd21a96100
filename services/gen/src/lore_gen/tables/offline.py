"""The offline model's answers to the table pipeline's prompts: a table design from the question's
named entities (or the passages' most mentioned ones), rows filled only with what the passages say, and
a plain `SELECT` for the SQL step (which the guard validates like any model-written query)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lore_common.providers.offline import OfflineSkill, extract_entities, strings
from lore_common.text import sentences

OFFLINE_TABLE_COLUMNS = ("name", "type", "evidence")


def design_table(question: str, passages: Sequence[str], max_entities: int = 20) -> dict[str, Any]:
    """Title from the question; entities named in the question, else the most mentioned ones in the
    passages; fixed columns the offline model can fill honestly (it cannot compute other attributes)."""
    named = []
    for entity in extract_entities(question)["entities"]:
        # A question lists its subjects ("Curie and Hopper"): each is a row of its own.
        parts = re.split(r"\s+(?:and|&)\s+", entity["name"])
        named.extend(parts if all(p[:1].isupper() for p in parts) else [entity["name"]])
    named = list(dict.fromkeys(named))
    if not named:
        counts: Counter[str] = Counter()
        first_seen: dict[str, str] = {}
        for passage in passages:
            for entity in extract_entities(passage)["entities"]:
                key = entity["name"].lower()
                counts[key] += 1
                first_seen.setdefault(key, entity["name"])
        named = [first_seen[key] for key, _ in counts.most_common()]
    title = question.strip().rstrip("?？.。") or "table"
    return {"title": title, "entities": named[:max_entities], "columns": list(OFFLINE_TABLE_COLUMNS)}


def fill_row(entity: str, columns: Sequence[str], passages: Sequence[str]) -> dict[str, Any]:
    """The entity's name, its extracted type and the first passage sentence that mentions it; every
    other cell stays null: nothing is invented."""
    evidence: str | None = None
    kind: str | None = None
    needle = entity.lower()
    for passage in passages:
        for sentence in sentences(passage):
            if needle in sentence.lower():
                evidence = sentence[:300]
                found = extract_entities(sentence)["entities"]
                kind = next((e["type"] for e in found if e["name"].lower() == needle), None)
                break
        if evidence:
            break
    row: dict[str, Any] = {column: None for column in columns}
    if columns:
        row[columns[0]] = entity
    for column in columns:
        if column.lower() == "type":
            row[column] = kind
        elif column.lower() in ("evidence", "description"):
            row[column] = evidence
    return {"row": row}


def write_sql(table: str, limit: int) -> dict[str, str]:
    # The caller's guard validates this like any model-written query.
    return {"sql": f'SELECT * FROM "{table}" LIMIT {int(limit)}'}  # noqa: S608


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "design_table": lambda inputs: design_table(
        str(inputs.get("question", "")), strings(inputs.get("passages")), int(inputs.get("max_entities", 20))
    ),
    "fill_row": lambda inputs: fill_row(
        str(inputs.get("entity", "")), strings(inputs.get("columns")), strings(inputs.get("passages"))
    ),
    "write_sql": lambda inputs: write_sql(str(inputs.get("table", "")), int(inputs.get("limit", 100))),
}
