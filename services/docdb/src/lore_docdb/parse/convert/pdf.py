"""PDF text with pypdfium2: pdfium's reading order (a page laid out in frames written out of order read
in bands, top to bottom: `pdf_order.py`), headings (larger type, bold, or italic or another
font on a line of their own, and the titles the PDF's outline lists, at its levels) as `#` lines,
paragraphs set apart where the page sets them apart (by space, a first line set in, a short last
line, a list's marker, another type), running headers, footers and page numbers dropped, words
hyphenated at a line end joined again, a font read as glyph places in the Macintosh order read
right, pages separated by a form feed. A page whose
drawing has straight rules in both directions goes through pdfplumber's table finder, fed with the
rules pdfium reads (pdfminer never parses the page), and each table it finds becomes a Markdown table
where it stands on the page. A page with no text layer but a picture on it (a scan) is rendered at
200 dpi and read by OCR (`ocr.py`), and so is a page whose text layer is mostly characters no text
holds (a font without a Unicode map, a scan's broken OCR layer), once the Macintosh order is read right."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

from lore_docdb.parse.convert.common import ENCRYPTED, PAGE_BREAK, md_table, refused
from lore_docdb.parse.convert.pdf_order import read_in_order


class NeedsOCR(Exception):
    """A page is a scan (or its text layer unreadable) and this process may not load the OCR engine
    (the extraction child that has not loaded it asks the service for one that has)."""


OCR_DPI = 200  # 150 loses the spaces between words of a bilevel 150 dpi scan
MIN_TEXT_CHARS = 8  # a page with fewer characters in its text layer than this, and a picture, is a scan
ocr_allowed = True  # whether a scanned page may load the OCR engine in this process
UNREADABLE_SHARE = 0.5  # of a page's visible characters no text holds, above which OCR reads the page
MIN_UNREADABLE_CHARS = 20  # and at least this many: a page of a few icons or odd bullets keeps its text
MAX_OBJECTS = 20_000  # a page drawn with more (a map, a chart) is not searched for tables nor reordered
MIN_TABLE_TEXTS = 3  # a ruled box holding fewer different texts (a banner, a title beside a logo) is no table
PARAGRAPH_WORDS = 40  # a cell of this many words is a paragraph; a "table" mostly of them is a page's boxes
RULED_ROWS = 3  # times a ruled table's rows that aligned text in its place must have to stand instead
EXTRA_COLUMN = 20.0  # points: aligned text this far beyond a ruled table's side has a column it lacks
MAX_SEGMENTS = 400  # a path of more pieces is a drawing, not a table's rules

MAX_FURNITURE_WORDS = 12  # a running header or footer is short; a repeated paragraph is content
EDGE_LINES = 2  # lines at the top and at the bottom of a page that may be a running header or footer
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
_PAGE_NUMBER = re.compile(r"(page\s*)?#(\s*(of|/)\s*#)?|[-–—]\s*#\s*[-–—]|[ivx]{1,5}", re.IGNORECASE)


def _shape(line: str) -> str:
    """A line with its digits as `#`, without a heading's marks: a running header is the same line on
    every page but its number, whether or not it was taken for a heading."""
    return _DIGITS.sub("#", _SPACES.sub(" ", _HEADING.sub("", line.strip()).lower()))


# Control characters a font without a Unicode map yields for its glyphs (form feeds among them, which
# would count as page breaks): they carry no text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _page_lines(raw: str) -> list[str]:
    # pdfium ends lines with \r\n and marks a hyphen it saw at a line end as U+FFFE: join the word again
    text = raw.replace("\ufffe\r\n", "").replace("\ufffe\n", "").replace("\ufffe", "")
    text = _CONTROL.sub("", text)
    if _RTL.search(text):
        text = _SCRIPTS_MEET.sub(" ", text)
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    if _CJK_CHAR.search(text):
        lines = [_letter_spacing_undone(line) for line in lines]
    return _marks_joined(lines) if _MARKS_ONLY.search(text) else lines


# Chinese and Japanese characters, kana and their full-width punctuation (not Hangul: Korean sets
# spaces between its words)
_CJK_CHAR = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\u2026]")
LETTER_SPACED = 0.8  # of a line's words, single characters: the line is set letter by letter


def _letter_spacing_undone(line: str) -> str:
    """A Chinese or Japanese line set with a space after every character (`关 于 红 军`, as a title or
    a spaced-out contents page is) without those spaces; a line of words (`数据 分析`) as it is."""
    words = line.split(" ")
    singles = sum(1 for w in words if len(w) == 1)
    if len(words) < 4 or singles < LETTER_SPACED * len(words) or not _CJK_CHAR.search(line):
        return line
    out = words[0]
    for before, word in pairwise(words):  # a space stays beside a Latin letter, a digit, a `#`
        joined = len(before) == len(word) == 1 and before > "\x7f" and word > "\x7f"
        out += ("" if joined and (_CJK_CHAR.match(before) or _CJK_CHAR.match(word)) else " ") + word
    return out


# A line of Thai or Lao marks alone: pdfium puts a vowel or tone mark set above its letter on a line
# of its own (`ต` / `ั้` / `งฉาก` for `ตั้งฉาก`); these scripts set no space between words, so the
# letter before and the text after are one word with the marks.
_MARKS_ONLY = re.compile(r"(?m)^[\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd]+\r?$")


def _marks_joined(lines: list[str]) -> list[str]:
    """Each line of marks alone put back with the letter it sits on (the previous line's last) and
    the rest of its word (the next line), as one line."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if out and out[-1] and _MARKS_ONLY.fullmatch(line) and index + 1 < len(lines):
            out[-1] += line + lines[index + 1]
            index += 2
            continue
        out.append(line)
        index += 1
    return out


_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")  # Hebrew and Arabic letters
# A Hebrew or Arabic letter against a Latin one: pdfium drops the space where a line's direction turns
# ("R وPython" for "R و Python"); the two scripts never share a word.
_RTL_LETTER = "[\u05d0-\u05ea\u0620-\u064a\u066e-\u06d3\u06fa-\u06ff\ufb1d-\ufdfb\ufe70-\ufefc]"
_SCRIPTS_MEET = re.compile(rf"(?<={_RTL_LETTER})(?=[A-Za-z])|(?<=[A-Za-z])(?={_RTL_LETTER})")


_ALEFS = "\u0622\u0623\u0625\u0627\u0671"  # alef and its forms with hamza, madda, wasla
_LAM, _HEH = "\u0644", "\u0647"


def _ligatures_in_order(textpage: Any, raw: str) -> str:
    """Right-to-left text whose ligatures come out of pdfium reversed, which some PDFs' maps write:
    the letters of one glyph, which share its box, put back in their logical order. Only a group
    that cannot be in order is turned: a lam-alef read alef first (`ال` sharing one glyph; alef never
    joins the letter after it, so the article's two letters never do), and `Allah`'s ligature read
    from its heh. Other ligatures (lam-khah in `الخطوط`) and a lam-alef already in order (`لا`)
    are left as pdfium reads them: turning every shared box broke the PDFs whose maps are right."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    if len(raw) != textpage.count_chars() or not _RTL.search(raw):
        return raw
    chars = list(raw)
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    boxes: list[tuple[float, ...] | None] = []
    for index, char in enumerate(chars):
        found = _RTL.match(char) and pdfium_c.FPDFText_GetCharBox(
            textpage.raw, index, left, right, bottom, top
        )
        boxes.append((left.value, right.value, bottom.value, top.value) if found else None)
    index = 0
    while index < len(chars):
        end = index + 1
        while end < len(chars) and boxes[index] is not None and boxes[end] == boxes[index]:
            end += 1
        group = chars[index:end]
        if len(group) > 1 and group[-1] == _LAM and (group[0] in _ALEFS or group[0] == _HEH):
            chars[index:end] = reversed(group)
        index = end
    return "".join(chars)


# Codes of a page's characters that text never holds: a font whose codes pdfium read as characters
_SHIFT_HINT = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f]")
SHIFTED_CONTROLS = 0.05  # of a font's characters on a page: spaces, digits and stops read as controls
SHIFTED_LOWER = 0.6  # of its letters, once read in the Macintosh order, in lower case at least
SHIFTED_VOWELS = (0.2, 0.6)  # and this share of them vowels: words of a Latin-script language
# The standard Macintosh glyph order (TrueType's 'post' table, format 1) from 226 to 255; 98 to 225
# follow Mac OS Roman's 128 to 255, 3 to 97 ASCII's 32 to 126.
_MAC_GLYPHS_TAIL = "ŁłŠšŽž¦ÐðÝýÞþ−×¹²³½¼¾₣ĞğİŞşĆćČ"


def _mac_glyph(code: int) -> str:
    """The character of a glyph in the standard Macintosh order, by its index; "" past its end."""
    if 3 <= code <= 97:
        return chr(code + 29)
    if 98 <= code <= 225:
        return bytes([code - 98 + 0x80]).decode("mac_roman")
    if 226 <= code <= 255:
        return _MAC_GLYPHS_TAIL[code - 226]
    return ""


def _unshifted(textpage: Any, raw: str) -> str:
    """The page's text with the fonts whose glyph indexes pdfium read as characters read right: a
    TrueType font without a Unicode map whose codes are its glyphs' places in the standard Macintosh
    order ("'HXWVFKH" for "Deutsche", its spaces, digits and stops control codes). Only a page
    holding control codes is looked at; a font's characters are read again where many of them are
    control codes and, read in that order, most of their letters are lower case and a Latin
    language's share of them vowels, which the text as pdfium read it is not. The page's text is
    then every character pdfium counts, one for one (pdfium's text leaves out the code of the
    space)."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    if not _SHIFT_HINT.search(raw):
        return raw
    count = textpage.count_chars()
    codes = [pdfium_c.FPDFText_GetUnicode(textpage.raw, i) for i in range(count)]
    buffer, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    fonts: list[str] = []
    for index, code in enumerate(codes):
        name = ""
        if code not in (10, 13) and pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, buffer, 128, flags):
            name = bytes(buffer.value).decode("latin-1")
        fonts.append(name)
    shifted: set[str] = set()
    for name in set(fonts) - {""}:
        own = [code for code, font in zip(codes, fonts, strict=True) if font == name]
        controls = sum(1 <= code < 32 for code in own)
        read = "".join(_mac_glyph(code) for code in own)
        letters = [c for c in read if c.isalpha()]
        before = [chr(code) for code in own if chr(code).isalpha()]
        if len(own) < 12 or controls < SHIFTED_CONTROLS * len(own) or len(letters) < 8:
            continue
        lower = sum(c.islower() for c in letters) / len(letters)
        vowels = sum(c.lower() in "aeiouyäöüàáâèéêìíîòóôùúû" for c in letters) / len(letters)
        was_lower = sum(c.islower() for c in before) / max(1, len(before))
        if lower >= SHIFTED_LOWER and was_lower < 0.5 and SHIFTED_VOWELS[0] <= vowels <= SHIFTED_VOWELS[1]:
            shifted.add(name)
    if not shifted:
        return raw
    chars = []
    for i, code in enumerate(codes):
        if fonts[i] not in shifted:
            chars.append(chr(code))
        elif pdfium_c.FPDFText_IsGenerated(textpage.raw, i) != 1:
            chars.append(_mac_glyph(code) or chr(code))
        elif 3 in codes[max(0, i - 1) : i + 2]:
            chars.append("\x00")  # pdfium's space beside the font's own: dropped with the control codes
        else:
            chars.append(chr(code))
    return "".join(chars)


