"""Text extraction for every accepted file type, and token chunking for English and Chinese."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore_common.chunking import chunk_sentences, chunk_text, count_tokens
from lore_docdb.parse.extract import ExtractionError, extract_text


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with one line of text (hand-built, so the test needs no PDF writer)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_every_supported_type_yields_its_text(tmp_path: Path) -> None:
    import docx
    from openpyxl import Workbook

    (tmp_path / "a.txt").write_text("plain words", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Title\n\nmarkdown body", encoding="utf-8")
    (tmp_path / "c.html").write_text(
        "<html><head><script>var x=1;</script><style>p{}</style></head>"
        "<body><p>Hello <b>web</b></p></body></html>"
    )
    (tmp_path / "d.csv").write_text("name,city\nAda,London\nAlan,Manchester\n", encoding="utf-8")
    (tmp_path / "e.json").write_text(json.dumps({"person": {"name": "Grace", "langs": ["COBOL"]}}))
    (tmp_path / "f.pdf").write_bytes(minimal_pdf("Portable text inside"))
    document = docx.Document()
    document.add_paragraph("Word paragraph")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "cell one", "cell two"
    document.save(str(tmp_path / "g.docx"))
    book = Workbook()
    sheet = book.active
    sheet.title = "People"
    sheet.append(["name", "born"])
    sheet.append(["Ada", 1815])
    book.save(str(tmp_path / "h.xlsx"))
    (tmp_path / "i.txt").write_bytes("中文文本".encode("gb18030"))

    assert extract_text(tmp_path / "a.txt") == "plain words"
    assert "markdown body" in extract_text(tmp_path / "b.md")
    html = extract_text(tmp_path / "c.html")
    assert "Hello" in html and "web" in html and "var x" not in html
    assert extract_text(tmp_path / "d.csv") == (
        "| name | city |\n|---|---|\n| Ada | London |\n| Alan | Manchester |"
    )
    assert extract_text(tmp_path / "e.json") == "person.name: Grace\nperson.langs[0]: COBOL"
    assert "Portable text inside" in extract_text(tmp_path / "f.pdf")
    word = extract_text(tmp_path / "g.docx")
    assert "Word paragraph" in word and "cell one | cell two" in word
    assert extract_text(tmp_path / "h.xlsx") == "# People\n\n| name | born |\n|---|---|\n| Ada | 1815 |"
    assert extract_text(tmp_path / "i.txt") == "中文文本"


def test_unsupported_and_broken_files_raise_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "x.exe").write_bytes(b"MZ")
    (tmp_path / "w.png").write_bytes(b"\x89PNG")
    (tmp_path / "y.pdf").write_bytes(b"not a pdf at all")
    (tmp_path / "z.json").write_text("{broken")
    with pytest.raises(ExtractionError, match=r"x\.exe: unsupported file type \.exe"):
        extract_text(tmp_path / "x.exe")
    with pytest.raises(ExtractionError, match=r"w\.png: could not be read as \.png") as broken:
        extract_text(tmp_path / "w.png")
    assert str(tmp_path) not in str(broken.value)  # the reason names the file, not the server's folders
    with pytest.raises(ExtractionError, match=r"y\.pdf"):
        extract_text(tmp_path / "y.pdf")
    with pytest.raises(ExtractionError, match=r"z\.json: not valid JSON"):
        extract_text(tmp_path / "z.json")


def test_token_rule_counts_cjk_characters_and_words() -> None:
    assert count_tokens("Hello, world!") == 4
    assert count_tokens("北京大学") == 4
    assert count_tokens("Lore 知识库 v2") == 5


def test_chunks_respect_size_and_overlap() -> None:
    words = " ".join(f"w{i}" for i in range(100))
    chunks = chunk_text(words, chunk_size=30, overlap=5)
    assert all(count_tokens(c) <= 30 for c in chunks)
    assert chunks[0].split()[-5:] == chunks[1].split()[:5]
    assert chunks[-1].endswith("w99")
    chinese = "知" * 50
    assert [len(c) for c in chunk_text(chinese, chunk_size=20, overlap=0)] == [20, 20, 10]


def test_sentence_mode_cuts_at_sentence_ends() -> None:
    text = "First sentence here. Second sentence follows. Third one ends it. 第四句话。第五句话。"
    chunks = chunk_sentences(text, chunk_size=5, overlap=0)
    assert chunks[0] == "First sentence here."
    assert all(c.endswith((".", "。")) for c in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")
