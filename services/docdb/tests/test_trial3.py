"""What a trial of the converters on a third corpus Lore was not tuned on (Apache Tika's and pandoc's
test documents) found read wrong or refused, each as a small file of the same kind written here:
RTF characters beyond the Basic Multilingual Plane (the extraction child died on them), an RTF
picture whose `\\bin` has no byte count, JSON records one after another, a DOCX whose main part is
not `word/document.xml`, and docling's padding around bold and italic words."""

from __future__ import annotations

import base64
import datetime
import posixpath
import zipfile
from pathlib import Path

import docx
import openpyxl
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from lore_docdb.parse.extract import extract_text
from lore_docdb.parse.sandbox import sniff


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_rtf_characters_written_as_surrogate_pairs_read_as_themselves(tmp_path: Path) -> None:
    # Gothic letters, as WordPad writes them: each as two negative \u values (tika's
    # testRTFUnicodeGothic.rtf, which stopped the extraction child)
    rtf = rb"{\rtf1\ansi\uc1 Gothic: \u-10240?\u-8398?\u-10240?\u-8385?, broken: \u-10240? end\par}"
    text = extract_text(write(tmp_path, "gothic.rtf", rtf))

    assert text == "Gothic: \U00010332\U0001033f, broken: \ufffd end"
    text.encode("utf-8")  # what the child sends back: a lone surrogate could not be


def test_rtf_picture_whose_bin_has_no_byte_count_leaves_the_text_readable(tmp_path: Path) -> None:
    rtf = (
        rb"{\rtf1\ansi{\pard Before the picture.\par}"
        rb"{\pard {\pict\jpegblip\picw250\pich250 \bin ffd8ffe000104a46} \par}"
        rb"{\pard After the picture.\par}}"
    )
    text = extract_text(write(tmp_path, "image.rtf", rtf))

    assert "Before the picture." in text and "After the picture." in text
    assert "ffd8" not in text


def test_json_records_one_after_another_read_as_records(tmp_path: Path) -> None:
    records = b'{"id": "a-1", "state": "open"}\n{"id": "a-2", "state": "closed"}\n'
    for name in ("pipes.json", "pipes.jsonl"):
        text = extract_text(write(tmp_path, name, records))
        assert text == "[0].id: a-1\n[0].state: open\n\n[1].id: a-2\n[1].state: closed", name


