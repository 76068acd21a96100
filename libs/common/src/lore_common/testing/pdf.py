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
