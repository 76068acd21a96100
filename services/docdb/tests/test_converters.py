"""Every accepted format turns into structured text: headings, lists, table rows with their cells on one
line, the document's order, PDF pages apart; a corrupt file of any format is skipped with its reason."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.parse.convert.common import PAGE_BREAK
from lore_docdb.parse.extract import EXTRACTORS, ExtractionError, extract_text, needs_office
from lore_docdb.parse.sandbox import sniff

DATA = Path(__file__).parent / "data"


def text_of(name: str) -> str:
    return extract_text(DATA / name)


def in_order(text: str, *parts: str) -> bool:
    """Every part is in the text, each after the one before."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def test_pdf_keeps_body_text_in_order_and_drops_running_headers_and_page_numbers() -> None:
    text = text_of("sample.pdf")
    pages = text.split(PAGE_BREAK)
    assert len(pages) == 3
    assert "winter night" in pages[0] and "thirty seconds" in pages[1] and "museums" in pages[2]
    assert "passed the northern cape before dawn" in pages[0]  # "north-" + "ern" joined again
    assert "Coastal Lights Annual Report" not in text  # the running header on every page
    assert [p.strip().splitlines()[-1] for p in pages] == [
        "The station log recorded each ship that passed the northern cape before dawn.",
        "Keepers trimmed the wicks at midnight.",
        "Many towers are now museums.",
    ]  # the page numbers at the foot of each page are gone


def test_pdf_ruled_table_becomes_a_markdown_table_where_it_stood() -> None:
    text = text_of("table.pdf")
    assert in_order(
        text,
        "# Ferry Timetable",  # in larger type than the body: a heading
        "Boats leave the north pier",
        "The crossing takes an hour.",
        "In winter the first boat",  # the right column after the left one
        "| Route | Departs | Arrives |\n|---|---|---|\n| Oban to Mull | 07:30 | 08:20 |\n"
        "| Mull to Iona | 09:15 | 09:25 |",
        "Tickets are sold on board.",
    )
    assert "Route Departs" not in text  # the cells' words are not also left loose


@pytest.mark.parametrize("turn", [90, 270])
def test_pdf_table_on_a_page_set_sideways_reads_by_its_rows(tmp_path: Path, turn: int) -> None:
    import pypdfium2 as pdfium

    # table.pdf drawn turned a quarter on its page, shown upright by the page's /Rotate, as a landscape
    # slide or table is exported onto a portrait page
    document = pdfium.PdfDocument(str(DATA / "table.pdf"))
    page = document[0]
    width, height = page.get_size()
    turned = (
        pdfium.PdfMatrix(0, -1, 1, 0, 0, width) if turn == 270 else pdfium.PdfMatrix(0, 1, -1, 0, height, 0)
    )
    for obj in list(page.get_objects()):
        obj.transform(turned)
    page.set_mediabox(0, 0, height, width)
    page.set_rotation(turn)
    page.gen_content()
    document.save(str(tmp_path / "sideways.pdf"))
    document.close()
    assert in_order(
        extract_text(tmp_path / "sideways.pdf"),
        "The crossing takes an hour.",
        "| Route | Departs | Arrives |\n|---|---|---|\n| Oban to Mull | 07:30 | 08:20 |\n"
        "| Mull to Iona | 09:15 | 09:25 |",
        "Tickets are sold on board.",
    )


