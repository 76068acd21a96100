"""A PDF page's text objects put in reading order where the order they were written in is not it.

pdfium reads a page's text in the order its objects were written, which is right for most documents
(two columns written column by column included) but not for those laid out in frames: a newsletter,
a report or a brochure whose title block, abstract or running header was written after the body
reads its title in the middle or at the end of the page. Here the page is cut into strips across its
whole width, top to bottom, at the white space between them, and cut into bands only where a strip
running across the page's text with no gap in it (a title, an abstract's line, a footer) meets
columns: strips whose gap is a gutter (one that the strips near it have too, so a formula's spacing
or a figure's labels are none), and only where the text above the cut and below it were written as
blocks apart, not line by line in turn. The bands are read top to bottom, each band's objects in the
order they were written, so two columns, a margin's notes beside the text, a table or a column's own
lines are never reordered; a line apart at the top or the foot of a page so cut that is no column's
(a running header, a footer) is read first or last, where furniture is looked for. Only the page's
own objects move (a form XObject moves as one, as the text it holds spans); nothing moves where the
page already reads its bands top to bottom, or where it is turned."""

from __future__ import annotations

import ctypes
from itertools import pairwise
from typing import Any, NamedTuple

GUTTER = 0.8  # of the page's usual line height: white space at least this wide may part two columns
THIN = 0.5  # of its strip's tallest item: an item thinner is no line of text (a hyphen, a rule, an accent)
WIDE = 0.6  # of the width of the page's text: a strip without gutters this wide runs across the page
APART = 2.5  # line heights of white space under a page's top line or over its foot: a header or a footer
AHEAD = 3  # strips past a cut looked at for the gutters a wide strip runs over
RUNS = 3  # runs of objects, in the order written, that the text above a cut and below it make at most:
# blocks written apart (a title block after the body, a footer last), not two columns' lines in turn
NEAR = 2  # strips above and below one whose gaps must be theirs too, for a gap to be a gutter
COLUMN = 4.0  # of the page's usual line height: text this wide on both sides of a gap (or the gap this
# wide), for it to part columns: a bullet, a hanging number or a page number beside its line is none


class _Item(NamedTuple):
    place: int  # the object's place among the page's objects
    left: float
    bottom: float
    right: float
    top: float
    cover: tuple[tuple[float, float], ...]  # where across the page its text lies (a form's columns)


def _address(pointer: Any) -> int:
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0


def _items(page: Any, textpage: Any) -> tuple[list[Any], list[_Item]]:
    """The page's objects, and the extent of the text of each object that holds text: a text object's
    bounds; a form's, the boxes of the characters it holds (a form's own bounds are its whole box)."""
    import pypdfium2.raw as pdfium_c

    get_object, get_type, get_bounds = (
        pdfium_c.FPDFPage_GetObject,
        pdfium_c.FPDFPageObj_GetType,
        pdfium_c.FPDFPageObj_GetBounds,
    )
    objects = [get_object(page.raw, i) for i in range(pdfium_c.FPDFPage_CountObjects(page.raw))]
    extents: dict[int, list[float]] = {}
    covers: dict[int, list[tuple[float, float]]] = {}  # a form's characters, left to right
    forms: dict[int, int] = {}  # a text object inside a form: the form's place on the page
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    for index, obj in enumerate(objects):
        kind = get_type(obj)
        if kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
            if get_bounds(obj, left, bottom, right, top):
                extents[index] = [left.value, bottom.value, right.value, top.value]
        elif kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            stack = [obj]
            while stack:
                form = stack.pop()
                for k in range(pdfium_c.FPDFFormObj_CountObjects(form)):
                    child = pdfium_c.FPDFFormObj_GetObject(form, k)
                    child_kind = get_type(child)
                    if child_kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
                        forms[_address(child)] = index
                    elif child_kind == pdfium_c.FPDF_PAGEOBJ_FORM:
                        stack.append(child)
    if forms:
        box = pdfium_c.FS_RECTF()
        for char in range(textpage.count_chars()):
            if pdfium_c.FPDFText_GetUnicode(textpage.raw, char) in (0x20, 0x0D, 0x0A, 0xA0):
                continue
            owner = forms.get(_address(pdfium_c.FPDFText_GetTextObject(textpage.raw, char)))
            if owner is None or not pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, char, box):
                continue
            extent = extents.setdefault(owner, [box.left, box.bottom, box.right, box.top])
            extent[:] = [
                min(extent[0], box.left),
                min(extent[1], box.bottom),
                max(extent[2], box.right),
                max(extent[3], box.top),
            ]
            covers.setdefault(owner, []).append((box.left, box.right))
    items = [
        _Item(index, left, bottom, right, top, tuple(sorted(covers.get(index, [(left, right)]))))
        for index, (left, bottom, right, top) in sorted(extents.items())
        if right > left
    ]
    return objects, items


