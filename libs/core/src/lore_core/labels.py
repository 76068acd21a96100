"""What a person reads for each of the contract's entity type values, in the languages Lore speaks.

The values themselves (客观实体, 抽象实体, 事件实体, 文献实体) stay on the wire; the CLI, the console,
docdb's overview prompt, tag-tree categories and the memory graph's context show these labels, in the
language of the `display.language` setting (English by default). The Python client keeps a copy of this
map (it imports no server package); a workspace test fails when the two differ.
"""

from __future__ import annotations

import re
from typing import Literal

LabelLanguage = Literal["en", "zh"]

OBJECTIVE, ABSTRACT, EVENT, DOCUMENT = "客观实体", "抽象实体", "事件实体", "文献实体"

TYPE_LABELS: dict[str, dict[str, str]] = {
    "en": {OBJECTIVE: "Physical entity", ABSTRACT: "Concept", EVENT: "Event", DOCUMENT: "Document"},
    "zh": {OBJECTIVE: OBJECTIVE, ABSTRACT: ABSTRACT, EVENT: EVENT, DOCUMENT: DOCUMENT},
}

_ANY_TYPE = re.compile("|".join(map(re.escape, TYPE_LABELS["zh"])))


def type_label(value: str, language: str = "en") -> str:
    """The label a person reads for an entity type value; a value with no label is shown as it is."""
    return TYPE_LABELS.get(language, TYPE_LABELS["en"]).get(value, value)


def label_types(text: str, language: str = "en") -> str:
    """`text` with every entity type value in it replaced by its label."""
    return _ANY_TYPE.sub(lambda match: type_label(match.group(0), language), text)
