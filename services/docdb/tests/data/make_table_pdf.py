"""Writes table.pdf for the PDF table test: a title, two columns of text, a ruled table (every cell
bordered, as office suites and report generators draw them) and a line after it; and headings.pdf:
headings in body type, one bold and one italic, and a table ruled as papers rule them (rules across,
between its columns but not at its sides). Hand-written PDF operators, no library; run once
(`uv run python make_table_pdf.py`), the output is committed."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pdf_bytes


def text(x: float, y: float, size: int, words: str, font: str = "F1") -> str:
    return f"BT /{font} {size} Tf 1 0 0 1 {x} {y} Tm ({words}) Tj ET"


def page_content() -> str:
    ops = [text(72, 740, 18, "Ferry Timetable")]
    left = ["Boats leave the north pier", "every morning in summer.", "The crossing takes an hour."]
    right = ["In winter the first boat", "waits for the mail train", "and leaves at nine."]
    for i, line in enumerate(left):
        ops.append(text(72, 700 - 14 * i, 11, line))
    for i, line in enumerate(right):
        ops.append(text(320, 700 - 14 * i, 11, line))
    rows = [
        ["Route", "Departs", "Arrives"],
        ["Oban to Mull", "07:30", "08:20"],
        ["Mull to Iona", "09:15", "09:25"],
    ]
    xs, top, height = [72, 232, 392, 540], 620, 22
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            ops.append(text(xs[c] + 6, top - height * (r + 1) + 7, 11, cell))
    ops.append("0.5 w")
    for r in range(len(rows) + 1):  # the rules: horizontal, then vertical
        y = top - height * r
        ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
    for x in xs:
        ops.append(f"{x} {top} m {x} {top - height * len(rows)} l S")
    ops.append(text(72, 520, 11, "Tickets are sold on board."))
    return "\n".join(ops)


def headings_content() -> str:
    ops = [text(72, 740, 11, "Harbour Notes", "F2")]  # bold, in body type
    body = [
        "The harbour opens at dawn and closes at dusk, and the",
        "fishing boats moor along the east wall of the basin.",
        "Visitors tie up at the pontoons beside the lifeboat house.",
    ]
    for i, line in enumerate(body):
        ops.append(text(72, 720 - 14 * i, 11, line))
    ops.append(text(72, 668, 11, "Winter hours", "F3"))  # italic, a line of its own
    winter = ["In winter the gates close an hour earlier and the", "harbour office opens on weekdays only."]
    for i, line in enumerate(winter):
        ops.append(text(72, 648 - 14 * i, 11, line))
    rows = [["# of boats", "Pier", "Fee"], ["12", "North", "5 pounds"], ["30", "South", "8 pounds"]]
    xs, top, height = [72, 232, 392, 540], 590, 22
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            ops.append(text(xs[c] + 6, top - height * (r + 1) + 7, 11, cell))
    ops.append("0.5 w")
    for r in range(len(rows) + 1):  # rules across the whole table
        y = top - height * r
        ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
    for x in xs[1:-1]:  # and between its columns only
        ops.append(f"{x} {top} m {x} {top - height * len(rows)} l S")
    ops.append(text(72, 500, 11, "# 40 berths in all, booked at the office."))
    return "\n".join(ops)


def pdf(content: str, fonts: tuple[str, ...] = ("Helvetica",)) -> bytes:
    names = " ".join(f"/F{i + 1} {3 if i == 0 else 5 + i} 0 R" for i in range(len(fonts)))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        f"<< /Type /Font /Subtype /Type1 /BaseFont /{fonts[0]} >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        f"/Resources << /Font << {names} >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        *(f"<< /Type /Font /Subtype /Type1 /BaseFont /{font} >>" for font in fonts[1:]),
    ]
    return pdf_bytes(objects)


if __name__ == "__main__":
    (Path(__file__).parent / "table.pdf").write_bytes(pdf(page_content()))
    fonts = ("Helvetica", "Helvetica-Bold", "Helvetica-Oblique")
    (Path(__file__).parent / "headings.pdf").write_bytes(pdf(headings_content(), fonts))
