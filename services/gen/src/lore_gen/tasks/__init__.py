"""gen's background tasks (table pipelines, tag trees): records in gen's relational store, each run
by the replica that took it."""
