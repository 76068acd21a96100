"""The page headers and footers of a Word 97-2003 `.doc`, which docling-rs leaves out, read from the
file's header story: an OLE2 compound file's `WordDocument` and table streams, the text through the
piece table, each section's stories by the header plex ([MS-DOC] 2.4.2, 2.5.1, 2.8.35, 2.9.73).

Written here rather than with a library: the project has no OLE2 reader, and this needs little of one
(`Compound`, which the Excel 97 and PowerPoint 97 readers use too). Whatever does not add up (a
fuzzed or truncated file) gives no headers; the body is docling-rs's."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

from lore_docdb.parse.convert.common import without_page_label

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
END_OF_CHAIN = 0xFFFFFFFE
MAX_SECTORS = 1 << 20  # a chain longer than this loops (a corrupt file)


class Compound:
    """Just enough of an OLE2 compound file to read a stream by its name."""

    def __init__(self, data: bytes) -> None:
        if not data.startswith(OLE_MAGIC) or len(data) < 512:
            raise ValueError("not an OLE2 file")
        self.data = data
        self.size = 1 << struct.unpack_from("<H", data, 0x1E)[0]
        self.mini_size = 1 << struct.unpack_from("<H", data, 0x20)[0]
        if self.size not in (512, 4096) or self.mini_size != 64:
            raise ValueError("not an OLE2 file's sector sizes")
        fat_count, directory = struct.unpack_from("<II", data, 0x2C)
        self.cutoff, mini_fat, mini_count, difat, difat_count = struct.unpack_from("<IIIII", data, 0x38)
        table = list(struct.unpack_from("<109I", data, 0x4C))
        seen: set[int] = set()
        while difat < END_OF_CHAIN and difat_count and difat not in seen:  # the FAT's further sectors
            seen.add(difat)
            entries = struct.unpack_from(f"<{self.size // 4}I", self._sector(difat))
            table += entries[:-1]
            difat = entries[-1]
        self.fat: list[int] = []
        for sector in table[: min(fat_count, MAX_SECTORS)]:
            if sector < END_OF_CHAIN:
                self.fat += struct.unpack_from(f"<{self.size // 4}I", self._sector(sector))
        self.entries: dict[str, tuple[int, int]] = {}
        directory_data = self._chain(directory, self.fat, self._sector)
        self._directory: list[tuple[str, int, int, int, int, int, int]] = []
        for at in range(0, len(directory_data) - 127, 128):
            length = struct.unpack_from("<H", directory_data, at + 0x40)[0]
            name = directory_data[at : at + max(0, min(64, length) - 2)].decode("utf-16-le", "replace")
            kind = directory_data[at + 0x42]
            left, right, child = struct.unpack_from("<III", directory_data, at + 0x44)
            start, size = struct.unpack_from("<II", directory_data, at + 0x74)
            self._directory.append((name, kind, left, right, child, start, size))
            self.entries.setdefault(name.lower(), (start, size))
        self.paths = self._paths()
        root_start = struct.unpack_from("<I", directory_data, 0x74)[0]
        self.mini_stream = self._chain(root_start, self.fat, self._sector)
        self.mini_fat = list(
            struct.unpack(f"<{len(raw) // 4}I", raw)
            if (raw := self._chain(mini_fat, self.fat, self._sector) if mini_count else b"")
            else ()
        )

    def _sector(self, index: int) -> bytes:
        at = (index + 1) * self.size
        if at + self.size > len(self.data):
            raise ValueError("a sector past the end of the file")
        return self.data[at : at + self.size]

    def _mini(self, index: int) -> bytes:
        return self.mini_stream[index * self.mini_size : (index + 1) * self.mini_size]

    @staticmethod
    def _chain(start: int, fat: list[int], read: Callable[[int], bytes]) -> bytes:
        parts = []
        seen: set[int] = set()
        while start < len(fat) and start not in seen and len(seen) < MAX_SECTORS:
            seen.add(start)
            parts.append(read(start))
            start = fat[start]
        return b"".join(parts)

    def _paths(self) -> dict[str, tuple[int, int]]:
        """Every stream and storage by its path from the root (`__attach_version1.0_#00000000/
        __substg1.0_3707001F`, lower case): Outlook's files hold streams of one name in many
        storages. A storage's children are a tree of siblings under its child entry."""
        paths: dict[str, tuple[int, int]] = {}
        if not self._directory:
            return paths
        stack = [(self._directory[0][4], "")]  # the root's child, and the path it is under
        seen: set[int] = {0}
        while stack:
            index, parent = stack.pop()
            if index >= len(self._directory) or index in seen:
                continue  # no entry (0xFFFFFFFF), or a loop in a corrupt file
            seen.add(index)
            name, kind, left, right, child, start, size = self._directory[index]
            path = f"{parent}{name.lower()}"
            paths.setdefault(path, (start, size))
            stack += [(left, parent), (right, parent)]
            if kind == 1:  # a storage: its own children under it
                stack.append((child, path + "/"))
        return paths

    def children(self, path: str) -> list[str]:
        """The names of the entries directly under a storage's path ('' for the root)."""
        prefix = f"{path.lower()}/" if path else ""
        return sorted(
            p[len(prefix) :] for p in self.paths if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    def stream_at(self, path: str) -> bytes | None:
        """The stream at a path, or None where there is none."""
        found = self.paths.get(path.lower())
        if found is None:
            return None
        start, size = found
        if size < self.cutoff:
            return self._chain(start, self.mini_fat, self._mini)[:size]
        return self._chain(start, self.fat, self._sector)[:size]

    def stream(self, name: str) -> bytes:
        start, size = self.entries[name.lower()]
        if size < self.cutoff:
            return self._chain(start, self.mini_fat, self._mini)[:size]
        return self._chain(start, self.fat, self._sector)[:size]


# the header plex's stories per section: even, odd (the usual one), first page; headers then footers
_EVEN_HEADER, _HEADER, _EVEN_FOOTER, _FOOTER, _FIRST_HEADER, _FIRST_FOOTER = range(6)
_PAGE_FIELDS = re.compile(
    r"\x13\s*(PAGE|NUMPAGES|SECTIONPAGES|DATE|TIME|PRINTDATE|SAVEDATE|FILENAME)\b[^\x15]*\x15"
)
_FIELD_CODE = re.compile(r"\x13[^\x14\x15]*\x14?")  # a field's code, up to its result
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f]")
_FLAGS, _CCP_TEXT, _FC_LCB = 0x0A, 0x4C, 0x9A
_SEP_TITLE_PAGE = 0x300A  # sprmSFTitlePage


