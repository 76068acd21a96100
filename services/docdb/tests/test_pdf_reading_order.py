"""A PDF page's text in reading order where the page was written out of it (a title block written
after the body, as layout programs write frames), and left in the order it was written where that
order is the page's (columns written one after the other, however their lines and gaps fall). The
PDFs are written here with hand-written operators."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pages_pdf, pdf_bytes
from lore_docdb.parse.convert.pdf import pdf_text

DATA = Path(__file__).parent / "data"
LEFT, RIGHT = 72, 320  # the two columns' left edges; each is 220 points wide
ABSTRACT = "In this issue the moorings, the quays and the breakwater repairs of the year, in brief"
COLUMNS = ("left 1 1", "left 2 6", "right 1 1", "right 2 6")  # the columns' first and last lines


def line(x: float, y: float, words: str, size: float = 10) -> str:
    return f"BT /F1 {size} Tf 1 0 0 1 {x} {y} Tm ({words}) Tj ET"


def column(x: float, top: float, name: str, paragraphs: tuple[int, ...]) -> list[str]:
    """Lines of a column from `top` down, 14 points apart, a blank line between its paragraphs;
    each line says its column, paragraph and line ("left 1 2 of the harbour board ...")."""
    ops, y = [], top
    for number, count in enumerate(paragraphs, start=1):
        for k in range(1, count + 1):
            ops.append(line(x, y, f"{name} {number} {k} of the harbour board reports the state of"))
            y -= 14
        y -= 14
    return ops


def order(text: str, *marks: str) -> list[int]:
    return [text.index(mark) for mark in marks]


def test_title_block_written_after_the_body_reads_first(tmp_path: Path) -> None:
    body = column(LEFT, 560, "left", (6, 6)) + column(RIGHT, 560, "right", (6, 6))
    title = [
        line(LEFT, 700, "The Harbour Board Quarterly Newsletter", 20),
        line(LEFT, 660, ABSTRACT),
    ]
    path = tmp_path / "newsletter.pdf"
    path.write_bytes(pages_pdf([body + title]))
    text = pdf_text(path)
    at = order(text, "Quarterly Newsletter", "In this issue", *COLUMNS)
    assert at == sorted(at), text


def test_columns_written_one_after_the_other_keep_their_order(tmp_path: Path) -> None:
    # both columns have their paragraph gap at the same height: white space runs across the page there,
    # but the columns go on under it, so the left column is still read whole before the right one
    body = column(LEFT, 700, "left", (5, 8)) + column(RIGHT, 700, "right", (5, 8))
    path = tmp_path / "paper.pdf"
    path.write_bytes(pages_pdf([body]))
    text = pdf_text(path)
    at = order(text, "left 1 1", "left 2 1", "left 2 8", "right 1 1", "right 2 1", "right 2 8")
    assert at == sorted(at), text


def test_a_short_right_column_ending_at_a_gap_of_the_left_is_read_after_it(tmp_path: Path) -> None:
    # the right column ends where the left has a paragraph gap: below it only the left column goes on
    body = column(LEFT, 700, "left", (5, 8)) + column(RIGHT, 700, "right", (5,))
    path = tmp_path / "short.pdf"
    path.write_bytes(pages_pdf([body]))
    text = pdf_text(path)
    at = order(text, "left 1 1", "left 2 8", "right 1 1", "right 1 5")
    assert at == sorted(at), text


def test_a_running_footer_written_first_reads_last(tmp_path: Path) -> None:
    address = "Harbour Board, 12 Quay Street, Norwich, and the harbour master's office, open daily"
    footer = [line(LEFT, 40, address)]
    body = column(LEFT, 700, "left", (6,)) + column(RIGHT, 700, "right", (6,))
    path = tmp_path / "footer.pdf"
    path.write_bytes(pages_pdf([footer + body]))
    text = pdf_text(path)
    at = order(text, "left 1 1", "right 1 6", "Quay Street")
    assert at == sorted(at), text


def test_body_in_a_form_drawn_before_the_title_reads_after_it(tmp_path: Path) -> None:
    # a layout program's page: the body's columns drawn as one form XObject (whose box is the page),
    # the title and the number drawn after it on the page itself
    body = "\n".join(column(LEFT, 560, "left", (6, 6)) + column(RIGHT, 560, "right", (6, 6)))
    title = "\n".join(
        [
            "/Fm1 Do",
            line(LEFT, 700, "The Harbour Board Quarterly Newsletter", 20),
            line(LEFT, 660, ABSTRACT),
        ]
    )
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        "/Resources << /Font << /F1 3 0 R >> /XObject << /Fm1 6 0 R >> >> >>",
        f"<< /Length {len(title)} >>\nstream\n{title}\nendstream",
        f"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
        f"/Length {len(body)} >>\nstream\n{body}\nendstream",
    ]
    path = tmp_path / "form.pdf"
    path.write_bytes(pdf_bytes(objects))
    text = pdf_text(path)
    at = order(text, "Quarterly Newsletter", "In this issue", *COLUMNS)
    assert at == sorted(at), text


def test_a_real_report_reads_its_title_block_before_its_columns() -> None:
    # docling's normal_4pages.pdf: page 1's issue number, title, author and abstract are written after
    # the two columns of its body; page 2 is written in reading order and reads as it was written
    pages = pdf_text(DATA / "report-frames.pdf").split("\f")
    first = pages[0]
    title = ("이슈와 논점", "코로나-19 관련 보험약관상", "김 창 호", "2020.1.1.")  # the abstract's opening
    at = order(first, *title, "1 들어가며", "2020.3.30.")
    assert at == sorted(at), first[:600]
    assert first.index("이와 관련하여") < first.index("이슈가 될 것으로")  # the left column before the right
    second = pages[1]
    at = order(second, "2 코로나-19 관련 보험 현황", "(1) 「감염병의 예방", "(2) 생명보험 표준약관")
    assert at == sorted(at), second[:600]


def test_a_columns_last_line_apart_at_the_foot_stays_in_its_column(tmp_path: Path) -> None:
    # a page reordered for its title: the left column's last paragraph, one line alone at the foot of
    # the page, is still read before the right column (it is no footer: it lies within a column)
    body = column(LEFT, 560, "left", (6, 6, 1)) + column(RIGHT, 560, "right", (6, 6))
    title = [line(LEFT, 700, "The Harbour Board Quarterly Newsletter", 20), line(LEFT, 660, ABSTRACT)]
    path = tmp_path / "foot.pdf"
    path.write_bytes(pages_pdf([body + title]))
    text = pdf_text(path)
    at = order(text, "Quarterly Newsletter", "left 2 6", "left 3 1", "right 1 1", "right 2 6")
    assert at == sorted(at), text
