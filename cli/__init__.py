"""strata.cli — the `strata` command."""