def _fc_lcb(word: bytes, index: int) -> tuple[int, int]:
    return struct.unpack_from("<II", word, _FC_LCB + 8 * index)


def _text(word: bytes, clx: bytes, start: int, end: int) -> str:
    """The characters from CP `start` to `end`, through the piece table (the Clx's Pcdt)."""
    at = 0
    while at < len(clx) and clx[at] == 1:  # Prc: formatting, skipped
        at += 3 + struct.unpack_from("<h", clx, at + 1)[0]
    if at >= len(clx) or clx[at] != 2:
        raise ValueError("no piece table")
    size = struct.unpack_from("<I", clx, at + 1)[0]
    plc = clx[at + 5 : at + 5 + size]
    count = (len(plc) - 4) // 12
    cps = struct.unpack_from(f"<{count + 1}I", plc)
    out = []
    for n in range(count):
        low, high = max(start, cps[n]), min(end, cps[n + 1])
        if low >= high:
            continue
        fc = struct.unpack_from("<I", plc, 4 * (count + 1) + 8 * n + 2)[0]
        if fc & 0x40000000:  # 8-bit text at half the offset
            begin = (fc & 0x3FFFFFFF) // 2 + (low - cps[n])
            out.append(word[begin : begin + high - low].decode("cp1252", "replace"))
        else:
            begin = fc + 2 * (low - cps[n])
            out.append(word[begin : begin + 2 * (high - low)].decode("utf-16-le", "replace"))
    return "".join(out)


