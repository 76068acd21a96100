"""`rerank`'s score fusion (minilm KBs): how a chunk found by only one retriever is weighed."""

from __future__ import annotations

from lore_docdb.chat.retrieval import Hit, fuse_scores


def test_an_exact_word_match_outranks_weak_vector_neighbours() -> None:
    vector = [Hit("a", 0.80), Hit("b", 0.60)]
    bm25 = [Hit("c", 10.0), Hit("a", 2.0)]
    # c (BM25 only) counts with the lowest cosine seen (0.60): 0.7 × 0.60 + 0.3 × 1.0 = 0.72;
    # a: 0.7 × 0.80 + 0.3 × 0.2 = 0.62; b (vectors only): 0.7 × 0.60 = 0.42.
    ranked = fuse_scores(vector, bm25, 0.7)
    assert [cid for cid, _ in ranked] == ["c", "a", "b"]
    assert [round(score, 2) for _, score in ranked] == [0.72, 0.62, 0.42]


def test_meaning_alone_wins_when_no_word_matches() -> None:
    ranked = fuse_scores([Hit("x", 0.9), Hit("y", 0.3)], [], 0.7)
    assert [cid for cid, _ in ranked] == ["x", "y"]
