"""BM25 over a small candidate set (a scope's memories) scores exactly as a bm25s index of the same
texts would, so mem's ranking by words and docdb's agree."""

from __future__ import annotations

import numpy as np

from lore_common import bm25

TEXTS = [
    "Caroline went camping with her kids at the lake",
    "Melanie painted a sunrise over the lake last weekend",
    "The camping trip was cancelled because of rain",
    "She adopted a puppy named Oscar",
    "卡罗琳周末去湖边露营",
    "",
]


def test_scores_match_a_bm25s_index_of_the_same_texts() -> None:
    for query in ("camping at the lake", "Oscar the puppy", "露营", "nothing matches zebra"):
        index = bm25.new_index()
        index.index([bm25.tokenize(t) or ["\u0000"] for t in TEXTS], show_progress=False)
        ids = index.get_tokens_ids(bm25.tokenize(query))
        expected = index.get_scores_from_ids(ids) if ids else np.zeros(len(TEXTS))
        assert np.allclose(bm25.scores(query, TEXTS), expected, atol=1e-6), query


def test_the_best_match_by_words_scores_highest_and_a_text_without_them_zero() -> None:
    scores = bm25.scores("When did Caroline go camping?", TEXTS)
    assert int(np.argmax(scores)) == 0
    assert scores[3] == 0 and scores[5] == 0
    assert bm25.scores("", TEXTS).tolist() == [0.0] * len(TEXTS)


def test_rrf_rewards_agreement_and_keeps_first_seen_order_on_ties() -> None:
    fused = bm25.rrf([["a", "b", "c"], ["c", "a"]])
    assert [item for item, _ in fused] == ["a", "c", "b"]
    assert [item for item, _ in bm25.rrf([["x", "y"], ["y", "x"]])] == ["x", "y"]


def test_memories_in_other_scripts_are_scored_by_their_words() -> None:
    """mem's BM25 gave no token to Korean, Cyrillic or accented words, nor to Japanese kana: such
    memories were found by their vectors alone."""
    memories = [
        "I live in Boston and work as a nurse",
        "저는 땅콩 알레르기가 있습니다",
        "Я живу в Москве и работаю врачом",
        "Ich wohne in München und fahre gern Fahrrad",
        "コーヒーよりお茶が好きです",
    ]
    for query, best in [("땅콩 알레르기", 1), ("в Москве", 2), ("München", 3), ("お茶が好き", 4)]:
        scores = bm25.scores(query, memories)
        assert int(np.argmax(scores)) == best and scores[0] == 0, (query, scores)


def test_kana_reads_as_character_pairs_and_ascii_text_as_before() -> None:
    assert bm25.tokenize("コーヒー") == ["コー", "ーヒ", "ヒー"]
    assert bm25.tokenize("を") == ["を"]
    assert bm25.tokenize("Lighthouses guide the ships") == ["lighthous", "guid", "ship"]
