"""Apple iWork documents: Pages (`.pages`), Keynote (`.key`) and Numbers (`.numbers`).

Since 2013 a package is a zip of `Index/*.iwa` files: chunks of raw Snappy (cramjam inflates them)
holding a stream of protobuf objects, each an identifier, a message type and a payload, which refer to
one another by identifier. Apple never published the schemas; the few message types and fields read
here are the ones every reader of the format relies on (text storages, paragraph and list styles,
slides, sheets and table tiles), decoded without a schema by protobuf's unknown-field reader. What
comes out is the same Markdown the other converters write:

- Pages: the body in order, paragraphs styled `Title`/`Heading n` (or set larger than the body's type
  and short) as headings, list paragraphs as list items, tables and text boxes where they are anchored,
  floating text boxes and footnotes after the body; page headers and footers left out.
- Keynote: each slide a page (a form feed between them), its title a heading, then its text boxes and
  tables in the order they are stacked, its presenter notes last; master slides' placeholder text never.
- Numbers: each sheet under its name as a heading, each table on it under its own name as a pipe table.

iWork '09 packages (an `index.xml` or `index.apxl`, often gzipped) are XML, read the same way: a
Pages' body then its text boxes and footnotes, a Keynote's slides with their titles and notes, a
Numbers' sheets with their tables; a template's placeholder pages and ghost text never. A package
zipped as its folder, or whose index is an inner `Index.zip` (2013 to 2015), is read; a
password-protected one is refused as such.
"""

from __future__ import annotations

import datetime
import gzip
import io
import re
import struct
import zipfile
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from lore_docdb.parse.convert.common import ENCRYPTED, PAGE_BREAK, md_table, refused

MAX_INDEX_BYTES = 256 * 2**20  # an .iwa member or an '09 index inflated: a bomb stops here
MAX_OBJECTS = 2_000_000
MAX_DEPTH = 8  # how deep a drawable's text is looked for (groups of groups)
MAX_COLUMNS = 1_000  # a table's columns read
MAX_CELLS = 5_000_000  # a table's cells read (its first rows): a sheet that claims more stops there

# Message types (the numbers iWork writes before each object).
_KEYNOTE_SHOW = 2  # KN.ShowArchive
_KEYNOTE_SLIDE_NODE = 4
_KEYNOTE_SLIDE = 5
_KEYNOTE_NOTE = 15
_NUMBERS_DOCUMENT = 1  # TN.DocumentArchive
_NUMBERS_SHEET = 2  # TN.SheetArchive
_STORAGE = 2001  # TSWP.StorageArchive: a text
_PARAGRAPH_STYLE = 2022
_LIST_STYLE = 2023
_TABLE_INFO = 6000
_TABLE_MODEL = 6001
_TILE = 6002
_DATA_LIST = 6005
_MERGE_REGIONS = 6144  # TST.MergeRegionMapArchive
_RICH_TEXT_PAYLOAD = 6218
_PAGES_DOCUMENT = 10000  # TP.DocumentArchive
_PAGES_HEADER_FOOTER = 10143
# Objects a search for a drawable's text never enters: the show, slides, styles and documents lead to
# every other slide, the masters' placeholder text or the whole stylesheet.
_CLOSED = {1, _KEYNOTE_SHOW, _KEYNOTE_SLIDE_NODE, _KEYNOTE_SLIDE, 205, 401, _PAGES_DOCUMENT}


def _closed(kind: int | None) -> bool:
    """The document, the show, slides, styles (2021 to 2030, 3016) and charts (5000 to 5999): a path
    through one of them leads to every other table or text of the file, or to the stylesheet's."""
    return kind is not None and (
        kind in _CLOSED or 2021 <= kind <= 2030 or kind == 3016 or 5000 <= kind < 6000
    )


# A storage's kind (field 1) of those not read after the body: a header or footer, a table's cell, a
# table of contents (the others: body 0, footnote 2, text box 3, note 4, unclassified 6)
_HEADER, _CELL, _CONTENTS = 1, 5, 7

_ATTACHMENT = "\ufffc"  # where a picture, a table or a text box is anchored in a text
# paragraph, page, section and column breaks, and the other control characters iWork marks places with
_PARAGRAPH_ENDS = re.compile("[\n\u2029\x00-\x08\x0c-\x1f]")
_LINE_BREAKS = re.compile("[\u2028\x0b\t]+")
_HEADING_STYLE = re.compile(r"^(?:(title)|(heading|überschrift|titre|título|titolo|kop)\s*(\d)?)\b", re.I)
_NO_LABEL, _NUMBER_LABEL = 0, 3  # a list style's label types: none, picture (1), bullet (2), number
_EPOCH = datetime.datetime(2001, 1, 1)  # iWork's dates are seconds since this moment


Fields = dict[int, list[int | bytes]]


class _Object(NamedTuple):
    kind: int
    payload: bytes
    member: str


def fields(payload: bytes) -> Fields:
    """A protobuf message's fields by number, without its schema: varints and fixed-width values as
    ints, length-delimited ones as bytes (a string, a nested message or a packed list)."""
    from google.protobuf import empty_pb2
    from google.protobuf.message import DecodeError
    from google.protobuf.unknown_fields import UnknownFieldSet

    message = empty_pb2.Empty()
    try:
        message.ParseFromString(payload)
    except DecodeError:
        return {}
    found: Fields = {}
    for field in UnknownFieldSet(message):
        if isinstance(field.data, int | bytes):  # a group (wire types 3 and 4: iWork writes none)
            found.setdefault(field.field_number, []).append(field.data)
    return found


def _first(found: Fields, number: int) -> int | bytes | None:
    values = found.get(number)
    return values[0] if values else None


