from __future__ import annotations

from lore_common.text import segments, sentences


def test_a_line_break_inside_a_paragraph_ends_no_sentence_and_headings_are_not_sentences() -> None:
    text = (
        "# Grace Hopper\n\nGrace Hopper was a computer scientist. Grace Hopper\n"
        "developed the first compiler, the A-0 system, in 1952.\n"
    )
    assert sentences(text) == [
        "Grace Hopper was a computer scientist.",
        "Grace Hopper developed the first compiler, the A-0 system, in 1952.",
    ]
    assert segments(text)[0].kind == "heading"


def test_abbreviations_initials_decimals_and_dotted_names_do_not_cut_a_sentence() -> None:
    text = (
        "Dr. Smith met Mr. J. R. Jones at 3 p.m. in the U.S. capital. The value is 3.14, e.g. for "
        "circles. asn1Parser reads a single file with ASN.1 definitions. See Fig. 2 for details."
    )
    assert sentences(text) == [
        "Dr. Smith met Mr. J. R. Jones at 3 p.m. in the U.S. capital.",
        "The value is 3.14, e.g. for circles.",
        "asn1Parser reads a single file with ASN.1 definitions.",
        "See Fig. 2 for details.",
    ]


def test_code_tables_and_list_markers_stay_out_of_prose() -> None:
    text = (
        "Call it as follows:\n\n```c\nffi_prep_cif (ffi_cif *cif, ffi_abi abi);\n```\n\n"
        "- `-v` prints more.\n- `-q` prints less.\n\n| name | age |\n|---|---|\n| Ada | 36 |\n\n"
        "It returns FFI_OK on success."
    )
    assert sentences(text) == [
        "Call it as follows:",
        "`-v` prints more.",
        "`-q` prints less.",
        "It returns FFI_OK on success.",
    ]
    kinds = [s.kind for s in segments(text)]
    assert kinds.count("code") == 1 and kinds.count("table") == 3 and kinds.count("item") == 2


def test_words_hyphenated_across_lines_are_mended() -> None:
    assert sentences("This docu-\nment was hyphen-\nated by a typesetter. Next.") == [
        "This document was hyphenated by a typesetter.",
        "Next.",
    ]


def test_chinese_sentences_keep_their_closing_quotes() -> None:
    assert sentences("他说：“我们走吧。”然后离开了。你知道吗？") == [
        "他说：“我们走吧。”",
        "然后离开了。",
        "你知道吗？",
    ]
