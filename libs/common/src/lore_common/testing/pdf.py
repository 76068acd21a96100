"""Small PDFs written by hand for converter tests: numbered objects, a cross-reference table and a
trailer, so a test says exactly which operators a page draws (no PDF library involved)."""

from __future__ import annotations


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


def pages_pdf(pages: list[list[str]], fonts: tuple[str, ...] = ("/BaseFont /Helvetica",)) -> bytes:
    """A PDF of US-letter pages, each drawn by its list of content operators, with these standard
    Type 1 fonts (`/BaseFont /Helvetica-Bold`, …) as /F1, /F2, … on every page."""
    resources = " ".join(f"/F{i + 1} {3 + i} 0 R" for i in range(len(fonts)))
    first_page = 3 + len(fonts)
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
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
    return pdf_bytes(objects)
