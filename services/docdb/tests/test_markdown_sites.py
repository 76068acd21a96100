"""Documentation sites' Markdown reads as the pages they show: a front matter (Jekyll, Hugo, Docusaurus,
Obsidian) gives the page's title and description instead of its settings, MDX pages lose their imports
and components' tags, call-outs (`:::note`) keep their label, and Quarto and R Markdown files are read.
Before, `sidebar_position: 2` and `import Tabs from '@theme/Tabs'` were passages, a component's
indented text was a code block, and `.mdx`, `.qmd`, `.rmd` were skipped as unsupported."""

from __future__ import annotations

from pathlib import Path

from lore_docdb.parse.extract import extract_text

DOCUSAURUS = """---
title: Installing the lamp
description: How to fit the lamp in its lantern room.
sidebar_position: 2
tags: [install, lamp]
---

import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

The lamp ships in two crates.

## Steps

<Tabs>
  <TabItem value="linux" label="Linux">
    Run the installer as the keeper.

    ```bash
    sudo ./install-lamp
    ```
  </TabItem>
  <TabItem value="mac" label="macOS">
    Open the disk image.
  </TabItem>
</Tabs>

:::warning[Hot glass]
Let the lens cool before you touch it.
:::

export const meta = {reviewed: true};
"""


def read(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return extract_text(path)


def test_an_mdx_page_reads_as_the_page_it_shows(tmp_path: Path) -> None:
    text = read(tmp_path, "install.mdx", DOCUSAURUS)
    assert text.startswith("# Installing the lamp\n\nHow to fit the lamp in its lantern room.")
    for gone in (
        "sidebar_position",
        "tags:",
        "import Tabs",
        "<Tabs>",
        "<TabItem",
        "</TabItem>",
        "export const",
    ):
        assert gone not in text, gone
    assert "\nRun the installer as the keeper." in text and "\nOpen the disk image." in text
    assert "```bash\nsudo ./install-lamp\n```" in text  # the code block is still one
    assert "**Warning: Hot glass**\nLet the lens cool before you touch it." in text
    assert ":::" not in text


def test_a_front_matter_gives_title_and_description_and_no_settings(tmp_path: Path) -> None:
    # the page's own title: none from the front matter beside it
    text = read(tmp_path, "a.md", "---\ntitle: Lamps\nlayout: post\n---\n\n# Lamps and lenses\n\nBody.\n")
    assert text.split("\n\n") == ["# Lamps and lenses", "Body."]
    # its description under the page's own title, not above it
    text = read(tmp_path, "e.md", "---\ndescription: All about wicks.\n---\n\n# Wicks\n\nBody.\n")
    assert text.split("\n\n") == ["# Wicks", "All about wicks.", "Body."]
    # Hugo's TOML front matter
    text = read(
        tmp_path,
        "b.md",
        '+++\ntitle = "Tides"\nsummary = "When the sea comes in."\ndraft = false\n+++\n\nBody.\n',
    )
    assert text.split("\n\n") == ["# Tides", "When the sea comes in.", "Body."]
    # one that does not parse is kept as written; a rule that opens a page is no front matter
    broken = "---\ntitle: [unclosed\n---\n\nBody.\n"
    assert read(tmp_path, "c.md", broken).startswith("---\ntitle: [unclosed\n---")
    assert read(tmp_path, "d.md", "---\n\nA page after a rule.\n").endswith("A page after a rule.")


def test_quarto_and_r_markdown_read_as_markdown(tmp_path: Path) -> None:
    source = (
        "---\ntitle: Tide report\nformat: html\n---\n\n## Heights\n\n"
        "```{r}\nsummary(tides)\n```\n\nThe spring tide rose 4.2 m.\n"
    )
    for name in ("report.qmd", "report.Rmd"):
        text = read(tmp_path, name, source)
        assert text.startswith("# Tide report\n\n") and "format: html" not in text
        assert "## Heights" in text and "summary(tides)" in text and "The spring tide rose 4.2 m." in text


SITE_MARKS = """# Setup {#setup}

<!-- prettier-ignore -->
Read this first. <!-- a note to editors -->

<!--
an editor's comment
over three lines
-->

<details>
<summary>Other package managers</summary>

- npm
- yarn

```bash
yarn create lamp
```

</details>

> [!WARNING]
> Hot glass.

## Reference {/* #reference */}
"""

MDX_MARKS = """export const metadata = {
  sidebarTitle: 'Get Started',
}

{/* prettier-ignore */}
```mdx-code-block
<APITable>
```

| Name | Type |
|---|---|
| `wick` | `string` |

```mdx-code-block
</APITable>
```

<TSDoc
  code="type Lamp = { wick: string }"
  groupKeys="ComponentProps<'div'>"
/>

<Callout>Trim the wick weekly.</Callout>

<Steps>
  1. Open the lantern.
     - Check the seal.
  2. Light the lamp.
</Steps>
"""


def test_site_marks_are_read_as_a_reader_sees_them(tmp_path: Path) -> None:
    text = read(tmp_path, "setup.md", SITE_MARKS)
    assert text.startswith("# Setup\n") and "## Reference" in text and "{" not in text
    assert "<!--" not in text and "editor" not in text and "Read this first." in text
    # a collapsible section's Markdown stays Markdown: its list items and code block apart
    assert "**Other package managers**" in text and "- npm\n- yarn" in text
    assert "```bash\nyarn create lamp\n```" in text and "<details" not in text
    assert "> **Warning**\n> Hot glass." in text


def test_mdx_blocks_tags_and_components_leave_their_text(tmp_path: Path) -> None:
    text = read(tmp_path, "start.mdx", MDX_MARKS)
    assert "sidebarTitle" not in text and "prettier" not in text and "mdx-code-block" not in text
    assert "| `wick` | `string` |" in text and "```" not in text  # the table is not code
    assert "<" not in text and "groupKeys" not in text
    assert "Trim the wick weekly." in text
    # the steps lose the component's indent only: the sub-item stays under its step
    assert "1. Open the lantern.\n   - Check the seal.\n2. Light the lamp." in text
