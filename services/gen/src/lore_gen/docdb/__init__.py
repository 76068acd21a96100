"""gen's view of docdb: it grounds tables and tag trees through docdb's public HTTP API only."""
