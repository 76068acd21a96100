"""Entity types as the CLI prints them: their labels in the language of `--labels`/`LORE_LABELS`
(English by default); `--json` prints what the API sent."""

from __future__ import annotations

from rich.markup import escape

from lore_client.labels import label_types


class Shown:
    """The root option `--labels`, read by every command that prints text with entity types in it."""

    language = "en"


def shown(text: str) -> str:
    """Text as a person reads it: entity type values (客观实体…) as their labels, markup escaped."""
    return escape(label_types(text, Shown.language))