def test_pdf_table_cells_merged_over_rows_or_columns_are_repeated_in_each(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_table_pdf", DATA / "make_table_pdf.py")
    assert spec is not None and spec.loader is not None
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    xs, top, height = [72, 200, 330, 460], 620, 22
    y = [top - height * r for r in range(5)]
    ops = [
        make.text(78, y[1] - 4, 11, "Year"),  # over two rows
        make.text(206, y[1] + 7, 11, "Visitors"),  # over two columns
        make.text(206, y[2] + 7, 11, "Spring"),
        make.text(336, y[2] + 7, 11, "Summer"),
        *(
            make.text(x + 6, y[3 + r] + 7, 11, v)
            for r, row in enumerate([["2024", "310", "450"], ["2025", "330", "470"]])
            for x, v in zip(xs, row, strict=False)
        ),
        "0.5 w",
        f"{xs[0]} {y[0]} m {xs[3]} {y[0]} l S",
        f"{xs[1]} {y[1]} m {xs[3]} {y[1]} l S",  # no rule under "Year": it goes on down
        *(f"{xs[0]} {y[r]} m {xs[3]} {y[r]} l S" for r in (2, 3, 4)),
        *(f"{x} {y[0]} m {x} {y[4]} l S" for x in (xs[0], xs[1], xs[3])),
        f"{xs[2]} {y[1]} m {xs[2]} {y[4]} l S",  # no rule inside "Visitors"
    ]
    (tmp_path / "merged.pdf").write_bytes(make.pdf("\n".join(ops)))
    assert extract_text(tmp_path / "merged.pdf").splitlines() == [
        "| Year | Visitors | Visitors |",
        "|---|---|---|",
        "| Year | Spring | Summer |",
        "| 2024 | 310 | 450 |",
        "| 2025 | 330 | 470 |",
    ]


def test_pdf_headings_in_body_type_and_a_table_open_at_its_sides() -> None:
    text = text_of("headings.pdf")
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert [h.lstrip("#").strip() for h in headings] == ["Harbour Notes", "Winter hours"]  # bold; italic
    assert in_order(
        text,
        "The harbour opens at dawn",
        "In winter the gates close",
        # ruled across and between its columns only: its first and last columns are kept
        "| # of boats | Pier | Fee |\n|---|---|---|\n| 12 | North | 5 pounds |\n| 30 | South | 8 pounds |",
        "\\# 40 berths in all",  # a line of text that starts with `#` is not taken for a heading
    )


def test_docx_keeps_headings_lists_and_the_table_where_it_stood() -> None:
    text = text_of("sample.docx")
    assert in_order(
        text,
        "Field Guide",
        "Migration begins in early spring.",
        "- Swallows",
        "- Storks",
        "| Bird | Arrives | Leaves |",
        "| Swallow | April | September |",
        "| Stork | March | August |",
        "# Nesting",
        "Storks return to the same nest every year.",
    )
    assert "# Field Guide" in text


def test_legacy_doc_is_read_with_its_headings() -> None:
    text = text_of("sample.doc")
    assert in_order(
        text,
        "# Überschriften in nicht",
        "### Problem mit lokalisierten Dokumenten",
        "Jedes Dokument, dessen Überschriftenstile",
        "### Verifizierung",
        "Lokaler Lauf gegen den eingesetzten DOCX",
    )


@pytest.mark.parametrize("name", ["sample.pptx", "sample.ppt", "sample.odp"])
def test_presentations_give_slides_in_order_with_titles_and_table_rows(name: str) -> None:
    text = text_of(name)
    assert in_order(text, "# Test Table Slide", "# Second slide title", "Some info:", "Item B")
    row = next(line for line in text.splitlines() if "R1" in line)
    assert [c.strip(" -") for c in row.strip("|").split("|")] == [
        "R1",
        "True",
        "False",
        "",
        "False",
        "True",
        "True",
    ]


@pytest.mark.parametrize("name", ["sample.pptx", "sample.odp"])
def test_presentations_keep_speaker_notes_after_their_slide(name: str) -> None:
    text = text_of(name)
    assert in_order(text, "# Second slide title", "Some notes on the second slide.", "Final notes on")


def test_odt_keeps_heading_levels_in_order() -> None:
    text = text_of("sample.odt")
    assert in_order(
        text, "# Title", "## heading level 1.0", "Lorem Ipsum is simply dummy text", "### Heading level 2: A"
    )


@pytest.mark.parametrize(
    ("name", "sheet"), [("sample.ods", "# Sheet1"), ("sample.xls", "# Duck Observations")]
)
def test_sheets_with_a_title_row_keep_the_title_over_a_pipe_table(name: str, sheet: str) -> None:
    text = text_of(name)
    assert in_order(
        text,
        sheet,
        "Number of freshwater ducks per year",
        "| Year | Freshwater Ducks |\n|---|---|\n| 2019 | 120 |",
        "| 2024 | 180 |",
    )


def test_xlsx_gives_every_sheet_under_its_name_as_a_pipe_table() -> None:
    assert text_of("sample.xlsx") == (
        "# Prices\n\n| Item | Price | Stock |\n|---|---|---|\n| Tea | 3.5 | 12 |\n| Coffee | 4 | 0 |\n\n"
        "# Staff\n\n| Name | Role |\n|---|---|\n| Ada | Engineer |"
    )


def test_sheet_tables_side_by_side_stay_apart_and_merged_cells_fill_their_range(tmp_path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Ponds"
    for row in (["Pond", "Ducks"], ["North", 12], ["South", 30], ["East", 7]):
        sheet.append(row)
    # a second table to the right, one empty column apart, its top on the first table's last row
    second: list[list[object]] = [["Year", "Visitors", ""], ["2024", "Spring", "Summer"], ["", 310, 450]]
    for i, cells in enumerate(second):
        for j, value in enumerate(cells):
            sheet.cell(row=4 + i, column=4 + j, value=value or None)
    sheet.merge_cells("E4:F4")  # "Visitors" over both seasons
    sheet.merge_cells("D5:D6")  # the year beside both of its rows
    book.save(tmp_path / "ponds.xlsx")
    assert extract_text(tmp_path / "ponds.xlsx") == (
        "# Ponds\n\n| Pond | Ducks |\n|---|---|\n| North | 12 |\n| South | 30 |\n| East | 7 |\n\n"
        "| Year | Visitors | Visitors |\n|---|---|---|\n| 2024 | Spring | Summer |\n| 2024 | 310 | 450 |"
    )


def test_a_form_on_a_sheet_keeps_each_line_in_one_row_across_its_spacer_column(tmp_path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["Power system"])
    sheet.append([1, None, "Rated voltage", None, "kV", "130"])
    sheet.append([2, None, "Frequency", None, "Hz", "50"])
    sheet.append([3, None, "Phases", None, None, "3"])
    book.save(tmp_path / "form.xlsx")
    lines = extract_text(tmp_path / "form.xlsx").splitlines()
    assert "| 1 | Rated voltage | kV | 130 |" in lines
    assert "| 3 | Phases |  | 3 |" in lines


def test_xlsx_keeps_chart_titles_and_cell_comments_under_their_sheet(tmp_path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Counts"
    for row in (["Year", "Ducks"], [2023, 160], [2024, 180]):
        sheet.append(row)
    sheet["B3"].comment = Comment("Counted twice in May", "Ada")
    chart = BarChart()
    chart.title = "Ducks per year"
    chart.add_data(Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    sheet.add_chart(chart, "D2")
    charts = book.create_chartsheet("Trend")
    trend = BarChart()
    trend.title = "Ducks over time"
    trend.add_data(Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    charts.add_chart(trend)
    book.save(tmp_path / "counts.xlsx")
    text = extract_text(tmp_path / "counts.xlsx")
    assert in_order(
        text,
        "# Counts",
        "| 2024 | 180 |",
        "\n\nChart: Ducks per year\n\n",
        "[author: Ada, cell B3]: Counted twice in May",
        "# Trend\n\nChart: Ducks over time",
    )


def test_xlsx_whose_drawing_refers_to_itself_is_read_once(tmp_path: Path) -> None:
    import zipfile

    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["Year", "Ducks"], [2024, 180]):
        sheet.append(row)
    chart = BarChart()
    chart.title = "Ducks per year"
    chart.add_data(Reference(sheet, min_col=2, min_row=1, max_row=2), titles_from_data=True)
    sheet.add_chart(chart, "D2")
    book.save(tmp_path / "plain.xlsx")
    loop = (
        '<Relationship Id="loop" Target="/xl/drawings/drawing1.xml" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"/>'
    )
    source = zipfile.ZipFile(tmp_path / "plain.xlsx")
    with source, zipfile.ZipFile(tmp_path / "loop.xlsx", "w") as out:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "xl/drawings/_rels/drawing1.xml.rels":
                data = data.replace(b"</Relationships>", loop.encode() + b"</Relationships>")
            out.writestr(item, data)
    text = extract_text(tmp_path / "loop.xlsx")
    assert "| 2024 | 180 |" in text and text.count("Chart: Ducks per year") == 1


def test_csv_rows_longer_than_the_header_keep_every_cell(tmp_path: Path) -> None:
    (tmp_path / "wide.csv").write_text("name,pond\nMallard,North,seen twice\nTeal,South\n")
    assert extract_text(tmp_path / "wide.csv").splitlines() == [
        "| name | pond |  |",
        "|---|---|---|",
        "| Mallard | North | seen twice |",
        "| Teal | South |  |",
    ]


def test_epub_follows_the_spine_not_the_manifest() -> None:
    text = text_of("sample.epub")
    assert in_order(
        text,
        "# Chapter One",
        "planted in 1902",
        "| Apple | 1902 |",
        "# Chapter Two",
        "festival began in 1920",
    )


def test_html_table_cells_spanning_rows_or_columns_are_repeated_in_each_row() -> None:
    from lore_docdb.parse.convert.markup import html_markdown

    html = (
        "<table><tr><th>Year</th><th>Month</th><th>Sales</th></tr>"
        '<tr><td rowspan="2">2025</td><td>January</td><td>$134</td></tr>'
        "<tr><td>February</td><td>$150</td></tr>"
        '<tr><td colspan="2">Total</td><td>$284</td></tr></table>'
    )
    assert html_markdown(html).splitlines() == [
        "| Year | Month | Sales |",
        "|---|---|---|",
        "| 2025 | January | $134 |",
        "| 2025 | February | $150 |",
        "| Total | Total | $284 |",
    ]


def test_html_cells_keep_their_lines_paragraphs_lists_and_inner_tables_apart() -> None:
    from lore_docdb.parse.convert.markup import html_markdown

    html = (
        "<table><tr><th>Duck</th><th>Notes</th></tr>"
        "<tr><td>Teal<br>(common)</td><td><p>Small.</p><p>Fast.</p></td></tr>"
        "<tr><td>Steps</td><td><ol><li>Fly south</li><li>Nest</li></ol></td></tr>"
        "<tr><td><table><tr><td>A1</td><td>B1</td></tr></table></td>"
        '<td><img src="x.png" alt="Yes"></td></tr></table>'
        "<p>Water is H<sub>2</sub>O, as the report<sup>3</sup> says.</p>"
    )
    assert html_markdown(html).splitlines() == [
        "| Duck | Notes |",
        "|---|---|",
        "| Teal (common) | Small. Fast. |",
        "| Steps | 1. Fly south 2. Nest |",
        "| A1 B1 | Yes |",
        "",
        "Water is H 2 O, as the report 3 says.",
    ]


def test_markdown_setext_headings_become_heading_lines_and_html_tables_pipe_tables(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text(
        "---\ntitle: Ducks\n---\nField Notes\n===========\n\nSeen at the\npond\n---\n\n"
        "<table>\n  <tr><th>Duck</th><th>Count</th></tr>\n\n  <tr><td>Teal</td><td>4</td></tr>\n</table>\n\n"
        "```\ncode\n---\n<table>\n```\n\n<div>never closed\n\n## Next\n"
    )
    assert extract_text(tmp_path / "notes.md") == (
        "# Field Notes\n\n## Seen at the pond\n\n"  # the front matter's title: the page has its own
        "| Duck | Count |\n|---|---|\n| Teal | 4 |\n\n```\ncode\n---\n<table>\n```\n\n"
        "never closed\n\n## Next"  # an unclosed block ends at its blank line
    )


def test_xhtml_with_its_xml_declaration_reads_as_html() -> None:
    from lore_docdb.parse.convert.markup import html_markdown

    xhtml = (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        "<body><h2>The Grave</h2><p>The cold storms of winter</p></body></html>"
    )
    assert html_markdown(xhtml) == "## The Grave\n\nThe cold storms of winter"


def test_html_keeps_structure_and_drops_scripts() -> None:
    text = text_of("sample.html")
    assert in_order(
        text,
        "# Tide Tables",
        "High water is twice a day.",
        "- Spring tides",
        "| Dover | 06:12 |",
        "| Calais | 06:40 |",
        "Times are local.",
    )
    assert "hidden" not in text


def test_jats_article_gives_title_abstract_sections_and_table() -> None:
    text = text_of("sample.xml")
    assert in_order(
        text,
        "# Soil Moisture and Wheat Yield",
        "Yield rose with soil moisture",
        "## Methods",
        "| A | 20% | 3.1 t |",
        "| B | 35% | 4.4 t |",
        "## Results",
        "Plot B gave the highest yield.",
    )


def test_asciidoc_gives_headings_lists_and_tables() -> None:
    text = text_of("sample.adoc")
    assert in_order(
        text,
        "# 2nd Sample Document Title",
        "- First item",
        "## Section 4: test tables",
        "| Value 3 | Value 4 |",
    )


def test_latex_gives_title_sections_lists_and_tables() -> None:
    text = text_of("sample.tex")
    assert in_order(
        text,
        "# Tide Tables of the Western Isles",
        "## Introduction",
        "wrote them in the log book.",
        "### Times",
        "- Portree fills first.",
        "| Harbour | High tide | Low tide |",
        "| Portree | 06:12 | 12:30 |",
        "| Oban | 07:05 | 13:21 |",
    )
    assert "\\section" not in text and "textbf" not in text


def test_webvtt_gives_the_cues_text_in_order_without_timings() -> None:
    text = text_of("sample.vtt")
    assert in_order(
        text,
        "When did you first light the lamp?",
        "In the winter of 1952, on the night of the great storm.",
        "The fog signal sounded every thirty seconds.",
    )
    assert "-->" not in text and "WEBVTT" not in text


def test_a_text_file_holding_an_article_or_a_page_is_read_as_one(tmp_path: Path) -> None:
    article = tmp_path / "article.txt"  # an article saved with the wrong name: read as JATS, not markup
    article.write_bytes((DATA / "sample.xml").read_bytes())
    assert needs_office(article) and text_of("sample.xml") == extract_text(article)
    page = tmp_path / "page.txt"
    page.write_text("<!DOCTYPE html><html><body><h1>Lamps</h1><p>Lit at dusk.</p></body></html>")
    assert extract_text(page) == "# Lamps\n\nLit at dusk."
    patent = tmp_path / "patent.txt"  # USPTO full text (APS): tagged lines under PATN
    patent.write_text(
        "PATN\nWKU  057006474\nTTL  Lamp wick of woven glass fibre\nABST\nPAL  A wick that does not"
        " burn down.\nBSUM\nPAC  BACKGROUND OF THE INVENTION\nPAR  Cotton wicks must be trimmed.\n"
        "CLMS\nNUM  1.\nPAR  1. A lamp wick woven of glass fibre.\n"
    )
    assert needs_office(patent)
    assert in_order(
        extract_text(patent),
        "# Lamp wick of woven glass fibre",
        "A wick that does not burn down.",
        "BACKGROUND OF THE INVENTION",
        "Cotton wicks must be trimmed.",
        "A lamp wick woven of glass fibre.",
    )
    plain = tmp_path / "plain.txt"
    plain.write_text("<b> is how HTML marks bold; this note is plain text.")
    assert not needs_office(plain) and extract_text(plain).startswith("<b> is how")


def test_xml_of_no_known_dialect_gives_the_text_of_its_elements(tmp_path: Path) -> None:
    path = tmp_path / "catalog.xml"
    path.write_text(
        '<?xml version="1.0"?><!DOCTYPE c [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<catalog><book><title>The Lighthouse</title><note>A keeper <b>writes</b> at night.</note>"
        "</book><book><title>Tides</title>&x;</book></catalog>"
    )
    assert extract_text(path) == "The Lighthouse\n\nA keeper writes at night.\n\nTides"


def test_email_gives_headers_body_and_attachment_names() -> None:
    text = text_of("sample.eml")
    assert in_order(
        text,
        "Subject: Email with Attachment",
        "From: Alice Example <alice@example.com>",
        "This email contains an attachment.",
        "Attachments: test.txt",
    )


def test_rtf_and_legacy_encoded_text_read_right() -> None:
    assert in_order(
        text_of("sample.rtf"),
        "Quarterly summary",
        "Revenue grew in the third quarter.",
        "Café sales doubled.",
    )
    assert text_of("sample-cp1252.txt").startswith("Crème brûlée est un dessert français servi au café")


@pytest.fixture(scope="module")
def scans() -> dict[str, str]:
    """The OCR'd samples, read once (OCR takes seconds a page)."""
    return {name: text_of(name) for name in ("scan-en.png", "scan-zh.png", "scan.pdf")}


def test_an_english_scan_reads_back_as_headings_and_paragraphs(scans: dict[str, str]) -> None:
    assert scans["scan-en.png"].split("\n\n") == [
        "# Harbour Report",
        "The lighthouse keeper logged every vessel that passed the northern cape before dawn. "
        "Fog horns sounded eleven times in March, twice as often as in the year before.",
        "# Repairs",
        "The lamp room was repainted in April and the brass fittings were polished by hand. "
        "A new lens arrived from Glasgow on the morning ferry.",
    ]


def test_a_chinese_scan_reads_back_without_spaces_between_characters(scans: dict[str, str]) -> None:
    text = scans["scan-zh.png"]
    assert in_order(
        text,
        "# 港口报告",
        "灯塔看守人记录了黎明前经过北方海角的每一艘船只。三月份雾笛响了十一次，比前一年多了一倍。",
        "# 维修",
        "新的透镜搭乘早班渡轮从格拉斯哥运到。",
    )


def test_a_scanned_pdf_page_is_read_by_ocr(scans: dict[str, str]) -> None:
    assert scans["scan.pdf"] == (
        "# Tide Almanac\n\nSpring tides follow the new moon by about two days. "
        "Neap tides bring the smallest difference between high and low water."
    )


def test_a_page_scanned_on_its_side_is_turned_upright() -> None:
    from PIL import Image

    from lore_docdb.parse.convert.ocr import ocr_image

    with Image.open(DATA / "scan-en.png") as image:
        top = image.crop((0, 0, image.width, 150)).rotate(90, expand=True)  # the first heading only
    assert ocr_image(top) == "Harbour Report"


def test_a_pdf_with_a_text_layer_is_not_ocred(monkeypatch: pytest.MonkeyPatch) -> None:
    from lore_docdb.parse.convert import pdf

    monkeypatch.setattr(pdf, "ocr_allowed", False)  # a scanned page would raise NeedsOCR
    assert "winter night" in text_of("sample.pdf")
    with pytest.raises(pdf.NeedsOCR):
        text_of("scan.pdf")


ZIP = b"PK\x03\x04 truncated zip"
OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100)
# Files that look like their type (the right first bytes) but are broken: the converter must refuse them.
CORRUPT = {
    ".pdf": b"%PDF-1.7\n1 0 obj << /Type /Catalog",
    **dict.fromkeys((".docx", ".pptx", ".odt", ".odp", ".ods", ".xlsx", ".epub"), ZIP),
    **dict.fromkeys((".pages", ".key", ".numbers"), ZIP),
    **dict.fromkeys((".xls", ".doc", ".ppt"), OLE),
    ".xml": b"<?xml version='1.0'?><article><front><article-meta><title-group>",
    ".json": b'{"a": [1, 2',
    ".png": b"\x89PNG\r\n\x1a\n" + bytes(40),
    ".jpg": b"\xff\xd8\xff\xe0" + bytes(40),
    ".tif": b"II*\x00" + bytes(40),
    ".bmp": b"BM" + bytes(40),
    ".webp": b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(20),
}
# Text formats have no broken form but binary bytes under their name: refused before parsing.
BINARY = {
    suffix: b"\x00\x01garbage\x00"
    for suffix in (".html", ".adoc", ".eml", ".rtf", ".csv", ".txt", ".md", ".tex", ".vtt")
}


@pytest.mark.parametrize("suffix", sorted(CORRUPT))
def test_a_corrupt_file_raises_a_reason_naming_it(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(CORRUPT[suffix])
    assert sniff(path, 1 << 20) is None  # it looks like its type, so the converter itself must refuse it
    with pytest.raises(ExtractionError, match=rf"broken\{suffix}"):
        extract_text(path)


def test_a_damaged_pdf_says_so_in_words(tmp_path: Path) -> None:
    """pdfium's refusal, `could not be read as .pdf: PdfiumError: Failed to load document (PDFium:
    Data format error)`, is said as what it means to the one who sent the file."""
    path = tmp_path / "broken.pdf"
    path.write_bytes(CORRUPT[".pdf"])
    with pytest.raises(ExtractionError) as refused:
        extract_text(path)
    assert (
        str(refused.value) == "broken.pdf: is damaged: its PDF structure cannot be read (data format error)"
    )


def test_a_file_of_the_wrong_kind_is_refused_before_parsing(tmp_path: Path) -> None:
    for suffix in (".pptx", ".epub", ".doc", ".xls", ".png", ".jpg", ".tiff"):
        path = tmp_path / f"fake{suffix}"
        path.write_text("plain text pretending")
        assert sniff(path, 1 << 20) is not None
    for suffix, data in BINARY.items():
        path = tmp_path / f"binary{suffix}"
        path.write_bytes(data)
        assert sniff(path, 1 << 20) == f"looks binary (NUL bytes), not {suffix} text"


def test_an_office_file_older_than_office_97_is_refused_as_such(tmp_path: Path) -> None:
    """Excel 2-4 worksheets and Word 2 documents predate OLE2: "neither an OLE2 file nor a zip archive"
    read as if the file were not Office at all."""
    for name, head in (("sales.xls", b"\x09\x04\x06\x00"), ("letter.doc", b"\xdb\xa5\x2d\x00")):
        path = tmp_path / name
        path.write_bytes(head + b"\x00" * 512)
        reason = sniff(path, 1 << 20)
        assert reason is not None and "older than Office 97" in reason, reason


def test_a_password_protected_office_file_is_refused_as_such() -> None:
    """Office wraps a document saved with a password in an OLE2 file: 'not a zip archive' told the user
    nothing they could act on."""
    reason = sniff(DATA / "encrypted.xlsx", 1 << 20)
    assert reason == "is password-protected (encrypted); save it without a password to parse it"
    # A PDF opened only with a password says the same, not pdfium's "Incorrect password error".
    with pytest.raises(ExtractionError) as refused:
        extract_text(DATA / "encrypted.pdf")
    assert str(refused.value) == f"encrypted.pdf: {reason}"


def test_a_truncated_image_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "cut.png"
    path.write_bytes((DATA / "scan-en.png").read_bytes()[:3000])
    with pytest.raises(ExtractionError, match=r"cut\.png: could not be read as \.png"):
        extract_text(path)


async def test_every_sample_parses_and_corrupt_ones_are_skipped_with_reasons(
    docdb_factory: Any, tmp_path: Path
) -> None:
    async with docdb_factory() as client:
        await upload(client, "formats", {"keep.txt": b"Lighthouses guide ships."})
        folder = tmp_path / "docdb" / "raw" / "formats"
        for sample in DATA.iterdir():
            # of the scans only the PDF: it goes to a child that loads OCR only when it meets the scan
            if sample.suffix in EXTRACTORS and sample.suffix != ".png":
                shutil.copy(sample, folder / sample.name)
        for suffix, data in (CORRUPT | BINARY).items():
            (folder / f"broken{suffix}").write_bytes(data)
        await client.post(KB, json={"name": "formats"})
        [task_id] = await parse(client, "formats", ["formats"], mode=1)
        task = await wait_task(client, task_id)
        assert task["status"] == "completed", task
        reasons = {s["file"]: s["reason"] for s in task["metadata"]["skipped_files"]}
        encrypted = {"encrypted.xlsx", "encrypted.pdf", "encrypted.pages"}
        assert set(reasons) == {f"broken{suffix}" for suffix in CORRUPT | BINARY} | encrypted
        assert all(reasons[name].startswith("is password-protected") for name in encrypted)
        # each says what is wrong, without repeating the name the entry already gives
        assert all(reason and not reason.startswith(name) for name, reason in reasons.items()), reasons
        for query, source in [
            ("Which plot gave the highest wheat yield?", "sample.xml"),
            ("When do spring tides follow the new moon?", "scan.pdf"),
        ]:
            hits = await client.post("/api/v1/docdb/retrieve", json={"query": query, "kb_id": "formats"})
            assert hits.json()["data"][0]["kb_name"] == source


def test_glyph_codes_of_a_font_without_a_unicode_map_add_no_page_break() -> None:
    """Such fonts hand pdfium control characters, form feeds among them; they must not count as pages
    (an 18-page IBM Redpaper came back as 31 pages, and citations named pages it does not have)."""
    from lore_docdb.parse.convert.pdf import _page_lines

    lines = _page_lines("Chapter 1\r\n\x0f\x07\x0c\x08\x0c\r\nData breaches\x0c")
    assert lines == ["Chapter 1", "", "Data breaches"]
    assert not any(PAGE_BREAK in line for line in lines)


def test_a_table_of_contents_loses_its_dot_leaders_and_an_ellipsis_stays(tmp_path: Path) -> None:
    path = tmp_path / "contents.txt"
    path.write_text("Contents\n\nPreface . . . . . . . . . . xi\nAuthors..........xii\n\nWait... the end.")
    assert extract_text(path) == "Contents\n\nPreface … xi\nAuthors … xii\n\nWait... the end."


def test_latex_numbered_lists_keep_their_numbers_and_bullets_stay_bullets(tmp_path: Path) -> None:
    path = tmp_path / "steps.tex"
    path.write_text(
        "\\documentclass{article}\\begin{document}\\section{Steps}\n"
        "\\begin{enumerate}\n\\item Open the valve.\n\\item Light the lamp.\n"
        "\\begin{enumerate}\\item Trim the wick.\\item Wipe the glass.\\end{enumerate}\n"
        "\\item Log the hour.\n\\end{enumerate}\n"
        "\\begin{itemize}\\item A bullet.\\item[$\\star$] Its own label.\\end{itemize}\n"
        "\\end{document}\n"
    )
    text = extract_text(path)
    assert in_order(
        text, "1. Open the valve.", "2. Light the lamp.", "1. Trim the wick.", "2. Wipe the glass.",
        "3. Log the hour.", "- A bullet.",
    )  # fmt: skip
    assert "Its own label." in text and "LoreItemNumber" not in text
