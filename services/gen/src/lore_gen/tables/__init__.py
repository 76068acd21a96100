"""The table-generation pipeline: schema, grounded rows, a real SQL table, validated read-only SQL."""
