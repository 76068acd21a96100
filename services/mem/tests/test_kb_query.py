"""mem `kb` queries: every mode offline, community summaries, parametric memory first, bad requests."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from lore_common.testing.asgi import AppClient
from lore_common.testing.flows import FACT, INSERT, QUERY, ask, communities_ready, finished, insert, text_png
from lore_common.testing.replies import prompt_of, reply

LLM = "https://llm.example.test/v1"


MODEL = {
    "LORE__MEM__MEMORYKB__LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__LLM__BASE_URL": LLM,
    "LORE__MEM__MEMORYKB__LLM__API_KEY": "sk-test-kb",
    "LORE__MEM__MEMORYKB__LLM__MODEL": "gpt-4o-mini",
    "LORE__MEM__MEMORYKB__LLM__MAX_RETRIES": "0",
}

PM = {
    "LORE__MEM__MEMORYKB__PM_LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__PM_LLM__BASE_URL": "https://pm.example.test/v1",
    "LORE__MEM__MEMORYKB__PM_LLM__API_KEY": "sk-test-pm",
    "LORE__MEM__MEMORYKB__PM_LLM__MODEL": "qwen2.5-7b-instruct",
}


async def test_an_insert_is_queryable_in_every_mode_offline(mem: AppClient) -> None:
    job = await insert(mem, FACT)
    done = await finished(mem, job["id"], limit=5.0)
    assert done["status"] == "done" and done["chunks"] == 1 and done["entities"] >= 2
    await insert(mem, "The Oslo ferry timetable changes every spring.")
    await communities_ready(mem)
    for mode in ("naive", "local", "global", "hybrid"):
        answer = await ask(mem, "Who keeps the Zanzibar lighthouse burning?", mode=mode)
        assert answer["mode"] == mode and answer["pm_used"] is False and answer["pm_memory"] is None
        assert FACT in answer["rag_memory"], (mode, answer["rag_memory"])
        assert "Ilsa Varga" in answer["final_answer"]
    local = await ask(mem, "Who keeps the Zanzibar lighthouse burning?", mode="local")
    assert "-----Entities-----" in local["rag_memory"] and "Zanzibar" in local["rag_memory"]
    assert "-----Relations-----" in local["rag_memory"]
    assert (await ask(mem, "Zanzibar lighthouse?"))["mode"] == "hybrid"


async def test_global_mode_answers_from_community_summaries(mem_factory: Any) -> None:
    summary = "The Varga family has tended the Zanzibar light for a century (community report)."
    summaries: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        system, user = prompt_of(request)
        if system.startswith("Extract"):
            return reply(
                {
                    "entities": [
                        {
                            "name": "Ilsa Varga",
                            "type": "person",
                            "description": "Keeper of the Zanzibar lighthouse.",
                        },
                        {
                            "name": "Zanzibar lighthouse",
                            "type": "place",
                            "description": "A lighthouse lit since 1923.",
                        },
                    ],
                    "relations": [
                        {
                            "source": "Ilsa Varga",
                            "target": "Zanzibar lighthouse",
                            "description": "Ilsa Varga keeps the Zanzibar lighthouse burning.",
                            "weight": 2,
                        }
                    ],
                }
            )
        if system.startswith("You summarise"):
            summaries.append(user)
            return reply(summary)
        assert system.startswith("Answer the question from the memory context")
        return reply("Ilsa Varga keeps it burning [1].")

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with mem_factory(**MODEL) as client:
            assert (await finished(client, (await insert(client, FACT))["id"]))["status"] == "done"
            await communities_ready(client)
            answer = await ask(client, "Who tends the light?", mode="global")
            assert "-----Communities-----" in answer["rag_memory"]
            assert summary in answer["rag_memory"]
            assert FACT not in answer["rag_memory"]  # global reads summaries, not chunks
            assert answer["final_answer"] == "Ilsa Varga keeps it burning [1]."
            assert "Keeper of the Zanzibar lighthouse" in summaries[0]
            naive = await ask(client, "Who tends the light?", mode="naive")
            assert summary not in naive["rag_memory"] and FACT in naive["rag_memory"]


@pytest.mark.parametrize("relevant", [True, False])
async def test_parametric_memory_first_when_asked(mem_factory: Any, relevant: bool) -> None:
    def pm(request: httpx.Request) -> httpx.Response:
        return reply({"answer": "Paris is the capital of France.", "relevant": relevant})

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        route = router.post("https://pm.example.test/v1/chat/completions").mock(side_effect=pm)
        async with mem_factory(**PM) as client:
            await finished(client, (await insert(client, FACT))["id"])
            answer = await ask(client, "What is the capital of France? Zanzibar?", use_pm=True)
            assert route.call_count == 1
            assert answer["pm_memory"] == "Paris is the capital of France."
            assert answer["pm_relevant"] is relevant and answer["pm_used"] is relevant
            if relevant:
                assert (
                    answer["rag_memory"] == "" and answer["final_answer"] == "Paris is the capital of France."
                )
            else:
                assert FACT in answer["rag_memory"]
            plain = await ask(client, "Zanzibar?")
            assert route.call_count == 1 and plain["pm_used"] is False and plain["pm_memory"] is None


async def test_use_pm_without_a_pm_model_runs_retrieval(mem: AppClient) -> None:
    await finished(mem, (await insert(mem, FACT))["id"])
    answer = await ask(mem, "Zanzibar lighthouse?", use_pm=True, mode="naive")
    assert answer["pm_used"] is False and answer["pm_memory"] is None and FACT in answer["rag_memory"]


async def test_bad_requests_are_400_and_unknown_jobs_404(mem: AppClient) -> None:
    assert (await mem.post(INSERT, data={"query": "  "})).status_code == 400
    assert (await mem.post(INSERT, files={"image": ("a.png", text_png("x"), "image/png")})).status_code == 400
    assert (await mem.post(QUERY, json={"query": ""})).status_code == 400
    bad_mode = await mem.post(QUERY, json={"query": "x", "mode": "deep"})
    assert bad_mode.status_code == 400 and "mode" in json.dumps(bad_mode.json())
    assert (await mem.get(f"{INSERT}/nope")).status_code == 404
    assert (await mem.get(f"{INSERT}/..%2F..%2Fetc")).status_code == 404


def sse_events(text: str) -> list[tuple[str, Any]]:
    found = []
    for block in text.strip().split("\n\n"):
        name, data = (line.split(": ", 1)[1] for line in block.split("\n"))
        found.append((name, json.loads(data)))
    return found


async def test_a_streamed_query_ends_with_done_holding_the_plain_body(mem: AppClient) -> None:
    await finished(mem, (await insert(mem, FACT))["id"])
    ask_body = {"query": "Who keeps the Zanzibar lighthouse burning?", "mode": "naive"}
    r = await mem.post(QUERY, json={**ask_body, "stream": True})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    names = [name for name, _ in events]
    assert names[0] == "passages" and names[-2:] == ["citations", "done"] and set(names[1:-2]) == {"delta"}
    done = events[-1][1]
    assert "".join(payload["text"] for name, payload in events if name == "delta") == done["final_answer"]
    assert events[0][1] == {"rag_memory": done["rag_memory"], "passages": [FACT]}
    assert all(c["passage"] == FACT for c in events[-2][1]["citations"])
    assert (await mem.post(QUERY, json=ask_body)).json() == done


class _BrokenStream(httpx.AsyncByteStream):
    """An OpenAI stream whose connection drops after the first words."""

    async def __aiter__(self) -> Any:
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1732000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"content": "Ilsa Varga"}, "finish_reason": None}],
        }
        yield f"data: {json.dumps(chunk)}\n\n".encode()
        raise httpx.ReadError("connection reset by peer")


async def test_a_model_failing_mid_answer_is_the_error_event_then_done(mem_factory: Any) -> None:
    async with mem_factory() as client:
        await finished(client, (await insert(client, FACT))["id"])
        await communities_ready(client)

    def model(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("stream"):
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_BrokenStream())
        return httpx.Response(500, json={"error": {"message": "boom"}})

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with mem_factory(**MODEL) as client:
            ask_body = {"query": "Who keeps the Zanzibar lighthouse burning?", "mode": "naive"}
            r = await client.post(QUERY, json={**ask_body, "stream": True})
            plain = await client.post(QUERY, json=ask_body)
    events = sse_events(r.text)
    assert [name for name, _ in events] == ["passages", "delta", "error", "done"]
    assert events[1][1] == {"text": "Ilsa Varga"}
    error = events[2][1]
    assert set(error) == {"code", "message"} and error["code"] == 500
    assert error["message"].startswith("kb naive answer failed")
    failed = {"success": False, "code": 500, "message": error["message"], "detail": error["message"]}
    assert events[3][1] == failed
    # Not streaming, the same failure is the status with the same error body.
    assert plain.status_code == 500 and plain.json()["message"].startswith("kb naive answer failed")


async def test_the_openapi_document_shows_the_query_and_insert_bodies(mem: AppClient) -> None:
    document = (await mem.get("/schema/openapi.json")).json()
    query = document["paths"][QUERY]["post"]
    assert query["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("QueryRequest")
    content = query["responses"]["200"]["content"]
    assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/KbAnswer"}
    assert "text/event-stream" in content
    form = document["paths"][INSERT]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert set(form["properties"]) == {"query", "video", "audio", "image"} and form["required"] == ["query"]
    status = document["paths"][f"{INSERT}/{{job_id}}"]["get"]["responses"]["200"]["content"]
    assert status["application/json"]["schema"] == {"$ref": "#/components/schemas/InsertStatus"}