def _title_pages(word: bytes, table: bytes) -> list[bool]:
    """Per section, whether its first page has a header of its own (the section's sprmSFTitlePage)."""
    fc, lcb = _fc_lcb(word, 6)  # PlcfSed
    plc = table[fc : fc + lcb]
    count = (len(plc) - 4) // 16
    found = []
    for n in range(count):
        sepx = struct.unpack_from("<i", plc, 4 * (count + 1) + 12 * n + 2)[0]
        title = False
        if 0 <= sepx < len(word) - 2:
            size = struct.unpack_from("<h", word, sepx)[0]
            grpprl, at = word[sepx + 2 : sepx + 2 + size], 0
            while at + 2 < len(grpprl):
                opcode = struct.unpack_from("<H", grpprl, at)[0]
                width = {0: 1, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2, 7: 3}.get(opcode >> 13)
                if width is None:  # a variable operand: its size first
                    width = 1 + grpprl[at + 2]
                if opcode == _SEP_TITLE_PAGE:
                    title = bool(grpprl[at + 2])
                at += 2 + width
        found.append(title)
    return found


def _lines(story: str) -> list[str]:
    """A story's paragraphs as lines, page-number and date fields left out with a page number's label
    (`Page 3 of 12`), other fields' results kept."""
    lines = []
    for paragraph in re.split(r"[\r\x07\x0b\x0c]", story):
        numbered = bool(_PAGE_FIELDS.search(paragraph))
        paragraph = _FIELD_CODE.sub("", _PAGE_FIELDS.sub("", paragraph)).replace("\x15", "")
        text = without_page_label(" ".join(_CONTROLS.sub(" ", paragraph).split()), numbered)
        if re.search(r"[^\W\d_]", text):
            lines.append(text)
    return lines


def word97_headers(data: bytes) -> tuple[list[str], list[str]]:
    """The lines of a Word 97 document's page headers and of its footers, each once and in section
    order (the first page's before the usual one's); even pages' only where the document sets them
    apart. ([], []) for anything else or a file this cannot read."""
    try:
        compound = Compound(data)
        word = compound.stream("WordDocument")
        flags = struct.unpack_from("<H", word, _FLAGS)[0]
        if flags & 0x0100:  # encrypted
            return [], []
        table = compound.stream("1Table" if flags & 0x0200 else "0Table")
        ccp_text, ccp_footnotes, ccp_headers = struct.unpack_from("<iii", word, _CCP_TEXT)
        fc, lcb = _fc_lcb(word, 11)  # PlcfHdd
        if ccp_headers <= 0 or lcb < 8:
            return [], []
        cps = struct.unpack_from(f"<{lcb // 4}I", table, fc)
        clx_fc, clx_lcb = _fc_lcb(word, 33)
        clx = table[clx_fc : clx_fc + clx_lcb]
        base = ccp_text + ccp_footnotes
        dop_fc, dop_lcb = _fc_lcb(word, 31)
        even_pages = dop_lcb > 0 and bool(table[dop_fc] & 1)  # fFacingPages
        titles = _title_pages(word, table)
        headers: list[str] = []
        footers: list[str] = []
        for section in range((len(cps) - 1 - 6) // 6):
            shown = [_HEADER, _FOOTER]
            if section < len(titles) and titles[section]:
                shown += [_FIRST_HEADER, _FIRST_FOOTER]
            if even_pages:
                shown += [_EVEN_HEADER, _EVEN_FOOTER]
            for story in sorted(shown, key=lambda s: s not in (_FIRST_HEADER, _FIRST_FOOTER)):
                at = 6 + 6 * section + story
                text = _text(word, clx, base + cps[at], base + cps[at + 1])
                into = footers if story in (_FOOTER, _EVEN_FOOTER, _FIRST_FOOTER) else headers
                into += [line for line in _lines(text) if line not in into]
        return headers, footers
    except (ValueError, KeyError, IndexError, struct.error, RecursionError):
        return [], []
