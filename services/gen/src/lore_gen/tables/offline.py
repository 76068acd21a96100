"""The offline model's answers to the table pipeline's prompts.

A question of the form "each X and its Y" ("every person and their discovery") becomes a table of the
passages' entities of kind X (people, organisations, places, products), one row each, with a Y column
filled from the sentence where the entity does what Y names ("discovered", "developed"...) and that
sentence as evidence. A question that names its subjects ("Marie Curie and Grace Hopper") gets one row
per subject. Otherwise the rows are the named entities of the passages that share a word with the
question; when there are none the design is empty and the task says so, instead of filling rows with
whatever the passages mention. Nothing is invented: a cell with no supporting sentence stays null.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lore_common.entities import find_entities
from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import keywords, sentences

OFFLINE_TABLE_COLUMNS = ("name", "type", "evidence")

# "each person and their discovery", "all companies with its founder", "every city and its population"
_EACH = re.compile(
    r"\b(?:each|every|all|list(?: all| the| every)?|which)\s+(?P<x>[a-z][a-z ]*?)\s+"
    r"(?:and|with)\s+(?:their|its|his|her|the)\s+(?P<y>[a-z][a-z ]*?)\s*[?.!]*$",
    re.I,
)
_KIND_WORDS: dict[str, tuple[str, ...]] = {
    "person": ("person", "people", "persons", "scientist", "researcher", "author", "inventor", "who"),
    "organisation": ("organisation", "organization", "company", "companies", "institution", "university"),
    "place": ("place", "places", "city", "cities", "country", "countries", "location", "locations"),
    "product": ("product", "products", "tool", "tools", "language", "languages", "system", "systems"),
}
# The verbs a sentence uses for what an attribute names.
_ATTRIBUTE_VERBS: dict[str, tuple[str, ...]] = {
    "discover": ("discovered", "invented", "developed", "created", "found", "identified", "isolated"),
    "invent": ("invented", "developed", "created", "designed", "built"),
    "found": ("founded", "established", "started", "created"),
    "award": ("awarded", "won", "received"),
    "prize": ("awarded", "won", "received"),
    "work": ("worked", "works", "served"),
    "employ": ("worked", "works", "served"),
    "birth": ("born",),
    "born": ("born",),
    "death": ("died",),
}
_VALUE_END = re.compile(r",\s+(?:and|in|at|on|which|who|while|but)\b|[,;.()]|\s+(?:in|at|on|by)\s+\d")


def _kind_of(noun: str) -> str | None:
    words = noun.lower().split()
    for kind, nouns in _KIND_WORDS.items():
        if any(w in nouns for w in words):
            return kind
    return None


def _column(noun: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", noun.lower()).strip("_") or "value"


def design_table(question: str, passages: Sequence[str], max_entities: int = 20) -> dict[str, Any]:
    """The table's title, rows and columns from the question's shape and the passages' entities."""
    title = question.strip().rstrip("?？.。") or "table"
    shaped = _EACH.search(question.strip())
    if shaped:
        kind = _kind_of(shaped.group("x"))
        counts: Counter[str] = Counter()
        names: dict[str, str] = {}
        for passage in passages:
            found, _, _ = find_entities(passage)
            for key, entity in found.items():
                if kind is None or entity.kind == kind:
                    counts[key] += entity.mentions
                    names.setdefault(key, entity.name)
        rows = [names[key] for key, _ in counts.most_common()]
        # A surname alone ("Curie") is the same person as the full name beside it.
        rows = [r for r in rows if not any(r != o and o.endswith(" " + r) for o in rows)]
        return {
            "title": title,
            "entities": rows[:max_entities],
            "columns": ["name", _column(shaped.group("y")), "evidence"],
        }
    named: list[str] = []
    found_in_question, _, _ = find_entities(question)
    for entity in found_in_question.values():
        if entity.kind in ("person", "organisation", "place", "product", "title", "event"):
            named.append(entity.name)
    if not named:
        wanted = set(keywords(question))
        counts = Counter()
        first_seen: dict[str, str] = {}
        for passage in passages:
            found, _, _ = find_entities(passage)
            for key, entity in found.items():
                if entity.kind == "term" or not wanted & set(keywords(entity.sentence)):
                    continue  # a term, or named only in sentences that have nothing to do with the question
                counts[key] += entity.mentions
                first_seen.setdefault(key, entity.name)
        named = [first_seen[key] for key, _ in counts.most_common()]
    return {
        "title": title,
        "entities": list(dict.fromkeys(named))[:max_entities],
        "columns": list(OFFLINE_TABLE_COLUMNS),
    }


def _mentions(sentence: str, entity: str) -> bool:
    lowered = sentence.lower()
    if entity.lower() in lowered:
        return True
    # "Marie Curie and Pierre Curie discovered ..." names both; a list of first names shares a surname.
    parts = entity.split()
    return len(parts) >= 2 and parts[0].lower() in lowered and parts[-1].lower() in lowered


def _attribute(sentence: str, column: str) -> str | None:
    """The phrase after the verb that the column names ("discovered polonium and radium, ..." gives
    "polonium and radium"), or None when the sentence has no such verb."""
    stem = column.split("_")[0][:5]
    verbs = next((v for k, v in _ATTRIBUTE_VERBS.items() if k.startswith(stem) or stem.startswith(k)), ())
    alternatives = "|".join(map(re.escape, verbs)) if verbs else rf"{re.escape(stem)}\w*"
    pattern = rf"\b({alternatives})\b\s+(.*)"
    match = re.search(pattern, sentence, re.I)
    if not match:
        return None
    rest = re.sub(r"^(?:by|in|at|as)\s+", "", match.group(2))
    value = _VALUE_END.split(rest, maxsplit=1)[0].strip()
    return value or None


def fill_row(entity: str, columns: Sequence[str], passages: Sequence[str]) -> dict[str, Any]:
    """The entity's name, then each column from the passage sentences that mention it: its kind
    (`type`), the attribute a column names and the sentence that says so (`evidence`). Every other cell
    stays null: nothing is invented."""
    mentioned = [s for p in passages for s in sentences(p) if _mentions(s, entity)]
    row: dict[str, Any] = {column: None for column in columns}
    if columns:
        row[columns[0]] = entity
    evidence = mentioned[0] if mentioned else None
    for column in columns[1:]:
        name = column.lower()
        if name in ("evidence", "description"):
            continue
        if name == "type":
            for sentence in mentioned:
                found, _, _ = find_entities(sentence)
                if entity.lower() in found:
                    row[column] = found[entity.lower()].kind
                    break
            continue
        for sentence in mentioned:
            value = _attribute(sentence, name)
            if value:
                row[column] = value
                evidence = sentence
                break
    for column in columns[1:]:
        if column.lower() in ("evidence", "description"):
            row[column] = evidence[:300] if evidence else None
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
