"""The offline model's answers to mem kb's prompts: the community summary (the leading sentence of each
member's description) and the answer, which is lore_common's extractive `answer` made stricter for a
memory whose passages repeat one another (a chunk, and the community summaries quoting it):

- a sentence that holds fewer than two of the question's keywords is no answer ("What is the capital
  of Australia?" against "…expanded to Europe, Asia and Australia."), and one after the first holds
  nearly as many of them as the first (`SLACK`; else it pads the answer with what shares a word);
- a sentence said already (bare, or behind an entity's label, `COBOL: …`) is not said again;
- sentences after the first are added while the answer stays short (`MAX_ANSWER_CHARS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lore_common.providers.offline import ABSTENTIONS, NO_ANSWER, OfflineSkill, strings
from lore_common.providers.offline import answer as extractive_answer
from lore_common.text import has_cjk, keywords, sentences, stem

MAX_ANSWER_CHARS = 600
# A sentence after the first holds at least as many of the question's keywords as the first, less this.
SLACK = 1
# A label before a colon: an entity's name heading its description in a community summary.
_LABEL = re.compile(r"^([^:\n]{1,80}):\s+(?=\S)")
# One quoted sentence of the extractive answer and the passage number it cites.
_PART = re.compile(r"(.+?) \[(\d+)\]\s?", re.DOTALL)


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def unlabelled(text: str) -> str:
    """The text without a leading `Name: ` that the text names again (`A-0: Grace Hopper developed the
    A-0 system` says A-0 once)."""
    found = _LABEL.match(text)
    if (
        found
        and _words(found.group(1))
        and f" {_words(found.group(1))} " in f" {_words(text[found.end() :])} "
    ):
        return text[found.end() :]
    return text


def summarize(texts: Sequence[str], max_sentences: int = 3) -> str:
    """The leading sentence of each description, each once, ending with a stop or `…` (so that a reader
    of the summary splits it where one description ends)."""
    picked: list[str] = []
    for text in texts:
        for sentence in sentences(unlabelled(text))[:1]:
            sentence = sentence.strip()
            if sentence and sentence[-1] not in ".!?。！？…\"'”’)":
                sentence += "…"  # a description cut short (a `.` after `e` reads as an abbreviation)
            if sentence not in picked:
                picked.append(sentence)
        if len(picked) >= max_sentences:
            break
    return " ".join(picked)


def answer(question: str, passages: Sequence[str], max_sentences: int = 3) -> str:
    """lore_common's extractive answer, asked for more sentences than it gives, then held to those
    that hold two of the question's keywords (and nearly as many as the first), each said once, while
    the answer stays short. A Chinese question gets the shared answer as it is."""
    if has_cjk(question):  # its keywords are jieba's words: the shared answer's own rules hold
        return extractive_answer(question, passages, max_sentences=max_sentences)
    quoted = extractive_answer(question, passages, max_sentences=max_sentences * 3)
    if quoted in ABSTENTIONS:
        return quoted
    asked = set(stem(keywords(question)))
    need = min(2, len(asked))
    kept: list[str] = []
    said: set[str] = set()
    for sentence, number in _PART.findall(quoted):
        bare = unlabelled(sentence.strip())
        holds = len(asked & set(stem(keywords(bare))))
        if _words(bare) in said or holds < need:
            continue
        need = max(need, holds - SLACK)  # a later sentence holds nearly as much of the question
        part = f"{bare} [{number}]"
        if kept and sum(len(k) + 1 for k in kept) + len(part) > MAX_ANSWER_CHARS:
            break
        said.add(_words(bare))
        kept.append(part)
        if len(kept) >= max_sentences:
            break
    return " ".join(kept) if kept else NO_ANSWER


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "summarize": lambda inputs: summarize(strings(inputs.get("texts"))),
    "answer": lambda inputs: answer(str(inputs.get("question", "")), strings(inputs.get("passages"))),
}
