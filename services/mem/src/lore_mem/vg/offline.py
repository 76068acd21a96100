"""The offline model's answers to `vg`'s prompts: fact extraction (one fact per informative user
sentence) and the ADD/UPDATE/DELETE/NONE decision against existing memories: a restatement of the
same subject and predicate with a new value (or a change word) updates, a negation deletes, else
keyword overlap."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import STOPWORDS, keywords, sentences, stem

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


_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’]*|[0-9]+(?:\.[0-9]+)?")
_CLAUSE = re.compile(r"[,;:]|\s(?:but|and then|whereas)\s", re.I)
_NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
_BE = frozenset("am is are was were be been 'm 're".split())
_HAVE = frozenset("have has had 've".split())
_DO = frozenset("do does did".split())
_MODALS = frozenset("can could will would shall should may might must 'd 'll".split())
_NEGATIONS = frozenset("not n't never".split())
_ADVERBS = frozenset(
    "now still also just actually really currently again already finally recently today lately "
    "longer no anymore officially".split()
)
# Words that say a value changed: a restatement that holds one of them replaces the old value.
_CHANGE = frozenset(
    "now longer anymore again moved turned started stopped changed became switched quit actually "
    "instead".split()
)
# Verbs whose object is a gerund (`started eating meat`): the gerund is the predicate.
_ASPECT_ON = frozenset(stem(["start", "begin", "began", "resume"]))
_ASPECT_OFF = frozenset(stem(["stop", "quit"]))
# Verbs that state a new value of the subject's attribute (`turned 5`, `became a nurse`).
_BECOME = frozenset(stem(["turn", "become", "became", "change", "switch"]))


@dataclass(frozen=True, slots=True)
class _Claim:
    """One clause as subject, predicate, object words, numbers and polarity."""

    subject: str
    predicate: str
    objects: frozenset[str]
    numbers: frozenset[str]
    negated: bool
    change: bool
    weak: bool  # `I am …` / `I have …`: too broad for a change word alone to make a restatement


def _words(tokens: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    numbers = {str(_NUMBER_WORDS.index(t)) if t in _NUMBER_WORDS else t for t in tokens}
    numbers = {n for n in numbers if n[0].isdigit()}
    rest = [t for t in tokens if t not in _NUMBER_WORDS and not t[0].isdigit()]
    content = [t for t in rest if t not in STOPWORDS and t not in _CHANGE and len(t) > 1]
    return frozenset(stem(content)), frozenset(numbers)


def _claim(clause: str) -> _Claim | None:
    """Parse `I …` / `my X …` clauses; others (a third person, a question) are left to word overlap."""
    raw = [t.replace("’", "'") for t in _TOKEN.findall(clause)]
    tokens: list[str] = []
    for t in raw:  # `I'm` → `i 'm`, `don't` → `do n't`
        low = t.lower()
        if low.endswith("n't"):
            tokens += [low[:-3] or "do", "n't"]
        elif "'" in low and low.split("'")[0] in ("i", "we"):
            head, tail = low.split("'", 1)
            tokens += [head, "'" + tail]
        else:
            tokens.append(low if t != "I" else "i")
    names = {t.lower() for t in raw[1:] if t[0].isupper() and t != "I"}
    start = next((i for i, t in enumerate(tokens) if t in ("i", "we", "my", "our")), None)
    if start is None:
        return None
    change = any(t in _CHANGE for t in tokens)
    i = start + 1
    if tokens[start] in ("my", "our"):
        subject_words: list[str] = []
        while i < len(tokens) and len(subject_words) < 3:
            t = tokens[i]
            if t in _BE | _HAVE | _DO | _MODALS | _NEGATIONS | _ADVERBS:
                break
            if subject_words and (t.endswith(("ed", "s")) and not t.endswith("ss")):
                break
            if t not in names:
                subject_words.append(t)
            i += 1
        if not subject_words:
            return None
        subject = " ".join(stem(subject_words))
    else:
        subject = tokens[start]
    negated = False
    predicate = ""
    while i < len(tokens):
        t = tokens[i]
        if t in _NEGATIONS or (t == "no" and i + 1 < len(tokens) and tokens[i + 1] == "longer"):
            negated = True
        elif t in _DO | _MODALS or t in _ADVERBS:
            pass
        elif t in _BE:
            predicate = "be"
        elif t in _HAVE and tokens[i + 1 : i + 2] == ["been"]:
            pass  # `I have been …`: an auxiliary
        elif t in _HAVE:
            predicate = "have"
            i += 1
            break
        elif predicate == "be" and t.endswith("ing") and len(t) > 5:
            predicate = stem([t])[0]  # `I am living in …` says what `I live in …` says
            i += 1
            break
        elif predicate == "be":
            # `am allergic to …`: the adjective and its preposition make the predicate.
            if i + 1 < len(tokens) and tokens[i + 1] in ("to", "of", "in", "at", "with", "from", "about"):
                predicate = "be " + stem([t])[0]
                i += 2
            break
        else:
            [lemma] = stem([t])
            if lemma in _ASPECT_ON | _ASPECT_OFF and i + 1 < len(tokens) and tokens[i + 1].endswith("ing"):
                negated = negated != (lemma in _ASPECT_OFF)
                i += 1
                [lemma] = stem([tokens[i]])
            predicate = lemma
            i += 1
            break
        i += 1
    if not predicate:
        return None
    rest = tokens[i:]
    negated = negated or "anymore" in rest or "any more" in " ".join(rest)
    objects, numbers = _words(rest)
    weak = predicate in ("be", "have") and tokens[start] in ("i", "we")
    return _Claim(subject, predicate, objects, numbers, negated, change, weak)


def _claims(text: str) -> list[_Claim]:
    return [c for part in _CLAUSE.split(text) if (c := _claim(part))]


def _restates(new: _Claim, old: _Claim) -> str | None:
    """`UPDATE` when `new` gives the same subject's predicate a new value, `DELETE` when it negates
    `old`, else None: different subjects, or two values that can both hold (`I like tea`, `I like jazz`)."""
    if new.subject != old.subject:
        return None
    shared = bool(new.objects & old.objects)
    if new.predicate != old.predicate:
        # `My daughter is 4 years old` → `My daughter turned 5`: a change verb with a new number or word.
        new_number = bool(new.numbers and old.numbers and new.numbers != old.numbers)
        changed = new.predicate in _BECOME and not (new.negated or old.negated)
        return "UPDATE" if changed and (new_number or shared) else None
    if new.negated != old.negated:
        if not (shared or (not new.objects and not old.objects)):
            return None
        return "DELETE" if new.negated else "UPDATE"
    if new.objects == old.objects and new.numbers == old.numbers:
        return None
    if shared and new.numbers != old.numbers:
        return "UPDATE"  # `two cats` → `three cats`
    if new.change and (not new.weak or shared):
        return "UPDATE"  # `I live in Lyon` → `I live in Paris now`
    return None


def _both_hold(new: list[_Claim], old: list[_Claim]) -> bool:
    """Same subject and predicate with other objects (`allergic to peanuts`, `allergic to cats`): two
    values that both hold, however many other words they share."""
    return any(
        n.subject == o.subject and n.predicate == o.predicate and not n.objects & o.objects
        for n in new
        for o in old
    )


def _restated(
    new: list[_Claim], candidates: list[dict[str, Any]], claims: dict[str, list[_Claim]]
) -> tuple[dict[str, Any], str] | None:
    """The first candidate (most similar first) that a clause of the new fact restates, and how."""
    for candidate in candidates:
        for n in new:
            for o in claims[str(candidate["id"])]:
                if event := _restates(n, o):
                    return candidate, event
    return None


def update_memory(
    facts: Sequence[str], existing: Sequence[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """ADD new facts; UPDATE a memory a fact restates with a new value or clearly rewords; DELETE a
    memory the fact negates (and ADD the fact); NONE for exact repeats."""
    decisions: list[dict[str, Any]] = []
    seen = {hashlib.md5(str(e["text"]).encode(), usedforsecurity=False).hexdigest(): e for e in existing}
    claims = {str(e["id"]): _claims(str(e["text"])) for e in existing}
    taken: set[str] = set()
    next_id = len(existing)
    for fact in facts:
        digest = hashlib.md5(fact.encode(), usedforsecurity=False).hexdigest()
        if digest in seen:
            item = seen[digest]
            decisions.append({"id": str(item["id"]), "text": item["text"], "event": "NONE"})
            continue
        new_claims = _claims(fact)
        ranked = sorted(existing, key=lambda e: -_similarity(fact, str(e["text"])))
        verdict = _restated(new_claims, [e for e in ranked if str(e["id"]) not in taken], claims)
        if verdict is not None:
            target, event = verdict
            taken.add(str(target["id"]))
            if event == "DELETE":
                decisions.append({"id": str(target["id"]), "text": target["text"], "event": "DELETE"})
                decisions.append({"id": str(next_id), "text": fact, "event": "ADD"})
                next_id += 1
            else:
                decisions.append(
                    {"id": str(target["id"]), "text": fact, "event": "UPDATE", "old_memory": target["text"]}
                )
            continue
        best = next((e for e in ranked if str(e["id"]) not in taken), None)
        if (
            best is not None
            and _similarity(fact, str(best["text"])) >= 0.5
            and not _both_hold(new_claims, claims[str(best["id"])])
        ):
            taken.add(str(best["id"]))
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
