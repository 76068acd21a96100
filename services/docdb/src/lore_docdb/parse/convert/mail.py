"""E-mail (EML) with the stdlib, RTF with striprtf."""

from __future__ import annotations

import base64
import email
import email.policy
import quopri
import re
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import (
    MAX_ATTACHMENTS,
    Enclosed,
    ExtractionError,
    decode,
    md_table,
    utf16_without_bom,
)
from lore_docdb.parse.convert.markup import html_markdown

HEADERS = ("Subject", "From", "To", "Cc", "Date")


_LATIN = {"us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1", "windows-1252", "cp1252"}
MAX_NESTED = 8  # messages inside messages (a digest's, a forwarded one's): deeper ones are left out


def eml_markdown(path: Path, enclosed: Enclosed | None = None) -> str:
    """The headers people search by, the body (plain text, else the HTML part), attachment names,
    each attached file of a type docdb reads (its text under `# Attachment: name`), and each message
    inside it (a digest's, a forwarded one) the same way after it. A file saved as
    UTF-16 or UTF-32 is read as such."""
    data = path.read_bytes()
    wide = data[:2] in (b"\xff\xfe", b"\xfe\xff") or utf16_without_bom(data) is not None
    message = (
        email.message_from_string(decode(data), policy=email.policy.default)
        if wide
        else email.message_from_bytes(data, policy=email.policy.default)
    )
    return _message_markdown(message, 0, enclosed)


MAX_MAILBOX_MESSAGES = 20_000  # messages read from one mailbox; the count of the others is said
_QUOTED_FROM = re.compile(rb"(?m)^>(>*From )")
_HEADING = re.compile(r"(?m)^(#{1,5}) ")


def mbox_markdown(path: Path, enclosed: Enclosed | None = None) -> str:
    """A mailbox (`.mbox`: Thunderbird's, Apple Mail's and Google Takeout's exports): each message in
    the file's order under `# Message: its subject`, read as an `.eml` is (headers, body,
    attachments)."""
    import mailbox

    box = mailbox.mbox(path, create=False)
    parts = []
    try:
        for count, key in enumerate(box.iterkeys()):
            if count >= MAX_MAILBOX_MESSAGES:
                parts.append(f"(the mailbox's other {len(box) - count} messages are not read)")
                break
            data = _QUOTED_FROM.sub(rb"\1", box.get_bytes(key))  # `>From ` a line's own `From `
            message = email.message_from_bytes(data, policy=email.policy.default)
            subject = " ".join(str(message["Subject"] or "").split()) or "(no subject)"
            text = _HEADING.sub(r"#\1 ", _message_markdown(message, 0, enclosed))  # under the message's
            parts.append(f"# Message: {subject}\n\n{text}")
    finally:
        box.close()
    if not parts:
        raise ExtractionError(f"{path.name}: no messages in it (each starts with a `From ` line)")
    return "\n\n".join(parts)


def web_archive_markdown(data: bytes) -> str:
    """A web page saved as one MIME file (`.mht`, `.mhtml`: Internet Explorer's and Word's web
    archive, a Word file's HTML chunk): its HTML part as Markdown, the pictures beside it left out."""
    message = email.message_from_bytes(data, policy=email.policy.default)
    body = message.get_body(preferencelist=("html", "plain"))
    if body is None:
        return ""
    content = _part_text(body)
    return html_markdown(content) if body.get_content_type() == "text/html" else content.strip()


def mht_markdown(path: Path) -> str:
    return web_archive_markdown(path.read_bytes())


def _message_markdown(message: Any, depth: int, enclosed: Enclosed | None) -> str:
    lines = [f"{name}: {message[name]}" for name in HEADERS if message[name]]
    body = message.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        content = _part_text(body)
        text = html_markdown(content) if body.get_content_type() == "text/html" else content
    names, inner = [], []
    attached: list[str | None] = []
    for part in message.iter_attachments():
        if part.get_content_type() == "message/rfc822" and depth < MAX_NESTED:
            for nested in _enclosed(part):
                inner.append(_message_markdown(nested, depth + 1, enclosed))
        elif part.get_filename():
            names.append(part.get_filename())
            data = part.get_payload(decode=True)
            if enclosed is not None and isinstance(data, bytes) and len(attached) < MAX_ATTACHMENTS:
                attached.append(enclosed("Attachment", part.get_filename(), data))
    parts = ["\n".join(lines), text.strip()]
    if names:
        parts.append("Attachments: " + ", ".join(names))
    return "\n\n".join(p for p in [*parts, *(a for a in attached if a), *inner] if p)


def _enclosed(part: Any) -> list[Any]:
    """The message a `message/rfc822` part holds. GroupWise and some gateways send it in base64 or
    quoted-printable, which the standard forbids and the parser does not undo (the message's text
    came out as a block of base64): such a part is decoded and parsed again."""
    nested = list(part.iter_parts())
    encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
    if encoding not in ("base64", "quoted-printable") or len(nested) != 1:
        return nested
    raw = nested[0].as_bytes()
    try:
        if encoding == "base64":
            data = base64.b64decode(b"".join(raw.split()), validate=False)
        else:
            data = quopri.decodestring(raw)
    except ValueError:
        return nested
    return [email.message_from_bytes(data, policy=email.policy.default)]