# A letter standing alone that is no word of its own in English ("Test i ng"): a line where a space
# may have been made of the room a narrow letter leaves in a fixed pitch
_LONE_LETTER = re.compile(r"(?<![^\W_])[^\W\daAI_](?![^\W_])")
PITCH_TOLERANCE = 0.25  # points: two steps from one letter's origin to the next this close are alike
PITCH_SHARE = 0.8  # of a line's steps at its usual step at least: a line set at a fixed pitch
MIN_PITCH_STEPS = 4
_DOUBLED = re.compile(r"([^\W\d_])(?=\1)")
LIGATURE_SHIFT = 0.02  # of the type's height: two letters this close are one glyph's (ff), not two
OVERDRAWN = 0.12  # of the type's height: a like letter this close after a letter is that one drawn again
WORD_STEP = 1.5  # a step this many pitches long or more parts two words of a line set at a fixed pitch


def _drawn_text(textpage: Any, raw: str) -> str:
    """The page's text as its reader sees it: without the letters drawn twice over themselves (faked
    bold) and the spaces pdfium made of the room narrow letters leave in a fixed pitch."""
    if len(raw) != textpage.count_chars():
        return raw
    drop = _overdrawn(textpage, raw) | _pitch_spaces(textpage, raw)
    return "".join(c for i, c in enumerate(raw) if i not in drop) if drop else raw


def _pitch_spaces(textpage: Any, raw: str) -> set[int]:
    """The spaces pdfium made up between letters set at a fixed pitch (each letter at the same step
    from the one before, as some producers and faked bold draw them): a narrow letter (`i`, `l`,
    `t`) leaves room that reads as a space ("Test i ng"). Only lines with a lone letter that is no
    word are looked at, a pdfium call per character there."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    drop: set[int] = set()
    if not _LONE_LETTER.search(raw):
        return drop
    x, y = ctypes.c_double(), ctypes.c_double()
    start = 0
    for line in raw.split("\r\n"):
        end = start + len(line)
        if _LONE_LETTER.search(line):
            letters: list[tuple[int, float]] = []  # the line's characters but spaces: index, origin's x
            for index in range(start, end):
                if not raw[index].isspace() and pdfium_c.FPDFText_GetCharOrigin(textpage.raw, index, x, y):
                    letters.append((index, x.value))
            made = [  # per step from one letter to the next, its length and the spaces pdfium made in it
                (
                    b[1] - a[1],
                    [
                        i
                        for i in range(a[0] + 1, b[0])
                        if raw[i] == " " and pdfium_c.FPDFText_IsGenerated(textpage.raw, i) == 1
                    ],
                )
                for a, b in pairwise(letters)
            ]
            drop.update(_pitch_made(made))
        start = end + 2
    return drop


def _overdrawn(textpage: Any, raw: str) -> set[int]:
    """Letters drawn again over themselves a little aside (faked bold: "reportts") that pdfium did not
    take for one: of two like letters one after the other on a line, the second where its origin is
    less than OVERDRAWN of the type's height from the first's, and not at the same point (a ligature's
    letters, "ff", share one); a real "ll" or "ii" is set a narrow letter's width apart, a fifth of
    the type's height or more. Only pairs of like letters are looked at."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    x, y, x2, y2 = (ctypes.c_double() for _ in range(4))
    box = pdfium_c.FS_RECTF()
    drop: set[int] = set()
    for match in _DOUBLED.finditer(raw):
        first = match.start()
        if _RTL.match(raw[first]) or not (  # joined scripts: letters drawn over each other
            pdfium_c.FPDFText_GetCharOrigin(textpage.raw, first, x, y)
            and pdfium_c.FPDFText_GetCharOrigin(textpage.raw, first + 1, x2, y2)
            and pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, first, box)
        ):
            continue
        height, step = box.top - box.bottom, abs(x2.value - x.value)
        if LIGATURE_SHIFT * height < step < OVERDRAWN * height and abs(y2.value - y.value) < 0.1 * height:
            drop.add(first + 1)
    return drop


def _pitch_made(steps: list[tuple[float, list[int]]]) -> list[int]:
    """Of a line's steps from letter to letter (a step's length and the spaces pdfium made in it), the
    spaces to drop: where most steps are one pitch, the pitch of letters in words (most steps of
    that pitch join letters, or some do and wider steps part words), not of one-letter tokens on a
    grid ("C C L"), the made spaces of the steps of that pitch. A word's space takes a pitch of its
    own (a wider step) and stays."""
    if len(steps) < MIN_PITCH_STEPS:
        return []
    pitch = sorted(length for length, _ in steps)[len(steps) // 2]
    at_pitch = [spaces for length, spaces in steps if abs(length - pitch) <= PITCH_TOLERANCE]
    spaced = sum(bool(spaces) for spaces in at_pitch)
    words_apart = any(length > WORD_STEP * pitch for length, _ in steps)
    if (
        pitch <= 0
        or len(at_pitch) < PITCH_SHARE * len(steps)
        or spaced == len(at_pitch)  # no letters joined at the pitch: tokens on a grid
        or (2 * spaced >= len(at_pitch) and not words_apart)
    ):
        return []
    return [i for spaces in at_pitch for i in spaces]


_HEADING = re.compile(r"^(#{1,6}) ")
LABEL_WORDS = 5  # fewer words than this under a "heading" before the next one: a label in a figure


def _labels(lines: list[str], kept: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The page's lines with the headings that head almost nothing unmarked: a heading with fewer than
    LABEL_WORDS words under it before the next heading of its level, or any such heading on a page
    that has four of them, is a label of a diagram or a chart (boxes of large or bold type); as
    headings, labels would make passages of a word or two. A heading at the page's end is kept (its
    text is on the next page), and so is one over a deeper heading on an ordinary page, and the one
    heading of a page straight over another of its level (a title over its subtitle, a subtitle
    over the first section), and any the outline lists (`kept`)."""
    heads = [(i, len(m.group(1))) for i, line in enumerate(lines) if (m := _HEADING.match(line))]
    words_under: dict[int, int] = {}
    tiny: dict[int, bool] = {}
    for (at, level), (following, next_level) in pairwise(heads):
        words_under[at] = sum(len(line.split()) for line in lines[at + 1 : following])
        if words_under[at] < LABEL_WORDS:
            tiny[at] = next_level == level
    plain = {at for at, same_level in tiny.items() if same_level or len(tiny) >= 4}
    if len(plain) == 1 and len(tiny) < 4 and not any(words_under[at] for at in plain):
        plain = set()
    plain = {at for at in plain if lines[at] not in kept}  # the outline's headings are headings
    return [_HEADING.sub("", line) if i in plain else line for i, line in enumerate(lines)]


def _edges(lines: list[str]) -> list[int]:
    """Indexes of the first and last non-empty lines of a page."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def _has_picture(page: object) -> bool:
    import pypdfium2.raw as pdfium_c

    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))  # type: ignore[attr-defined]


# Characters a text layer holds where it cannot say which letter a glyph is: U+FFFD, the private use
# area (a symbol font's codes, a font's own glyph names) and C0 and C1 control codes but tab and line ends
_UNREADABLE = re.compile(r"[\ufffd\ue000-\uf8ff\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Blanks, which no reader sees: white space (but the controls above that Python counts as such), the
# NUL `_unshifted` puts for a space it drops and pdfium's mark of a hyphen at a line's end
_BLANK = re.compile(r"[^\S\x0b\x0c\x1c-\x1f\x85]|[\x00\ufffe]")


def _unreadable(raw: str) -> bool:
    """Whether a page's text layer is mostly characters that say nothing of the glyphs drawn (a font
    without a Unicode map and a symbolic encoding, a scan's mojibake OCR layer): such a page is read
    by OCR as a scan is. A few odd bullets or icons among words are not enough."""
    unreadable = len(_UNREADABLE.findall(raw))
    if unreadable < MIN_UNREADABLE_CHARS:
        return False
    return unreadable > UNREADABLE_SHARE * (len(raw) - len(_BLANK.findall(raw)))


def _ocr_page(page: object) -> str:
    if not ocr_allowed:
        raise NeedsOCR
    from lore_docdb.parse.convert.ocr import ocr_image

    bitmap = page.render(scale=OCR_DPI / 72, grayscale=True)  # type: ignore[attr-defined]
    try:
        return ocr_image(bitmap.to_pil())
    finally:
        bitmap.close()


class _Style(NamedTuple):
    """A line of a page as the heading guess sees it."""

    length: int  # characters, the line's ends stripped
    size: float  # its type size (the height of its first characters' font boxes), in half points
    bold: bool  # its first and last characters are bold (by the font's weight or its name)
    italic: bool
    font: str  # the font of its first and last characters (without a subset's prefix), "" if they differ
    ends: bool  # it ends a sentence (or is empty): a line after it starts a block of its own
    top: float = 0.0  # the top of its first letter's box, from the page's bottom
    named_bold: bool = False  # its first and last characters' font names say bold
    lead: int = 0  # words of a label in smaller type that opens it ("Chapter 1." before a title)
    turn: int = 0  # quarter turns its first letter is set at (an arXiv stamp up the margin: 3)
    end: float = 0.0  # the top of its last letter's box: lower than `top` where it runs over two lines
    left: float = 0.0  # the left side of its first character's box
    right: float = 0.0  # the right side of its last character's box
    word: float = 0.0  # the width of its first word (of its first letter, in a script without spaces)
    marker: bool = False  # it opens with a list's marker (a bullet, `1.`, `(a)`)


class _Mark(NamedTuple):
    """A line taken for a heading: its level, its type size, whether it is larger than the body's,
    and the outline entry it is (-1 where only its type says it is a heading)."""

    level: int
    size: float
    larger: bool
    entry: int = -1


PAGE_BODY_CHARS = 400  # a page's own body type, smaller than the document's, sets this much text at least
MAX_LABEL_WORDS = 3  # a label that opens a heading in smaller type ("Chapter 12.", "Part II") is short
FACE_HEADING_WORDS = 12  # a heading told only by its italics or font, in body type, is short
NOMINAL_SPREAD = 10.0  # a font size this many times its box height or as much less: drawn at its own scale
LABEL_SIZE = 0.7  # a line's first letters in type smaller than this share of its last letters': a label
VIEW_SAMPLE = 64  # characters whose angle tells which way a page's text runs
_BULLET = re.compile(r"[-–•●▪■◦‣⁃∙·*]\s")
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
_OPENS_LOWER = re.compile(r"(?:[\d.]+\s+)?[a-z]{2,}\b")  # "and the ...", "woman": no title's first word
_FIGURE = re.compile(r"[-+(]?[\d.,%]*\d[\d.,%)]*")
_GOES_ON = (",", ";", ":", ".", ")", "]", "}")  # a line that starts so goes on from the text before it
_SENTENCE_END = (".", ",", ";", ":", "\ufffe")
_BOLD_NAME = re.compile(r"bold|black|heavy|demi|semibold|^(cm|sf|ec|lm|tc)bx|[-,](bd|b)$", re.IGNORECASE)
_ITALIC_NAME = re.compile(r"italic|oblique|^(cm|sf|ec|lm)(ti|sl)\d", re.IGNORECASE)
_MONO_NAME = re.compile(r"mono|courier|consol|code|^(cm|sf|ec|lm|dc)tt", re.IGNORECASE)
MIXED_LETTERS = 12  # a line with this many letters or more is asked for its middle letter's face too
# a list item's marker: a bullet, a number or letter with a stop or a bracket (`1.`, `a)`, `(iv)`)
_MARKER = re.compile(
    r"[-–•●▪■◦‣⁃∙·*○□☐➢►✓\x80-\x9f\ue000-\uf8ff]|(?:\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)])\s"
)
# a line opening in a script written without spaces (Chinese, Japanese): its first "word" is a letter
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_CODE = re.compile(r"\w\(|[_=;{}<>`]")  # a call, an identifier, an assignment: code, not a title
_FONT_ITALIC = 1 << 6  # the PDF font descriptor's Italic flag
_FONT_FORCE_BOLD = 1 << 18


def _font(textpage: Any, index: int, buffer: Any, flags: Any) -> tuple[str, bool, bool]:
    """A character's font name (its subset prefix `ABCDEF+` dropped), and whether it is bold and
    italic: by the descriptor's weight and flags, else by the name (`Times-Bold`, `SFBX1000`)."""
    import pypdfium2.raw as pdfium_c

    name = ""
    if pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, buffer, 128, flags):
        name = bytes(buffer.value).decode("latin-1").split("+", 1)[-1]
    bold = (
        pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= 600
        or bool(flags.value & _FONT_FORCE_BOLD)
        or bool(_BOLD_NAME.search(name))
    )
    italic = bool(flags.value & _FONT_ITALIC) or bool(_ITALIC_NAME.search(name))
    return name, bold, italic


