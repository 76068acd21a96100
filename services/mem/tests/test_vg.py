from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import respx

from lore_common.testing.pytest_plugin import StoreProfile
from lore_common.testing.replies import chat_completion as completion

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

VG = "/api/v1/mem/vg"
LLM = "https://llm.example.test/v1"


@pytest.fixture
def db_env(store_profile: StoreProfile) -> dict[str, str]:
    """Every test here runs on the embedded stores, on PostgreSQL + Qdrant, and all in PostgreSQL."""
    return store_profile.env("mem")


async def add(client: Any, text: str, **scope: Any) -> dict[str, Any]:
    r = await client.post(f"{VG}/add", json={"messages": [{"role": "user", "content": text}], **scope})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_add_search_get_update_delete_with_history(mem: Any) -> None:
    added = await add(mem, "I'm vegetarian and I live in Berlin. What should I cook?", user_id="alice")
    assert added["relations"] == {"added_entities": [], "deleted_entities": []}
    [item] = added["results"]
    assert item["event"] == "ADD" and item["memory"] == "I'm vegetarian and I live in Berlin"
    memory_id = item["id"]

    found = (
        await mem.post(f"{VG}/search", json={"query": "where does she live Berlin", "user_id": "alice"})
    ).json()
    assert found["results"][0]["id"] == memory_id and 0 < found["results"][0]["score"] <= 1
    assert found["relations"] == []
    record = (await mem.get(f"{VG}/{memory_id}")).json()
    assert record["memory"] == item["memory"] and record["user_id"] == "alice" and record["hash"]

    r = await mem.put(f"{VG}/{memory_id}", json={"data": "Vegan now, still in Berlin"})
    assert r.status_code == 200 and r.json()["previous_memory"] == item["memory"]
    assert (await mem.get(f"{VG}/{memory_id}")).json()["memory"] == "Vegan now, still in Berlin"
    assert (await mem.delete(f"{VG}/{memory_id}")).status_code == 200
    assert (await mem.get(f"{VG}/{memory_id}")).status_code == 404
    history = (await mem.get(f"{VG}/{memory_id}/history")).json()
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"]
    assert (
        history[1]["old_memory"] == item["memory"]
        and history[1]["new_memory"] == "Vegan now, still in Berlin"
    )
    assert history[2]["is_deleted"] is True and history[2]["new_memory"] is None


async def test_errors(mem: Any) -> None:
    r = await mem.post(f"{VG}/add", json={"messages": [{"role": "user", "content": "I like tea"}]})
    assert r.status_code == 422 and "user_id" in r.json()["message"]
    assert (await mem.post(f"{VG}/search", json={"query": "tea"})).status_code == 422
    assert (await mem.post(f"{VG}/search", json={"query": "  ", "user_id": "u"})).status_code == 400
    assert (
        await mem.post(f"{VG}/search", json={"query": "x", "user_id": "u", "threshold": 2})
    ).status_code == 400
    assert (await mem.get(VG)).status_code == 422
    assert (await mem.get(f"{VG}/00000000-0000-0000-0000-000000000000")).status_code == 404
    assert (await mem.get(f"{VG}/not-a-uuid")).status_code == 404
    assert (
        await mem.put(f"{VG}/00000000-0000-0000-0000-000000000000", json={"data": "x"})
    ).status_code == 404
    memory_id = (await add(mem, "I work as a nurse in Lyon", user_id="u"))["results"][0]["id"]
    assert (await mem.put(f"{VG}/{memory_id}", json={"data": " "})).status_code == 400
    assert (await mem.delete(f"{VG}/00000000-0000-0000-0000-000000000000")).status_code == 404


