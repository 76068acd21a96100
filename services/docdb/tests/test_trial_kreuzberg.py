"""What a trial of the converters on kreuzberg's and markitdown's test documents (formats other than
PDF and HTML) found read wrong or refused, each as a small file of the same kind written here: RTF
whose table cells hold their own paragraphs, an RTF fragment without its header, Shift-JIS text read
as GB18030, and the formats a documentation folder holds that Lore refused. Every file is made by the
test itself; no fixture is downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def test_an_xml_article_docling_cannot_parse_reads_as_its_elements_text(tmp_path: Path) -> None:
    """A JATS article with an attribute written twice (pandoc's jats-reader.xml) failed the file in
    docling-rs's strict parser; lxml's lenient one reads its text."""
    xml = (
        '<?xml version="1.0"?>\n<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving'
        ' and Interchange DTD v1.2 20190208//EN" "JATS-archivearticle1.dtd">\n'
        '<article xmlns:xlink="http://www.w3.org/1999/xlink"><front><article-meta><title-group>'
        "<article-title>Tide tables</article-title></title-group></article-meta></front><body><sec>"
        '<title>Ports</title><p>See <ext-link xlink:href="/a" xlink:href="/b">the list</ext-link>.</p>'
        "</sec></body></article>"
    )
    assert extract_text(write(tmp_path, "tides.xml", xml.encode())) == (
        "Tide tables\n\nPorts\n\nSee the list."
    )


NOTEBOOK = {
    "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Tides\n", "\n", "Read the *table*."]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "source": ["import pandas as pd\n", "print('loaded')"],
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["loaded\n"]},
                {
                    "output_type": "execute_result",
                    "execution_count": 1,
                    "metadata": {},
                    "data": {
                        "text/plain": ["  port  time\n0 Dover 06:12"],
                        "text/html": [
                            "<table><tr><th>port</th><th>time</th></tr>",
                            "<tr><td>Dover</td><td>06:12</td></tr></table>",
                        ],
                        "image/png": "iVBORw0KGgo=",
                    },
                },
                {"output_type": "error", "ename": "KeyError", "evalue": "'tide'", "traceback": []},
            ],
        },
        {"cell_type": "raw", "metadata": {}, "source": "Raw note."},
    ],
}


def test_a_jupyter_notebook_reads_as_its_cells_code_and_outputs(tmp_path: Path) -> None:
    import json

    path = write(tmp_path, "tides.ipynb", json.dumps(NOTEBOOK).encode())
    assert extract_text(path).split("\n\n") == [
        "# Tides",
        "Read the *table*.",
        "```python\nimport pandas as pd\nprint('loaded')\n```",
        "```\nloaded\n```",
        "| port | time |\n|---|---|\n| Dover | 06:12 |",
        "KeyError: 'tide'",
        "Raw note.",
    ]


def test_org_mode_headings_lists_tables_and_code(tmp_path: Path) -> None:
    org = (
        "#+TITLE: Harbour notes\n#+AUTHOR: A. Keeper\n\n"
        "* Ports :travel:\n:PROPERTIES:\n:ID: 42\n:END:\n"
        "The [[https://example.org/tides][tide tables]] are /local/ time.\n\n"
        "- Dover\n- Calais\n  1. north pier\n\n"
        "** Times\n| Port | Time |\n|------+------|\n| Dover | 06:12 |\n\n"
        "  #+BEGIN_SRC python\n    print('tide')\n  #+END_SRC\n# a comment\n"
    )
    assert extract_text(write(tmp_path, "notes.org", org.encode())).split("\n\n") == [
        "# Harbour notes",
        "## Ports",
        "The tide tables are local time.",
        "- Dover\n- Calais\n  1. north pier",
        "### Times",
        "| Port | Time |\n|---|---|\n| Dover | 06:12 |",
        "```python\nprint('tide')\n```",
    ]


def test_opml_outline_reads_as_a_nested_list(tmp_path: Path) -> None:
    opml = (
        '<?xml version="1.0"?><opml version="2.0"><head><title>Reading</title></head><body>'
        '<outline text="Harbours"><outline text="Dover" _note="white cliffs"/>'
        '<outline text="Tide feed" type="rss" xmlUrl="https://example.org/tides.xml"/></outline>'
        "</body></opml>"
    )
    assert extract_text(write(tmp_path, "reading.opml", opml.encode())) == (
        "# Reading\n\n- Harbours\n  - Dover white cliffs\n  - Tide feed (https://example.org/tides.xml)"
    )


def test_fictionbook_reads_its_title_sections_poems_tables_and_notes(tmp_path: Path) -> None:
    fb2 = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0" '
        'xmlns:l="http://www.w3.org/1999/xlink"><description><title-info>'
        "<author><first-name>Anna</first-name><last-name>Keeper</last-name></author>"
        "<book-title>The Lighthouse</book-title></title-info></description>"
        "<body><section><title><p>Chapter One</p></title><p>The lamp <emphasis>burned</emphasis>.</p>"
        "<poem><stanza><v>Wave on wave,</v><v>the night is long.</v></stanza></poem>"
        "<table><tr><th>Hour</th><th>Lamp</th></tr><tr><td>21:00</td><td>lit</td></tr></table>"
        '<p>A note<a l:href="#n1" type="note">1</a>.</p></section></body>'
        '<body name="notes"><section id="n1"><title><p>1</p></title><p>Kept by hand.</p></section></body>'
        '<binary id="cover.jpg" content-type="image/jpeg">' + "QUJD" * 80 + "</binary></FictionBook>"
    )
    assert extract_text(write(tmp_path, "lighthouse.fb2", fb2.encode())).split("\n\n") == [
        "# The Lighthouse",
        "Anna Keeper",
        "## Chapter One",
        "The lamp burned.",
        "Wave on wave,\nthe night is long.",
        "| Hour | Lamp |\n|---|---|\n| 21:00 | lit |",
        "A note1.",
        "## 1",
        "Kept by hand.",
    ]


DOCBOOK = (
    '<?xml version="1.0"?><article xmlns="http://docbook.org/ns/docbook" version="5.0">'
    "<info><title>Harbour Guide</title></info>"
    "<section><title>Ports</title><para>Two ports <emphasis>open</emphasis> at dawn "
    '(<xref linkend="pilots"/>).</para>'
    "<itemizedlist><listitem><para>Dover</para></listitem><listitem><para>Calais</para>"
    "<orderedlist><listitem><para>north pier</para></listitem></orderedlist></listitem></itemizedlist>"
    "<variablelist><varlistentry><term>ebb</term><listitem><para>falling tide</para></listitem>"
    "</varlistentry></variablelist>"
    "<table><title>Times</title><tgroup cols='2'><thead><row><entry>Port</entry><entry>Time</entry></row>"
    "</thead><tbody><row><entry>Dover</entry><entry>06:12</entry></row></tbody></tgroup></table>"
    "<programlisting language='sh'>tide --port dover</programlisting>"
    "<section xml:id='pilots'><title>Pilots</title><note><para>Call ahead.</para></note></section>"
    "</section></article>"
)


def test_docbook_reads_its_sections_lists_tables_and_code_under_dbk_and_xml(tmp_path: Path) -> None:
    expected = [
        "# Harbour Guide",
        "## Ports",
        "Two ports open at dawn (Pilots).",
        "- Dover\n- Calais\n  1. north pier\n- ebb: falling tide",
        "Times",
        "| Port | Time |\n|---|---|\n| Dover | 06:12 |",
        "```sh\ntide --port dover\n```",
        "### Pilots",
        "Call ahead.",
    ]
    assert extract_text(write(tmp_path, "guide.dbk", DOCBOOK.encode())).split("\n\n") == expected
    assert extract_text(write(tmp_path, "guide.xml", DOCBOOK.encode())).split("\n\n") == expected


def test_restructuredtext_with_sphinx_roles_reads_as_text_and_includes_nothing(tmp_path: Path) -> None:
    rst = (
        "Install guide\n=============\n\n"
        "Call :func:`lore.parse <lore.parse.run>` before :ref:`setup`.\n\n"
        ".. code-block:: python\n\n   print('hi')\n\n"
        ".. include:: /etc/hostname\n\n"
        ".. raw:: html\n\n   <b>raw</b>\n\n"
        "Ports\n-----\n\n======  =====\nName    Port\n======  =====\ndocdb   8001\n======  =====\n"
    )
    assert extract_text(write(tmp_path, "guide.rst", rst.encode())).split("\n\n") == [
        "# Install guide",
        "Call lore.parse before setup.",
        "```\nprint('hi')\n```",
        "## Ports",
        "| Name | Port |\n|---|---|\n| docdb | 8001 |",
    ]


def test_a_corrupt_file_of_each_new_format_is_refused_with_a_reason(tmp_path: Path) -> None:
    import pytest

    from lore_docdb.parse.extract import ExtractionError

    for name, data in (
        ("broken.ipynb", b'{"cells": [{"cell_type": "code", "source": '),
        ("broken.opml", b"<html><body>not an outline</body></html>"),
        ("broken.fb2", b"\x00\x01 not xml"),
        ("broken.dbk", b"<notdocbook><x/></notdocbook>"),
    ):
        with pytest.raises(ExtractionError, match=name):
            extract_text(write(tmp_path, name, data))


def _compound(tree: dict[str, object]) -> bytes:
    """A small OLE2 compound file holding `tree` (a name to bytes for a stream, to a dict for a
    storage), every stream in regular sectors (a mini-stream cutoff of 0), each storage's children
    chained as right siblings."""
    import struct

    sector = 512
    entries: list[list[Any]] = [["Root Entry", 5, -1, -1, -1, 0xFFFFFFFE, 0]]
    data = bytearray()

    def add(children: dict[str, object]) -> int:
        first = -1
        previous = -1
        for name, value in children.items():
            index = len(entries)
            if isinstance(value, dict):
                entries.append([name, 1, -1, -1, -1, 0, 0])
                entries[index][4] = add(value)
            else:
                assert isinstance(value, bytes)
                start = len(data) // sector
                data.extend(value + b"\x00" * (-len(value) % sector or (sector if not value else 0)))
                entries.append([name, 2, -1, -1, -1, start, len(value)])
            if previous >= 0:
                entries[previous][3] = index
            else:
                first = index
            previous = index
        return first

    entries[0][4] = add(tree)
    directory = bytearray()
    for name, kind, left, right, child, start, size in entries:
        raw = str(name).encode("utf-16-le") + b"\x00\x00"
        record = bytearray(128)
        record[: len(raw)] = raw
        struct.pack_into("<HBB", record, 0x40, len(raw), int(kind), 1)
        struct.pack_into("<iii", record, 0x44, int(left), int(right), int(child))
        struct.pack_into("<II", record, 0x74, int(start), int(size))
        directory += record
    directory += b"\x00" * (-len(directory) % sector)
    data_sectors, directory_sectors = len(data) // sector, len(directory) // sector
    fat_sectors = 1
    while (data_sectors + directory_sectors + fat_sectors) * 4 > fat_sectors * sector:
        fat_sectors += 1
    fat = []
    chains = [entry for entry in entries if entry[1] == 2]
    for entry in chains:
        count = -(-int(entry[6]) // sector) or 1
        start = int(entry[5])
        fat += [start + n + 1 for n in range(count - 1)] + [0xFFFFFFFE]
    fat += [len(fat) + n + 1 for n in range(directory_sectors - 1)] + [0xFFFFFFFE]
    fat += [0xFFFFFFFD] * fat_sectors
    fat += [0xFFFFFFFF] * (fat_sectors * sector // 4 - len(fat))
    header = bytearray(sector)
    header[:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    struct.pack_into("<HHHHH", header, 0x18, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<II", header, 0x2C, fat_sectors, data_sectors)
    struct.pack_into("<IIIII", header, 0x38, 0, 0xFFFFFFFE, 0, 0xFFFFFFFE, 0)
    difat = [data_sectors + directory_sectors + n for n in range(fat_sectors)]
    struct.pack_into("<109I", header, 0x4C, *(difat + [0xFFFFFFFF] * (109 - len(difat))))
    return bytes(header + data + directory + struct.pack(f"<{len(fat)}I", *fat))


def _property(code: str, text: str) -> tuple[str, bytes]:
    return f"__substg1.0_{code}001F", text.encode("utf-16-le")


def _lzfu(rtf: bytes) -> bytes:
    """Compressed RTF written as literals only, ended by a reference to the write position."""
    import struct

    out = bytearray()
    for at in range(0, len(rtf), 8):
        out += b"\x00" + rtf[at : at + 8]
    end = (207 + len(rtf)) % 4096
    out += b"\x01" + struct.pack(">H", end << 4)
    return struct.pack("<IIII", len(out) + 12, len(rtf), 0x75465A4C, 0) + bytes(out)


def test_an_outlook_msg_reads_as_an_eml_does_with_a_message_attached_to_it(tmp_path: Path) -> None:
    import struct

    recipient_properties = b"\x00" * 8 + struct.pack("<IIQ", 0x0C150003, 6, 2)  # a Cc recipient
    inner = dict(
        [
            _property("0037", "Tide times"),
            _property("0C1A", "Harbour Office"),
            ("__substg1.0_10090102", _lzfu(rb"{\rtf1\ansi{\pard High water at 06:12.\par}}")),
            ("__properties_version1.0", b"\x00" * 24),
        ]
    )
    message = _compound(
        dict(
            [
                _property("0037", "Harbour report"),
                _property("0C1A", "Anna Keeper"),
                _property("5D01", "anna@example.org"),
                _property("0E04", "Dock Master"),
                _property("1000", "The lamp was lit at dusk.\r\nAll well."),
                ("__properties_version1.0", b"\x00" * 32),
                (
                    "__recip_version1.0_#00000000",
                    dict([_property("3001", "Pilot"), _property("39FE", "pilot@example.org")])
                    | {"__properties_version1.0": recipient_properties},
                ),
                ("__attach_version1.0_#00000000", dict([_property("3707", "log.pdf")])),
                ("__attach_version1.0_#00000001", {"__substg1.0_3701000D": inner}),
            ]
        )
    )
    from lore_docdb.parse.sandbox import sniff

    path = write(tmp_path, "report.msg", message)
    assert sniff(path, 1 << 20) is None  # the extraction child takes it (an OLE2 file, not text)
    text = extract_text(path)
    assert text.split("\n\n") == [
        "Subject: Harbour report\nFrom: Anna Keeper <anna@example.org>\nTo: Dock Master\n"
        "Cc: Pilot <pilot@example.org>",
        "The lamp was lit at dusk.\nAll well.",
        "Attachments: log.pdf",
        "Subject: Tide times\nFrom: Harbour Office",
        "High water at 06:12.",
    ]


def test_a_corrupt_or_foreign_msg_is_refused_with_a_reason(tmp_path: Path) -> None:
    import pytest

    from lore_docdb.parse.extract import ExtractionError

    for name, data in (
        ("cut.msg", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100),
        ("sheet.msg", _compound({"Workbook": b"\x09\x08" * 300})),
    ):
        with pytest.raises(ExtractionError, match=name):
            extract_text(write(tmp_path, name, data))


def test_latex_links_rules_minipages_and_longtable_headers_read_once(tmp_path: Path) -> None:
    """pandoc's LaTeX (and much hand-written LaTeX): `\\href` split a heading in two and ran its
    address into its text, `\\rule{3in}{0.4pt}` read `3in0.4pt`, a minipage's `[b]` opened every
    header cell, a longtable's header came twice (once more for continuation pages), and the closing
    `\\hline` left a row of empty cells."""
    tex = (
        "\\documentclass{article}\n\\begin{document}\n"
        "\\section{Ports with an \\href{/url}{embedded link}}\n"
        "See \\href{https://example.org}{the tide site} today.\\\\[2mm]\nNext line.\n\n"
        "\\begin{center}\\rule{3in}{0.4pt}\\end{center}\n\n"
        "\\begin{longtable}[]{@{}rl@{}}\n\\toprule\\noalign{}\n"
        "\\begin{minipage}[b]{\\linewidth}\\raggedleft\nPort\n\\end{minipage} & "
        "\\begin{minipage}[b]{\\linewidth}\\raggedright\nTime\n\\end{minipage} \\\\\n"
        "\\midrule\\noalign{}\n\\endfirsthead\n\\toprule\\noalign{}\n"
        "\\begin{minipage}[b]{\\linewidth}\\raggedleft\nPort\n\\end{minipage} & "
        "\\begin{minipage}[b]{\\linewidth}\\raggedright\nTime\n\\end{minipage} \\\\\n"
        "\\midrule\\noalign{}\n\\endhead\n\\bottomrule\\noalign{}\n\\endlastfoot\n"
        "Dover & 06:12 \\\\\nCalais & 06:40 \\\\\n\\end{longtable}\n\n"
        "\\begin{tabular}{ll}\n\\hline\nA & B \\\\\n\\hline\n1 & 2 \\\\\n\\hline\n\\end{tabular}\n"
        "\\end{document}\n"
    )
    assert extract_text(write(tmp_path, "ports.tex", tex.encode())).split("\n\n") == [
        "## Ports with an embedded link",
        "See the tide site today. Next line.",
        "| Port | Time |\n|---|---|\n| Dover | 06:12 |\n| Calais | 06:40 |",
        "| A | B |\n|---|---|\n| 1 | 2 |",
    ]


def test_an_xml_catalogue_of_records_reads_as_a_table(tmp_path: Path) -> None:
    """`<CATALOG><CD><TITLE>…` read one paragraph per field: which value was whose was lost."""
    xml = (
        '<?xml version="1.0"?><CATALOG><!-- stock -->'
        "<CD><TITLE>Empire Burlesque</TITLE><ARTIST>Bob Dylan</ARTIST><YEAR>1985</YEAR></CD>"
        "<CD><TITLE>Hide your heart</TITLE><ARTIST>Bonnie Tyler</ARTIST><YEAR>1988</YEAR></CD>"
        "</CATALOG>"
    )
    assert extract_text(write(tmp_path, "catalog.xml", xml.encode())) == (
        "| TITLE | ARTIST | YEAR |\n|---|---|---|\n"
        "| Empire Burlesque | Bob Dylan | 1985 |\n| Hide your heart | Bonnie Tyler | 1988 |"
    )
    note = "<note><to>Tove</to><from>Jani</from><body>Don't forget me!</body></note>"
    assert extract_text(write(tmp_path, "note.xml", note.encode())) == "Tove\n\nJani\n\nDon't forget me!"


def test_json_booleans_read_as_json_writes_them_and_yaml_is_text(tmp_path: Path) -> None:
    data = b'{"enabled": true, "tags": ["a", false], "type": "FeatureCollection"}'
    assert (
        extract_text(write(tmp_path, "flags.json", data))
        == "enabled: true\ntags[0]: a\ntags[1]: false\ntype: FeatureCollection"
    )
    assert extract_text(write(tmp_path, "map.geojson", data)).startswith("enabled: true")
    yaml = "openapi: 3.0.0\ninfo:\n  title: Tide API\n"
    assert extract_text(write(tmp_path, "api.yaml", yaml.encode())) == yaml


def test_a_sheets_computed_fractions_read_as_the_sheet_shows_them(tmp_path: Path) -> None:
    """A formula's cached result read `0.032280358222708555` and `0.30000000000000004`: binary
    noise past the 15 digits Excel keeps."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (("Item", "Share"), ("Tea", 0.1 + 0.2), ("Cake", 0.032280358222708555)):
        sheet.append(row)
    book.save(tmp_path / "shares.xlsx")
    assert extract_text(tmp_path / "shares.xlsx").splitlines()[2:] == [
        "| Item | Share |",
        "|---|---|",
        "| Tea | 0.3 |",
        "| Cake | 0.0322803582227086 |",
    ]


def test_rtf_hidden_text_is_left_out(tmp_path: Path) -> None:
    """Word's hidden font (`\\v`) is text no reader sees: `This is hidden: secret.` read the secret."""
    rtf = (
        r"{\rtf1\ansi{\pard Shown {\v secret one} and\v  secret two\v0  again.\par}"
        r"{\pard\v Hidden paragraph.\plain  Back.\par}{\pard Last.\par}}"
    )
    assert extract_text(write(tmp_path, "hidden.rtf", rtf.encode())).split("\n\n") == [
        "Shown  and again.",
        "Back.",
        "Last.",
    ]


def test_typst_headings_lists_tables_links_and_code(tmp_path: Path) -> None:
    typ = (
        '#set document(title: "Harbour Guide", author: "A. Keeper")\n#set heading(numbering: "1.")\n'
        '#import "template.typ": *\n#include "secret.typ"\n\n'
        "= Ports // where ships call\n\nTwo ports open at *dawn*, see\n"
        '#link("https://example.org")[the _tide_ site].\n\n'
        "- Dover\n- Calais\n  + north pier\n/ Ebb: the falling tide\n\n"
        "== Times\n\n#table(\n  columns: (auto, 1fr),\n"
        "  [Port], [Time],\n  [Dover], [06:12],\n)\n\n"
        "```sh\ntide --port dover\n```\n\nRun `#tide` daily.\n"
    )
    assert extract_text(write(tmp_path, "guide.typ", typ.encode())).split("\n\n") == [
        "# Harbour Guide",
        "## Ports",
        "Two ports open at dawn, see the tide site.",
        "- Dover\n- Calais\n  1. north pier\n- Ebb: the falling tide",
        "### Times",
        "| Port | Time |\n|---|---|\n| Dover | 06:12 |",
        "```sh\ntide --port dover\n```",
        "Run `#tide` daily.",
    ]


def test_a_date_time_cell_shows_its_time_where_its_format_does(tmp_path: Path) -> None:
    """A column formatted `yyyy-mm-dd h:mm:ss` holding midnights (docling's sales sheet): calamine
    reads each as a date, and the table showed `2024-01-01` where the sheet shows its time too. A
    column formatted as a date alone stays a date."""
    import datetime

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(("Ship", "Docked", "Sailed"))
    sheet.append(("Iona", datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 3)))
    sheet.append(("Skye", datetime.datetime(2024, 1, 2, 6, 30), datetime.datetime(2024, 1, 4)))
    for row in (2, 3):
        sheet.cell(row, 2).number_format = "yyyy-mm-dd h:mm:ss"
        sheet.cell(row, 3).number_format = "yyyy-mm-dd"
    book.save(tmp_path / "harbour.xlsx")
    assert extract_text(tmp_path / "harbour.xlsx").splitlines()[4:] == [
        "| Iona | 2024-01-01 00:00:00 | 2024-01-03 |",
        "| Skye | 2024-01-02 06:30:00 | 2024-01-04 |",
    ]
