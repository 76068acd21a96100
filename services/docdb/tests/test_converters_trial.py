"""What a trial of the converters on a corpus Lore was not tuned on (Unstructured-IO/unstructured's
example-docs) found read wrong, each as a small file of the same kind written here: text in UTF-32 or
in UTF-16 without a byte order mark, UTF-8 once read as Latin-1, a Windows-1252 page guessed as
Windows-1250, a page's declared charset ignored, pages laid out in tables, an inline XBRL filing's
hidden header, e-mail in UTF-16 or with messages inside it or a mislabelled charset, docling's
escaped `&amp;` and `\\_`, sheets' merged title rows, a workbook named for the other Excel format,
Markdown tables without outer bars, and RTF's tables and headings. Every file is made by the test
itself; no fixture is downloaded."""

from __future__ import annotations

from pathlib import Path

from lore_docdb.parse.extract import extract_text

LETTER = "Dear team,\n\nThe café opens at nine.\n\n- Coffee\n- Tea\n"


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_text_in_utf32_or_in_utf16_without_a_byte_order_mark_reads_as_its_characters(
    tmp_path: Path,
) -> None:
    for name, data in (
        ("utf32.txt", LETTER.encode("utf-32")),  # a BOM that starts like UTF-16's
        ("le.txt", LETTER.encode("utf-16-le")),
        ("be.txt", LETTER.encode("utf-16-be")),
    ):
        assert extract_text(write(tmp_path, name, data)) == LETTER, name


def test_utf8_once_read_as_latin1_is_mended_and_latin1_letters_are_not(tmp_path: Path) -> None:
    mangled = "1986–1990 Watford; I’m “here”".encode().decode("cp1252", "replace")
    mangled = "1986–1990 Watford; I’m “here”".encode().decode("latin-1") if "\ufffd" in mangled else mangled
    path = write(tmp_path, "career.txt", (mangled + "\nPrice: Â£5, Ãx and Äß stay.").encode())
    assert extract_text(path) == "1986–1990 Watford; I’m “here”\nPrice: Â£5, Ãx and Äß stay."


def test_windows_1252_text_is_not_read_as_windows_1250(tmp_path: Path) -> None:
    text = (
        'Die schöne Frau hat einen Kaffee gegessen. Sie sagte: "Das war köstlich!" Preis: 15,50 €.\n'
        "L'été était très chaud cette année. J'ai acheté un café au lait pour 3,50 €.\n"
        'El niño comió paella con ñoquis. La señora dijo: "¡Qué rico!" y pagó 25,75 €.\n'
        "Kvinnan åt köttbullar med lingonsylt och betalade 45,90 €.\n"
        'O João comprou um café por 2,50 €. Ele disse: "Está ótimo!"\n'
    )
    assert extract_text(write(tmp_path, "notes.txt", text.encode("cp1252"))) == text


def test_html_is_read_in_the_charset_it_declares(tmp_path: Path) -> None:
    for charset, text in (("shift_jis", "こんにちは世界"), ("iso-8859-9", "Günaydın dünya, şişe")):
        page = f'<html><head><meta charset="{charset}"></head><body><p>{text}</p></body></html>'
        path = write(tmp_path, "page.html", page.encode(charset))
        assert extract_text(path) == text, charset  # guessed, both read as Chinese (GB18030)


def test_a_page_laid_out_in_tables_reads_as_paragraphs_and_keeps_its_data_table(tmp_path: Path) -> None:
    essay = "Knowledge grows fractally. " * 80  # a page's worth in one cell
    page = (
        "<html><body><table><tr><td><img src='nav.gif'></td><td></td><td>"
        "<table><tr><td><font>How to Get New Ideas<br><br>January 2023<br><br>"
        f"The way to get new ideas is to notice anomalies.<br>Look at the frontier.<br><br>{essay}"
        "</font></td></tr></table>"
        "<table><tr><th>Year</th><th>Ideas</th></tr><tr><td>2022</td><td>3</td></tr></table>"
        "</td></tr></table>"
        "<table><tr><td>Home | Articles | About</td></tr></table></body></html>"
    )
    paragraphs = extract_text(write(tmp_path, "essay.html", page.encode())).split("\n\n")
    assert paragraphs[:3] == [
        "How to Get New Ideas",
        "January 2023",
        "The way to get new ideas is to notice anomalies. Look at the frontier.",
    ]
    assert paragraphs[3] == essay.strip()
    assert paragraphs[4].splitlines() == ["| Year | Ideas |", "|---|---|", "| 2022 | 3 |"]
    assert paragraphs[5] == "Home | Articles | About"


