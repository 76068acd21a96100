"""Outlook's `.msg` files: the message's properties ([MS-OXMSG]) read from the OLE2 compound file
with the reader the Word 97 headers use, written the way an `.eml` is read: Subject, From, To, Cc,
Date, the plain body (else the HTML one, else the compressed RTF one, [MS-OXRTFCP]), attachment
names, each attached file of a type docdb reads, and a message attached to it after it.

Written here rather than with a library: extract-msg, the maintained reader on PyPI, is GPL-3.0,
which this Apache-2.0 project does not take; the properties a search needs are a few streams."""

from __future__ import annotations

import datetime
import email.utils
import re
import struct
from pathlib import Path

from lore_docdb.parse.convert.common import MAX_ATTACHMENTS, Enclosed, ExtractionError, decode
from lore_docdb.parse.convert.word97 import OLE_MAGIC, Compound

MAX_NESTED = 8  # messages attached to messages: deeper ones are left out
_STRING, _STRING8, _BINARY = "001f", "001e", "0102"
_EMBEDDED = "__substg1.0_3701000d"  # an attachment that is a message: its storage
_SUBJECT, _SENDER_NAME, _SENDER_ADDRESS, _SENDER_SMTP = "0037", "0c1a", "0c1f", "5d01"
_DISPLAY_TO, _DISPLAY_CC, _HEADERS = "0e04", "0e03", "007d"
_BODY, _HTML, _RTF = "1000", "1013", "1009"
_RECIPIENT_NAME, _RECIPIENT_ADDRESS, _RECIPIENT_SMTP = "3001", "3003", "39fe"
_ATTACH_LONG_NAME, _ATTACH_NAME, _DISPLAY_NAME = "3707", "3704", "3001"
_ATTACH_DATA = "3701"  # an attached file's bytes (a binary property)
_SUBMIT_TIME, _DELIVERY_TIME = 0x0039, 0x0E06  # FILETIMEs among the fixed-size properties


def msg_markdown(path: Path, enclosed: Enclosed | None = None) -> str:
    data = path.read_bytes()
    if not data.startswith(OLE_MAGIC):
        raise ExtractionError(f"{path.name}: not an Outlook message (not an OLE2 file)")
    try:
        store = Compound(data)
    except (ValueError, struct.error) as exc:
        raise ExtractionError(f"{path.name}: not a readable Outlook message ({exc})") from exc
    if not any(p.startswith("__substg1.0_") for p in store.children("")):
        raise ExtractionError(f"{path.name}: an OLE2 file but not an Outlook message (no properties)")
    return _message(store, "", 0, enclosed, top=True)


def _string(store: Compound, base: str, code: str) -> str:
    """A string property: UTF-16 (`001F`), else 8-bit (`001E`, in the encoding it reads in)."""
    raw = store.stream_at(f"{base}__substg1.0_{code}{_STRING}")
    if raw is not None:
        return raw.decode("utf-16-le", "replace").rstrip("\x00")
    raw = store.stream_at(f"{base}__substg1.0_{code}{_STRING8}")
    return decode(raw).rstrip("\x00") if raw else ""


def _when(store: Compound, base: str, top: bool) -> str:
    """The message's date: the Date its internet headers carry, else the time it was sent or
    delivered from its fixed-size properties (8-byte FILETIMEs after a 32-byte header, 24 for an
    attached message)."""
    headers = _string(store, base, _HEADERS)
    found = re.search(r"^Date:[ \t]*(.+)$", headers, re.MULTILINE | re.IGNORECASE)
    if found:
        return found.group(1).strip()
    raw = store.stream_at(f"{base}__properties_version1.0") or b""
    times: dict[int, int] = {}
    for at in range(32 if top else 24, len(raw) - 15, 16):
        tag, _flags, value = struct.unpack_from("<IIQ", raw, at)
        if tag & 0xFFFF == 0x0040:
            times[tag >> 16] = value
    value = times.get(_SUBMIT_TIME) or times.get(_DELIVERY_TIME)
    if not value:
        return ""
    try:
        moment = datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
            microseconds=value // 10
        )
    except OverflowError:
        return ""
    return email.utils.format_datetime(moment)


def _who(name: str, address: str) -> str:
    if name and address and address.lower() not in name.lower():
        return f"{name} <{address}>"
    return name or address


def _recipients(store: Compound, base: str) -> dict[int, str]:
    """The recipients' names and addresses by their kind (1 To, 2 Cc, 3 Bcc: the fixed-size property
    0C15 after the recipient's 8-byte properties header)."""
    found: dict[int, list[str]] = {}
    for child in store.children(base.rstrip("/")):
        if child.startswith("__recip_version1.0_"):
            at = f"{base}{child}/"
            address = _string(store, at, _RECIPIENT_SMTP) or _string(store, at, _RECIPIENT_ADDRESS)
            if address.startswith("/O=") or "/CN=" in address.upper():
                address = ""  # an Exchange (X.500) address says nothing a reader searches by
            raw = store.stream_at(f"{at}__properties_version1.0") or b""
            kind = 1
            for offset in range(8, len(raw) - 15, 16):
                tag, _flags, value = struct.unpack_from("<IIQ", raw, offset)
                if tag == 0x0C150003:
                    kind = value & 0xFFFFFFFF
            who = _who(_string(store, at, _RECIPIENT_NAME), address)
            if who:
                found.setdefault(kind, []).append(who)
    return {kind: ", ".join(names) for kind, names in found.items()}


