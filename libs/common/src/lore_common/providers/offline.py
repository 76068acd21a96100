"""The offline chat model: no network, no weights, deterministic, and honest about what it is.

It does not understand prose. It runs the extractive skill a request names (`task`) on the request's
structured `inputs`:

| task | inputs | reply |
|---|---|---|
| `answer` | `question`, `passages[]` | the passage sentences that best match the question, each cited `[n]` |
| `extract_entities` | `text`, `entity_types[]` | JSON `{entities[{name,type,description}], relations[…]}` |
| `extract_facts` | `messages[{role,content}]` | JSON `{facts[]}`: one fact per informative user sentence |
| `update_memory` | `facts[]`, `existing[{id,text}]` | JSON `{memory[{id,text,event,old_memory}]}` |
| `rewrite` | `query`, `n` | JSON `{queries[]}`: keyword, reordered and narrowed variants |
| `judge` | `question`, `evidence[]` | JSON `{sufficient, next_question}` by keyword coverage |
| `summarize` | `texts[]` | the leading sentences of the texts |
| `design_table` | `question`, `passages[]`, `max_entities` | JSON `{title, entities[], columns[]}` |
| `fill_row` | `entity`, `columns[]`, `passages[]` | JSON `{row}`: type and evidence sentence, rest null |
| `write_sql` | `table`, `limit` | JSON `{sql}`: `SELECT * FROM table LIMIT n` |
| `tag_tree` | `topic`, `entities[{name,type,description}]` | JSON `{description, nodes[]}` by entity type |
| anything else | | a plain statement that no language model is configured |

Entities: English capitalised phrases, acronyms and quoted titles; Chinese names, places,
organisations and proper nouns by jieba's part-of-speech tags, and 《titles》. Relations: entities that
share a sentence (co-occurrence), weighted by how often they do. It cannot reason, translate, compute,
or answer from knowledge it was not given.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from lore_common.providers.chat import ChatRequest
from lore_core.settings import LLMConfig

OBJECTIVE, ABSTRACT, EVENT, DOCUMENT = "客观实体", "抽象实体", "事件实体", "文献实体"

_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*|[0-9]+(?:\.[0-9]+)?")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_CAPITALISED = re.compile(
    r"\b(?:[A-Z][a-zA-Z0-9\-]*|[A-Z]{2,})(?:\s+(?:of|de|la|von|the|and|&)?\s*(?:[A-Z][a-zA-Z0-9\-]*|[A-Z]{2,}))*"
)
_QUOTED = re.compile(r"[\"“《「]([^\"”》」]{2,60})[\"”》」]")
_EVENT_WORDS = re.compile(
    r"\b(war|battle|summit|election|conference|festival|olympics|revolution)\b|战|会议|事件|革命", re.I
)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b|\d{4}年")

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my no not of on or our she he so than that the their them then there these they this to too was we
    were what when where which who whom why will with would you your yes about also after all any because
    before being between both during each few more most other over same some such only own very just
    should now up down out off again further once here let's i'm i've it's don't please tell know like
    want think really much many get got make made use used""".split()
)
_SENTENCE_START_WORDS = frozenset(
    "The A An This That These Those It In On At For And But Or If When While After Before "
    "He She They We I You His Her Their Our My Its There Here What Which Who How Why Where".split()
)

_jieba_lock = threading.Lock()
_jieba_ready = False


def _jieba() -> Any:
    global _jieba_ready
    import jieba
    import jieba.posseg

    with _jieba_lock:
        if not _jieba_ready:
            jieba.setLogLevel(60)
            jieba.initialize()
            _jieba_ready = True
    return jieba


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def keywords(text: str) -> list[str]:
    """Content words, lower-cased: English words minus stop words, Chinese words by jieba."""
    words = [w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 1]
    if has_cjk(text):
        jieba = _jieba()
        words.extend(w for w in jieba.lcut(text) if _CJK.search(w) and len(w) > 1)
    return words


# ------------------------------------------------------------------ skills


def answer(question: str, passages: Sequence[str], max_sentences: int = 3) -> str:
    """The best-matching sentences of the passages, in score order, each cited with its passage number."""
    if not passages:
        return "No passages were retrieved, so there is nothing to answer from (offline extractive model)."
    q_terms = set(keywords(question))
    candidates: list[tuple[float, int, int, str]] = []
    documents = [set(keywords(p)) for p in passages]
    df = Counter(term for doc in documents for term in doc)
    for index, passage in enumerate(passages):
        for position, sentence in enumerate(sentences(passage)):
            terms = set(keywords(sentence))
            overlap = q_terms & terms
            score = sum(math.log(1 + len(passages) / df.get(t, 1)) for t in overlap)
            # Earlier passages were ranked higher by retrieval; earlier sentences tend to be topical.
            score += 0.1 / (1 + index) + 0.01 / (1 + position)
            candidates.append((score, index, position, sentence))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    chosen = candidates[:max_sentences]
    parts = []
    for _, index, _, sentence in chosen:
        text = sentence.rstrip()
        parts.append(f"{text} [{index + 1}]")
    joiner = "" if has_cjk(" ".join(parts)) else " "
    return joiner.join(parts)


