"""HTML as real web pages write it (Mozilla Readability's test pages, bench/html_pages.py): a page's
text inside inline wrappers, lists set straight inside lists, code with line breaks, tables with a
title row, formulas. Each page here is a few lines written for the test."""

from __future__ import annotations

import zipfile
from pathlib import Path

from lore_docdb.parse.convert.markup import epub_markdown, html_markdown


def test_words_either_side_of_a_link_stay_apart() -> None:
    html = (
        '<p>The company also pushes<a href="/loans"> sketchy, substandard loans</a> onto its drivers, '
        '<span>labelling </span><a href="/n"><span>"fake news"</span></a><span> alongside others.</span></p>'
    )
    assert html_markdown(html) == (
        'The company also pushes sketchy, substandard loans onto its drivers, labelling "fake news" '
        "alongside others."
    )


def test_paragraphs_inside_inline_wrappers_stay_paragraphs() -> None:
    html = (
        "<center><table><tr><td><h3>Study text</h3><p>First paragraph of the story.</p>"
        "<p>Second paragraph of the story.</p></td></tr></table></center>"
        "<span><p>A paragraph set in a span.</p><p>Another one.</p></span>"
    )
    assert html_markdown(html).split("\n\n") == [
        "### Study text",
        "First paragraph of the story.",
        "Second paragraph of the story.",
        "A paragraph set in a span.",
        "Another one.",
    ]


def test_a_heading_inside_a_link_or_a_heading_group_is_a_heading() -> None:
    html = (
        '<hgroup><a name="t"></a><h1>Student dies after diet pills</h1><p class="d">A summary.</p></hgroup>'
        '<article><a href="/story"><h2>Olympics in China</h2></a><p>The story.</p></article>'
    )
    assert html_markdown(html).split("\n\n") == [
        "# Student dies after diet pills",
        "A summary.",
        "## Olympics in China",
        "The story.",
    ]


def test_a_list_set_straight_inside_a_list_is_kept_nested() -> None:
    html = (
        "<ol><li>Find candidate placements:</li>"
        "<ol><li>Consider routable placements in the other half.</li><li>Else anywhere.</li></ol>"
        "<li>Pick one at random.</li></ol>"
    )
    assert html_markdown(html).split("\n\n") == [
        "1. Find candidate placements:",
        "  1. Consider routable placements in the other half.",
        "  2. Else anywhere.",
        "2. Pick one at random.",
    ]


def test_a_list_items_paragraphs_do_not_run_together() -> None:
    html = "<ul><li><p>Fly south.</p><p>Nest early.</p><ul><li>In reeds</li></ul></li></ul>"
    assert html_markdown(html) == "- Fly south. Nest early.\n\n  - In reeds"


def test_code_keeps_the_lines_its_line_breaks_make() -> None:
    html = (
        '<pre><code><span class="c">// add.c</span><br>#include &lt;emscripten.h&gt;<br><br>'
        "int add(int x, int y) {<br>  return x + y;<br>}</code></pre>"
        '<pre><div class="line">$ hg pull</div><div class="line">$ hg log</div></pre>'
    )
    assert html_markdown(html) == (
        "```\n// add.c\n#include <emscripten.h>\n\nint add(int x, int y) {\n  return x + y;\n}\n```\n\n"
        "```\n$ hg pull\n$ hg log\n```"
    )


def test_a_tables_caption_and_title_row_are_lines_of_their_own() -> None:
    html = (
        "<table><caption>Most active developers</caption>"
        '<tr><th colspan="3">By changesets, 2014</th></tr>'
        "<tr><td>Herbert</td><td>63</td><td>16.6%</td></tr>"
        "<tr><td>Jürgen</td><td>56</td><td>14.7%</td></tr>"
        '<tr><td colspan="3">Source: the project\'s log</td></tr></table>'
    )
    assert html_markdown(html).split("\n\n") == [
        "Most active developers",
        "By changesets, 2014",
        "| Herbert | 63 | 16.6% |\n|---|---|---|\n| Jürgen | 56 | 14.7% |",
        "Source: the project's log",
    ]


def test_a_headings_picture_is_not_its_title_unless_it_is_all_there_is() -> None:
    html = (
        '<h1><img src="logo.png" alt="Acme Weekly"></h1>'
        '<h2>The Special Editions caused controversy <img data-src="x.jpg" alt="star wars han solo"></h2>'
    )
    assert html_markdown(html).split("\n\n") == [
        "# Acme Weekly",
        "## The Special Editions caused controversy",
    ]