Span = tuple[float, float]


def _spans(items: list[_Item], gutter: float) -> list[Span]:
    """Where a strip's text lies across the page: its items' extents joined over gaps narrower than
    a gutter."""
    spans: list[Span] = []
    for left, right in sorted(span for item in items for span in item.cover):
        if spans and left - spans[-1][1] < gutter:
            spans[-1] = (spans[-1][0], max(spans[-1][1], right))
        else:
            spans.append((left, right))
    return spans


def _gaps(spans: list[Span], column: float) -> list[Span]:
    """A strip's gaps that may part columns: white space with text a column wide on both sides, or
    itself as wide (a bullet or a hanging number beside its line parts none)."""
    return [
        (a[1], b[0])
        for a, b in pairwise(spans)
        if min(a[1] - a[0], b[1] - b[0]) >= column or b[0] - a[1] >= column
    ]


def _gutters(gaps: list[list[Span]], whole: list[bool]) -> list[list[Span]]:
    """Per strip, its gaps that strips near it have too (two of the two above and two below): a
    gutter runs down the page; a gap in one line (a formula's spacing, a figure's labels) is none.
    A strip that is one item (a form holding the columns) has its own gaps for gutters."""
    kept: list[list[Span]] = []
    for k, own in enumerate(gaps):
        near = gaps[max(0, k - NEAR) : k] + gaps[k + 1 : k + 1 + NEAR]
        kept.append(
            [
                (g0, g1)
                for g0, g1 in own
                if whole[k] or sum(any(min(g1, h1) > max(g0, h0) for h0, h1 in other) for other in near) >= 2
            ]
        )
    return kept


def _across(spans: list[Span], gaps: list[Span]) -> bool:
    """Whether text of these spans runs across one of these gaps, from side to side."""
    return any(x0 <= g0 and g1 <= x1 for x0, x1 in spans for g0, g1 in gaps)


class _Strips(NamedTuple):
    """A page's strips of text, top to bottom, and what is known of each."""

    items: list[list[_Item]]
    spans: list[list[Span]]
    gutters: list[list[Span]]
    wide: list[bool]
    line: float  # the usual line's height


