"""Arabic PDFs keep their words: the repair of a lam-alef ligature some PDFs' maps write backwards
(`ال` for one glyph) no longer turns other ligatures round. Before, the title `انواع الخطوط العربية`
of pdf.js's Arabic font test read `انواع اخلطوط العربية`, its lam-khah ligature turned, as it did in
every PDF whose font draws lam-khah, lam-meem or lam-alef (`التفاعلات` read `التفاعالت`) as one glyph."""

from __future__ import annotations

from pathlib import Path

from lore_docdb.parse.extract import extract_text

DATA = Path(__file__).parent / "data"


def test_arabic_ligatures_read_in_their_order() -> None:
    lines = [line.lstrip("# ") for line in extract_text(DATA / "arabic-fonts.pdf").split("\n\n")]
    assert lines == ["انواع الخطوط العربية"] * 4
