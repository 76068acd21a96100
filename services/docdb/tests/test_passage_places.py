"""Passages know where they sit: parsed through the API, a PDF's passages carry their pages, a Markdown
or DOCX file's their heading path, a table row comes back whole under its header, and chat citations
name the page and the sections of the passage they cite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.chat.retrieval import Hit
from lore_docdb.chat.service import ChatService

DATA = Path(__file__).parent / "data"
HARBOURS = [
    ("Portree", "06:12", "12:30"),
    ("Mallaig", "05:40", "11:58"),
    ("Oban", "07:05", "13:21"),
    ("Tobermory", "06:48", "13:02"),
    ("Ullapool", "08:15", "14:33"),
    ("Stornoway", "08:40", "14:57"),
    ("Kyle", "06:20", "12:41"),
    ("Armadale", "05:55", "12:10"),
]
MANUAL = "\n".join(
    [
        "# Field Manual",
        "",
        "This manual is for the keepers of the western harbours.",
        "",
        "## Tides",
        "",
        "Each harbour's tides, from the almanac of the coming spring.",
        "",
        "| harbour | high tide | low tide |",
        "|---|---|---|",
        *(f"| {name} | {high} | {low} |" for name, high, low in HARBOURS),
        "",
        "## Lamps",
        "",
        "Lamps are lit at dusk and trimmed at midnight.",
    ]
)
SMALL_CHUNKS = {
    "LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE": "30",
    "LORE__PARAMETER__CHUNK_CONFIG__OVERLAP": "5",
}


async def retrieve(client: Any, query: str) -> list[dict[str, Any]]:
    reply = await client.post(
        "/api/v1/docdb/retrieve",
        json={"kb_id": "keepers", "query": query, "mode": "rerank", "max_results": 5},
    )
    assert reply.status_code == 200, reply.text
    data: list[dict[str, Any]] = reply.json()["data"]
    return data


async def test_passages_and_citations_carry_pages_heading_paths_and_whole_table_rows(
    docdb_factory: Any,
) -> None:
    files = {
        "lighthouse.pdf": (DATA / "sample.pdf").read_bytes(),  # three pages
        "field.docx": (DATA / "sample.docx").read_bytes(),
        "manual.md": MANUAL.encode(),
    }
    async with docdb_factory(**SMALL_CHUNKS) as client:
        await upload(client, "keepers", files)
        await client.post(KB, json={"name": "keepers"})
        [task_id] = await parse(client, "keepers", ["keepers"], mode=1)
        task = await wait_task(client, task_id)
        assert task["status"] == "completed", task

        [top, *_] = await retrieve(client, "automation replaced the last keepers museums")
        assert top["kb_name"] == "lighthouse.pdf" and "Automation replaced" in top["content"]
        assert (top["page"], top["page_end"], top["heading_path"]) == (3, 3, [])
        [top, *_] = await retrieve(client, "fog signals sounded every thirty seconds")
        assert (top["kb_name"], top["page"], top["page_end"]) == ("lighthouse.pdf", 2, 2)

        # a table split by rows: each row whole, under the header, with the sections it sits in
        for name, high, low in HARBOURS:
            found = await retrieve(client, f"{name} harbour tide")
            passage = next(item for item in found if name in item["content"])
            assert f"| {name} | {high} | {low} |" in passage["content"]
            assert passage["content"].startswith("| harbour | high tide | low tide |\n|---|---|---|\n")
            assert passage["heading_path"] == ["Field Manual", "Tides"]
            assert passage["page"] is None and passage["page_end"] is None
        [lamps, *_] = await retrieve(client, "lamps lit at dusk trimmed at midnight")
        assert lamps["heading_path"] == ["Field Manual", "Lamps"]
        assert lamps["content"].startswith("## Lamps\n\n")

        # without a mode, /retrieve fuses words and meaning (BM25 and vectors, as `rerank`): the
        # passage whose words a query repeats comes first
        reply = await client.post(
            "/api/v1/docdb/retrieve",
            json={"kb_id": "keepers", "query": "harbour's tides from the almanac of the coming spring"},
        )
        body = reply.json()
        assert body["query_info"]["mode"] == "rerank" and body["query_info"]["candidates"]["bm25"] > 0
        assert "almanac of the coming spring" in body["data"][0]["content"]

        # DOCX: its table in place under its heading, its last section under both headings
        [birds, *_] = await retrieve(client, "Stork arrives March leaves August")
        assert birds["kb_name"] == "field.docx"
        assert "| Stork | March | August |" in birds["content"]
        assert birds["heading_path"] == ["Field Guide"]
        [nest, *_] = await retrieve(client, "storks return to the same nest")
        assert nest["heading_path"] == ["Field Guide", "Nesting"]

        reply = await client.post(
            "/api/v1/docdb/chat",
            json={
                "query": "When were the last keepers replaced by automation?",
                "kb_id": "keepers",
                "user_id": "u",
                "query_mode": "rerank",
            },
        )
        body = reply.json()
        assert body["code"] == 200, body
        items = {item["source_id"][0]: item for item in body["data"]}
        assert body["citations"]
        for citation in body["citations"]:  # each citation points at its own passage and its place
            item = items[citation["chunk_id"]]
            assert citation["source_file"] == item["kb_name"]
            assert (citation["page"], citation["page_end"]) == (item["page"], item["page_end"])
            assert citation["heading_path"] == item["heading_path"]
        automation = [c for c in body["citations"] if "Automation" in items[c["chunk_id"]]["content"]]
        assert [(c["source_file"], c["page"]) for c in automation] == [("lighthouse.pdf", 3)]


class Objects:
    async def presigned_get(self, key: str) -> str:
        return f"https://objects.test/{key}?X-Amz-Signature=s"


async def test_a_pdf_link_opens_at_the_cited_page() -> None:
    chat: Any = ChatService.__new__(ChatService)
    chat.objects = Objects()
    pdf = Hit("c1", 1.0, "text", "docs", "guide.pdf", ("Guide",), 4, 5)
    assert await chat._file_url(pdf) == "https://objects.test/docs/guide.pdf?X-Amz-Signature=s#page=4"
    markdown = Hit("c2", 1.0, "text", "docs", "guide.md", ("Guide",))
    assert await chat._file_url(markdown) == "https://objects.test/docs/guide.md?X-Amz-Signature=s"


def test_the_model_is_shown_where_each_passage_sits() -> None:
    hits = [
        Hit("c1", 1.0, "Keepers trimmed the wicks.", "docs", "guide.pdf", ("Guide", "Lamps"), 2, 3),
        Hit("c2", 0.5, "Tea is served at four.", "docs", "notes.txt"),
    ]
    request = ChatService._answer_request("When are wicks trimmed?", hits)
    shown = request.messages[-1].content
    assert "[1] (guide.pdf, pp. 2-3, Guide > Lamps)\nKeepers trimmed the wicks." in shown
    assert "[2] (notes.txt)\nTea is served at four." in shown


def test_bm25_finds_a_chunk_by_the_titles_of_its_sections() -> None:
    from lore_common.structured_chunks import indexed_text
    from lore_docdb.index.bm25 import Bm25Index, ChunkSource
    from lore_docdb.parse.pipeline import Chunk

    chunk = Chunk("t:0", "guide.md", 0, "Run the two commands.", ["Guide", "Install"])
    assert chunk.indexed == "Guide > Install\n\nRun the two commands."  # what the vectors embed
    index = Bm25Index.build(
        [
            ChunkSource("a", indexed_text(chunk.text, chunk.heading_path)),  # as the store reads it
            ChunkSource("b", indexed_text("Lamps are trimmed at midnight.", ())),  # a source with no place
        ]
    )
    assert [cid for cid, _ in index.search("install", 5)] == ["a"]
    assert [cid for cid, _ in index.search("midnight", 5)] == ["b"]