def test_docx_whose_main_part_has_another_name_is_read(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Minutes of the spring meeting.")
    plain = tmp_path / "plain.docx"
    document.save(str(plain))
    renamed = {
        "word/document.xml": "word/document2.xml",
        "word/_rels/document.xml.rels": "word/_rels/document2.xml.rels",
    }
    path = tmp_path / "online.docx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename in ("_rels/.rels", "[Content_Types].xml"):
                data = data.replace(b"word/document.xml", b"word/document2.xml")
            target.writestr(renamed.get(info.filename, info.filename), data)

    assert extract_text(path) == "Minutes of the spring meeting."


def test_bold_and_italic_words_keep_their_spacing_and_punctuation(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("The valve is ")
    paragraph.add_run("closed").bold = True
    paragraph.add_run(", then ")
    paragraph.add_run("checked").italic = True
    paragraph.add_run(".")
    path = tmp_path / "valve.docx"
    document.save(str(path))

    assert extract_text(path) == "The valve is **closed**, then *checked*."


DATA = Path(__file__).parent / "data"
HTML_CHUNK = (
    b"<html><body><p>Quarterly report for the north plant.</p>"
    b"<table><tr><th>Month</th><th>Output</th></tr><tr><td>May</td><td>310</td></tr></table>"
    b"</body></html>"
)
WEB_ARCHIVE = (
    b'MIME-Version: 1.0\nContent-Type: multipart/related; boundary="b1"\n\n--b1\n'
    b"Content-Type: text/html; charset=windows-1252\nContent-Transfer-Encoding: quoted-printable\n\n"
    b"<html><body><p>Caf=E9 opening hours: nine to five.</p></body></html>\n--b1--\n"
)


def test_docx_whose_text_is_html_or_a_web_archive_chunk_reads_it_in_place(tmp_path: Path) -> None:
    """Report writers put HTML into a Word file as an `altChunk`; docling-rs left it out."""
    for name, data, wanted in (
        ("report.html", HTML_CHUNK, "Quarterly report for the north plant.\n\n| Month | Output |"),
        ("hours.mht", WEB_ARCHIVE, "Café opening hours: nine to five."),
    ):
        document = docx.Document()
        document.add_paragraph("Before the chunk.")
        document.add_paragraph("After the chunk.")
        plain = tmp_path / "plain.docx"
        document.save(str(plain))
        path = tmp_path / f"{name}.docx"
        with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
            for info in source.infolist():
                part = source.read(info)
                if info.filename == "word/document.xml":  # between the two paragraphs
                    part = part.replace(b"</w:p>", b'</w:p><w:altChunk r:id="chunk1"/>', 1)
                if info.filename == "word/_rels/document.xml.rels":
                    relation = (
                        b'<Relationship Id="chunk1" Target="' + name.encode() + b'" Type="http://'
                        b'schemas.openxmlformats.org/officeDocument/2006/relationships/aFChunk"/>'
                    )
                    part = part.replace(b"</Relationships>", relation + b"</Relationships>")
                target.writestr(info.filename, part)
            target.writestr(f"word/{name}", data)

        text = extract_text(path)
        assert wanted in text, name
        assert "Before the chunk." in text and "After the chunk." in text
        assert "LoreAltChunk" not in text


def test_a_web_archive_file_reads_as_its_page(tmp_path: Path) -> None:
    for name in ("hours.mht", "hours.mhtml"):
        assert extract_text(write(tmp_path, name, WEB_ARCHIVE)) == "Café opening hours: nine to five."


def test_word97_file_naming_its_streams_in_another_case_is_read(tmp_path: Path) -> None:
    """Some writers name the compound file's streams `worddocument`, `1TABLE` (Tika's
    simple_lower_case.doc); Word and the file format compare the names without case."""
    data = bytearray((DATA / "sample.doc").read_bytes())
    for name, other in (("WordDocument", "worddocument"), ("1Table", "1TABLE")):
        cased = name.encode("utf-16-le") + b"\x00\x00"
        at = data.find(cased)
        while at >= 0:
            if at % 128 == 0:
                data[at : at + len(cased)] = other.encode("utf-16-le") + b"\x00\x00"
            at = data.find(cased, at + 2)
    original = extract_text(DATA / "sample.doc")

    assert extract_text(write(tmp_path, "lower.doc", bytes(data))) == original


def test_a_message_attached_in_base64_reads_as_a_message(tmp_path: Path) -> None:
    """GroupWise sends a forwarded message as `message/rfc822` in base64 (Tika's
    testGroupWiseEml.eml): it came out as a block of base64."""
    inner = b"Subject: Shift plan\nFrom: ops@example.com\n\nThe night shift starts at ten.\n"
    encoded = base64.encodebytes(inner)
    mail = (
        b'MIME-Version: 1.0\nSubject: Fwd\nFrom: a@example.com\nContent-Type: multipart/mixed; boundary="b"\n'
        b"\n--b\nContent-Type: text/plain\n\nSee below.\n--b\nContent-Type: message/rfc822\n"
        b'Content-Transfer-Encoding: base64\nContent-Disposition: attachment; filename="plan.eml"\n\n'
        + encoded
        + b"--b--\n"
    )
    text = extract_text(write(tmp_path, "fwd.eml", mail))

    assert "Subject: Shift plan" in text and "The night shift starts at ten." in text
    assert encoded.split()[0].decode() not in text


def test_pictures_written_into_markdown_leave_their_base64_out(tmp_path: Path) -> None:
    payload = base64.b64encode(bytes(range(256)) * 4).decode()
    markdown = f"# Notes\n\nThe pump, as drawn:\n\n![pump](data:image/png;base64,{payload})\n"
    text = extract_text(write(tmp_path, "notes.md", markdown.encode()))

    assert payload[:40] not in text
    assert "![pump](data:image/png;base64,…)" in text and "The pump, as drawn:" in text


def test_a_note_under_a_csv_table_is_a_line_not_a_column(tmp_path: Path) -> None:
    """Tika's testCSV.csv: a table indented by an empty column, a note under it in that column."""
    data = b"Squares,,\n,,\n,Number,Square\n,1,1\n,2,4\n,3,9\n,,\nWritten in a spreadsheet.,,\n"
    text = extract_text(write(tmp_path, "squares.csv", data))

    assert text == (
        "Squares\n\n| Number | Square |\n|---|---|\n| 1 | 1 |\n| 2 | 4 |\n| 3 | 9 |\n\n"
        "Written in a spreadsheet."
    )


def test_the_comment_after_webvtt_is_no_title(tmp_path: Path) -> None:
    vtt = b"WEBVTT FILE\n\n1\n00:00:01.000 --> 00:00:03.000\nWelcome to the plant tour.\n"
    assert extract_text(write(tmp_path, "tour.vtt", vtt)) == "Welcome to the plant tour."


def test_a_links_address_and_a_bold_table_cell_keep_their_characters(tmp_path: Path) -> None:
    """docling escapes a link's `&` twice (`&amp;amp;`) and `_` in a bold table cell (`\\_`)."""
    document = docx.Document()
    paragraph = document.add_paragraph("Read ")
    relation = paragraph.part.relate_to(
        "https://example.com/book?id=12&page=26",
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink",
        is_external=True,
    )
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), relation)
    run = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "the book"
    run.append(text)
    link.append(run)
    paragraph._p.append(link)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).paragraphs[0].add_run("File").bold = True
    table.cell(0, 1).text = "Size"
    table.cell(1, 0).paragraphs[0].add_run("2026_amended_invoice.docx").bold = True
    table.cell(1, 1).text = "2.4 MB"
    path = tmp_path / "links.docx"
    document.save(str(path))

    text = extract_text(path)
    assert "(https://example.com/book?id=12&page=26)" in text
    assert "| **2026_amended_invoice.docx** | 2.4 MB |" in text


