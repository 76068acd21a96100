"""OCR offline: images (PNG, JPEG, TIFF, BMP, WebP) and PDF pages with no text layer are read by RapidOCR
(`rapidocr-onnxruntime`: PP-OCRv4 text detection and recognition for Chinese and English on
onnxruntime; the three ONNX models ship inside the wheel, nothing is fetched). The recognised lines are
laid out again as text: lines in reading order, a paragraph break where the gap between lines is wide,
a line in clearly larger type marked as a heading. One image is one page; the frames of a multi-page
TIFF are pages separated by form feeds, like a PDF's."""

from __future__ import annotations

import io
import re
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import PAGE_BREAK

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif", ".heic", ".heif")
PAGED_IMAGES = (".tif", ".tiff")  # each frame a page; a GIF's other frames are an animation's
MAX_SIDE = 2400  # pixels: a larger picture is scaled down first (a 300 dpi A4 scan is 2480 x 3508)
DETECT_SIDE = 1600  # the detector's input, longer side: small enough to be fast, large enough for 9 pt
UNCLIP_RATIO = 1.3  # tighter boxes: neighbouring lines are not merged into one
MAX_FRAMES = 200  # pages of one TIFF
_SENTENCE_GLUE = re.compile(r"(?<=[a-z][.;:!?,])(?=[A-Z])")  # "hand.A new": recognition lost a space
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


@cache
def engine() -> Any:
    """The OCR engine, loaded once per extraction child (0.7 CPU-s, about 110 MB resident). One thread:
    the child is one of the service's workers, and more threads only fight for the same cores."""
    from rapidocr_onnxruntime import RapidOCR

    return RapidOCR(
        use_cls=False,  # scans are upright; the angle classifier costs time and turns some lines over
        det_unclip_ratio=UNCLIP_RATIO,
        det_limit_type="max",
        det_limit_side_len=DETECT_SIDE,
        intra_op_num_threads=1,
        inter_op_num_threads=1,
    )


@dataclass
class _Box:
    text: str
    left: float
    right: float
    top: float
    bottom: float
    type_height: float = 0.0  # a line's: the height of its box with the most characters
    pitch: float = 0.0  # a line's: the width of its boxes per character in them, spaces aside

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def size(self) -> float:
        """The type's size: the box's height, or for Chinese and Japanese (square characters, whose
        boxes vary more in height) the width per character."""
        cjk = len(_CJK.findall(self.text))
        if cjk >= 0.5 * len(self.text.strip() or "x"):
            return (self.right - self.left) / max(1, len(self.text.strip()))
        return self.type_height or self.height


def _joined(left: str, right: str) -> str:
    """Two pieces of one line: no space between Chinese or Japanese characters."""
    if left and right and _CJK.match(left[-1]) and _CJK.match(right[0]):
        return left + right
    return f"{left} {right}"


def _lines(boxes: list[_Box]) -> list[_Box]:
    """Boxes on the same line (their vertical middles within half a line of each other), left to right."""
    lines: list[list[_Box]] = []
    for box in sorted(boxes, key=lambda b: (b.top + b.bottom) / 2):
        middle = (box.top + box.bottom) / 2
        if lines:
            last = lines[-1]
            last_middle = statistics.fmean((b.top + b.bottom) / 2 for b in last)
            if abs(middle - last_middle) < 0.5 * min(box.height, max(b.height for b in last)):
                last.append(box)
                continue
        lines.append([box])
    merged = []
    for line in lines:
        line.sort(key=lambda b: b.left)
        text = line[0].text
        for box in line[1:]:
            text = _joined(text, box.text)
        merged.append(
            _Box(
                text,
                min(b.left for b in line),
                max(b.right for b in line),
                min(b.top for b in line),
                max(b.bottom for b in line),
                # not the line's whole height: a mark in the margin beside it (a stamp set down the
                # page, read as a digit or two in a tall box) or a superscript would make it large type
                max(line, key=lambda b: len(b.text.strip())).height,
                sum(b.right - b.left for b in line) / max(1, sum(len(b.text.replace(" ", "")) for b in line)),
            )
        )
    return merged


def _median_by_characters(values: list[tuple[float, int]]) -> float:
    """The median of (value, characters) pairs weighted by their characters: what most of the text
    has, not most of the lines."""
    ordered = sorted(values)
    half, seen = sum(n for _, n in ordered) / 2, 0
    for value, count in ordered:
        seen += count
        if seen >= half:
            return value
    return ordered[-1][0]


def _body_pitch(lines: list[_Box]) -> float:
    """The width per character of most of the text."""
    return _median_by_characters([(line.pitch, len(line.text.replace(" ", ""))) for line in lines])


PITCH_HEADING = 1.45  # a Latin line whose letters are this many times as wide as the body's: larger type
MIN_PITCH_CHARS = 6  # a shorter line's width per letter says little (one wide letter, a lone number)


