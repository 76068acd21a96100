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

from lore_common.entities import common_word, find_entities
from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import STOPWORDS, keywords, sentences

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
_EVIDENCE = 300
_LINK = re.compile(r"https?://|\bwww\.|\bRetrieved\b|\bISBN\b")
_VALUE_END = re.compile(r",\s+(?:and|in|at|on|which|who|while|but)\b|[,;.()]|\s+(?:in|at|on|by)\s+\d")


def _kind_of(noun: str) -> str | None:
    words = noun.lower().split()
    for kind, nouns in _KIND_WORDS.items():
        if any(w in nouns for w in words):
            return kind
    return None


def _column(noun: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", noun.lower()).strip("_") or "value"


# What separates the items of a list of names: "A, B and C", "A or B", "A vs. B".
_LIST_GAP = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s*,?\s+(?:and|or|&|vs\.?|versus)\s+")
_TOKEN = re.compile(r"[^\W_](?:[\w'’&.-]*[\w.])?")
_CONNECTORS = frozenset({"of", "de", "la", "le", "du", "von", "van", "der", "den", "del", "the", "&"})
_ROW_KINDS = frozenset({"person", "organisation", "place", "product", "identifier", "name", "title", "event"})


def _capitalised_runs(question: str) -> list[tuple[int, int]]:
    """Spans of capitalised words (with `of`, `de`, `the` inside): the question's candidate names."""
    runs: list[tuple[int, int]] = []
    start = end = -1  # the open run
    inside = -1  # the end of a connector after the run ("Bank of"), kept only if a capital follows
    for match in _TOKEN.finditer(question):
        word = match.group().rstrip(".") if match.group().count(".") == 1 else match.group()
        capital = word[:1].isupper() or (word[:1].isdigit() and any(c.isupper() for c in word))
        touching = start >= 0 and not question[max(end, inside) : match.start()].strip()
        if capital and touching:
            end, inside = match.start() + len(word), -1
        elif touching and inside < 0 and word.lower() in _CONNECTORS:
            inside = match.end()
        else:
            if start >= 0:
                runs.append((start, end))
            start, end, inside = (match.start(), match.start() + len(word), -1) if capital else (-1, -1, -1)
    if start >= 0:
        runs.append((start, end))
    return runs


def _listed(question: str) -> list[tuple[int, str]]:
    """The names of the question's lists ("Watford, Leicester City and Norwich City", "IBM, NCR and
    CTR"): each item is a name even when one word opens the question or is a common word."""
    runs = _capitalised_runs(question)
    items: list[tuple[int, str]] = []
    chain: list[tuple[int, int]] = []
    joined = False  # an "and"/"or" links the chain: two names after a comma alone may be a greeting

    def close() -> None:
        if len(chain) >= 3 or (len(chain) == 2 and joined):
            items.extend((a, question[a:b]) for a, b in chain)

    for run in runs:
        gap = question[chain[-1][1] : run[0]] if chain else ""
        if chain and _LIST_GAP.fullmatch(gap):
            chain.append(run)
            joined = joined or "," not in gap or bool(re.search(r"\b(?:and|or)\b", gap))
        else:
            close()
            chain, joined = [run], False
    close()
    return items


def _unglued(name: str, at: int, question: str, passages: Sequence[str]) -> str:
    """The name without the question word its capital glued on ("Compare Leicester City" is Leicester
    City), unless the passages name it whole ("New York")."""
    words = name.split()
    if len(words) < 2 or question[:at].strip(" \"'“(") or not common_word(words[0]):
        return name
    text = " ".join(passages).lower()
    if passages and name.lower() in text:
        return name
    rest = words[1:]
    while len(rest) > 1 and rest[0].lower() in _CONNECTORS:
        rest = rest[1:]  # "Sales of Q1": Q1
    return " ".join(rest)


def question_entities(question: str, passages: Sequence[str] = ()) -> list[str]:
    """The names the question asks about, in its order: a list's items when it has one ("A, B and C:
    when did X join each?" is about A, B and C), else every name the extractor finds in it (acronyms
    and names without a cue included), with no question word glued on."""
    found: list[tuple[int, str]] = _listed(question)
    if not found:
        entities, _, _ = find_entities(question)
        found = sorted(
            (max(question.find(e.name), 0), e.name) for e in entities.values() if e.kind in _ROW_KINDS
        )
    names = [_unglued(name, at, question, passages) for at, name in found]
    names = [n for n in names if len(n) > 1 and n.lower() not in STOPWORDS]
    # A name inside a longer one the question also gives ("Curie" in "Marie Curie") is the same row.
    names = [n for n in names if not any(n != o and f" {n.lower()}" in f" {o.lower()}" for o in names)]
    return list(dict.fromkeys(names))


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
                if entity.kind == kind or (
                    # Any kind of name, but no date, code name or reference ("ISBN", "Retrieved ...").
                    kind is None
                    and entity.kind in _ROW_KINDS - {"identifier"}
                    and not _LINK.search(entity.sentence)
                ):
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
    named = question_entities(question, passages)
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


def mentions(sentence: str, entity: str) -> bool:
    """Whether the text names the entity as a whole word ("IBM", not the letters of another word)."""
    return re.search(rf"(?<![\w-]){re.escape(entity)}(?![\w-])", sentence, re.I) is not None


def _attribute(sentence: str, column: str) -> str | None:
    """The phrase after the verb that the column names ("discovered polonium and radium, ..." gives
    "polonium and radium"), or None when the sentence has no such verb."""
    stem = column.split("_")[0][:5]
    verbs = next((v for k, v in _ATTRIBUTE_VERBS.items() if k.startswith(stem) or stem.startswith(k)), ())
    if not verbs:
        return None  # no verb says what this column holds: the words after its name would be fragments
    pattern = rf"\b({'|'.join(map(re.escape, verbs))})\b\s+(.*)"
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
    mentioned = [s for p in passages for s in sentences(p) if mentions(s, entity)]
    row: dict[str, Any] = {column: None for column in columns}
    if columns:
        row[columns[0]] = entity
    # A sentence a person reads as evidence: not an infobox run together nor a reference's link.
    readable = [s for s in mentioned if len(s) <= _EVIDENCE and not _LINK.search(s)]
    evidence: str | None = next(iter(readable or mentioned), None)
    for column in columns[1:]:
        name = column.lower()
        if name in ("evidence", "description"):
            continue
        if name == "type":
            # The sentences read together: a name that opens one is capitalised inside another.
            found, _, _ = find_entities(" ".join(mentioned)) if mentioned else ({}, None, None)
            if entity.lower() in found:
                row[column] = found[entity.lower()].kind
            continue
        for sentence in mentioned:
            value = _attribute(sentence, name)
            if value:
                row[column] = value
                evidence = sentence
                break
    for column in columns[1:]:
        if column.lower() in ("evidence", "description"):
            row[column] = evidence[:_EVIDENCE] if evidence else None
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
