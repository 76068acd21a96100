from __future__ import annotations

import json

import msgspec

from lore_common.providers.chat import ChatMessage, ChatRequest, complete_structured
from lore_common.providers.offline import OfflineChat, extract_entities, extract_facts, update_memory


def request(task: str, **inputs: object) -> ChatRequest:
    return ChatRequest(
        messages=[ChatMessage("user", "ignored by the offline model")], task=task, inputs=inputs
    )


async def test_answer_is_extractive_and_cites_the_right_passage() -> None:
    passages = [
        "Lyon is known for its cuisine. The city lies at the confluence of two rivers.",
        "The Eiffel Tower was completed in 1889. It stands in Paris and is 330 metres tall.",
    ]
    reply = await OfflineChat().complete(
        request("answer", question="When was the Eiffel Tower completed?", passages=passages)
    )
    first = reply.split("[")[0]
    assert "1889" in first
    assert reply.split("]")[0].endswith("[2")  # the sentence comes from passage 2
    for number in {int(x) for x in __import__("re").findall(r"\[(\d+)\]", reply)}:
        assert 1 <= number <= len(passages)


async def test_answer_without_passages_says_so() -> None:
    reply = await OfflineChat().complete(request("answer", question="Anything?", passages=[]))
    assert "nothing to answer from" in reply


def test_english_entities_and_cooccurrence_relations() -> None:
    text = (
        "Marie Curie worked with Pierre Curie at the University of Paris. "
        'Marie Curie won the Nobel Prize in 1911. The paper "Radioactive Substances" was published.'
    )
    graph = extract_entities(text)
    names = {e["name"] for e in graph["entities"]}
    assert {
        "Marie Curie",
        "Pierre Curie",
        "University of Paris",
        "Nobel Prize",
        "Radioactive Substances",
    } <= names
    quoted = next(e for e in graph["entities"] if e["name"] == "Radioactive Substances")
    assert quoted["type"] == "文献实体"
    pairs = {(r["source"], r["target"]) for r in graph["relations"]}
    assert ("Marie Curie", "Pierre Curie") in pairs or ("Pierre Curie", "Marie Curie") in pairs
    assert all(r["weight"] >= 1 for r in graph["relations"])


def test_chinese_entities_by_part_of_speech() -> None:
    graph = extract_entities("鲁迅出生于浙江绍兴。鲁迅在北京大学任教，写了《狂人日记》。")
    names = {e["name"] for e in graph["entities"]}
    assert "鲁迅" in names
    assert "狂人日记" in names
    assert any(n in names for n in ("北京大学", "绍兴", "浙江"))
    assert any({r["source"], r["target"]} >= {"鲁迅"} for r in graph["relations"])


def test_entity_types_respect_a_schema() -> None:
    graph = extract_entities("Ada Lovelace met Charles Babbage in London.", entity_types=["抽象实体"])
    assert {e["type"] for e in graph["entities"]} == {"抽象实体"}


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


class Graph(msgspec.Struct):
    entities: list[dict[str, object]]
    relations: list[dict[str, object]]


async def test_structured_tasks_decode_through_the_same_helper_as_real_models() -> None:
    model = OfflineChat()
    graph = await complete_structured(
        model, request("extract_entities", text="Alan Turing studied at Cambridge."), Graph
    )
    assert {e["name"] for e in graph.entities} >= {"Alan Turing", "Cambridge"}
    reply = json.loads(
        await model.complete(request("rewrite", query="effects of caffeine on sleep quality", n=3))
    )
    assert len(reply["queries"]) == 3 and len(set(reply["queries"])) == 3
    verdict = json.loads(
        await model.complete(
            request("judge", question="Where was Turing born?", evidence=["Turing was born in London."])
        )
    )
    assert verdict["sufficient"] is True


async def test_untasked_chat_is_honest_about_being_offline() -> None:
    reply = await OfflineChat().complete(ChatRequest(messages=[ChatMessage("user", "Write me a poem")]))
    assert "No language model is configured" in reply
