"""Rich-text documents saved as ProseMirror JSON: Box Notes (`.boxnote`), and the same tree exported as
`.json` by editors built on ProseMirror or Tiptap and by Atlassian (Confluence's and Jira's document
format, whose node names are camelCase). A tree of nodes, each a `type`, `attrs` and `content`, text in
`text` nodes: headings keep their level, lists their numbers, indents and check marks, tables become
pipe tables, code blocks fences; marks (bold, links) are dropped as the HTML converter drops them, and
a picture is its alternative text."""

from __future__ import annotations

from typing import Any

from lore_docdb.parse.convert.common import md_table

MAX_DEPTH = 64  # nesting a document may use (lists in lists, tables in panels): deeper is cut
_BLOCK_MARKERS = {"bulletlist", "orderedlist", "checklist", "tasklist", "decisionlist"}


def is_prosemirror(value: object) -> bool:
    """A ProseMirror document: `{"type": "doc", "content": [nodes]}`."""
    return (
        isinstance(value, dict)
        and value.get("type") == "doc"
        and isinstance(value.get("content"), list)
        and all(isinstance(n, dict) and "type" in n for n in value["content"])
    )


def document_of(value: object) -> dict[str, Any] | None:
    """The ProseMirror document a JSON file holds: itself, or under `doc` (a Box Note) or `body`."""
    if is_prosemirror(value):
        return value  # type: ignore[return-value]
    if isinstance(value, dict):
        for key in ("doc", "body", "document"):
            if is_prosemirror(value.get(key)):
                return value[key]  # type: ignore[no-any-return]
    return None


def prosemirror_markdown(document: dict[str, Any]) -> str:
    return "\n\n".join(b for b in _blocks(document.get("content", []), 0) if b.strip())


def _kind(node: dict[str, Any]) -> str:
    """The node's type, one spelling for both schools (`bullet_list`, `bulletList`)."""
    return str(node.get("type", "")).replace("_", "").lower()


def _attrs(node: dict[str, Any]) -> dict[str, Any]:
    attrs = node.get("attrs")
    return attrs if isinstance(attrs, dict) else {}


def _children(node: dict[str, Any]) -> list[dict[str, Any]]:
    content = node.get("content")
    return [n for n in content if isinstance(n, dict)] if isinstance(content, list) else []


def inline(nodes: list[dict[str, Any]], depth: int = 0) -> str:
    """The text of inline nodes (and of any blocks among them, joined by spaces)."""
    if depth > MAX_DEPTH:
        return ""
    parts: list[str] = []
    for node in nodes:
        kind = _kind(node)
        if kind == "text":
            parts.append(str(node.get("text", "")))
        elif kind in ("hardbreak", "linebreak"):
            parts.append(" ")
        elif kind in ("mention", "emoji", "status", "date", "inlinecard"):
            attrs = _attrs(node)
            parts.append(str(attrs.get("text") or attrs.get("shortName") or attrs.get("url") or ""))
        elif kind in ("image", "media", "mediasingle"):
            parts.append(_picture(node))
        else:
            parts.append(" " + inline(_children(node), depth + 1) + " ")
    return " ".join("".join(parts).split())


def _picture(node: dict[str, Any]) -> str:
    attrs = _attrs(node)
    return str(attrs.get("alt") or attrs.get("title") or attrs.get("caption") or "")


def _blocks(nodes: list[dict[str, Any]], depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        return []
    blocks: list[str] = []
    for node in nodes:
        kind = _kind(node)
        children = _children(node)
        if kind == "heading":
            level = _attrs(node).get("level")
            level = level if isinstance(level, int) and 1 <= level <= 6 else 1
            text = inline(children, depth)
            if text:
                blocks.append(f"{'#' * level} {text}")
        elif kind in ("paragraph", "text"):
            blocks.append(inline([node] if kind == "text" else children, depth))
        elif kind in _BLOCK_MARKERS:
            blocks.append("\n".join(_list_lines(node, 0, depth)))
        elif kind in ("codeblock", "code"):
            language = str(_attrs(node).get("language") or "")
            code = "".join(str(n.get("text", "")) for n in children if _kind(n) == "text")
            blocks.append(f"```{language}\n{code}\n```")
        elif kind == "table":
            rows = [
                [" ".join(_blocks(_children(cell), depth + 1)) for cell in _children(row)]
                for row in children
                if _kind(row) == "tablerow"
            ]
            blocks.append(md_table(rows))
        elif kind in ("image", "media", "mediasingle", "mediagroup"):
            text = _picture(node) or inline(children, depth)
            if text:
                blocks.append(text)
        elif kind in ("horizontalrule", "rule", "pagebreak"):
            continue
        else:  # blockquote, panel, callout, expand, layout columns…: their blocks in order
            title = _attrs(node).get("title")
            if isinstance(title, str) and title.strip():
                blocks.append(f"**{title.strip()}**")
            blocks += _blocks(children, depth + 1)
    return blocks


def _list_lines(node: dict[str, Any], level: int, depth: int) -> list[str]:
    """A list's items as `- `, `1. ` or `- [x] ` lines, nested lists indented under their item."""
    if depth > MAX_DEPTH:
        return []
    kind = _kind(node)
    attrs = _attrs(node)
    start = attrs.get("order", attrs.get("start", 1))
    number = start if isinstance(start, int) else 1
    lines: list[str] = []
    for item in _children(node):
        mark = "-"
        if kind == "orderedlist":
            mark = f"{number}."
            number += 1
        item_attrs = _attrs(item)
        if kind in ("checklist", "tasklist") or "checked" in item_attrs or "state" in item_attrs:
            done = item_attrs.get("checked") is True or item_attrs.get("state") == "DONE"
            mark = f"- [{'x' if done else ' '}]"
        text: list[str] = []
        nested: list[str] = []
        for child in _children(item) if _kind(item) != "text" else [item]:
            if _kind(child) in _BLOCK_MARKERS:
                nested += _list_lines(child, level + 1, depth + 1)
            else:
                text.append(inline([child], depth + 1))
        lines.append(f"{'  ' * level}{mark} {' '.join(t for t in text if t)}".rstrip())
        lines += nested
    return lines