def _body(store: Compound, base: str) -> str:
    """The plain body; else the HTML one as HTML is read; else the compressed RTF one as RTF."""
    from lore_docdb.parse.convert.mail import rtf_markdown
    from lore_docdb.parse.convert.markup import html_markdown

    text = _string(store, base, _BODY)
    if text.strip():
        return text.replace("\r\n", "\n").strip()
    html = store.stream_at(f"{base}__substg1.0_{_HTML}{_BINARY}")
    html_text = decode(html) if html else _string(store, base, _HTML)
    if html_text.strip():
        return html_markdown(html_text)
    rtf = store.stream_at(f"{base}__substg1.0_{_RTF}{_BINARY}")
    if rtf:
        try:
            return rtf_markdown(decompressed_rtf(rtf))
        except ValueError:
            return ""
    return ""


def _message(store: Compound, base: str, depth: int, enclosed: Enclosed | None, top: bool = False) -> str:
    sender = _who(
        _string(store, base, _SENDER_NAME),
        _string(store, base, _SENDER_SMTP) or _string(store, base, _SENDER_ADDRESS),
    )
    if sender.startswith("/O=") or "/CN=" in sender.upper():  # an Exchange (X.500) address: the name
        sender = _string(store, base, _SENDER_NAME)
    recipients = _recipients(store, base)  # with their addresses; else the display lines' names
    fields = (
        ("Subject", _string(store, base, _SUBJECT)),
        ("From", sender),
        ("To", recipients.get(1) or _string(store, base, _DISPLAY_TO)),
        ("Cc", recipients.get(2) or _string(store, base, _DISPLAY_CC)),
        ("Date", _when(store, base, top)),
    )
    parts = ["\n".join(f"{name}: {value.strip()}" for name, value in fields if value.strip())]
    parts.append(_body(store, base))
    names, inner = [], []
    attached: list[str] = []
    for child in store.children(base.rstrip("/")):
        if not child.startswith("__attach_version1.0_"):
            continue
        at = f"{base}{child}/"
        if f"{at}{_EMBEDDED}" in store.paths:
            if depth < MAX_NESTED:
                inner.append(_message(store, f"{at}{_EMBEDDED}/", depth + 1, enclosed))
            continue
        name = (
            _string(store, at, _ATTACH_LONG_NAME)
            or _string(store, at, _ATTACH_NAME)
            or _string(store, at, _DISPLAY_NAME)
        )
        if name:
            names.append(name)
            data = store.stream_at(f"{at}__substg1.0_{_ATTACH_DATA}{_BINARY}")
            if enclosed is not None and data is not None and len(attached) < MAX_ATTACHMENTS:
                attached.append(enclosed("Attachment", name, data) or "")
    if names:
        parts.append("Attachments: " + ", ".join(names))
    return "\n\n".join(p for p in [*parts, *attached, *inner] if p.strip())


# [MS-OXRTFCP] 2.1.3.1.1: the dictionary's first bytes, which compressed RTF may refer back to
_RTF_PREFIX = (
    b"{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss \\fmodern \\fscript "
    b"\\fdecor MS Sans SerifSymbolArialTimes New RomanCourier{\\colortbl\\red0\\green0\\blue0\r\n\\par "
    b"\\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx"
)
_COMPRESSED, _UNCOMPRESSED = 0x75465A4C, 0x414C454D  # "LZFu", "MELA"


def decompressed_rtf(data: bytes) -> bytes:
    """An Outlook body's compressed RTF ([MS-OXRTFCP]): a 16-byte header (sizes, kind, CRC), then
    runs of eight items each led by a control byte, a set bit a 2-byte reference (12-bit offset into
    a 4,096-byte ring dictionary, 4-bit length less 2), a clear one a literal byte; a reference to
    the write position itself ends it."""
    if len(data) < 16:
        raise ValueError("compressed RTF shorter than its header")
    size, raw_size, kind = struct.unpack_from("<III", data, 0)
    if kind == _UNCOMPRESSED:
        return data[16 : 16 + raw_size]
    if kind != _COMPRESSED:
        raise ValueError("not compressed RTF")
    ring = bytearray(4096)
    ring[: len(_RTF_PREFIX)] = _RTF_PREFIX
    write = len(_RTF_PREFIX)
    out = bytearray()
    at, end = 16, min(len(data), size + 4)
    while at < end:
        control = data[at]
        at += 1
        for bit in range(8):
            if at >= end:
                break
            if control >> bit & 1:
                if at + 1 >= end:
                    return bytes(out)
                word = data[at] << 8 | data[at + 1]
                at += 2
                offset, length = word >> 4, (word & 0xF) + 2
                if offset == write:
                    return bytes(out)
                for step in range(length):
                    byte = ring[(offset + step) % 4096]
                    out.append(byte)
                    ring[write] = byte
                    write = (write + 1) % 4096
            else:
                out.append(data[at])
                ring[write] = data[at]
                write = (write + 1) % 4096
                at += 1
        if len(out) > max(raw_size, 1) * 2 + 4096:
            break  # a corrupt stream that would run on
    return bytes(out[:raw_size] if raw_size else out)