def _larger(line: _Box, size: float, pitch: float) -> bool:
    """Whether a line is in larger type than the body: its boxes 1.25 times as tall; or, Latin text,
    its letters clearly wider and its boxes not shorter (a title in bold type a point or two larger,
    which the box heights of a low-resolution scan, varying by a few pixels, do not tell)."""
    if line.size >= 1.25 * size:
        return True
    text = line.text.replace(" ", "")
    return (
        len(text) >= MIN_PITCH_CHARS
        and len(_CJK.findall(text)) < 0.5 * len(text)
        and line.pitch >= PITCH_HEADING * pitch
        and line.size >= 0.85 * size
    )


def _body_size(lines: list[_Box]) -> float:
    """The size of most of the text."""
    return _median_by_characters([(line.size, len(line.text)) for line in lines])


_ADDRESS = re.compile(r"\S@\S+\.\w|https?://|www\.", re.IGNORECASE)  # an e-mail address, a link
# an affiliation's superscript number or mark glued to its first word ("1Allen Institute", "2Brown")
_GLUED_MARK = re.compile(r"^[\d¹²³⁴⁵⁶⁷⁸⁹⁰*†‡§]+[A-Z][a-z]")
_MARKED = re.compile(r"^[\d¹²³⁴⁵⁶⁷⁸⁹⁰*†‡§][\d¹²³⁴⁵⁶⁷⁸⁹⁰*†‡§ ,]*\s*(?=\S)")
_AFFILIATION = re.compile(
    r"\b(universit|institut|department|dept\b|laborator|college|school of|faculty|academy|"
    r"inc\b|ltd\b|gmbh|corporation|research cent)",
    re.IGNORECASE,
)
_OPENS_LOWER = re.compile(r"^(?:[\d.¹²³⁴⁵⁶⁷⁸⁹⁰]+\s+)?[a-z]{2,}\b")  # "and humanities.": a paragraph's line
_OPENS_MARK = re.compile(r"^[,，.。;；:：、)\]}）】」]")  # the rest of a sentence, or a logo's debris
# a Chinese character between Latin letters ("HARUTO从F"): a stylised logo or picture read as text
_MIXED = re.compile(r"[A-Za-z][\u3400-\u4dbf\u4e00-\u9fff]+[A-Za-z]")
_CONTENTS_ENTRY = re.compile(r"\w.*?(?:(?:[.·]\s?){3,}|…+)\s*(\d{1,4}|[ivxlc]{1,7})$", re.IGNORECASE)
_CONSONANTS = re.compile(r"[bcdfghjklmnpqrstvwxz]{5}", re.IGNORECASE)  # "trinevmdls": misread letters
GARBLED_WORDS = 2


def _not_heading(text: str) -> bool:
    """Whether a line in large boxes is no heading by its text: an author block's line (an e-mail
    address or a link, an affiliation opened by its superscript number), a paragraph's line (it opens
    with a word in lower case or a comma; a stamp in the margin beside it made its box tall), or a
    garbled line (words of five consonants in a row, which misread letters make and words seldom have;
    a Chinese character between Latin letters, as a logo's letters are read)."""
    if _ADDRESS.search(text) or _GLUED_MARK.match(text) or _OPENS_LOWER.match(text):
        return True
    if _CONTENTS_ENTRY.match(text):
        return True  # a table of contents' entry: a title, dot leaders, its page
    if _OPENS_MARK.match(text) or _MIXED.search(text) or sum(c.isalpha() for c in text) < 2:
        return True  # ... or a chart's axis label ("(W) 0")
    if _MARKED.match(text) and _AFFILIATION.search(text):
        return True
    return len(_CONSONANTS.findall(text)) >= GARBLED_WORDS


def layout(boxes: list[_Box]) -> str:
    """Lines as paragraphs: a gap over 0.8 of a line's height between two lines starts a new one; a
    short line in larger type than the body's (`_larger`) is a heading, two such lines close together
    one heading."""
    lines = _lines([b for b in boxes if b.text.strip()])
    if not lines:
        return ""
    size, pitch = _body_size(lines), _body_pitch(lines)
    body = statistics.median(line.height for line in lines)
    blocks: list[str] = []
    paragraph = ""
    previous: _Box | None = None
    headed = False  # whether the line before was a heading
    for line in lines:
        text = line.text.strip()
        larger = _larger(line, size, pitch)
        heading = larger and len(text) <= 80 and len(lines) > 1 and not _not_heading(text)
        gap = line.top - previous.bottom if previous is not None else 0.0
        if heading or previous is None or gap > 0.8 * body or previous.size >= 1.25 * size:
            if paragraph:
                blocks.append(paragraph)
            paragraph = ""
        if heading and headed and gap <= 0.8 * body and len(blocks[-1]) + len(text) <= 160:
            blocks[-1] = _joined(blocks[-1], text)  # a title set on two lines
        elif heading:
            blocks.append("# " + text)
        elif not paragraph:
            paragraph = text
        elif paragraph.endswith("-") and not paragraph.endswith(" -"):
            paragraph = paragraph[:-1] + text  # a word hyphenated at the line's end
        else:
            paragraph = _joined(paragraph, text)
        previous, headed = line, heading
    if paragraph:
        blocks.append(paragraph)
    return _SENTENCE_GLUE.sub(" ", "\n\n".join(blocks))