def _entity_type(name: str, sentence: str, quoted: bool, allowed: Sequence[str]) -> str:
    if quoted:
        kind = DOCUMENT
    elif _EVENT_WORDS.search(name) or (_YEAR.search(sentence) and _EVENT_WORDS.search(sentence)):
        kind = EVENT
    else:
        kind = OBJECTIVE
    if allowed and kind not in allowed:
        return allowed[0]
    return kind


def _english_entities(sentence: str) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = [(m.group(1).strip(), True) for m in _QUOTED.finditer(sentence)]
    for match in _CAPITALISED.finditer(sentence):
        name = match.group(0).strip()
        words = name.split()
        while words and words[0] in _SENTENCE_START_WORDS:
            words = words[1:]
        name = " ".join(words)
        if len(name) < 2 or name.lower() in STOPWORDS:
            continue
        found.append((name, False))
    return found


def _chinese_entities(sentence: str) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = [(m.group(1).strip(), True) for m in _QUOTED.finditer(sentence)]
    _jieba()
    import jieba.posseg

    for word, flag in jieba.posseg.lcut(sentence):
        if len(word) >= 2 and flag in ("nr", "ns", "nt", "nz", "nrt", "nrfg"):
            found.append((word, False))
    return found


def extract_entities(text: str, entity_types: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
    entities: dict[str, dict[str, Any]] = {}
    pair_counts: Counter[tuple[str, str]] = Counter()
    pair_context: dict[tuple[str, str], str] = {}
    for sentence in sentences(text):
        names = _chinese_entities(sentence) if has_cjk(sentence) else _english_entities(sentence)
        present: list[str] = []
        for name, quoted in names:
            key = name.lower()
            if key not in entities:
                entities[key] = {
                    "name": name,
                    "type": _entity_type(name, sentence, quoted, entity_types),
                    "description": sentence[:300],
                }
            if key not in present:
                present.append(key)
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                pair = (a, b) if a < b else (b, a)
                pair_counts[pair] += 1
                pair_context.setdefault(pair, sentence[:300])
    relations = [
        {
            "source": entities[a]["name"],
            "target": entities[b]["name"],
            "description": pair_context[(a, b)],
            "weight": float(count),
        }
        for (a, b), count in pair_counts.most_common()
    ]
    return {"entities": list(entities.values()), "relations": relations}


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
        groups.setdefault(str(entity.get("type") or "entity"), []).append(entity)
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


def summarize(texts: Sequence[str], max_sentences: int = 3) -> str:
    picked: list[str] = []
    for text in texts:
        for sentence in sentences(text)[:1]:
            picked.append(sentence)
        if len(picked) >= max_sentences:
            break
    return " ".join(picked)


class OfflineChat:
    """Deterministic extractive stand-in for a language model (see the module docstring)."""

    def __init__(self, config: LLMConfig | None = None) -> None:
        self.name = f"offline:{(config.model if config else 'offline-extractive')}"
        self.in_flight = 0

    async def complete(self, request: ChatRequest) -> str:
        inputs = request.inputs
        task = request.task
        if task == "answer":
            return answer(str(inputs.get("question", "")), [str(p) for p in inputs.get("passages", [])])
        if task == "summarize":
            return summarize([str(t) for t in inputs.get("texts", [])])
        result: Any
        if task == "extract_entities":
            result = extract_entities(str(inputs.get("text", "")), list(inputs.get("entity_types", []) or []))
        elif task == "extract_facts":
            result = extract_facts(inputs.get("messages", []))
        elif task == "update_memory":
            result = update_memory(list(inputs.get("facts", [])), list(inputs.get("existing", [])))
        elif task == "rewrite":
            result = rewrite(str(inputs.get("query", "")), int(inputs.get("n", 3)))
        elif task == "judge":
            result = judge(str(inputs.get("question", "")), [str(e) for e in inputs.get("evidence", [])])
        elif task == "design_table":
            result = design_table(
                str(inputs.get("question", "")),
                [str(p) for p in inputs.get("passages", [])],
                int(inputs.get("max_entities", 20)),
            )
        elif task == "fill_row":
            result = fill_row(
                str(inputs.get("entity", "")),
                [str(c) for c in inputs.get("columns", [])],
                [str(p) for p in inputs.get("passages", [])],
            )
        elif task == "write_sql":
            result = write_sql(str(inputs.get("table", "")), int(inputs.get("limit", 100)))
        elif task == "tag_tree":
            result = tag_tree(str(inputs.get("topic", "")), list(inputs.get("entities", [])))
        else:
            return (
                "No language model is configured (provider: offline). The offline model only extracts from "
                "retrieved passages; set an api_key and base_url to get generated answers."
            )
        return msgspec.json.encode(result).decode()

    async def aclose(self) -> None:
        return None