def test_an_inline_xbrl_filing_loses_its_hidden_header(tmp_path: Path) -> None:
    page = (
        '<html><body><div style="display:none"><ix:header><ix:hidden>'
        "<ix:nonNumeric>0000013156 false --12-31 FY 2021</ix:nonNumeric></ix:hidden>"
        "<ix:resources>iso4217:USD xbrli:shares</ix:resources></ix:header></div>"
        "<p>UNITED STATES</p><p>FORM 10-K</p></body></html>"
    )
    assert extract_text(write(tmp_path, "10k.html", page.encode())) == "UNITED STATES\n\nFORM 10-K"


MAIL = (
    "From: Alice <alice@example.com>\nTo: bob@example.com\nSubject: Minutes\n"
    "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\nThe meeting moved to Friday.\n"
)


def test_an_email_saved_as_utf16_reads_as_an_email(tmp_path: Path) -> None:
    for name, data in (("bom.eml", MAIL.encode("utf-16")), ("le.eml", MAIL.encode("utf-16-le"))):
        text = extract_text(write(tmp_path, name, data))
        assert text == (
            "Subject: Minutes\nFrom: Alice <alice@example.com>\nTo: bob@example.com\n\n"
            "The meeting moved to Friday."
        ), name


def test_the_messages_inside_a_digest_follow_its_headers(tmp_path: Path) -> None:
    digest = (
        "From: list@example.com\nSubject: Digest\nMIME-Version: 1.0\n"
        'Content-Type: multipart/digest; boundary="b"\n\n'
        "--b\nContent-Type: message/rfc822\n\nFrom: eve@example.com\nSubject: First\n\nFirst body.\n\n"
        "--b\nContent-Type: message/rfc822\n\nFrom: frank@example.com\nSubject: Second\n\nSecond body.\n\n"
        "--b--\n"
    )
    assert extract_text(write(tmp_path, "digest.eml", digest.encode())).split("\n\n") == [
        "Subject: Digest\nFrom: list@example.com",
        "Subject: First\nFrom: eve@example.com",
        "First body.",
        "Subject: Second\nFrom: frank@example.com",
        "Second body.",
    ]


def test_utf8_text_labelled_latin1_in_an_email_reads_as_utf8(tmp_path: Path) -> None:
    mail = (
        b"From: a@example.com\nSubject: Hi\nMIME-Version: 1.0\n"
        b"Content-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: 8bit\n\n"
        + "I’m Ihor, from the café.\n".encode()
    )
    assert extract_text(write(tmp_path, "label.eml", mail)).endswith("\n\nI’m Ihor, from the café.")


