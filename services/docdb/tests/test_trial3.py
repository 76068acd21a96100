"""What a trial of the converters on a third corpus Lore was not tuned on (Apache Tika's and pandoc's
test documents) found read wrong or refused, each as a small file of the same kind written here:
RTF characters beyond the Basic Multilingual Plane (the extraction child died on them), an RTF
picture whose `\\bin` has no byte count, JSON records one after another, a DOCX whose main part is
not `word/document.xml`, and docling's padding around bold and italic words."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx

from lore_docdb.parse.extract import extract_text


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