def _styles(textpage: Any, raw: str) -> list[_Style]:
    """Each line's size and face, a few pdfium calls a line (its first characters and its last)."""
    import ctypes
    import math

    import pypdfium2.raw as pdfium_c

    count = textpage.count_chars()
    text = raw
    if len(raw) != count:  # characters pdfium's text leaves out (control codes of unmapped fonts)
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i)) for i in range(count))
        if text.count("\r\n") != raw.count("\r\n"):
            return []  # lines that do not match the text's: no styles rather than wrong ones
    box, matrix = pdfium_c.FS_RECTF(), pdfium_c.FS_MATRIX()
    buffer, flags = ctypes.create_string_buffer(128), ctypes.c_int()

    def letter_size(at: int) -> float:
        """A letter's type size: its font's size in the text's matrix (the size the page was set in,
        whatever the font's ascent and descent), else, where that is far from what the page shows (a
        Type 3 font drawn at a scale of its own), the height of its font box."""
        if not pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, at, box):
            return 0.0
        height = float(box.top - box.bottom)
        if pdfium_c.FPDFText_GetMatrix(textpage.raw, at, matrix):
            nominal = pdfium_c.FPDFText_GetFontSize(textpage.raw, at) * math.hypot(matrix.c, matrix.d)
            if height / NOMINAL_SPREAD < nominal < height * NOMINAL_SPREAD:
                return float(nominal)
        return height

    def median(span: list[int]) -> float:
        sizes = sorted(size for size in map(letter_size, span) if size)
        return sizes[len(sizes) // 2] if sizes else 0.0

    styles: list[_Style] = []
    start = 0
    for line in text.split("\r\n"):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        first = start + indent
        last = start + len(line.rstrip()) - 1
        start += len(line) + 2
        if not stripped:
            styles.append(_Style(0, 0.0, False, False, "", True))
            continue
        # the larger of two sizes, its first three letters' and its last three's; letters only, as a
        # `|` stands taller
        letters = [first + i for i, c in enumerate(line[indent:]) if c.isalnum()]
        opening, closing = median(letters[:3]), median(letters[-3:])
        end = float(box.top) if letters else 0.0  # the box the last call read: its last letter's
        size = max(opening, closing)
        top = box.top if letters and pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, letters[0], box) else 0.0
        lead = 0
        if opening and opening < LABEL_SIZE * closing:  # a label in small type ("Chapter 1.") opens it
            large = next((at for at in letters if letter_size(at) >= 0.9 * closing), first)
            lead = len(text[first:large].split()) if text[large - 1].isspace() else 0
            lead = lead if lead <= MAX_LABEL_WORDS else 0
        head, tail = _font(textpage, first, buffer, flags), _font(textpage, last, buffer, flags)
        middle = head
        if head[0] == tail[0] and len(letters) >= MIXED_LETTERS:
            # a line that opens and ends in a face of its own can be text with a word in that face at
            # each end (`Java … the Java` in a program's font): its middle letter says
            middle = _font(textpage, letters[len(letters) // 2], buffer, flags)
        angle = pdfium_c.FPDFText_GetCharAngle(textpage.raw, letters[0]) if letters else 0.0
        left = right = word = 0.0
        if pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, first, box):
            left = float(box.left)
            space = line.find(" ", indent)  # the first word's end: the letter before its space
            word_end = first - indent + space - 1 if space > 0 else last
            word_end = first if _UNSPACED.match(stripped) else word_end
            if pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, word_end, box):
                word = float(box.right) - left
        if pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, last, box):
            right = float(box.right)
        styles.append(
            _Style(
                len(stripped),
                round(size * 2) / 2,
                head[1] and tail[1] and middle[1],
                head[2] and tail[2] and middle[2],
                head[0] if head[0] == tail[0] == middle[0] else "",
                stripped.endswith((".", "!", "?", ":", "。", "！", "？", "：")),
                top,
                bool(_BOLD_NAME.search(head[0]) and _BOLD_NAME.search(tail[0])),
                lead,
                round(math.degrees(angle) / 90) % 4 if angle > 0 else 0,
                end,
                left,
                right,
                word,
                bool(_MARKER.match(stripped)),
            )
        )
    return styles


def _plain_body(pages: list[list[_Style]], body: float) -> list[list[_Style]]:
    """The lines' faces where the body itself reads as bold (fonts whose weights are wrong, a
    document set all in a bold font): bold by the font's name only, or nowhere, so that bold still
    tells a heading from the text."""
    text = by_weight = by_name = 0
    for styles in pages:
        for style in styles:
            if style.size == body:
                text += style.length
                by_weight += style.length * style.bold
                by_name += style.length * style.named_bold
    if by_weight <= text / 2:
        return pages
    named = by_name <= text / 2
    return [[style._replace(bold=named and style.named_bold) for style in styles] for styles in pages]


def _turn(styles: list[_Style]) -> int:
    """The quarter turns most of a page's text is set at."""
    turns: Counter[int] = Counter()
    for style in styles:
        turns[style.turn] += style.length
    return turns.most_common(1)[0][0] if turns else 0


def _heading_marks(
    pages: list[list[_Style]], texts: list[str], contents: list[set[int]] | None = None
) -> list[dict[int, _Mark]]:
    """Per page, the lines that are headings and their level: a line in type 1.15 times the body's or
    larger (levels by size, largest first), or 1.15 times the page's own body where a page is set in
    smaller type than the document (a brochure, a sheet of notes); or, in body type or larger, a line
    that is bold, or one that stands alone (the line before it ended a sentence, the line after it is
    text in another face) in italics or in a font other than the body's (not a monospaced one: code),
    and short. Short lines, not ending a sentence, are checked in `_marked`."""
    weights: Counter[float] = Counter()
    fonts: Counter[str] = Counter()
    for styles in pages:
        for style in styles:
            weights[style.size] += style.length
            fonts[style.font] += style.length
    if not weights:
        return [{} for _ in pages]
    body = weights.most_common(1)[0][0]
    pages = _plain_body(pages, body)
    body_font = next((font for font, _ in fonts.most_common() if font), "")
    page_turns = [_turn(styles) for styles in pages]
    larger = sorted(  # not of a stamp set up the margin, which would outrank the title
        {
            s.size
            for styles, turn in zip(pages, page_turns, strict=True)
            for s in styles
            if s.size >= 1.15 * body and s.turn == turn
        },
        reverse=True,
    )
    levels = {size: min(level, 3) for level, size in enumerate(larger, start=1)}

    def face(style: _Style) -> tuple[bool, bool, str]:
        return style.bold, style.italic, style.font

    def heading(
        styles: list[_Style], lines: list[str], i: int, local: float, contents: set[int], turn: int
    ) -> bool:
        style = styles[i]
        if not style.length or i in contents or style.turn != turn:
            return False  # a contents' entry; a line set across the page's text (a stamp up its margin)
        if i < len(lines) and _ADDRESS.search(lines[i]):
            return False  # an author's e-mail address, a link: large or bold, never a title
        if style.size in levels:
            return True
        if local and style.size >= 1.15 * local and style.size >= 0.9 * body:
            return True
        if style.size < 0.95 * body:
            return False
        if style.bold:
            return True
        other = style.italic or (
            bool(style.font) and style.font != body_font and not _MONO_NAME.search(style.font)
        )
        if other and not style.italic and i < len(lines) and _CODE.search(lines[i]):
            return False  # a line of code in a font of its own
        if i < len(lines) and len(lines[i].split()) > FACE_HEADING_WORDS:
            return False  # a running header, a caption or a quotation in a face of its own
        before = next((s for s in reversed(styles[:i]) if s.length), None)
        after = next((s for s in styles[i + 1 :] if s.length), None)
        return (
            other
            and (before is None or before.ends or before.size in levels or before.bold)
            and (
                after is None or (face(after) != face(style) and not after.bold and after.size not in levels)
            )
        )

    if contents is None:
        contents = [_contents_entries(text.split("\r\n")) for text in texts]
    marks = []
    for styles, text, turn, entries in zip(pages, texts, page_turns, contents, strict=True):
        lines = text.split("\r\n")
        sizes: Counter[float] = Counter()
        for style in styles:
            if style.size:
                sizes[style.size] += style.length
        local = sizes.most_common(1)[0][0] if sizes else 0.0
        if not 0.7 * body <= local < 0.95 * body or sizes[local] < PAGE_BODY_CHARS:
            local = 0.0
        marks.append(
            {
                i: _Mark(levels.get(style.size, len(levels) + 1), style.size, style.size in levels)
                for i, style in enumerate(styles)
                if heading(styles, lines, i, local, entries, turn)
            }
        )
    return marks


# A table of contents' entry: a title, dot leaders (or an ellipsis), a page number
_LEADERS_NUMBER = re.compile(r"\w.*?(?:\.\s?){3,}\s*|\w.*?…+\s*")
_PAGE_REF = re.compile(r"(\d{1,4}|[ivxlc]{1,7})", re.IGNORECASE)
_ENDS_IN_NUMBER = re.compile(r".*[^\W\d_].*\s\d{1,4}")
_ADDRESS = re.compile(r"\S@\S+\.\w|https?://|www\.\w", re.IGNORECASE)  # an e-mail address, a link
CONTENTS_RUN = 3  # lines ending in a page number one after another: a table of contents


