"""Small PDFs written by hand for converter tests: numbered objects, a cross-reference table and a
trailer, so a test says exactly which operators a page draws (no PDF library involved)."""

from __future__ import annotations

from typing import NamedTuple


class Bookmark(NamedTuple):
    """An entry of a PDF's outline (its bookmarks): what a reader's sidebar lists, as LaTeX's
    hyperref, Word and manual writers put it there."""

    title: str
    level: int = 0  # 0 for a top entry, 1 for one under it, …
    page: int | None = 0  # the page it goes to (from 0); None: a page the file does not have
    top: float | None = None  # where on the page (an /XYZ destination), else the whole page (/Fit)
    action: bool = False  # go there by a GoTo action (as hyperref writes it) rather than a /Dest


def pdf_bytes(objects: list[str]) -> bytes:
    """A PDF of these objects, numbered from 1 in order (object 1 the catalog); Latin-1 text."""
    out, offsets = "%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n"
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


def pages_pdf(
    pages: list[list[str]],
    fonts: tuple[str, ...] = ("/BaseFont /Helvetica",),
    outline: list[Bookmark] | tuple[Bookmark, ...] = (),
) -> bytes:
    """A PDF of US-letter pages, each drawn by its list of content operators, with these standard
    Type 1 fonts (`/BaseFont /Helvetica-Bold`, …) as /F1, /F2, … on every page, and an outline of
    these bookmarks (in the order given, each nested under the last one less deep)."""
    resources = " ".join(f"/F{i + 1} {3 + i} 0 R" for i in range(len(fonts)))
    first_page = 3 + len(fonts)
    outlines = first_page + 2 * len(pages)  # the outline's root, then one object per bookmark
    catalog = "<< /Type /Catalog /Pages 2 0 R" + (f" /Outlines {outlines} 0 R" if outline else "") + " >>"
    objects = [
        catalog,
        "<< /Type /Pages /Kids ["
        + " ".join(f"{first_page + 2 * i} 0 R" for i in range(len(pages)))
        + f"] /Count {len(pages)} >>",
        *(f"<< /Type /Font /Subtype /Type1 {font} >>" for font in fonts),
    ]
    for i, ops in enumerate(pages):
        content = "\n".join(ops)
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Contents {first_page + 2 * i + 1} 0 R /Resources << /Font << {resources} >> >> >>"
        )
        objects.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    if outline:
        objects.extend(_outline(list(outline), outlines, first_page))
    return pdf_bytes(objects)


def _outline(marks: list[Bookmark], root: int, first_page: int) -> list[str]:
    """The outline's objects: its root (numbered `root`) and one per bookmark after it."""
    parents: list[int] = []  # per bookmark, the object of its parent
    stack: list[tuple[int, int]] = []  # (level, object) of the open ancestors
    for number, mark in enumerate(marks, start=root + 1):
        while stack and stack[-1][0] >= mark.level:
            stack.pop()
        parents.append(stack[-1][1] if stack else root)
        stack.append((mark.level, number))
    children: dict[int, list[int]] = {}
    for number, parent in enumerate(parents, start=root + 1):
        children.setdefault(parent, []).append(number)

    def ends(number: int) -> str:
        kids = children.get(number, [])
        return f" /First {kids[0]} 0 R /Last {kids[-1]} 0 R /Count {len(kids)}" if kids else ""

    objects = [f"<< /Type /Outlines{ends(root)} >>"]
    for number, (mark, parent) in enumerate(zip(marks, parents, strict=True), start=root + 1):
        siblings = children[parent]
        at = siblings.index(number)
        page = f"{first_page + 2 * mark.page} 0 R" if mark.page is not None else "null"
        view = f"/XYZ 0 {mark.top} 0" if mark.top is not None else "/Fit"
        title = mark.title.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        goes = f"/A << /S /GoTo /D [{page} {view}] >>" if mark.action else f"/Dest [{page} {view}]"
        objects.append(
            f"<< /Title ({title}) /Parent {parent} 0 R {goes}{ends(number)}"
            + (f" /Prev {siblings[at - 1]} 0 R" if at else "")
            + (f" /Next {siblings[at + 1]} 0 R" if at + 1 < len(siblings) else "")
            + " >>"
        )
    return objects
