"""What real documents lose between the converter's text and `/retrieve` (bench/documents.py,
bench/html_pages_api.py): a passage asked for with its own opening words comes back first, even in a
long chunk among passages that share the words (a patent's claims), under a formula's symbols, or
a Chinese sentence asked for with a space between its characters; words beyond ASCII (Korean, Greek,
accented) are searchable; a section asked for by a title of common words comes first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.chat.retrieval import Hit, titles_first
from lore_docdb.index.bm25 import Bm25Index, ChunkSource, _load_saved

CLAIM = (
    "A plant cultivation method comprising irradiating plants with light emitted from the lamp "
    "according to claim 2."
)


# One long section of claims (a single chunk), then short sections that repeat the claim's words
# without quoting it: shorter and denser in the query's words, BM25 and the vectors put them first.
def patent(notes: int) -> str:
    return "\n".join(
        [
            "# Plant lamp",
            "",
            "## Claims",
            "",
            *(
                f"{n}. The lamp according to claim {n - 1}, wherein the housing of the lamp is made of "
                f"glass number {n} and the wick is trimmed every {n} hours by the keeper of the light."
                "\n"
                for n in range(2, 14)
            ),
            f"14. {CLAIM}",
            "",
            *(
                f"## Note {n}\n\nPlants: a plant cultivation method irradiating plants, comprising light "
                f"emitted from plants, the method of plant cultivation with light number {n}.\n"
                for n in range(1, notes + 1)
            ),
        ]
    )


async def retrieve(client: Any, kb: str, query: str) -> list[dict[str, Any]]:
    reply = await client.post("/api/v1/docdb/retrieve", json={"kb_id": kb, "query": query, "max_results": 10})
    assert reply.status_code == 200, reply.text
    data: list[dict[str, Any]] = reply.json()["data"]
    return data


@pytest.mark.parametrize("notes", [6, 14])  # 14: the claims' chunk is no retriever's top 10
async def test_a_passage_asked_for_by_its_opening_words_comes_first(docdb_factory: Any, notes: int) -> None:
    async with docdb_factory() as client:
        await upload(client, "patents", {"lamp.md": patent(notes).encode()})
        await client.post(KB, json={"name": "patents"})
        [task_id] = await parse(client, "patents", ["patents"], mode=1)
        assert (await wait_task(client, task_id))["status"] == "completed"

        opening = " ".join(CLAIM.lower().replace(",", "").split()[:12])
        ranked = await retrieve(client, "patents", opening)
        [top, *_] = ranked
        assert CLAIM in top["content"]
        # a short query is a topic, not a quotation: the fused order stands
        ranked = await retrieve(client, "patents", "plant cultivation")
        assert CLAIM not in ranked[0]["content"]


def test_a_formula_and_spaced_chinese_are_found_word_for_word() -> None:
    ranked = [
        Hit("dense", 0.9, "The values 1, 3, 5 and 7 of alpha; 1 and 3; 5 and 7."),
        Hit("formula", 0.5, "The index array is permuted, where\n\nα=1, 3, 5, 7\n\nβ=0, 0, 0, 0"),
        Hit("other", 0.8, "旅遊的更新"),
        Hit("post", 0.4, "內文有不定期的更新旅遊、露營圖文訊息 謝謝!"),
    ]
    assert titles_first("α 1 3 5 7", ranked)[0].chunk_id == "formula"
    assert titles_first("內 文 有 不 定 期 的 更 新 旅 遊 露", ranked)[0].chunk_id == "post"
    # whole words only: `highlight` is no `light`
    near = [
        Hit("near", 0.9, "highlight emitting device for plants"),
        Hit("far", 0.1, "a light emitting device for plants"),
    ]
    assert titles_first("light emitting device for plants", near)[0].chunk_id == "far"


def test_chinese_asked_for_with_a_space_between_characters_matches_its_words() -> None:
    index = Bm25Index.build(
        [
            ChunkSource("post", "內文有不定期的更新旅遊、露營圖文訊息 謝謝!"),
            ChunkSource("other", "露營的裝備與旅行的計畫"),
            ChunkSource("third", "天氣預報與交通資訊"),
        ]
    )
    [(best, _), *_] = index.search("內 文 有 不 定 期 的 更 新 旅 遊 露", 3)
    assert best == "post"


def test_words_beyond_ascii_are_searchable() -> None:
    index = Bm25Index.build(
        [
            ChunkSource("korean", "# 맺으며\n\n약관의 해석 원칙을 살펴보았다."),
            ChunkSource("greek", "where α=1, 3, 5, 7 and β=0"),
            ChunkSource("german", "Die Universität für Musik"),
            ChunkSource("plain", "where a=1, 3, 5, 7 and b=0; Universal music for all"),
        ]
    )
    assert index.search("맺으며", 4)[0][0] == "korean"
    assert index.search("α 1 3 5 7", 4)[0][0] == "greek"
    assert index.search("Universität für", 4)[0][0] == "german"


def test_japanese_kana_is_searchable() -> None:
    """Hiragana and katakana had no BM25 token: a katakana word or a verb written in kana matched no
    passage, and a Japanese manual was left to the vectors alone."""
    index = Bm25Index.build(
        [
            ChunkSource("printer", "# プリンターの設定\n\nプリンターをネットワークにつなぎます。"),
            ChunkSource("scanner", "# スキャナーの設定\n\nスキャナーはケーブルでつなぎます。"),
            ChunkSource("battery", "電池を交換するときは、電源を切ってください。"),
            ChunkSource("english", "Connect the printer to the network."),
        ]
    )
    assert index.search("ネットワーク", 4)[0][0] == "printer"
    assert index.search("スキャナー", 4)[0][0] == "scanner"
    assert index.search("切ってください", 4)[0][0] == "battery"
    assert "english" not in {chunk for chunk, _ in index.search("プリンター", 4)}


def test_an_index_saved_by_another_tokenizer_is_built_again(tmp_path: Path) -> None:
    index = Bm25Index.build([ChunkSource("printer", "プリンターをネットワークにつなぎます。")])
    index.save(tmp_path / "1")
    assert _load_saved(tmp_path / "1") is not None
    for marker in (tmp_path / "1").glob("tokenizer-*"):
        marker.unlink()  # as a copy saved before kana had tokens is
    assert _load_saved(tmp_path / "1") is None


# A review: many sections use the word `use`, one is titled `In use`; a report's section titled with
# stopwords only. Neither title's words single it out, so neither retriever finds the section.
REVIEW = "\n".join(
    [
        "# Lamp review",
        "",
        *(
            f"## Part {n}\n\nUse the lamp, use the wick, use the oil: we use it and use it again, use {n}.\n"
            for n in range(1, 41)
        ),
        "## In use",
        "",
        "The beam reaches the far rocks on a clear night. "
        + " ".join(f"Its flash {n} is seen from the harbour wall." for n in range(30)),
        "",
        "## Who we are, some of what we do",
        "",
        "Keepers of the northern lights since the old days. "
        + " ".join(f"Our station {n} stands on the cliff." for n in range(30)),
    ]
)


async def test_a_section_asked_for_by_its_title_comes_first_though_its_words_are_common(
    docdb_factory: Any,
) -> None:
    async with docdb_factory() as client:
        await upload(client, "reviews", {"review.md": REVIEW.encode()})
        await client.post(KB, json={"name": "reviews"})
        [task_id] = await parse(client, "reviews", ["reviews"], mode=1)
        assert (await wait_task(client, task_id))["status"] == "completed"

        [top, *_] = await retrieve(client, "reviews", "In use")
        assert top["content"].startswith("## In use") and "far rocks" in top["content"]
        [top, *_] = await retrieve(client, "reviews", "Who we are, some of what we do")
        assert "northern lights" in top["content"]


def test_section_titles_are_kept_with_a_saved_index(tmp_path: Path) -> None:
    index = Bm25Index.build(
        [
            ChunkSource("opens", "Lamp review > In use\n\n## In use\n\nThe beam reaches the far rocks."),
            ChunkSource("inside", "Lamp review > In use\n\nMore of the beam, in use at night."),
            ChunkSource("code", "Guide\n\n```sh\n# in use\n```"),
        ]
    )
    assert index.titled("IN USE", 5) == ["opens"]
    index.save(tmp_path / "1")
    assert Bm25Index.load(tmp_path / "1").titled("in use", 5) == ["opens"]
    # a copy saved before titles were kept is built again, not read without them
    (tmp_path / "1" / "titles.msgpack").unlink()
    assert _load_saved(tmp_path / "1") is None
