"""An e-mail's attached files are read as uploads of their own would be, their text after the message
under `# Attachment: name`: a report sent as a PDF or a Word file is found by its words. Before, an
`.eml` or `.msg` gave only its attachments' names. Pictures (logos, signatures) are not OCRed."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path
from typing import Any

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.parse.extract import extract_text

from .test_trial_kreuzberg import _compound, _property

DATA = Path(__file__).parent / "data"


def message(*attachments: tuple[str, bytes]) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = "Season report"
    mail["From"] = "Anna Keeper <anna@example.org>"
    mail["To"] = "station@example.org"
    mail.set_content("The reports are attached.\n")
    for name, data in attachments:
        mail.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return mail


def test_attached_documents_are_read_after_the_message_and_pictures_are_not(tmp_path: Path) -> None:
    mail = message(
        ("field-guide.docx", (DATA / "sample.docx").read_bytes()),
        ("prices.xlsx", (DATA / "sample.xlsx").read_bytes()),
        ("broken.xlsx", b"PK\x03\x04 not a workbook"),
        ("logo.png", (DATA / "scan-en.png").read_bytes()),
        ("model.step", b"ISO-10303-21;"),
    )
    path = tmp_path / "report.eml"
    path.write_bytes(mail.as_bytes())
    text = extract_text(path)
    docx = extract_text(DATA / "sample.docx")
    assert text.startswith("Subject: Season report\nFrom: Anna Keeper <anna@example.org>")
    assert "Attachments: field-guide.docx, prices.xlsx, broken.xlsx, logo.png, model.step" in text
    # each read file under its name, in order, its headings a level below the attachment's own
    at_docx = text.index("# Attachment: field-guide.docx\n\n")
    at_sheet = text.index("# Attachment: prices.xlsx\n\n")
    at_broken = text.index("# Attachment: broken.xlsx\n\n(not read: ")
    assert text.index("The reports are attached.") < at_docx < at_sheet < at_broken
    assert "### Field Guide" in text and "## Field Guide" in docx and "\n## Field Guide" not in text
    assert "| Swallow | April | September |" in text[at_docx:at_sheet]
    assert "| Tea | 3.5 | 12 |" in text[at_sheet:at_broken] and "\n## Prices" in text
    assert "Attachment: logo.png" not in text and "Attachment: model.step" not in text
    assert "tide" not in text.lower()  # the picture's words (scan-en.png) were not OCRed in


def test_an_attached_message_s_own_attachment_is_read_and_a_hostile_name_stays_a_name(
    tmp_path: Path,
) -> None:
    inner = message(("../../notes.txt", b"The heron nests by the weir."))
    outer = message(("forwarded.eml", inner.as_bytes()))
    path = tmp_path / "outer.eml"
    path.write_bytes(outer.as_bytes())
    text = extract_text(path)
    assert "# Attachment: forwarded.eml" in text
    assert "## Attachment: ../../notes.txt\n\nThe heron nests by the weir." in text
    assert not (tmp_path.parent / "notes.txt").exists()


def test_an_outlook_message_s_attached_file_is_read(tmp_path: Path) -> None:
    mail = _compound(
        dict(
            [
                _property("0037", "Harbour report"),
                _property("1000", "The log is attached."),
                ("__properties_version1.0", b"\x00" * 32),
                (
                    "__attach_version1.0_#00000000",
                    dict([_property("3707", "log.txt")])
                    | {"__substg1.0_37010102": b"High water at 06:12; the lamp lit at dusk."},
                ),
            ]
        )
    )
    path = tmp_path / "report.msg"
    path.write_bytes(mail)
    text = extract_text(path)
    assert text.endswith(
        "Attachments: log.txt\n\n# Attachment: log.txt\n\nHigh water at 06:12; the lamp lit at dusk."
    )


async def test_a_passage_of_an_attachment_is_cited_as_its_message(docdb_factory: Any) -> None:
    mail = message(("field-guide.docx", (DATA / "sample.docx").read_bytes()))
    async with docdb_factory() as client:
        await upload(client, "mail", {"report.eml": mail.as_bytes(), "other.txt": b"Lamps need oil."})
        await client.post(KB, json={"name": "mail"})
        [task_id] = await parse(client, "mail", ["mail"], mode=1)
        assert (await wait_task(client, task_id))["status"] == "completed"
        reply = await client.post(
            "/api/v1/docdb/retrieve", json={"kb_id": "mail", "query": "When does the swallow leave?"}
        )
        [top, *_] = reply.json()["data"]
        assert top["kb_name"] == "report.eml" and "September" in top["content"]