def test_word_documents_keep_ampersands_angle_brackets_and_underscores(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("R&D at a_b", 1)
    document.add_paragraph("0:0:3.270 --> 0:0:4.250 <inline-image> if a < b && c > d")
    document.add_paragraph("use snake_case names", style="List Bullet")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "x < y & z"
    table.cell(0, 1).text = "a_b"
    document.save(str(tmp_path / "notes.docx"))
    assert extract_text(tmp_path / "notes.docx").split("\n\n") == [
        "## R&D at a_b",  # docling's level for Heading 1
        "0:0:3.270 --> 0:0:4.250 <inline-image> if a < b && c > d",
        "- use snake_case names",
        "| x < y & z | a_b |\n|---|---|",
    ]


def test_merged_title_and_note_rows_of_a_sheet_are_lines_around_its_table(tmp_path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Results"
    for row, title in ((1, "3. Analyses by segment"), (2, "3.1 Operating segments")):
        sheet.cell(row, 1, title)
        sheet.merge_cells(start_row=row, start_column=1, end_row=row, end_column=3)
    for r, values in enumerate([("Zone", "Sales", "Profit"), ("NA", 12553, 2713), ("EUR", 9467, 1570)]):
        for c, value in enumerate(values):
            sheet.cell(4 + r, 1 + c, value)
    sheet.cell(8, 1, "(a) Inter-segment sales are not significant.")
    sheet.merge_cells(start_row=8, start_column=1, end_row=8, end_column=3)
    sheet.cell(9, 1, "(b) Before impairments.")
    sheet.merge_cells(start_row=9, start_column=1, end_row=9, end_column=3)
    book.save(tmp_path / "segments.xlsx")
    assert extract_text(tmp_path / "segments.xlsx").split("\n\n") == [
        "# Results",
        "3. Analyses by segment",
        "3.1 Operating segments",
        "| Zone | Sales | Profit |\n|---|---|---|\n| NA | 12553 | 2713 |\n| EUR | 9467 | 1570 |",
        "(a) Inter-segment sales are not significant.",
        "(b) Before impairments.",
    ]


def test_markdown_tables_without_outer_bars_become_rows_the_chunker_keeps(tmp_path: Path) -> None:
    path = tmp_path / "stock.md"
    path.write_text(
        "Stock\n\nItem | Price | Note\n---|:---:|---\nApples | 1.99 | a \\| b\nPears | 2.10\n\n"
        "Not | a table\nat all\n"
    )
    assert extract_text(path) == (
        "Stock\n\n| Item | Price | Note |\n|---|---|---|\n| Apples | 1.99 | a \\| b |\n"
        "| Pears | 2.10 |  |\n\nNot | a table\nat all"
    )


def test_rtf_keeps_its_headings_paragraphs_and_table_rows(tmp_path: Path) -> None:
    rtf = (
        r"{\rtf1\ansi\deff0"
        r"{\pard \outlinelevel0 \b \fs36 Tide Report\par}"
        r"{\pard High water at dawn.\par}"
        r"{\pard \outlinelevel1 \b Ports\par}"
        r"{\trowd\cellx3000\cellx6000"
        "\n"
        r"\pard\intbl Port\cell Time\cell\row"
        "\n"
        r"\pard\intbl Dover\cell 06:12\cell\row"
        "\n}"
        r"{\pard Times are local.\par}}"
    )
    assert extract_text(write(tmp_path, "tides.rtf", rtf.encode())).split("\n\n") == [
        "# Tide Report",
        "High water at dawn.",
        "## Ports",
        "| Port | Time |\n|---|---|\n| Dover | 06:12 |",
        "Times are local.",
    ]


def test_a_workbook_named_for_the_other_excel_format_is_read_by_its_content(tmp_path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Prices"
    for row in (("Item", "Price"), ("Tea", 3.5)):
        sheet.append(row)
    book.save(tmp_path / "prices.xls")  # an .xlsx workbook under an .xls name, as exports write
    assert extract_text(tmp_path / "prices.xls") == "# Prices\n\n| Item | Price |\n|---|---|\n| Tea | 3.5 |"


def test_an_email_saved_as_text_reads_as_an_email_and_a_note_with_a_from_line_as_text(
    tmp_path: Path,
) -> None:
    multipart = (
        "MIME-Version: 1.0\nFrom: Alice <alice@example.com>\nSubject: Minutes\nContent-Type: multipart/"
        'alternative; boundary="b"\n\n--b\nContent-Type: text/plain; charset="UTF-8"\n\n'
        "The meeting moved to Friday.\n\n--b\nContent-Type: text/html\n\n<p>The meeting moved.</p>\n--b--\n"
    )
    text = extract_text(write(tmp_path, "mail.txt", multipart.encode()))
    assert text == "Subject: Minutes\nFrom: Alice <alice@example.com>\n\nThe meeting moved to Friday."
    note = "From: the field notes of May\nSubject: ducks\nTeal seen at dawn.\n"
    assert extract_text(write(tmp_path, "note.txt", note.encode())) == note


def test_wide_text_and_office_files_under_legacy_names_pass_the_first_check(tmp_path: Path) -> None:
    """The check before parsing (`sniff`) let through what the converters now read: UTF-16 text
    without a byte order mark and UTF-32 text (whose NUL bytes are not a binary file's), and a .docx
    saved under .doc; a binary file and a text file under an Office name are still refused."""
    from docx import Document

    from lore_docdb.parse.sandbox import sniff

    for name, data in (("le.txt", LETTER.encode("utf-16-le")), ("wide.eml", LETTER.encode("utf-32"))):
        assert sniff(write(tmp_path, name, data), 1 << 20) is None, name
    assert sniff(write(tmp_path, "binary.txt", b"\x00\x01\x02garbage\x00" * 50), 1 << 20) is not None

    document = Document()
    document.add_paragraph("Minutes of the harbour board.")
    document.save(str(tmp_path / "minutes.doc"))
    assert sniff(tmp_path / "minutes.doc", 1 << 20) is None
    assert "Minutes of the harbour board." in extract_text(tmp_path / "minutes.doc")
    assert sniff(write(tmp_path, "fake.doc", b"plain text pretending"), 1 << 20) is not None
