from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import Any

import httpx
import pytest
import respx

from lore_common.bm25 import rrf
from lore_common.testing.replies import chat_completion as completion

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"
CHAT = "/api/v1/docdb/chat"
LLM = "https://llm.example.test/v1"
GRAPH = {"LORE__DOCDB__GRAPH_STORE__ENABLED": "true"}

DOCS = {
    "curie.txt": (
        "Marie Curie was a physicist and chemist who worked at the University of Paris. "
        "The Nobel Prize in Chemistry was awarded to Marie Curie in 1911 "
        "for the discovery of polonium and radium."
    ),
    "turing.txt": (
        "Alan Turing proposed the Turing Machine in 1936. "
        "Alan Turing worked at Bletchley Park during the Second World War, breaking the Enigma cipher."
    ),
    "hopper.md": "Grace Hopper developed the first compiler, A-0, in 1952, and later worked on COBOL.",
}


async def build_kb(client: Any, mode: int = 0, name: str = "science") -> None:
    await client.post(DS, json={"name": "papers"})
    for filename, text in DOCS.items():
        await client.post(f"{DS}/papers/files", files={"files": (filename, text.encode())})
    await client.post(KB, json={"name": name})
    r = await client.post(f"{KB}/{name}/parse", json={"datasets": ["papers"], "mode": mode})
    task_id = r.json()["data"]["tasks"][0]["task_id"]
    deadline = time.monotonic() + 60
    while (task := (await client.get(f"{TASKS}/{task_id}")).json())["status"] not in ("completed", "failed"):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert task["status"] == "completed", task