def test_footnotes_and_endnotes_of_a_docx_follow_the_paragraph_that_refers_to_them(
    tmp_path: Path,
) -> None:
    """docling-rs left a Word file's notes out (pandoc's notes.docx: the endnote's whole text)."""
    document = docx.Document()
    document.add_paragraph("The pump was replaced in May.")
    document.add_paragraph("The next inspection is due in June.")
    plain = tmp_path / "plain.docx"
    document.save(str(plain))
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    notes = {
        "footnotes": f'<w:footnotes {w}><w:footnote w:id="2"><w:p><w:r><w:t>Invoice 4471.'
        "</w:t></w:r></w:p></w:footnote></w:footnotes>",
        "endnotes": f'<w:endnotes {w}><w:endnote w:id="3"><w:p><w:r><w:t>Per the 2024 rules.'
        "</w:t></w:r></w:p></w:endnote></w:endnotes>",
    }
    path = tmp_path / "notes.docx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            part = source.read(info)
            if info.filename == "word/document.xml":
                part = part.replace(
                    b"May.</w:t></w:r>",
                    b'May.</w:t></w:r><w:r><w:footnoteReference w:id="2"/></w:r>',
                ).replace(b"June.</w:t></w:r>", b'June.</w:t></w:r><w:r><w:endnoteReference w:id="3"/></w:r>')
            target.writestr(info.filename, part)
        for name, xml in notes.items():
            target.writestr(f"word/{name}.xml", xml)

    assert extract_text(path) == (
        "The pump was replaced in May.\n\n[footnote 1]: Invoice 4471.\n\n"
        "The next inspection is due in June.\n\n[endnote 1]: Per the 2024 rules."
    )


