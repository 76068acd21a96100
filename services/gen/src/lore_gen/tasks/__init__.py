"""gen's background tasks (table pipelines, tag trees): records on disk, a runner in process."""