def _part_text(part: Any) -> str:
    """A text part's text. Its bytes are read as UTF-8 where they are UTF-8 and the part says
    ASCII or Latin-1 (mailers label UTF-8 text so, and `I’m` read as Latin-1 is `Iâ\x80\x99m`),
    else in the charset it names, else in the encoding they read best in."""
    raw = part.get_payload(decode=True)
    if not isinstance(raw, bytes):
        return str(part.get_content())
    charset = (part.get_content_charset() or "").lower()
    if not charset or charset in _LATIN:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    try:
        return raw.decode(charset or "ascii")
    except (UnicodeDecodeError, LookupError):
        return decode(raw)


_OUTLINE = re.compile(rb"\\outlinelevel([0-5])(?![0-9])[ ]?")
_HEADING_MARK = re.compile(r"^\s*\x1fH([0-5])\x1f\s*")  # the mark set in front of a heading's text


_BIN = re.compile(rb"\\bin(-?\d*) ?")


def _group_end(data: bytes, start: int) -> int:
    """Where the RTF group opening at `start` ends (past its `}`), skipping `\\binN` raw bytes."""
    depth, at = 0, start
    while at < len(data):
        char = data[at]
        if char == 0x5C:  # a backslash: a control word, an escaped brace, or raw bytes
            binary = _BIN.match(data, at)
            if binary is not None:
                count = int(binary.group(1)) if binary.group(1).lstrip(b"-").isdigit() else 0
                at = binary.end() + max(0, count)
                continue
            at += 2
            continue
        if char == 0x7B:
            depth += 1
        elif char == 0x7D:
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    return at


def without_pictures(data: bytes) -> bytes:
    """The RTF without its `{\\pict ...}` groups: pictures as hex or as `\\binN` raw bytes (which may
    hold braces) are no text, and striprtf fails on a `\\bin` written without its byte count."""
    out = bytearray()
    start = 0
    while (found := data.find(b"{\\pict", start)) >= 0:
        out += data[start:found]
        start = _group_end(data, found)
    return bytes(out + data[start:])


_FOOTNOTE = re.compile(rb"\{\\footnote(?![a-z])")
_NOTE_START, _NOTE_END = "\x1dF", "\x1dE"  # marks around a note's text, set before striprtf
_NOTE = re.compile(f"{_NOTE_START}(.*?){_NOTE_END}", re.DOTALL)


def _notes_marked(data: bytes) -> bytes:
    """The RTF with each `{\\footnote ...}` group (striprtf drops them) an ordinary group between
    marks, so its text comes out and can be moved after its paragraph."""
    out = bytearray()
    start = 0
    for found in _FOOTNOTE.finditer(data):
        if found.start() < start:
            continue  # a footnote inside a footnote: read with the outer one
        end = _group_end(data, found.start())
        out += data[start : found.start()] + b"{" + _NOTE_START.encode()
        out += data[found.end() : end - 1] + _NOTE_END.encode() + b"}"
        start = end
    return bytes(out + data[start:])


def _notes_apart(text: str) -> str:
    """Each marked note out of its sentence, as `[footnote N]: text` after its paragraph."""
    notes: list[str] = []

    def cut(match: re.Match[str]) -> str:
        note = " ".join(match.group(1).split())
        if not note:
            return ""
        notes.append(note)
        return f"\x1dN{len(notes) - 1}\x1d"

    text = _NOTE.sub(cut, text)
    if not notes:
        return text
    lines = []
    for line in text.split("\n"):
        numbers = [int(n) for n in re.findall("\x1dN(\\d+)\x1d", line)]
        lines.append(re.sub("\x1dN\\d+\x1d", "", line))
        lines += [f"\n[footnote {n + 1}]: {notes[n]}\n" for n in numbers]
    return "\n".join(lines)


def rtf_text(path: Path) -> str:
    return rtf_markdown(path.read_bytes())


_TABLE_WORD = re.compile(rb"(?<!\\)\\(trowd|cell|nestcell|row|nestrow)(?![a-z])(-?\d+)? ?")
_TABLE_MARKS = {b"trowd": b"\\trowd{\x1eT}", b"cell": b"{\x1eC}", b"row": b"{\x1eR}"}
_MARK = re.compile("\x1e([TCR])")
_ROW = "\x1eROW"  # a table row's line: its cells after this, apart by \x1d


def _table_marked(data: bytes) -> bytes:
    """The RTF with a mark where each row's definition (`\\trowd`), cell and row end, in place of
    striprtf's `|` and line break: a cell's own paragraphs (`Right\\par\\cell`, as pandoc and many
    writers set them) broke its row over several lines. A nested table's cells are text of their
    outer cell."""

    def mark(found: re.Match[bytes]) -> bytes:
        return _TABLE_MARKS.get(found.group(1), b"{ }")

    return _TABLE_WORD.sub(mark, data)


