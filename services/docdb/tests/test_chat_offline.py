"""The offline model's answers to chat's own prompts: query variants for `rewriter`, the evidence
judge for `multihop`."""

from __future__ import annotations

import json

from lore_common.providers.chat import ChatMessage, ChatRequest, OfflineChat
from lore_docdb.chat.offline import OFFLINE_SKILLS


def request(task: str, **inputs: object) -> ChatRequest:
    return ChatRequest(
        messages=[ChatMessage("user", "ignored by the offline model")], task=task, inputs=inputs
    )


async def test_rewrite_gives_distinct_keyword_variants() -> None:
    model = OfflineChat(skills=OFFLINE_SKILLS)
    reply = json.loads(
        await model.complete(request("rewrite", query="effects of caffeine on sleep quality", n=3))
    )
    assert len(reply["queries"]) == 3 and len(set(reply["queries"])) == 3
    assert all("caffeine" in q or "sleep" in q for q in reply["queries"])


async def test_judge_accepts_covering_evidence_and_asks_for_what_is_missing() -> None:
    model = OfflineChat(skills=OFFLINE_SKILLS)
    enough = json.loads(
        await model.complete(
            request("judge", question="Where was Turing born?", evidence=["Turing was born in London."])
        )
    )
    assert enough == {"sufficient": True, "next_question": None}
    missing = json.loads(
        await model.complete(
            request(
                "judge", question="Which prize did Curie win in physics?", evidence=["Curie lived in Paris."]
            )
        )
    )
    assert missing["sufficient"] is False and "prize" in missing["next_question"]