async def ask(client: Any, query: str, **extra: Any) -> dict[str, Any]:
    body = {"query": query, "kb_id": "science", "user_id": "u1", **extra}
    r = await client.post(CHAT, json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_rrf_on_a_fixed_example() -> None:
    fused = dict(rrf([["a", "b", "c"], ["b", "d"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] == pytest.approx(1 / 62)
    assert [item for item, _ in rrf([["a", "b", "c"], ["b", "d"]])] == ["b", "a", "d", "c"]


def test_weighted_rrf_lets_the_stronger_list_lead() -> None:
    fused = dict(rrf([["v1", "x"], ["b1", "x"]], k=2, weights=[1.0, 4.0]))
    assert fused["b1"] == pytest.approx(4 / 3)
    assert fused["x"] == pytest.approx(1 / 4 + 4 / 4)
    assert fused["v1"] == pytest.approx(1 / 3)
    assert [item for item, _ in rrf([["v1", "x"], ["b1", "x"]], k=2, weights=[1.0, 4.0])] == ["b1", "x", "v1"]


async def test_every_client_mistake_is_code_400_with_http_200(docdb: Any) -> None:
    await docdb.post(KB, json={"name": "science"})
    cases = [
        ({"query": "", "kb_id": "science", "user_id": "u"}, "query is empty"),
        ({"query": "x" * 4097, "kb_id": "science", "user_id": "u"}, "limit is 4096"),
        ({"query": "q", "user_id": "u"}, "kb_id is missing"),
        ({"query": "q", "kb_id": "science"}, "user_id is missing"),
        ({"query": "q", "kb_id": "science", "user_id": ""}, "user_id is empty"),
        ({"query": "q", "kb_id": "science", "user_id": "u", "query_mode": "magic"}, "unknown"),
        ({"query": "q", "kb_id": "ghost", "user_id": "u"}, "does not exist"),
        ({"query": "q", "kb_id": "science", "user_id": "u", "max_results": 0}, "max_results"),
        ({"query": "q", "kb_id": "science", "user_id": "u", "top_k": -1}, "top_k"),
    ]
    for body, why in cases:
        r = await docdb.post(CHAT, json=body)
        assert r.status_code == 200
        answer = r.json()
        assert (answer["success"], answer["code"]) == (False, 400), body
        assert why in answer["message"], (body, answer["message"])
        uuid.UUID(answer["request_id"])
    broken = await docdb.post(CHAT, content=b"{not json", headers={"content-type": "application/json"})
    assert broken.status_code == 200 and broken.json()["code"] == 400


async def test_query_mode_must_fit_the_kb_process_mode(docdb: Any) -> None:
    await build_kb(docdb, mode=1)
    answer = await ask(docdb, "Who built the first compiler?", query_mode="multihop")
    assert answer["code"] == 400 and "does not fit" in answer["message"]
    assert (await ask(docdb, "Who built the first compiler?", query_mode="rerank"))["code"] == 200


async def test_an_offline_answer_that_abstains_cites_nothing(docdb: Any) -> None:
    """A question the KB does not cover: the offline model says so, and lists no sources under it."""
    await build_kb(docdb, mode=1)
    answer = await ask(docdb, "Who won the 2018 FIFA World Cup in Moscow?")
    assert answer["code"] == 200 and "no answer" in answer["response"], answer["response"]
    assert answer["citations"] == [] and answer["data"]  # passages were retrieved, none is cited


async def test_offline_naive_answer_cites_the_right_file(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        await build_kb(client)
        r = await client.post(
            CHAT,
            json={
                "query": "When was the Nobel Prize awarded to Marie Curie?",
                "kb_id": "science",
                "user_id": "u",
            },
            headers={"x-request-id": "rid-chat-1"},
        )
        answer = r.json()
        assert answer["success"] is True and answer["code"] == 200
        assert answer["request_id"] == "rid-chat-1" == r.headers["x-request-id"]
        assert "1911" in answer["response"]
        numbers = {int(n) for n in re.findall(r"\[(\d+)\]", answer["response"])}
        assert numbers and numbers == {c["index"] for c in answer["citations"]}
        first = next(c for c in answer["citations"] if c["index"] == min(numbers))
        cited = next(item for item in answer["data"] if item["source_id"] == [first["chunk_id"]])
        assert first == {
            "index": first["index"],
            "source_file": "curie.txt",
            "dataset": "papers",
            "file_url": None,
            "chunk_id": cited["source_id"][0],  # the cited passage itself
            "heading_path": [],
            "page": None,
            "page_end": None,
        }
        assert answer["total_count"] == len(answer["data"]) > 0
        item = answer["data"][0]
        assert item["kb_id"] == "science" and item["kb_name"] == "curie.txt" and item["source_id"]
        info = answer["query_info"]
        assert (
            info["mode"] == "naive" and info["candidates"]["vector"] > 0 and info["candidates"]["graph"] > 0
        )
        assert info["model_calls"] == 1 and info["timings_ms"]["total_ms"] > 0


async def test_max_results_caps_data(docdb: Any) -> None:
    await build_kb(docdb, mode=1)
    answer = await ask(docdb, "compiler Turing Curie", max_results=1, query_mode="rerank")
    assert answer["total_count"] == len(answer["data"]) == 1


async def test_direct_mode_has_no_data_and_no_citations(docdb: Any) -> None:
    await build_kb(docdb, mode=1)
    answer = await ask(docdb, "Say hello", query_mode="direct")
    assert answer["code"] == 200 and answer["data"] == [] and answer["citations"] == []
    assert "No language model is configured" in answer["response"]


async def test_rerank_uses_the_cross_encoder_when_configured(docdb_factory: Any) -> None:
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()

        def score(request: httpx.Request) -> httpx.Response:
            pairs = json.loads(request.content)["pairs"]
            return httpx.Response(200, json={"scores": [1.0 if "Hopper" in doc else 0.0 for _, doc in pairs]})

        route = mock.post("http://reranker.test/rerank").mock(side_effect=score)
        async with docdb_factory(LORE__DOCDB__QUERY_DEFAULTS__RERANKER_URL="http://reranker.test") as client:
            await build_kb(client, mode=1)
            answer = await ask(client, "Who worked at Bletchley Park?", query_mode="rerank")
            assert route.called
            assert (
                json.loads(route.calls.last.request.content)["pairs"][0][0] == "Who worked at Bletchley Park?"
            )
            assert answer["data"][0]["kb_name"] == "hopper.md"  # the cross-encoder's order wins


async def test_rerank_without_a_reranker_is_rrf_of_bm25_and_vectors(docdb: Any) -> None:
    await build_kb(docdb, mode=1)
    answer = await ask(docdb, "Bletchley Park Enigma", query_mode="rerank")
    assert answer["data"][0]["kb_name"] == "turing.txt"
    assert answer["query_info"]["candidates"]["bm25"] > 0


async def test_bm25_matches_other_forms_of_a_word(docdb: Any) -> None:
    """Stemming: "discoveries" finds "discovery", "developing" finds "developed"."""
    await build_kb(docdb, mode=1)
    for query, expected in (("discoveries of radium", "curie.txt"), ("developing compilers", "hopper.md")):
        r = await docdb.post(
            "/api/v1/docdb/retrieve", json={"kb_id": "science", "query": query, "mode": "rerank"}
        )
        assert r.status_code == 200, r.text
        assert r.json()["data"][0]["kb_name"] == expected
        assert r.json()["query_info"]["candidates"]["bm25"] >= 1


MODEL = {
    "LORE__DOCDB__LLM__PROVIDER": "openai",
    "LORE__DOCDB__LLM__BASE_URL": LLM,
    "LORE__DOCDB__LLM__API_KEY": "sk-test",
    "LORE__DOCDB__LLM__MODEL": "gpt-4o-mini",
    "LORE__DOCDB__LLM__MAX_RETRIES": "1",
    "LORE__DOCDB__LLM__RETRY_BACKOFF": "0.01",
}


async def with_model(
    docdb_factory: Any, replies: list[httpx.Response], body: dict[str, Any]
) -> tuple[dict[str, Any], Any, list[str]]:
    """Parse (mode 0, graph store off) with the offline model, then chat with a mocked OpenAI model."""
    async with docdb_factory() as client:
        await build_kb(client, mode=0)
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        route = mock.post(f"{LLM}/chat/completions").mock(side_effect=replies)
        async with docdb_factory(**MODEL) as client:
            seen: list[str] = []
            retriever = client.app.state.chat.retriever
            original = retriever.naive

            async def spy(kb: str, query: str, *args: Any) -> Any:
                seen.append(query)
                return await original(kb, query, *args)

            retriever.naive = spy
            r = await client.post(CHAT, json={"kb_id": "science", "user_id": "u", **body})
            return r.json(), route, seen


async def test_rewriter_sends_three_variants_to_the_retriever(docdb_factory: Any) -> None:
    variants = {"queries": ["Turing Bletchley Park", "Enigma codebreakers", "Second World War cryptanalysis"]}
    answer, route, seen = await with_model(
        docdb_factory,
        [
            httpx.Response(200, json=completion(json.dumps(variants))),
            httpx.Response(200, json=completion("Alan Turing worked at Bletchley Park [1].")),
        ],
        {"query": "Who broke Enigma?", "query_mode": "rewriter"},
    )
    assert answer["code"] == 200, answer
    assert set(variants["queries"]) <= set(seen) and len(seen) == 4
    assert answer["query_info"]["model_calls"] == 2
    assert answer["citations"][0]["index"] == 1 and answer["citations"][0]["source_file"] == "turing.txt"
    final_prompt = json.loads(route.calls.last.request.content)["messages"][1]["content"]
    assert "[1]" in final_prompt and "Question: Who broke Enigma?" in final_prompt


async def test_multihop_stops_after_three_rounds(docdb_factory: Any) -> None:
    insufficient = [
        httpx.Response(
            200, json=completion('{"sufficient": false, "next_question": "Where is Bletchley Park?"}')
        ),
        httpx.Response(
            200, json=completion('{"sufficient": false, "next_question": "Who worked on COBOL?"}')
        ),
        httpx.Response(200, json=completion("Grace Hopper worked on COBOL [2].")),
    ]
    answer, route, seen = await with_model(
        docdb_factory, insufficient, {"query": "Compare Turing and Hopper", "query_mode": "multihop"}
    )
    assert answer["code"] == 200, answer
    assert seen == ["Compare Turing and Hopper", "Where is Bletchley Park?", "Who worked on COBOL?"]
    assert answer["query_info"]["candidates"]["rounds"] == 3
    assert route.call_count == 3  # two judgements, one answer; no fourth round


async def test_multihop_stops_early_when_the_evidence_suffices(docdb_factory: Any) -> None:
    answer, route, seen = await with_model(
        docdb_factory,
        [
            httpx.Response(200, json=completion('{"sufficient": true, "next_question": null}')),
            httpx.Response(200, json=completion("Grace Hopper [1].")),
        ],
        {"query": "Who developed A-0?", "query_mode": "multihop"},
    )
    assert seen == ["Who developed A-0?"] and route.call_count == 2 and answer["code"] == 200


async def test_a_model_error_is_code_500_naming_the_model(docdb_factory: Any) -> None:
    answer, _, _ = await with_model(
        docdb_factory,
        [httpx.Response(500, json={"error": {"message": "boom"}}), httpx.Response(503, text="unavailable")],
        {"query": "Who developed A-0?"},
    )
    assert answer["success"] is False and answer["code"] == 500
    assert "model failed" in answer["message"] and "openai:gpt-4o-mini" in answer["message"]


async def test_retrieve_api_returns_chunks_without_a_model_call(docdb: Any) -> None:
    await build_kb(docdb, mode=1)
    for mode in ("naive", "rerank"):
        r = await docdb.post(
            "/api/v1/docdb/retrieve",
            json={"kb_id": "science", "query": "first compiler", "mode": mode, "max_results": 2},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["total_count"] == len(body["data"]) == 2
        assert body["data"][0]["kb_name"] == "hopper.md"
        assert body["query_info"]["model_calls"] == 0
    assert (
        await docdb.post("/api/v1/docdb/retrieve", json={"kb_id": "ghost", "query": "q"})
    ).status_code == 404
    assert (await docdb.post("/api/v1/docdb/retrieve", json={"kb_id": "science"})).status_code == 400


async def test_citations_carry_presigned_urls_with_object_storage(docdb_factory: Any, moto_s3: str) -> None:
    env = {
        "LORE__DOCDB__OBJECT_STORAGE__BUCKET": f"lore-{uuid.uuid4().hex[:8]}",
        "LORE__DOCDB__OBJECT_STORAGE__ENDPOINT_URL": moto_s3,
        "LORE__DOCDB__OBJECT_STORAGE__ACCESS_KEY": "testing",
        "LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY": "testing",
    }
    async with docdb_factory(**env) as client:
        await build_kb(client, mode=1)
        answer = await ask(client, "Who developed the first compiler?", query_mode="rerank")
        urls = {c["source_file"]: c["file_url"] for c in answer["citations"]}
        assert urls["hopper.md"]
        async with httpx.AsyncClient() as http:
            fetched = await http.get(urls["hopper.md"])
        assert fetched.status_code == 200 and fetched.content == DOCS["hopper.md"].encode()


class _BrokenStream(httpx.AsyncByteStream):
    """An OpenAI stream whose connection drops after the first words."""

    async def __aiter__(self) -> Any:
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1732000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"content": "Grace Hopper"}, "finish_reason": None}],
        }
        yield f"data: {json.dumps(chunk)}\n\n".encode()
        raise httpx.ReadError("connection reset by peer")


def sse_events(text: str) -> list[tuple[str, Any]]:
    found = []
    for block in text.strip().split("\n\n"):
        name, data = (line.split(": ", 1)[1] for line in block.split("\n"))
        found.append((name, json.loads(data)))
    return found


async def test_a_model_that_fails_mid_stream_ends_with_an_error_event(docdb_factory: Any) -> None:
    async with docdb_factory() as client:
        await build_kb(client, mode=0)
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        mock.post(f"{LLM}/chat/completions").mock(
            return_value=httpx.Response(
                200, headers={"content-type": "text/event-stream"}, stream=_BrokenStream()
            )
        )
        async with docdb_factory(**MODEL) as client:
            body = {"kb_id": "science", "user_id": "u", "query": "Who developed A-0?", "stream": True}
            r = await client.post(CHAT, json=body)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    assert [name for name, _ in events] == ["passages", "delta", "error", "done"]
    assert events[1][1] == {"text": "Grace Hopper"}
    # Part of the answer was out: no retry (it would repeat it), the failure is final and says why.
    assert events[2][1]["code"] == 500 and "openai:gpt-4o-mini" in events[2][1]["message"]
    assert events[3][1]["success"] is False and events[3][1]["code"] == 500


async def test_stream_must_be_a_boolean(docdb: Any) -> None:
    r = await docdb.post(CHAT, json={"kb_id": "science", "user_id": "u", "query": "x", "stream": "yes"})
    assert (
        r.status_code == 200
        and r.json()["code"] == 400
        and "stream must be true or false" in r.json()["message"]
    )


async def test_the_openapi_document_shows_chat_as_json_or_an_event_stream(docdb: Any) -> None:
    document = (await docdb.get("/schema/openapi.json")).json()
    content = document["paths"][CHAT]["post"]["responses"]["200"]["content"]
    assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/ChatResponse"}
    event = content["text/event-stream"]["schema"]
    assert event["type"] == "object" and set(event["required"]) == {"event", "data"}
    assert event["properties"]["event"]["enum"] == ["passages", "delta", "citations", "error", "done"]


async def test_a_streamed_chat_ends_with_done_holding_the_plain_body(docdb: Any) -> None:
    await build_kb(docdb, mode=1)
    body = {"kb_id": "science", "user_id": "u", "query": "Who developed the first compiler?"}
    r = await docdb.post(CHAT, json={**body, "stream": True})
    events = sse_events(r.text)
    names = [name for name, _ in events]
    assert names[0] == "passages" and names[-2:] == ["citations", "done"]
    assert set(names[1:-2]) == {"delta"}
    done = events[-1][1]
    assert (
        done["success"] is True and "".join(p["text"] for n, p in events if n == "delta") == done["response"]
    )
    assert events[0][1] == {"data": done["data"], "total_count": done["total_count"]}
    assert events[-2][1] == {"citations": done["citations"]}
    plain = await ask(docdb, body["query"])
    steady = ("timings_ms",)
    assert {k: v for k, v in plain["query_info"].items() if k not in steady} == {
        k: v for k, v in done["query_info"].items() if k not in steady
    }
    assert (plain["response"], plain["citations"]) == (done["response"], done["citations"])


async def test_a_streamed_chat_mistake_is_the_error_event_then_the_failed_body(docdb: Any) -> None:
    r = await docdb.post(CHAT, json={"kb_id": "ghost", "user_id": "u", "query": "x", "stream": True})
    events = sse_events(r.text)
    assert [name for name, _ in events] == ["error", "done"]
    assert events[0][1] == {"code": 400, "message": "knowledge base 'ghost' does not exist"}
    assert events[1][1]["success"] is False and events[1][1]["code"] == 400
    assert events[1][1]["message"] == events[0][1]["message"]


async def test_the_openapi_document_shows_the_chat_and_retrieve_bodies(docdb: Any) -> None:
    document = (await docdb.get("/schema/openapi.json")).json()
    schemas = document["components"]["schemas"]
    chat = document["paths"][CHAT]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert chat == {"$ref": "#/components/schemas/ChatRequestBody"}
    assert {"query", "kb_id", "user_id", "query_mode", "stream"} <= set(
        schemas["ChatRequestBody"]["properties"]
    )
    retrieve = document["paths"]["/api/v1/docdb/retrieve"]["post"]
    assert retrieve["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "RetrieveRequest"
    )
    reply = retrieve["responses"]["200"]["content"]["application/json"]["schema"]
    assert reply == {"$ref": "#/components/schemas/Retrieved"}
    assert schemas["ChatResponse"]["properties"]["query_info"] == {"$ref": "#/components/schemas/QueryInfo"}


async def test_an_empty_chat_body_is_code_400_naming_the_missing_query(docdb: Any) -> None:
    r = await docdb.post(CHAT, content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["code"] == 400 and "query is missing" in r.json()["message"]
    r = await docdb.post(CHAT, json=[1, 2])
    assert r.status_code == 200 and r.json()["message"].startswith("the body must be a JSON object")