def test_a_formula_comes_back_once_as_its_tex() -> None:
    html = (
        "<p>Proof: <span><span style='display: none;'><math alttext='{\\displaystyle A=A^{H}}'>"
        "<semantics><mrow><mi>A</mi><mo>=</mo><msup><mi>A</mi><mi>H</mi></msup></mrow>"
        '<annotation encoding="application/x-tex">{\\displaystyle A=A^{H}}</annotation>'
        '</semantics></math></span><img src="f.svg" alt="{\\displaystyle A=A^{H}}"></span>'
        ", so it is normal.</p>"
    )
    assert html_markdown(html) == "Proof: A=A^{H} , so it is normal."


def test_text_set_straight_in_a_list_as_an_indent_is_kept() -> None:
    html = (
        "<p>I tried to play a video.</p>"
        "<ul> (Really my goal is to <i>create</i> video, but I started small.) </ul>"
        "<ul><li>mplayer</li>and then some others</ul>"
    )
    assert html_markdown(html).split("\n\n") == [
        "I tried to play a video.",
        "(Really my goal is to create video, but I started small.)",
        "- mplayer",
        "and then some others",
    ]


_ARTICLE = (
    "<p>The council voted on Tuesday to rebuild the old bridge over the river by next spring.</p>"
    "<p>Work starts in March, and the road stays open to buses while the new deck goes in.</p>"
)


def test_a_pages_footer_and_banners_are_left_out_and_its_article_kept() -> None:
    html = (
        '<body><div class="cookie-banner"><p>We use cookies. Accept all?</p></div>'
        '<ol class="breadcrumbs"><li>Home</li><li>Local</li></ol>'
        f'<div class="story"><h1>Bridge to be rebuilt</h1>{_ARTICLE}'
        '<ul class="share-buttons"><li>Tweet</li><li>Email</li></ul></div>'
        '<div class="newsletter-signup"><h3>Get our daily newsletter</h3><p>Sign up now.</p></div>'
        "<footer><p>© 2024 The Town Paper. Contact us. Terms.</p></footer></body>"
    )
    assert html_markdown(html).split("\n\n") == [
        "# Bridge to be rebuilt",
        "The council voted on Tuesday to rebuild the old bridge over the river by next spring.",
        "Work starts in March, and the road stays open to buses while the new deck goes in.",
    ]


def test_what_only_looks_like_furniture_is_kept() -> None:
    html = (
        # the article's own footer of notes, inside its box
        f"<div>{_ARTICLE}<footer>Correction: an earlier version named the wrong river.</footer></div>"
        # a section whose id is its heading's slug
        '<section id="market-share"><h2>Market share</h2><p>Buses carry a third of trips.</p></section>'
    )
    assert html_markdown(html).split("\n\n") == [
        "The council voted on Tuesday to rebuild the old bridge over the river by next spring.",
        "Work starts in March, and the road stays open to buses while the new deck goes in.",
        "Correction: an earlier version named the wrong river.",
        "## Market share",
        "Buses carry a third of trips.",
    ]


def test_a_pages_menus_and_a_footer_holding_most_of_it_are_kept() -> None:
    """A wiki's contents and boxes of links are text a reader (and docling's ground truth) counts as
    the page's; a page that is mostly its footer is that footer."""
    html = (
        '<nav id="toc"><h2>Contents</h2><ul><li><a href="#t">Taxonomy</a></li></ul></nav>'
        f"<div>{_ARTICLE}</div>"
        '<div role="navigation" class="navbox"><table><tr><th>National</th><td>United States, France'
        "</td></tr></table></div>"
    )
    assert html_markdown(html).split("\n\n") == [
        "## Contents",
        "- Taxonomy",
        "The council voted on Tuesday to rebuild the old bridge over the river by next spring.",
        "Work starts in March, and the road stays open to buses while the new deck goes in.",
        "| National | United States, France |\n|---|---|",
    ]
    footer_page = "<p>Moved.</p><footer><p>The Town Paper, 1 High Street, open Monday to Friday.</p></footer>"
    assert html_markdown(footer_page).split("\n\n")[-1] == (
        "The Town Paper, 1 High Street, open Monday to Friday."
    )


