"""`kb` memory: a knowledge graph with chunk, entity and community indexes in local files (contract 4.10)."""