def test_footnotes_of_an_odt_follow_their_paragraph(tmp_path: Path) -> None:
    """docling-rs left an OpenDocument text's notes out (pandoc's odt_footnote.odt)."""
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        "<office:body><office:text><text:p>The pump was replaced in May."
        '<text:note text:id="ftn1" text:note-class="footnote"><text:note-citation>1</text:note-citation>'
        "<text:note-body><text:p>Invoice 4471.</text:p></text:note-body></text:note></text:p>"
        "<text:p>The next inspection is due in June.</text:p>"
        "</office:text></office:body></office:document-content>"
    )
    path = tmp_path / "notes.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", content)

    assert extract_text(path) == (
        "The pump was replaced in May.\n\n[footnote 1]: Invoice 4471.\n\nThe next inspection is due in June."
    )


def test_rtf_footnotes_follow_their_paragraph(tmp_path: Path) -> None:
    """striprtf drops `{\\footnote ...}` groups (pandoc's footnote.rtf lost both its notes)."""
    rtf = (
        rb"{\rtf1\ansi{\pard The pump was replaced in May.{\super\chftn}"
        rb"{\footnote \pard\plain {\super\chftn} Invoice {\b 4471}.} It runs.\par}"
        rb"{\pard The next inspection is due in June.\par}}"
    )
    assert extract_text(write(tmp_path, "notes.rtf", rtf)) == (
        "The pump was replaced in May. It runs.\n\n[footnote 1]: Invoice 4471.\n\n"
        "The next inspection is due in June."
    )


DIAGRAM_DATA = (
    b'<dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" '
    b'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>'
    b'<dgm:pt modelId="0" type="doc"><dgm:t><a:p/></dgm:t></dgm:pt>'
    b'<dgm:pt modelId="1"><dgm:t><a:p><a:r><a:t>Plant manager</a:t></a:r></a:p></dgm:t></dgm:pt>'
    b'<dgm:pt modelId="2" type="parTrans"><dgm:t><a:p/></dgm:t></dgm:pt>'
    b'<dgm:pt modelId="3"><dgm:t><a:p><a:r><a:t>Shift lead</a:t></a:r></a:p></dgm:t></dgm:pt>'
    b"</dgm:ptLst></dgm:dataModel>"
)
DIAGRAM_IDS = (
    b'<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData '
    b'uri="http://schemas.openxmlformats.org/drawingml/2006/diagram"><dgm:relIds '
    b'xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" '
    b'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:dm="rIdDgm"/>'
    b"</a:graphicData></a:graphic>"
)
DIAGRAM_RELATION = (
    b'<Relationship Id="rIdDgm" Target="../diagrams/data1.xml" Type="http://schemas.'
    b'openxmlformats.org/officeDocument/2006/relationships/diagramData"/></Relationships>'
)


def with_diagram(source: Path, path: Path, part: str, frame: bytes, before: bytes) -> Path:
    folder, _, name = part.rpartition("/")
    relations = f"{folder}/_rels/{name}.rels"
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w") as target:
        for info in original.infolist():
            data = original.read(info)
            if info.filename == part:
                data = data.replace(before, frame + before, 1)
            elif info.filename == relations:
                data = data.replace(b"</Relationships>", DIAGRAM_RELATION)
            target.writestr(info.filename, data)
        target.writestr(posixpath.normpath(f"{folder}/../diagrams/data1.xml"), DIAGRAM_DATA)
    return path


