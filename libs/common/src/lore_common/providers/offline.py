"""The offline model's shared skills: no network, no weights, deterministic, honest about what it is.

The offline model does not understand prose. It runs the extractive skill a request names (`task`) on
the request's structured `inputs`. The skills here serve more than one service; each service keeps the
skills of its own prompts beside them (`offline.py` in the domain that owns the prompt) and hands them
to `create_chat_model`, so a prompt and its offline responder change together.

| task | inputs | reply |
|---|---|---|
| `answer` | `question`, `passages[]` | the passage sentences that best match the question, each cited `[n]` |
| `extract_entities` | `text`, `entity_types[]` | JSON `{entities[{name,type,description}], relations[…]}` |
| a task no skill answers | | a plain statement that no language model is configured |

Entities: English capitalised phrases, acronyms and quoted titles; Chinese names, places,
organisations and proper nouns by jieba's part-of-speech tags, and 《titles》. Relations: entities that
share a sentence (co-occurrence), weighted by how often they do. It cannot reason, translate, compute,
or answer from knowledge it was not given.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lore_common.text import STOPWORDS, has_cjk, jieba, keywords, sentences

OBJECTIVE, ABSTRACT, EVENT, DOCUMENT = "客观实体", "抽象实体", "事件实体", "文献实体"

# A skill takes a request's `inputs` and returns the reply: text as it is, anything else as JSON.
OfflineSkill = Callable[[Mapping[str, Any]], Any]

_CAPITALISED = re.compile(
    r"\b(?:[A-Z][a-zA-Z0-9\-]*|[A-Z]{2,})(?:\s+(?:of|de|la|von|the|and|&)?\s*(?:[A-Z][a-zA-Z0-9\-]*|[A-Z]{2,}))*"
)
_QUOTED = re.compile(r"[\"“《「]([^\"”》」]{2,60})[\"”》」]")
_EVENT_WORDS = re.compile(
    r"\b(war|battle|summit|election|conference|festival|olympics|revolution)\b|战|会议|事件|革命", re.I
)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b|\d{4}年")
_SENTENCE_START_WORDS = frozenset(
    "The A An This That These Those It In On At For And But Or If When While After Before "
    "He She They We I You His Her Their Our My Its There Here What Which Who How Why Where".split()
)


def answer(question: str, passages: Sequence[str], max_sentences: int = 3) -> str:
    """The best-matching sentences of the passages, in score order, each cited with its passage number."""
    if not passages:
        return "No passages were retrieved, so there is nothing to answer from (offline extractive model)."
    q_terms = set(keywords(question))
    candidates: list[tuple[float, int, int, str]] = []
    # Each passage is segmented once, sentence by sentence (jieba is most of the cost in Chinese); a
    # passage's terms are its sentences' terms.
    split = [[(sentence, _terms(sentence)) for sentence in sentences(p)] for p in passages]
    df = Counter(term for found in split for term in frozenset().union(*(t for _, t in found)))
    for index, found in enumerate(split):
        for position, (sentence, terms) in enumerate(found):
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


@functools.lru_cache(maxsize=8192)
def _terms(sentence: str) -> frozenset[str]:
    """A sentence's keywords. Cached: the same chunks come back for many questions."""
    return frozenset(keywords(sentence))


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
    for word, flag in jieba().posseg.lcut(sentence):
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


def strings(values: Any) -> list[str]:
    return [str(v) for v in values or []]


SHARED_SKILLS: dict[str, OfflineSkill] = {
    "answer": lambda inputs: answer(str(inputs.get("question", "")), strings(inputs.get("passages"))),
    "extract_entities": lambda inputs: extract_entities(
        str(inputs.get("text", "")), strings(inputs.get("entity_types"))
    ),
}
