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


def _events(old: str, new: str) -> list[tuple[str, str]]:
    decisions = update_memory([new], [{"id": "0", "text": old}])["memory"]
    return [(d["event"], d["text"]) for d in decisions]


def test_a_new_value_for_the_same_subject_and_predicate_updates_the_memory() -> None:
    """The user trial's changed facts: each replaces the stale one instead of sitting beside it."""
    for old, new in [
        ("I live in Lyon", "I live in Paris now"),
        ("My daughter is 4 years old", "My daughter turned 5 today"),
        ("I do not eat meat", "I started eating meat again"),
        ("I have two cats named Miso and Tofu", "I have three cats now: Miso, Tofu and Natto"),
        ("My favourite colour is green", "My favourite colour is blue now"),
    ]:
        assert _events(old, new) == [("UPDATE", new)], (old, new)


def test_a_fact_that_negates_a_memory_deletes_it_and_is_added() -> None:
    new = "Actually I am no longer allergic to peanuts, my allergy is to shellfish"
    assert _events("I am allergic to peanuts", new) == [
        ("DELETE", "I am allergic to peanuts"),
        ("ADD", new),
    ]
    assert _events("I eat meat", "I stopped eating meat")[0] == ("DELETE", "I eat meat")


def test_facts_that_can_both_hold_stay_separate() -> None:
    """Another subject, or a second value of a predicate that takes many, is no restatement."""
    for old, new in [
        ("I live in Lyon", "My sister Emma lives in Berlin"),
        ("I am allergic to peanuts", "I am allergic to cats"),
        ("I like tea", "I like jazz"),
        ("I have a dog", "I have two cats"),
        ("I am a nurse", "I am tired now"),
    ]:
        assert _events(old, new) == [("ADD", new)], (old, new)