def test_smartart_texts_of_a_slide_and_of_a_word_file_are_read(tmp_path: Path) -> None:
    """An org chart or a process drawn as SmartArt keeps its text in the diagram's data, which
    docling-rs did not read (Tika's testPPT_diagramData.pptx came out empty)."""
    frame = (
        b'<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="90" name="Diagram"/>'
        b"<p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm>"
        b'<a:off x="0" y="0"/><a:ext cx="100" cy="100"/></p:xfrm>' + DIAGRAM_IDS + b"</p:graphicFrame>"
    )
    slides = with_diagram(
        DATA / "sample.pptx", tmp_path / "chart.pptx", "ppt/slides/slide1.xml", frame, b"</p:spTree>"
    )
    text = extract_text(slides)
    assert "Plant manager" in text and "Shift lead" in text
    assert text.index("Plant manager") < text.index("Shift lead")

    document = docx.Document()
    document.add_paragraph("Who runs the plant:")
    document.add_paragraph("Questions go to the shift lead.")
    plain = tmp_path / "plain.docx"
    document.save(str(plain))
    drawing = (
        b'<w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/'
        b'wordprocessingDrawing"><wp:extent cx="100" cy="100"/><wp:docPr id="90" name="Diagram"/>'
        + DIAGRAM_IDS
        + b"</wp:inline></w:drawing></w:r>"
    )
    word = with_diagram(plain, tmp_path / "chart.docx", "word/document.xml", drawing, b"</w:p>")
    assert extract_text(word) == (
        "Who runs the plant:\n\nPlant manager\n\nShift lead\n\nQuestions go to the shift lead."
    )


def test_a_pipe_in_a_cell_is_escaped_once_and_sheet_times_read_to_the_second(
    tmp_path: Path,
) -> None:
    """Tika's testEXCEL-formats.xlsx: a cell holding `|` read `\\\\|`, and 6:15 AM read
    `06:15:00.687000` (a sheet stores times as fractions of a day)."""
    csv_text = extract_text(write(tmp_path, "codes.csv", b"Code,Meaning\nA|B,either\n"))
    assert csv_text == "| Code | Meaning |\n|---|---|\n| A\\|B | either |"

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Shifts"
    sheet.append(["Shift", "Starts"])
    sheet.append(["Early", datetime.datetime(1992, 12, 28, 6, 15, 0, 687000)])
    sheet.append(["Late", datetime.datetime(1992, 12, 28, 18, 15, 0, 703000)])
    path = tmp_path / "shifts.xlsx"
    book.save(path)

    assert extract_text(path) == (
        "# Shifts\n\n| Shift | Starts |\n|---|---|\n"
        "| Early | 1992-12-28 06:15:01 |\n| Late | 1992-12-28 18:15:01 |"
    )


def test_a_word_split_over_runs_formatted_apart_stays_one_word(tmp_path: Path) -> None:
    """Tika's testWORD_various.docx read `*ita* ~~*li*~~ *c*`, the Unstructured handbook `21 st
    Century`: docling-rs puts a space between runs formatted apart, even inside a word."""
    document = docx.Document()
    paragraph = document.add_paragraph("In the 21")
    paragraph.add_run("st").font.superscript = True
    paragraph.add_run(" century, H")
    paragraph.add_run("2").font.subscript = True
    paragraph.add_run("O is ")
    paragraph.add_run("every").italic = True
    paragraph.add_run("where.")
    document.add_paragraph("Plain ").add_run("bold").bold = True
    path = tmp_path / "words.docx"
    document.save(str(path))

    assert extract_text(path) == "In the 21st century, H2O is *everywhere*.\n\nPlain **bold**"