def _contents_entries(lines: list[str]) -> set[int]:
    """The lines of a table of contents: a title then dot leaders and a page number, or one of
    CONTENTS_RUN lines or more in a row that each end in a page number after a title. Set in bold or
    large type as its chapters often are, they would be headings, each a section holding the entries
    under it, and the contents page's title the root of every heading after it."""
    entries: set[int] = set()
    run: list[int] = []
    for index, line in enumerate([*lines, "."]):  # a last line that ends the last run
        stripped = line.strip()
        if not stripped:
            continue
        leaders = _LEADERS_NUMBER.match(stripped)
        if leaders and _PAGE_REF.fullmatch(stripped[leaders.end() :]):
            entries.add(index)
        # (a line not ending in a digit never is one: the pattern's backtracking is spared)
        if (stripped[-1].isdigit() and _ENDS_IN_NUMBER.fullmatch(stripped)) or index in entries:
            run.append(index)
            continue
        if len(run) >= CONTENTS_RUN:
            entries.update(run)
        run = []
    return entries


def _literal(line: str) -> str:
    """A line of the page's text that starts with `#` (a "# of items" column) with the `#` escaped,
    so that it is not read as a heading."""
    stripped = line.lstrip()
    return "\\" + stripped if stripped.startswith("#") else line


