"""Tag trees: generated from a topic (pure_llm or grounded in a docdb KB) or read from a spreadsheet."""