WORDML = (
    '<?xml version="1.0"?><?mso-application progid="Word.Document"?>'
    '<w:wordDocument xmlns:w="http://schemas.microsoft.com/office/word/2003/wordml" '
    'xmlns:wx="http://schemas.microsoft.com/office/word/2003/auxHint" '
    'xmlns:o="urn:schemas-microsoft-com:office:office">'
    "<o:DocumentProperties><o:Revision>2</o:Revision></o:DocumentProperties>"
    '<w:styles><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/>'
    "</w:style></w:styles><w:body><wx:sect>"
    '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Night shift</w:t></w:r></w:p>'
    "<w:p><w:r><w:t>The pumps are </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>checked</w:t>"
    '</w:r><w:r><w:t> at ten; see </w:t></w:r><w:hlink w:dest="https://example.com">'
    "<w:r><w:t>the log</w:t></w:r></w:hlink><w:r><w:t>.</w:t></w:r></w:p>"
    "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Pump</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r>"
    "<w:t>State</w:t></w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:p><w:r><w:t>P1</w:t></w:r>"
    "</w:p></w:tc><w:tc><w:p><w:r><w:t>ok</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    "<w:p><w:r><w:binData>" + "QUJD" * 100 + "</w:binData></w:r></w:p>"
    "</wx:sect></w:body></w:wordDocument>"
)
WORKBOOK = (
    '<?xml version="1.0"?><Workbook xmlns="urn:schemas-microsoft-com:office:spreadsheet" '
    'xmlns:ss="urn:schemas-microsoft-com:office:spreadsheet"><Worksheet ss:Name="Pumps"><Table>'
    '<Row><Cell><Data ss:Type="String">Pump</Data></Cell><Cell><Data ss:Type="String">Flow'
    '</Data></Cell><Cell><Data ss:Type="String">Checked</Data></Cell></Row>'
    '<Row><Cell><Data ss:Type="String">P1</Data></Cell><Cell><Data ss:Type="Number">'
    '1.1000000000000001</Data></Cell><Cell><Data ss:Type="DateTime">2016-04-27T00:00:00.000'
    '</Data></Cell></Row><Row><Cell><Data ss:Type="String">P2</Data></Cell>'
    '<Cell ss:Index="3"><Data ss:Type="DateTime">2016-04-28T18:51:58.000</Data></Cell></Row>'
    "</Table></Worksheet></Workbook>"
)


def test_word_2003_xml_reads_as_a_word_document(tmp_path: Path) -> None:
    """Tika's testWORD_2003ml.xml came out a line per run, its properties' numbers and base64."""
    text = extract_text(write(tmp_path, "shift.xml", WORDML.encode()))

    assert text == (
        "## Night shift\n\nThe pumps are **checked** at ten; see the log.\n\n"
        "| Pump | State |\n|---|---|\n| P1 | ok |"
    )


def test_excel_2003_xml_reads_as_a_workbook(tmp_path: Path) -> None:
    """Tika's testEXCEL2003.xml came out a line per cell, `1.1000000000000001` among them."""
    assert extract_text(write(tmp_path, "pumps.xml", WORKBOOK.encode())) == (
        "# Pumps\n\n| Pump | Flow | Checked |\n|---|---|---|\n| P1 | 1.1 | 2016-04-27 |\n"
        "| P2 |  | 2016-04-28 18:51:58 |"
    )


def test_office_2003_xml_saved_under_doc_and_xls_is_read_by_its_content(tmp_path: Path) -> None:
    """Word and Excel save their 2003 XML under .doc and .xls too: refused as 'neither an OLE2 file nor
    a zip archive' before; and an RTF that Outlook ended with NUL bytes was refused as binary."""
    doc = write(tmp_path, "shift.doc", WORDML.encode())
    xls = write(tmp_path, "pumps.xls", WORKBOOK.encode())
    rtf = write(tmp_path, "mail.rtf", b"{\\rtf1\\ansi The pumps are checked at ten.}\x00\x00")
    assert [sniff(p, 1 << 20) for p in (doc, xls, rtf)] == [None, None, None]
    assert extract_text(doc).startswith("## Night shift\n\nThe pumps are **checked** at ten")
    assert "| P1 | 1.1 | 2016-04-27 |" in extract_text(xls)
    assert extract_text(rtf).strip() == "The pumps are checked at ten."