def _strips(items: list[_Item]) -> _Strips:
    """The items in strips, top to bottom, cut where white space runs across the page."""
    strips: list[list[_Item]] = []
    low = 0.0
    for item in sorted(items, key=lambda i: -i.top):
        if strips and item.top > low:
            strips[-1].append(item)
            low = min(low, item.bottom)
        else:
            strips.append([item])
            low = item.bottom
    # the usual line's height: the middle strip's (a strip is mostly a line, however many objects
    # its words, letters or a contents page's leader dots are drawn as)
    heights = sorted(max(i.top for i in strip) - min(i.bottom for i in strip) for strip in strips)
    line = heights[len(heights) // 2]
    # a thin item (a hyphen, a rule drawn as text, an accent, an empty object) moves with its strip
    # but says nothing of where the strip's text lies
    spans = []
    for strip in strips:
        tallest = max(i.top - i.bottom for i in strip)
        spans.append(_spans([i for i in strip if i.top - i.bottom >= THIN * tallest], GUTTER * line))
    gaps = [_gaps(own, COLUMN * line) for own in spans]
    gutters = _gutters(gaps, [len(strip) == 1 for strip in strips])
    width = max(i.right for i in items) - min(i.left for i in items)
    wide = [
        bool(own) and own[-1][1] - own[0][0] >= WIDE * width and not parts
        for own, parts in zip(spans, gaps, strict=True)
    ]
    return _Strips(strips, spans, gutters, wide, line)


def _bands(items: list[_Item]) -> list[list[_Item]]:
    """The items in bands, top to bottom: the page cut between two strips only where one runs across
    the page's text (WIDE, no gap in it) and over the gutters of the columns on the other side of the
    cut (the other strip's, or those of the next strips up to AHEAD, none of them wide), and where the
    text above and below the cut were written as blocks apart (at most RUNS runs, in the order
    written): a strip taken for wide that is two columns' last lines (two captions side by side
    whose gap is narrow) would be read line across line."""
    strips = _strips(items)
    spans, gutters, wide = strips.spans, strips.gutters, strips.wide

    def meets(k: int, step: int) -> bool:  # wide strip k over the columns next to it, on side `step`
        between: list[int] = []
        for j in range(k + step, k + (AHEAD + 1) * step, step):
            if not 0 <= j < len(spans) or wide[j]:
                return False
            if gutters[j]:  # the strips between lie within its columns (a column's last lines)
                return _across(spans[k], gutters[j]) and not any(
                    _across(spans[b], gutters[j]) for b in between
                )
            between.append(j)
        return False

    strip_of = {item.place: k for k, strip in enumerate(strips.items) for item in strip}
    written = sorted(strip_of)  # the items' places, in the order written

    def apart(k: int) -> bool:  # the text above strip k and from it down were written apart
        sides = [strip_of[place] < k for place in written]
        return sum(a != b for a, b in pairwise(sides)) < RUNS

    bands: list[list[_Item]] = []
    for k, strip in enumerate(strips.items):
        above, here = k > 0 and wide[k - 1], wide[k]
        cut = (above and not here and meets(k - 1, 1)) or (here and k > 0 and not above and meets(k, -1))
        if bands and not (cut and apart(k)):
            bands[-1].extend(strip)
        else:
            bands.append(list(strip))
    bands = [sorted(band) for band in bands]

    def in_column(k: int, step: int) -> bool:  # strip k lies within a column of the columns next to it
        for j in range(k + step, k + (AHEAD + 1) * step, step):
            if 0 <= j < len(spans) and gutters[j]:
                return all(x1 <= g0 + 1 or x0 >= g1 - 1 for x0, x1 in spans[k] for g0, g1 in gutters[j])
        return False

    def alone(k: int, step: int) -> bool:  # edge strip k stands apart from its neighbour at k + step
        upper, lower = strips.items[min(k, k + step)], strips.items[max(k, k + step)]
        gap = min(i.bottom for i in upper) - max(i.top for i in lower)
        return not gutters[k] and (
            gap >= APART * strips.line or (gap >= strips.line and not in_column(k, step))
        )

    # a line apart at the page's top or foot (a running header or a footer written first or last: its
    # page number may be set apart) is read there, where furniture is looked for, not at the start or
    # the end of its band: a line a line's height apart that is no column's, or one further apart
    if len(bands) > 1:
        first, last = strips.items[0], strips.items[-1]
        if alone(0, 1):
            top = {i.place for i in first}
            bands[0] = sorted(first) + [i for i in bands[0] if i.place not in top]
        if alone(len(strips.items) - 1, -1):
            foot = {i.place for i in last}
            bands[-1] = [i for i in bands[-1] if i.place not in foot] + sorted(last)
    return bands


def read_in_order(page: Any, textpage: Any) -> bool:
    """Put the page's text objects in reading order (the module's docstring); whether any moved, so
    that the caller reads the page's text again from a new text page."""
    import pypdfium2.raw as pdfium_c

    if page.get_rotation() % 360:
        return False
    try:
        objects, items = _items(page, textpage)
        bands = _bands(items) if len(items) >= 2 else []
    except (ValueError, IndexError, ZeroDivisionError, ctypes.ArgumentError):  # pdfium's order stands
        return False
    if len(bands) < 2:
        return False
    order = [item.place for band in bands for item in band]
    if order == sorted(order):
        return False
    for index in order:  # taken off the page and put back at its end, in reading order
        if not pdfium_c.FPDFPage_RemoveObject(page.raw, objects[index]):
            return False
        pdfium_c.FPDFPage_InsertObject(page.raw, objects[index])
    return True
