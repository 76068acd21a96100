"""What a trial of the converters on kreuzberg's and markitdown's test documents (formats other than
PDF and HTML) found read wrong or refused, each as a small file of the same kind written here: RTF
whose table cells hold their own paragraphs, an RTF fragment without its header, Shift-JIS text read
as GB18030, and the formats a documentation folder holds that Lore refused. Every file is made by the
test itself; no fixture is downloaded."""

from __future__ import annotations

from pathlib import Path

from lore_docdb.parse.extract import extract_text


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_rtf_cells_that_end_in_a_paragraph_mark_stay_one_row(tmp_path: Path) -> None:
    """pandoc and many writers end a cell's text with `\\par`: each row came out as one line per
    cell, no table at all."""
    cell = r"{{\pard\intbl %s\par}" "\n" r"\cell}"
    row = r"{\trowd\cellx2000\cellx4000" "\n" r"\trkeep\intbl{" + "%s%s" + r"}\intbl\row}" "\n"
    rtf = (
        r"{\rtf1\ansi{\pard Prices:\par}"
        + row % (cell % "Fruit", cell % "Price")
        + row % (cell % r"Apple\par green", cell % "1.00")
        + row % (cell % "Pear", cell % "2.10")
        + r"{\pard After the table.\par}}"
    )
    assert extract_text(write(tmp_path, "prices.rtf", rtf.encode())).split("\n\n") == [
        "Prices:",
        "| Fruit | Price |\n|---|---|\n| Apple green | 1.00 |\n| Pear | 2.10 |",
        "After the table.",
    ]


def test_rtf_row_defined_after_its_cells_and_word_list_marks(tmp_path: Path) -> None:
    """A row whose definition comes after its cells (the RTF grammar allows it) still starts at its
    line; Word's list numbers and bullets before a tab read as list items."""
    rtf = (
        r"{\rtf1\ansi Intro\par "
        r"\intbl A\cell B\cell\trowd\cellx1000\cellx2000\row "
        r"\intbl C\cell D\cell\trowd\cellx1000\cellx2000\row "
        r"\pard{\listtext 1.\tab}First\par{\listtext \'95\tab}Second\par}"
    )
    assert extract_text(write(tmp_path, "rows.rtf", rtf.encode())).split("\n\n") == [
        "Intro",
        "| A | B |\n|---|---|\n| C | D |",
        "1. First",
        "- Second",
    ]


def test_an_rtf_fragment_without_its_header_is_read_whole(tmp_path: Path) -> None:
    """pandoc writes RTF without `{\\rtf1` unless asked for a standalone file: striprtf stopped at
    the end of the first group, and a whole document read as its first line."""
    rtf = r"{\pard First paragraph.\par}" "\n" r"{\pard Second paragraph.\par}" "\n"
    assert extract_text(write(tmp_path, "fragment.rtf", rtf.encode())) == (
        "First paragraph.\n\nSecond paragraph."
    )


def test_shift_jis_kanji_is_not_read_as_gb18030_and_chinese_still_is(tmp_path: Path) -> None:
    """A Shift-JIS CSV of names in kanji (markitdown's test_mskanji.csv) also decodes as GB18030,
    into rare characters: `| 柤慜 | 擭楊 |` for `| 名前 | 年齢 |`."""
    japanese = "名前,年齢,住所\n佐藤太郎,30,東京\n三木英子,25,大阪\n髙橋淳,35,名古屋\n"
    text = extract_text(write(tmp_path, "people.csv", japanese.encode("cp932")))
    assert text.splitlines() == [
        "| 名前 | 年齢 | 住所 |",
        "|---|---|---|",
        "| 佐藤太郎 | 30 | 東京 |",
        "| 三木英子 | 25 | 大阪 |",
        "| 髙橋淳 | 35 | 名古屋 |",
    ]
    chinese = "会议记录：我们讨论了明年的预算和新产品的发布计划。\n"
    assert extract_text(write(tmp_path, "notes.txt", chinese.encode("gb18030"))) == chinese
