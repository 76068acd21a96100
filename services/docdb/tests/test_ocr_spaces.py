"""OCR keeps the spaces between English words that the recognizer reads run together (a tightly set
line: `Theharbourmaster...`), and puts none between Chinese characters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from lore_docdb.parse.convert.ocr import _Box, _spaced, ocr_image

SERIF = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")  # Debian: fonts-dejavu-core
SENTENCE = "The harbour master counted every ship that sailed past the old lighthouse before dawn"


def _tight_line(sentence: str, space_em: float) -> Image.Image:
    """One line of 23 px DejaVu Serif, its words set apart by space_em of the type's size."""
    font = ImageFont.truetype(str(SERIF), 23)
    picture = Image.new("L", (2000, 120), 255)
    draw = ImageDraw.Draw(picture)
    x = 40.0
    for word in sentence.split():
        draw.text((x, 40), word, font=font, fill=0)
        x += draw.textlength(word, font=font) + space_em * 23
    return picture.crop((0, 0, int(x) + 40, 120))


@pytest.mark.skipif(not SERIF.exists(), reason="needs DejaVu Serif (fonts-dejavu-core)")
def test_words_set_close_together_are_read_apart() -> None:
    # the recognizer alone reads "Theharbour master ... lighthousebefore dawn"
    assert ocr_image(_tight_line(SENTENCE, 0.2)).split() == SENTENCE.split()


def _drawn(cells: list[tuple[int, int]]) -> tuple[np.ndarray, list[list[list[int]]]]:
    """A 40 px line with a black bar for each (left, right) character, and the characters' boxes."""
    gray = np.full((40, 400), 255, dtype=np.uint8)
    for left, right in cells:
        gray[8:32, left:right] = 0
    return gray, [[[left, 0], [right, 0], [right, 40], [left, 40]] for left, right in cells]


def test_chinese_characters_gain_no_space_however_far_apart() -> None:
    cells = [(10, 30), (32, 52), (54, 74), (100, 120), (122, 142), (170, 190)]
    gray, boxes = _drawn(cells)
    text = "港口记录船只"
    assert _spaced(_Box(text, 10, 190, 0, 40), boxes, gray) == text


def test_a_wide_gap_between_latin_letters_is_a_space_and_a_usual_one_is_not() -> None:
    cells = [(10, 20), (22, 32), (34, 44), (60, 70), (72, 82), (84, 94), (96, 106)]
    gray, boxes = _drawn(cells)
    assert _spaced(_Box("theship", 10, 106, 0, 40), boxes, gray) == "the ship"
