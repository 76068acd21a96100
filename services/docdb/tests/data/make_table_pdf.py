"""Writes table.pdf for the PDF table test: a title, two columns of text, a ruled table (every cell
bordered, as office suites and report generators draw them) and a line after it. Hand-written PDF
operators, no library; run once (`uv run python make_table_pdf.py`), the output is committed."""

from __future__ import annotations

from pathlib import Path


def text(x: float, y: float, size: int, words: str) -> str:
    return f"BT /F1 {size} Tf 1 0 0 1 {x} {y} Tm ({words}) Tj ET"


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


def pdf(content: str) -> bytes:
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        "/Resources << /Font << /F1 3 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
    ]
    out, offsets = "%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n"
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


if __name__ == "__main__":
    (Path(__file__).parent / "table.pdf").write_bytes(pdf(page_content()))
