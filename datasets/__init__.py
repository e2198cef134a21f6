"""strata.datasets — archive, rollups, lifecycle and query API."""
