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
sentence before it, so the answer keeps its subject. When no sentence holds enough of the question's
content words (`MIN_COVERAGE`), the answer says so instead of quoting something unrelated. A passage's
own reference marks (`[4]`) are left out of the quote, where they would read as citations.

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
from typing import Any, NamedTuple

from lore_common.entities import ABSTRACT, DOCUMENT, EVENT, OBJECTIVE, extract_entities
from lore_common.text import has_cjk, keywords, segments, stem, unmarked

__all__ = ["ABSTRACT", "DOCUMENT", "EVENT", "OBJECTIVE", "OfflineSkill", "answer", "extract_entities"]

# A skill takes a request's `inputs` and returns the reply: text as it is, anything else as JSON.
OfflineSkill = Callable[[Mapping[str, Any]], Any]

NO_PASSAGES = "No passages were retrieved, so there is nothing to answer from (offline extractive model)."
NO_ANSWER = (
    "None of the retrieved passages says much of what the question asks, so the offline extractive model "
    "has no answer to quote."
)
# What the offline answer says when it has nothing to quote: a chat cites no passage for these.
ABSTENTIONS = frozenset({NO_PASSAGES, NO_ANSWER})
# A sentence that opens like this leans on the one before it for its subject.
_LEANS_BACK = re.compile(
    r"^(?i:he|she|it|they|this|these|those|that|his|her|its|their|there|such|both|the latter|the former|"
    r"also|however|then|thus|therefore|in addition|moreover)\b|^[a-z]|^(?:他|她|它|该|这|其|此)",
)
FRAGMENT_WEIGHT = 0.5
KEEP_SHARE = 0.25
# The share of the question's keywords (weighted as rare among the passages) the best sentence must
# hold, and, for a question of three keywords or more, at least two of them: below that the passages
# only share a word with the question ("Who won the 2018 FIFA World Cup?" against a sentence that says
# "won"), and quoting them would answer something else. On SciFact's claims (bench/offline_quality.py
# --sets abstain) 0.22 answers 0.95 of them from their gold abstract and abstains on 0.91 asked of
# unrelated ones; 0.3 abstains on 0.97 but answers 0.78.
MIN_COVERAGE = 0.22
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
    for segment in segments(unmarked(passage)):  # "…a leg.[41] In 1997…": two sentences, not one
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


class Unit(NamedTuple):
    """A passage's unit as the answer scores it: the text it quotes (the passage's own reference marks
    taken out), its keywords, the keywords of its own words (a table row's cells), and whether it
    reads as a whole sentence."""

    text: str
    terms: frozenset[str]
    own: frozenset[str]
    whole: bool


@functools.lru_cache(maxsize=2048)
def _read(passage: str) -> tuple[tuple[Unit, ...], frozenset[str]]:
    """A passage's units and all their keywords, computed once: the same chunks come back for many
    questions, and segmenting them was a third of a chat's CPU in docdb."""
    units = tuple(Unit(t, _terms(t), _terms(own), is_whole_sentence(t)) for t, own in _units(passage))
    return units, frozenset().union(*(u.terms for u in units))


def answer(question: str, passages: Sequence[str], max_sentences: int = 3) -> str:
    """The best-matching whole sentences of the passages, in score order, each cited with its passage
    number; a sentence that needs the one before it for its subject comes with it. When the best
    sentence covers too little of the question (`MIN_COVERAGE`), the answer says that nothing answers."""
    if not passages:
        return NO_PASSAGES
    q_terms = set(stem(keywords(question)))
    q_grams = _cjk_bigrams(question)
    read = [_read(p) for p in passages]
    split = [units for units, _ in read]
    # Document frequency: the passages each term occurs in (one C-level count, not a step per term).
    df = Counter(itertools.chain.from_iterable(terms for _, terms in read))
    weight = {t: math.log(1 + len(passages) / df.get(t, 1)) for t in q_terms}
    asked = sum(weight.values())
    candidates: list[tuple[float, int, int]] = []
    best_coverage, best_shared = 0.0, 0
    for index, found in enumerate(split):
        for position, unit in enumerate(found):
            overlap = q_terms & unit.terms if q_terms & unit.own or not q_terms else set()
            score = sum(map(weight.__getitem__, overlap))
            if asked and score / asked > best_coverage:
                best_coverage, best_shared = score / asked, len(overlap)
            if q_grams:
                score += 0.5 * len(q_grams & _cjk_bigrams(unit.text))
            if score <= 0 and (q_terms or q_grams):
                continue  # a question with content words: a sentence sharing none answers nothing
            if not unit.whole:
                score *= FRAGMENT_WEIGHT  # a title or a contents line: a sentence saying it comes first
            # Earlier passages were ranked higher by retrieval; earlier sentences tend to be topical.
            score += 0.1 / (1 + index) + 0.01 / (1 + position)
            candidates.append((score, index, position))
    # A question of three keywords or more is not answered by a sentence that holds only one of them.
    too_little = best_coverage < MIN_COVERAGE or (len(q_terms) >= 3 and best_shared < 2)
    if not candidates or (asked and not q_grams and too_little):
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
        while start > 0 and _LEANS_BACK.match(found[start].text) and (index, start - 1) not in used:
            start -= 1
        texts = [found[p].text for p in range(start, position + 1)]
        text = "".join(texts) if has_cjk(texts[-1]) else " ".join(texts)
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
    """A sentence's keywords by their stems (a question's "bundle" finds "Docling bundles"). Cached: the
    same chunks come back for many questions."""
    return frozenset(stem(keywords(sentence)))


def strings(values: Any) -> list[str]:
    return [str(v) for v in values or []]


SHARED_SKILLS: dict[str, OfflineSkill] = {
    "answer": lambda inputs: answer(str(inputs.get("question", "")), strings(inputs.get("passages"))),
    "extract_entities": lambda inputs: extract_entities(
        str(inputs.get("text", "")), strings(inputs.get("entity_types"))
    ),
}
