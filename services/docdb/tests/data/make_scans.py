"""Makes the scan-like samples for the OCR tests: text rendered with Pillow onto a white page, as a
scanner at 150 dpi would give it. Run once (`uv run python make_scans.py`); the outputs are committed.
Needs DejaVu Serif and WenQuanYi Micro Hei (Debian: fonts-dejavu-core, fonts-wqy-microhei)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).parent
SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
SERIF_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf"
HEI = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"


def page(blocks: list[tuple[str, str]], font: str, bold: str, width: int, wrap: int) -> Image.Image:
    """blocks: ("h", heading) or ("p", paragraph); 150 dpi, 11 pt body (23 px), 18 pt headings."""
    body, head = ImageFont.truetype(font, 23), ImageFont.truetype(bold, 38)
    image = Image.new("L", (width, 60 + 60 * sum(3 + len(t) // wrap for _, t in blocks)), 255)
    draw = ImageDraw.Draw(image)
    y = 80
    for kind, text in blocks:
        if kind == "h":
            draw.text((90, y), text, font=head, fill=0)
            y += 80
            continue
        for line in (
            textwrap.wrap(text, wrap)
            if " " in text
            else [text[i : i + wrap] for i in range(0, len(text), wrap)]
        ):
            draw.text((90, y), line, font=body, fill=0)
            y += 36
        y += 30
    return image.crop((0, 0, width, y + 60))


ENGLISH = [
    ("h", "Harbour Report"),
    (
        "p",
        "The lighthouse keeper logged every vessel that passed the northern cape before dawn. "
        "Fog horns sounded eleven times in March, twice as often as in the year before.",
    ),
    ("h", "Repairs"),
    (
        "p",
        "The lamp room was repainted in April and the brass fittings were polished by hand. "
        "A new lens arrived from Glasgow on the morning ferry.",
    ),
]
CHINESE = [
    ("h", "港口报告"),
    ("p", "灯塔看守人记录了黎明前经过北方海角的每一艘船只。三月份雾笛响了十一次，比前一年多了一倍。"),
    ("h", "维修"),
    ("p", "四月份灯室重新粉刷，黄铜配件都用手工擦亮。新的透镜搭乘早班渡轮从格拉斯哥运到。"),
]
SCANNED_PDF = [
    ("h", "Tide Almanac"),
    (
        "p",
        "Spring tides follow the new moon by about two days. Neap tides bring the smallest "
        "difference between high and low water.",
    ),
]

if __name__ == "__main__":
    page(ENGLISH, SERIF, SERIF_BOLD, 1240, 80).save(HERE / "scan-en.png", optimize=True)
    page(CHINESE, HEI, HEI, 1240, 40).save(HERE / "scan-zh.png", optimize=True)
    scan = page(SCANNED_PDF, SERIF, SERIF_BOLD, 1240, 80).convert("1")  # a bilevel scan, as faxes are
    scan.save(HERE / "scan.pdf", resolution=150)
