"""The speaker notes of a PowerPoint 97-2003 `.ppt`, which docling-rs leaves out (it reads a PPTX's),
read from the `PowerPoint Document` stream ([MS-PPT] 2.4, 2.5): the notes pages' body text per
slide, and each slide's first line, by which the notes are put after their slide in the Markdown;
and each slide's text (its outline's and, through the persist directory, its shapes'), by which the
slides are told apart in the Markdown.

A file saved by incremental edits holds a slide or a notes page more than once; the last one in the
stream, the newest, is read. Whatever does not add up gives no notes; the slides are docling-rs's."""

from __future__ import annotations

import struct
from typing import NamedTuple

from lore_docdb.parse.convert.word97 import Compound

_DOCUMENT, _NOTES, _NOTES_ATOM = 0x03E8, 0x03F0, 0x03F1
_SLIDE_LIST, _SLIDE_PERSIST = 0x0FF0, 0x03F3
_TEXT_HEADER, _TEXT_CHARS, _TEXT_BYTES = 0x0F9F, 0x0FA0, 0x0FA8
_NOTES_TEXT = 2  # a TextHeaderAtom's type for a notes page's body
MAX_DEPTH = 16

Record = tuple[int, int, int, int]  # type, instance, start of its data, end of its data


def _records(data: bytes, start: int, end: int) -> list[Record]:
    found = []
    while start + 8 <= end:
        version, kind, size = struct.unpack_from("<HHI", data, start)
        found.append((kind, version >> 4, start + 8, min(end, start + 8 + size)))
        start += 8 + size
    return found


def _atoms(data: bytes, start: int, end: int, depth: int = 0) -> list[Record]:
    """The atoms inside a container, at any depth, in order."""
    found = []
    for record in _records(data, start, end):
        version = struct.unpack_from("<H", data, record[2] - 8)[0]
        if version & 0xF == 0xF and depth < MAX_DEPTH:
            found += _atoms(data, record[2], record[3], depth + 1)
        else:
            found.append(record)
    return found


def _text(data: bytes, kind: int, start: int, end: int) -> str:
    raw = data[start:end]
    text = raw.decode("utf-16-le", "replace") if kind == _TEXT_CHARS else raw.decode("cp1252", "replace")
    return text.replace("\x0b", "\r")


_SLIDE, _PERSIST_DIRECTORY = 0x03EE, 0x1772


class Slides(NamedTuple):
    """Per slide in order: its first line of text ('' when none) and its notes' paragraphs ([] when
    it has none); and how many times the file was saved by an incremental edit, each time with all
    its slides again (a `Document` record each)."""

    slides: list[tuple[str, list[str]]]
    edits: int


def _persisted(stream: bytes, top: list[Record]) -> dict[int, int]:
    """Where each persisted object (a slide) starts in the stream, by its persist id: the
    directories in the stream's order, a later edit's entry over an earlier one's."""
    offsets: dict[int, int] = {}
    for kind, _, start, end in top:
        at = start
        while kind == _PERSIST_DIRECTORY and at + 4 <= end:
            head = struct.unpack_from("<I", stream, at)[0]
            at += 4
            for n in range(head >> 20):
                if at + 4 <= end:
                    offsets[(head & 0xFFFFF) + n] = struct.unpack_from("<I", stream, at)[0]
                at += 4
    return offsets


def _lines(stream: bytes, atoms: list[Record]) -> list[str]:
    return [
        " ".join(line.split())
        for atom, _, begin, finish in atoms
        if atom in (_TEXT_CHARS, _TEXT_BYTES)
        for line in _text(stream, atom, begin, finish).split("\r")
        if line.strip()
    ]


def _slide_lines(stream: bytes, offsets: dict[int, int], persist: int) -> list[str]:
    """The text of a slide's shapes (PowerPoint 2007 and later keep a slide's text there)."""
    at = offsets.get(persist)
    if at is None or at + 8 > len(stream):
        return []
    _, kind, size = struct.unpack_from("<HHI", stream, at)
    return _lines(stream, _atoms(stream, at + 8, min(len(stream), at + 8 + size))) if kind == _SLIDE else []


def ppt_notes(data: bytes) -> Slides:
    """The slides' first lines and notes; no slides for anything else or a file this cannot read."""
    return _slides(data)[0]


def slide_lines(data: bytes) -> list[list[str]]:
    """Per slide in order, the lines of all its text (its outline's and its shapes'), by which the
    slides are found in docling-rs's Markdown; none for a file this cannot read."""
    return _slides(data)[1]


def _slides(data: bytes) -> tuple[Slides, list[list[str]]]:
    try:
        stream = Compound(data).stream("PowerPoint Document")
        top = _records(stream, 0, len(stream))
        documents = [r for r in top if r[0] == _DOCUMENT]
        if not documents:
            return Slides([], 0), []
        offsets = _persisted(stream, top)
        slides: list[tuple[int, str]] = []  # slide id, first line
        lines: list[list[str]] = []
        for kind, instance, start, end in _records(stream, documents[-1][2], documents[-1][3]):
            if kind != _SLIDE_LIST or instance != 0:
                continue
            for atom, _, begin, finish in _records(stream, start, end):
                if atom == _SLIDE_PERSIST and finish - begin >= 16:
                    slides.append((struct.unpack_from("<I", stream, begin + 12)[0], ""))
                    persist = struct.unpack_from("<I", stream, begin)[0]
                    lines.append(_slide_lines(stream, offsets, persist))
                elif atom in (_TEXT_CHARS, _TEXT_BYTES) and slides:
                    said = _lines(stream, [(atom, 0, begin, finish)])
                    lines[-1] += said
                    if not slides[-1][1]:
                        slides[-1] = (slides[-1][0], next(iter(said), ""))
        notes: dict[int, list[str]] = {}
        for kind, _, start, end in top:
            if kind != _NOTES:
                continue
            slide, kind_of_text, said = None, None, []
            for atom, _, begin, finish in _atoms(stream, start, end):
                if atom == _NOTES_ATOM and finish - begin >= 4:
                    slide = struct.unpack_from("<I", stream, begin)[0]
                elif atom == _TEXT_HEADER and finish - begin >= 4:
                    kind_of_text = struct.unpack_from("<I", stream, begin)[0]
                elif atom in (_TEXT_CHARS, _TEXT_BYTES) and kind_of_text == _NOTES_TEXT:
                    said += [" ".join(p.split()) for p in _text(stream, atom, begin, finish).split("\r")]
            if slide is not None:
                notes[slide] = [p for p in said if p]  # a later copy is a newer edit
        found = [(first, notes.get(slide, [])) for slide, first in slides]
        return Slides(found, len(documents)), lines
    except (ValueError, KeyError, IndexError, struct.error, RecursionError):
        return Slides([], 0), []


def ppt95_text(data: bytes) -> str:
    """A PowerPoint 95 presentation's text, which docling-rs read as nothing: the `Text_Content`
    stream PowerPoint 95 keeps beside its slides, plain Windows-1252 text, a paragraph to a line.
    '' where there is none."""
    try:
        raw = Compound(data).stream("Text_Content")
    except (ValueError, KeyError, IndexError, struct.error):
        return ""
    text = raw.decode("cp1252", "replace").replace("\x0b", "\r")
    paragraphs = (" ".join(paragraph.split()) for paragraph in text.split("\r"))
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)
