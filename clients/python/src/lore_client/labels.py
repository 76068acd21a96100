"""What a person reads for each of the contract's entity type values: the CLI shows these labels while
`--json` and the API keep the values. The server keeps the same map (`lore_core.labels`, which this
package cannot import); a workspace test fails when the two differ."""

from __future__ import annotations

import re

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
