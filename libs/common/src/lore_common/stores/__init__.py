"""Store factories: relational, vector, graph and object storage, opened and closed with a service."""

from lore_common.stores.container import Stores, open_stores, open_vector_store

__all__ = ["Stores", "open_stores", "open_vector_store"]
