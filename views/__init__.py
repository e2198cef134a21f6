"""strata.views — the read path: a dataset name (of an archive or a Prometheus server) to
its QueryResult, and the time input of every command that reads."""
