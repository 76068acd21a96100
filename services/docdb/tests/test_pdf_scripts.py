"""PDFs in scripts beyond Latin keep their words.

Arabic: the repair of a lam-alef ligature some PDFs' maps write backwards (`ال` for one glyph) no
longer turns other ligatures round. Before, the title `انواع الخطوط العربية` of pdf.js's Arabic font
test read `انواع اخلطوط العربية`, its lam-khah ligature turned, as it did in every PDF whose font draws
lam-khah, lam-meem or lam-alef (`التفاعلات` read `التفاعالت`) as one glyph.

Thai: a vowel or tone mark set above its letter, which pdfium puts on a line of its own, is put back
in its word (pdf.js's Thai maths sheet read `ต` / `ั้` / `งฉาก` for `ตั้งฉาก`, 18 times).

Chinese and Japanese: a line set letter by letter (a spaced-out title or contents page, `关 于 红 军`)
reads without the spaces, a line of words as it is."""

from __future__ import annotations

from pathlib import Path

from lore_docdb.parse.convert.pdf import _page_lines
from lore_docdb.parse.extract import extract_text

DATA = Path(__file__).parent / "data"


def test_arabic_ligatures_read_in_their_order() -> None:
    lines = [line.lstrip("# ") for line in extract_text(DATA / "arabic-fonts.pdf").split("\n\n")]
    assert lines == ["انواع الخطوط العربية"] * 4


def test_thai_marks_pdfium_sets_apart_go_back_into_their_word() -> None:
    assert _page_lines("และต\r\nั้\r\nงฉากกับระนาบ\r\nข้อ 2") == ["และตั้งฉากกับระนาบ", "ข้อ 2"]
    assert _page_lines("cafe\r\nnoir") == ["cafe", "noir"]  # no marks alone: lines as they were


def test_a_chinese_line_set_letter_by_letter_reads_as_words() -> None:
    assert _page_lines("# 目 \u3000 \u3000 录\r\n关 于 红 军 作 战 的 原 则 … … １") == [
        "# 目\u3000\u3000录",
        "关于红军作战的原则……１",
    ]
    assert _page_lines("数据 分析 与 应用\r\nTable 1 数 据") == ["数据 分析 与 应用", "Table 1 数 据"]
    assert _page_lines("대 한 민 국 만 세") == ["대 한 민 국 만 세"]  # Korean sets spaces between its words