def _reference(value: int | bytes | None) -> int | None:
    """The identifier a `TSP.Reference` (a message whose field 1 is the identifier) points to."""
    if not isinstance(value, bytes) or not value.startswith(b"\x08"):
        return None
    target = _first(fields(value), 1)
    return target if isinstance(target, int) else None


def _text(value: int | bytes | None) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _float(value: int | bytes | None) -> float | None:
    """A protobuf `float` (fixed 32 bits, read by the schemaless reader as an int)."""
    return struct.unpack("<f", struct.pack("<I", value))[0] if isinstance(value, int) else None


def _packed(data: bytes) -> list[int]:
    """A packed repeated varint field."""
    values, at = [], 0
    while at < len(data):
        value, at = _varint(data, at)
        values.append(value)
    return values


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


class _TooLarge(ValueError):
    """A part that would inflate past MAX_INDEX_BYTES."""


def iwa_objects(data: bytes, member: str) -> Iterator[tuple[int, _Object]]:
    """The objects of one `.iwa` file: chunks of a 4-byte header (0, then the length on 3 bytes,
    little-endian) and raw Snappy, which inflated are a stream of (varint length, `ArchiveInfo`: the
    identifier and each message's type and length, then the messages)."""
    import cramjam

    stream = bytearray()
    at = 0
    while at + 4 <= len(data):
        if data[at] != 0:
            raise ValueError(f"{member} is not an iWork archive (chunk type {data[at]})")
        length = int.from_bytes(data[at + 1 : at + 4], "little")
        chunk = data[at + 4 : at + 4 + length]
        # Snappy's block starts with the length it inflates to: checked before cramjam allocates it
        if len(stream) + _varint(chunk, 0)[0] > MAX_INDEX_BYTES:
            raise _TooLarge(f"its part {member} inflates past {MAX_INDEX_BYTES // 2**20} MiB (a bomb?)")
        stream += bytes(cramjam.snappy.decompress_raw(chunk))
        at += 4 + length
    view = bytes(stream)
    at = 0
    while at < len(view):
        length, at = _varint(view, at)
        info = fields(view[at : at + length])
        at += length
        identifier = _first(info, 1)
        messages = [fields(m) for m in info.get(2, []) if isinstance(m, bytes)]
        for index, message in enumerate(messages):
            size = _first(message, 3)
            kind = _first(message, 1)
            if not isinstance(size, int):
                break
            if index == 0 and isinstance(identifier, int) and isinstance(kind, int):
                yield identifier, _Object(kind, view[at : at + size], member)
            at += size


class _Package:
    """A package's objects by identifier, their fields read once each."""

    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        import cramjam

        self.objects: dict[int, _Object] = {}
        self._fields: dict[int, Fields] = {}
        for info in archive.infolist():
            if not info.filename.endswith(".iwa"):
                continue
            if info.file_size > MAX_INDEX_BYTES:
                raise refused(path, f"its part {info.filename} is larger than {MAX_INDEX_BYTES // 2**20} MiB")
            data = archive.read(info)
            if data[:1] != b"\x00":  # not a Snappy chunk: a part another version writes otherwise
                continue
            try:
                for identifier, found in iwa_objects(data, info.filename):
                    self.objects[identifier] = found
                    if len(self.objects) > MAX_OBJECTS:
                        raise refused(path, f"it holds more than {MAX_OBJECTS} objects")
            except _TooLarge as exc:
                raise refused(path, str(exc)) from None
            except (ValueError, IndexError, cramjam.DecompressionError) as exc:
                raise refused(path, f"its part {info.filename} is damaged ({exc})") from None

    def fields(self, identifier: int) -> Fields:
        if identifier not in self._fields:
            found = self.objects.get(identifier)
            self._fields[identifier] = fields(found.payload) if found else {}
        return self._fields[identifier]

    def kind(self, identifier: int | None) -> int | None:
        found = self.objects.get(identifier) if identifier is not None else None
        return found.kind if found else None

    def of_kind(self, kind: int) -> list[int]:
        return [i for i, found in self.objects.items() if found.kind == kind]

    def follow(self, value: int | bytes | None) -> int | None:
        """The identifier a reference field points to, when the package holds it."""
        target = _reference(value)
        return target if target in self.objects else None


# ------------------------------------------------------------------ text


class _Style(NamedTuple):
    name: str
    size: float | None


