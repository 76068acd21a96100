from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from lore_common.providers.chat import ChatMessage, ChatRequest, OfflineChat, complete_structured
from lore_common.providers.offline import extract_entities


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


class Graph(msgspec.Struct):
    entities: list[dict[str, object]]
    relations: list[dict[str, object]]


async def test_structured_tasks_decode_through_the_same_helper_as_real_models() -> None:
    model = OfflineChat()
    graph = await complete_structured(
        model, request("extract_entities", text="Alan Turing studied at Cambridge."), Graph
    )
    assert {e["name"] for e in graph.entities} >= {"Alan Turing", "Cambridge"}


async def test_untasked_chat_is_honest_about_being_offline() -> None:
    reply = await OfflineChat().complete(ChatRequest(messages=[ChatMessage("user", "Write me a poem")]))
    assert "No language model is configured" in reply


async def test_a_service_adds_the_skills_of_its_own_prompts() -> None:
    """A service hands its prompts' responders to the model; without them a task is not answered."""

    def shout(inputs: Mapping[str, Any]) -> dict[str, str]:
        return {"text": str(inputs.get("text", "")).upper()}

    plain = await OfflineChat().complete(request("shout", text="hi"))
    assert "No language model is configured" in plain
    model = OfflineChat(skills={"shout": shout})
    assert json.loads(await model.complete(request("shout", text="hi"))) == {"text": "HI"}
    # The shared skills stay available beside the service's own.
    assert "[1]" in await model.complete(request("answer", question="Who?", passages=["Ada wrote it."]))


async def test_answer_is_whole_sentences_with_their_subject_and_no_heading() -> None:
    hopper = (
        "# Grace Hopper\n\nGrace Hopper was a computer scientist and a rear admiral of the United States "
        "Navy. Grace Hopper\ndeveloped the first compiler, the A-0 system, in 1952, and her work led to "
        "the COBOL language.\n"
    )
    reply = await OfflineChat().complete(
        request("answer", question="Who developed the first compiler?", passages=[hopper])
    )
    assert reply.startswith("Grace Hopper developed the first compiler")
    assert "#" not in reply and reply.endswith("language. [1]")
    leaning = await OfflineChat().complete(
        request(
            "answer",
            question="Where was she born?",
            passages=["Ada Lovelace wrote notes. She was born in London."],
        )
    )
    assert leaning == "Ada Lovelace wrote notes. She was born in London. [1]"


async def test_answer_says_plainly_when_no_passage_answers() -> None:
    reply = await OfflineChat().complete(
        request("answer", question="What is the capital of Peru?", passages=["Ada Lovelace wrote notes."])
    )
    assert "[1]" not in reply and "no answer" in reply


async def test_answer_abstains_when_the_passages_share_only_a_word_with_the_question() -> None:
    """Passages about something else that happen to say "won" or "point" are no answer to a question
    about the World Cup or nitrogen; one that holds the question's subject still is."""
    guide = [
        "Battles won by the chieftain made the clan feared across the valley.",
        "I absolutely cannot wait to survey and explore Nigel's Point.",
    ]
    for question in ("Who won the 2018 FIFA World Cup?", "What is the boiling point of liquid nitrogen?"):
        reply = await OfflineChat().complete(request("answer", question=question, passages=guide))
        assert "[1]" not in reply and "[2]" not in reply and "no answer" in reply, (question, reply)
    found = await OfflineChat().complete(
        request(
            "answer",
            question="What is the boiling point of liquid nitrogen?",
            passages=[*guide, "Liquid nitrogen boils at 77 K, its boiling point at sea level."],
        )
    )
    assert found == "Liquid nitrogen boils at 77 K, its boiling point at sea level. [3]"


async def test_answer_drops_the_passages_own_reference_marks() -> None:
    """A paper's `[4]` quoted as it stands reads as this answer's citation of passage 4."""
    passages = [
        "Deep learning is used for layout detection [38, 22], table detection [26], and scene text "
        "detection [4].",
        "Unrelated text.",
        "More unrelated text.",
        "Still unrelated.",
    ]
    reply = await OfflineChat().complete(
        request("answer", question="What is deep learning used for in table detection?", passages=passages)
    )
    assert reply == (
        "Deep learning is used for layout detection, table detection, and scene text detection. [1]"
    )


async def test_answer_reads_a_table_row_with_its_header_before_a_title_line() -> None:
    """A row's number means nothing without its column: the answer names both; a title that shares
    the question's words ('Stanley Cups Since 67') comes after sentences, and a row matching only
    through its header is not quoted."""
    sheet = (
        "Stanley Cups Since 67\n\n| Team | Abbr | Stanley Cups |\n|---|---|---|\n"
        "| Maple Leafs | TOR | 13 |\n| Canadiens | MTL | 24 |\n"
    )
    reply = await OfflineChat().complete(
        request(
            "answer",
            question="How many Stanley Cups have the Maple Leafs won?",
            passages=[sheet, "The Maple Leafs play in Toronto."],
        )
    )
    assert reply.startswith("Team: Maple Leafs; Abbr: TOR; Stanley Cups: 13. [1] The Maple Leafs play")
    assert "Canadiens" not in reply