def _gaps(styles: list[_Style]) -> set[int]:
    """Lines that a wider space than the page's usual line spacing separates from the line above in
    the same type (a paragraph's first line, where paragraphs are set apart). The space is measured
    from the last letters of the line above: pdfium sometimes reads two lines of a page as one (the
    second's first letter a line lower than the first's), and from its first letters that line
    stood two lines' spacing above the next, a paragraph's break in the middle of a sentence. A
    space of more than four lines (a picture's room) parts a paragraph only where the line above
    ended a sentence: a paragraph's text goes on under a picture set in its column."""
    steps = [
        (i, (above.end if above.top - above.end > 0.5 * above.size else above.top) - line.top)
        for i, (above, line) in enumerate(pairwise(styles), start=1)
        if above.length and line.length and above.size == line.size and above.top and line.top
    ]
    usual = sorted(step for _, step in steps if step > 0)
    if len(usual) < 4:
        return set()
    spacing = usual[len(usual) // 2]
    return {
        i
        for i, step in steps
        if step > 1.4 * spacing and (step < 4 * spacing or (styles[i - 1].ends and styles[i - 1].length > 1))
    }


AT_MARGIN = 0.3  # of the type's size: a line's start this close to its column's margin is at the margin
INDENT_MIN = 0.75  # of the type's size: a paragraph's first line is set in this far at least (a Korean
# report's one letter, LaTeX's 1.5 em, Word's half inch)
INDENT_MAX = 0.2  # of the column's width: an indent beyond this is a displayed line, not a paragraph's
SHORT = 1.5  # of the type's size: a line ending this far from its column's right edge fell short
PROSE_SHARE = 0.5  # of a column's lines, reaching its right edge: prose, where a short line ends a paragraph


TYPE_CHANGE = 0.9  # a line in type this much smaller or larger than the line above starts a block
TYPE_STEP = 1.5  # of the larger type's size: how far under the line above such a line is at least


def _type_changes(styles: list[_Style]) -> set[int]:
    """Lines in another type size than the line above and set apart under it (`_gaps` compares lines
    of one size): a footnote under the column's text, a caption or a quotation in smaller type, the
    text again after it. Not a formula's pieces (a fraction's lines, an index), set closer, nor a
    program's lines whose comments are set smaller."""
    return {
        i
        for i, (above, line) in enumerate(pairwise(styles), start=1)
        if above.length >= 3
        and line.length >= 3
        and above.size
        and line.size
        and min(above.size, line.size) < TYPE_CHANGE * max(above.size, line.size)
        and above.top - line.top >= TYPE_STEP * max(above.size, line.size)
    }


def _runs(styles: list[_Style]) -> list[list[int]]:
    """The page's lines in runs of one column's text: lines in pdfium's order in the same type, each
    a line's spacing under the one before (no wider, as `_gaps` sees a paragraph's space) and over
    the same stretch of the page (not the next column, not a box beside it), set upright."""
    steps = [
        above.top - line.top
        for above, line in pairwise(styles)
        if above.length and line.length and above.size == line.size and above.top and line.top
    ]
    usual = sorted(step for step in steps if step > 0)
    if len(usual) < 4:
        return []
    spacing = usual[len(usual) // 2]
    runs: list[list[int]] = []
    run: list[int] = []
    for i, line in enumerate(styles):
        above = styles[run[-1]] if run else None
        if not (line.length and line.size and line.top and line.right > line.left and not line.turn):
            if run:
                runs.append(run)
            run = []
            continue
        if (
            above is not None
            and above.size == line.size
            and run[-1] == i - 1
            and 0 < above.top - line.top <= 1.4 * spacing
            and above.top - line.top < 2.5 * line.size
            and line.left < above.right
            and above.left < line.right
        ):
            run.append(i)
            continue
        if run:
            runs.append(run)
        run = [i]
    if run:
        runs.append(run)
    return [run for run in runs if len(run) >= 3]


def _indents(styles: list[_Style]) -> set[int]:
    """Lines that start a paragraph in a column where paragraphs are not set apart by space: a first
    line set in from the column's margin (the line above ended a sentence or fell short of the
    column's right edge, the line below is back at the margin and full or ending the paragraph; the
    line itself reaching the right edge, so not a centred one), a list's next item (a line opening
    with a marker, not set in further than the line above, which ended) and the first line after a
    list at its items' margin, or a line at the margin after one that ended a sentence so short that
    the next line's first word would have fitted on it (a paragraph ended there, in a column of
    prose: half its lines reach the edge). A list's item whose lines hang under its first (`•`,
    `1.`) is not parted, nor a program's lines or verse (lines that fall short), nor a displayed
    formula (set in further, and centred)."""
    starts: set[int] = set()
    for run in _runs(styles):
        lefts = Counter(round(styles[i].left) for i in run)
        # the margin: where most of the column's lines start, to a point (a paragraph's first line is
        # one of many); of two such places the leftmost
        margin = float(max(lefts, key=lambda x: (lefts[x - 1] + lefts[x] + lefts[x + 1], -x)))
        rights = sorted(styles[i].right for i in run)
        edge = rights[-2]  # the column's right edge (one line running over it aside)
        width = edge - margin
        if width <= 0:
            continue
        prose = sum(styles[i].right >= edge - 0.15 * width for i in run) >= PROSE_SHARE * len(run)
        item: float | None = None  # the left of the list item the lines are in, if any
        for at, index in enumerate(run):
            line = styles[index]
            above = styles[run[at - 1]] if at else None
            below = styles[run[at + 1]] if at + 1 < len(run) else None
            em = line.size
            ended = above is None or above.ends or above.right < edge - SHORT * em
            near = AT_MARGIN * em
            if line.marker:
                if above is not None and ended and line.left <= above.left + near:
                    starts.add(index)  # a list's next item
                item = line.left
                continue
            short = above is not None and above.right < edge - SHORT * em
            if item is not None and short and line.left <= item + near:
                starts.add(index)  # the text after a list, at its items' margin
                item = None
                continue
            indent = line.left - margin
            set_in = (
                INDENT_MIN * em <= indent <= INDENT_MAX * width
                and ended
                and (above is None or (not above.marker and above.left <= line.left + near))
                and edge - line.right < max(em, 0.5 * indent)  # reaching the edge: not a centred line
                and (
                    below is None
                    or (
                        abs(below.left - margin) <= near
                        # the paragraph's second line is full, or its last: not a program's next line
                        and (below.right >= edge - SHORT * em or below.ends)
                    )
                )
            )
            after_short = (
                above is not None
                and prose
                and abs(line.left - margin) <= near
                and above.left - margin <= INDENT_MAX * width
                and above.ends
                and line.word > 0
                and above.right + 0.3 * em + line.word < edge - 0.5 * em  # its first word would fit
            )
            if set_in or after_short:
                starts.add(index)
                item = None
    return starts


TITLE_LINE_STEP = 2.5  # two lines of one title are at most this many times their type size apart


def _apart(styles: list[_Style], index: int) -> bool:
    """Whether a line stands apart from the line above it: further below it than the lines of one
    title are set (a heading under a title), or as far above it (the next column, another box)."""
    above, line = styles[index - 1], styles[index]
    if not (above.top and line.top and line.size):
        return False
    return abs(above.top - line.top) > TITLE_LINE_STEP * line.size


def _is_title(run: list[str], mark: _Mark, whole: bool = False) -> bool:
    """Whether lines marked alike one after another are a title: few and short, no sentence ended,
    words in them (not a formula's variables, `_has_word`), not a list's item, and not the rest of a line
    that pdfium broke at a mark set higher (", Barlas Oguz" after an author's footnote star), and not
    opening with a word in lower case (a paragraph's line in bold, a label of a map or a chart), nor
    with a bracket left open (a formula's first letters in large type, "L(qi"), nor a quotation's
    source after a dash or a remark in brackets, which books set in italics of their own. Those are
    asked of each title a wide space parts the run into, not of the `whole` run (a date line over a
    section's title in the same type, "llncs, Version 2.22" over "1 Installation")."""
    most_lines, most_words = (3, 20) if mark.larger else (2, 12)
    words = sum(len(line.split()) for line in run)
    return (
        len(run) <= most_lines
        and words <= (20 if len(run) == 1 else most_words)
        and (not run[-1].endswith(_SENTENCE_END) or _label_title(run))
        and not any(line.endswith(_SENTENCE_END) and not line.endswith(":") for line in run[:-1])
        and sum(c.isalpha() for c in "".join(run)) >= 2
        and _has_word(" ".join(run))
        and not _BULLET.match(run[0])
        and not run[0].startswith(_GOES_ON)
        and (whole or _reads_as_title(run, mark.larger))
    )


_LETTERS = re.compile(r"[^\W\d_]+")


def _has_word(text: str) -> bool:
    """Whether a title has a word in it: three letters in a row, or letters in capitals only (`IP`)
    or of a script without case; not a formula's variables in larger or italic type
    (`wD`, `Xi`, `a b`) nor a word's first letters set apart from the rest (`Le`)."""
    runs = _LETTERS.findall(text)
    return any(len(run) >= 3 for run in runs) or all(run.upper() == run for run in runs)


LABEL_TITLE_WORDS = 8  # a title that ends in a full stop ("1. DUTIES.") is this short at most


def _label_title(run: list[str]) -> bool:
    """A title that ends in a full stop as contracts, forms and old reports set them (`1. DUTIES.`,
    `INTRODUCTION.`): one short line, numbered or in capitals, with no other stop in it than its
    number's."""
    line = run[0]
    numbered = _NUMBERED.match(line)
    words = line[numbered.end(1) :].lstrip(". ") if numbered else line
    return (
        len(run) == 1
        and len(line.split()) <= LABEL_TITLE_WORDS
        and line.endswith(".")
        and not line.endswith("..")
        and not any(c in words[:-1] for c in ".;:!?")
        and (bool(numbered) or (words.upper() == words and sum(c.isalpha() for c in words) >= 4))
    )


def _next_section(first: str, line: str) -> bool:
    """Whether a line of a run of heading lines opens a section of its own after the run's numbered
    first line: `3.1 In-Cache` under `3. PARTITIONING`, or `4` after `3` (not a title's second line
    that happens to start with a figure, `2021 and After`)."""
    head, this = _NUMBERED.match(first), _NUMBERED.match(line)
    if not head or not this:
        return False
    above, below = head.group(1).split("."), this.group(1).split(".")
    return (below[: len(above)] == above and len(below) > len(above)) or (
        len(below) == len(above) and below[:-1] == above[:-1] and int(below[-1]) == int(above[-1]) + 1
    )


def _reads_as_title(run: list[str], larger: bool) -> bool:
    """A line opening in lower case is a title only in larger type and without commas (an outline's
    `heading level 1.0`); in body size, bold or another face it is a line set apart for emphasis or a
    chart's label, and with commas a running line (`llncs, version 2.22, Sep 05, 2022`)."""
    tokens = " ".join(run).split()
    figures = sum(bool(_FIGURE.fullmatch(token)) for token in tokens)
    return (
        not (figures >= 3 and 2 * figures > len(tokens))  # a table's row of figures in bold
        and ((larger and "," not in run[0]) or not _OPENS_LOWER.match(run[0]))
        and not run[0].startswith(("—", "―"))  # an epigraph's source ("—From Tales of Thedas, by …")
        and not (run[0].startswith("(") and run[-1].endswith(")"))  # a remark ("(Scribbled in the corner)")
        and sum(line.count("(") for line in run) <= sum(line.count(")") for line in run)
    )


def _marked(
    raw: str, marks: dict[int, _Mark], styles: list[_Style] | None = None, kept: set[str] | None = None
) -> str:
    """The page's text with its heading lines as `#` lines in blocks of their own. Lines marked alike
    one after another are one heading when they are few and short (a title set on two or three
    lines; two titles where a wide space parts them, as a subtitle under a title), else lines of a
    paragraph set in bold or large type. A label in smaller type that opens a title ("Chapter 1.")
    stays out of it, a line of its own. The lines of an outline's entry are its heading as they
    are (the document says so), each added to `kept`."""
    lines = raw.split("\r\n")
    spaced = styles if styles and len(styles) == len(lines) else []
    breaks = _gaps(spaced) | _indents(spaced) | _type_changes(spaced) if spaced else set()
    out: list[str] = []
    index = 0
    while index < len(lines):
        mark = marks.get(index)
        if mark is None:
            if index in breaks and out and out[-1].strip():
                out.append("")  # a paragraph set apart from the one before
            out.append(_literal(lines[index]))
            index += 1
            continue
        end = index + 1
        while end < len(lines) and marks.get(end) == mark:
            end += 1
        if mark.entry >= 0:
            heading = "#" * min(mark.level, 6) + " " + _joined(lines[index:end])
            if kept is not None:  # as the page's lines will read it
                kept.update(_page_lines(heading))
            out.extend(["", heading, ""])
            index = end
            continue
        run = [line.strip() for line in lines[index:end]]
        lead = spaced[index].lead if spaced else 0
        label = ""
        if 0 < lead < len(run[0].split()):
            label, run[0] = " ".join(run[0].split()[:lead]), " ".join(run[0].split()[lead:])
        if not _is_title(run, mark, whole=True):  # a paragraph in bold or large type, or one that goes on
            out.extend(_literal(line) for line in lines[index:end])
            index = end
            continue
        if label:
            out.extend(["", label])
        cuts = [
            at - index
            for at in range(index + 1, end)
            if (spaced and _apart(spaced, at)) or _next_section(run[0], run[at - index])
        ]
        for first, last in pairwise([0, *cuts, len(run)]):
            title = " ".join(run[first:last])
            if not _is_title(run[first:last], mark):  # a piece of it too slight for a title
                out.extend(["", title, ""])
                continue
            level = mark.level
            numbered = _NUMBERED.match(title)
            if numbered:
                level = min(6, max(level, numbered.group(1).count(".") + 1))
            out.extend(["", "#" * min(level, 6) + " " + title, ""])
        index = end
    return "\r\n".join(out)


def _joined(lines: list[str]) -> str:
    """A title's lines as one: spaces between them, a word hyphenated at a line end (pdfium's mark)
    joined again."""
    out = ""
    for line in (line.strip() for line in lines):
        if out and not out.endswith("\ufffe"):
            out += " "
        out = out.removesuffix("\ufffe") + line
    return out.removesuffix("\ufffe")


class _Entry(NamedTuple):
    """An entry of the PDF's outline (its bookmarks)."""

    title: str
    level: int  # 0 at the top
    page: int | None  # the page it goes to; None where the file lacks that page
    top: float | None  # the height on that page it shows, where the destination says


MAX_OUTLINE_ENTRIES = 5_000  # a manual's outline lists a few hundred; more is read no further
MAX_OUTLINE_DEPTH = 12
TITLE_LINES = 3  # an outline's title is set on this many lines of the page at most
NEAR_PAGES = 2  # an entry's title is looked for this many pages before and after the page it names
FAR = 0.25  # what a title found further away is worth, beside 3 on its own page (1 two pages off)
STYLED = 0.25  # what a title's line is worth more where its type says heading too
PAGE_LIST_SHARE = 0.8  # an outline of one entry for nearly every page, no deeper: a list of pages
DETAILED_OUTLINE = 3  # entries found at least, for the outline's levels to outrank the type's
_PAGE_LABEL = re.compile(r"(?:page|p\.|pg\.?|slide|seite|folie|sheet)?\s*[\divxlc]+", re.IGNORECASE)
_NOT_WORD = re.compile(r"[\W_]+")
# A section's number before its title (`2.1`, `A.3`, `IV.`, `Chapter 3`), which the outline or the
# page may leave out
_SECTION_NUMBER = re.compile(
    r"[\W_]*(?:(?:chapter|part|section|appendix|annex)\s+\S+?[.:]?"
    r"|\d+(?:\s?\.\s?\d+)*\.?|[a-z](?:\.\d+)*[.)]|[a-z](?:\.\d+)+\.?|[ivxlc]+[.)])\s+",
    re.IGNORECASE,
)


def _outline(document: Any) -> list[_Entry]:
    """The document's outline, as its bookmarks list it (pdfium reads a /Dest or a GoTo action); the
    entries that are only a page's number (`Page 3`) left out, and none at all where the outline is
    a list of the pages (an entry for nearly every page, one each, none under another: a scanner's
    or an image tool's, `Buttons-min`), which says nothing of headings."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    entries: list[_Entry] = []
    try:
        for bookmark in document.get_toc(max_depth=MAX_OUTLINE_DEPTH):
            if len(entries) >= MAX_OUTLINE_ENTRIES:
                break
            try:  # a title pdfium cannot decode, a broken destination: that entry alone is left out
                title = _SPACES.sub(" ", bookmark.get_title()).strip()
                dest = bookmark.get_dest()
                page = dest.get_index() if dest is not None else None
                top = _dest_top(dest, pdfium_c) if dest is not None else None
            except (pdfium.PdfiumError, UnicodeDecodeError, ValueError):
                continue
            if title and not _PAGE_LABEL.fullmatch(title):
                entries.append(_Entry(title, bookmark.level, page, top))
    except pdfium.PdfiumError:
        return []
    pages = [entry.page for entry in entries]
    if (
        len(document) >= 3
        and len(entries) >= PAGE_LIST_SHARE * len(document)
        and len(set(pages)) >= len(pages) - 1  # one each (a page the file lacks aside)
        and not any(entry.level for entry in entries)
    ):
        return []
    return entries


def _dest_top(dest: Any, pdfium_c: Any) -> float | None:
    """The height on its page a destination shows (/XYZ's top, /FitH's), where it gives one."""
    import ctypes

    mode, view = dest.get_view()
    if mode == pdfium_c.PDFDEST_VIEW_XYZ:
        has_x, has_y, has_zoom = (ctypes.c_int() for _ in range(3))
        x, y, zoom = (ctypes.c_float() for _ in range(3))
        located = pdfium_c.FPDFDest_GetLocationInPage(dest.raw, has_x, has_y, has_zoom, x, y, zoom)
        if located and has_y.value and y.value > 0:  # 0: the page's foot, as writers put "anywhere"
            return float(y.value)
    elif mode in (pdfium_c.PDFDEST_VIEW_FITH, pdfium_c.PDFDEST_VIEW_FITBH) and view and view[0] > 0:
        return float(view[0])
    return None


def _key(text: str) -> str:
    """A title as it is compared: letters and digits only, lower case, compatibility forms (`ﬁ`)
    unfolded; spaces, punctuation and pdfium's hyphen marks left out."""
    if not text.isascii():
        import unicodedata

        text = unicodedata.normalize("NFKC", text)
    return _NOT_WORD.sub("", text.lower())


def _unnumbered(text: str) -> str:
    """A title without the section number before it, if any."""
    match = _SECTION_NUMBER.match(text)
    return text[match.end() :] if match and match.end() < len(text) else text


class _Place(NamedTuple):
    """Lines of a page an entry's title may be: from `first` to `last`, and the worth of taking it."""

    page: int
    first: int
    last: int
    worth: float


def _outline_marks(
    outline: list[_Entry],
    texts: list[str],
    styles: list[list[_Style]],
    marks: list[dict[int, _Mark]],
    contents: list[set[int]],
) -> list[dict[int, _Mark]]:
    """The heading marks with the outline's entries found on the pages: an entry's title is the line
    (or two or three lines) whose letters and digits are the title's, with or without a section
    number before it, on the page it goes to or one to two pages off (nearest first, the one
    nearest the height it shows on its page), or anywhere where the page is missing or holds no
    such line. Entries are taken in the outline's order (the most of them in the order of the text,
    then the others where they point): a title listed twice (an abstract's `Methods` over the
    section's) is found once, and a contents page's lines are never taken. A found title is a
    heading at the outline's level; where the outline is detailed (three entries found at least),
    the headings guessed from type alone are ranked by it (`_ranks`)."""
    keys: list[tuple[str, str]] = []  # per entry: its title's key, and without its number
    for entry in outline:
        whole = _key(entry.title)
        bare = _key(_unnumbered(entry.title))
        keys.append((whole, bare if bare != whole and len(bare) >= 3 else ""))
    longest = max((len(whole) for whole, _ in keys), default=0)
    wanted = {key for pair in keys for key in pair if len(key) >= 2}
    if not wanted:
        return marks
    # where each key stands: (page, first line, last line, whether the line's own number was dropped)
    found: dict[str, list[tuple[int, int, int, bool]]] = {}
    for page, text in enumerate(texts):
        if not text:
            continue
        lines = text.split("\r\n")
        filled = [i for i, line in enumerate(lines) if line.strip()]
        plain = [_key(lines[i]) for i in filled]
        for at, first in enumerate(filled):
            whole = plain[at]
            if not whole:
                continue
            bare = _key(_unnumbered(lines[first]))
            for more in range(min(TITLE_LINES, len(filled) - at)):
                if more:
                    whole += plain[at + more]
                    bare += plain[at + more]
                if len(bare) > longest:
                    break
                last = filled[at + more]
                if whole in wanted:
                    found.setdefault(whole, []).append((page, first, last, False))
                if bare != whole and bare in wanted:
                    found.setdefault(bare, []).append((page, first, last, True))
    found = {  # never a contents page's line
        key: [spot for spot in spots if not contents[spot[0]] & set(range(spot[1], spot[2] + 1))]
        for key, spots in found.items()
    }
    places = [_places(entry, key, found, styles, marks) for entry, key in zip(outline, keys, strict=True)]
    chosen = _in_order(places)
    taken = {(place.page, line) for place in chosen.values() for line in range(place.first, place.last + 1)}
    for number, options in enumerate(places):  # entries out of the text's order: where they point
        if number in chosen:
            continue
        for place in sorted(options, key=lambda p: -p.worth):
            spot = {(place.page, line) for line in range(place.first, place.last + 1)}
            if place.worth >= 1 and not spot & taken:
                chosen[number] = place
                taken |= spot
                break
    if not chosen:
        return marks
    result = [dict(page) for page in marks]
    if len(chosen) >= DETAILED_OUTLINE:
        rank = _ranks(outline, chosen, marks)
        for guessed in result:
            for line, mark in guessed.items():
                guessed[line] = mark._replace(level=rank(mark.level))
    for number, place in chosen.items():
        mark = _Mark(min(outline[number].level + 1, 6), 0.0, True, number)
        for line in range(place.first, place.last + 1):
            result[place.page][line] = mark
    return result


def _ranks(
    outline: list[_Entry], chosen: dict[int, _Place], marks: list[dict[int, _Mark]]
) -> Callable[[int], int]:
    """The level a heading guessed from its type takes beside a detailed outline: the outline's
    level of the entries found in the same type (most of them), so that a section the outline
    leaves out (`References`) sits beside its like; in a type larger than any entry's, the level
    of the next smaller type's entries; in a type smaller than all, one below the outline's deepest.
    Holding out each third of eight real outlines' entries in turn (1,079) and guessing them from
    type: 54 % came back at the outline's level (94 % of those found) and 46 % under the right
    parent, against 18 % and 27 % at the type's own levels and 2 % and 14 % ranked below the
    outline's deepest level; dropping the guesses would lose the 58 % found."""
    deepest = max(outline[number].level for number in chosen) + 1
    pairs: dict[int, Counter[int]] = {}
    for number, place in chosen.items():
        mark = marks[place.page].get(place.first)
        if mark is not None:
            pairs.setdefault(mark.level, Counter())[min(outline[number].level + 1, 6)] += 1
    mapping = {level: levels.most_common(1)[0][0] for level, levels in pairs.items()}

    def rank(level: int) -> int:
        if level in mapping:
            return mapping[level]
        deeper = [known for known in mapping if known > level]
        return mapping[min(deeper)] if deeper else min(6, deepest + 1)

    return rank


def _places(
    entry: _Entry,
    key: tuple[str, str],
    found: dict[str, list[tuple[int, int, int, bool]]],
    styles: list[list[_Style]],
    marks: list[dict[int, _Mark]],
) -> list[_Place]:
    """Where an entry's title may be, each with its worth: 3 on the page it names, 2 a page off, 1 two
    pages off (a half more for the line nearest the height it shows), FAR anywhere else where it is
    on none of those pages, 1 anywhere where it names no page of the file; a quarter more where its
    type already says heading (of a title that stands twice on a page, a chart's label and the
    section's title, the one set as a title)."""
    whole, bare = key
    spots = list(found.get(whole, []))
    spots += [spot for spot in found.get(bare, []) if not spot[3]] if bare else []
    if entry.page is None:
        places = [_Place(page, first, last, 1.0) for page, first, last, _ in spots]
    elif not any(abs(spot[0] - entry.page) <= NEAR_PAGES for spot in spots):
        places = [_Place(page, first, last, FAR) for page, first, last, _ in spots]
    else:
        places = [
            _Place(page, first, last, 3.0 - abs(page - entry.page))
            for page, first, last, _ in spots
            if abs(page - entry.page) <= NEAR_PAGES
        ]
        tops = {
            i: abs(styles[p.page][p.first].top - entry.top)
            for i, p in enumerate(places)
            if entry.top is not None
            and p.page == entry.page
            and p.first < len(styles[p.page])
            and styles[p.page][p.first].top
        }
        if tops:
            nearest = min(tops, key=lambda i: tops[i])
            places[nearest] = places[nearest]._replace(worth=places[nearest].worth + 0.5)
    return [p._replace(worth=p.worth + STYLED) if p.first in marks[p.page] else p for p in places]


_Chain = tuple[float, int, int]  # a chain of places: its worth, its last entry, its last node negated


def _in_order(places: list[list[_Place]]) -> dict[int, _Place]:
    """Of each entry's places, at most one, the entries' places in the order of the text (each after
    the one before on its page or on a later page), taken so that they are worth the most: an
    entry's title read in the order the outline lists it. A Fenwick tree of the best chain that ends
    before each place keeps it to n log n for a manual's hundreds of entries."""
    spots = sorted({(p.page, p.last) for options in places for p in options})
    rank = {spot: i + 1 for i, spot in enumerate(spots)}
    size = len(spots)
    # per spot, the best chain ending there: its worth, then its last entry (of two entries that
    # read alike, the later takes the line: a section's `Methods`, not the abstract's part listed
    # before it), then its last node negated (of one entry's places, the first: a title before a
    # later line that reads like it)
    none: _Chain = (0.0, -1, 1)
    tree: list[_Chain] = [none] * (size + 1)
    nodes: list[tuple[int, _Place, int]] = []  # entry, place, the node before it

    def best_before(page: int, first: int) -> _Chain:
        # the chains that end on a line before this place: ranks of spots < (page, first)
        low, high = 0, size
        while low < high:
            middle = (low + high) // 2
            if spots[middle] < (page, first):
                low = middle + 1
            else:
                high = middle
        at, best = low, none
        while at > 0:
            best = max(best, tree[at])
            at -= at & -at
        return best

    for number, options in enumerate(places):
        ends = []
        for place in options:
            worth, _entry, before = best_before(place.page, place.first)
            nodes.append((number, place, -before))
            ends.append((rank[(place.page, place.last)], (worth + place.worth, number, 1 - len(nodes))))
        for at, value in ends:  # after every place of the entry is weighed: one place per entry
            while at <= size:
                tree[at] = max(tree[at], value)
                at += at & -at
    best = none
    at = size
    while at > 0:
        best = max(best, tree[at])
        at -= at & -at
    chosen: dict[int, _Place] = {}
    node = -best[2]
    while node >= 0:
        number, place, node = nodes[node]
        chosen[number] = place
    return chosen


def _labelled(line: str, pair: str, headings: dict[str, str]) -> tuple[str, str, int] | None:
    """A heading that a label in smaller type opens on the line ("Chapter 1." before its title, the
    title perhaps going on to the next line): the label, the title, and how many lines they take."""
    for taken, whole in ((1, line), (2, pair)):
        for title in headings:
            label = whole[: -len(title)].strip()
            if (
                whole.endswith(" " + title)
                and len(label) < len(line)  # the title starts on the line, after the label
                and 0 < len(label.split()) <= MAX_LABEL_WORDS
            ):
                return label, title, taken
    return None


def _headings_again(text: str, marked: str) -> str:
    """The headings found in the page's whole text, marked again in its text rebuilt around tables
    (a heading set on two lines, two lines)."""
    headings: dict[str, str] = {}
    starts: set[str] = set()  # the lines that open a paragraph, set apart in `marked` (without the
    # control codes that pdfium's characters hold and its text leaves out: a bullet of a font
    # without a Unicode map)
    previous = ""
    for line in marked.split("\r\n"):
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            headings[title] = line
        elif not previous.strip() and line.strip():
            starts.add(_CONTROL.sub("", line).strip())
        previous = line
    lines = text.replace("\r\n", "\n").split("\n")
    out = []
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        pair = f"{line} {lines[index + 1].strip()}" if index + 1 < len(lines) else ""
        if line in headings:
            out.extend(["", headings[line], ""])
        elif pair in headings:
            out.extend(["", headings[pair], ""])
            index += 1
        elif labelled := _labelled(line, pair, headings):  # a heading opened by a label in small type
            label, title, taken = labelled
            out.extend(["", label, headings[title], ""])
            index += taken - 1
        else:
            if _CONTROL.sub("", line).strip() in starts and out and out[-1].strip():
                out.append("")  # a paragraph's first line, as the page's text without tables parts it
            out.append(_literal(lines[index]))
        index += 1
    return "\n".join(out)


Box = tuple[float, float, float, float]  # left, top, right, bottom; top is -y (pdfplumber's way down)
Edge = dict[str, Any]  # a straight rule as pdfplumber's table finder takes it


def _matrix(obj: Any) -> tuple[float, ...]:
    import pypdfium2.raw as pdfium_c

    m = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, m):
        return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _then(inner: tuple[float, ...], outer: tuple[float, ...]) -> tuple[float, ...]:
    """The matrix that applies `inner`, then `outer` (a form's objects are drawn in the form's space)."""
    a, b, c, d, e, f = inner
    g, h, i, j, k, m = outer
    return (a * g + b * i, a * h + b * j, c * g + d * i, c * h + d * j, e * g + f * i + k, e * h + f * j + m)


_Point = tuple[float, float]


def _view(page: Any, textpage: Any) -> Callable[[float, float], _Point] | None:
    """From the page's space to one in which its text runs left to right (y still up), for a page
    whose text is set sideways (a landscape slide or table drawn turned a quarter on a portrait page,
    shown upright by the page's /Rotate): a table's rows are then the rows its reader sees, not its
    columns. None where the text is upright already."""
    import math

    import pypdfium2.raw as pdfium_c

    turns: Counter[int] = Counter()
    count = textpage.count_chars()
    for index in range(0, count, max(1, count // VIEW_SAMPLE)):
        angle = pdfium_c.FPDFText_GetCharAngle(textpage.raw, index)
        if angle >= 0:
            turns[round(math.degrees(angle) / 90) % 4] += 1
    turn = turns.most_common(1)[0][0] if turns else 0
    if not turn:
        return None
    left, bottom, right, top = page.get_bbox()
    if turn == 1:  # text running down the page (pdfium's angles go clockwise)
        return lambda x, y: (top - y, x - right)
    if turn == 2:  # upside down
        return lambda x, y: (right - x, bottom - y)
    return lambda x, y: (y - bottom, left - x)  # text running up the page


def _rules(page: Any, view: Callable[[float, float], _Point] | None = None) -> list[Edge]:
    """The page's straight horizontal and vertical strokes and rectangle sides, in page space (forms
    entered, each path's matrix applied), as pdfplumber's edges. pdfium hands the paths over without
    parsing the page again, where pdfplumber would have pdfminer lay out the whole page (about 0.05 to
    0.1 CPU-s, 95 % of a table page's cost). Curves (charts, logos) give nothing; a page drawn with
    more than MAX_OBJECTS objects (a map) is not searched."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    x, y = ctypes.c_float(), ctypes.c_float()
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    edges: list[Edge] = []
    budget = [MAX_OBJECTS]

    def segment_edge(a: tuple[float, float], b: tuple[float, float]) -> None:
        dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
        if dy < 0.5 and dx >= 1:
            top = -(a[1] + b[1]) / 2
            x0, x1 = min(a[0], b[0]), max(a[0], b[0])
            edges.append(_edge(x0, top, x1, top, "h"))
        elif dx < 0.5 and dy >= 1:
            left = (a[0] + b[0]) / 2
            edges.append(_edge(left, -max(a[1], b[1]), left, -min(a[1], b[1]), "v"))

    def path(obj: Any, m: tuple[float, ...]) -> None:
        if not pdfium_c.FPDFPath_GetDrawMode(obj, fill, stroke) or not (fill.value or stroke.value):
            return  # drawn neither filled nor stroked: nothing on the page
        segments = pdfium_c.FPDFPath_CountSegments(obj)
        if segments > MAX_SEGMENTS:
            return
        a, b, c, d, e, f = m
        start = previous = None
        for number in range(segments):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, number)
            kind = pdfium_c.FPDFPathSegment_GetType(segment)
            pdfium_c.FPDFPathSegment_GetPoint(segment, x, y)
            point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
            if view is not None:
                point = view(*point)
            if kind == pdfium_c.FPDF_SEGMENT_MOVETO:
                start = point
            elif kind == pdfium_c.FPDF_SEGMENT_LINETO and previous is not None:
                segment_edge(previous, point)
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None and point != start:
                segment_edge(point, start)
            previous = point

    def walk(objects: list[Any], outer: tuple[float, ...] | None) -> bool:
        for obj in objects:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind not in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_FORM):
                continue
            m = _matrix(obj) if outer is None else _then(_matrix(obj), outer)
            if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                path(obj, m)
            else:
                inner = pdfium_c.FPDFFormObj_CountObjects(obj)
                if not walk([pdfium_c.FPDFFormObj_GetObject(obj, i) for i in range(max(0, inner))], m):
                    return False
        return True

    count = pdfium_c.FPDFPage_CountObjects(page.raw)
    if count > MAX_OBJECTS:
        return []
    if not walk([pdfium_c.FPDFPage_GetObject(page.raw, i) for i in range(count)], None):
        return []
    return edges


def _edge(x0: float, top: float, x1: float, bottom: float, orientation: str) -> Edge:
    return {
        "object_type": "line",
        "orientation": orientation,
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "doctop": top,
        "width": x1 - x0,
        "height": bottom - top,
    }


class _Drawn:
    """What pdfplumber's table finder reads of a page (its edges), from pdfium's paths."""

    def __init__(self, edges: list[Edge], bbox: Box) -> None:
        self.edges = edges
        self.bbox = bbox


_Char = tuple[str, float, float]  # a character and its centre (x, top); a space or line break: nan
_Table = tuple[Box, str, list[Box]]  # where a table stands, its Markdown, and the boxes holding its letters


def _chars(textpage: Any, raw: str, view: Callable[[float, float], _Point] | None = None) -> list[_Char]:
    """The page's characters in the text page's order with their centres, one pdfium call each."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    nan = float("nan")
    chars: list[_Char] = []
    count = textpage.count_chars()
    for index in range(count):
        char = raw[index] if len(raw) == count else chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, index))
        if char.isspace():
            chars.append((char, nan, nan))  # a gap between words, wherever pdfium put it
        elif pdfium_c.FPDFText_GetCharBox(textpage.raw, index, left, right, bottom, top):
            x, y = (left.value + right.value) / 2, (bottom.value + top.value) / 2
            if view is not None:
                x, y = view(x, y)
            chars.append((char, x, -y))
    return chars


def _inside(chars: list[_Char], box: Box) -> list[_Char]:
    """The characters whose centres fall in the box (pdfplumber's rule), and the gaps between them."""
    x0, top, x1, bottom = box
    return [c for c in chars if c[1] != c[1] or (x0 <= c[1] < x1 and top <= c[2] < bottom)]


def _cell_text(chars: list[_Char]) -> str:
    """A cell's characters in the text page's order, a space wherever the page had a space or a line
    break between two of them; a word hyphenated at a cell's line end joined."""
    out: list[str] = []
    gap = False
    for char, x, _y in chars:
        if x != x:  # nan: a space or line break of the text page
            gap = gap or bool(out)
        elif char == "\ufffe":  # pdfium's mark of a hyphen at a line end: the word goes on
            gap = False
        else:
            if gap:
                out.append(" ")
            out.append(char)
            gap = False
    return _CONTROL.sub("", "".join(out))


def _open_sides(boxes: list[Box], edges: list[Edge]) -> list[Edge]:
    """Vertical edges where a table's horizontal rules end, from the first rule to the last that ends
    there: a table ruled across and between its columns but open at its sides (as papers and reports
    draw them, often under a fully ruled header row) keeps its first and last columns, which the
    rules alone would leave out. Where a border is drawn, the edge adds nothing."""
    sides: list[Edge] = []
    for x0, top, x1, bottom in boxes:
        rules = [
            e
            for e in edges
            if e["orientation"] == "h" and top - 3 <= e["top"] <= bottom + 3 and e["x0"] < x1 and e["x1"] > x0
        ]
        if not rules:
            continue
        for at, end in ((min(e["x0"] for e in rules), "x0"), (max(e["x1"] for e in rules), "x1")):
            ends = [e["top"] for e in rules if abs(e[end] - at) <= 3]
            if len(ends) < 2 or max(ends) - min(ends) < 3:
                continue
            drawn = sum(  # how much of the side a border already draws
                max(0.0, min(e["bottom"], max(ends)) - max(e["top"], min(ends)))
                for e in edges
                if e["orientation"] == "v" and abs(e["x0"] - at) <= 3
            )
            if drawn < max(ends) - min(ends) - 3:
                sides.append(_edge(at, min(ends), at, max(ends), "v"))
    return sides


def _table_rows(table: Any, chars: list[_Char]) -> list[list[object]]:
    """A table's rows of cell text, a cell merged over several rows or columns repeated in each of
    them (pdfplumber leaves the places it covers empty), so every row reads whole: a header over two
    rows, a group's label beside each of its rows. Only in a table whose grid is mostly cells of one
    place (a quarter merged at most): in a drawing taken for a table, repeats would be noise."""
    in_row = [_inside(chars, row.bbox) for row in table.rows]
    # per place, its cell and the row the cell starts in (whose box holds all of the cell's letters)
    grid: list[list[tuple[Box, int] | None]] = [
        [(cell, r) if cell else None for cell in row.cells] for r, row in enumerate(table.rows)
    ]
    places = sum(len(row) for row in grid)
    if 0 < sum(place is None for row in grid for place in row) <= places // 4:
        xs = [(column.bbox[0] + column.bbox[2]) / 2 for column in table.columns]
        ys = [(row.bbox[1] + row.bbox[3]) / 2 for row in table.rows]
        origins = [(r, j, place[0]) for r, row in enumerate(grid) for j, place in enumerate(row) if place]
        for r, j, cell in origins:  # the places whose centres a cell covers, right of and under its own
            right, down = j + 1, r + 1
            while right < len(xs) and xs[right] < cell[2]:
                right += 1
            while down < len(ys) and ys[down] < cell[3]:
                down += 1
            if (right - j) * (down - r) > places // 2:
                continue  # a frame drawn round the table, not a merged cell
            for rr in range(r, down):
                for jj in range(j, min(right, len(grid[rr]))):
                    if grid[rr][jj] is None:
                        grid[rr][jj] = (cell, r)
    texts: dict[tuple[Box, int], str] = {}
    for row in grid:
        for place in row:
            if place is not None and place not in texts:
                texts[place] = _cell_text(_inside(in_row[place[1]], place[0]))
    return [[texts[place] if place else None for place in row] for row in grid]


def _tables(page: Any, textpage: Any, raw: str) -> tuple[list[_Table], list[_Char]]:
    """The page's tables, top first, with where they stand, and its characters with their places when
    it has tables: the ruled ones (`_ruled`) and those of text aligned in columns without rules
    (`pdf_aligned`). Where both find a table in one place the ruled one stands, unless the rules
    part only its columns (one cell per column holding every row's text), which the aligned text
    parts into rows (it then has several times the rows), or the rules leave out a column that the
    aligned text has (a first column of labels left of the ruled figures, as many rows)."""
    from lore_docdb.parse.convert.pdf_aligned import aligned_tables

    view = _view(page, textpage)
    chars: list[_Char] = []
    ruled = _ruled(page, textpage, raw, view, chars)
    tables = [(box, markdown, cells) for box, markdown, _rows, cells in ruled]
    for box, markdown, rows in aligned_tables(textpage, raw, view):
        over = [ruled[k] for k in range(len(ruled)) if _overlap(box, ruled[k][0])]
        if not all(
            _ruled_short(box, rows, other, other_rows, _rows_beside(box, cells))
            for other, _m, other_rows, cells in over
        ):
            continue
        tables = [t for t in tables if not _overlap(t[0], box)]
        tables.append((box, markdown, [box]))
    if tables and not chars:
        chars = _chars(textpage, raw, view)
    tables = [t for t in tables if _words_cut(chars, t[0], t[2]) < CUT_WORDS]
    return sorted(tables, key=lambda t: (t[0][1], t[0][0])), chars


CUT_WORDS = 3  # words a table's box or its cells' edges cut in two: a figure's rules over a column of text
LETTER_STEP = 9.0  # points between two letters' centres in one word at most (pdfium sets no space between
# the `X` marks of two cells either)


def _words_cut(chars: list[_Char], box: Box, cells: list[Box]) -> int:
    """How many words the table's edges cut: two letters read one after the other with no space
    between (one word), on one line, one in the table and one out of it, or in two of its cells. A
    table's frame and rules run between words; rules drawn over running text (a figure's boxes and
    arrows across a column, annotations' frames round a paragraph) run through them, and such a
    "table" reads `ol flow graph` in one cell and `Figure 7. Contr` outside it."""

    def place(x: float, y: float) -> int:
        x0, top, x1, bottom = box
        if not (x0 <= x < x1 and top <= y < bottom):
            return -1
        return next((k for k, (a, b, c, d) in enumerate(cells) if a <= x < c and b <= y < d), -2)

    cut = 0
    for (_a, x, y), (_b, x2, y2) in pairwise(chars):
        if x != x or x2 != x2 or abs(y2 - y) > 1.5 or abs(x2 - x) > LETTER_STEP:
            continue  # a space, the next line, or a letter too far on to be the same word's
        first, second = place(x, y), place(x2, y2)
        if first != second and -2 not in (first, second) and (first >= 0 or second >= 0):
            cut += 1
    return cut


def _ruled_short(box: Box, rows: int, ruled: Box, ruled_rows: int, beside: int | None) -> bool:
    """Whether a ruled table is short of the aligned text found in its place: of its rows (its rules
    part only columns), counting only its rows `beside` the aligned text where it frames that text
    (its title and note rows above and below one cell holding every line of the figures), or of a
    column (the
    aligned text, with as many rows, reaches beyond it)."""
    wider = box[0] < ruled[0] - EXTRA_COLUMN or box[2] > ruled[2] + EXTRA_COLUMN
    within = box[0] <= ruled[0] + EXTRA_COLUMN and box[2] >= ruled[2] - EXTRA_COLUMN
    return rows >= RULED_ROWS * (ruled_rows if beside is None else min(ruled_rows, beside)) or (
        wider and within and ruled_rows <= rows <= 1.5 * ruled_rows
    )


def _rows_beside(box: Box, cells: list[Box]) -> int | None:
    """A ruled table's rows (its cells' bands) that reach into the height of this box, where the box
    stands within the table's height (a frame around the aligned text); None where the box reaches
    beyond it (aligned text under a ruled strip of titles, which is a table of its own)."""
    tops, bottoms = [c[1] for c in cells], [c[3] for c in cells]
    if not tops or box[1] < min(tops) - 1 or box[3] > max(bottoms) + 1:
        return None
    return len({(top, bottom) for _x0, top, _x1, bottom in cells if top < box[3] and box[1] < bottom})


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _ruled(
    page: Any, textpage: Any, raw: str, view: Callable[[float, float], _Point] | None, chars: list[_Char]
) -> list[tuple[Box, str, int, list[Box]]]:
    """The page's ruled tables (two rows and two columns at least): box, Markdown and count of rows;
    `chars` filled with the page's characters when there are any. pdfplumber's table finder
    (snapping, joining and intersecting the rules into cells) runs on the rules pdfium found; only a
    page with two horizontal and two vertical rules loads pdfplumber."""
    edges = _rules(page, view)
    if (
        sum(1 for e in edges if e["orientation"] == "h") < 2
        or sum(1 for e in edges if e["orientation"] == "v") < 2
    ):
        return []
    from pdfplumber.table import TableFinder

    from lore_docdb.parse.convert.pdf_aligned import joined_labels

    left, bottom, right, top = page.get_bbox()
    if view is not None:
        corners = [view(x, y) for x in (left, right) for y in (bottom, top)]
        left, right = min(c[0] for c in corners), max(c[0] for c in corners)
        bottom, top = min(c[1] for c in corners), max(c[1] for c in corners)
    bbox = (left, -top, right, -bottom)
    finder = TableFinder(_Drawn(edges, bbox))  # type: ignore[arg-type]
    if not finder.tables:
        return []
    sides = _open_sides([table.bbox for table in finder.tables], edges)
    if sides:
        finder = TableFinder(_Drawn(edges + sides, bbox))  # type: ignore[arg-type]
    chars.extend(_chars(textpage, raw, view))
    tables: list[tuple[Box, str, int, list[Box]]] = []
    for table in finder.tables:
        rows = _table_rows(table, chars)
        texts = {cell.strip() for row in rows for cell in row if isinstance(cell, str) and cell.strip()}
        paragraphs = sum(len(cell.split()) >= PARAGRAPH_WORDS for cell in texts)
        if (
            len(rows) >= 2
            and max(len(row) for row in rows) >= 2
            and len(texts) >= MIN_TABLE_TEXTS
            and 2 * paragraphs <= len(texts)  # boxes drawn round a page's paragraphs: its text
        ):
            markdown = md_table(
                joined_labels([[c if isinstance(c, str) else "" for c in row] for row in rows])
            )
            if markdown.count("\n") >= 2:
                box = tuple(float(v) for v in table.bbox)
                cells = [(c[0], c[1], c[2], c[3]) for c in table.cells]
                tables.append(((box[0], box[1], box[2], box[3]), markdown, markdown.count("\n"), cells))
    return tables


def _with_tables(chars: list[_Char], tables: list[_Table]) -> str:
    """The page's text in pdfium's order with each table as Markdown instead of its cells' loose words,
    before the line nearest under it in its column (else where its own first character was read):
    the text beside a table keeps its order (a column beside a table in the other column is not cut
    at the table's top), and a table drawn after the page's text still stands where it is seen. A
    letter in a ruled table's box but in none of its cells (a last row whose rules are not closed) is
    not the table's: it stays in the text, where the table would have lost it."""
    rows: list[dict[tuple[float, float], list[tuple[float, float]]]] = []  # per table, its cells by row
    for _box, _markdown, cells in tables:
        row: dict[tuple[float, float], list[tuple[float, float]]] = {}
        for x0, top, x1, bottom in cells:
            row.setdefault((top, bottom), []).append((x0, x1))
        rows.append(row)

    def holds(k: int, x: float, y: float) -> bool:
        left, top, right, bottom = tables[k][0]
        return (
            left <= x < right
            and top <= y < bottom
            and any(
                low <= y < high and any(x0 <= x < x1 for x0, x1 in spans)
                for (low, high), spans in rows[k].items()
            )
        )

    owners: list[int | None] = []  # per character, the table one of whose cells holds its centre
    for _char, x, y in chars:
        if x != x:  # nan: a space or line break, decided below
            owners.append(-1)
            continue
        owners.append(next((k for k in range(len(tables)) if holds(k, x, y)), None))
    after: list[int | None] = [None] * len(owners)  # the owner of the next character that is not blank
    following: int | None = None
    for index in range(len(owners) - 1, -1, -1):
        after[index] = following
        if owners[index] != -1:
            following = owners[index]
    before: int | None = None  # a space or line break between two characters of a table is the table's
    for index, owner in enumerate(owners):
        if owner == -1:
            owners[index] = before if before == after[index] else None
        else:
            before = owner
    below: dict[int, int] = {}  # per table, the character nearest under it in its column
    for k, ((left, _top, right, bottom), _markdown, _cells) in enumerate(tables):
        under = [
            (y - bottom, i)
            for i, ((_c, x, y), owner) in enumerate(zip(chars, owners, strict=True))
            if owner is None and x == x and y > bottom and left <= x < right
        ]
        if under:
            below[min(under)[1]] = k
    out: list[str] = []
    first: dict[int, int] = {}  # where each table's first character was read, in `out`
    for index, ((char, _x, _y), owner) in enumerate(zip(chars, owners, strict=True)):
        if owner is not None:
            if owner not in first:
                first[owner] = len(out)
                out.append("")  # a place held for the table, if nothing stands under it
            continue
        if index in below:  # the table goes before the line under it
            start = max((i for i, c in enumerate(out) if c in ("\r", "\n")), default=-1) + 1
            out.insert(start, "\n\n" + tables[below[index]][1] + "\n\n")
            first = {t: at + (at >= start) for t, at in first.items()}
        out.append(char)
    placed = set(below.values())
    for k, at in first.items():
        if k not in placed:
            out[at] = "\n\n" + tables[k][1] + "\n\n"
    return "".join(out)


def _page_text(textpage: Any) -> str:
    return _unshifted(textpage, _ligatures_in_order(textpage, textpage.get_text_range()))


def pdf_pages(path: Path) -> list[str]:
    """Each page's body text, in reading order (pdfium's, or `pdf_order`'s bands), tables in place,
    without the page furniture."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        document = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():  # pdfium says "Incorrect password error"
            raise refused(path, ENCRYPTED) from exc
        why = str(exc).rsplit("PDFium: ", 1)[-1].rstrip(").").lower() or "unreadable"
        raise refused(path, f"is damaged: its PDF structure cannot be read ({why})") from exc
    try:
        pages: list[list[str]] = []
        styles: list[list[_Style]] = []
        raws: dict[int, str] = {}
        tabled: dict[int, str] = {}  # the text of pages with tables, the tables in place
        outline = _outline(document)
        for index, page in enumerate(document):
            textpage = page.get_textpage()
            try:
                scanned = textpage.count_chars() < MIN_TEXT_CHARS and _has_picture(page)
                raw = "" if scanned else _page_text(textpage)
                read = _ocr_page(page) if scanned or _unreadable(raw) else ""
                # a page of more objects (a map, a chart) is read in the order it was written
                drawn = pdfium_c.FPDFPage_CountObjects(page.raw)
                if not (scanned or read.strip()) and drawn <= MAX_OBJECTS and read_in_order(page, textpage):
                    textpage.close()
                    textpage = page.get_textpage()
                    raw = _page_text(textpage)
                # a page with an unreadable text layer that OCR finds nothing on keeps what the layer has
                if scanned or read.strip():
                    pages.append(_page_lines(read))
                    styles.append([])
                else:
                    styles.append(_styles(textpage, raw))
                    pages.append([])
                    raws[index] = _drawn_text(textpage, raw)
                    tables, chars = _tables(page, textpage, raw)
                    if tables:
                        tabled[index] = _with_tables(chars, tables)
            finally:
                textpage.close()
                page.close()
    finally:
        document.close()
    texts = [raws.get(index, "") for index in range(len(styles))]
    contents = [_contents_entries(text.split("\r\n")) for text in texts]
    marks = _heading_marks(styles, texts, contents)
    if outline:
        marks = _outline_marks(outline, texts, styles, marks, contents)
    kept: set[str] = set()  # the outline's heading lines: never labels, never running furniture
    for index, raw in raws.items():
        marked = _marked(raw, marks[index], styles[index], kept)
        pages[index] = _labels(
            _page_lines(_headings_again(tabled[index], marked) if index in tabled else marked), kept
        )
    # a line at a page's edge that comes back (digits aside) on several pages is a header or footer
    repeats: Counter[str] = Counter()
    titles: Counter[str] = Counter()  # of those, the ones marked as headings
    for lines in pages:
        repeats.update({_shape(lines[i]) for i in _edges(lines)})
        titles.update({_shape(lines[i]) for i in _edges(lines) if _HEADING.match(lines[i])})
    threshold = max(2, min(3, round(0.3 * len(pages))))
    result = []
    for lines in pages:
        drop = {
            i
            for i in _edges(lines)
            if (
                len(pages) > 1
                and repeats[_shape(lines[i])] >= threshold
                and len(lines[i].split()) <= MAX_FURNITURE_WORDS
                # a table's row: a total or a header row comes back, with other figures, on each page
                and not lines[i].startswith("|")
                # the one page where it is a heading: the title that the running header repeats
                and not (_HEADING.match(lines[i]) and titles[_shape(lines[i])] == 1)
                and lines[i] not in kept
            )
            or _PAGE_NUMBER.fullmatch(_shape(lines[i]))
        }
        body = [line for i, line in enumerate(lines) if i not in drop]
        if not any(line.strip() for line in body):
            body = lines  # pages that are all alike (a form, a repeated notice): not furniture
        result.append(re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip())
    return result


def pdf_text(path: Path) -> str:
    """The pages' text joined by form feeds, so the page of any passage is the count of breaks before it."""
    return f"\n{PAGE_BREAK}\n".join(pdf_pages(path))
