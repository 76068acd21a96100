"""The offline model's answers to vg's prompts: facts from informative user sentences, and the
ADD/UPDATE/NONE decision against existing memories."""

from __future__ import annotations

import json

from lore_common.providers.chat import ChatMessage, ChatRequest, OfflineChat
from lore_mem.vg.offline import OFFLINE_SKILLS, extract_facts, update_memory


def test_facts_come_from_informative_user_sentences_only() -> None:
    facts = extract_facts(
        [
            {
                "role": "user",
                "content": "Hi! I'm vegetarian and I live in Berlin. What should I cook tonight?",
            },
            {"role": "assistant", "content": "You could make a lentil curry."},
            {"role": "user", "content": "My sister Anna is allergic to peanuts."},
        ]
    )["facts"]
    assert "I'm vegetarian and I live in Berlin" in facts
    assert "My sister Anna is allergic to peanuts" in facts
    assert not any("lentil" in f for f in facts)
    assert not any(f.endswith("?") for f in facts)


def test_memory_update_adds_updates_and_ignores_repeats() -> None:
    existing = [{"id": "0", "text": "Likes pizza with mushrooms"}, {"id": "1", "text": "Lives in Berlin"}]
    decisions = update_memory(
        ["Lives in Berlin", "Likes pizza with olives and mushrooms", "Works as a nurse"], existing
    )["memory"]
    events = {(d["event"], d["id"]) for d in decisions}
    assert ("NONE", "1") in events
    assert ("UPDATE", "0") in events
    assert any(d["event"] == "ADD" and d["text"] == "Works as a nurse" for d in decisions)


async def test_the_vg_model_answers_fact_extraction_through_its_skill() -> None:
    model = OfflineChat(skills=OFFLINE_SKILLS)
    reply = await model.complete(
        ChatRequest(
            messages=[ChatMessage("user", "ignored")],
            task="extract_facts",
            inputs={"messages": [{"role": "user", "content": "I work as a nurse in Lyon."}]},
        )
    )
    assert json.loads(reply) == {"facts": ["I work as a nurse in Lyon"]}