async def test_scopes_are_isolated_and_delete_by_scope(mem: Any) -> None:
    await add(mem, "My favourite colour is green", user_id="alice")
    await add(mem, "My favourite colour is blue", user_id="bob")
    await add(mem, "My favourite colour is red", user_id="alice", run_id="r1")
    alice = (await mem.get(VG, params={"user_id": "alice"})).json()["results"]
    assert sorted(r["memory"] for r in alice) == [
        "My favourite colour is green",
        "My favourite colour is red",
    ]
    run = (await mem.get(VG, params={"user_id": "alice", "run_id": "r1"})).json()["results"]
    assert [r["memory"] for r in run] == ["My favourite colour is red"]
    found = (await mem.post(f"{VG}/search", json={"query": "favourite colour", "user_id": "bob"})).json()[
        "results"
    ]
    assert [r["memory"] for r in found] == ["My favourite colour is blue"]
    alice_ids = [r["id"] for r in alice]
    deleted = (await mem.delete(VG, params={"user_id": "alice"})).json()
    assert deleted["deleted"] == 2
    for memory_id in alice_ids:  # each deletion is in the history
        events = [(h["event"], h["is_deleted"]) for h in (await mem.get(f"{VG}/{memory_id}/history")).json()]
        assert events == [("ADD", False), ("DELETE", True)]
    assert (await mem.get(VG, params={"user_id": "alice"})).json()["results"] == []
    assert len((await mem.get(VG, params={"user_id": "bob"})).json()["results"]) == 1


async def test_repeat_changes_nothing_and_infer_false_stores_messages(mem: Any) -> None:
    first = await add(mem, "I have two cats named Miso and Tofu", user_id="u")
    again = await add(mem, "I have two cats named Miso and Tofu", user_id="u")
    assert len(first["results"]) == 1 and again["results"] == []
    raw = await mem.post(
        f"{VG}/add",
        json={
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello!"}],
            "agent_id": "bot",
            "infer": False,
            "metadata": {"dia_id": "D1:1"},
        },
    )
    results = raw.json()["results"]
    assert [r["memory"] for r in results] == ["hi", "hello!"]
    listed = (await mem.get(VG, params={"agent_id": "bot"})).json()["results"]
    assert {r["metadata"]["dia_id"] for r in listed} == {"D1:1"}


async def test_offline_changed_facts_replace_the_stale_ones(mem: Any) -> None:
    """The trial's changed facts: the stale memory is updated or deleted, not kept beside the new one
    (where search could rank it first)."""
    await add(mem, "I have two cats named Miso and Tofu.", user_id="bob")
    await add(mem, "My sister Emma lives in Berlin.", user_id="bob")
    changed = await add(mem, "I have three cats now: Miso, Tofu and Natto.", user_id="bob")
    assert [r["event"] for r in changed["results"]] == ["UPDATE"]
    listed = (await mem.get(VG, params={"user_id": "bob"})).json()["results"]
    assert sorted(r["memory"] for r in listed) == [
        "I have three cats now: Miso, Tofu and Natto",
        "My sister Emma lives in Berlin",
    ]

    await add(mem, "I am allergic to peanuts.", user_id="alice")
    fixed = "Actually I am no longer allergic to peanuts, my allergy is to shellfish"
    changed = await add(mem, fixed + ".", user_id="alice")
    assert sorted(r["event"] for r in changed["results"]) == ["ADD", "DELETE"]
    found = (await mem.post(f"{VG}/search", json={"query": "peanuts allergy", "user_id": "alice"})).json()
    assert [r["memory"] for r in found["results"]] == [fixed]


async def test_twenty_concurrent_adds_in_one_scope_lose_nothing_and_duplicate_nothing(mem: Any) -> None:
    texts = [f"Fact number {i % 15} about my garden and my plants" for i in range(20)]  # 5 repeats
    await asyncio.gather(
        *(
            mem.post(
                f"{VG}/add",
                json={"messages": [{"role": "user", "content": t}], "user_id": "g", "infer": False},
            )
            for t in texts
        )
    )
    stored = [r["memory"] for r in (await mem.get(VG, params={"user_id": "g"})).json()["results"]]
    assert sorted(stored) == sorted(set(texts)) and len(stored) == 15


MODEL = {
    "LORE__MEM__MEMORYVG__LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYVG__LLM__BASE_URL": LLM,
    "LORE__MEM__MEMORYVG__LLM__API_KEY": "sk-test",
    "LORE__MEM__MEMORYVG__LLM__MODEL": "gpt-4o-mini",
}


