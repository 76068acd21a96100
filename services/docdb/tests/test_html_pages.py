"""HTML as real web pages write it (Mozilla Readability's test pages, bench/html_pages.py): a page's
text inside inline wrappers, lists set straight inside lists, code with line breaks, tables with a
title row, formulas. Each page here is a few lines written for the test."""

from __future__ import annotations

from lore_docdb.parse.convert.markup import html_markdown


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
        "- Find candidate placements:",
        "  - Consider routable placements in the other half.",
        "  - Else anywhere.",
        "- Pick one at random.",
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
