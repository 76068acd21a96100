"""Helpers shared by the converters: text decoding and Markdown tables."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

PAGE_BREAK = "\f"  # between two pages of a paged document (PDF)
_SPACES = re.compile(r"\s+")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
# A table of contents' dot leaders (`Preface . . . . . . xi`, `Authors.......xi`): four dots or more
_LEADER = re.compile(r"[ \t]*(?:\.[ \t]?){4,}[ \t]*")


def decode(data: bytes, declared: str | None = None) -> str:
    """UTF-8 (BOM or not), UTF-32 and UTF-16 with a BOM, UTF-16 without one (told by its zero bytes),
    the `declared` encoding (an HTML page's charset) when the bytes read in it, GB18030 when it reads
    as Chinese, else the encoding charset-normalizer finds (Latin-1, Shift-JIS,
    Cyrillic code pages...), else lossy UTF-8; UTF-8 that was once read as Latin-1 is mended."""
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):  # before UTF-16: the same first bytes
        try:
            return data.decode("utf-32")
        except UnicodeDecodeError:
            pass
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    wide = utf16_without_bom(data)
    if wide:
        try:
            return data.decode(wide)
        except UnicodeDecodeError:
            pass
    try:
        return mend_mojibake(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        pass
    if declared:
        try:
            return data.decode(declared)
        except (UnicodeDecodeError, LookupError):
            pass
    try:  # Chinese text in GB18030/GBK: short samples fool charset-normalizer, so check it first
        chinese = data.decode("gb18030")
    except UnicodeDecodeError:
        chinese = ""
    non_ascii = [c for c in chinese if ord(c) > 0x7F]
    if (
        non_ascii
        and sum(1 for c in non_ascii if _CJK.match(c)) >= 0.8 * len(non_ascii)
        and not _japanese_as_chinese(data, non_ascii)
    ):
        return chinese
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data[: 1 << 20]))  # the first MiB is enough to choose the encoding
    if matches:
        # of the code pages that read the bytes with the least chaos, the one whose text reads most
        # like a language; Windows-1252 where several do equally (cp1250 reads `très` as `trčs`)
        least = min(m.chaos for m in matches)
        calm = [m for m in matches if m.chaos == least]
        best = max(m.coherence for m in calm)
        top = [m for m in calm if m.coherence == best]
        encoding = next((m.encoding for m in top if m.encoding == "cp1252"), top[0].encoding)
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            pass
    return data.decode("utf-8", errors="replace")


def _in_gb2312(char: str) -> bool:
    try:
        char.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return True


def _japanese_as_chinese(data: bytes, chinese: list[str]) -> bool:
    """Shift-JIS (Windows' Japanese) bytes that also read as GB18030: Japanese names and words in
    kanji alone decode there as rare characters (`名前` as `柤慜`). Chinese text is mostly written in
    GB2312's common characters; when most of the reading is not, and the bytes are Shift-JIS, the
    encoding is left to charset-normalizer."""
    common = sum(1 for c in chinese if _in_gb2312(c))
    if common >= 0.5 * len(chinese):
        return False
    try:
        data.decode("cp932")
    except UnicodeDecodeError:
        return False
    return True


def utf16_without_bom(data: bytes) -> str | None:
    """`utf-16-le` or `utf-16-be` for text saved as UTF-16 without a byte order mark: most of its
    characters are ASCII, so one byte of each pair is zero, at odd offsets (LE) or even ones (BE)."""
    sample = data[:4096]
    pairs = len(sample) // 2
    if pairs < 4 or len(data) % 2:
        return None
    even = sample[0 : 2 * pairs : 2].count(0)
    odd = sample[1 : 2 * pairs : 2].count(0)
    if odd >= 0.6 * pairs and even <= 0.05 * pairs:
        return "utf-16-le"
    if even >= 0.6 * pairs and odd <= 0.05 * pairs:
        return "utf-16-be"
    return None


# UTF-8 read as Latin-1 or Windows-1252 and saved again as UTF-8 (`â€“` or `â` + C1 controls for `–`):
# a lead byte's letter followed by continuation bytes' characters, one of them a C1 control or a
# Windows-1252 punctuation mark that no text puts there
_MOJIBAKE = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]{1,3}"
)
_C1_OR_CP1252 = re.compile("[\u0080-\u009f\u0152-\u2122]")


def mend_mojibake(text: str) -> str:
    """Each run of UTF-8 bytes once read as Latin-1/Windows-1252 back to its character (`â€™` ->
    `’`); a run is mended only where its bytes are whole UTF-8 and it holds a C1 control or a
    Windows-1252 mark, which Latin-1 text never has after such a letter (`Â£`, `Ã©` stay as written)."""
    if not _MOJIBAKE.search(text):
        return text

    def mend(match: re.Match[str]) -> str:
        run = match.group()
        if not _C1_OR_CP1252.search(run[1:]):
            return run
        raw = bytearray()
        for char in run:
            try:
                raw += char.encode("cp1252")
            except UnicodeEncodeError:
                if ord(char) > 0xFF:
                    return run
                raw.append(ord(char))  # a C1 control: Latin-1's byte (cp1252 leaves five undefined)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return run

    return _MOJIBAKE.sub(mend, text)


_BARE_PIPE = re.compile(r"(?<!\\)\|")


class ExtractionError(ValueError):
    """The file could not be turned into text."""


# The reader of a file found inside another (an e-mail's attachment): `extract.enclosed_markdown`, handed
# to the converters that meet one, which cannot import `extract` (it imports them). It takes a label
# (`Attachment`), the file's name and its bytes, and gives its text under a heading, or None.
Enclosed = Callable[[str, str, bytes], str | None]
MAX_ATTACHMENTS = 16  # attachments read per message; the names of the others are still listed


ENCRYPTED = "is password-protected (encrypted); save it without a password to parse it"


def refused(path: Path, reason: str) -> Exception:
    """The extraction error a converter raises when the file itself is why it cannot be read (a
    password, a format too old): its reason as it is, not a library's exception wrapped in
    `could not be read as .xls: PasswordError: ...`."""
    return ExtractionError(f"{path.name}: {reason}")


@contextmanager
def rust_panics() -> Iterator[None]:
    """A Rust library's panic (calamine, docling-rs on a corrupt file) as a RuntimeError: pyo3 raises
    it as `PanicException`, a BaseException the extraction child did not catch, so one broken file
    took the child down with it."""
    try:
        yield
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise
        raise RuntimeError(f"the parser gave up on it ({' '.join(str(exc).split())[:200]})") from None


# what a page number's line says besides its numbers, in the languages Word is written in most
_PAGE_LABELS = frozenset(
    "page pages pg seite blatt página pagina pág side sida strona str страница стр".split()
)
_PAGE_WORDS = _PAGE_LABELS | {"", "p", "of", "von", "de", "sur", "di", "av", "af", "z", "из"}
_LABEL_PUNCTUATION = ".:|/-–—()[]"


def without_page_label(text: str, numbered: bool) -> str:
    """A page header's or footer's line without its page number's label at the end (`Acme Ltd Page
    of 14` is `Acme Ltd`), whose number, a field, was left out (`numbered`) or is written in it."""
    words = text.split()
    label = len(words)
    while label:
        word = words[label - 1].lower().strip(_LABEL_PUNCTUATION)
        if word not in _PAGE_WORDS and not word.isdigit():
            break
        label -= 1
    tail = [w.lower().strip(_LABEL_PUNCTUATION) for w in words[label:]]
    if any(w in _PAGE_LABELS for w in tail) and (numbered or any(w.isdigit() for w in tail)):
        words = words[:label]
    return " ".join(words)


def cell_text(value: object) -> str:
    """One table cell on one line: whitespace collapsed, `|` escaped once (a cell passed twice keeps
    `\\|`, not `\\\\|`), whole floats without `.0`, others to 15 significant digits as Excel keeps
    them (`0.1+0.2` is `0.3`, not `0.30000000000000004`), a time to the second (a sheet's times are fractions
    of a day: `06:15:00.687000` is `06:15:01`), NUL characters left out (a string a writer stored as
    UTF-16 but flagged as 8-bit reads `H\\x00i\\x00`: the letters are the text)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, float):
        value = float(f"{value:.15g}")  # as a sheet shows it: 15 digits, not binary noise
    if isinstance(value, datetime.datetime | datetime.time) and value.microsecond:
        value = _to_second(value)
    return _BARE_PIPE.sub(r"\\|", _SPACES.sub(" ", str(value).replace("\x00", "")).strip())


def _to_second(value: datetime.datetime | datetime.time) -> datetime.datetime | datetime.time:
    if isinstance(value, datetime.datetime):
        return (value + datetime.timedelta(microseconds=500_000)).replace(microsecond=0)
    if value >= datetime.time(23, 59, 59, 500_000):
        return value.replace(microsecond=0)  # a time of day does not round past midnight
    moment = datetime.datetime.combine(datetime.date.min, value)
    return (moment + datetime.timedelta(microseconds=500_000)).replace(microsecond=0).time()


def md_table(rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table, its first row the header; empty rows and columns dropped."""
    cells = [[cell_text(c) for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    keep = [j for j in range(width) if any(row[j] for row in cells)]
    cells = [[row[j] for j in keep] for row in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(keep)]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)


def tidy_markdown(markdown: str) -> str:
    """Markdown from another converter without table padding: `|  a   |` becomes `| a |` and a rule
    `|-----|` becomes `|---|`, so the spaces and dashes cost no tokens in a chunk."""
    lines = []
    for line in markdown.replace("\xa0", " ").splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            if _TABLE_RULE.match(stripped):
                line = "|" + "---|" * (stripped.count("|") - 1)
            else:
                line = "| " + " | ".join(c.strip() for c in stripped[1:-1].split(" | ")) + " |"
                line = _SPACES.sub(" ", line)
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def drop_leaders(text: str) -> str:
    """Dot leaders (`Preface . . . . . . . . xi`) become one ` … `: as dots they filled passages and
    quoted answers with punctuation, and each dot was a token."""
    return _LEADER.sub(" … ", text)