async def test_model_decides_update_delete_and_none_with_aliased_ids(mem_factory: Any) -> None:
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="mem.test").pass_through()
        route = mock.post(f"{LLM}/chat/completions").mock(
            side_effect=[
                # add 1: one fact, nothing existing
                httpx.Response(200, json=completion('{"facts": ["Likes pizza with mushrooms"]}')),
                httpx.Response(
                    200,
                    json=completion(
                        '{"memory": [{"id": "0", "text": "Likes pizza with mushrooms", "event": "ADD"}]}'
                    ),
                ),
                # add 2: a changed preference → UPDATE of alias 0, plus an unknown alias → ignored
                httpx.Response(200, json=completion('{"facts": ["Likes pizza with olives now"]}')),
                httpx.Response(
                    200,
                    json=completion(
                        '{"memory": [{"id": "0", "text": "Likes pizza with olives", "event": "UPDATE", '
                        '"old_memory": "Likes pizza with mushrooms"}, '
                        '{"id": "7", "text": "x", "event": "DELETE"}]}'
                    ),
                ),
                # add 3: a repeat → NONE
                httpx.Response(200, json=completion('{"facts": ["Likes pizza with olives"]}')),
                httpx.Response(
                    200,
                    json=completion(
                        '{"memory": [{"id": "0", "text": "Likes pizza with olives", "event": "NONE"}]}'
                    ),
                ),
                # add 4: a contradiction → DELETE
                httpx.Response(200, json=completion('{"facts": ["Does not eat pizza anymore"]}')),
                httpx.Response(
                    200,
                    json=completion(
                        '{"memory": [{"id": "0", "text": "Likes pizza with olives", "event": "DELETE"}]}'
                    ),
                ),
            ]
        )
        async with mem_factory(**MODEL) as client:
            first = await add(client, "I love pizza with mushrooms!", user_id="p")
            memory_id = first["results"][0]["id"]
            second = await add(client, "Actually I prefer olives on pizza now.", user_id="p")
            assert second["results"] == [
                {
                    "id": memory_id,
                    "memory": "Likes pizza with olives",
                    "event": "UPDATE",
                    "previous_memory": "Likes pizza with mushrooms",
                }
            ]
            update_prompt = json.loads(route.calls[3].request.content)["messages"][1]["content"]
            assert '"id":"0"' in update_prompt and memory_id not in update_prompt  # the model never sees ids
            assert (await add(client, "Olives on pizza, yes.", user_id="p"))["results"] == []
            fourth = await add(client, "I stopped eating pizza.", user_id="p")
            assert fourth["results"] == [
                {"id": memory_id, "memory": "Likes pizza with olives", "event": "DELETE"}
            ]
            history = (await client.get(f"{VG}/{memory_id}/history")).json()
            assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"]


async def test_memories_survive_a_restart(mem_factory: Any) -> None:
    async with mem_factory() as first:
        memory_id = (await add(first, "My passport expires in March 2027", user_id="t"))["results"][0]["id"]
    async with mem_factory() as second:
        found = (await second.post(f"{VG}/search", json={"query": "passport expiry", "user_id": "t"})).json()
        assert found["results"][0]["id"] == memory_id
        assert (await second.get(f"{VG}/{memory_id}")).json()["memory"] == "My passport expires in March 2027"


async def test_graph_relations_are_added_searched_and_removed_with_their_memory(mem_factory: Any) -> None:
    async with mem_factory(LORE__MEM__MEMORYVG__GRAPH_STORE__ENABLED="true") as client:
        added = await add(
            client, "My sister Anna works at Acme Robotics in Lisbon with Pedro Alves.", user_id="g"
        )
        relations = added["relations"]["added_entities"]
        assert relations and all(set(r) == {"source", "relationship", "destination"} for r in relations)
        names = {r["source"] for r in relations} | {r["destination"] for r in relations}
        assert {"Anna", "Acme Robotics"} <= names
        found = (
            await client.post(f"{VG}/search", json={"query": "Where does Anna work?", "user_id": "g"})
        ).json()
        assert any("Anna" in (r["source"], r["destination"]) for r in found["relations"])
        other = (await client.post(f"{VG}/search", json={"query": "Anna", "user_id": "someone-else"})).json()
        assert other["relations"] == []  # scopes are isolated in the graph too
        memory_id = added["results"][0]["id"]
        assert (await client.delete(f"{VG}/{memory_id}")).status_code == 200
        after = (await client.post(f"{VG}/search", json={"query": "Anna", "user_id": "g"})).json()
        assert after["relations"] == []