def test_a_charset_declared_after_kilobytes_of_styles_is_used() -> None:
    styles = "<style>" + ".a { color: red }\n" * 400 + "</style>"
    text = "오늘은 맑습니다. 내일은 비가 올 것입니다."
    html = f'<html><head>{styles}<meta charset="euc-kr"></head><body><p>{text}</p></body></html>'
    assert html_markdown(html.encode("euc-kr")) == text


def test_a_paragraph_that_looks_like_markup_is_escaped() -> None:
    """A `<p># 1 in sales</p>` is no heading, and a stray fence would make the rest of the page code."""
    html = "<p># 1 in sales this year</p><p>| not | a row |</p><div>```</div><h2>Next</h2><p>#hashtag</p>"
    assert html_markdown(html).split("\n\n") == [
        "\\# 1 in sales this year",
        "\\| not | a row |",
        "\\```",
        "## Next",
        "#hashtag",
    ]


def test_a_lazy_pictures_alt_text_is_read_from_its_noscript_copy() -> None:
    html = (
        '<p><img data-src="a.jpg" alt=""><noscript><img src="a.jpg" alt="Chart of sales by year">'
        "</noscript></p>"
        '<p><img data-src="b.jpg" alt="Map of the route"><noscript><img src="b.jpg" alt="Map of the route">'
        "</noscript></p><noscript><p>Please enable JavaScript.</p></noscript>"
    )
    assert html_markdown(html).split("\n\n") == ["Chart of sales by year", "Map of the route"]


def test_soft_hyphens_and_zero_width_spaces_do_not_cut_words() -> None:
    html = (
        "<h2>&#8203;</h2><p>A message from Russian President Vladi&shy;mir Putin, "
        "in\u00adcroyable, twocents.\u200blifehacker.\u200bcom</p>"
    )
    assert html_markdown(html) == (
        "A message from Russian President Vladimir Putin, incroyable, twocents.lifehacker.com"
    )


def test_an_ordered_lists_items_keep_their_numbers() -> None:
    """A step or a clause is cited by its number: `<ol>` items read `1.`, `2.`, from the list's
    `start` and an item's own `value` (they read `- ` before, the numbers lost)."""
    html = (
        "<ol><li>Unplug the lamp before you clean it.</li><li>Wipe the glass with a dry cloth.</li></ol>"
        '<ol start="4"><li>Check the wick.</li><li value="9">Trim it level.</li><li>Light it.</li></ol>'
        "<ul><li>A bullet stays a bullet.</li></ul>"
    )
    assert html_markdown(html).split("\n\n") == [
        "1. Unplug the lamp before you clean it.",
        "2. Wipe the glass with a dry cloth.",
        "4. Check the wick.",
        "9. Trim it level.",
        "10. Light it.",
        "- A bullet stays a bullet.",
    ]


def test_an_epubs_title_authors_and_blurb_are_read(tmp_path: Path) -> None:
    """Many books name neither their title nor their author in a chapter: the package's metadata
    comes first, so a search for the author or the blurb's words finds the book (markitdown's test
    EPUB read as its chapters only)."""
    opf = (
        '<package xmlns="http://www.idpf.org/2007/opf" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        "<metadata><dc:title>The Lamplighter's Year</dc:title><dc:creator>Ann Tern</dc:creator>"
        "<dc:creator>Rob Gull</dc:creator><dc:date>1911</dc:date>"
        "<dc:description>&lt;p&gt;A year of lamps &lt;b&gt;on the north coast&lt;/b&gt;.&lt;/p&gt;"
        "</dc:description></metadata>"
        '<manifest><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/></spine></package>'
    )
    path = tmp_path / "book.epub"
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr(
            "META-INF/container.xml",
            '<container><rootfiles><rootfile full-path="OEBPS/book.opf"/></rootfiles></container>',
        )
        book.writestr("OEBPS/book.opf", opf)
        book.writestr("OEBPS/one.xhtml", "<html><body><h1>January</h1><p>Snow on the quay.</p></body></html>")
    assert epub_markdown(path).split("\n\n") == [
        "Title: The Lamplighter's Year\nAuthors: Ann Tern, Rob Gull\nDate: 1911",
        "A year of lamps on the north coast.",
        "# January",
        "Snow on the quay.",
    ]
