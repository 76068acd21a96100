"""The entity type labels people read live in two places, the server's `lore_core.labels` and the
Python client's copy (it imports no server package): they must say the same."""

from __future__ import annotations

from lore_client import labels as client_labels
from lore_core import labels as server_labels


def test_the_clients_type_labels_are_the_servers() -> None:
    assert client_labels.TYPE_LABELS == server_labels.TYPE_LABELS
    assert client_labels.TYPE_LABELS["en"]["客观实体"] == "Physical entity"
    for text in ("Marie Curie (客观实体, 3)", "事件实体: 1903", "no type here"):
        for language in ("en", "zh"):
            assert client_labels.label_types(text, language) == server_labels.label_types(text, language)
