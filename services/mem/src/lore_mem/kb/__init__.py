"""The memory graph (mem kb): a knowledge graph of what was inserted (chunks, entities, relations,
communities) in the relational and vector stores; see docs/mem.md. Not docdb's knowledge bases."""
