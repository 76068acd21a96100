"""E-mail (EML) with the stdlib, RTF with striprtf."""

from __future__ import annotations

import email
import email.policy
from pathlib import Path

from lore_docdb.parse.convert.common import decode
from lore_docdb.parse.convert.markup import html_markdown

HEADERS = ("Subject", "From", "To", "Cc", "Date")


def eml_markdown(path: Path) -> str:
    """The headers people search by, the body (plain text, else the HTML part) and attachment names."""
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    lines = [f"{name}: {message[name]}" for name in HEADERS if message[name]]
    body = message.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        content = body.get_content()
        text = html_markdown(content) if body.get_content_type() == "text/html" else str(content)
    attachments = [part.get_filename() for part in message.iter_attachments()]
    names = [name for name in attachments if name]
    parts = ["\n".join(lines), text.strip()]
    if names:
        parts.append("Attachments: " + ", ".join(names))
    return "\n\n".join(p for p in parts if p)


def rtf_text(path: Path) -> str:
    from striprtf.striprtf import rtf_to_text

    return str(
        rtf_to_text(  # type: ignore[no-untyped-call]
            decode(path.read_bytes()), errors="ignore"
        )
    ).strip()
