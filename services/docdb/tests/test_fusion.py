"""`rerank`'s score fusion (minilm KBs): how a chunk found by only one retriever is weighed, and a
section's title as the query."""

from __future__ import annotations

from lore_docdb.chat.retrieval import Hit, fuse_scores, titles_first


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


def test_a_query_that_is_a_section_title_puts_that_section_first() -> None:
    ranked = [
        Hit("claims-text", 0.9, "The device of claim 1, as in claims 2 and 3, claims a lamp."),
        Hit("rest", 0.8, "Lamps and their keepers.", heading_path=("Patent", "Background")),
        Hit("more-claims", 0.7, "4. The lamp of claim 3.", heading_path=("Patent", "CLAIMS")),
        Hit("claims-head", 0.6, "## CLAIMS\n\n1. A lamp with a wick.", heading_path=("Patent", "CLAIMS")),
    ]
    # the chunk that opens the section, then the section's other chunks, then the rest in fused order
    assert [h.chunk_id for h in titles_first("Claims", ranked)] == [
        "claims-head",
        "more-claims",
        "claims-text",
        "rest",
    ]
    # a query that is no section's title, or is longer than any title, keeps the fused order
    assert titles_first("lamp keepers", ranked) == ranked
    assert titles_first("claims " * 20, ranked) == ranked
