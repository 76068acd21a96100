"""Headings set by hand in Word and OpenDocument files (#40): a short paragraph all in bold, or in
larger type, with no heading style, is read as a heading, so the chunks under it carry it in their
heading path; a bold sentence, a bold phrase inside a paragraph, a bold table cell or list item, and
a run of bold lines stay text. Every file is made by the test itself."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt

from lore_common.structured_chunks import chunk_structured
from lore_docdb.parse.convert.office import bold_headings
from lore_docdb.parse.extract import extract_text

BODY = "The pumps are checked every morning before the first shift starts its work."


def headings(text: str) -> list[str]:
    return [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]


def test_bold_and_larger_paragraphs_in_a_docx_are_headings_and_chunks_carry_them(
    tmp_path: Path,
) -> None:
    document = docx.Document()
    document.add_paragraph().add_run("Maintenance Manual").font.size = Pt(18)
    document.add_paragraph(BODY)
    document.add_paragraph().add_run("Daily Checks").bold = True
    document.add_paragraph(BODY)
    inline = document.add_paragraph("Check the valves and ")
    inline.add_run("never").bold = True
    inline.add_run(" skip the seals.")
    document.add_paragraph().add_run("Always wear gloves when you open the housing.").bold = True
    document.add_paragraph(BODY)
    document.add_paragraph(style="List Bullet").add_run("Spare filters").bold = True
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).paragraphs[0].add_run("Part").bold = True
    table.cell(0, 1).text = "Count"
    table.cell(1, 0).text = "Seal"
    table.cell(1, 1).text = "4"
    for line in ("Jane Doe", "Head of Maintenance", "North Plant"):
        document.add_paragraph().add_run(line).bold = True  # a signature: bold lines together
    document.add_paragraph(BODY)
    path = tmp_path / "manual.docx"
    document.save(str(path))

    text = extract_text(path)

    assert headings(text) == ["Maintenance Manual", "Daily Checks"]
    lines = text.splitlines()
    assert lines[0].count("#") < lines[lines.index("### Daily Checks")].count("#")  # larger: higher
    assert "**never**" in text and "**Always wear gloves when you open the housing.**" in text
    assert "**Jane Doe**" in text and "- **Spare filters**" in text and "| **Part** | Count |" in text
    chunks = chunk_structured(text, 40, 0)
    daily = next(c for c in chunks if "Check the valves" in c.text)
    assert daily.heading_path[-1] == "Daily Checks"

    poster = docx.Document()  # bold all through: bold sets nothing apart
    for line in ("Welcome", BODY, "Opening hours", BODY, BODY):
        poster.add_paragraph().add_run(line).bold = True
    poster.save(str(tmp_path / "poster.docx"))
    assert headings(extract_text(tmp_path / "poster.docx")) == []


def test_a_docx_paragraph_given_an_outline_level_directly_is_a_heading(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Scope of the audit")
    level = OxmlElement("w:outlineLvl")
    level.set(qn("w:val"), "0")
    document.paragraphs[0]._p.get_or_add_pPr().append(level)
    document.add_paragraph(BODY)
    path = tmp_path / "audit.docx"
    document.save(str(path))

    assert extract_text(path).startswith("## Scope of the audit\n")


def test_bold_under_word_heading_styles_nests_below_them(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Safety", level=1)
    document.add_paragraph(BODY)
    document.add_paragraph().add_run("Protective equipment").bold = True
    document.add_paragraph(BODY)
    path = tmp_path / "safety.docx"
    document.save(str(path))

    lines = [line for line in extract_text(path).splitlines() if line.startswith("#")]
    assert lines == ["## Safety", "### Protective equipment"]


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"'
)


def odt(path: Path, body: str) -> Path:
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODF_NS} '
        'office:version="1.2"><office:automatic-styles>'
        '<style:style style:name="P1" style:family="paragraph">'
        '<style:text-properties fo:font-weight="bold"/></style:style>'
        '<style:style style:name="P2" style:family="paragraph">'
        '<style:text-properties fo:font-size="16pt"/></style:style>'
        '<style:style style:name="T1" style:family="text">'
        '<style:text-properties fo:font-weight="bold"/></style:style>'
        f"</office:automatic-styles><office:body><office:text>{body}"
        "</office:text></office:body></office:document-content>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", content)
    return path


def test_bold_and_larger_paragraphs_in_an_odt_are_headings(tmp_path: Path) -> None:
    body = (
        '<text:p text:style-name="P2">Field Guide</text:p>'
        f"<text:p>{BODY}</text:p>"
        '<text:p text:style-name="P1">Birds of the coast</text:p>'
        f"<text:p>{BODY}</text:p>"
        '<text:p><text:span text:style-name="T1">Gulls and terns</text:span></text:p>'
        f"<text:p>{BODY}</text:p>"
        '<text:p>Watch for <text:span text:style-name="T1">terns</text:span> in May.</text:p>'
    )
    text = extract_text(odt(tmp_path / "guide.odt", body))

    assert headings(text) == ["Field Guide", "Birds of the coast", "Gulls and terns"]
    assert "**" not in "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert "Watch for **terns** in May." in text


def test_bold_paragraphs_of_a_word97_file_read_without_formatting_are_headings() -> None:
    """A `.doc` reaches Lore as docling's Markdown: its bold paragraphs are told by their `**`; a
    label whose value is a word or two (a form) is no section."""
    markdown = f"# Plant\n\n**Daily Checks**\n\n{BODY}\n\n**Name:**\n\nJane Doe\n\n**Shift:**\n\nEarly"
    assert bold_headings(markdown) == markdown.replace("**Daily Checks**", "## Daily Checks")