def _table_rows(text: str) -> str:
    """striprtf's text with each marked table row as one line of its cells: a row runs from its
    definition (or, where a writer sets the definition after the cells, from the start of the line
    of its first cell) to its end, each cell's paragraphs joined."""
    out: list[str] = []
    at = 0  # where the text not yet written out starts
    cells: list[str] = []
    cell_start: int | None = None  # inside a row: where its next cell starts

    def put(part: str) -> None:
        if part:
            out.append(part)

    def end_row() -> None:
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        out.append(_ROW + "\x1d".join(" ".join(c.replace("\x1f", " ").split()) for c in cells) + "\n")

    for found in _MARK.finditer(text):
        kind = found.group(1)
        if kind == "T":
            if cell_start is None:
                put(text[at : found.start()])
                cell_start = found.end()
            elif not cells:
                cell_start = found.end()
            continue  # a definition after the row's cells (Word writes one before `\\row`)
        if kind == "C":
            if cell_start is None:
                cell_start = max(at, text.rfind("\n", at, found.start()) + 1)
                put(text[at:cell_start])
            cells.append(text[cell_start : found.start()])
            cell_start = found.end()
            continue
        if cell_start is None:  # a row's end outside a row
            put(text[at : found.start()])
        elif cells:
            end_row()
        cells, cell_start, at = [], None, found.end()
    if cell_start is not None and cells:  # a table whose last row has no end
        end_row()
        at = cell_start
    put(text[at:])
    return "".join(out)


_HIDDEN_TOKEN = re.compile(rb"\\v(0?)(?![a-z0-9])(?: ?)|\\plain(?![a-z])|\\.|[{}]")
_HIDDEN_ON, _HIDDEN_OFF = b"{\x1eH}", b"{\x1eh}"
_HIDDEN = re.compile("\x1eH.*?(?:\x1eh|$)", re.DOTALL)


def _hidden_marked(data: bytes) -> bytes:
    """The RTF with a mark where hidden text (`\\v`, Word's hidden font, which no reader sees) starts
    and ends, so its text can be cut after striprtf, which keeps it. Hiding lasts to `\\v0`, `\\plain`
    or the end of its group."""
    out = bytearray()
    start = 0
    hidden = False
    stack: list[bool] = []
    for found in _HIDDEN_TOKEN.finditer(data):
        token = found.group()
        now = hidden
        if token == b"{":
            stack.append(hidden)
        elif token == b"}":
            now = stack.pop() if stack else False
        elif token.startswith(b"\\v") and found.group(1) is not None:
            now = found.group(1) != b"0"
        elif token.startswith(b"\\plain"):
            now = False
        if now == hidden:
            continue
        out += data[start : found.end()] + (_HIDDEN_ON if now else _HIDDEN_OFF)
        start = found.end()
        hidden = now
    return bytes(out + data[start:])


def rtf_markdown(rtf: bytes) -> str:
    """RTF's paragraphs apart, a paragraph at an outline level (Word's headings) as a `#` heading,
    its tables as pipe tables (a row's cells marked before striprtf reads it), and its footnotes
    after their paragraph."""
    from striprtf.striprtf import rtf_to_text

    if not rtf.lstrip().startswith(b"{\\rtf"):
        # a fragment of RTF (pandoc's output without its header) is several groups one after
        # another, and striprtf stopped at the end of the first
        rtf = b"{\\rtf1 " + rtf + b"}"
    # striprtf reads no outline levels: a mark in the paragraph's text says which level it was
    data = _OUTLINE.sub(
        lambda m: m.group(0).rstrip() + b" \x1fH" + m.group(1) + b"\x1f",
        _notes_marked(_table_marked(_hidden_marked(without_pictures(rtf)))),
    )
    text = str(rtf_to_text(decode(data), errors="ignore"))  # type: ignore[no-untyped-call]
    text = _notes_apart(_table_rows(_HIDDEN.sub("", text)))
    # a character beyond the Basic Multilingual Plane is written as two `\u` surrogates (`\u-10240?
    # \u-8398?` for 𐌲): paired again, and a lone one (a broken file) replaced
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    out: list[str] = []
    rows: list[list[str]] = []
    for line in [*text.split("\n"), ""]:
        if line.startswith(_ROW):
            rows.append(line[len(_ROW) :].split("\x1d"))
            continue
        if rows:
            out.append(md_table(rows))
            rows = []
        heading = _HEADING_MARK.match(line)
        line = (
            line.replace("\x1f", "")
            if heading is None
            else ("#" * (int(heading.group(1)) + 1) + " " + line[heading.end() :].replace("\x1f", ""))
        )
        line = _LIST_MARK.sub(_list_item, line.strip())
        if line:
            out.append(line)
    return "\n\n".join(out)


# a list item's number or bullet as Word writes it before the text (`{\\listtext \\'95\\tab}`)
_LIST_MARK = re.compile(r"^(?:([•◦▪‣⁃·o§\uf0b7\uf0a7-])|(\(?[0-9A-Za-z]{1,4}[.)]))\t\s*")


def _list_item(found: re.Match[str]) -> str:
    return "- " if found.group(1) else found.group(2) + " "
