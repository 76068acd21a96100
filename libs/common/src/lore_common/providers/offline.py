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

Answers are whole sentences (lore_common.text's segmenter: never cut at an abbreviation, a decimal
or a line break inside a paragraph; headings, code and list debris are not sentences), ranked by the
question's terms, each cited; a sentence that opens with a pronoun or a lower-case fragment brings the
sentence before it, so the answer keeps its subject. When no sentence shares a content word with the
question, the answer says so instead of quoting something unrelated.

Entities and relations come from lore_common.entities (a deterministic extractor with stop lists and
hyphenation repair). It cannot reason, translate, compute, or answer from knowledge it was not given.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lore_common.entities import ABSTRACT, DOCUMENT, EVENT, OBJECTIVE, extract_entities
from lore_common.text import has_cjk, keywords, segments

__all__ = ["ABSTRACT", "DOCUMENT", "EVENT", "OBJECTIVE", "OfflineSkill", "answer", "extract_entities"]

# A skill takes a request's `inputs` and returns the reply: text as it is, anything else as JSON.
OfflineSkill = Callable[[Mapping[str, Any]], Any]

NO_PASSAGES = "No passages were retrieved, so there is nothing to answer from (offline extractive model)."
NO_ANSWER = (
    "None of the retrieved passages shares a content word with the question, so the offline extractive "
    "model has no answer to quote."
)
# A sentence that opens like this leans on the one before it for its subject.
_LEANS_BACK = re.compile(
    r"^(?i:he|she|it|they|this|these|those|that|his|her|its|their|there|such|both|the latter|the former|"
    r"also|however|then|thus|therefore|in addition|moreover)\b|^[a-z]|^(?:他|她|它|该|这|其|此)",
)
FRAGMENT_WEIGHT = 0.5
KEEP_SHARE = 0.25
_RULE_CELL = re.compile(r"^:?-{2,}:?$|^$")
_WHOLE = re.compile(r"[.!?。！？…][\"'”’」』)\]]*$")


def _cjk_bigrams(text: str) -> set[str]:
    chars = [c for c in text if "\u4e00" <= c <= "\u9fff"]
    return {a + b for a, b in itertools.pairwise(chars)}


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


@functools.lru_cache(maxsize=2048)
def _units(passage: str) -> tuple[tuple[str, str], ...]:
    """A passage's sentences, list items that read as sentences, and table rows read with their
    header (`Team: Maple Leafs; Cups: 13.`: a row's number means nothing without its column's
    name); headings and code are not units. Each with the text that must match the question: a row's
    own cells (its header's words are in every row). Cached: the same chunks come back for many
    questions, and segmenting them was a third of a chat's CPU in docdb."""
    out: list[tuple[str, str]] = []
    header: list[str] | None = None
    for segment in segments(passage):
        if segment.kind != "table":
            header = None
            if segment.kind == "sentence" or (segment.kind == "item" and len(segment.text.split()) >= 4):
                out.append((segment.text, segment.text))
            continue
        cells = _cells(segment.text)
        if all(_RULE_CELL.match(cell) for cell in cells):
            continue  # the line under a Markdown table's header
        if header is None:
            header = cells
            continue
        named = [
            f"{name}: {cell}" if name and name != cell else cell
            for name, cell in itertools.zip_longest(header, cells, fillvalue="")
            if cell
        ]
        if len(named) >= 2:
            out.append(("; ".join(named).rstrip(".") + ".", " ".join(cells)))
    return tuple(out)


def answer(question: str, passages: Sequence[str], max_sentences: int = 3) -> str:
    """The best-matching whole sentences of the passages, in score order, each cited with its passage
    number; a sentence that needs the one before it for its subject comes with it."""
    if not passages:
        return NO_PASSAGES
    q_terms = set(keywords(question))
    q_grams = _cjk_bigrams(question)
    split = [[(unit, _terms(unit), _terms(own)) for unit, own in _units(p)] for p in passages]
    # Document frequency: the passages each term occurs in (one C-level count, not a step per term).
    df = Counter(
        itertools.chain.from_iterable(frozenset().union(*(t for _, t, _ in found)) for found in split)
    )
    candidates: list[tuple[float, int, int]] = []
    for index, found in enumerate(split):
        for position, (sentence, terms, own) in enumerate(found):
            overlap = q_terms & terms if q_terms & own or not q_terms else set()
            score = sum(math.log(1 + len(passages) / df.get(t, 1)) for t in overlap)
            if q_grams:
                score += 0.5 * len(q_grams & _cjk_bigrams(sentence))
            if score <= 0 and (q_terms or q_grams):
                continue  # a question with content words: a sentence sharing none answers nothing
            if not is_whole_sentence(sentence):
                score *= FRAGMENT_WEIGHT  # a title or a contents line: a sentence saying it comes first
            # Earlier passages were ranked higher by retrieval; earlier sentences tend to be topical.
            score += 0.1 / (1 + index) + 0.01 / (1 + position)
            candidates.append((score, index, position))
    if not candidates:
        return NO_ANSWER
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    # The others only where they match nearly as well: a sentence sharing one common word is not a
    # second answer.
    candidates = [c for c in candidates if c[0] >= KEEP_SHARE * candidates[0][0]]
    parts: list[str] = []
    used: set[tuple[int, int]] = set()
    for _, index, position in candidates:
        if len(parts) >= max_sentences:
            break
        if (index, position) in used:
            continue
        found = split[index]
        start = position
        while start > 0 and _LEANS_BACK.match(found[start][0]) and (index, start - 1) not in used:
            start -= 1
        text = (
            " ".join(found[p][0] for p in range(start, position + 1))
            if not has_cjk(found[position][0])
            else "".join(found[p][0] for p in range(start, position + 1))
        )
        used.update((index, p) for p in range(start, position + 1))
        parts.append(f"{text.rstrip()} [{index + 1}]")
    joiner = "" if has_cjk(" ".join(parts)) else " "
    return joiner.join(parts)


@functools.lru_cache(maxsize=8192)
def is_whole_sentence(text: str) -> bool:
    """Whether a text (an answer's sentence, its citation marker removed) reads as a whole sentence:
    it opens with a capital, a digit, a quote or a Chinese character and ends with a stop."""
    text = text.strip()
    if not text:
        return False
    opens = text[0].isupper() or text[0].isdigit() or text[0] in "\"'“‘《「(" or has_cjk(text[0])
    return opens and bool(_WHOLE.search(text))


@functools.lru_cache(maxsize=8192)
def _terms(sentence: str) -> frozenset[str]:
    """A sentence's keywords. Cached: the same chunks come back for many questions."""
    return frozenset(keywords(sentence))


def strings(values: Any) -> list[str]:
    return [str(v) for v in values or []]


SHARED_SKILLS: dict[str, OfflineSkill] = {
    "answer": lambda inputs: answer(str(inputs.get("question", "")), strings(inputs.get("passages"))),
    "extract_entities": lambda inputs: extract_entities(
        str(inputs.get("text", "")), strings(inputs.get("entity_types"))
    ),
}
