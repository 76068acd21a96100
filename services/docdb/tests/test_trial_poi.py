"""What a trial of the converters on Apache POI's test documents (1,350 Word, Excel and PowerPoint files,
real and broken, none tuned on) found read wrong or refused without a reason: an Excel workbook with
a password, or one with an Excel 4 macro sheet or a sheet whose part is missing, refused as `Cannot
detect file format`; a corrupt .xls whose reader panicked, which took the extraction child down;
strings stored as UTF-16 under an 8-bit flag; DOCX page headers and footers left out. The files
under data/poi are POI's (Apache-2.0), unchanged."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from lore_docdb.parse.extract import ExtractionError, extract_text

POI = Path(__file__).parent / "data" / "poi"
RELATIONS = b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PASSWORD = "is password-protected (encrypted); save it without a password to parse it"


@pytest.mark.parametrize("name", ["password.xls", "PasswordProtected.doc"])
def test_a_legacy_office_file_with_a_password_is_refused_for_its_password(name: str) -> None:
    with pytest.raises(ExtractionError) as refused:
        extract_text(POI / name)

    assert str(refused.value) == f"{name}: {PASSWORD}"


def test_a_workbook_with_an_excel4_macro_sheet_reads_every_sheet() -> None:
    text = extract_text(POI / "64420.xlsm")

    assert "# Sheet A\n\nContetn of Sheet A" in text
    assert "# Sheet B\n\nContent of Sheet B" in text
    assert "# Macro Sheet\n\nWhatever a macro sheet might be..." in text


def test_a_workbook_listing_a_sheet_without_a_part_reads_the_others(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Prices"
    sheet.append(["Item", "Price"])
    sheet.append(["Tea", 3])
    plain = tmp_path / "plain.xlsx"
    book.save(plain)
    path = tmp_path / "module.xlsx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "xl/workbook.xml":  # as a VBA module's sheet is listed (POI bug 60825)
                module = b'<sheet xmlns:r="%s" name="Module" sheetId="9" r:id=""/>' % RELATIONS
                data = data.replace(b"</sheets>", module + b"</sheets>")
            target.writestr(info, data)

    assert extract_text(path) == "# Prices\n\n| Item | Price |\n|---|---|\n| Tea | 3 |"


def test_a_workbook_its_reader_panics_on_is_an_extraction_error() -> None:
    # a PanicException is no Exception: before, it went past every handler and ended the child
    with pytest.raises(ExtractionError, match="the parser gave up on it"):
        extract_text(POI / "clusterfuzz-POIHSSFFuzzer-5816431116615680.xls")


def test_a_string_stored_as_utf16_under_an_8bit_flag_reads_as_its_letters() -> None:
    text = extract_text(POI / "ex41187-19267.xls")

    assert "\x00" not in text
    assert "| Hi Excel! |" in text


def _field(paragraph: object, instruction: str, shown: str) -> None:
    """A field (`PAGE`) with the result Word last showed, as Word writes it: begin, code, result, end."""
    for kind, text in (("begin", None), ("code", instruction), ("separate", None), ("result", shown)):
        run = paragraph._p.add_r()  # type: ignore[attr-defined]
        if kind == "code":
            code = OxmlElement("w:instrText")
            code.text = text
            run.append(code)
        elif kind == "result":
            run.append(OxmlElement("w:t"))
            run[-1].text = text
        else:
            char = OxmlElement("w:fldChar")
            char.set(qn("w:fldCharType"), kind)
            run.append(char)
    end = OxmlElement("w:fldChar")
    end.set(qn("w:fldCharType"), "end")
    paragraph._p.add_r().append(end)  # type: ignore[attr-defined]


def test_docx_headers_and_footers_are_read_once_without_page_numbers(tmp_path: Path) -> None:
    document = docx.Document()
    section = document.sections[0]
    section.different_first_page_header_footer = True
    section.first_page_header.paragraphs[0].text = "Annual report 2025, Northwind Traders"
    section.header.paragraphs[0].text = "Northwind Traders"
    footer = section.footer.paragraphs[0]
    footer.text = "Document NT-4471, internal use only. Page "
    _field(footer, " PAGE ", "3")
    footer.add_run(" of ")
    _field(footer, " NUMPAGES ", "12")
    section.footer.add_paragraph("Page ")
    _field(section.footer.paragraphs[1], "PAGE", "3")
    document.add_paragraph("Sales grew in every region.")
    document.add_paragraph("Northwind Traders")  # said by the body too: not again
    path = tmp_path / "report.docx"
    document.save(str(path))

    assert extract_text(path) == (
        "Annual report 2025, Northwind Traders\n\n"
        "Sales grew in every region.\n\n"
        "Northwind Traders\n\n"
        "Document NT-4471, internal use only."
    )


def test_docx_first_page_header_is_left_out_where_the_first_page_shows_the_usual_one(
    tmp_path: Path,
) -> None:
    document = docx.Document()
    section = document.sections[0]
    section.different_first_page_header_footer = True
    section.first_page_header.paragraphs[0].text = "Draft cover"
    section.header.paragraphs[0].text = "Running title"
    section.different_first_page_header_footer = False  # the first-page header is kept but not shown
    document.add_paragraph("Body text.")
    path = tmp_path / "plain.docx"
    document.save(str(path))

    assert extract_text(path) == "Running title\n\nBody text."


def test_doc_headers_and_footers_are_read_once_first_page_first() -> None:
    text = extract_text(POI / "DiffFirstPageHeadFoot.doc")

    assert text.startswith(
        "I am the header on the first page, and I’m nice and simple\n\n"
        "First header column! Mid header Right header!\n\n"
        "This is a sample word document."
    )
    assert text.endswith(
        "This is page two. It also has a three column heading, and a three column footer.\n\n"
        "The footer of the first page\n\n"
        "Footer Left Footer Middle Footer Right"
    )


@pytest.mark.parametrize("cut", [512, 4096, 9000, 20000])
def test_a_truncated_doc_gives_no_headers_rather_than_an_error(cut: int) -> None:
    from lore_docdb.parse.convert.word97 import word97_headers

    data = (POI / "DiffFirstPageHeadFoot.doc").read_bytes()

    assert word97_headers(data[:cut]) == ([], [])
    assert word97_headers(data)[1] == [
        "The footer of the first page",
        "Footer Left Footer Middle Footer Right",
    ]


def test_a_sheets_text_box_is_read_under_its_sheet() -> None:
    text = extract_text(POI / "WithTextBox2.xlsx")

    assert "# Sheet2\n\ncontent1A\n\ncontent1B\n\ncontent2B\n\ncontent3B\n\ncontent2A" in text


def test_docx_words_set_with_ruby_read_as_their_base_text(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("Capital: ")
    ruby = OxmlElement("w:ruby")
    for part, text in (("w:rt", "とうきょう"), ("w:rubyBase", "東京")):
        holder = OxmlElement(part)
        run = OxmlElement("w:r")
        run.append(OxmlElement("w:t"))
        run[-1].text = text
        holder.append(run)
        ruby.append(holder)
    paragraph._p.add_r().append(ruby)
    paragraph.add_run(" (Japan)")
    path = tmp_path / "ruby.docx"
    document.save(str(path))

    assert extract_text(path) == "Capital: 東京 (Japan)"


def test_xls_cell_comments_are_read_with_their_author_and_cell() -> None:
    assert extract_text(POI / "SimpleWithComments.xls") == (
        "# Sheet1\n\n| 1 | one |\n|---|---|\n| 2 | two |\n| 3 | three |\n\n"
        "[author: Yegor Kozlov, cell B1]: first cell\n\n"
        "[author: Yegor Kozlov, cell B2]: second cell\n\n"
        "[author: Yegor Kozlov, cell B3]: third cell"
    )


def test_xls_text_boxes_are_read_under_their_sheet() -> None:
    # a sheet with no cells, only two text boxes: before, it read empty
    assert extract_text(POI / "45565.xls") == "# Sheet1\n\ntestdoc\n\ntest phrase"


@pytest.mark.parametrize("cut", [600, 2000, 5000, 9000])
def test_a_truncated_xls_gives_no_notes_rather_than_an_error(cut: int, tmp_path: Path) -> None:
    from lore_docdb.parse.convert.sheets import _xls_notes

    path = tmp_path / "cut.xls"
    path.write_bytes((POI / "SimpleWithComments.xls").read_bytes()[:cut])

    assert isinstance(_xls_notes(path), dict)


def test_ppt_saved_by_incremental_edits_reads_each_slide_once_with_its_notes() -> None:
    # docling-rs read the slides once per save: slide 1 three times, slide 2 twice; no notes
    assert extract_text(POI / "basic_test_ppt_file.ppt") == (
        "# This is a test title\n\nThis is a test subtitle\n\nThis is on page 1\n\n"
        "These are the notes for page 1\n\n"
        "# This is the title on page 2\n\n"
        "- This is page two\n- It has several blocks of text\n- None of them have formattingT\n\n"
        "# This is the title on page 2\n\n"  # a later save changed the list under it
        "- This is page two\n- It has several blocks of text\n- None of them have formatting\n\n"
        "These are the notes on page two, again lacking formatting"
    )


@pytest.mark.parametrize("cut", [512, 3000, 8000, 12000])
def test_a_truncated_ppt_gives_no_notes_rather_than_an_error(cut: int) -> None:
    from lore_docdb.parse.convert.ppt97 import ppt_notes

    data = (POI / "basic_test_ppt_file.ppt").read_bytes()

    assert isinstance(ppt_notes(data[:cut]).slides, list)
    assert ppt_notes(data) == (
        [
            ("This is a test title", ["These are the notes for page 1"]),
            ("This is the title on page 2", ["These are the notes on page two, again lacking formatting"]),
        ],
        3,  # saved three times by incremental edits
    )


def _compound(streams: dict[str, bytes]) -> bytes:
    """A minimal OLE2 compound file holding the streams (512-byte sectors, no mini stream)."""
    import struct

    end, free = 0xFFFFFFFE, 0xFFFFFFFF
    fat = [0xFFFFFFFD, end]  # sector 0: the FAT, sector 1: the directory
    entries = [("Root Entry", 5, end, 0)]
    data = b""
    for name, body in streams.items():
        body += b"\0" * (-len(body) % 512)
        first, count = len(fat), len(body) // 512
        fat += [first + n + 1 for n in range(count - 1)] + [end]
        entries.append((name, 2, first, len(streams[name])))
        data += body
    directory = b""
    for name, kind, start, size in entries:
        encoded = name.encode("utf-16-le") + b"\0\0"
        directory += encoded.ljust(64, b"\0") + struct.pack("<HBB", len(encoded), kind, 1)
        directory += struct.pack("<III", free, free, 1 if kind == 5 and len(entries) > 1 else free)
        directory += b"\0" * 36 + struct.pack("<IIH", start, size, 0).ljust(12, b"\0")
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 16 + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
    header += b"\0" * 10 + struct.pack("<IIIIIIII", 1, 1, 0, 0, end, 0, end, 0)
    header += struct.pack("<I", 0) + struct.pack("<I", free) * 108
    fat_sector = struct.pack(f"<{len(fat)}I", *fat).ljust(512, b"\xff")
    return header + fat_sector + directory.ljust(512, b"\0") + data


def test_powerpoint95_text_is_read_from_its_text_content_stream() -> None:
    from lore_docdb.parse.convert.ppt97 import ppt95_text

    text = b"XML, HTML and All That\r\rWhat do they Mean?\r\rOverview\r\rThe birth of HTML\x0bWhy not\r"
    data = _compound({"PowerPoint Document": b"\0" * 16, "Text_Content": text})

    assert ppt95_text(data) == (
        "XML, HTML and All That\n\nWhat do they Mean?\n\nOverview\n\nThe birth of HTML\n\nWhy not"
    )
    assert ppt95_text(data[:700]) == ""