class _Converter:
    """Renders a package's texts and tables as Markdown, each object once."""

    def __init__(self, package: _Package) -> None:
        self.package = package
        self.seen: set[int] = set()
        self._styles: dict[int, _Style] = {}

    def style(self, identifier: int | None, depth: int = 0) -> _Style:
        """A paragraph style's name and type size, a size it does not set taken from its parent."""
        if identifier is None or depth > MAX_DEPTH:
            return _Style("", None)
        if identifier in self._styles:
            return self._styles[identifier]
        found = self.package.fields(identifier)
        header = fields(b) if isinstance(b := _first(found, 1), bytes) else {}
        name = _text(_first(header, 1))
        characters = fields(c) if isinstance(c := _first(found, 11), bytes) else {}
        size = _float(_first(characters, 3))
        if not name or size is None:
            parent = self.style(self.package.follow(_first(header, 3)), depth + 1)
            name, size = name or parent.name, size if size is not None else parent.size
        self._styles[identifier] = _Style(name, size)
        return self._styles[identifier]

    def plain_text(self, identifier: int) -> str:
        """A drawable's text on one line (a slide's title), marked as read."""
        blocks = self.drawable_blocks(identifier)
        lines = [re.sub(r"^(?:#+|\s*(?:-|\d+\.))\s+", "", line) for b in blocks for line in b.splitlines()]
        return " ".join(" ".join(lines).split())

    def label(self, identifier: int | None, level: int, depth: int = 0) -> int:
        """What a list style sets before a paragraph at `level`: nothing (the style `None`, in any
        language), a picture, a bullet or a number; a style that does not say takes its parent's."""
        if identifier is None or depth > MAX_DEPTH:
            return _NO_LABEL
        found = self.package.fields(identifier)
        labels: list[int] = []
        for value in found.get(11, []):
            labels += _packed(value) if isinstance(value, bytes) else [value]
        if labels:
            return labels[min(level, len(labels) - 1)]
        header = fields(b) if isinstance(b := _first(found, 1), bytes) else {}
        return self.label(self.package.follow(_first(header, 3)), level, depth + 1)

    def _runs(self, storage: Fields, number: int) -> list[tuple[int, int | None]]:
        """An attribute table of a storage: (character index, the object it refers to), in order."""
        table = fields(t) if isinstance(t := _first(storage, number), bytes) else {}
        runs = []
        for entry in table.get(1, []):
            if isinstance(entry, bytes):
                found = fields(entry)
                at = _first(found, 1)
                if isinstance(at, int):
                    runs.append((at, self.package.follow(_first(found, 2))))
        return sorted(runs, key=lambda run: run[0])

    def _levels(self, storage: Fields) -> list[tuple[int, int]]:
        """A storage's paragraph data: (character index, list level)."""
        table = fields(t) if isinstance(t := _first(storage, 6), bytes) else {}
        levels = []
        for entry in table.get(1, []):
            if isinstance(entry, bytes):
                found = fields(entry)
                at, level = _first(found, 1), _first(found, 2)
                if isinstance(at, int):
                    levels.append((at, level if isinstance(level, int) else 0))
        return sorted(levels)

    def storage_blocks(self, identifier: int, depth: int = 0) -> list[str]:
        """A text's paragraphs as Markdown blocks, what is anchored in it (a table, a text box) in
        place."""
        if identifier in self.seen or depth > MAX_DEPTH:
            return []
        self.seen.add(identifier)
        storage = self.package.fields(identifier)
        text = "".join(_text(v) for v in storage.get(3, []))
        if not text.strip():
            return []
        styles = self._runs(storage, 5)
        lists = self._runs(storage, 7)
        anchors = dict(self._runs(storage, 9))
        levels = self._levels(storage)
        paragraphs: list[tuple[str, _Style, int, int, list[str]]] = []
        start = 0
        for piece in _PARAGRAPH_ENDS.split(text):
            inner: list[str] = []
            for offset, char in enumerate(piece):
                if char == _ATTACHMENT and (target := anchors.get(start + offset)) is not None:
                    inner += self.drawable_blocks(target, depth + 1)
            level = _level_at(levels, start)
            paragraphs.append(
                (
                    _LINE_BREAKS.sub(" ", piece.replace(_ATTACHMENT, "")).strip(),
                    self.style(_at(styles, start)),
                    self.label(_at(lists, start), level),
                    level,
                    inner,
                )
            )
            start += len(piece) + 1
        body = _body_size([(p[0], p[1]) for p in paragraphs])
        blocks: list[str] = []
        numbers: dict[int, int] = {}
        for line, style, label, level, inner in paragraphs:
            if line:
                heading = _heading_level(line, style, body) if label == _NO_LABEL else None
                if heading:
                    blocks.append(f"{'#' * heading} {line}")
                elif label != _NO_LABEL:
                    numbers = {k: v for k, v in numbers.items() if k <= level}
                    numbers[level] = numbers.get(level, 0) + 1
                    mark = f"{numbers[level]}." if label == _NUMBER_LABEL else "-"
                    blocks.append(f"{'  ' * level}{mark} {line}")
                else:
                    numbers = {}
                    blocks.append(line)
            blocks += inner
        return _joined_lists(blocks)

    def drawable_blocks(self, identifier: int, depth: int = 0) -> list[str]:
        """The text and tables of a drawable (a text box, a shape, a placeholder, a group, a table),
        found through the references it holds, in their order."""
        if depth > MAX_DEPTH or identifier in self.seen:
            return []
        kind = self.package.kind(identifier)
        found = self.package.objects[identifier]
        if _closed(kind) or "MasterSlide" in found.member or "TemplateSlide" in found.member:
            return []
        if kind == _STORAGE:
            return self.storage_blocks(identifier, depth)
        if kind == _TABLE_MODEL:
            return self.table_blocks(identifier)
        self.seen.add(identifier)
        if kind == _TABLE_INFO:
            model = self.package.follow(_first(self.package.fields(identifier), 2))
            return self.table_blocks(model) if model is not None else []
        if kind in (_DATA_LIST, _TILE, _PAGES_HEADER_FOOTER):
            return []
        blocks: list[str] = []
        for target in self._references(found.payload, 0):
            blocks += self.drawable_blocks(target, depth + 1)
        return blocks

    def _references(self, payload: bytes, depth: int) -> Iterator[int]:
        """The objects a message refers to, in field order, also from its nested messages."""
        if depth > MAX_DEPTH:
            return
        for values in fields(payload).values():
            for value in values:
                if not isinstance(value, bytes):
                    continue
                target = self.package.follow(value)
                if target is not None and len(value) <= 11:
                    yield target
                elif value[:1] in (b"\x08", b"\n", b"\x12", b"\x1a", b'"', b"*", b"2", b":"):
                    yield from self._references(value, depth + 1)

    # -------------------------------------------------------------- tables

    def table_blocks(self, model: int) -> list[str]:
        """A table as a pipe table under its name (when it shows one)."""
        if model in self.seen:
            return []
        self.seen.add(model)
        rows = self.table_rows(model)
        table = md_table(rows)
        if not table:
            return []
        found = self.package.fields(model)
        name = _text(_first(found, 8)).strip()
        return [f"**{name}**", table] if name and _first(found, 22) == 1 else [table]

    def table_rows(self, model: int) -> list[list[str]]:
        found = self.package.fields(model)
        store = fields(s) if isinstance(s := _first(found, 4), bytes) else {}
        count_rows = _first(found, 6)
        count_columns = _first(found, 7)
        if not isinstance(count_rows, int) or not isinstance(count_columns, int):
            return []
        strings = self._data_list(self.package.follow(_first(store, 4)))
        rich = self._data_list(self.package.follow(_first(store, 17)))
        tiles = fields(t) if isinstance(t := _first(store, 3), bytes) else {}
        tile_size = _first(tiles, 2)
        tile_rows = tile_size if isinstance(tile_size, int) and tile_size else 256
        width = min(count_columns, MAX_COLUMNS)
        rows = [[""] * width for _ in range(min(count_rows, MAX_CELLS // max(width, 1)))]
        for entry in tiles.get(1, []):
            if not isinstance(entry, bytes):
                continue
            tile_fields = fields(entry)
            first = _first(tile_fields, 1)
            tile = self.package.follow(_first(tile_fields, 2))
            if tile is None or not isinstance(first, int):
                continue
            for info in self.package.fields(tile).get(5, []):
                if isinstance(info, bytes):
                    self._tile_row(fields(info), first * tile_rows, rows, strings, rich)
        merges = self.package.follow(_first(store, 13))
        if merges is not None and self.package.kind(merges) == _MERGE_REGIONS:
            _fill_merged(rows, self.package.fields(merges))
        return rows

    def _data_list(self, identifier: int | None) -> dict[int, str]:
        """A table's shared strings, or its rich texts' plain text, by key."""
        if identifier is None:
            return {}
        values: dict[int, str] = {}
        for entry in self.package.fields(identifier).get(3, []):
            if not isinstance(entry, bytes):
                continue
            found = fields(entry)
            key = _first(found, 1)
            if not isinstance(key, int):
                continue
            if isinstance(string := _first(found, 3), bytes):
                values[key] = _text(string)
                continue
            for number in (4, 6, 9):  # a rich text's payload, which holds its storage
                payload = self.package.follow(_first(found, number))
                if payload is not None and self.package.kind(payload) == _RICH_TEXT_PAYLOAD:
                    storage = self.package.follow(_first(self.package.fields(payload), 1))
                    if storage is not None:
                        self.seen.add(storage)
                        text = "".join(_text(v) for v in self.package.fields(storage).get(3, []))
                        values[key] = " ".join(_PARAGRAPH_ENDS.sub(" ", text).split())
                    break
        return values

    def _tile_row(
        self,
        info: Fields,
        base: int,
        rows: list[list[str]],
        strings: dict[int, str],
        rich: dict[int, str],
    ) -> None:
        index = _first(info, 1)
        if not isinstance(index, int) or base + index >= len(rows):
            return
        row = rows[base + index]
        buffer, offsets, wide = _first(info, 6), _first(info, 7), _first(info, 8) == 1
        if not isinstance(buffer, bytes) or not isinstance(offsets, bytes):
            buffer, offsets, wide = _first(info, 3), _first(info, 4), False  # before Numbers 10 (2020)
        if not isinstance(buffer, bytes) or not isinstance(offsets, bytes):
            return
        for column in range(min(len(offsets) // 2, len(row))):
            (offset,) = struct.unpack_from("<H", offsets, column * 2)
            if offset == 0xFFFF:
                continue
            at = offset * 4 if wide else offset
            if at < len(buffer):
                row[column] = _cell(buffer, at, strings, rich)


def _cell(buffer: bytes, at: int, strings: dict[int, str], rich: dict[int, str]) -> str:
    """One cell's value as the table shows it, near enough: text, a number, a date, a truth value or
    a duration (currency and percentage formats are not applied: the number is the value)."""
    try:
        version = buffer[at]
        kind = buffer[at + 2] if version <= 3 else buffer[at + 1]  # Numbers 2013 wrote the type later
        if version >= 5:
            (flags,) = struct.unpack_from("<I", buffer, at + 8)
            sizes = [(0x1, 16), (0x2, 8), (0x4, 8), (0x8, 4), (0x10, 4)]
        else:  # the storage before Numbers 10: flags earlier, the values in another order
            flags = struct.unpack_from("<I", buffer, at + 4)[0] & 0xFFFF
            sizes = [(0x2, 4), (0x80, 4), (0x4, 4), (0x8, 4), (0x10, 4), (0x20, 8), (0x40, 8), (0x200, 4)]
        values: dict[int, bytes] = {}
        offset = at + 12
        for bit, size in sizes:
            if flags & bit:
                values[bit] = buffer[offset : offset + size]
                offset += size
    except (IndexError, struct.error):
        return ""
    if version >= 5:
        number = _decimal128(values[0x1]) if 0x1 in values else None
        double = struct.unpack("<d", values[0x2])[0] if len(values.get(0x2, b"")) == 8 else None
        seconds = struct.unpack("<d", values[0x4])[0] if len(values.get(0x4, b"")) == 8 else None
        string_key = int.from_bytes(values[0x8], "little") if 0x8 in values else None
        rich_key = int.from_bytes(values[0x10], "little") if 0x10 in values else None
    else:
        number = None
        double = struct.unpack("<d", values[0x20])[0] if len(values.get(0x20, b"")) == 8 else None
        seconds = struct.unpack("<d", values[0x40])[0] if len(values.get(0x40, b"")) == 8 else None
        string_key = int.from_bytes(values[0x10], "little") if 0x10 in values else None
        rich_key = int.from_bytes(values[0x200], "little") if 0x200 in values else None
    if kind == 3 and string_key is not None:  # text
        return strings.get(string_key, "")
    if kind == 9 and rich_key is not None:  # rich text
        return rich.get(rich_key, "")
    if kind == 5 and seconds is not None:  # a date
        try:
            moment = _EPOCH + datetime.timedelta(seconds=seconds)
        except OverflowError:
            return ""
        return moment.date().isoformat() if moment.time() == datetime.time() else moment.isoformat(" ")
    if kind == 6:  # a truth value
        return "TRUE" if (double or number) else "FALSE"
    if kind == 7 and double is not None:  # a duration, in seconds
        whole, fraction = divmod(round(double * 1000), 1000)
        shown = str(datetime.timedelta(seconds=whole))
        return f"{shown}.{fraction:03d}" if fraction else shown
    if kind == 8:
        return "#ERROR"
    if kind in (2, 10):  # a number, a currency
        if number is not None:
            return _plain(number)
        if double is not None:
            return f"{double:.15g}"
    return ""


def _fill_merged(rows: list[list[str]], regions: Fields) -> None:
    """A merged cell's value in every cell it covers, as the sheets converter writes them: each
    region an origin and a size, each packed as (column << 16 | row)."""
    for region in regions.get(1, []):
        if not isinstance(region, bytes):
            continue
        found = fields(region)
        origin = fields(o) if isinstance(o := _first(found, 1), bytes) else {}
        size = fields(z) if isinstance(z := _first(found, 2), bytes) else {}
        at, span = _first(origin, 1), _first(size, 1)
        if not isinstance(at, int) or not isinstance(span, int):
            continue
        row, column = at & 0xFFFF, at >> 16
        height, width = span & 0xFFFF, span >> 16
        if row >= len(rows) or column >= len(rows[row]):
            continue
        value = rows[row][column]
        for r in range(row, min(row + height, len(rows))):
            for c in range(column, min(column + width, len(rows[r]))):
                rows[r][c] = value


def _decimal128(data: bytes) -> Decimal | None:
    """An IEEE 754-2008 decimal128 as iWork writes it: 113 bits of coefficient, a 14-bit exponent
    biased by 6176 and the sign in the top bit."""
    if len(data) != 16:
        return None
    exponent = (((data[15] & 0x7F) << 7) | (data[14] >> 1)) - 0x1820
    coefficient = int.from_bytes(data[:14], "little") | ((data[14] & 1) << 112)
    value = Decimal(coefficient).scaleb(exponent)
    return -value if data[15] & 0x80 else value


def _plain(value: Decimal) -> str:
    """A number as a sheet shows it in its general format: plainly, or in scientific notation when
    it is very large or very small."""
    try:
        value = value.normalize()
        if value and not -15 <= value.adjusted() <= 15:
            return f"{float(value):.15g}"
        text = format(value, "f")
    except (InvalidOperation, OverflowError):
        return str(value)
    return text[:-2] if text.endswith(".0") else text


def _at(runs: list[tuple[int, int | None]], index: int) -> int | None:
    found = None
    for at, target in runs:
        if at > index:
            break
        found = target
    return found


def _level_at(levels: list[tuple[int, int]], index: int) -> int:
    found = 0
    for at, level in levels:
        if at > index:
            break
        found = level
    return min(found, 8)


def _body_size(paragraphs: list[tuple[str, _Style]]) -> float | None:
    """The type size most of a text is set in."""
    weights: dict[float, int] = {}
    for line, style in paragraphs:
        if style.size:
            weights[style.size] = weights.get(style.size, 0) + len(line)
    return max(weights, key=lambda size: weights[size]) if weights else None


def _heading_level(line: str, style: _Style, body: float | None) -> int | None:
    """A heading's level: by its style's name (`Title` 1, `Heading` 2, `Heading 2` 3 ...), or for a
    style of another name (a localised one, a user's) a short line set well above the body's size."""
    named = _HEADING_STYLE.match(style.name.strip())
    if named:
        if named.group(1):
            return 1
        return min(int(named.group(3) or 1) + 1, 6)
    if style.size and body and len(line) <= 120 and not line.endswith((".", ":", ";", ",")):
        ratio = style.size / body
        if ratio >= 1.3 and not re.search(r"body|text|caption|footnote|corps|texte", style.name, re.I):
            return 1 if ratio >= 1.8 else 2 if ratio >= 1.5 else 3
    return None


def _joined_lists(blocks: list[str]) -> list[str]:
    """Consecutive list items as one block, so a list reads as a list."""
    joined: list[str] = []
    item = re.compile(r"^\s*(?:-|\d+\.) ")
    for block in blocks:
        if joined and item.match(block) and item.match(joined[-1].splitlines()[-1]):
            joined[-1] += "\n" + block
        else:
            joined.append(block)
    return joined


# ------------------------------------------------------------------ the three applications


def _open(path: Path) -> zipfile.ZipFile:
    """The package's zip, or the zip inside it: a package zipped as its folder (`Report.pages/…`)
    and the packages of 2013 to 2015 keep their index in an `Index.zip`."""
    try:
        archive = zipfile.ZipFile(path)
        names = archive.namelist()
        top = {n.split("/", 1)[0] for n in names}
        bundle = next(iter(top)) if len(top) == 1 and all("/" in n for n in names) else ""
        folder = bundle + "/" if bundle.lower().endswith((".pages", ".key", ".numbers")) else ""
        _check_readable(path, archive, folder)
        if folder + "Index.zip" in names:
            info = archive.getinfo(folder + "Index.zip")
            if info.file_size > MAX_INDEX_BYTES:
                raise refused(path, f"its index is larger than {MAX_INDEX_BYTES // 2**20} MiB")
            inner = zipfile.ZipFile(io.BytesIO(archive.read(info)))
            _check_readable(path, inner, "")
            return inner
        if folder:
            flat = io.BytesIO()
            with zipfile.ZipFile(flat, "w") as copy:
                for info in archive.infolist():
                    if info.filename.startswith(folder) and not info.is_dir():
                        if info.file_size > MAX_INDEX_BYTES:
                            continue
                        copy.writestr(info.filename[len(folder) :], archive.read(info))
            return zipfile.ZipFile(flat)
        return archive
    except zipfile.BadZipFile:
        raise refused(path, "is not an iWork package (a zip of Index/*.iwa files)") from None


def _check_readable(path: Path, archive: zipfile.ZipFile, folder: str) -> None:
    """A password-protected package is refused as such: its parts are encrypted (`.iwpv2` says how;
    an iWork '09 package writes its parts with a compression method zip does not define)."""
    names = set(archive.namelist())
    readable = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
    if (
        folder + ".iwpv2" in names
        or folder + ".iwph" in names
        or any(i.flag_bits & 1 or i.compress_type not in readable for i in archive.infolist())
    ):
        raise refused(path, ENCRYPTED)


def _joined(blocks: list[str]) -> str:
    return "\n\n".join(b for b in blocks if b.strip())


def _converter(path: Path) -> _Converter | str:
    """The package's objects to read, or an iWork '09 package's text, read already."""
    with _open(path) as archive:
        if "Index/Document.iwa" not in archive.namelist():
            return _legacy(path, archive)
        return _Converter(_Package(path, archive))


def pages_markdown(path: Path) -> str:
    converter = _converter(path)
    if isinstance(converter, str):
        return converter
    package = converter.package
    for furniture in package.of_kind(_PAGES_HEADER_FOOTER):  # repeated on every page
        for target in converter._references(package.objects[furniture].payload, 0):
            converter.seen.add(target)
    blocks: list[str] = []
    for document in package.of_kind(_PAGES_DOCUMENT):
        body = package.follow(_first(package.fields(document), 4))
        if body is not None:
            blocks += converter.storage_blocks(body)
    # what the body does not anchor: floating text boxes and shapes, footnotes, in the file's order;
    # a box repeated on each page (a letterhead's name) once
    floating: list[str] = []
    for storage in package.of_kind(_STORAGE):
        kind = _first(package.fields(storage), 1)
        if storage not in converter.seen and kind not in (_HEADER, _CELL, _CONTENTS):
            floating += converter.storage_blocks(storage)
    for table in package.of_kind(_TABLE_MODEL):
        floating += converter.table_blocks(table)
    shown = set(blocks)
    for block in floating:
        if block not in shown:
            shown.add(block)
            blocks.append(block)
    return _joined(blocks)


def keynote_markdown(path: Path) -> str:
    converter = _converter(path)
    if isinstance(converter, str):
        return converter
    package = converter.package
    slides: list[int] = []
    for show in package.of_kind(_KEYNOTE_SHOW):
        tree = fields(t) if isinstance(t := _first(package.fields(show), 3), bytes) else {}
        for node in tree.get(2, []):
            target = package.follow(node)
            if package.kind(target) == _KEYNOTE_SLIDE_NODE and target is not None:
                slide = package.follow(_first(package.fields(target), 2))
                if package.kind(slide) == _KEYNOTE_SLIDE and slide is not None:
                    slides.append(slide)
    if not slides:  # no slide tree read: the slides in the package's order, the masters left out
        slides = [s for s in package.of_kind(_KEYNOTE_SLIDE) if "Master" not in package.objects[s].member]
    pages = []
    for slide in slides:
        found = package.fields(slide)
        title = package.follow(_first(found, 5))
        heading = converter.plain_text(title) if title is not None else ""
        blocks = [f"# {heading}"] if heading else []
        body = package.follow(_first(found, 6))
        for target in ([body] if body else []) + [package.follow(v) for v in found.get(42, [])]:
            if target is not None:
                blocks += converter.drawable_blocks(target)
        note = package.follow(_first(found, 27))
        if note is not None and package.kind(note) == _KEYNOTE_NOTE:
            storage = package.follow(_first(package.fields(note), 1))
            notes = converter.storage_blocks(storage) if storage is not None else []
            if notes:
                blocks += ["Notes:", *notes]
        pages.append(_joined(blocks))
    return PAGE_BREAK.join(pages)


def numbers_markdown(path: Path) -> str:
    converter = _converter(path)
    if isinstance(converter, str):
        return converter
    package = converter.package
    parts = []
    for document in package.of_kind(_NUMBERS_DOCUMENT):
        for reference in package.fields(document).get(1, []):
            sheet = package.follow(reference)
            if sheet is None or package.kind(sheet) != _NUMBERS_SHEET:
                continue
            found = package.fields(sheet)
            blocks = [f"# {_text(_first(found, 1)).strip() or 'Sheet'}"]
            for drawable in found.get(2, []):
                target = package.follow(drawable)
                if target is not None and package.kind(target) == _TABLE_INFO:
                    model = package.follow(_first(package.fields(target), 2))
                    if model is not None and model not in converter.seen:
                        converter.seen.add(model)
                        name = _text(_first(package.fields(model), 8)).strip()
                        table = md_table(converter.table_rows(model))
                        if table:
                            blocks += [f"## {name}", table] if name else [table]
                elif target is not None:
                    blocks += converter.drawable_blocks(target)
            if len(blocks) > 1:
                parts.append(_joined(blocks))
    return "\n\n".join(parts)


# ------------------------------------------------------------------ iWork '09

_SF = "{http://developer.apple.com/namespaces/sf}"
_SFA = "{http://developer.apple.com/namespaces/sfa}"
_KEY = "{http://developer.apple.com/namespaces/keynote2}"
_LS = "{http://developer.apple.com/namespaces/ls}"
_LEGACY_FURNITURE = {
    *("section-prototypes", "headers", "footers", "header-storage", "footer-storage", "stylesheet"),
    *("printingss", "anon-styles", "master-slides", "tabular-prototypes", "theme-list"),
}


def _legacy(path: Path, archive: zipfile.ZipFile) -> str:
    """An iWork '09 package: its XML's paragraphs in order (a template's ghost text left out), a
    Keynote's slides as pages."""
    from lxml import etree

    names = archive.namelist()
    indexes = ("index.xml", "index.xml.gz", "index.apxl", "index.apxl.gz")
    member = next((n for n in indexes if n in names), None)
    if member is None:
        raise refused(path, "is not an iWork document: it holds neither Index/Document.iwa nor an index.xml")
    data = archive.read(member)
    if member.endswith(".gz"):
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as inflated:
            data = inflated.read(MAX_INDEX_BYTES + 1)
        if len(data) > MAX_INDEX_BYTES:
            raise refused(path, f"its index inflates past {MAX_INDEX_BYTES // 2**20} MiB")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    root = etree.fromstring(data, parser)
    styles = {
        s.get(f"{_SF}ident"): s.get(f"{_SF}name") or ""
        for s in root.iter(f"{_SF}paragraphstyle")
        if s.get(f"{_SF}ident")
    }

    by_id = {e.get(f"{_SFA}ID"): e for e in root.iter() if e.get(f"{_SFA}ID")}

    def furniture(node: etree._Element) -> bool:
        return any(_local_name(a) in _LEGACY_FURNITURE for a in node.iterancestors())

    def paragraphs(node: etree._Element) -> list[str]:
        """The paragraphs and tables under `node` in document order; a paragraph of a text nested
        in it (a footnote, a cell) left to its own turn."""
        blocks = []
        for p in node.iter(f"{_SF}p", f"{_SF}tabular-model"):
            above = list(p.iterancestors())
            above = above[: above.index(node)] if node in above else above
            if any(_local_name(a) in ("tabular-model", "attachments", "footnotes") for a in above):
                continue  # a cell's paragraph (its table writes it), an attachment (written where anchored)
            if any(a.tag == f"{_SF}text-storage" for a in above):
                continue  # a text inside this one (a footnote, a text box): read in its own turn
            if p.tag == f"{_SF}tabular-model":
                blocks.append(_legacy_table(p, by_id))
                continue
            anchored = [
                _legacy_table(model, by_id)
                for ref in p.iter(f"{_SF}attachment-ref")
                if (target := by_id.get(ref.get(f"{_SFA}IDREF") or "")) is not None
                for model in target.iter(f"{_SF}tabular-model")
            ]
            text = " ".join(_legacy_text(p).split())
            if not text:
                blocks += anchored
                continue
            named = _HEADING_STYLE.match(styles.get(p.get(f"{_SF}style"), "") or "")
            level = (1 if named.group(1) else min(int(named.group(3) or 1) + 1, 6)) if named else 0
            blocks.append(f"{'#' * level} {text}" if level else text)
            blocks += anchored
        return blocks

    def storages(node: etree._Element) -> list[etree._Element]:
        """The texts under `node` (not a template's nor a header's), outermost first."""
        return [
            t
            for t in node.iter(f"{_SF}text-storage")
            if not furniture(t) and t.get(f"{_SF}kind") not in ("header", "footer")
        ]

    def text_of(node: etree._Element) -> list[str]:
        """Every text under `node`, each alone (a text box's paragraphs are not the body's)."""
        return [b for storage in storages(node) for b in paragraphs(storage)]

    slides = [s for s in root.iter(f"{_KEY}slide") if not furniture(s)]
    if slides:  # Keynote: each slide its title, its other texts and tables, its notes
        pages = []
        for slide in slides:
            title = " ".join(
                " ".join(_legacy_text(p).split())
                for t in slide.iter(f"{_KEY}title-placeholder")
                for p in t.iter(f"{_SF}p")
            ).strip()
            blocks = [f"# {title}"] if title else []
            for storage in storages(slide):
                if not any(_local_name(a) in ("title-placeholder", "notes") for a in storage.iterancestors()):
                    blocks += paragraphs(storage)
            blocks += [
                _legacy_table(m, by_id)
                for m in slide.iter(f"{_SF}tabular-model")
                if not any(a.tag == f"{_SF}text-storage" for a in m.iterancestors())
            ]
            notes = [b for n in slide.iter(f"{_KEY}notes") for b in text_of(n)]
            pages.append(_joined(blocks + (["Notes:", *notes] if notes else [])))
        return PAGE_BREAK.join(pages)
    workspaces = list(root.iter(f"{_LS}workspace"))
    if workspaces:  # Numbers: each sheet under its name, its tables and text boxes in order
        parts = []
        for sheet in workspaces:
            blocks = [f"# {sheet.get(f'{_LS}workspace-name') or 'Sheet'}"]
            for item in sheet.iter(f"{_SF}tabular-model", f"{_SF}text-storage"):
                if furniture(item) or item.get(f"{_SF}kind") in ("header", "footer"):
                    continue
                if any(a.tag in (f"{_SF}tabular-model", f"{_SF}text-storage") for a in item.iterancestors()):
                    continue
                if item.tag == f"{_SF}tabular-model":
                    name = item.get(f"{_SF}name") or ""
                    table = _legacy_table(item, by_id)
                    blocks += ([f"## {name}"] if name and table else []) + [table]
                else:
                    blocks += paragraphs(item)
            if any(b.strip() for b in blocks[1:]):
                parts.append(_joined(blocks))
        return "\n\n".join(parts)
    # Pages: the body, then its text boxes and footnotes, then tables set on the page, as for a Pages
    # of 2013 or later; a template's section prototypes and the headers and footers left out
    found = storages(root)
    body = [
        s for s in found if s.get(f"{_SF}kind") == "body" and not any(a in found for a in s.iterancestors())
    ]
    blocks = [b for storage in body for b in paragraphs(storage)]
    for storage in found:
        if storage.get(f"{_SF}kind") in ("textbox", "footnote", "note"):
            blocks += paragraphs(storage)
    blocks += [
        _legacy_table(m, by_id)
        for m in root.iter(f"{_SF}tabular-model")
        if not furniture(m) and not any(a.tag == f"{_SF}text-storage" for a in m.iterancestors())
    ]
    return _joined(blocks if body else [b for b in paragraphs(root)])


def _legacy_table(model: Any, by_id: dict[str, Any]) -> str:
    """An iWork '09 table: its grid's size, then its cells, each one column on from the last (a
    row's end wrapping to the next), or moved by its `ct` (under 128: that many columns on; else to
    the next row, 256 - ct columns back); text, numbers, dates and truth values, a covered or empty
    cell holding nothing."""
    grid = model.find(f"{_SF}grid")
    source = grid.find(f"{_SF}datasource") if grid is not None else None
    try:
        width = int(grid.get(f"{_SF}numcols")) if grid is not None else 0
        height = int(grid.get(f"{_SF}numrows")) if grid is not None else 0
    except (TypeError, ValueError):
        width = height = 0
    if source is None or width <= 0 or height <= 0:
        return ""
    height = min(height, MAX_CELLS // width)
    rows = [[""] * width for _ in range(height)]
    row, column = 0, -1
    for cell in source:
        kind = _local_name(cell)
        if not kind:
            continue
        move = cell.get(f"{_SF}ct")
        if move is not None and move.isdigit():
            step = int(move)
            if step < 0x80:
                column += step if column >= 0 else step + 1
            else:
                row, column = row + 1, column - (0x100 - step)
        else:
            column += 1
            if column >= width:
                row, column = row + 1, 0
        if not (0 <= row < height and 0 <= column < width):
            break
        rows[row][column] = _legacy_value(cell, by_id)
    return md_table(rows)


def _legacy_value(cell: Any, by_id: dict[str, Any]) -> str:
    """A '09 cell's value: text (`t`), number (`n`), date (`d`), truth value (`b`), a formula's
    last result (`f`, its `r`), a pop-up menu's choice (`pm`, the cell it names)."""
    kind = _local_name(cell)
    if kind == "t":
        shown = cell.find(f"{_SF}ct")
        text = shown.get(f"{_SFA}s") if shown is not None else None
        return text if text is not None else " ".join(_legacy_text(cell).split())
    if kind in ("n", "rn"):
        value = cell.get(f"{_SF}v") or ""
        try:
            return f"{float(value):.15g}"
        except ValueError:
            return value
    if kind in ("d", "rd"):
        date = cell.get(f"{_SF}cell-date") or ""
        if date.replace(".", "", 1).lstrip("-").isdigit():  # seconds since 2001, as the IWA files keep them
            try:
                moment = _EPOCH + datetime.timedelta(seconds=float(date))
            except OverflowError:
                return date
            return moment.date().isoformat() if moment.time() == datetime.time() else moment.isoformat(" ")
        return date.replace("T00:00:00", "").replace("T", " ")
    if kind in ("b", "rb"):
        return "TRUE" if cell.get(f"{_SF}v") in ("1", "true") else "FALSE"
    if kind == "f":
        result = cell.find(f"{_SF}r")
        return _legacy_value(result[0], by_id) if result is not None and len(result) else ""
    if kind in ("rs", "rt"):
        return _legacy_value(cell.find(f"{_SF}t") if cell.find(f"{_SF}t") is not None else cell, {})
    if kind == "pm":
        chosen = cell.find(f"{_SF}proxied-cell-ref")
        target = by_id.get(chosen.get(f"{_SFA}IDREF") or "") if chosen is not None else None
        return _legacy_value(target, by_id) if target is not None and _local_name(target) != "pm" else ""
    return ""


def _local_name(node: Any) -> str:
    """An element's name without its namespace; '' for a comment or an entity."""
    tag = node.tag if isinstance(node.tag, str) else ""
    return tag.rsplit("}", 1)[-1]


def _legacy_text(node: object) -> str:
    """A paragraph's text without the ghost text a template shows until one types (walked without
    recursion: the nesting is the file's to choose)."""
    parts: list[str] = []
    stack: list[tuple[object, bool]] = [(node, False)]
    while stack:
        element, tail = stack.pop()
        if tail:
            parts.append(getattr(element, "tail", None) or "")
            continue
        if getattr(element, "tag", None) in (f"{_SF}br", f"{_SF}lnbr", f"{_SF}tab"):
            parts.append(" ")
        parts.append(getattr(element, "text", None) or "")
        for child in reversed(list(element)):  # type: ignore[call-overload]
            stack.append((child, True))
            if child.tag != f"{_SF}ghost-text" and isinstance(child.tag, str):
                stack.append((child, False))
    return "".join(parts)
