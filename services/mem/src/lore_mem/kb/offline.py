"""The offline model's answer to the community-summary prompt: the leading sentence of each member's
description, up to three sentences."""

from __future__ import annotations

from collections.abc import Sequence

from lore_common.providers.offline import OfflineSkill, strings
from lore_common.text import sentences


def summarize(texts: Sequence[str], max_sentences: int = 3) -> str:
    picked: list[str] = []
    for text in texts:
        for sentence in sentences(text)[:1]:
            picked.append(sentence)
        if len(picked) >= max_sentences:
            break
    return " ".join(picked)


OFFLINE_SKILLS: dict[str, OfflineSkill] = {
    "summarize": lambda inputs: summarize(strings(inputs.get("texts"))),
}