def ocr_image(image: Any) -> str:
    """The text of one picture (a PIL image), laid out as paragraphs; turned a quarter at a time when
    nothing is found upright (the engine's angle classifier only tells upright from upside down, and
    reads worse: it is off)."""
    picture = image.convert("RGB")
    if max(picture.size) > MAX_SIDE:
        scale = MAX_SIDE / max(picture.size)
        picture = picture.resize(
            (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
        )
    boxes = _read(picture)
    if not _upright(boxes):  # nothing, or lines running down the page: a page scanned on its side
        for angle in (90, 270, 180):
            turned = _read(picture.rotate(angle, expand=True))
            if _upright(turned):
                boxes = turned
                break
    return layout(boxes)


def _upright(boxes: list[_Box]) -> bool:
    """Text found, most of it in lines wider than tall."""
    letters = sum(len(b.text) for b in boxes)
    tall = sum(len(b.text) for b in boxes if b.height > 1.5 * (b.right - b.left) and len(b.text) > 2)
    return letters > 0 and tall < 0.5 * letters


def _read(picture: Any) -> list[_Box]:
    # the characters' positions come with every box (the keyword arguments reset the detector's
    # thresholds to the engine's defaults, so its own are passed again)
    result, _ = engine()(
        picture, return_word_box=True, unclip_ratio=UNCLIP_RATIO, box_thresh=0.5, text_score=0.5
    )
    boxes = []
    gray: Any = None
    for points, text, _score, *chars in result or []:
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        box = _Box(str(text), min(xs), max(xs), min(ys), max(ys))
        if chars and _GLUED.search(box.text):
            if gray is None:
                import numpy as np

                gray = np.asarray(picture.convert("L"))
            box.text = _spaced(box, chars[0], gray)
        boxes.append(box)
    return boxes


_GLUED = re.compile(r"[A-Za-z][,.;:!?)]?[A-Za-z]")  # Latin letters with no space between: worth a look
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
WORD_GAP = 2.2  # a blank this many times a line's usual blank between letters is a space ...
WORD_GAP_MIN = 0.2  # ... and at least this part of the line's height


def _spaced(box: _Box, cells: Any, gray: Any) -> str:
    """The recognizer's text with the spaces it lost between Latin words put back. Between the
    positions of two characters read next to each other (two Latin letters or digits, or one of
    , . ; : ! ? ) and a letter), the widest run of the line's pixel columns with no ink is their gap;
    one clearly wider than the line's usual gap between letters is a space. Chinese and Japanese
    characters, and characters the recognizer spaced itself, are left as they are."""
    text = box.text
    if len(cells) != len(text):
        return text
    top, bottom = max(0, int(box.top)), min(gray.shape[0], int(box.bottom) + 1)
    strip = gray[top:bottom, :]
    if strip.size == 0:
        return text
    darkest, lightest = int(strip.min()), int(strip.max())
    if lightest - darkest < 64:  # no contrast to tell ink from paper
        return text
    ink = (strip < (darkest + lightest) / 2).any(axis=0).tolist()
    middles = [int((float(cell[0][0]) + float(cell[1][0])) / 2) for cell in cells]
    gaps: dict[int, int] = {}
    for index in range(len(text) - 1):
        left, right = text[index], text[index + 1]
        if not ((left in _ALNUM and right in _ALNUM) or (left in ",.;:!?)" and right.isalpha())):
            continue
        widest = run = 0
        for x in range(max(0, middles[index]), min(len(ink), middles[index + 1] + 1)):
            run = 0 if ink[x] else run + 1
            widest = max(widest, run)
        gaps[index] = widest
    if len(gaps) < 4:
        return text
    usual = statistics.median(gaps.values())
    wide = max(WORD_GAP * usual, WORD_GAP_MIN * box.height)
    return "".join(char + (" " if gaps.get(index, 0) > wide else "") for index, char in enumerate(text))


def image_text(path: Path) -> str:
    """An image file's text; each frame of a multi-page TIFF a page of its own (a blank first frame
    too: its form feed is kept, or every page after it would be counted one short)."""
    from PIL import ImageSequence

    pages = []
    with open_image(path) as image:
        for index, frame in enumerate(ImageSequence.Iterator(image)):
            if index == MAX_FRAMES or (index and path.suffix.lower() not in PAGED_IMAGES):
                break
            pages.append(ocr_image(frame))
    return f"\n{PAGE_BREAK}\n".join(pages).strip(" \n")


def open_image(source: Path | io.BytesIO) -> Any:
    """Pillow's image of a file, HEIC and HEIF photos (an iPhone's) included through pillow-heif."""
    import pillow_heif
    from PIL import Image

    pillow_heif.register_heif_opener()
    return Image.open(source)
