"""vg search ranks a scope's memories by meaning and by the question's words (BM25), fused by
reciprocal rank: what each side alone would miss is found, and scores stay cosines."""

from __future__ import annotations

from typing import Any

from lore_common.testing.asgi import AppClient
from lore_mem.vg.service import fuse


def by_meaning(texts: list[str]) -> list[tuple[dict[str, Any], float]]:
    """Hits as the vector search returns them: best first, with falling cosines."""
    return [({"id": f"m{i}", "memory": text}, round(0.9 - i * 0.01, 2)) for i, text in enumerate(texts)]


FILLER = [f"Went to the market on day {n} and bought bread" for n in range(30)]


def test_a_memory_holding_the_questions_rare_word_rises_from_far_down() -> None:
    hits = by_meaning([*FILLER[:25], "My dentist is Dr. Okonkwo on Elm Street", *FILLER[25:]])
    top = fuse("Who is Okonkwo?", hits, 5)
    assert "Okonkwo" in top[0][0]["memory"]
    assert top[0][1] == 0.65  # its own cosine, not the fused rank score


def test_a_memory_found_only_by_meaning_keeps_its_place() -> None:
    # The embedder ranks the paraphrase first; it shares no word with the question.
    hits = by_meaning(["The kid adores felines", *FILLER[:10], "A cat food brand ad", *FILLER[10:20]])
    top = [record["memory"] for record, _ in fuse("Does my child like cats?", hits, 3)]
    assert "The kid adores felines" in top
    assert "A cat food brand ad" in top


def test_chinese_words_are_matched_too() -> None:
    hits = by_meaning([*(f"第{n}天在超市买了面包" for n in range(20)), "我妹妹住在杭州西湖边", "今天下雨了"])
    top = fuse("我妹妹住在哪里？杭州吗", hits, 3)
    assert top[0][0]["memory"] == "我妹妹住在杭州西湖边"


def test_without_any_shared_word_the_order_by_meaning_stands() -> None:
    hits = by_meaning(FILLER[:8])
    assert fuse("zebra?", hits, 5) == hits[:5]


async def test_search_finds_by_word_and_still_applies_the_cosine_threshold(mem: AppClient) -> None:
    scope = {"user_id": "fusion"}
    texts = [*FILLER[:20], "Our wifi password is kumquat-77", "I keep the spare key under the blue pot"]
    for text in texts:
        added = await mem.post(
            "/api/v1/mem/vg/add",
            json={"messages": [{"role": "user", "content": text}], "infer": False, **scope},
        )
        assert added.status_code == 200, added.text
    found = (await mem.post("/api/v1/mem/vg/search", json={"query": "kumquat", "limit": 3, **scope})).json()
    assert found["results"][0]["memory"] == "Our wifi password is kumquat-77"
    assert all(0 <= r["score"] <= 1 for r in found["results"])
    strict = await mem.post("/api/v1/mem/vg/search", json={"query": "kumquat", "threshold": 0.99, **scope})
    assert strict.json()["results"] == []  # no memory is that close in meaning, words or not
